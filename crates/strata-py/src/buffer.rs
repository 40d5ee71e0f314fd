//! Zero-copy exchange with NumPy and anything else speaking the buffer protocol.
//!
//! Note [Buffer ownership]: an exported buffer holds a strong reference to the exporting
//! `Tensor` object (`view.obj`) and, in `view.internal`, the shape/strides arrays plus an
//! export pin on the storage, so the bytes outlive every consumer and cannot be swapped
//! (moved to shared memory) under it. An imported buffer becomes a foreign-owner storage
//! whose owner is the `Py_buffer` itself; dropping the last view releases it (taking the
//! GIL, and skipping the release once the interpreter has finalised).
//!
//! Note [Shared writes]: memory shared with NumPy can be written by NumPy while a strata
//! kernel runs on another thread; the per-storage borrow only orders strata's own
//! accesses. This is the same contract as `torch.from_numpy`.

use std::ffi::{c_int, CStr};
use std::ptr::NonNull;

use pyo3::exceptions::PyBufferError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};
use pyo3::{PyTraverseError, PyVisit};
use strata::storage::{Exclusive, Owner};
use strata::{DType, ErrorKind, Layout, Storage, Tensor};

use crate::errors::{err, IntoPy};
use crate::tensor::PyTensor;

/// The PEP 3118 format character of a dtype (`None` for bfloat16, which has none).
fn format_of(dt: DType) -> Option<&'static CStr> {
    Some(match dt {
        DType::Bool => c"?",
        DType::U8 => c"B",
        DType::I8 => c"b",
        DType::I16 => c"h",
        DType::U16 => c"H",
        DType::I32 => c"i",
        DType::U32 => c"I",
        DType::I64 => c"q",
        DType::U64 => c"Q",
        DType::F16 => c"e",
        DType::F32 => c"f",
        DType::F64 => c"d",
        DType::C64 => c"Zf",
        DType::C128 => c"Zd",
        DType::BF16 => return None,
    })
}

/// The `__array_interface__` type string of a dtype.
pub fn typestr_of(dt: DType) -> Option<String> {
    let (kind, size) = match dt {
        DType::Bool => ('b', 1),
        DType::U8 | DType::U16 | DType::U32 | DType::U64 => ('u', dt.itemsize()),
        DType::I8 | DType::I16 | DType::I32 | DType::I64 => ('i', dt.itemsize()),
        DType::F16 | DType::F32 | DType::F64 => ('f', dt.itemsize()),
        DType::C64 | DType::C128 => ('c', dt.itemsize()),
        DType::BF16 => return None,
    };
    let order = if size == 1 { '|' } else { '<' };
    Some(format!("{order}{kind}{size}"))
}

fn bf16_error(op: &'static str) -> PyErr {
    err(
        ErrorKind::DType,
        op,
        "bfloat16 has no NumPy or buffer-protocol equivalent; exchange it through DLPack (np.from_dlpack / strata.from_dlpack) or convert with .float()",
    )
}

/// What an exported `Py_buffer` keeps in `internal`: the shape then the byte strides
/// (one allocation), and the pin.
struct Export {
    /// Sizes then byte strides; inline up to five dims (one allocation per export).
    dims: smallvec::SmallVec<[ffi::Py_ssize_t; 10]>,
    _pin: strata::storage::ExportPin,
}

