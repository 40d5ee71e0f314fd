//! Data access: element reads and writes, fill, copy, contiguous copies and typed slice
//! guards. Simple and correct; every access holds the storage borrow (invariant S4).

use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};

use super::{Scalar, Tensor};
use crate::backend::{backend_for, backend_of};
use crate::dtype::{DType, Element};
use crate::error::list;
use crate::error::{Error, Result};
use crate::kernel::plan::stage_if_overlapping;
use crate::kernel::walk;
use crate::layout::broadcast::broadcast_shapes;
use crate::layout::overlap::Overlap;
use crate::storage::borrow::{self, BorrowGuard};
use crate::with_dtype;

/// Largest view whose possible self-overlap is settled by listing its element positions.
const EXACT_OVERLAP_LIMIT: usize = 1 << 22;

impl Tensor {
    fn expect_dtype<T: Element>(&self, op: &'static str) -> Result<()> {
        if self.dtype != T::DTYPE {
            return Err(Error::dtype(
                op,
                format!(
                    "expected a tensor of dtype {} but this tensor is {}",
                    T::DTYPE,
                    self.dtype
                ),
            ));
        }
        Ok(())
    }

    /// The one "must be on the host" check for tensors: `Ok` when the storage is in CPU
    /// memory, else the [`Error::Device`] naming `op`. Every host-only operation (element
    /// access, slice guards, `Display`, `explain`, NumPy/buffer/DLPack export, shared
    /// memory, saving) calls it; see [`Storage::check_host`](crate::Storage::check_host).
    #[inline]
    pub fn check_host(&self, op: &'static str) -> Result<()> {
        self.storage.check_host(op)
    }

    /// Checks that this tensor may be written: its storage is writable and no two of its
    /// elements share memory.
    pub(crate) fn check_write(&self, op: &'static str) -> Result<()> {
        self.storage.check_writable(op)?;
        let aliased = match self.layout.internal_overlap() {
            Overlap::No => false,
            Overlap::Yes => true,
            Overlap::Maybe => {
                let n = self.numel();
                if n > EXACT_OVERLAP_LIMIT {
                    true
                } else {
                    let mut pos = Vec::with_capacity(n);
                    walk(self.shape(), [self.strides()], [self.offset()], |[i]| {
                        pos.push(i)
                    });
                    pos.sort_unstable();
                    pos.windows(2).any(|w| w[0] == w[1])
                }
            }
        };
        if aliased {
            return Err(Error::SelfOverlap { op });
        }
        Ok(())
    }

    /// Base pointer of the storage; callers hold a borrow (S3).
    fn base(&self) -> *mut u8 {
        self.storage.data_ptr()
    }

