//! [`Tensor`]: a dtype and a [`Layout`] over a shared [`Storage`].

mod create;
mod data;
mod display;
mod index;
mod operators;
mod scalar;
mod set;
mod views;

use std::fmt;

pub use create::Generator;
pub use data::{ReadGuard, WriteGuard};
pub use index::{Ellipsis, NewAxis, TensorIndex};
pub use scalar::Scalar;
#[doc(hidden)]
pub use views::ViewOp;

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
/// [`Tensor::from_parts`], which every constructor and `as_strided` go through; every other
/// view op only selects, reorders or repeats the elements of its source, so it keeps L4 by
/// construction (debug builds assert it on each call). Kernels can trust the metadata.
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
pub struct Tensor {
    storage: Storage,
    layout: Layout,
    dtype: DType,
    /// The autograd metadata (`requires_grad`, `grad`, `grad_fn`), empty for a tensor that
    /// autograd has never touched (see `autograd/`). Shared by clones of this handle, as
    /// PyTorch's `Tensor` copies share one `TensorImpl`.
    pub(crate) grad: crate::autograd::GradSlot,
}

impl Clone for Tensor {
    /// Another handle to the same view. With its dims inline (up to
    /// [`INLINE_DIMS`](crate::layout::dims::INLINE_DIMS)) a tensor is copied whole, as one
    /// value, after counting the new storage handle: the field-by-field copy went through
    /// a temporary written in narrow stores and read back by wide loads, a store-forwarding
    /// stall on every view op (see `layout::dims`).
    #[inline]
    fn clone(&self) -> Tensor {
        if self.layout.inline() {
            std::mem::forget(self.storage.clone());
            // SAFETY: the storage handle was just counted (and the count's handle
            // forgotten), so the copy owns one; the rest is a dtype and a layout whose
            // lists are inline arrays of `Copy` values, valid under a bitwise copy, and
            // the grad slot, whose bitwise copy is overwritten (not dropped) by a counted
            // clone before the value is returned.
            unsafe {
                let mut t = std::ptr::read(self);
                std::ptr::write(&mut t.grad, self.grad.clone());
                t
            }
        } else {
            Tensor {
                storage: self.storage.clone(),
                layout: self.layout.clone(),
                dtype: self.dtype,
                grad: self.grad.clone(),
            }
        }
    }
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

/// The debug-build check of every view op: the elements of `view` lie within `source`'s
/// range (the source's `index_range`), so the view keeps L4 without a bounds walk.
#[cfg(debug_assertions)]
fn assert_inside(op: &str, source: Option<(usize, usize)>, view: &Layout) {
    if let Some((lo, hi)) = view.index_range() {
        let (slo, shi) = source.unwrap_or((usize::MAX, 0));
        assert!(
            slo <= lo && hi <= shi,
            "{op}: derived view [{lo}, {hi}] is not inside its source [{slo}, {shi}]"
        );
    }
}

/// The error for a view with more than [`MAX_NDIM`] dims.
#[cold]
fn too_many_dims(op: &'static str, ndim: usize) -> Error {
    Error::shape(
        op,
        format!("tensors have at most {MAX_NDIM} dims, got {ndim}"),
    )
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

    /// A tensor over `storage`, just allocated for `layout`: a dense layout of the
    /// storage's elements (`kernel::plan::output_like`), inside it by construction, so
    /// only the dim limit is checked (debug builds check L4 as [`from_parts`] does).
    ///
    /// [`from_parts`]: Self::from_parts
    #[inline]
    pub(crate) fn fresh(storage: Storage, layout: Layout, dtype: DType) -> Result<Tensor> {
        if layout.ndim() > MAX_NDIM {
            return Err(too_many_dims("empty_like", layout.ndim()));
        }
        if dtype.is_complex() && !storage.device().is_cpu() {
            return Self::checked("empty_like", storage, layout, dtype);
        }
        #[cfg(debug_assertions)]
        if let Err(e) = Self::checked("empty_like", storage.clone(), layout.clone(), dtype) {
            panic!("a fresh layout outside its storage: {e}");
        }
        Ok(Tensor {
            storage,
            layout,
            dtype,
            grad: Default::default(),
        })
    }

    fn checked(op: &'static str, storage: Storage, layout: Layout, dtype: DType) -> Result<Tensor> {
        if layout.ndim() > MAX_NDIM {
            return Err(too_many_dims(op, layout.ndim()));
        }
        if dtype.is_complex() && !storage.device().is_cpu() {
            // The GPU backend has no complex kernels (not even copies): refused at the
            // one door every new tensor passes (allocation, transfer, import, views).
            return Err(Error::Device {
                op,
                device: storage.device(),
                msg: format!(
                    "complex tensors on {} are not supported yet; keep them on the cpu",
                    storage.device()
                ),
            });
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
            grad: Default::default(),
        })
    }

    /// The same storage and dtype with a layout derived from this tensor's by a view op
    /// of [`Layout`] (not `as_strided`). Those ops only select, reorder, repeat (stride 0)
    /// or regroup the source's elements, so every element of `layout` is an element of
    /// `self` and L4 holds without walking the dims again; only the dim limit is checked
    /// (`unsqueeze` and friends add dims). Debug builds (the test suites) verify the
    /// subset claim on every call.
    #[inline]
    pub(crate) fn derived(&self, op: &'static str, layout: Layout) -> Result<Tensor> {
        let out = Tensor {
            storage: self.storage.clone(),
            layout,
            dtype: self.dtype,
            grad: Default::default(),
        };
        self.checked_derived(op, out)
    }

