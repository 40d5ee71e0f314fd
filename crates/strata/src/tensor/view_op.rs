//! [`ViewOp`]: the view ops that edit a layout where it lies, as values, and
//! [`Tensor::view_in_place`], which turns a tensor into one of its views without building
//! a second tensor.
//!
//! A view op is cheap work (swap two dims, move an offset) on a 120-byte value, and what
//! it costs is mostly moving that value: a fresh copy is edited word by word, then moved
//! into a `Result` and on into its final place (a Python object, say), and the move reads
//! back, in wide loads, words the CPU still holds as narrow stores in its store buffer; it
//! cannot forward them and stalls. A caller that can put a copy of the source where the
//! view must live (a binding writing into a freshly allocated object) calls
//! [`Tensor::view_in_place`] there and moves nothing.

use super::{Tensor, TensorIndex};
use crate::error::Result;
use crate::layout::Layout;

/// A view op with its arguments, as [`Tensor::view_in_place`] takes it. Each has the
/// semantics and the error texts of the [`Tensor`] method of the same name.
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
    #[inline]
    pub fn view_in_place(&mut self, op: ViewOp<'_>) -> Result<()> {
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
