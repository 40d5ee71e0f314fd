//! `strata.UntypedStorage`: the bytes behind tensors as a Python object (PyTorch's
//! `torch.UntypedStorage`): element access and slicing (a slice shares the bytes),
//! `fill_`/`copy_`, shared memory and the hand-made handles another process reopens a
//! storage from (by name, or by fd), `from_buffer`/`from_file`, and `Tensor(storage)`.
//! `strata/storage.py` builds the typed view (`TypedStorage`, `t.storage()`) on it.

use std::os::fd::{BorrowedFd, IntoRawFd};

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyInt, PySlice, PyTuple};
use strata::storage::handle::NameHandle;
use strata::{DType, ErrorKind, Layout, Storage, Tensor};

use crate::convert::{int_list, sizes};
use crate::dtype::opt_dtype;
use crate::errors::{err, IntoPy};
use crate::tensor::{to_list, PyTensor};

/// The bytes behind tensors (PyTorch's `UntypedStorage`).
#[pyclass(name = "UntypedStorage", module = "strata", frozen)]
#[derive(Debug)]
pub struct PyUntypedStorage {
    /// Dropped in `Drop` with any pending exception set aside (a foreign owner's code may
    /// run).
    pub storage: std::mem::ManuallyDrop<Storage>,
}

impl Drop for PyUntypedStorage {
    fn drop(&mut self) {
        // SAFETY: pyo3 drops a class's value with the GIL held; `storage` is dropped once,
        // here, and never used again.
        unsafe {
            crate::errors::preserving_error(|| std::mem::ManuallyDrop::drop(&mut self.storage))
        };
    }
}

impl PyUntypedStorage {
    pub fn wrap(storage: Storage) -> PyUntypedStorage {
        PyUntypedStorage {
            storage: std::mem::ManuallyDrop::new(storage),
        }
    }

    /// The whole storage as a 1-D tensor of `dtype`: as many whole elements as the bytes
    /// hold (PyTorch's `set_(storage)` and `TypedStorage.size()`).
    pub fn as_tensor(&self, dtype: DType) -> PyResult<Tensor> {
        whole(&self.storage, dtype)
    }

    fn bytes(&self) -> PyResult<Tensor> {
        self.as_tensor(DType::U8)
    }

    /// A byte index, wrapped when negative, or PyTorch's `IndexError`.
    fn index(&self, i: i64) -> PyResult<usize> {
        let n = self.storage.nbytes();
        let j = if i < 0 {
            i.checked_add(n as i64)
        } else {
            Some(i)
        };
        match j {
            Some(j) if (0..n as i64).contains(&j) => Ok(j as usize),
            _ => Err(err(
                ErrorKind::Index,
                "UntypedStorage",
                format!("index {i} out of range for storage of size {n}"),
            )),
        }
    }

    /// The `[start, stop)` of a slice key (step 1 only, as in PyTorch).
    fn range(&self, key: &Bound<'_, PySlice>) -> PyResult<(usize, usize)> {
        let n = self.storage.nbytes();
        let ind = key.indices(n as isize)?;
        if ind.step != 1 {
            return Err(err(
                ErrorKind::Value,
                "UntypedStorage",
                format!(
                    "Trying to slice with a step of {}, but only a step of 1 is supported",
                    ind.step
                ),
            ));
        }
        let start = ind.start.clamp(0, n as isize) as usize;
        Ok((start, start + ind.slicelength))
    }
}

/// A byte value for `fill_` or item assignment: an int (or an object with `__index__`)
/// from 0 to 255. PyTorch refuses non-integers with `what`; where it wraps an integer out
/// of range, strata refuses it (no silent change of the value).
fn byte_arg(op: &'static str, value: &Bound<'_, PyAny>, what: &str) -> PyResult<u8> {
    if value.is_instance_of::<pyo3::types::PyFloat>()
        || value.hasattr("__index__").ok() != Some(true)
    {
        return Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "{what}, but got {}",
            value
                .get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default()
        )));
    }
    if let Ok(b) = value.cast::<pyo3::types::PyBool>() {
        return Ok(u8::from(b.is_true()));
    }
    let v = crate::convert::index_arg(value)?;
    u8::try_from(v).map_err(|_| {
        err(
            ErrorKind::Overflow,
            op,
            format!("value cannot be converted to type uint8_t without overflow: {v}"),
        )
    })
}

