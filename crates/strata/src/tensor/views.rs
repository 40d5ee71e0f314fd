//! View ops on [`Tensor`]: each returns a new view of the same storage; only
//! `reshape`/`flatten` may copy, and only when no view can express the result.
//!
//! Why separate from `layout/view_metadata.rs`: that file is the pure shape/stride/offset
//! arithmetic of each view op on a [`Layout`] (no storage, no dtype); this one wraps it for
//! tensors (the storage handle, L4, the dim limit) and holds [`ViewOp`] /
//! [`Tensor::view_in_place`], the one path the methods below and the Python binding share.
//!
//! Why `view_in_place` exists: a view op is cheap work (swap two dims, move an offset) on a
//! 120-byte value, and what it costs is mostly moving that value: a fresh copy is edited
//! word by word, then moved into a `Result` and on into its final place (a Python object,
//! say), and the move reads back, in wide loads, words the CPU still holds as narrow stores
//! in its store buffer; it cannot forward them and stalls. A caller that can put a copy of
//! the source where the view must live (a binding writing into a freshly allocated object)
//! calls [`Tensor::view_in_place`] there and moves nothing. It is `#[doc(hidden)]`: the
//! public way to make a view is the method of the same name.

use super::{Tensor, TensorIndex};
use crate::dtype::DType;
use std::sync::Arc;

use crate::autograd::views::ViewGrad;
use crate::error::{Error, Result};
use crate::layout::Layout;

impl Tensor {
    /// `view(shape)`: the same elements under a new shape (one `-1` is inferred).
    ///
    /// ```
    /// let x = strata::Tensor::arange(0, 12, 1, strata::DType::F32)?;
    /// assert_eq!(x.view(&[3, -1])?.shape(), &[3, 4]);
    /// assert!(x.view(&[3, 4])?.t()?.view(&[12]).is_err()); // use reshape
    /// # Ok::<(), strata::Error>(())
    /// ```
    #[inline]
    pub fn view(&self, shape: &[i64]) -> Result<Tensor> {
        self.derive(ViewOp::View(shape))
    }

    /// `reshape(shape)`: a view when [`view`](Self::view) would succeed, else a contiguous
    /// copy.
    #[inline]
    pub fn reshape(&self, shape: &[i64]) -> Result<Tensor> {
        let mut out = self.clone();
        if out.layout.reshape_in(shape)? {
            let out = self.checked_derived("reshape", out)?;
            return self.grad_view(out, "ViewBackward0", || ViewGrad::Reshape);
        }
        let new_shape: Vec<i64> = out.shape().iter().map(|&n| n as i64).collect();
        // A copy, then a view of the copy: the copy's node (CloneBackward0) and the
        // view's record the history.
        self.contiguous_copy()?.view(&new_shape)
    }

    /// `flatten(start_dim, end_dim)`: merges the dims in between; a view when possible.
    #[inline]
    pub fn flatten(&self, start_dim: i64, end_dim: i64) -> Result<Tensor> {
        let (shape, view) = self.layout.flatten(start_dim, end_dim)?;
        match view {
            Some(l) => {
                let out = self.derived("flatten", l)?;
                self.grad_view(out, "ViewBackward0", || ViewGrad::Reshape)
            }
            None => self.reshape(&shape.iter().map(|&n| n as i64).collect::<Vec<_>>()),
        }
    }

    /// `unflatten(dim, sizes)`: splits one dim into several (always a view).
    #[inline]
    pub fn unflatten(&self, dim: i64, sizes: &[i64]) -> Result<Tensor> {
        let out = self.derived("unflatten", self.layout.unflatten(dim, sizes)?)?;
        self.grad_view(out, "ViewBackward0", || ViewGrad::Reshape)
    }

    /// Swaps dims `d0` and `d1`.
    #[inline]
    pub fn transpose(&self, d0: i64, d1: i64) -> Result<Tensor> {
        self.derive(ViewOp::Transpose(d0, d1))
    }

    /// NumPy's name for [`transpose`](Self::transpose).
    #[inline]
    pub fn swapaxes(&self, d0: i64, d1: i64) -> Result<Tensor> {
        self.transpose(d0, d1)
    }

