//! Zero-copy view ops on [`Tensor`]: each returns a new view of the same storage (the
//! metadata work is in [`crate::layout::view`]); only `reshape`/`flatten` may copy, and
//! only when no view can express the result.

use super::{Tensor, ViewOp};
use crate::dtype::DType;
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
            return self.checked_derived("reshape", out);
        }
        let new_shape: Vec<i64> = out.shape().iter().map(|&n| n as i64).collect();
        self.contiguous_copy()?.view(&new_shape)
    }

    /// `flatten(start_dim, end_dim)`: merges the dims in between; a view when possible.
    #[inline]
    pub fn flatten(&self, start_dim: i64, end_dim: i64) -> Result<Tensor> {
        let (shape, view) = self.layout.flatten(start_dim, end_dim)?;
        match view {
            Some(l) => self.derived("flatten", l),
            None => self.reshape(&shape.iter().map(|&n| n as i64).collect::<Vec<_>>()),
        }
    }

    /// `unflatten(dim, sizes)`: splits one dim into several (always a view).
    #[inline]
    pub fn unflatten(&self, dim: i64, sizes: &[i64]) -> Result<Tensor> {
        self.derived("unflatten", self.layout.unflatten(dim, sizes)?)
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
        self.derived("movedim", self.layout.movedim(src, dst)?)
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
        self.derived("expand", self.layout.expand(sizes)?)
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
        self.derived("squeeze", self.layout.squeeze(None)?)
    }

    /// Removes the listed dims where they have size 1.
    #[inline]
    pub fn squeeze_dims(&self, dims: &[i64]) -> Result<Tensor> {
        self.derived("squeeze", self.layout.squeeze(Some(dims))?)
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
        Tensor::from_parts(self.storage.clone(), layout, self.dtype)
    }

    /// Sliding windows of `size` every `step` along `dim`, as a new last dim.
    #[inline]
    pub fn unfold(&self, dim: i64, size: usize, step: usize) -> Result<Tensor> {
        self.derived("unfold", self.layout.unfold(dim, size, step)?)
    }

    /// The diagonal of dims `dim1`, `dim2` shifted by `offset`, as a new last dim.
    #[inline]
    pub fn diagonal(&self, offset: i64, dim1: i64, dim2: i64) -> Result<Tensor> {
        self.derived("diagonal", self.layout.diagonal(offset, dim1, dim2)?)
    }

    fn many(&self, op: &'static str, layouts: Vec<Layout>) -> Result<Vec<Tensor>> {
        let mut out = crate::error::try_vec(op, layouts.len())?;
        for l in layouts {
            out.push(self.derived(op, l)?);
        }
        Ok(out)
    }

    /// Pieces of `split_size` along `dim` (the last may be smaller).
    pub fn split(&self, split_size: usize, dim: i64) -> Result<Vec<Tensor>> {
        self.many("split", self.layout.split(split_size, dim)?)
    }

    /// Pieces of the given sizes along `dim`.
    pub fn split_with_sizes(&self, sizes: &[usize], dim: i64) -> Result<Vec<Tensor>> {
        self.many(
            "split_with_sizes",
            self.layout.split_with_sizes(sizes, dim)?,
        )
    }

    /// At most `chunks` pieces of `ceil(n / chunks)` along `dim`.
    pub fn chunk(&self, chunks: usize, dim: i64) -> Result<Vec<Tensor>> {
        self.many("chunk", self.layout.chunk(chunks, dim)?)
    }

    /// Every element of `dim`, each without the dim.
    pub fn unbind(&self, dim: i64) -> Result<Vec<Tensor>> {
        self.many("unbind", self.layout.unbind(dim)?)
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
