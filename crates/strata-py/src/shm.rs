//! Shared memory and pickling: `Tensor.share_memory_()`, `is_shared()`, `__reduce_ex__`,
//! and the private handle functions `strata/multiprocessing.py` builds its
//! `ForkingPickler` reducers on (see Note [shared memory lifetime] in the core crate).
//!
//! Note [pickle vs multiprocessing]: plain `pickle` copies the bytes (a `bytearray`, or a
//! `bytes` for a read-only tensor); with protocol 5 a contiguous tensor's bytes go
//! out-of-band as a `pickle.PickleBuffer`, so Ray and Dask move them without a copy, and a
//! tensor rebuilt over a read-only buffer is read-only. `multiprocessing` uses
//! `ForkingPickler`, whose reducer (registered on `import strata`) sends a handle instead.

use std::os::fd::{FromRawFd, IntoRawFd, OwnedFd};
use std::sync::atomic::{AtomicU8, Ordering};

use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyTuple};
use strata::storage::shm::{self, ShmKind};
use strata::{DType, ErrorKind, Layout, Tensor};

use crate::errors::{err, IntoPy};
use crate::tensor::PyTensor;

/// 0: memfd (`file_descriptor`), 1: named (`file_system`).
static STRATEGY: AtomicU8 = AtomicU8::new(0);

fn current_kind() -> ShmKind {
    if STRATEGY.load(Ordering::Relaxed) == 1 {
        ShmKind::Named
    } else {
        ShmKind::Memfd
    }
}

#[pymethods]
impl PyTensor {
    /// Moves the storage into shared memory in place (a memfd, or a named segment under
    /// the `file_system` strategy); every view sees it. A no-op when already shared,
    /// including a file mapped shared (it travels as the file). Raises while a NumPy
    /// array, buffer or DLPack capsule still points at the old bytes, and for memory that
    /// belongs to another owner (a NumPy array's, a DLPack producer's), which moving would
    /// detach from the tensor.
    fn share_memory_(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        share(slf.py(), slf.get().inner())?;
        Ok(slf)
    }

    /// True when the storage lives in memory other processes can map: shared memory, or
    /// a file mapped shared (`mmap_mode='r'`/`'r+'`, `from_file(shared=True)`).
    fn is_shared(&self) -> bool {
        self.inner().is_shared()
    }

    /// Plain pickling (see Note [pickle vs multiprocessing]).
    fn __reduce_ex__<'py>(
        slf: &Bound<'py, Self>,
        protocol: i64,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let py = slf.py();
        let t = slf.get().inner();
        let rebuild = py
            .import("strata.multiprocessing")?
            .getattr("_rebuild_buffer")?;
        // `requires_grad` travels as a fourth argument (a leaf's flag, as PyTorch keeps it).
        let grad = t.requires_grad().into_pyobject(py)?.to_owned().into_any();
        let shape = PyTuple::new(py, t.shape())?;
        let name = t.dtype().name();
        if protocol >= 5 && t.is_contiguous() {
            let nbytes = t.numel() * t.dtype().itemsize();
            let start = t.byte_offset();
            let bytes = Tensor::from_parts(
                t.storage().clone(),
                Layout::new(&[nbytes], &[1], start).py()?,
                DType::U8,
            )
            .py()?;
            let pb = py
                .import("pickle")?
                .getattr("PickleBuffer")?
                .call1((PyTensor::wrap(bytes),))?;
            return Ok((
                rebuild,
                PyTuple::new(
                    py,
                    [
                        pb,
                        name.into_pyobject(py)?.into_any(),
                        shape.into_any(),
                        grad,
                    ],
                )?,
            ));
        }
        let rebuild = py
            .import("strata.multiprocessing")?
            .getattr("_rebuild_owned")?;
        let raw = t.to_row_major_bytes().py()?;
        let buf = if t.is_read_only() {
            PyBytes::new(py, &raw).into_any()
        } else {
            PyByteArray::new(py, &raw).into_any()
        };
        Ok((
            rebuild,
            PyTuple::new(
                py,
                [
                    buf,
                    name.into_pyobject(py)?.into_any(),
                    shape.into_any(),
                    grad,
                ],
            )?,
        ))
    }
}

/// `share_memory_` with the strategy in force, refusing (with the owner's type) memory a
/// buffer-protocol exporter still uses; the core refuses other foreign owners.
fn share(py: Python<'_>, t: &Tensor) -> PyResult<()> {
    share_storage(py, t.storage())
}

/// [`share`] for a storage (`UntypedStorage.share_memory_()`).
pub(crate) fn share_storage(py: Python<'_>, storage: &strata::Storage) -> PyResult<()> {
    if !storage.is_shared() {
        if let Some(owner) = crate::buffer::buffer_owner_type(py, storage) {
            return Err(err(
                ErrorKind::Value,
                "share_memory_",
                format!(
                    "the tensor's memory belongs to a {owner} it was imported from (from_numpy, the buffer protocol); moving it into shared memory would detach the tensor from it, so later writes on either side would be lost. Share a copy instead: t.clone().share_memory_()"
                ),
            ));
        }
    }
    storage.share_memory_with(current_kind()).py()
}