/// A storage argument: an `UntypedStorage`, or a `TypedStorage` (its untyped bytes).
fn storage_arg(op: &'static str, obj: &Bound<'_, PyAny>) -> PyResult<Storage> {
    match storage_of(obj)? {
        Some((s, _)) => Ok(s),
        None => Err(err(
            ErrorKind::DType,
            op,
            format!(
                "expected a storage, got {}",
                obj.get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default()
            ),
        )),
    }
}

/// A storage of `n` zeroed bytes on `device`.
fn zeroed_on(n: usize, device: strata::Device) -> PyResult<Storage> {
    Ok(Tensor::zeros_on(&[n], DType::U8, device)
        .py()?
        .storage()
        .clone())
}

#[pymethods]
impl PyTensor {
    /// Makes this tensor object show another view (PyTorch's `set_`), and returns it:
    /// `set_()` an empty one; `set_(source)` all of a storage (as elements of this dtype)
    /// or another tensor's view; `set_(source, storage_offset, size, stride=None)` that
    /// view of a storage, or of a tensor's storage (row-major when `stride` is `None`).
    /// Every reference to this object sees the new view; views made from it before keep
    /// theirs. A storage is never grown to fit (PyTorch grows a resizable one): a view
    /// past its end is refused.
    #[pyo3(signature = (source=None, storage_offset=None, size=None, stride=None))]
    fn set_<'py>(
        slf: &Bound<'py, Self>,
        source: Option<&Bound<'py, PyAny>>,
        storage_offset: Option<&Bound<'py, PyAny>>,
        size: Option<&Bound<'py, PyAny>>,
        stride: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, Self>> {
        let all = [source, storage_offset, size, stride];
        let mut t = slf.get().inner().clone();
        let src_tensor = source.and_then(|s| s.cast::<PyTensor>().ok());
        let storage = match (source, src_tensor) {
            (None, _) => None,
            (Some(_), Some(st)) => Some((st.get().inner().storage().clone(), None)),
            (Some(s), None) => Some(storage_of(s)?.ok_or_else(|| set_signature_error(&all))?),
        };
        match (storage, storage_offset, size) {
            (None, None, None) if stride.is_none() => {
                t.set_empty().py()?;
            }
            (Some((st, typed)), None, None) if stride.is_none() => {
                typed_matches(typed, t.dtype())?;
                match src_tensor {
                    Some(src) => t.set_to(src.get().inner()).py()?,
                    None => {
                        let n = st.nbytes() / t.dtype().itemsize();
                        t.set_(&st, 0, &[n], None).py()?
                    }
                };
            }
            (Some((st, typed)), Some(off), Some(size)) => {
                typed_matches(typed, t.dtype())?;
                if !off.is_instance_of::<PyInt>() {
                    return Err(set_signature_error(&all));
                }
                let off: i64 = off.extract().map_err(|_| {
                    err(
                        ErrorKind::Overflow,
                        "set_",
                        format!("storage offset {off} does not fit in 64 bits"),
                    )
                })?;
                let off = usize::try_from(off).map_err(|_| {
                    err(
                        ErrorKind::Value,
                        "set_",
                        format!("Tensor: invalid storage offset {off}"),
                    )
                })?;
                let shape = sizes("set_", &int_list(size)?)?;
                let strides: Option<Vec<isize>> = match stride.filter(|s| !s.is_none()) {
                    None => None,
                    Some(s) => Some(int_list(s)?.into_iter().map(|v| v as isize).collect()),
                };
                t.set_(&st, off, &shape, strides.as_deref()).py()?;
            }
            _ => return Err(set_signature_error(&all)),
        }
        slf.get().set_view(t);
        Ok(slf.clone())
    }

    /// The tensor's storage typed as its dtype (PyTorch's deprecated `TypedStorage`; see
    /// `strata/storage.py`): `untyped_storage()` is the untyped one.
    fn storage(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let u = PyUntypedStorage::wrap(self.inner().storage().clone());
        let dt = crate::dtype::canonical(py, self.inner().dtype())?;
        Ok(py
            .import("strata.storage")?
            .getattr("_typed_storage_of")?
            .call1((u, dt))?
            .unbind())
    }
}

