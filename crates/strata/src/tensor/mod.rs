//! [`Tensor`]: a dtype and a [`Layout`] over a shared [`Storage`].

mod create;
mod data;
mod display;
mod index;
mod ops;
mod scalar;
mod views;

use std::fmt;

pub use create::Generator;
pub use data::{ReadGuard, WriteGuard};
pub use index::{Ellipsis, NewAxis, TensorIndex};
pub use scalar::Scalar;

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::storage::{Device, Storage};

/// The most dims a tensor may have (NumPy's limit), so recursive walks over the dims
/// (printing, nested lists) stay shallow.
pub const MAX_NDIM: usize = 64;

/// A strided view of a storage: dtype, shape, signed strides and offset (in elements).
///
/// Cloning a `Tensor` is cheap (an `Arc` clone and a small inline copy of the metadata) and
/// yields another handle to the same view. Every view op returns a new `Tensor` over the
/// same storage; writes through one view show through every other.
///
/// Beyond the [`Layout`] invariants L1–L3, a tensor keeps **L4**: when it has elements, its
/// highest element index is below `storage.nbytes() / dtype.itemsize()`. It is checked in
/// [`Tensor::from_parts`], which every constructor and view op goes through, so kernels can
/// trust the metadata.
///
/// ```
/// use strata::Tensor;
/// let points = Tensor::from_vec(vec![4.0f32, 1.0, 5.0, 3.0, 2.0, 1.0], &[3, 2])?;
/// let points_t = points.transpose(0, 1)?;
/// assert_eq!(points_t.strides(), &[1, 2]);
/// assert!(points.same_storage(&points_t));
/// points.zero_()?;
/// assert_eq!(points_t.to_vec::<f32>()?, vec![0.0; 6]);
/// # Ok::<(), strata::Error>(())
/// ```
#[derive(Clone)]
pub struct Tensor {
    storage: Storage,
    layout: Layout,
    dtype: DType,
}

impl fmt::Debug for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tensor")
            .field("dtype", &self.dtype)
            .field("shape", &self.shape())
            .field("strides", &self.strides())
            .field("offset", &self.offset())
            .field("storage", &self.storage.id())
            .finish()
    }
}

impl Tensor {
    /// A tensor over `storage` with `layout`, checking that the view stays inside the
    /// storage (invariant L4).
    ///
    /// # Errors
    /// [`Error::OutOfBounds`] with PyTorch's `setStorage` text.
    pub fn from_parts(storage: Storage, layout: Layout, dtype: DType) -> Result<Tensor> {
        Self::checked("as_strided", storage, layout, dtype)
    }

    fn checked(op: &'static str, storage: Storage, layout: Layout, dtype: DType) -> Result<Tensor> {
        if layout.ndim() > MAX_NDIM {
            return Err(Error::shape(
                op,
                format!(
                    "tensors have at most {MAX_NDIM} dims, got {}",
                    layout.ndim()
                ),
            ));
        }
        let elems = storage.nbytes() / dtype.itemsize();
        if let Some((_, hi)) = layout.index_range() {
            if hi >= elems {
                return Err(Error::OutOfBounds {
                    op,
                    shape: layout.shape().to_vec(),
                    strides: layout.strides().to_vec(),
                    offset: layout.offset() as i64,
                    itemsize: dtype.itemsize(),
                    required: (hi as i128 + 1) * dtype.itemsize() as i128,
                    available: storage.nbytes(),
                });
            }
        }
        Ok(Tensor {
            storage,
            layout,
            dtype,
        })
    }

    /// The same storage and dtype with another layout, bounds-checked.
    pub(crate) fn with_layout(&self, op: &'static str, layout: Layout) -> Result<Tensor> {
        Self::checked(op, self.storage.clone(), layout, self.dtype)
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The device of the storage.
    pub fn device(&self) -> Device {
        self.storage.device()
    }

    /// The view metadata.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Sizes per dim.
    pub fn shape(&self) -> &[usize] {
        self.layout.shape()
    }

    /// Strides per dim, in elements (signed).
    pub fn strides(&self) -> &[isize] {
        self.layout.strides()
    }

    /// Offset of the first element in the storage, in elements.
    pub fn offset(&self) -> usize {
        self.layout.offset()
    }

    /// Number of dims.
    pub fn ndim(&self) -> usize {
        self.layout.ndim()
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.layout.numel()
    }

    /// Size of dim `d` (negative counts from the end).
    pub fn size(&self, d: i64) -> Result<usize> {
        if self.ndim() == 0 {
            return Err(Error::index(
                "size",
                format!("Dimension specified as {d} but tensor has no dimensions"),
            ));
        }
        let k = crate::layout::wrap_dim("size", d, self.ndim())?;
        Ok(self.shape()[k])
    }

    /// The storage this tensor views.
    pub fn storage(&self) -> &Storage {
        &self.storage
    }

    /// The version counter shared by every view of the storage; every in-place write
    /// bumps it.
    pub fn version(&self) -> u64 {
        self.storage.version()
    }

    /// PyTorch's `is_contiguous` (see [`Layout::is_contiguous`]).
    pub fn is_contiguous(&self) -> bool {
        self.layout.is_contiguous()
    }

    /// Column-major contiguity.
    pub fn is_f_contiguous(&self) -> bool {
        self.layout.is_f_contiguous()
    }

    /// True when the storage refuses writes.
    pub fn is_read_only(&self) -> bool {
        self.storage.is_read_only()
    }

    /// Address of the first element (`storage ptr + offset·itemsize`), as PyTorch's
    /// `data_ptr()`. Only an address: dereferencing it needs a borrow.
    pub fn data_ptr(&self) -> usize {
        self.storage.data_ptr() as usize + self.offset() * self.dtype.itemsize()
    }

    /// True when both tensors view the same storage.
    pub fn same_storage(&self, other: &Tensor) -> bool {
        self.storage.same(&other.storage)
    }

    /// The byte range `[lo, hi)` of memory this view touches, or `None` when empty.
    pub fn byte_range(&self) -> Option<(usize, usize)> {
        let base = self.storage.data_ptr() as usize;
        let item = self.dtype.itemsize();
        self.layout
            .index_range()
            .map(|(lo, hi)| (base + lo * item, base + (hi + 1) * item))
    }

    /// NumPy's `may_share_memory`: true when the address ranges the two views touch
    /// intersect (whatever storages they belong to).
    pub fn may_share_memory(&self, other: &Tensor) -> bool {
        match (self.byte_range(), other.byte_range()) {
            (Some((a0, a1)), Some((b0, b1))) => a0 < b1 && b0 < a1,
            _ => false,
        }
    }
}