    /// Transpose of a tensor with at most 2 dims.
    #[inline]
    pub fn t(&self) -> Result<Tensor> {
        self.derive(ViewOp::T)
    }

    /// Swaps the last two dims (`mT`).
    #[inline]
    pub fn mt(&self) -> Result<Tensor> {
        self.derive(ViewOp::MT)
    }

    /// Reorders dims: result dim `i` is dim `dims[i]`.
    #[inline]
    pub fn permute(&self, dims: &[i64]) -> Result<Tensor> {
        self.derive(ViewOp::Permute(dims))
    }

    /// Moves dims `src` to positions `dst`.
    #[inline]
    pub fn movedim(&self, src: &[i64], dst: &[i64]) -> Result<Tensor> {
        let out = self.derived("movedim", self.layout.movedim(src, dst)?)?;
        let (src, dst) = (src.to_vec(), dst.to_vec());
        self.grad_view(out, "PermuteBackward0", move || {
            ViewGrad::Replay(Arc::new(move |t: &Tensor| t.movedim(&src, &dst)))
        })
    }

    /// `length` elements of `dim` from `start`.
    #[inline]
    pub fn narrow(&self, dim: i64, start: i64, length: i64) -> Result<Tensor> {
        self.derive(ViewOp::Narrow(dim, start, length))
    }

    /// Element `index` of `dim`, dropping the dim.
    #[inline]
    pub fn select(&self, dim: i64, index: i64) -> Result<Tensor> {
        self.derive(ViewOp::Select(dim, index))
    }

    /// `start:end:step` along `dim`, with Python's rules; negative steps are zero-copy.
    ///
    /// ```
    /// let x = strata::Tensor::arange(0, 5, 1, strata::DType::I64)?;
    /// let r = x.slice(0, None, None, -2)?;
    /// assert_eq!(r.to_vec::<i64>()?, vec![4, 2, 0]);
    /// assert!(r.same_storage(&x));
    /// # Ok::<(), strata::Error>(())
    /// ```
    #[inline]
    pub fn slice(
        &self,
        dim: i64,
        start: Option<i64>,
        end: Option<i64>,
        step: i64,
    ) -> Result<Tensor> {
        self.derive(ViewOp::Slice(dim, start, end, step))
    }

    /// Reverses `dims` through negative strides (zero-copy; PyTorch copies).
    #[inline]
    pub fn flip(&self, dims: &[i64]) -> Result<Tensor> {
        self.derive(ViewOp::Flip(dims))
    }

    /// Broadcasts to `sizes` with stride-0 dims (`-1` keeps a size).
    #[inline]
    pub fn expand(&self, sizes: &[i64]) -> Result<Tensor> {
        let out = self.derived("expand", self.layout.expand(sizes)?)?;
        self.grad_view(out, "ExpandBackward0", || ViewGrad::Expand)
    }

    /// [`expand`](Self::expand) to `other`'s shape.
    pub fn expand_as(&self, other: &Tensor) -> Result<Tensor> {
        self.broadcast_to(other.shape())
    }

    /// Broadcasts to `shape`.
    pub fn broadcast_to(&self, shape: &[usize]) -> Result<Tensor> {
        let sizes = shape
            .iter()
            .map(|&n| i64::try_from(n))
            .collect::<std::result::Result<Vec<i64>, _>>()
            .map_err(|_| {
                Error::overflow(
                    "broadcast_to",
                    format!("size {}", crate::error::list(shape)),
                )
            })?;
        self.expand(&sizes)
    }

    /// Removes every size-1 dim.
    #[inline]
    pub fn squeeze(&self) -> Result<Tensor> {
        let out = self.derived("squeeze", self.layout.squeeze(None)?)?;
        self.grad_view(out, "SqueezeBackward0", || ViewGrad::Reshape)
    }

    /// Removes the listed dims where they have size 1.
    #[inline]
    pub fn squeeze_dims(&self, dims: &[i64]) -> Result<Tensor> {
        let out = self.derived("squeeze", self.layout.squeeze(Some(dims))?)?;
        self.grad_view(out, "SqueezeBackward1", || ViewGrad::Reshape)
    }