/// Rebuilds a tensor over a 1-D byte buffer (copying only when it is misaligned for the
/// dtype). Read-only buffers give read-only tensors. `owned`: the buffer was made by the
/// pickle stream for this tensor alone (an in-band copy), so the tensor may later move
/// into shared memory.
#[pyfunction]
#[pyo3(signature = (buf, dtype, shape, owned=false))]
pub fn _tensor_from_bytes(
    buf: &Bound<'_, PyAny>,
    dtype: &str,
    shape: Vec<usize>,
    owned: bool,
) -> PyResult<PyTensor> {
    let dt = DType::from_name(dtype).ok_or_else(|| {
        err(
            ErrorKind::DType,
            "unpickle",
            format!("unknown dtype {dtype:?}"),
        )
    })?;
    let mut u = crate::buffer::from_buffer_owned(buf, owned)?;
    if u.dtype() != DType::U8 || u.ndim() != 1 {
        return Err(err(
            ErrorKind::Shape,
            "unpickle",
            "expected a 1-D byte buffer",
        ));
    }
    if u.data_ptr() % dt.itemsize() != 0 {
        u = u.contiguous_copy().py()?;
    }
    // The shape comes from a pickle: untrusted, so its product is checked.
    let numel = strata::layout::checked_numel("unpickle", &shape).py()?;
    if Some(u.numel()) != numel.checked_mul(dt.itemsize()) {
        return Err(err(
            ErrorKind::Shape,
            "unpickle",
            format!("{} bytes cannot hold {numel} elements of {dt}", u.numel()),
        ));
    }
    if numel == 0 {
        return Tensor::zeros(&shape, dt).py().map(PyTensor::wrap);
    }
    let dims: Vec<i64> = shape.iter().map(|&n| n as i64).collect();
    u.view_dtype(dt).py()?.view(&dims).py().map(PyTensor::wrap)
}

/// Selects what `share_memory_()` creates: `"file_descriptor"` (memfd) or `"file_system"`
/// (named segments; sweeps names left by dead processes).
#[pyfunction]
pub fn _shm_set_strategy(name: &str) -> PyResult<()> {
    let v = match name {
        "file_descriptor" => 0,
        "file_system" => {
            shm::sweep_stale_names().py()?;
            1
        }
        _ => {
            return Err(err(
                ErrorKind::Value,
                "set_sharing_strategy",
                format!("unknown strategy {name:?}: expected 'file_descriptor' or 'file_system'"),
            ))
        }
    };
    STRATEGY.store(v, Ordering::Relaxed);
    Ok(())
}

/// The strategy in force (the one place it is kept; `strata.multiprocessing` asks here).
#[pyfunction]
pub fn _shm_strategy() -> &'static str {
    match current_kind() {
        ShmKind::Memfd => "file_descriptor",
        ShmKind::Named => "file_system",
    }
}

/// An fd (a new one, owned by the caller) and the record to rebuild `t` elsewhere.
#[pyfunction]
pub fn _shm_export<'py>(
    py: Python<'py>,
    t: &Bound<'py, PyTensor>,
) -> PyResult<(i32, Bound<'py, PyBytes>)> {
    let t = t.get().inner();
    share(py, t)?;
    let (fd, rec) = t.to_shm_handle().py()?;
    Ok((fd.into_raw_fd(), PyBytes::new(py, &rec)))
}

/// Rebuilds a tensor from an fd (ownership passes to strata) and a record.
#[pyfunction]
pub fn _shm_import(fd: i32, record: &[u8]) -> PyResult<PyTensor> {
    if fd < 0 {
        return Err(err(
            ErrorKind::Value,
            "from_shm_handle",
            format!("bad fd {fd}"),
        ));
    }
    // SAFETY: the caller (strata.multiprocessing) hands over an fd it owns and never uses
    // again (`DupFd.detach()` returns a fresh one).
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    Tensor::from_shm_handle(fd, record).py().map(PyTensor::wrap)
}

/// A send name and record for `t` (a named segment).
#[pyfunction]
pub fn _shm_export_name<'py>(
    py: Python<'py>,
    t: &Bound<'py, PyTensor>,
) -> PyResult<(String, Bound<'py, PyBytes>)> {
    let (name, rec) = t.get().inner().to_shm_name().py()?;
    Ok((name, PyBytes::new(py, &rec)))
}

/// Opens (and unlinks) a send name.
#[pyfunction]
pub fn _shm_import_name(name: &str, record: &[u8]) -> PyResult<PyTensor> {
    Tensor::from_shm_name(name, record).py().map(PyTensor::wrap)
}

/// Unlinks this process's pending send names (at exit).
#[pyfunction]
pub fn _shm_unlink_pending() -> usize {
    shm::unlink_pending_names()
}

/// Unlinks names left by dead processes.
#[pyfunction]
pub fn _shm_sweep() -> PyResult<usize> {
    shm::sweep_stale_names().py()
}

/// `(kind, holds_fd)` of a tensor's shared segment, or None (for tests).
#[pyfunction]
pub fn _shm_info(t: &Bound<'_, PyTensor>) -> Option<(&'static str, bool, u64)> {
    t.get().inner().storage().shared_segment().map(|s| {
        let k = match s.kind() {
            ShmKind::Memfd => "memfd",
            ShmKind::Named => "named",
        };
        (k, s.holds_fd(), s.id().ino)
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_tensor_from_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(_shm_set_strategy, m)?)?;
    m.add_function(wrap_pyfunction!(_shm_strategy, m)?)?;
    m.add_function(wrap_pyfunction!(_shm_export, m)?)?;
    m.add_function(wrap_pyfunction!(_shm_import, m)?)?;
    m.add_function(wrap_pyfunction!(_shm_export_name, m)?)?;
    m.add_function(wrap_pyfunction!(_shm_import_name, m)?)?;
    m.add_function(wrap_pyfunction!(_shm_unlink_pending, m)?)?;
    m.add_function(wrap_pyfunction!(_shm_sweep, m)?)?;
    m.add_function(wrap_pyfunction!(_shm_info, m)?)?;
    Ok(())
}