    /// `out`, a copy of this tensor whose layout a view op derived from this one's:
    /// checked against the dim limit (and, in debug builds, for the subset claim of
    /// [`derived`](Self::derived)).
    #[inline]
    pub(crate) fn checked_derived(&self, op: &'static str, out: Tensor) -> Result<Tensor> {
        if out.layout.ndim() > MAX_NDIM {
            return Err(too_many_dims(op, out.layout.ndim()));
        }
        #[cfg(debug_assertions)]
        assert_inside(op, self.layout.index_range(), &out.layout);
        Ok(out)
    }

    /// The element type.
    #[inline]
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The device of the storage.
    #[inline]
    pub fn device(&self) -> Device {
        self.storage.device()
    }

    /// The view metadata.
    #[inline]
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Sizes per dim.
    #[inline]
    pub fn shape(&self) -> &[usize] {
        self.layout.shape()
    }

    /// Whether `other` has the same shape (cheaper than comparing [`shape`](Self::shape)
    /// slices: a fixed-size compare for up to five dims).
    #[inline]
    pub fn same_shape(&self, other: &Tensor) -> bool {
        self.layout.same_shape(&other.layout)
    }

    /// Strides per dim, in elements (signed).
    #[inline]
    pub fn strides(&self) -> &[isize] {
        self.layout.strides()
    }

    /// Offset of the first element in the storage, in elements.
    #[inline]
    pub fn offset(&self) -> usize {
        self.layout.offset()
    }

    /// Number of dims.
    #[inline]
    pub fn ndim(&self) -> usize {
        self.layout.ndim()
    }

    /// Number of elements.
    #[inline]
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
    #[inline]
    pub fn storage(&self) -> &Storage {
        &self.storage
    }

    /// The version counter shared by every view of the storage; every in-place write
    /// bumps it.
    #[inline]
    pub fn version(&self) -> u64 {
        self.storage.version()
    }

    /// PyTorch's `is_contiguous` (see [`Layout::is_contiguous`]).
    #[inline]
    pub fn is_contiguous(&self) -> bool {
        self.layout.is_contiguous()
    }

    /// Column-major contiguity.
    #[inline]
    pub fn is_f_contiguous(&self) -> bool {
        self.layout.is_f_contiguous()
    }

    /// True when the storage refuses writes.
    #[inline]
    pub fn is_read_only(&self) -> bool {
        self.storage.is_read_only()
    }

    /// Address of the first element (`storage ptr + offset·itemsize`), as PyTorch's
    /// `data_ptr()`. Only an address: dereferencing it needs a borrow.
    ///
    /// An empty view may carry an offset past the end of its storage (views without
    /// elements are not bounded by it, as in PyTorch): its address is then the end of the
    /// storage (see [`byte_offset`](Self::byte_offset)), never a wrapped one. PyTorch
    /// reports 0 for every empty tensor; strata keeps an address inside (or one past) the
    /// storage, which NumPy and DLPack consumers accept.
    #[inline]
    pub fn data_ptr(&self) -> usize {
        self.storage.data_ptr() as usize + self.byte_offset()
    }

    /// The offset of element `[0, 0, …]` in bytes, `offset·itemsize`, for pointers and
    /// exports. Exact for a view with elements (within its storage by L4); for an empty
    /// view, whose offset may be anything up to `isize::MAX`, it is clamped to the
    /// storage's length, so it never overflows and a pointer built from it stays at most
    /// one past the end of the storage.
    #[inline]
    pub fn byte_offset(&self) -> usize {
        let n = self.storage.nbytes();
        self.offset()
            .checked_mul(self.dtype.itemsize())
            .map_or(n, |b| b.min(n))
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
    /// intersect (whatever storages they belong to), or, for views over two mappings of
    /// one file, the file ranges do (Note [one file mapped twice] in `storage/mmap.rs`).
    pub fn may_share_memory(&self, other: &Tensor) -> bool {
        match (self.byte_range(), other.byte_range()) {
            (Some((a0, a1)), Some((b0, b1))) => {
                (a0 < b1 && b0 < a1)
                    || match (self.file_byte_range(), other.file_byte_range()) {
                        (Some((fa, a0, a1)), Some((fb, b0, b1))) => fa == fb && a0 < b1 && b0 < a1,
                        _ => false,
                    }
            }
            _ => false,
        }
    }

    /// For a view over a shared file map: the file and the byte range in it that the
    /// view touches (`None` otherwise, or if the range does not fit in a `u64`).
    fn file_byte_range(&self) -> Option<(crate::storage::SegmentId, u64, u64)> {
        let (id, at) = self.storage.shared_file_position()?;
        let item = self.dtype.itemsize() as u64;
        let (lo, hi) = self.layout.index_range()?;
        let start = at.checked_add((lo as u64).checked_mul(item)?)?;
        let end = at.checked_add((hi as u64).checked_add(1)?.checked_mul(item)?)?;
        Some((id, start, end))
    }
}

// A `Tensor` is moved in and out of `Result`s on every view op: above 128 bytes the
// compiler moves it with a call to `memcpy` (see `layout::dims`).
const _: () = assert!(std::mem::size_of::<Tensor>() <= 128);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_views_keep_the_source_bounds() {
        let t = Tensor::zeros(&[4, 4], DType::F32).unwrap();
        let v = t.derived("test", Layout::new(&[2, 2], &[4, 1], 10).unwrap());
        assert_eq!(v.unwrap().layout().index_range(), Some((10, 15)));
    }

    /// The debug-build check behind `derived`: a layout reaching outside its source is a
    /// bug in a view op, caught before it can reach a kernel.
    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "derived view [0, 16] is not inside its source [0, 15]")]
    fn derived_outside_the_source_is_caught_in_debug_builds() {
        let t = Tensor::zeros(&[4, 4], DType::F32).unwrap();
        let _ = t.derived("test", Layout::new(&[17], &[1], 0).unwrap());
    }
}