#[pymethods]
impl PyUntypedStorage {
    /// `UntypedStorage()` (empty), `UntypedStorage(n)` (`n` zeroed bytes) or
    /// `UntypedStorage([b0, b1, …])` (those bytes); `device=` as for tensors.
    #[new]
    #[pyo3(signature = (data=None, *, device=None))]
    fn py_new(
        data: Option<&Bound<'_, PyAny>>,
        device: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyUntypedStorage> {
        let dev = crate::device::opt_device("UntypedStorage", device)?;
        let Some(data) = data else {
            return Ok(Self::wrap(zeroed_on(0, dev)?));
        };
        if data.is_instance_of::<PyInt>() {
            let n: i64 = data.extract()?;
            let n = usize::try_from(n).map_err(|_| {
                err(
                    ErrorKind::Value,
                    "UntypedStorage",
                    format!("Storage size must be non-negative, got {n}"),
                )
            })?;
            return Ok(Self::wrap(zeroed_on(n, dev)?));
        }
        // A sequence of byte values, each checked as `uint8` (PyTorch's text on overflow).
        let mut bytes = Vec::new();
        for item in data.try_iter()? {
            let item = item?;
            if item.is_instance_of::<pyo3::types::PyList>() || item.is_instance_of::<PyTuple>() {
                return Err(err(
                    ErrorKind::Shape,
                    "UntypedStorage",
                    "expected a flat sequence of byte values, got a nested one",
                ));
            }
            let v = crate::convert::index_arg(&item)?;
            bytes.push(u8::try_from(v).map_err(|_| {
                err(
                    ErrorKind::Overflow,
                    "UntypedStorage",
                    format!("value cannot be converted to type uint8_t without overflow: {v}"),
                )
            })?);
        }
        let n = bytes.len();
        let t = Tensor::from_vec(bytes, &[n]).py()?;
        let t = if dev.is_cpu() {
            t
        } else {
            t.to_device(dev).py()?
        };
        Ok(Self::wrap(t.storage().clone()))
    }

    fn data_ptr(&self) -> usize {
        self.storage.data_ptr() as usize
    }

    fn nbytes(&self) -> usize {
        self.storage.nbytes()
    }

    /// The length in bytes (an untyped storage's elements are bytes).
    fn size(&self) -> usize {
        self.storage.nbytes()
    }

    fn element_size(&self) -> usize {
        1
    }

    #[getter]
    fn device(&self) -> String {
        self.storage.device().to_string()
    }

    #[getter]
    fn is_cuda(&self) -> bool {
        !self.storage.device().is_cpu()
    }

    fn is_read_only(&self) -> bool {
        self.storage.is_read_only()
    }

    /// True for page-locked host memory (`pin_memory=True`).
    fn is_pinned(&self) -> PyResult<bool> {
        Ok(self.bytes()?.is_pinned())
    }

    /// True when the bytes live in memory other processes can map.
    fn is_shared(&self) -> bool {
        self.storage.is_shared()
    }

    /// Moves the bytes into shared memory in place (the current sharing strategy), as
    /// `Tensor.share_memory_()` does; every tensor over this storage sees it.
    fn share_memory_(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        crate::shm::share_storage(slf.py(), &slf.get().storage)?;
        Ok(slf)
    }

    /// The byte at `key` (an int), or a storage over the bytes of `key` (a slice with
    /// step 1), sharing them: writes through either are seen by the other.
    fn __getitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        if let Ok(sl) = key.cast::<PySlice>() {
            let (start, stop) = self.range(sl)?;
            let s = self
                .storage
                .slice_bytes("UntypedStorage", start, stop)
                .py()?;
            return Ok(Self::wrap(s).into_pyobject(py)?.into_any().unbind());
        }
        let i = self.index(crate::convert::index_arg(key)?)?;
        let v: u8 = self.bytes()?.get(&[i]).py()?;
        Ok(v.into_pyobject(py)?.into_any().unbind())
    }