    /// Inserts a size-1 dim at `dim`.
    #[inline]
    pub fn unsqueeze(&self, dim: i64) -> Result<Tensor> {
        self.derive(ViewOp::Unsqueeze(dim))
    }

    /// A view with arbitrary `shape`, `strides` and `offset` (the tensor's own offset when
    /// `None`) over the same storage. Negative strides are allowed (PyTorch refuses
    /// them); the lowest and highest element must lie inside the storage.
    pub fn as_strided(
        &self,
        shape: &[usize],
        strides: &[isize],
        offset: Option<usize>,
    ) -> Result<Tensor> {
        let offset = offset.unwrap_or(self.offset());
        let layout = Layout::new_op("as_strided", shape, strides, offset)?;
        let out = Tensor::from_parts(self.storage.clone(), layout, self.dtype)?;
        self.grad_view(out, "AsStridedBackward0", || ViewGrad::Strided)
    }

    /// Sliding windows of `size` every `step` along `dim`, as a new last dim.
    #[inline]
    pub fn unfold(&self, dim: i64, size: usize, step: usize) -> Result<Tensor> {
        let out = self.derived("unfold", self.layout.unfold(dim, size, step)?)?;
        self.grad_view(out, "UnfoldBackward0", move || {
            ViewGrad::Replay(Arc::new(move |t: &Tensor| t.unfold(dim, size, step)))
        })
    }

    /// The diagonal of dims `dim1`, `dim2` shifted by `offset`, as a new last dim.
    #[inline]
    pub fn diagonal(&self, offset: i64, dim1: i64, dim2: i64) -> Result<Tensor> {
        let out = self.derived("diagonal", self.layout.diagonal(offset, dim1, dim2)?)?;
        self.grad_view(out, "DiagonalBackward0", move || {
            ViewGrad::Replay(Arc::new(move |t: &Tensor| t.diagonal(offset, dim1, dim2)))
        })
    }

    fn many(
        &self,
        op: &'static str,
        layouts: Vec<Layout>,
        name: &'static str,
        piece: impl Fn(&Tensor, usize) -> Result<Tensor> + Send + Sync + Clone + 'static,
    ) -> Result<Vec<Tensor>> {
        let mut out = crate::error::try_vec(op, layouts.len())?;
        for (i, l) in layouts.into_iter().enumerate() {
            let t = self.derived(op, l)?;
            let piece = piece.clone();
            out.push(self.grad_view(t, name, move || {
                ViewGrad::Replay(Arc::new(move |t: &Tensor| piece(t, i)))
            })?);
        }
        Ok(out)
    }

    /// `out`, a view of this tensor made by the op `name`, with its autograd state (none
    /// unless this tensor requires grad; see `autograd/views.rs`).
    #[inline]
    pub(crate) fn grad_view(
        &self,
        out: Tensor,
        name: &'static str,
        grad: impl FnOnce() -> ViewGrad,
    ) -> Result<Tensor> {
        if self.grad.get().is_none() {
            return Ok(out);
        }
        crate::autograd::views::record_view(self, out, name, grad())
    }

    /// Pieces of `split_size` along `dim` (the last may be smaller).
    pub fn split(&self, split_size: usize, dim: i64) -> Result<Vec<Tensor>> {
        self.many(
            "split",
            self.layout.split(split_size, dim)?,
            "SplitBackward0",
            move |t: &Tensor, i| Ok(t.split(split_size, dim)?.swap_remove(i)),
        )
    }

    /// Pieces of the given sizes along `dim`.
    pub fn split_with_sizes(&self, sizes: &[usize], dim: i64) -> Result<Vec<Tensor>> {
        let owned = sizes.to_vec();
        self.many(
            "split_with_sizes",
            self.layout.split_with_sizes(sizes, dim)?,
            "SplitWithSizesBackward0",
            move |t: &Tensor, i| Ok(t.split_with_sizes(&owned, dim)?.swap_remove(i)),
        )
    }

