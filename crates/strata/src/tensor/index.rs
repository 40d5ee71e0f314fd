//! Multi-dim indexing keys ([`TensorIndex`]) and basic indexing: ints, slices with steps,
//! new axes and an ellipsis, as in `x[1, ::-1, None, ...]`, whose result is always a view.
//! Keys with index tensors or masks (advanced indexing, a copy) are resolved in
//! `ops/index.rs`.

use std::ops::{Range, RangeFrom, RangeFull, RangeInclusive, RangeTo, RangeToInclusive};

use super::Tensor;
use crate::error::{Error, Result};
use crate::layout::view_metadata::slice_check;
use crate::layout::Layout;

/// One entry of an index key: a basic entry (an int, a slice, a new axis, an ellipsis:
/// the result is a view) or an index tensor (advanced indexing: the result is a copy).
#[derive(Debug, Clone)]
pub enum TensorIndex {
    /// Selects one element of a dim and drops the dim (negative counts from the end).
    Int(i64),
    /// `start:stop:step` with Python's rules (`None` for an omitted bound).
    Slice {
        /// First index, or `None`.
        start: Option<i64>,
        /// Stop (exclusive), or `None`.
        stop: Option<i64>,
        /// Step; negative walks backwards; zero is an error.
        step: i64,
    },
    /// Inserts a size-1 dim (`None` / `np.newaxis`).
    NewAxis,
    /// Stands for as many full slices as needed (`...`).
    Ellipsis,
    /// An index tensor (NumPy's and PyTorch's advanced indexing; the result is a copy):
    /// an integer tensor of any integer dtype gives positions along one dim (negative
    /// counts from the end; a 0-d one is an [`Int`](Self::Int)); a `bool` tensor is a mask
    /// over as many dims as it has. Boxed, so that a key of basic entries stays small.
    Tensor(Box<Tensor>),
}

impl PartialEq for TensorIndex {
    /// Basic entries by value; index tensors by identity (the same view of the same
    /// storage, same dtype), not by their values.
    fn eq(&self, other: &Self) -> bool {
        use TensorIndex as I;
        match (self, other) {
            (I::Int(a), I::Int(b)) => a == b,
            (
                I::Slice { start, stop, step },
                I::Slice {
                    start: s2,
                    stop: e2,
                    step: t2,
                },
            ) => (start, stop, step) == (s2, e2, t2),
            (I::NewAxis, I::NewAxis) | (I::Ellipsis, I::Ellipsis) => true,
            (I::Tensor(a), I::Tensor(b)) => {
                a.same_storage(b) && a.layout() == b.layout() && a.dtype() == b.dtype()
            }
            _ => false,
        }
    }
}

impl TensorIndex {
    /// `start:stop:step`.
    pub fn slice(start: Option<i64>, stop: Option<i64>, step: i64) -> TensorIndex {
        TensorIndex::Slice { start, stop, step }
    }

    /// `::step` (the whole dim, every `step`-th element; `-1` reverses).
    pub fn step(step: i64) -> TensorIndex {
        TensorIndex::Slice {
            start: None,
            stop: None,
            step,
        }
    }

    /// `:` (the whole dim).
    pub fn full() -> TensorIndex {
        Self::step(1)
    }

    /// An index tensor entry (see [`TensorIndex::Tensor`]).
    pub fn tensor(t: Tensor) -> TensorIndex {
        TensorIndex::Tensor(Box::new(t))
    }

    /// Whether this entry is an index tensor (advanced indexing).
    #[inline]
    pub fn is_tensor(&self) -> bool {
        matches!(self, TensorIndex::Tensor(_))
    }
}

impl From<Tensor> for TensorIndex {
    fn from(t: Tensor) -> Self {
        TensorIndex::tensor(t)
    }
}

impl From<&Tensor> for TensorIndex {
    fn from(t: &Tensor) -> Self {
        TensorIndex::tensor(t.clone())
    }
}

macro_rules! from_int {
    ($($t:ty),*) => {$(
        impl From<$t> for TensorIndex {
            /// A value past `i64::MAX` (from `usize`) becomes `i64::MAX`: out of range
            /// for every dim, never wrapped to a negative index.
            fn from(v: $t) -> Self {
                TensorIndex::Int(i64::try_from(v).unwrap_or(i64::MAX))
            }
        }
    )*};
}
from_int!(i32, i64, isize, usize, u32);