    /// Writes the byte `value` at `key` (an int), or at every byte of `key` (a slice).
    fn __setitem__(&self, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let v = byte_arg(
            "UntypedStorage",
            value,
            "can only set storage content with a int types",
        )?;
        if let Ok(sl) = key.cast::<PySlice>() {
            let (start, stop) = self.range(sl)?;
            let t = self.bytes()?;
            t.narrow(0, start as i64, (stop - start) as i64)
                .py()?
                .fill_(v)
                .py()?;
            return Ok(());
        }
        let i = self.index(crate::convert::index_arg(key)?)?;
        self.bytes()?.set(&[i], v).py()
    }

    /// Sets every byte to `value` (0–255); returns the storage.
    fn fill_<'py>(slf: Bound<'py, Self>, value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, Self>> {
        let v = byte_arg("fill_", value, "fill_ expects int")?;
        slf.get().bytes()?.fill_(v).py()?;
        Ok(slf)
    }

    /// Copies the bytes of `src` (a storage of the same size, on any device) into this
    /// one; returns the storage.
    #[pyo3(signature = (src, non_blocking=false))]
    fn copy_<'py>(
        slf: Bound<'py, Self>,
        src: &Bound<'py, PyAny>,
        non_blocking: bool,
    ) -> PyResult<Bound<'py, Self>> {
        let _ = non_blocking;
        let src = storage_arg("copy_", src)?;
        let this = &slf.get().storage;
        if src.nbytes() != this.nbytes() {
            return Err(err(
                ErrorKind::Shape,
                "copy_",
                format!(
                    "size mismatch: this storage has {} bytes, the source {}",
                    this.nbytes(),
                    src.nbytes()
                ),
            ));
        }
        let dst = slf.get().bytes()?;
        let src = PyUntypedStorage::wrap(src).bytes()?;
        let py = slf.py();
        crate::compute::nogil(py, dst.numel(), || dst.copy_(&src).map(|_| ())).py()?;
        Ok(slf)
    }

    /// A new storage holding a copy of the bytes, on the same device.
    fn clone(&self, py: Python<'_>) -> PyResult<PyUntypedStorage> {
        let t = self.bytes()?;
        let c = crate::compute::nogil(py, t.numel(), || t.contiguous_copy()).py()?;
        Ok(Self::wrap(c.storage().clone()))
    }

    /// This storage when it is on the host, else a host copy.
    fn cpu(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        if slf.get().storage.device().is_cpu() {
            return Ok(slf);
        }
        let t = slf.get().bytes()?.host_copy("cpu").py()?;
        Bound::new(slf.py(), Self::wrap(t.storage().clone()))
    }

    /// Itself (PyTorch's `untyped()`, for code that holds either kind of storage).
    fn untyped(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    /// strata's storages have a fixed size: always an error naming the sizes.
    fn resize_(&self, size: i64) -> PyResult<()> {
        Err(err(
            ErrorKind::Value,
            "resize_",
            format!(
                "Trying to resize storage that is not resizable (strata's storages keep their size: {} bytes, asked {size}); make a new storage and copy_ into a slice of it",
                self.storage.nbytes()
            ),
        ))
    }

    /// The raw elements of the whole storage read as `dtype` (default uint8), like the
    /// classic `print_internal`: what the bytes hold, regardless of any view.
    #[pyo3(signature = (dtype=None))]
    fn tolist(&self, py: Python<'_>, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        let dt = opt_dtype(dtype)?.unwrap_or(DType::U8);
        to_list(py, &self.as_tensor(dt)?)
    }

    /// The whole storage as a 1-D tensor of `dtype` (for `TypedStorage`).
    fn _as_tensor(&self, dtype: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let dt = opt_dtype(Some(dtype))?.unwrap_or(DType::U8);
        self.as_tensor(dt).map(PyTensor::wrap)
    }

    fn __len__(&self) -> usize {
        self.storage.nbytes()
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<PyUntypedStorage>()
            .is_ok_and(|o| self.storage.same(&o.get().storage))
    }

    fn __hash__(&self) -> u64 {
        self.storage.id()
    }

    fn __repr__(&self) -> String {
        format!(
            "<strata.UntypedStorage of {} bytes at {:#x}>",
            self.storage.nbytes(),
            self.storage.data_ptr() as usize
        )
    }

    // ----- files and buffers -----

    /// A storage over the file `filename` (as `strata.from_file`): with `shared`, writes
    /// reach the file; without, the file never changes. `nbytes` bytes are mapped.
    #[staticmethod]
    #[pyo3(signature = (filename, shared=false, nbytes=0))]
    fn from_file(
        filename: std::path::PathBuf,
        shared: bool,
        nbytes: usize,
    ) -> PyResult<PyUntypedStorage> {
        let t = Tensor::from_file(filename, shared, nbytes, DType::U8).py()?;
        Ok(Self::wrap(t.storage().clone()))
    }

    /// A new storage holding a copy of `count` elements of `dtype` (default uint8; all
    /// when -1) of `buffer` from byte `offset`, each from `byte_order` (`"native"`,
    /// `"little"` or `"big"`) to native order.
    #[staticmethod]
    #[pyo3(signature = (buffer, byte_order="native", count=-1, offset=0, dtype=None))]
    fn from_buffer(
        buffer: &Bound<'_, PyAny>,
        byte_order: &str,
        count: i64,
        offset: i64,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyUntypedStorage> {
        let dt = opt_dtype(dtype)?.unwrap_or(DType::U8);
        from_buffer_bytes(buffer, byte_order, count, offset, dt).map(Self::wrap)
    }

    // ----- handles another process reopens the storage from -----

    /// A handle by name, as text for one other process (`"<send name>:<base
    /// name>:<nbytes>"`): `UntypedStorage.from_shared_filename(text)` there maps the same
    /// bytes. A storage not yet shared first moves into a named segment. The handle works
    /// while this process lives, for one receiver; make one per receiver.
    fn share_filename(&self) -> PyResult<String> {
        Ok(self.storage.share_by_name().py()?.to_string())
    }

    /// Reopens a storage from a handle made by `share_filename()` in another process.
    #[staticmethod]
    fn from_shared_filename(handle: &str) -> PyResult<PyUntypedStorage> {
        let h: NameHandle = handle.parse().py()?;
        Ok(Self::wrap(Storage::from_name_handle(&h).py()?))
    }

    /// A handle by fd: `(fd, nbytes)`, the fd a new descriptor of the storage's memfd,
    /// owned by the caller: pass it to one other process (`socket.send_fds`,
    /// `multiprocessing.reduction.send_handle`) and close it. A storage not yet shared
    /// first moves into a memfd.
    fn share_fd(&self) -> PyResult<(i32, usize)> {
        let (fd, n) = self.storage.share_by_fd().py()?;
        Ok((fd.into_raw_fd(), n))
    }

    /// Reopens a storage from a memfd received by hand; `fd` stays the caller's (strata
    /// maps its own duplicate), so close it when done.
    #[staticmethod]
    fn from_shared_fd(fd: i32, nbytes: i64) -> PyResult<PyUntypedStorage> {
        let nbytes = handle_size("from_shared_fd", nbytes)?;
        if fd < 0 {
            return Err(err(
                ErrorKind::Value,
                "from_shared_fd",
                format!("bad fd {fd}"),
            ));
        }
        // SAFETY: the caller names an fd it holds open for this call (as PyTorch's
        // `_new_shared_fd_cpu` requires); strata only duplicates it (F_DUPFD_CLOEXEC, which
        // fails with EBADF for a number that is not open) and never closes it.
        let fd = unsafe { BorrowedFd::borrow_raw(fd) };
        Ok(Self::wrap(Storage::from_fd_handle(fd, nbytes).py()?))
    }

    /// PyTorch's spelling of `share_filename()`: `(manager, name, nbytes)` as bytes,
    /// bytes and int (strata has no manager process: the first item is the segment's base
    /// name).
    fn _share_filename_cpu_<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>, usize)> {
        let h = self.storage.share_by_name().py()?;
        Ok((
            PyBytes::new(py, h.base_name.as_bytes()),
            PyBytes::new(py, h.send_name.as_bytes()),
            h.nbytes,
        ))
    }

    /// PyTorch's spelling of `from_shared_filename()`, from the tuple
    /// `_share_filename_cpu_()` gave.
    #[staticmethod]
    fn _new_shared_filename_cpu(
        manager: &Bound<'_, PyAny>,
        obj: &Bound<'_, PyAny>,
        size: i64,
    ) -> PyResult<PyUntypedStorage> {
        let name = |o: &Bound<'_, PyAny>| -> PyResult<String> {
            match o.cast::<PyBytes>() {
                Ok(b) => Ok(String::from_utf8_lossy(b.as_bytes()).into_owned()),
                Err(_) => o.extract::<String>(),
            }
        };
        let h = NameHandle {
            send_name: name(obj)?,
            base_name: name(manager)?,
            nbytes: handle_size("from_shared_filename", size)?,
            read_only: false,
        };
        Ok(Self::wrap(Storage::from_name_handle(&h).py()?))
    }

    /// PyTorch's spelling of `share_fd()` (the fd is the caller's to close; PyTorch's
    /// belongs to the storage).
    fn _share_fd_cpu_(&self) -> PyResult<(i32, usize)> {
        self.share_fd()
    }

    /// PyTorch's spelling of `from_shared_fd()`.
    #[staticmethod]
    fn _new_shared_fd_cpu(fd: i32, size: i64) -> PyResult<PyUntypedStorage> {
        Self::from_shared_fd(fd, size)
    }

    fn __reduce__(&self, py: Python<'_>) -> PyResult<(Py<PyAny>, Py<PyTuple>)> {
        // Pickled as its bytes (a tensor of them rebuilds a storage on the other side).
        let t = PyTensor::wrap(self.bytes()?);
        let rebuild = py.import("strata.storage")?.getattr("_rebuild_untyped")?;
        Ok((rebuild.unbind(), PyTuple::new(py, [t])?.unbind()))
    }
}

