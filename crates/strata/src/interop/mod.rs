//! Exchange with the outside world: DLPack, tensor files (`.npy`, safetensors),
//! file-backed tensors (`from_file`) and tensors shared with other processes
//! ([`shared_tensor`]).

pub mod dlpack;
pub mod npy;
pub mod safetensors;
pub mod shared_tensor;

use std::path::Path;

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::{checked_numel, Layout};
use crate::storage::borrow;
use crate::storage::{MapMode, Storage};
use crate::tensor::Tensor;

pub use self::npy::{load_npy, save_npy, NpyLoadOptions};
pub use self::safetensors::{
    deserialize_safetensors, load_safetensors, save_safetensors, serialize_safetensors,
    SafetensorsFile,
};
pub use self::shared_tensor::{recv_tensor, send_tensor, TensorMeta};

/// Calls `f` with the bytes of `t` in row-major order, as they would be written to a file:
/// non-contiguous views are compacted first, bool elements are written as 0/1 bytes.
/// Holds a shared borrow of the storage while `f` runs.
pub(crate) fn with_row_major_bytes<R>(
    op: &'static str,
    t: &Tensor,
    f: impl FnOnce(&[u8]) -> R,
) -> Result<R> {
    t.check_host(op)?;
    if t.dtype() == DType::Bool {
        let v: Vec<u8> = t.to_vec::<bool>()?.into_iter().map(u8::from).collect();
        return Ok(f(&v));
    }
    let c = t.contiguous()?;
    let n = c
        .numel()
        .checked_mul(c.dtype().itemsize())
        .ok_or_else(|| Error::overflow(op, "byte size"))?;
    if n == 0 {
        return Ok(f(&[]));
    }
    let _guard = borrow::acquire(op, &[(c.storage(), false)])?;
    let start = c.storage().data_ptr().wrapping_add(c.byte_offset());
    // SAFETY: `c` is contiguous, so its `numel · itemsize` bytes from its first element lie
    // inside its storage (invariant L4); the shared borrow keeps writers out while `f`
    // reads them, and every storage byte is initialised (S5).
    let bytes = unsafe { std::slice::from_raw_parts(start, n) };
    Ok(f(bytes))
}

/// A fresh tensor of `shape` (row-major) and `dtype` holding a copy of `bytes`, which must
/// be exactly `numel · itemsize` long.
pub(crate) fn tensor_from_bytes(
    op: &'static str,
    bytes: &[u8],
    shape: &[usize],
    dtype: DType,
) -> Result<Tensor> {
    let layout = Layout::contiguous(shape)?;
    let n = checked_numel(op, shape)?
        .checked_mul(dtype.itemsize())
        .ok_or_else(|| Error::overflow(op, format!("the byte size of shape {shape:?}")))?;
    if bytes.len() != n {
        return Err(Error::format(
            op,
            format!(
                "shape {shape:?} of {dtype} needs {n} bytes, the data has {}",
                bytes.len()
            ),
        ));
    }
    let storage = Storage::zeroed(n)?;
    if n > 0 {
        // SAFETY: the fresh storage has exactly `n` writable bytes and no other handle yet.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), storage.data_ptr(), n) };
    }
    Tensor::from_parts(storage, layout, dtype)
}

impl Tensor {
    /// The elements' bytes in row-major order, native byte order, as a file would hold
    /// them (bool as 0/1 bytes): a compact copy of any view.
    ///
    /// # Errors
    /// A byte size beyond `usize`, or a conflicting borrow of the storage.
    pub fn to_row_major_bytes(&self) -> Result<Vec<u8>> {
        const OP: &str = "to_row_major_bytes";
        with_row_major_bytes(OP, self, |b| {
            let mut v = crate::error::try_vec(OP, b.len())?;
            v.extend_from_slice(b);
            Ok(v)
        })?
    }

    /// A 1-D tensor of `size` elements of `dtype` over the file at `path`, mapped into
    /// memory as `torch.from_file` does: with `shared`, writes reach the file; without,
    /// the mapping is private copy-on-write and the file never changes.
    ///
    /// # Errors
    /// An I/O error when the file cannot be opened or mapped; a format error when it holds
    /// fewer than `size · itemsize` bytes.
    pub fn from_file(
        path: impl AsRef<Path>,
        shared: bool,
        size: usize,
        dtype: DType,
    ) -> Result<Tensor> {
        let path = path.as_ref();
        let nbytes = size
            .checked_mul(dtype.itemsize())
            .ok_or_else(|| Error::overflow("from_file", format!("{size} elements of {dtype}")))?;
        let mode = if shared {
            MapMode::Shared
        } else {
            MapMode::CopyOnWrite
        };
        // A map from file offset 0 is page-aligned, so aligned for every dtype.
        let storage = Storage::map_file(path, 0, nbytes, mode)?;
        Tensor::from_parts(storage, Layout::contiguous(&[size])?, dtype)
    }
}