/// Fills `view` for `tensor` (see Note [Buffer ownership]).
///
/// # Safety
/// `view` must be a valid `Py_buffer` to fill, as passed to `bf_getbuffer`.
pub unsafe fn get_buffer(
    slf: &Bound<'_, PyTensor>,
    view: *mut ffi::Py_buffer,
    flags: c_int,
) -> PyResult<()> {
    if view.is_null() {
        return Err(PyBufferError::new_err("NULL view in getbuffer"));
    }
    let t = slf.get().inner();
    t.check_host("__getbuffer__").py()?;
    let fmt = format_of(t.dtype()).ok_or_else(|| {
        PyBufferError::new_err(
            "bfloat16 tensors cannot be exported through the buffer protocol; use DLPack (np.from_dlpack) instead",
        )
    })?;
    let read_only = t.is_read_only();
    if flags & ffi::PyBUF_WRITABLE == ffi::PyBUF_WRITABLE && read_only {
        return Err(PyBufferError::new_err("the tensor is read-only"));
    }
    let c_contig = t.is_contiguous();
    if flags & ffi::PyBUF_STRIDES != ffi::PyBUF_STRIDES && !c_contig {
        return Err(PyBufferError::new_err(
            "the tensor is not C-contiguous and the consumer did not ask for strides",
        ));
    }
    if flags & ffi::PyBUF_C_CONTIGUOUS == ffi::PyBUF_C_CONTIGUOUS && !c_contig {
        return Err(PyBufferError::new_err("the tensor is not C-contiguous"));
    }
    if flags & ffi::PyBUF_F_CONTIGUOUS == ffi::PyBUF_F_CONTIGUOUS && !t.is_f_contiguous() {
        return Err(PyBufferError::new_err(
            "the tensor is not Fortran-contiguous",
        ));
    }
    if flags & ffi::PyBUF_ANY_CONTIGUOUS == ffi::PyBUF_ANY_CONTIGUOUS
        && !(c_contig || t.is_f_contiguous())
    {
        return Err(PyBufferError::new_err("the tensor is not contiguous"));
    }
    let item = t.dtype().itemsize() as isize;
    let nd = t.ndim();
    let mut dims = smallvec::SmallVec::with_capacity(2 * nd);
    dims.extend(t.shape().iter().map(|&n| n as ffi::Py_ssize_t));
    // Saturating: a stride times the item size can only pass `isize` on a dim of at most
    // one element or in a view without elements, where it is never stepped (a stepped
    // dim's span lies within the storage).
    dims.extend(t.strides().iter().map(|&s| s.saturating_mul(item)));
    let export = Box::new(Export {
        dims,
        _pin: t.storage().pin_export(),
    });
    // SAFETY: `view` is a valid, writable Py_buffer (caller contract); the pointers stored
    // in it point into `export`, which lives until `release_buffer` frees it, and into the
    // storage, which `view.obj` (this tensor) keeps alive.
    unsafe {
        (*view).buf = t.data_ptr() as *mut std::ffi::c_void;
        (*view).obj = slf.clone().into_any().into_ptr();
        (*view).len = (t.numel() as isize * item) as ffi::Py_ssize_t;
        (*view).itemsize = item as ffi::Py_ssize_t;
        (*view).readonly = read_only as c_int;
        (*view).ndim = t.ndim() as c_int;
        (*view).format = if flags & ffi::PyBUF_FORMAT == ffi::PyBUF_FORMAT {
            fmt.as_ptr() as *mut _
        } else {
            std::ptr::null_mut()
        };
        (*view).shape = if flags & ffi::PyBUF_ND == ffi::PyBUF_ND {
            export.dims.as_ptr() as *mut _
        } else {
            std::ptr::null_mut()
        };
        (*view).strides = if flags & ffi::PyBUF_STRIDES == ffi::PyBUF_STRIDES {
            export.dims[nd..].as_ptr() as *mut _
        } else {
            std::ptr::null_mut()
        };
        (*view).suboffsets = std::ptr::null_mut();
        (*view).internal = Box::into_raw(export) as *mut std::ffi::c_void;
    }
    Ok(())
}

/// Frees what [`get_buffer`] put in `view.internal`.
///
/// # Safety
/// `view` must be a buffer filled by [`get_buffer`] and not yet released.
pub unsafe fn release_buffer(view: *mut ffi::Py_buffer) {
    // SAFETY: `internal` was set by `get_buffer` from `Box::into_raw` and is released once.
    unsafe {
        let internal = (*view).internal;
        if !internal.is_null() {
            drop(Box::from_raw(internal as *mut Export));
            (*view).internal = std::ptr::null_mut();
        }
    }
}

/// `__array_interface__` (version 3) of a tensor.
pub fn array_interface<'py>(py: Python<'py>, t: &Tensor) -> PyResult<Bound<'py, PyDict>> {
    t.check_host("__array_interface__").py()?;
    let typestr = typestr_of(t.dtype()).ok_or_else(|| bf16_error("__array_interface__"))?;
    // The consumer keeps this address with no release call, so the backing may never be
    // swapped (moved into shared memory) again: see Note [Buffer ownership].
    t.storage().pin_for_life();
    let d = PyDict::new(py);
    d.set_item("shape", PyTuple::new(py, t.shape())?)?;
    d.set_item("typestr", typestr)?;
    d.set_item("data", (t.data_ptr(), t.is_read_only()))?;
    let item = t.dtype().itemsize() as isize;
    if t.is_contiguous() {
        d.set_item("strides", py.None())?;
    } else {
        let s: Vec<isize> = t.strides().iter().map(|&s| s * item).collect();
        d.set_item("strides", PyTuple::new(py, s)?)?;
    }
    d.set_item("version", 3)?;
    Ok(d)
}