    /// At most `chunks` pieces of `ceil(n / chunks)` along `dim`.
    pub fn chunk(&self, chunks: usize, dim: i64) -> Result<Vec<Tensor>> {
        self.many(
            "chunk",
            self.layout.chunk(chunks, dim)?,
            "SplitBackward0",
            move |t: &Tensor, i| Ok(t.chunk(chunks, dim)?.swap_remove(i)),
        )
    }

    /// Every element of `dim`, each without the dim.
    pub fn unbind(&self, dim: i64) -> Result<Vec<Tensor>> {
        self.many(
            "unbind",
            self.layout.unbind(dim)?,
            "UnbindBackward0",
            move |t: &Tensor, i| t.select(dim, i as i64),
        )
    }

    /// Reinterprets the bytes as `dtype`: free for the same item size; otherwise PyTorch's
    /// rule (the last dim has stride 1 and is rescaled).
    pub fn view_dtype(&self, dtype: DType) -> Result<Tensor> {
        let layout = self.layout.view_dtype(
            self.dtype.itemsize(),
            dtype.itemsize(),
            (self.dtype.legacy_name(), dtype.legacy_name()),
        )?;
        Tensor::checked("view", self.storage.clone(), layout, dtype).map_err(|e| match e {
            Error::OutOfBounds { .. } => Error::dtype("view", e.to_string()),
            e => e,
        })
    }
}