/// A byte count from a handle, which another process or a person wrote.
fn handle_size(op: &'static str, n: i64) -> PyResult<usize> {
    usize::try_from(n).map_err(|_| {
        err(
            ErrorKind::Value,
            op,
            format!("a handle's size must be non-negative, got {n}"),
        )
    })
}

/// `from_buffer`'s copy: PyTorch's checks and texts, then the byte swap when asked.
fn from_buffer_bytes(
    buffer: &Bound<'_, PyAny>,
    byte_order: &str,
    count: i64,
    offset: i64,
    dt: DType,
) -> PyResult<Storage> {
    let op = "from_buffer";
    let swap = match byte_order {
        "native" => false,
        "little" => cfg!(target_endian = "big"),
        "big" => cfg!(target_endian = "little"),
        other => {
            return Err(err(
                ErrorKind::Value,
                op,
                format!("invalid byte_order '{other}' (expected 'big', 'little', or 'native')"),
            ))
        }
    };
    let src = crate::buffer::from_buffer(buffer)?;
    if !src.is_contiguous() {
        return Err(err(ErrorKind::Value, op, "the buffer is not contiguous"));
    }
    let len = src.numel() * src.dtype().itemsize();
    let bytes = Tensor::from_parts(
        src.storage().clone(),
        Layout::new(&[len], &[1], src.byte_offset()).py()?,
        DType::U8,
    )
    .py()?;
    let k = dt.itemsize();
    let start = usize::try_from(offset)
        .ok()
        .filter(|&o| o <= len)
        .ok_or_else(|| {
            err(
                ErrorKind::Value,
                op,
                format!("offset must be non-negative and no greater than buffer length ({len}) , but got {offset}"),
            )
        })?;
    let n = if count < 0 {
        if (len - start) % k != 0 {
            return Err(err(
                ErrorKind::Value,
                op,
                format!(
                    "buffer size ({}) must be a multiple of element size ({k})",
                    len - start
                ),
            ));
        }
        (len - start) / k
    } else {
        let c = count as usize;
        match c.checked_mul(k) {
            Some(b) if b <= len - start => c,
            _ => {
                return Err(err(
                    ErrorKind::Value,
                    op,
                    format!("requested buffer length ({count} * {k} bytes) after offset ({offset} bytes) must not be greater than actual buffer length ({len} bytes)"),
                ))
            }
        }
    };
    let part = bytes.narrow(0, start as i64, (n * k) as i64).py()?;
    let out = if swap && k > 1 {
        part.view(&[n as i64, k as i64])
            .py()?
            .flip(&[1])
            .py()?
            .contiguous_copy()
    } else {
        part.contiguous_copy()
    }
    .py()?;
    Ok(out.storage().clone())
}