/// A `Py_buffer` we hold on behalf of a storage; released when the storage goes.
///
/// The reference to the exporter that `PyObject_GetBuffer` stores in `view.obj` is moved
/// into `exporter` for the buffer's lifetime (and back just before `PyBuffer_Release`),
/// so a tensor's `__traverse__` can show it to the garbage collector: an array that holds
/// a tensor made from itself (`a.t = st.from_numpy(a)`) is then a collectable cycle.
struct HeldBuffer {
    view: Box<ffi::Py_buffer>,
    exporter: Option<Py<PyAny>>,
    /// The exporter is a `memoryview` (kept from the garbage collector: see
    /// `traverse_owner`).
    exporter_is_memoryview: bool,
}

// SAFETY: the buffer is only touched again in `Drop`, which takes the GIL first; the
// exporter keeps the memory valid until `PyBuffer_Release`; `Py` is `Send + Sync`.
unsafe impl Send for HeldBuffer {}
// SAFETY: as above; `&HeldBuffer` exposes only the exporter, a `Py`.
unsafe impl Sync for HeldBuffer {}

impl HeldBuffer {
    /// Takes over a filled buffer, moving its exporter reference out of `view.obj`.
    fn new(py: Python<'_>, mut view: Box<ffi::Py_buffer>) -> HeldBuffer {
        let obj = std::mem::replace(&mut view.obj, std::ptr::null_mut());
        let exporter = NonNull::new(obj).map(|p| {
            // SAFETY: `view.obj` held a strong reference (taken by `PyObject_GetBuffer`),
            // which this `Py` now owns; it goes back to `view.obj` before the release.
            unsafe { Bound::from_owned_ptr(py, p.as_ptr()) }.unbind()
        });
        let exporter_is_memoryview = exporter
            .as_ref()
            // SAFETY: only inspects the object's type.
            .is_some_and(|e| unsafe { ffi::PyMemoryView_Check(e.as_ptr()) } != 0);
        HeldBuffer {
            view,
            exporter,
            exporter_is_memoryview,
        }
    }
}

impl Drop for HeldBuffer {
    fn drop(&mut self) {
        // SAFETY: `Py_IsInitialized` may be called at any time.
        if unsafe { ffi::Py_IsInitialized() } == 0 {
            // The interpreter is gone: nothing left to release to, nor to decref.
            std::mem::forget(self.exporter.take());
            return;
        }
        let mut release = || {
            self.view.obj = self
                .exporter
                .take()
                .map_or(std::ptr::null_mut(), Py::into_ptr);
            // SAFETY: the buffer was filled by a successful `PyObject_GetBuffer` and is
            // released exactly once, here, with the GIL held and its `obj` restored; the
            // release (and the exporter's last reference) may run Python code, so any
            // pending exception is set aside meanwhile.
            unsafe { crate::errors::preserving_error(|| ffi::PyBuffer_Release(&mut *self.view)) };
        };
        // From a deallocator this thread holds the GIL without pyo3 knowing it (see
        // `HeldArray` in `ndarray.rs`): released directly, no `PyGILState_Ensure`.
        // SAFETY: `PyGILState_Check` may be called at any time.
        if unsafe { ffi::PyGILState_Check() } == 1 {
            release();
        } else {
            Python::attach(|_py| release());
        }
    }
}

/// Shows the garbage collector the Python object a storage owner keeps alive (the
/// exporter of a buffer wrapped by `from_numpy` / `st.tensor(buffer)`), if any.
pub fn traverse_owner(owner: &Owner, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
    match held_buffer(owner) {
        // A memoryview exporter is not shown: the collector would clear it while the
        // storage still holds its export, and a memoryview refuses that ("Exception
        // ignored in tp_clear of memoryview … BufferError: memoryview has 1 exported
        // buffer", e.g. at exit for a tensor unpickled from protocol-5 buffers). Unseen,
        // it counts as referenced from outside and is released with the storage.
        Some(h) if !h.exporter_is_memoryview => visit.call(&h.exporter),
        Some(_) => Ok(()),
        // An array `from_numpy` read directly (`ndarray.rs`).
        None => match owner {
            Owner::Foreign(o) => crate::ndarray::held_array(&**o).map_or(Ok(()), |a| visit.call(a)),
            _ => Ok(()),
        },
    }
}

