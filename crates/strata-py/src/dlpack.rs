//! The Python DLPack protocol (array API standard): `Tensor.__dlpack__`,
//! `Tensor.__dlpack_device__` and `strata.from_dlpack`. The ABI lives in
//! `strata::interop::dlpack`; this file only makes and consumes capsules.
//!
//! Capsule rules: a producer's capsule is named "dltensor_versioned" (DLPack ≥ 1.0) or
//! "dltensor" (legacy). A consumer renames it to "used_dltensor_versioned" /
//! "used_dltensor" and from then on owns the deleter call. The capsule destructor calls the
//! deleter only while the name is still unused (the capsule was never consumed).

use std::ffi::{c_void, CStr};

use pyo3::exceptions::{PyBufferError, PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use strata::interop::dlpack::{
    from_dlpack_legacy, from_dlpack_versioned, to_dlpack_legacy, to_dlpack_versioned,
    DLManagedTensor, DLManagedTensorVersioned, DL_CPU, DL_CUDA, FLAG_IS_COPIED,
};

use crate::errors::IntoPy;
use crate::tensor::PyTensor;

const VERSIONED: &CStr = c"dltensor_versioned";
const LEGACY: &CStr = c"dltensor";
const USED_VERSIONED: &CStr = c"used_dltensor_versioned";
const USED_LEGACY: &CStr = c"used_dltensor";

use crate::errors::preserving_error;

unsafe extern "C" fn versioned_capsule_destructor(capsule: *mut ffi::PyObject) {
    // SAFETY: CPython calls capsule destructors with the GIL held, on a live capsule.
    unsafe {
        preserving_error(|| {
            if ffi::PyCapsule_IsValid(capsule, VERSIONED.as_ptr()) == 1 {
                let m = ffi::PyCapsule_GetPointer(capsule, VERSIONED.as_ptr())
                    .cast::<DLManagedTensorVersioned>();
                if let Some(d) = m.as_ref().and_then(|r| r.deleter) {
                    d(m);
                }
            }
        })
    }
}

unsafe extern "C" fn legacy_capsule_destructor(capsule: *mut ffi::PyObject) {
    // SAFETY: as above.
    unsafe {
        preserving_error(|| {
            if ffi::PyCapsule_IsValid(capsule, LEGACY.as_ptr()) == 1 {
                let m =
                    ffi::PyCapsule_GetPointer(capsule, LEGACY.as_ptr()).cast::<DLManagedTensor>();
                if let Some(d) = m.as_ref().and_then(|r| r.deleter) {
                    d(m);
                }
            }
        })
    }
}

/// A new capsule owning `ptr` under `name`, with `destructor`.
fn capsule(
    py: Python<'_>,
    ptr: *mut c_void,
    name: &'static CStr,
    destructor: ffi::PyCapsule_Destructor,
) -> PyResult<Py<PyAny>> {
    // SAFETY: `ptr` is a live managed tensor; `name` is static, as the capsule requires.
    let raw = unsafe { ffi::PyCapsule_New(ptr, name.as_ptr(), Some(destructor)) };
    // SAFETY: `raw` is a new reference or NULL with an exception set.
    unsafe { Bound::from_owned_ptr_or_err(py, raw) }.map(Bound::unbind)
}

fn check_device(t: &strata::Tensor, dl_device: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
    let own = strata::interop::dlpack::dl_device(t);
    if let Some(d) = dl_device {
        if d.is_none() {
            return Ok(());
        }
        let (ty, id): (i32, i32) = d.extract().map_err(|_| {
            PyBufferError::new_err(format!(
                "__dlpack__: dl_device must be a (device_type, device_id) tuple, got {d}"
            ))
        })?;
        let host_ok = (ty, id) == (DL_CPU, 0) && t.device().is_cpu();
        if (ty, id) != (own.device_type, own.device_id) && !host_ok {
            return Err(PyBufferError::new_err(format!(
                "__dlpack__: this tensor is on device ({}, {}); cannot export to device ({ty}, {id}) without a copy",
                own.device_type, own.device_id
            )));
        }
    }
    Ok(())
}

#[pymethods]
impl PyTensor {
    /// DLPack export (array API standard). A versioned capsule ("dltensor_versioned")
    /// when `max_version >= (1, 0)`, else a legacy "dltensor"; `copy=True` exports a
    /// compact copy (flagged IS_COPIED), `copy=False` never copies.
    #[pyo3(signature = (*, stream=None, max_version=None, dl_device=None, copy=None))]
    fn __dlpack__(
        &self,
        py: Python<'_>,
        stream: Option<&Bound<'_, PyAny>>,
        max_version: Option<(u32, u32)>,
        dl_device: Option<&Bound<'_, PyAny>>,
        copy: Option<bool>,
    ) -> PyResult<Py<PyAny>> {
        let stream: Option<i64> = match stream {
            Some(s) if !s.is_none() => Some(s.extract().map_err(|_| {
                PyBufferError::new_err(format!(
                    "__dlpack__: stream must be an int or None, got {s}"
                ))
            })?),
            _ => None,
        };
        match self.inner().device() {
            strata::Device::Cuda(n) => {
                // The standard: the producer makes the data ready for the consumer's stream.
                let t = self.inner();
                let _ = t;
                py.detach(|| strata::cuda::sync_for_consumer(n, stream))
                    .py()?;
            }
            strata::Device::Cpu => {
                if let Some(s) = stream {
                    if s != -1 {
                        return Err(PyBufferError::new_err(format!(
                            "__dlpack__: a CPU tensor takes stream None, got {s}"
                        )));
                    }
                }
            }
        }
        check_device(self.inner(), dl_device)?;
        let copy = copy.unwrap_or(false);
        let t = self.inner();
        if max_version.is_some_and(|(major, _)| major >= 1) {
            let m = to_dlpack_versioned(t, copy).py()?;
            capsule(py, m.cast(), VERSIONED, versioned_capsule_destructor)
        } else {
            if t.is_read_only() && !copy {
                return Err(PyBufferError::new_err(
                    "__dlpack__: a read-only tensor cannot be exported through the legacy (unversioned) DLPack protocol, which has no read-only flag; ask for max_version=(1, 0) or copy=True",
                ));
            }
            let m = to_dlpack_legacy(t, copy).py()?;
            capsule(py, m.cast(), LEGACY, legacy_capsule_destructor)
        }
    }

    /// `(device_type, device_id)`: `(1, 0)` for the CPU, `(2, n)` (kDLCUDA) for `cuda:n`.
    /// `(3, 0)` (kDLCUDAHost) for pinned host memory.
    fn __dlpack_device__(&self) -> (i32, i32) {
        let d = strata::interop::dlpack::dl_device(self.inner());
        (d.device_type, d.device_id)
    }
}

/// Consumes a DLPack capsule: renames it and imports its managed tensor. Returns the
/// tensor and whether the producer flagged it IS_COPIED.
fn consume(cap: &Bound<'_, PyAny>) -> PyResult<(strata::Tensor, bool)> {
    let p = cap.as_ptr();
    // SAFETY: `p` is a capsule (checked by the caller); the GIL is held.
    let name = unsafe { ffi::PyCapsule_GetName(p) };
    if name.is_null() {
        return Err(PyErr::take(cap.py())
            .unwrap_or_else(|| PyValueError::new_err("from_dlpack: a capsule without a name")));
    }
    // SAFETY: capsule names are NUL-terminated strings that outlive the capsule.
    let name = unsafe { CStr::from_ptr(name) };
    if name == VERSIONED {
        // SAFETY: the name matched.
        let m = unsafe { ffi::PyCapsule_GetPointer(p, VERSIONED.as_ptr()) }
            .cast::<DLManagedTensorVersioned>();
        if m.is_null() {
            return Err(PyErr::fetch(cap.py()));
        }
        // SAFETY: a static name; from now on we own the deleter call.
        if unsafe { ffi::PyCapsule_SetName(p, USED_VERSIONED.as_ptr()) } != 0 {
            return Err(PyErr::fetch(cap.py()));
        }
        // SAFETY: a live, unconsumed managed tensor (the capsule had its unused name).
        let copied = unsafe { (*m).flags } & FLAG_IS_COPIED != 0;
        // SAFETY: as above; consumed exactly once.
        let t = unsafe { from_dlpack_versioned(m) }.py()?;
        Ok((t, copied))
    } else if name == LEGACY {
        // SAFETY: the name matched.
        let m = unsafe { ffi::PyCapsule_GetPointer(p, LEGACY.as_ptr()) }.cast::<DLManagedTensor>();
        if m.is_null() {
            return Err(PyErr::fetch(cap.py()));
        }
        // SAFETY: as above.
        if unsafe { ffi::PyCapsule_SetName(p, USED_LEGACY.as_ptr()) } != 0 {
            return Err(PyErr::fetch(cap.py()));
        }
        // SAFETY: as above.
        let t = unsafe { from_dlpack_legacy(m) }.py()?;
        Ok((t, false))
    } else if name == USED_VERSIONED || name == USED_LEGACY {
        Err(PyValueError::new_err(
            "from_dlpack: this DLPack capsule has already been consumed (a capsule can be used once)",
        ))
    } else {
        Err(PyValueError::new_err(format!(
            "from_dlpack: a capsule named {name:?} is not a DLPack capsule"
        )))
    }
}

/// The device `from_dlpack(..., device=d)` asks for: `None` (where the producer's data
/// is), or a strata device (a string, or a DLPack `(type, id)` pair).
fn target_device(device: Option<&Bound<'_, PyAny>>) -> PyResult<Option<strata::Device>> {
    let Some(d) = device else { return Ok(None) };
    if d.is_none() {
        return Ok(None);
    }
    if let Ok((ty, id)) = d.extract::<(i32, i32)>() {
        return match (ty, usize::try_from(id)) {
            (DL_CPU, Ok(0)) => Ok(Some(strata::Device::Cpu)),
            (DL_CUDA, Ok(n)) => Ok(Some(strata::Device::Cuda(n))),
            _ => Err(PyBufferError::new_err(format!(
                "from_dlpack: cannot import to DLPack device ({ty}, {id})"
            ))),
        };
    }
    crate::device::opt_device("from_dlpack", Some(d)).map(Some)
}

/// `strata.from_dlpack(obj, *, device=None, copy=None)`: a tensor sharing memory with any
/// DLPack producer (an object with `__dlpack__`, or a capsule). `copy=True` always
/// copies; `copy=False` and `None` never do (on the CPU nothing forces a copy).
#[pyfunction]
#[pyo3(signature = (obj, *, device=None, copy=None))]
pub fn from_dlpack(
    py: Python<'_>,
    obj: &Bound<'_, PyAny>,
    device: Option<&Bound<'_, PyAny>>,
    copy: Option<bool>,
) -> PyResult<PyTensor> {
    let target = target_device(device)?;
    let want_copy = copy == Some(true);
    if let Ok(t) = obj.cast::<PyTensor>() {
        // A strata tensor: share its storage itself rather than alias it through a capsule.
        let t = t.get().inner();
        let out = match target {
            Some(d) if d != t.device() => t.to_device(d).py()?,
            _ if want_copy => t.contiguous_copy().py()?,
            _ => t.clone(),
        };
        return Ok(PyTensor::wrap(out));
    }
    // SAFETY: only inspects the type.
    let is_capsule = unsafe { ffi::PyCapsule_CheckExact(obj.as_ptr()) } == 1;
    let cap = if is_capsule {
        obj.clone()
    } else {
        let method = obj.getattr("__dlpack__").map_err(|_| {
            PyTypeError::new_err(format!(
                "from_dlpack: {} does not support the DLPack protocol (no __dlpack__)",
                obj.get_type()
            ))
        })?;
        let kwargs = PyDict::new(py);
        kwargs.set_item("max_version", (1, 0))?;
        // A CUDA producer makes its data ready for our current stream (1: the legacy
        // default stream).
        if let Ok(dev) = obj.call_method0("__dlpack_device__") {
            if let Ok((DL_CUDA, id)) = dev.extract::<(i32, i32)>() {
                let n = usize::try_from(id).unwrap_or(usize::MAX);
                if strata::cuda::is_available() {
                    let raw = strata::cuda::Stream::current(Some(n)).py()?.raw();
                    kwargs.set_item("stream", if raw == 0 { 1 } else { raw })?;
                }
            }
        }
        if let Some(c) = copy {
            kwargs.set_item("copy", c)?;
        }
        match method.call((), Some(&kwargs)) {
            Ok(c) => c,
            // An older producer that takes no keywords.
            Err(e) if e.is_instance_of::<PyTypeError>(py) => method.call0()?,
            Err(e) => return Err(e),
        }
    };
    // SAFETY: only inspects the type.
    if unsafe { ffi::PyCapsule_CheckExact(cap.as_ptr()) } != 1 {
        return Err(PyTypeError::new_err(format!(
            "from_dlpack: {}.__dlpack__() returned {} (a {}), not a DLPack capsule",
            obj.get_type().name()?,
            cap.repr()?,
            cap.get_type().name()?
        )));
    }
    let (t, copied) = consume(&cap)?;
    let t = match target {
        Some(d) if d != t.device() => {
            if copy == Some(false) {
                return Err(PyBufferError::new_err(format!(
                    "from_dlpack: the data is on {}; moving it to {d} needs a copy, and copy=False",
                    t.device()
                )));
            }
            t.to_device(d).py()?
        }
        _ if want_copy && !copied => t.contiguous_copy().py()?,
        _ => t,
    };
    Ok(PyTensor::wrap(t))
}