/// `obj` as a storage: an `UntypedStorage`'s bytes (dtype `None`), or a `TypedStorage`'s
/// bytes and dtype; `None` when it is neither.
fn storage_of(obj: &Bound<'_, PyAny>) -> PyResult<Option<(Storage, Option<DType>)>> {
    if let Ok(s) = obj.cast::<PyUntypedStorage>() {
        return Ok(Some((Storage::clone(&s.get().storage), None)));
    }
    static TYPED: pyo3::sync::PyOnceLock<Py<pyo3::types::PyType>> = pyo3::sync::PyOnceLock::new();
    let py = obj.py();
    let typed = TYPED.get_or_try_init(py, || -> PyResult<_> {
        Ok(py
            .import("strata.storage")?
            .getattr("TypedStorage")?
            .cast_into::<pyo3::types::PyType>()?
            .unbind())
    })?;
    if !obj.is_instance(typed.bind(py))? {
        return Ok(None);
    }
    let dt = opt_dtype(Some(&obj.getattr(pyo3::intern!(py, "dtype"))?))?.unwrap_or(DType::F32);
    let u = obj.getattr(pyo3::intern!(py, "_untyped_storage"))?;
    let u = u.cast::<PyUntypedStorage>()?;
    Ok(Some((Storage::clone(&u.get().storage), Some(dt))))
}