    /// The elements in row-major order of the view, as a `Vec`.
    ///
    /// # Errors
    /// A dtype error when `T` is not the tensor's element type; a resource error when the
    /// `Vec` cannot be allocated (an expanded view can name far more elements than memory
    /// holds).
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        self.expect_dtype::<T>("to_vec")?;
        if !self.device().is_cpu() {
            return self.host_copy("to_vec")?.to_vec();
        }
        self.check_host("to_vec")?;
        let _g = borrow::acquire("to_vec", &[(&self.storage, false)])?;
        let base = self.base();
        let mut out = crate::error::try_vec("to_vec", self.numel())?;
        walk(self.shape(), [self.strides()], [self.offset()], |[i]| {
            // SAFETY: `i` is inside the storage by L4, the storage bytes are valid by S1 and
            // the shared borrow `_g` excludes writers (S4).
            out.push(unsafe { T::load(base.add(i * size_of::<T>())) })
        });
        Ok(out)
    }

    /// The element at `index` (one entry per dim).
    pub fn get<T: Element>(&self, index: &[usize]) -> Result<T> {
        self.expect_dtype::<T>("get")?;
        let i = self.layout.index_of("get", index)?;
        if !self.device().is_cpu() {
            let one =
                Tensor::from_parts(self.storage.clone(), crate::Layout::scalar(i), self.dtype)?;
            return one.host_copy("get")?.get(&[]);
        }
        self.check_host("get")?;
        let _g = borrow::acquire("get", &[(&self.storage, false)])?;
        // SAFETY: `index_of` checked every index, so `i` is inside the storage (L4); the
        // shared borrow excludes writers (S4).
        Ok(unsafe { T::load(self.base().add(i * size_of::<T>())) })
    }

    /// The element at `index` as a [`Scalar`], whatever the dtype.
    pub fn get_scalar(&self, index: &[usize]) -> Result<Scalar> {
        with_dtype!(self.dtype, T => self.get::<T>(index).map(Scalar::from_element))
    }

    /// The value of a one-element tensor.
    pub fn item(&self) -> Result<Scalar> {
        if self.numel() != 1 {
            return Err(Error::value(
                "item",
                format!(
                    "a Tensor with {} elements cannot be converted to Scalar",
                    self.numel()
                ),
            ));
        }
        self.get_scalar(&vec![0; self.ndim()])
    }

    /// Writes `value` (cast to the dtype) at `index`.
    pub fn set(&self, index: &[usize], value: impl Into<Scalar>) -> Result<()> {
        let value = value.into();
        value.check_fits("set", self.dtype)?;
        let i = self.layout.index_of("set", index)?;
        if !self.device().is_cpu() {
            backend_for("set", self.device())?;
            let one =
                Tensor::from_parts(self.storage.clone(), crate::Layout::scalar(i), self.dtype)?;
            one.fill_(value)?;
            return Ok(());
        }
        self.check_host("set")?;
        self.storage.check_writable("set")?;
        let _g = borrow::acquire("set", &[(&self.storage, true)])?;
        self.storage.bump_version();
        with_dtype!(self.dtype, T => {
            // SAFETY: `i` is checked (L4), the storage is writable (S1) and the exclusive
            // borrow excludes every other access (S4).
            unsafe { value.to::<T>().store(self.base().add(i * size_of::<T>())) }
        });
        Ok(())
    }

    /// Sets every element of the view to `value`, in place; the write shows through every
    /// other view of the storage.
    ///
    /// # Errors
    /// Read-only storage, elements that alias each other, or a conflicting borrow.
    pub fn fill_(&self, value: impl Into<Scalar>) -> Result<&Self> {
        let value = value.into();
        if self.grad.get().is_some() {
            crate::autograd::check_inplace(self)?;
            if crate::autograd::needs_grad(&[self]) {
                {
                    let _off = crate::autograd::no_grad();
                    self.fill_(value)?;
                }
                crate::autograd::record_inplace(
                    self,
                    &[],
                    "FillBackward0",
                    &[],
                    Box::new(|_saved, grads, _needs| Ok(vec![Some(grads[0].mul(0.0)?)])),
                )?;
                return Ok(self);
            }
        }
        let backend = backend_for("fill_", self.device())?;
        value.check_fits("fill_", self.dtype)?;
        self.check_write("fill_")?;
        backend.fill(self, value)?;
        Ok(self)
    }

    /// A host tensor with this tensor's values: itself when it is on the host, else a
    /// row-major copy (waiting for the device). `op` names the caller in errors.
    ///
    /// # Errors
    /// A device without a backend here, or a failed copy.
    pub fn host_copy(&self, op: &'static str) -> Result<Tensor> {
        if self.device().is_cpu() {
            return Ok(self.clone());
        }
        backend_for(op, self.device())?;
        crate::backend::cuda::transfer::to_host(op, self, false)
    }

    /// Sets every element to zero, in place.
    pub fn zero_(&self) -> Result<&Self> {
        self.fill_(0)
    }

    /// Copies `src` into this view, in place, broadcasting `src` to this shape and casting
    /// its dtype with PyTorch's rules. An input that overlaps this view is staged first, so
    /// the result is as if `src` had been read completely before any write.
    ///
    /// # Errors
    /// Broadcast mismatch, read-only storage, self-aliasing destination.
    pub fn copy_(&self, src: &Tensor) -> Result<&Self> {
        self.copy_with(src, false)
    }

    /// [`copy_`](Self::copy_) across devices too (host ↔ GPU); with `non_blocking` a
    /// copy between pinned host memory and a GPU is queued on the current stream
    /// without waiting for it.
    ///
    /// # Errors
    /// As [`copy_`](Self::copy_).
    pub fn copy_with(&self, src: &Tensor, non_blocking: bool) -> Result<&Self> {
        if self.grad.get().is_some() || src.grad.get().is_some() {
            crate::autograd::check_inplace(self)?;
            if crate::autograd::needs_grad(&[self, src]) {
                {
                    let _off = crate::autograd::no_grad();
                    self.copy_with(src, non_blocking)?;
                }
                crate::autograd::record_inplace(
                    self,
                    &[src],
                    "CopyBackwards",
                    &[],
                    Box::new(|_saved, grads, needs| {
                        let g = &grads[0];
                        let gs = if needs[0] { Some(g.mul(0.0)?) } else { None };
                        let gsrc = if needs[1] { Some(g.clone()) } else { None };
                        Ok(vec![gs, gsrc])
                    }),
                )?;
                return Ok(self);
            }
        }
        let across = self.device() != src.device() && !(src.ndim() == 0 && src.device().is_cpu());
        let backend = if across {
            crate::backend::backend_for("copy_", self.device())?;
            crate::backend::backend_for("copy_", src.device())?
        } else {
            backend_of("copy_", &[self, src])?
        };
        if self.shape() != src.shape() {
            let bshape = broadcast_shapes("copy_", self.shape(), src.shape())?;
            if bshape.as_slice() != self.shape() {
                return Err(Error::shape(
                    "copy_",
                    format!(
                        "output with shape {} doesn't match the broadcast shape {}",
                        list(self.shape()),
                        list(&bshape)
                    ),
                ));
            }
        }
        self.check_write("copy_")?;
        if across {
            crate::backend::cuda::transfer::copy_across(self, src, non_blocking)?;
            return Ok(self);
        }
        let src = stage_if_overlapping(self, src)?;
        backend.copy(self, &src)?;
        Ok(self)
    }

    /// A compact row-major copy in fresh storage (always copies).
    pub fn contiguous_copy(&self) -> Result<Tensor> {
        let out = self.copied_as(self.dtype)?;
        self.grad_copy(out, "CloneBackward0")
    }

    /// PyTorch's `clone()`: a copy in fresh storage whose dim order follows this
    /// tensor's (a transposed tensor gives a transposed copy, as `preserve_format` does;
    /// broadcast and overlapping dims are laid out compactly). [`Clone`] on a `Tensor` is
    /// another handle to the same view; this copies the data.
    ///
    /// ```
    /// let x = strata::Tensor::arange(0, 6, 1, strata::DType::F32)?.view(&[2, 3])?;
    /// let c = x.t()?.clone_data()?;
    /// assert_eq!((c.strides(), c.same_storage(&x)), (&[1, 3][..], false));
    /// assert_eq!(c.to_vec::<f32>()?, x.t()?.to_vec::<f32>()?);
    /// # Ok::<(), strata::Error>(())
    /// ```
    #[doc(alias = "clone")]
    pub fn clone_data(&self) -> Result<Tensor> {
        let out = self.copied(self.dtype, &[self])?;
        self.grad_copy(out, "CloneBackward0")
    }

    /// `out`, a copy of this tensor (maybe in another dtype), recorded for autograd: the
    /// gradient passes through unchanged (cast back by the engine).
    #[inline]
    fn grad_copy(&self, out: Tensor, name: &'static str) -> Result<Tensor> {
        if self.grad.get().is_none()
            || !crate::autograd::needs_grad(&[self])
            || !crate::autograd::differentiable(out.dtype())
        {
            return Ok(out);
        }
        crate::autograd::record1(
            name,
            &[self],
            out,
            &[],
            Box::new(|_saved, grads, _needs| Ok(vec![Some(grads[0].clone())])),
        )
    }

    /// A compact row-major copy of `dtype` in fresh storage.
    fn copied_as(&self, dtype: DType) -> Result<Tensor> {
        self.copied(dtype, &[])
    }

    /// A copy of `dtype` in fresh storage whose dim order follows `order` (row-major when
    /// empty).
    fn copied(&self, dtype: DType, order: &[&Tensor]) -> Result<Tensor> {
        let backend = backend_for("copy", self.device())?;
        // Not zeroed: the copy writes every element before `out` is returned (S5).
        let out = if order.is_empty() && !self.device().is_cpu() {
            Tensor::alloc_uninit_on("copy", self.shape(), dtype, self.device())?
        } else {
            crate::kernel::plan::output_for(self.shape(), dtype, order)?
        };
        // `out` is fresh: on `self`'s device, of its shape, writable, laid out without
        // overlap and disjoint from `self`, so none of `copy_`'s checks or its staging
        // apply (a per-call cost of `contiguous()` on small tensors).
        backend.copy(&out, self)?;
        Ok(out)
    }

    /// `self` when already contiguous (same storage), else a compact copy.
    pub fn contiguous(&self) -> Result<Tensor> {
        if self.is_contiguous() {
            Ok(self.clone())
        } else {
            self.contiguous_copy()
        }
    }

    /// A copy converted to `dtype` (`self` when the dtype already matches).
    pub fn to_dtype(&self, dtype: DType) -> Result<Tensor> {
        if dtype == self.dtype {
            return Ok(self.clone());
        }
        let out = self.copied_as(dtype)?;
        self.grad_copy(out, "ToCopyBackward0")
    }

    /// Borrows the elements of a contiguous view as a `&[T]`, holding a shared borrow of
    /// the storage until the guard drops.
    ///
    /// # Errors
    /// Wrong dtype, a non-contiguous view, a bool tensor (its bytes need not be 0/1: use
    /// [`to_vec`](Self::to_vec)), misaligned foreign memory, or a conflicting borrow.
    pub fn read_slice<T: Element>(&self) -> Result<ReadGuard<'_, T>> {
        let ptr = self.slice_ptr::<T>("read_slice")?;
        let guard = borrow::acquire("read_slice", &[(&self.storage, false)])?;
        Ok(ReadGuard {
            _guard: guard,
            ptr,
            len: self.numel(),
            _t: PhantomData,
        })
    }

    /// Borrows the elements of a contiguous view as a `&mut [T]`, holding an exclusive
    /// borrow of the storage until the guard drops. Bumps the version counter.
    pub fn write_slice<T: Element>(&self) -> Result<WriteGuard<'_, T>> {
        let ptr = self.slice_ptr::<T>("write_slice")?;
        self.storage.check_writable("write_slice")?;
        let guard = borrow::acquire("write_slice", &[(&self.storage, true)])?;
        self.storage.bump_version();
        Ok(WriteGuard {
            _guard: guard,
            ptr,
            len: self.numel(),
            _t: PhantomData,
        })
    }

    fn slice_ptr<T: Element>(&self, op: &'static str) -> Result<*mut T> {
        self.expect_dtype::<T>(op)?;
        self.check_host(op)?;
        if T::DTYPE == DType::Bool {
            return Err(Error::dtype(
                op,
                "bool tensors have no typed slice access (their bytes need not be 0 or 1); use to_vec",
            ));
        }
        if !self.is_contiguous() {
            return Err(Error::shape(
                op,
                format!(
                    "needs a contiguous tensor, got shape {} with strides {}; call contiguous() first",
                    crate::error::list(self.shape()),
                    crate::error::list(self.strides())
                ),
            ));
        }
        let p = self.storage.data_ptr().wrapping_add(self.byte_offset()) as *mut T;
        if self.numel() > 0 && !p.is_aligned() {
            return Err(Error::value(
                op,
                format!("the data at {p:p} is not aligned for {}", T::DTYPE),
            ));
        }
        Ok(if self.numel() == 0 {
            std::ptr::NonNull::dangling().as_ptr()
        } else {
            p
        })
    }
}

/// Shared access to a contiguous tensor's elements as `&[T]`.
#[derive(Debug)]
pub struct ReadGuard<'a, T> {
    _guard: BorrowGuard<'a>,
    ptr: *mut T,
    len: usize,
    _t: PhantomData<&'a T>,
}

impl<T> Deref for ReadGuard<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: `ptr` is aligned, non-null and covers `len` initialised elements of a
        // contiguous view inside the storage (L4, S1, S5); T is not bool, so any bit pattern
        // is valid; the shared borrow held by `_guard` excludes writers (S4).
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

/// Exclusive access to a contiguous tensor's elements as `&mut [T]`.
#[derive(Debug)]
pub struct WriteGuard<'a, T> {
    _guard: BorrowGuard<'a>,
    ptr: *mut T,
    len: usize,
    _t: PhantomData<&'a mut T>,
}

impl<T> Deref for WriteGuard<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: as for `ReadGuard`; the exclusive borrow excludes every other access.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl<T> DerefMut for WriteGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as for `deref`; the storage was checked writable and the exclusive borrow
        // (S4) makes this the only access, and `&mut self` the only slice.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}