impl From<Range<i64>> for TensorIndex {
    fn from(r: Range<i64>) -> Self {
        TensorIndex::slice(Some(r.start), Some(r.end), 1)
    }
}
impl From<RangeInclusive<i64>> for TensorIndex {
    fn from(r: RangeInclusive<i64>) -> Self {
        let end = *r.end();
        TensorIndex::slice(
            Some(*r.start()),
            // `..=-1` and `..=i64::MAX` run to the end of the dim.
            if end == -1 { None } else { end.checked_add(1) },
            1,
        )
    }
}
impl From<RangeFrom<i64>> for TensorIndex {
    fn from(r: RangeFrom<i64>) -> Self {
        TensorIndex::slice(Some(r.start), None, 1)
    }
}
impl From<RangeTo<i64>> for TensorIndex {
    fn from(r: RangeTo<i64>) -> Self {
        TensorIndex::slice(None, Some(r.end), 1)
    }
}
impl From<RangeToInclusive<i64>> for TensorIndex {
    fn from(r: RangeToInclusive<i64>) -> Self {
        TensorIndex::slice(None, if r.end == -1 { None } else { Some(r.end + 1) }, 1)
    }
}
impl From<RangeFull> for TensorIndex {
    fn from(_: RangeFull) -> Self {
        TensorIndex::full()
    }
}

/// `None` / `np.newaxis` in [`s!`](crate::s): inserts a size-1 dim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewAxis;

/// `...` in [`s!`](crate::s): as many full slices as needed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ellipsis;

impl From<NewAxis> for TensorIndex {
    fn from(_: NewAxis) -> Self {
        TensorIndex::NewAxis
    }
}

impl From<Ellipsis> for TensorIndex {
    fn from(_: Ellipsis) -> Self {
        TensorIndex::Ellipsis
    }
}

/// Builds a `[TensorIndex; N]` from Python-like syntax: integers, ranges (`1..3`, `2..`,
/// `..`), a step after a semicolon (`..;-1` is `::-1`, `1..;2` is `1::2`), [`NewAxis`],
/// [`Ellipsis`] and index tensors (`Tensor` or `&Tensor`).
///
/// ```
/// use strata::{s, DType, Ellipsis, NewAxis, Tensor};
/// let x = Tensor::arange(0, 12, 1, DType::I64)?.view(&[3, 4])?;
/// let v = x.index(&s![1..3, ..;-1])?;
/// assert_eq!(v.to_vec::<i64>()?, vec![7, 6, 5, 4, 11, 10, 9, 8]);
/// let w = x.index(&s![Ellipsis, NewAxis, 0])?;
/// assert_eq!(w.shape(), &[3, 1]);
/// # Ok::<(), strata::Error>(())
/// ```
#[macro_export]
macro_rules! s {
    (@one $r:expr ; $step:expr) => {{
        match $crate::TensorIndex::from($r) {
            $crate::TensorIndex::Slice { start, stop, .. } => {
                $crate::TensorIndex::slice(start, stop, $step)
            }
            other => other,
        }
    }};
    (@one $e:expr) => {
        $crate::TensorIndex::from($e)
    };
    ($($e:expr $(; $step:expr)?),* $(,)?) => {
        [$($crate::s!(@one $e $(; $step)?)),*]
    };
}

impl Layout {
    /// Applies a basic index (see [`TensorIndex`]) to this layout. An index tensor entry
    /// is an error here: advanced indexing copies, see [`Tensor::index`].
    pub fn index(&self, index: &[TensorIndex]) -> Result<Layout> {
        let mut out = self.clone();
        out.index_in(index)?;
        Ok(out)
    }

    /// [`index`](Self::index) in place.
    #[inline]
    pub(crate) fn index_in(&mut self, index: &[TensorIndex]) -> Result<()> {
        let ndim = self.ndim();
        let ellipses = index
            .iter()
            .filter(|i| matches!(i, TensorIndex::Ellipsis))
            .count();
        if ellipses > 1 {
            return Err(Error::index(
                "index",
                "an index can only have a single ellipsis ('...')",
            ));
        }
        let consumed = index
            .iter()
            .filter(|i| matches!(i, TensorIndex::Int(_) | TensorIndex::Slice { .. }))
            .count();
        if consumed > ndim {
            return Err(Error::index(
                "index",
                format!("too many indices for tensor of dimension {ndim}"),
            ));
        }
        // Every entry is checked before the layout changes, so on error it is unchanged:
        // `src` walks the dims of the layout as it is, `dim` those of the view being built
        // (the dim the error texts name, as PyTorch's one-entry-at-a-time indexing does).
        let (mut src, mut dim) = (0usize, 0usize);
        for entry in index {
            match *entry {
                TensorIndex::Int(i) => {
                    let n = self.shape()[src] as i64;
                    if i < -n || i >= n {
                        return Err(Error::index(
                            "index",
                            format!("index {i} is out of bounds for dimension {dim} with size {n}"),
                        ));
                    }
                    src += 1;
                }
                TensorIndex::Slice { start, stop, step } => {
                    slice_check(self.shape()[src], self.strides()[src], start, stop, step)?;
                    (src, dim) = (src + 1, dim + 1);
                }
                TensorIndex::NewAxis => dim += 1,
                TensorIndex::Ellipsis => {
                    (src, dim) = (src + ndim - consumed, dim + ndim - consumed)
                }
                TensorIndex::Tensor(_) => return Err(tensor_in_basic_index()),
            }
        }
        // The metadata is edited in place entry by entry. `dim` stays below the current
        // ndim for ints and slices (no more of them than dims, checked above) and at most
        // at it for new axes.
        let out = self;
        let mut dim: usize = 0;
        for entry in index {
            match *entry {
                TensorIndex::Int(i) => out.select_at(dim, i),
                TensorIndex::Slice { start, stop, step } => {
                    out.slice_at(dim, start, stop, step)?;
                    dim += 1;
                }
                TensorIndex::NewAxis => {
                    out.unsqueeze_at(dim);
                    dim += 1;
                }
                TensorIndex::Ellipsis => dim += ndim - consumed,
                // Refused by the first pass.
                TensorIndex::Tensor(_) => return Err(tensor_in_basic_index()),
            }
        }
        Ok(())
    }
}