/// `Tensor(storage)`: a 1-D tensor over the whole of `obj` when it is a storage (float32,
/// or `dtype`, for an untyped one; a typed storage's own dtype, which `dtype` must
/// match), else `None`.
pub fn tensor_over(obj: &Bound<'_, PyAny>, dtype: Option<DType>) -> PyResult<Option<Tensor>> {
    let Some((storage, typed)) = storage_of(obj)? else {
        return Ok(None);
    };
    let dt = match (typed, dtype) {
        (Some(t), Some(d)) if t != d => {
            return Err(err(
                ErrorKind::DType,
                "Tensor",
                format!("a TypedStorage of {t} cannot make a tensor of {d}"),
            ))
        }
        (Some(t), _) => t,
        (None, d) => d.unwrap_or(DType::F32),
    };
    whole(&storage, dt).map(Some)
}

/// The whole of `storage` as a 1-D tensor of `dtype`: as many whole elements as its bytes
/// hold.
fn whole(storage: &Storage, dtype: DType) -> PyResult<Tensor> {
    let n = storage.nbytes() / dtype.itemsize();
    Tensor::from_parts(
        Storage::clone(storage),
        Layout::contiguous(&[n]).py()?,
        dtype,
    )
    .py()
}

/// `set_`'s refusal of a typed storage of another dtype than the tensor's (PyTorch's text).
fn typed_matches(typed: Option<DType>, dtype: DType) -> PyResult<()> {
    match typed {
        Some(d) if d != dtype => Err(err(
            ErrorKind::DType,
            "set_",
            format!(
                "Expected a Storage of type {} or an UntypedStorage, but got type {} for argument 1 'storage'",
                dtype.c_name(),
                d.legacy_name()
            ),
        )),
        _ => Ok(()),
    }
}

/// PyTorch's `TypeError` for `set_` arguments that match none of its forms.
fn set_signature_error(args: &[Option<&Bound<'_, PyAny>>]) -> PyErr {
    // Arguments up to the last one given; a `None` before it is shown as PyTorch does.
    let given = args.iter().rposition(Option::is_some).map_or(0, |i| i + 1);
    let got: Vec<String> = args[..given]
        .iter()
        .map(|a| match a {
            None => "NoneType".to_string(),
            Some(a) => a
                .get_type()
                .name()
                .map_or_else(|_| "object".to_string(), |n| n.to_string()),
        })
        .collect();
    pyo3::exceptions::PyTypeError::new_err(format!(
        "set_() received an invalid combination of arguments - got ({}), but expected one of:\n \
         * ()\n \
         * (strata.Storage source)\n \
         * (strata.Storage source, int storage_offset, tuple of ints size, tuple of ints stride = None)\n \
         * (Tensor source)\n \
         * (Tensor source, int storage_offset, tuple of ints size, tuple of ints stride = None)\n",
        got.join(", ")
    ))
}