/// A view op with its arguments, as [`Tensor::view_in_place`] takes it. Each has the
/// semantics and the error texts of the [`Tensor`] method of the same name. Hidden from the
/// docs: it is the binding's fast path, not the public way to make a view.
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub enum ViewOp<'a> {
    /// [`Tensor::view`] (shape only).
    View(&'a [i64]),
    /// [`Tensor::reshape`] where it is a view; where it would copy, the error of `view`
    /// ([`Error::ViewIncompatible`](crate::Error::ViewIncompatible)). Other errors name
    /// `reshape`.
    Reshape(&'a [i64]),
    /// [`Tensor::transpose`].
    Transpose(i64, i64),
    /// [`Tensor::t`].
    T,
    /// [`Tensor::mt`].
    MT,
    /// [`Tensor::permute`].
    Permute(&'a [i64]),
    /// [`Tensor::narrow`]`(dim, start, length)`.
    Narrow(i64, i64, i64),
    /// [`Tensor::select`]`(dim, index)`.
    Select(i64, i64),
    /// [`Tensor::slice`]`(dim, start, end, step)`.
    Slice(i64, Option<i64>, Option<i64>, i64),
    /// [`Tensor::flip`].
    Flip(&'a [i64]),
    /// [`Tensor::unsqueeze`].
    Unsqueeze(i64),
    /// [`Tensor::index`].
    Index(&'a [TensorIndex]),
}

impl ViewOp<'_> {
    /// The backward node's name and formula for this op on `src`.
    fn grad(&self, src: &Tensor) -> (&'static str, ViewGrad) {
        let n = src.ndim() as i64;
        let wrap = |d: i64| if d < 0 { d + n.max(1) } else { d };
        let swap = |a: i64, b: i64| {
            let mut p: Vec<i64> = (0..n).collect();
            if n > 0 {
                p.swap(wrap(a) as usize, wrap(b) as usize);
            }
            p
        };
        match *self {
            ViewOp::View(_) | ViewOp::Reshape(_) => ("ViewBackward0", ViewGrad::Reshape),
            ViewOp::Unsqueeze(_) => ("UnsqueezeBackward0", ViewGrad::Reshape),
            ViewOp::Transpose(a, b) => ("TransposeBackward0", ViewGrad::Permute(swap(a, b))),
            ViewOp::T => (
                "TBackward0",
                ViewGrad::Permute(if n == 2 { vec![1, 0] } else { (0..n).collect() }),
            ),
            ViewOp::MT => ("TransposeBackward0", ViewGrad::Permute(swap(-2, -1))),
            ViewOp::Permute(dims) => {
                let mut inv = vec![0i64; dims.len()];
                for (i, &d) in dims.iter().enumerate() {
                    inv[wrap(d) as usize] = i as i64;
                }
                ("PermuteBackward0", ViewGrad::Permute(inv))
            }
            ViewOp::Flip(dims) => ("FlipBackward0", ViewGrad::Flip(dims.to_vec())),
            ViewOp::Narrow(d, s, l) => (
                "SliceBackward0",
                ViewGrad::Replay(Arc::new(move |t: &Tensor| t.narrow(d, s, l))),
            ),
            ViewOp::Select(d, i) => (
                "SelectBackward0",
                ViewGrad::Replay(Arc::new(move |t: &Tensor| t.select(d, i))),
            ),
            ViewOp::Slice(d, a, b, st) => (
                "SliceBackward0",
                ViewGrad::Replay(Arc::new(move |t: &Tensor| t.slice(d, a, b, st))),
            ),
            ViewOp::Index(ix) => {
                let owned = ix.to_vec();
                let name = if ix.iter().all(|i| matches!(i, TensorIndex::Int(_))) {
                    "SelectBackward0"
                } else {
                    "SliceBackward0"
                };
                (
                    name,
                    ViewGrad::Replay(Arc::new(move |t: &Tensor| t.index(&owned))),
                )
            }
        }
    }

    /// The op's name in error texts.
    pub fn name(&self) -> &'static str {
        match self {
            ViewOp::View(_) => "view",
            ViewOp::Reshape(_) => "reshape",
            ViewOp::Transpose(..) => "transpose",
            ViewOp::T => "t",
            ViewOp::MT => "mT",
            ViewOp::Permute(_) => "permute",
            ViewOp::Narrow(..) => "narrow",
            ViewOp::Select(..) => "select",
            ViewOp::Slice(..) => "slice",
            ViewOp::Flip(_) => "flip",
            ViewOp::Unsqueeze(_) => "unsqueeze",
            ViewOp::Index(_) => "index",
        }
    }

    /// The most dims the op's result can have, from a tensor of `ndim` dims.
    fn max_ndim(&self, ndim: usize) -> usize {
        match self {
            ViewOp::View(shape) | ViewOp::Reshape(shape) => shape.len(),
            ViewOp::Unsqueeze(_) => ndim + 1,
            ViewOp::Index(ix) => {
                ndim + ix
                    .iter()
                    .filter(|e| matches!(e, TensorIndex::NewAxis))
                    .count()
            }
            _ => ndim,
        }
    }

    #[inline]
    fn edit(self, l: &mut Layout) -> Result<()> {
        match self {
            ViewOp::View(shape) => l.view_in(shape),
            ViewOp::Reshape(shape) => l.view_as_in("reshape", shape),
            ViewOp::Transpose(d0, d1) => l.transpose_in(d0, d1),
            ViewOp::T => l.t_in(),
            ViewOp::MT => l.mt_in(),
            ViewOp::Permute(dims) => l.permute_in(dims),
            ViewOp::Narrow(dim, start, length) => l.narrow_in(dim, start, length),
            ViewOp::Select(dim, index) => l.select_in(dim, index),
            ViewOp::Slice(dim, start, end, step) => l.slice_in(dim, start, end, step),
            ViewOp::Flip(dims) => l.flip_in(dims),
            ViewOp::Unsqueeze(dim) => l.unsqueeze_in(dim),
            ViewOp::Index(index) => l.index_in(index),
        }
    }
}

impl Tensor {
    /// Makes this tensor the view `op` gives of it, in place: the same storage and dtype,
    /// the layout edited where it lies. `t.view_in_place(op)` leaves `t` as `op` applied to
    /// the old `t` would return it; on error `t` is unchanged.
    ///
    /// ```
    /// use strata::{DType, Tensor, ViewOp};
    /// let x = Tensor::arange(0, 6, 1, DType::I64)?.view(&[2, 3])?;
    /// let mut y = x.clone();
    /// y.view_in_place(ViewOp::T)?;
    /// assert_eq!((y.shape(), y.strides()), (&[3, 2][..], &[1, 3][..]));
    /// assert!(y.view_in_place(ViewOp::Permute(&[0, 0])).is_err());
    /// assert_eq!(y.shape(), &[3, 2]);
    /// # Ok::<(), strata::Error>(())
    /// ```
    ///
    /// # Errors
    /// Those of the op's method.
    #[doc(hidden)]
    #[inline]
    pub fn view_in_place(&mut self, op: ViewOp<'_>) -> Result<()> {
        if self.grad.get().is_some() {
            let src = self.clone();
            self.grad.replace(None);
            if let Err(e) = self.view_in_place(op) {
                *self = src;
                return Err(e);
            }
            let (name, grad) = op.grad(&src);
            let out = std::mem::replace(self, src.detach());
            *self = crate::autograd::views::record_view(&src, out, name, grad)?;
            return Ok(());
        }
        #[cfg(debug_assertions)]
        let source = self.layout.index_range();
        if op.max_ndim(self.ndim()) > super::MAX_NDIM {
            // Maybe past the dim limit: edit a copy, so that the op's own errors come
            // first and the limit's leaves this tensor unchanged too.
            let mut l = self.layout.clone();
            op.edit(&mut l)?;
            if l.ndim() > super::MAX_NDIM {
                return Err(super::too_many_dims(op.name(), l.ndim()));
            }
            self.layout = l;
        } else {
            // Every layout edit checks its arguments before it changes anything, so an
            // error leaves the layout as it was.
            op.edit(&mut self.layout)?;
        }
        #[cfg(debug_assertions)]
        super::assert_inside(op.name(), source, &self.layout);
        Ok(())
    }

    /// A copy of this tensor made into the view `op` gives (the [`Tensor`] view methods).
    #[inline]
    pub(crate) fn derive(&self, op: ViewOp<'_>) -> Result<Tensor> {
        let mut out = self.clone();
        out.view_in_place(op)?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::MAX_NDIM;
    use crate::DType;

    /// The dim limit, reached by unsqueeze or by the new axes of an index, is an error
    /// that leaves the tensor as it was, after the op's own argument errors.
    #[test]
    fn dim_limit_leaves_the_tensor_unchanged() {
        let shape = vec![1i64; MAX_NDIM];
        let mut t = Tensor::zeros(&[1], DType::F32).unwrap();
        t.view_in_place(ViewOp::View(&shape)).unwrap();
        assert_eq!(t.ndim(), MAX_NDIM);
        let before = t.clone();
        let e = t.view_in_place(ViewOp::Unsqueeze(0)).unwrap_err();
        assert!(e.to_string().contains("at most 64 dims, got 65"), "{e}");
        let e = t.view_in_place(ViewOp::Unsqueeze(99)).unwrap_err();
        assert!(e.to_string().contains("out of range"), "{e}");
        let ix = [
            TensorIndex::NewAxis,
            TensorIndex::NewAxis,
            TensorIndex::Int(0),
        ];
        let e = t.view_in_place(ViewOp::Index(&ix)).unwrap_err();
        assert!(e.to_string().contains("got 65"), "{e}");
        assert_eq!(t.layout(), before.layout());
        // One new axis and one int keep the count: allowed.
        t.view_in_place(ViewOp::Index(&ix[1..])).unwrap();
        assert_eq!(t.ndim(), MAX_NDIM);
        let long = vec![1i64; MAX_NDIM + 1];
        assert!(t.view_in_place(ViewOp::View(&long)).is_err());
        assert_eq!(t.layout(), before.layout());
    }

    /// An index whose later entry is bad leaves the tensor unchanged, and names the dim
    /// of the partly indexed view, as PyTorch's one-entry-at-a-time indexing does.
    #[test]
    fn failed_index_names_the_dim_of_the_partial_view() {
        let mut t = Tensor::zeros(&[3, 4, 5], DType::F32).unwrap();
        let before = t.clone();
        let ix = [
            TensorIndex::Int(1),
            TensorIndex::NewAxis,
            TensorIndex::Slice {
                start: None,
                stop: None,
                step: 2,
            },
            TensorIndex::Int(7),
        ];
        let e = t.view_in_place(ViewOp::Index(&ix)).unwrap_err();
        assert_eq!(
            e.to_string(),
            before.index(&ix).unwrap_err().to_string(),
            "in place and by method"
        );
        assert!(
            e.to_string()
                .contains("index 7 is out of bounds for dimension 2 with size 5"),
            "{e}"
        );
        assert_eq!(t.layout(), before.layout());
    }
}