#[cold]
fn tensor_in_basic_index() -> Error {
    Error::index(
        "index",
        "an index tensor is advanced indexing, which copies: use Tensor::index, not a view op",
    )
}

impl Tensor {
    /// `self[index]`, NumPy's and PyTorch's indexing: see [`TensorIndex`] and the
    /// [`s!`](crate::s) macro. A key of basic entries only (ints, slices, new axes, an
    /// ellipsis, 0-d integer tensors) gives a view; one with index tensors or masks a copy
    /// (see `ops/index.rs` for the rules: broadcasting of the index tensors, where their
    /// dims go).
    ///
    /// ```
    /// use strata::{s, DType, Tensor};
    /// let x = Tensor::arange(0, 12, 1, DType::I64)?.view(&[3, 4])?;
    /// let rows = Tensor::from_vec(vec![2i64, 0], &[2])?;
    /// let v = x.index(&s![rows, ..;-1])?;
    /// assert_eq!(v.to_vec::<i64>()?, vec![11, 10, 9, 8, 3, 2, 1, 0]);
    /// # Ok::<(), strata::Error>(())
    /// ```
    #[inline]
    pub fn index(&self, index: &[TensorIndex]) -> Result<Tensor> {
        if index.iter().any(TensorIndex::is_tensor) {
            let out = crate::ops::index::index("index", self, index)?;
            if self.grad.get().is_none() || !crate::autograd::needs_grad(&[self]) {
                return Ok(out);
            }
            // ∂self: zeros with the output gradient added at the indexed elements (every
            // occurrence of a repeated index adding).
            let key = index.to_vec();
            let shape = self.shape().to_vec();
            return crate::autograd::record1(
                "IndexBackward0",
                &[self],
                out,
                &[],
                Box::new(move |_saved, grads, _needs| {
                    let g = &grads[0];
                    let gi = Tensor::zeros_on(&shape, g.dtype(), g.device())?;
                    gi.index_put_accumulate_(&key, g)?;
                    Ok(vec![Some(gi)])
                }),
            );
        }
        self.derive(super::ViewOp::Index(index))
    }

    /// `self[index] = value`, in place (Python's item assignment): a basic key writes
    /// through the view it selects (`copy_`, broadcasting `value`), a key with index
    /// tensors or masks is [`index_put_`](Self::index_put_). Under autograd the write is
    /// recorded on this tensor itself, so gradients reach `value` even when this tensor
    /// did not require grad before.
    ///
    /// # Errors
    /// Those of [`index`](Self::index) and [`copy_`](Self::copy_).
    pub fn index_assign_(&self, index: &[TensorIndex], value: &Tensor) -> Result<&Self> {
        if index.iter().any(TensorIndex::is_tensor) {
            return self.index_put_(index, value);
        }
        let tracked = self.grad.get().is_some() || value.grad.get().is_some();
        if !tracked || self.requires_grad() || !crate::autograd::needs_grad(&[self, value]) {
            // Not recorded, or recorded by copy_ through the view (CopySlices on the base).
            self.index(index)?.copy_(value)?;
            return Ok(self);
        }
        crate::autograd::check_inplace(self)?;
        let view = {
            let _off = crate::autograd::no_grad();
            let v = self.index(index)?;
            v.copy_(value)?;
            v
        };
        let (own, region, vshape) = (
            self.layout().clone(),
            view.layout().clone(),
            view.shape().to_vec(),
        );
        crate::autograd::record_inplace(
            self,
            &[value],
            "CopySlices",
            &[],
            Box::new(move |_saved, grads, needs| {
                let g = &grads[0];
                let gs = if needs[0] {
                    let zeros = Tensor::zeros_on(&vshape, g.dtype(), g.device())?;
                    Some(crate::autograd::views::strided_replace(
                        g, &own, &region, &zeros,
                    )?)
                } else {
                    None
                };
                let gv = if needs[1] {
                    Some(crate::autograd::views::strided_gather(g, &own, &region)?)
                } else {
                    None
                };
                Ok(vec![gs, gv])
            }),
        )?;
        Ok(self)
    }
}