/// The buffer a storage owner holds, if it is a buffer import (exclusive or not).
fn held_buffer(owner: &Owner) -> Option<&HeldBuffer> {
    match owner {
        Owner::Foreign(o) => o.downcast_ref::<HeldBuffer>().or_else(|| {
            o.downcast_ref::<Exclusive>()
                .and_then(|e| e.0.downcast_ref::<HeldBuffer>())
        }),
        _ => None,
    }
}

/// The type of the object whose memory a tensor imported through the buffer protocol
/// (`from_numpy`, `st.tensor(buffer)`) still uses, e.g. `numpy.ndarray`: `None` when the
/// storage is not such an import, or when it may move (see [`Exclusive`]).
pub fn buffer_owner_type(py: Python<'_>, storage: &Storage) -> Option<String> {
    storage.with_owner(|o| match o {
        Owner::Foreign(f) if crate::ndarray::held_array(&**f).is_some() => {
            Some("numpy.ndarray".to_string())
        }
        Owner::Foreign(f) => f.downcast_ref::<HeldBuffer>().map(|h| {
            h.exporter.as_ref().map_or_else(
                || "buffer".to_string(),
                |e| {
                    let e = e.bind(py);
                    let e = match e.cast::<pyo3::types::PyMemoryView>() {
                        Ok(mv) => mv.getattr("obj").unwrap_or_else(|_| mv.clone().into_any()),
                        Err(_) => e.clone(),
                    };
                    let ty = e.get_type();
                    match (ty.module(), ty.qualname()) {
                        (Ok(m), Ok(q)) if m != "builtins" => format!("{m}.{q}"),
                        (_, Ok(q)) => q.to_string(),
                        _ => "buffer".to_string(),
                    }
                },
            )
        }),
        _ => None,
    })
}

/// True when `obj` is immutable `bytes`, or a memoryview of one: memory nothing can
/// write, so a tensor over it may be copied into shared memory without losing anything.
fn is_immutable_bytes(obj: &Bound<'_, PyAny>) -> bool {
    if obj.is_exact_instance_of::<PyBytes>() {
        return true;
    }
    obj.cast::<pyo3::types::PyMemoryView>()
        .ok()
        .and_then(|mv| mv.getattr("obj").ok())
        .is_some_and(|o| o.is_exact_instance_of::<PyBytes>())
}

fn dtype_of_format(fmt: &str, itemsize: usize) -> PyResult<DType> {
    let (order, code) = match fmt.chars().next() {
        Some(c @ ('@' | '=' | '<' | '>' | '!')) => (c, &fmt[1..]),
        _ => ('@', fmt),
    };
    if matches!(order, '>' | '!') && itemsize > 1 {
        return Err(err(
            ErrorKind::DType,
            "from_numpy",
            format!("non-native byte order ('{fmt}') is not supported; convert with arr.astype(arr.dtype.newbyteorder('='))"),
        ));
    }
    let dt = match (code, itemsize) {
        ("?", 1) => DType::Bool,
        ("b", 1) => DType::I8,
        ("B", 1) | ("c", 1) => DType::U8,
        ("h", 2) => DType::I16,
        ("H", 2) => DType::U16,
        ("i" | "l" | "q" | "n", 4) => DType::I32,
        ("I" | "L" | "Q" | "N", 4) => DType::U32,
        ("i" | "l" | "q" | "n", 8) => DType::I64,
        ("I" | "L" | "Q" | "N", 8) => DType::U64,
        ("e", 2) => DType::F16,
        ("f", 4) => DType::F32,
        ("d", 8) => DType::F64,
        ("Zf", 8) => DType::C64,
        ("Zd", 16) => DType::C128,
        ("O", _) => {
            return Err(err(
                ErrorKind::DType,
                "from_numpy",
                "object arrays are not supported (they hold Python references, not numbers)",
            ))
        }
        _ => {
            return Err(err(
                ErrorKind::DType,
                "from_numpy",
                format!("unsupported buffer format '{fmt}' (itemsize {itemsize}): strata supports bool, (u)int8-64, float16/32/64, complex64/128"),
            ))
        }
    };
    Ok(dt)
}

/// Wraps any buffer-protocol object as a tensor without copying (negative strides
/// included), keeping the exporter alive. Read-only buffers give read-only tensors.
pub fn from_buffer(obj: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    // A plain NumPy array is read directly (its `bf_getbuffer` is most of the cost).
    if let Some(r) = crate::ndarray::from_ndarray(obj) {
        return r;
    }
    from_buffer_owned(obj, false)
}

/// As [`from_buffer`]; with `exclusive`, the caller promises that nothing else holds the
/// buffer (a pickle stream made it for this tensor alone), so `share_memory_` may copy it
/// (see [`Exclusive`]). Immutable `bytes` are treated so in any case.
pub fn from_buffer_owned(obj: &Bound<'_, PyAny>, exclusive: bool) -> PyResult<Tensor> {
    let exclusive = exclusive || is_immutable_bytes(obj);
    let mut view: Box<ffi::Py_buffer> = Box::new(
        // SAFETY: Py_buffer is a plain C struct for which all-zero is a valid empty value.
        unsafe { std::mem::zeroed() },
    );
    // SAFETY: `obj` is a live object and `view` a writable Py_buffer.
    let rc = unsafe { ffi::PyObject_GetBuffer(obj.as_ptr(), &mut *view, ffi::PyBUF_RECORDS_RO) };
    if rc != 0 {
        let e = PyErr::fetch(obj.py());
        return Err(crate::convert::numpy_kind_error("from_numpy", obj).unwrap_or(e));
    }
    let held = HeldBuffer::new(obj.py(), view);
    let v = &*held.view;
    let over = |what: String| err(ErrorKind::Overflow, "from_numpy", what);
    if v.itemsize <= 0 || v.ndim < 0 {
        return Err(err(
            ErrorKind::Shape,
            "from_numpy",
            format!(
                "the exporter gave item size {} and {} dims",
                v.itemsize, v.ndim
            ),
        ));
    }
    let itemsize = v.itemsize as usize;
    // Borrowed (no allocation) unless the exporter's format is not UTF-8.
    let fmt: std::borrow::Cow<'_, str> = if v.format.is_null() {
        "B".into()
    } else {
        // SAFETY: a non-null format is a NUL-terminated string owned by the exporter.
        unsafe { std::ffi::CStr::from_ptr(v.format) }.to_string_lossy()
    };
    // A NumPy datetime64 / bytes_ scalar exports its bytes as uint8: refuse it by its
    // dtype (only 1-byte and unknown formats are asked, so other imports pay nothing).
    let dtype = match dtype_of_format(&fmt, itemsize) {
        Ok(DType::U8 | DType::I8) | Err(_) if obj.hasattr("dtype").unwrap_or(false) => {
            if let Some(e) = crate::convert::numpy_kind_error("from_numpy", obj) {
                return Err(e);
            }
            dtype_of_format(&fmt, itemsize)?
        }
        r => r?,
    };
    let nd = v.ndim as usize;
    let (shape, bstrides): (Vec<usize>, Vec<isize>) = if nd == 0 {
        (Vec::new(), Vec::new())
    } else {
        // SAFETY: with PyBUF_RECORDS_RO the exporter provides `ndim` shape and stride
        // entries (strides may be NULL only for C-contiguous buffers).
        let raw = unsafe { std::slice::from_raw_parts(v.shape, nd) };
        if let Some(&n) = raw.iter().find(|&&n| n < 0) {
            return Err(err(
                ErrorKind::Shape,
                "from_numpy",
                format!("the exporter gave a negative size {n} in shape {raw:?}"),
            ));
        }
        let shape: Vec<usize> = raw.iter().map(|&n| n as usize).collect();
        let strides = if v.strides.is_null() {
            let c = strata::layout::contiguous_strides(&shape);
            c.iter()
                .map(|&s| s.checked_mul(itemsize as isize))
                .collect::<Option<Vec<isize>>>()
                .ok_or_else(|| over(format!("the byte strides of shape {shape:?}")))?
        } else {
            // SAFETY: as above.
            unsafe { std::slice::from_raw_parts(v.strides, nd) }.to_vec()
        };
        (shape, strides)
    };
    let (buf, read_only) = (v.buf as *mut u8, v.readonly != 0);
    let owner: Box<dyn std::any::Any + Send + Sync> = if exclusive {
        Box::new(Exclusive(Box::new(held)))
    } else {
        Box::new(held)
    };
    // SAFETY: the exporter guarantees the bytes from the lowest to the highest element are
    // valid (and writable unless read-only) while the buffer is held, and `owner` holds
    // it (Note [Buffer ownership]).
    // `dtype_of_format` chose a dtype of exactly the exporter's item size.
    unsafe { wrap_foreign(buf, &shape, &bstrides, dtype, read_only, owner) }
}

/// A tensor over foreign memory described by an exporter (a buffer, a NumPy array):
/// `shape` and byte strides `bstrides` from `buf` (the first element), checked against
/// overflow and the address space, since they come from outside.
///
/// # Safety
/// Every byte from the lowest to the highest element must stay valid (and writable unless
/// `read_only`) for as long as `owner` lives.
pub(crate) unsafe fn wrap_foreign(
    buf: *mut u8,
    shape: &[usize],
    bstrides: &[isize],
    dtype: DType,
    read_only: bool,
    owner: Box<dyn std::any::Any + Send + Sync>,
) -> PyResult<Tensor> {
    let over = |what: String| err(ErrorKind::Overflow, "from_numpy", what);
    // Inline up to five dims: no allocation for the common case.
    let mut strides = strata::layout::Strides::with_capacity(shape.len());
    // The dtype's item size (the exporter's, which chose the dtype) is a power of two: a
    // mask and a shift, not two divisions a dim.
    let itemsize = dtype.itemsize();
    let shift = itemsize.trailing_zeros();
    for &s in bstrides {
        if s & (itemsize as isize - 1) != 0 {
            return Err(err(
                ErrorKind::Shape,
                "from_numpy",
                format!("strides {bstrides:?} (bytes) are not a multiple of the element size {itemsize}; strata strides count elements"),
            ));
        }
        strides.push(s >> shift);
    }
    let numel = strata::layout::checked_numel("from_numpy", shape).py()?;
    // The element range, in i128 and checked: the exporter's sizes and strides are
    // untrusted (`as_strided` or `broadcast_to` arrays can be of any extent).
    let extent = || -> Option<(i128, i128)> {
        if numel == 0 {
            return Some((0, 0));
        }
        let (mut lo, mut hi) = (0i128, 0i128);
        for (&n, &s) in shape.iter().zip(&strides) {
            let span = (n as i128 - 1).checked_mul(s as i128)?;
            if s < 0 {
                lo = lo.checked_add(span)?;
            } else {
                hi = hi.checked_add(span)?;
            }
        }
        Some((lo, hi + 1))
    };
    let (lo, hi) = extent()
        .filter(|&(lo, hi)| (hi - lo).saturating_mul(itemsize as i128) <= isize::MAX as i128)
        .ok_or_else(|| {
            over(format!(
                "the extent of shape {shape:?} with byte strides {bstrides:?}"
            ))
        })?;
    // Both fit: |lo| and hi are below the byte count, itself below `isize::MAX`.
    let (lo, hi) = (lo as isize, hi as isize);
    let nbytes = ((hi - lo) as usize) * itemsize;
    // The span must be real addresses: not below 0 nor past the end of the address space
    // (NumPy's `as_strided` checks nothing).
    let start = buf as usize as i128 + lo as i128 * itemsize as i128;
    if numel > 0 && (start <= 0 || start + nbytes as i128 > usize::MAX as i128) {
        return Err(over(format!(
            "the memory of shape {shape:?} with byte strides {bstrides:?} at {buf:p} (it wraps the address space)"
        )));
    }
    let base = buf.wrapping_offset(lo * itemsize as isize);
    let base = NonNull::new(base).unwrap_or(NonNull::dangling());
    // SAFETY: the caller's contract: the bytes stay valid while `owner` (which the
    // storage keeps until it goes) lives.
    let storage = unsafe { Storage::from_foreign(base, nbytes, read_only, owner) };
    let layout = Layout::new(shape, &strides, (-lo) as usize).py()?;
    Tensor::from_parts(storage, layout, dtype).py()
}

/// `tensor.numpy()`: a NumPy array sharing memory (through the buffer protocol).
pub fn to_numpy<'py>(slf: &Bound<'py, PyTensor>) -> PyResult<Bound<'py, PyAny>> {
    let t = slf.get().inner();
    if let strata::Device::Cuda(_) = t.device() {
        return Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "can't convert {} device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first.",
            t.device()
        )));
    }
    t.check_host("numpy").py()?;
    if t.dtype() == DType::BF16 {
        return Err(bf16_error("numpy"));
    }
    crate::ndarray::to_ndarray(slf.as_any(), t)
}
