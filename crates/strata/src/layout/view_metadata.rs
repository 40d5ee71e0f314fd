//! View ops on [`Layout`]: what each does to shape, strides and offset; each returns new
//! metadata over the same storage, or an error with PyTorch's text. None of them reads or
//! writes data.
//!
//! Why separate from `tensor/views.rs`: this is the pure metadata arithmetic (no storage,
//! no dtype, keeps L1–L3), testable and reusable without a tensor; `tensor/views.rs` wraps
//! it into the [`Tensor`](crate::Tensor) view methods.

use super::{
    contiguous_strides, numel_of, wrap_dim, wrap_insert_dim, DimVec, Layout, Shape, Strides,
};
use crate::error::{list, Error, Result};

/// PyTorch's `infer_size`: resolves one `-1` in `shape` against `numel`.
pub fn infer_size(op: &'static str, shape: &[i64], numel: usize) -> Result<Shape> {
    let mut out = Shape::with_capacity(shape.len());
    infer_size_into(op, shape, numel, &mut out)?;
    Ok(out)
}

/// [`infer_size`] written into `out` (which must be empty), so a view op can build its
/// new shape where it will stay.
#[inline]
fn infer_size_into(op: &'static str, shape: &[i64], numel: usize, out: &mut Shape) -> Result<()> {
    let mut newsize: usize = 1;
    let mut infer: Option<usize> = None;
    // A 0 among the sizes makes the product 0 whatever the others (PyTorch's rule).
    let has_zero = shape.contains(&0);
    for (d, &s) in shape.iter().enumerate() {
        if s == -1 {
            if infer.is_some() {
                return Err(Error::shape(op, "only one dimension can be inferred"));
            }
            infer = Some(d);
            out.push(1);
        } else if s >= 0 && has_zero {
            out.push(s as usize);
        } else if s >= 0 {
            newsize = newsize
                .checked_mul(s as usize)
                .filter(|&n| n <= isize::MAX as usize)
                .ok_or_else(|| {
                    Error::overflow(
                        op,
                        format!("the number of elements of shape {}", list(shape)),
                    )
                })?;
            out.push(s as usize);
        } else {
            return Err(Error::shape(op, format!("invalid shape dimension {s}")));
        }
    }
    if has_zero {
        newsize = 0;
    }
    let ok = numel == newsize || (infer.is_some() && newsize > 0 && numel.is_multiple_of(newsize));
    if !(ok || (infer.is_some() && newsize == 0 && numel == 0)) {
        return Err(Error::InvalidShape {
            op,
            shape: shape.to_vec(),
            numel,
        });
    }
    if let Some(d) = infer {
        if newsize == 0 {
            return Err(Error::shape(
                op,
                format!(
                    "cannot reshape tensor of 0 elements into shape {} because the unspecified dimension size -1 can be any value and is ambiguous",
                    list(shape)
                ),
            ));
        }
        out[d] = numel / newsize;
    }
    Ok(())
}

/// PyTorch's `computeStride`: strides that let `new_shape` view the same elements as
/// `(old_shape, old_strides)` in row-major order, or `None` when a new dim would span two
/// memory chunks. Works for negative strides too (a flipped run is still one chunk).
pub fn compute_stride(
    old_shape: &[usize],
    old_strides: &[isize],
    new_shape: &[usize],
) -> Option<Strides> {
    let mut out = Strides::new();
    compute_stride_into(old_shape, old_strides, new_shape, &mut out).then_some(out)
}

/// [`compute_stride`] written into `new_strides` (any content; it is replaced), so a view
/// op can build its new strides where they will stay. `false` where `compute_stride`
/// gives `None`.
#[inline]
fn compute_stride_into(
    old_shape: &[usize],
    old_strides: &[isize],
    new_shape: &[usize],
    new_strides: &mut Strides,
) -> bool {
    if old_shape.is_empty() {
        new_strides.set_elem(1, new_shape.len());
        return true;
    }
    let numel = numel_of(old_shape);
    if numel == 0 {
        *new_strides = if old_shape == new_shape {
            old_strides.into()
        } else {
            let clamped: Shape = new_shape.iter().map(|&s| s.max(1)).collect();
            contiguous_strides(&clamped)
        };
        return true;
    }
    new_strides.set_elem(0, new_shape.len());
    let Some(&last) = old_strides.last() else {
        return false;
    };
    let mut view_d = new_shape.len() as isize - 1;
    let mut chunk_base = last;
    let mut tensor_numel: usize = 1;
    let mut view_numel: usize = 1;
    for tensor_d in (0..old_shape.len()).rev() {
        tensor_numel *= old_shape[tensor_d];
        let chunk_ends = tensor_d == 0
            || (old_shape[tensor_d - 1] != 1
                && old_strides[tensor_d - 1] as i128 != tensor_numel as i128 * chunk_base as i128);
        if chunk_ends {
            while view_d >= 0 && (view_numel < tensor_numel || new_shape[view_d as usize] == 1) {
                let Some(st) = (view_numel as isize).checked_mul(chunk_base) else {
                    return false;
                };
                new_strides[view_d as usize] = st;
                view_numel *= new_shape[view_d as usize];
                view_d -= 1;
            }
            if view_numel != tensor_numel {
                return false;
            }
            if tensor_d > 0 {
                chunk_base = old_strides[tensor_d - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    view_d == -1
}

/// Python's slice normalisation (`PySlice_AdjustIndices`): the first index and the number
/// of elements selected by `start:stop:step` on a dim of `len` elements.
pub fn adjust_slice(start: Option<i64>, stop: Option<i64>, step: i64, len: usize) -> (i64, usize) {
    let len = len as i64;
    let clamp = |v: Option<i64>, default: i64| -> i64 {
        match v {
            None => default,
            Some(mut v) => {
                if v < 0 {
                    v += len;
                    if v < 0 {
                        v = if step < 0 { -1 } else { 0 };
                    }
                } else if v >= len {
                    v = if step < 0 { len - 1 } else { len };
                }
                v
            }
        }
    };
    let start = clamp(start, if step < 0 { len - 1 } else { 0 });
    let stop = clamp(stop, if step < 0 { -1 } else { len });
    let count = if step < 0 {
        if stop < start {
            // `unsigned_abs`: `-step` overflows for `i64::MIN`.
            ((start - stop - 1) as u64 / step.unsigned_abs() + 1) as i64
        } else {
            0
        }
    } else if start < stop {
        (stop - start - 1) / step + 1
    } else {
        0
    };
    (start, count as usize)
}

/// [`slice_plan`]'s checks alone, at the cost of a multiply in the common case (the
/// count is only needed to tell whether an overflowing stride matters).
#[inline]
pub(crate) fn slice_check(
    len: usize,
    stride: isize,
    start: Option<i64>,
    end: Option<i64>,
    step: i64,
) -> Result<()> {
    if step == 0 || stride.checked_mul(step as isize).is_none() {
        slice_plan(len, stride, start, end, step)?;
    }
    Ok(())
}

/// `start:end:step` over a dim of `len` elements at `stride`: the first index, the count
/// and the new stride, or the error `slice` gives (a zero step, a stride that overflows).
pub(crate) fn slice_plan(
    len: usize,
    stride: isize,
    start: Option<i64>,
    end: Option<i64>,
    step: i64,
) -> Result<(i64, usize, isize)> {
    if step == 0 {
        return Err(Error::value("slice", "slice step cannot be zero"));
    }
    let (first, count) = adjust_slice(start, end, step, len);
    // |step| <= isize::MAX; a stride times a step beyond the extent only matters when the
    // dim keeps more than one element.
    let new_stride = if count > 1 {
        stride
            .checked_mul(step as isize)
            .ok_or_else(|| Error::overflow("slice", format!("stride {stride} times step {step}")))?
    } else {
        // The stride of a dim of at most one element is never used to step; keep a
        // representable value.
        stride.checked_mul(step as isize).unwrap_or(stride)
    };
    Ok((first, count, new_stride))
}

impl Layout {
    /// `offset + delta`. For a view with elements the result is non-negative (L3); an
    /// empty view touches nothing, so a move before the storage start is dropped instead
    /// of wrapping.
    fn shifted(&self, delta: isize) -> usize {
        match (self.offset as isize).checked_add(delta) {
            Some(o) if o >= 0 => o as usize,
            _ => self.offset,
        }
    }

    /// `offset + i·stride`, as [`shifted`](Self::shifted): for a view with elements the
    /// product is within the extent (L2); an empty view may have any strides, so a
    /// product that overflows leaves the offset where it is.
    fn shifted_by(&self, i: usize, stride: isize) -> usize {
        match isize::try_from(i).ok().and_then(|i| i.checked_mul(stride)) {
            Some(delta) => self.shifted(delta),
            None => self.offset,
        }
    }

    fn with(&self, shape: Shape, strides: Strides, offset: usize) -> Layout {
        Layout::from_parts_unchecked(shape, strides, offset)
    }

    /// `view(shape)` with at most one `-1`.
    ///
    /// # Errors
    /// PyTorch's texts for a bad shape, and [`Error::ViewIncompatible`] when the strides
    /// cannot express the new shape (use `reshape`).
    pub fn view(&self, shape: &[i64]) -> Result<Layout> {
        self.edited(|l| l.view_in(shape))
    }

    /// [`view`](Self::view) in place.
    #[inline]
    pub(crate) fn view_in(&mut self, shape: &[i64]) -> Result<()> {
        self.view_as_in("view", shape)
    }

    /// [`view_in`](Self::view_in) under `op`'s name in error texts (`reshape` where it
    /// is a view).
    #[inline]
    pub(crate) fn view_as_in(&mut self, op: &'static str, shape: &[i64]) -> Result<()> {
        let src = self.clone();
        match self.reshaped_from(&src, op, shape) {
            Ok(true) => Ok(()),
            Ok(false) => {
                let e = Error::ViewIncompatible {
                    shape: src.shape.to_vec(),
                    strides: src.strides.to_vec(),
                    target: shape.to_vec(),
                };
                *self = src;
                Err(e)
            }
            Err(e) => {
                *self = src;
                Err(e)
            }
        }
    }

    /// This layout (a copy of `src`) given `shape` (with PyTorch's `-1` inference) and the
    /// strides that view `src`'s elements in the same order: `true` when they exist;
    /// `false` when `shape` needs a copy, and then only the new shape is meaningful. A
    /// view of elements keeps L2 and L3: its element indices are those of `src`.
    #[inline]
    fn reshaped_from(&mut self, src: &Layout, op: &'static str, shape: &[i64]) -> Result<bool> {
        let numel = src.numel();
        self.shape.truncate(0);
        infer_size_into(op, shape, numel, &mut self.shape)?;
        if !compute_stride_into(&src.shape, &src.strides, &self.shape, &mut self.strides) {
            return Ok(false);
        }
        if numel == 0 {
            // No elements to vouch for the new sizes and strides: check them.
            *self = Layout::new_op(op, &self.shape, &self.strides, self.offset)?;
        }
        Ok(true)
    }

    /// Swaps two dims.
    pub fn transpose(&self, d0: i64, d1: i64) -> Result<Layout> {
        self.edited(|l| l.transpose_in(d0, d1))
    }

    /// A copy of this layout changed by `edit` (one of the `*_in` forms of the view ops).
    #[inline]
    fn edited(&self, edit: impl FnOnce(&mut Layout) -> Result<()>) -> Result<Layout> {
        let mut out = self.clone();
        edit(&mut out)?;
        Ok(out)
    }

    /// [`transpose`](Self::transpose) in place. Each view op with an `_in` form edits a
    /// copy that is already where the result goes: building a layout and then moving it
    /// into a tensor costs more than the op (the move reads back, in wide loads, words
    /// just written one by one, which the CPU cannot forward from its store buffer).
    #[inline]
    pub(crate) fn transpose_in(&mut self, d0: i64, d1: i64) -> Result<()> {
        let a = wrap_dim("transpose", d0, self.ndim())?;
        let b = wrap_dim("transpose", d1, self.ndim())?;
        if self.ndim() > 0 {
            self.shape.swap(a, b);
            self.strides.swap(a, b);
        }
        Ok(())
    }

    /// `t()`: transpose of a tensor with at most 2 dims.
    pub fn t(&self) -> Result<Layout> {
        self.edited(Layout::t_in)
    }

    /// [`t`](Self::t) in place.
    #[inline]
    pub(crate) fn t_in(&mut self) -> Result<()> {
        if self.ndim() > 2 {
            return Err(Error::shape(
                "t",
                format!(
                    "t() expects a tensor with <= 2 dimensions, but self is {}D",
                    self.ndim()
                ),
            ));
        }
        if self.ndim() < 2 {
            return Ok(());
        }
        self.transpose_in(0, 1)
    }

    /// `mT`: swaps the last two dims.
    pub fn mt(&self) -> Result<Layout> {
        self.edited(Layout::mt_in)
    }

    /// [`mt`](Self::mt) in place.
    #[inline]
    pub(crate) fn mt_in(&mut self) -> Result<()> {
        if self.ndim() < 2 {
            return Err(Error::shape(
                "mT",
                format!(
                    "tensor.mT is only supported on matrices or batches of matrices. Got {}-D tensor.",
                    self.ndim()
                ),
            ));
        }
        self.transpose_in(-2, -1)
    }

    /// Reorders the dims: result dim `i` is input dim `dims[i]`.
    pub fn permute(&self, dims: &[i64]) -> Result<Layout> {
        self.edited(|l| l.permute_in(dims))
    }

    /// [`permute`](Self::permute) in place.
    #[inline]
    pub(crate) fn permute_in(&mut self, dims: &[i64]) -> Result<()> {
        if dims.len() != self.ndim() {
            return Err(Error::shape(
                "permute",
                format!(
                    "number of dimensions in the tensor input does not match the length of the desired ordering of dimensions i.e. input.dim() = {} is not equal to len(dims) = {}",
                    self.ndim(),
                    dims.len()
                ),
            ));
        }
        let src = self.clone();
        let mut seen = DimVec::from_elem(false, src.ndim());
        for (k, &d) in dims.iter().enumerate() {
            let d = match wrap_dim("permute", d, src.ndim()) {
                Ok(d) if !std::mem::replace(&mut seen[d], true) => d,
                Ok(_) => {
                    *self = src;
                    return Err(Error::shape(
                        "permute",
                        "permute(): duplicate dims are not allowed.",
                    ));
                }
                Err(e) => {
                    *self = src;
                    return Err(e);
                }
            };
            self.shape[k] = src.shape[d];
            self.strides[k] = src.strides[d];
        }
        Ok(())
    }

    /// Moves dims `src` to positions `dst`, keeping the others in order.
    pub fn movedim(&self, src: &[i64], dst: &[i64]) -> Result<Layout> {
        let n = self.ndim();
        if src.len() != dst.len() {
            return Err(Error::shape(
                "movedim",
                format!(
                    "movedim: Invalid source or destination dims: source ({}) and destination ({}) must have the same number of elements",
                    list(src),
                    list(dst)
                ),
            ));
        }
        let wrap_all = |v: &[i64], what: &str| -> Result<DimVec<usize>> {
            let mut out = DimVec::<usize>::new();
            for &d in v {
                let d = wrap_dim("movedim", d, n)?;
                if out.contains(&d) {
                    return Err(Error::shape(
                        "movedim",
                        format!("movedim: repeated dim in `{what}` ({})", list(v)),
                    ));
                }
                out.push(d);
            }
            Ok(out)
        };
        let s = wrap_all(src, "source")?;
        let d = wrap_all(dst, "destination")?;
        if n == 0 {
            return Ok(self.clone());
        }
        let mut order: DimVec<Option<usize>> = DimVec::from_elem(None, n);
        for (&si, &di) in s.iter().zip(&d) {
            order[di] = Some(si);
        }
        let mut rest = (0..n).filter(|k| !s.contains(k));
        let perm: DimVec<i64> = order
            .iter()
            .map(|o| o.or_else(|| rest.next()).unwrap_or(0) as i64)
            .collect();
        self.permute(&perm)
    }

    /// `narrow(dim, start, length)`.
    pub fn narrow(&self, dim: i64, start: i64, length: i64) -> Result<Layout> {
        self.edited(|l| l.narrow_in(dim, start, length))
    }

    /// [`narrow`](Self::narrow) in place.
    #[inline]
    pub(crate) fn narrow_in(&mut self, dim: i64, start: i64, length: i64) -> Result<()> {
        if self.ndim() == 0 {
            return Err(Error::shape(
                "narrow",
                "narrow() cannot be applied to a 0-dim tensor.",
            ));
        }
        let d = wrap_dim("narrow", dim, self.ndim())?;
        let size = self.shape[d] as i64;
        if length < 0 {
            return Err(Error::value(
                "narrow",
                "narrow(): length must be non-negative.",
            ));
        }
        if start < -size || start > size {
            return Err(Error::index(
                "narrow",
                format!(
                    "start out of range (expected to be in range of [{}, {}], but got {start})",
                    -size, size
                ),
            ));
        }
        let start = if start < 0 { start + size } else { start };
        // `start` is in [0, size]: `size - start` cannot overflow, `start + length` can.
        if length > size - start {
            return Err(Error::index(
                "narrow",
                format!("start ({start}) + length ({length}) exceeds dimension size ({size})."),
            ));
        }
        self.slice_at(d, Some(start), Some(start + length), 1)
    }

    /// `select(dim, index)`: drops `dim`, keeping element `index` of it.
    pub fn select(&self, dim: i64, index: i64) -> Result<Layout> {
        self.edited(|l| l.select_in(dim, index))
    }

    /// [`select`](Self::select) in place.
    #[inline]
    pub(crate) fn select_in(&mut self, dim: i64, index: i64) -> Result<()> {
        if self.ndim() == 0 {
            return Err(Error::index(
                "select",
                "select() cannot be applied to a 0-dim tensor.",
            ));
        }
        let d = wrap_dim("select", dim, self.ndim())?;
        let size = self.shape[d] as i64;
        if index < -size || index >= size {
            return Err(Error::IndexOutOfRange {
                op: "select",
                index,
                dim: d,
                shape: self.shape.to_vec(),
            });
        }
        self.select_at(d, index);
        Ok(())
    }

    /// [`select`](Self::select) in place on a checked dim `d` and an `index` within
    /// `[-size, size)`.
    pub(crate) fn select_at(&mut self, d: usize, index: i64) {
        let size = self.shape[d] as i64;
        let i = if index < 0 { index + size } else { index };
        self.offset = self.shifted_by(i as usize, self.strides[d]);
        self.shape.remove(d);
        self.strides.remove(d);
    }

    /// `slice(dim, start, end, step)` with Python's rules: negative indices count from the
    /// end, out-of-range bounds clamp, and a negative `step` walks backwards (zero-copy, as
    /// in NumPy; PyTorch refuses it).
    pub fn slice(
        &self,
        dim: i64,
        start: Option<i64>,
        end: Option<i64>,
        step: i64,
    ) -> Result<Layout> {
        self.edited(|l| l.slice_in(dim, start, end, step))
    }

    /// [`slice`](Self::slice) in place.
    #[inline]
    pub(crate) fn slice_in(
        &mut self,
        dim: i64,
        start: Option<i64>,
        end: Option<i64>,
        step: i64,
    ) -> Result<()> {
        if self.ndim() == 0 {
            return Err(Error::index(
                "slice",
                "slice() cannot be applied to a 0-dim tensor.",
            ));
        }
        let d = wrap_dim("slice", dim, self.ndim())?;
        self.slice_at(d, start, end, step)
    }

    /// [`slice`](Self::slice) in place on a checked dim `d`; on error `self` is unchanged.
    pub(crate) fn slice_at(
        &mut self,
        d: usize,
        start: Option<i64>,
        end: Option<i64>,
        step: i64,
    ) -> Result<()> {
        let len = self.shape[d];
        if step == 1 && start.is_none_or(|a| a == 0) && end.is_none_or(|b| b >= len as i64) {
            return Ok(()); // the whole dim (`:`)
        }
        let stride = self.strides[d];
        let (first, count, new_stride) = slice_plan(len, stride, start, end, step)?;
        self.offset = if count > 0 {
            self.shifted_by(first as usize, stride)
        } else {
            self.shifted_by(first.clamp(0, len as i64) as usize, stride)
        };
        self.shape[d] = count;
        self.strides[d] = new_stride;
        Ok(())
    }

    /// Reverses the listed dims through negative strides (zero-copy).
    pub fn flip(&self, dims: &[i64]) -> Result<Layout> {
        self.edited(|l| l.flip_in(dims))
    }

    /// [`flip`](Self::flip) in place.
    #[inline]
    pub(crate) fn flip_in(&mut self, dims: &[i64]) -> Result<()> {
        // Every dim is checked before any is flipped: on error `self` is unchanged.
        let mut seen = DimVec::from_elem(false, self.ndim().max(1));
        for &d in dims {
            let k = wrap_dim("flip", d, self.ndim())?;
            if std::mem::replace(&mut seen[k], true) {
                return Err(Error::shape(
                    "flip",
                    format!("dim {k} appears multiple times in the list of dims"),
                ));
            }
        }
        if self.ndim() == 0 {
            return Ok(());
        }
        for &d in dims {
            let k = wrap_dim("flip", d, self.ndim())?;
            let (n, s) = (self.shape[k], self.strides[k]);
            if n > 0 {
                self.offset = self.shifted_by(n - 1, s);
            }
            // `-isize::MIN` does not exist; such a stride is only possible in an empty
            // layout or a dim of one element, where it is never used to step.
            self.strides[k] = s.checked_neg().unwrap_or(isize::MAX);
        }
        Ok(())
    }

    /// `expand(sizes)`: size-1 dims and new leading dims broadcast with stride 0; `-1`
    /// keeps a size.
    pub fn expand(&self, sizes: &[i64]) -> Result<Layout> {
        let n = sizes.len();
        let nd = self.ndim();
        if n < nd {
            return Err(Error::shape(
                "expand",
                format!(
                    "expand(tensor{{{}}}, size={}): the number of sizes provided ({n}) must be greater or equal to the number of dimensions in the tensor ({nd})",
                    list(&self.shape),
                    list(sizes)
                ),
            ));
        }
        let mut shape = Shape::from_elem(0, n);
        let mut strides = Strides::from_elem(0, n);
        for i in (0..n).rev() {
            let off = n - 1 - i;
            let existing = nd.checked_sub(off + 1);
            let (mut size, mut stride) = match existing {
                Some(d) => (self.shape[d], self.strides[d]),
                None => (
                    1,
                    if i + 1 < n {
                        (shape[i + 1] as isize).saturating_mul(strides[i + 1])
                    } else {
                        1
                    },
                ),
            };
            let mut target = sizes[i];
            if target == -1 {
                if existing.is_none() {
                    return Err(Error::shape(
                        "expand",
                        format!("The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension {i}"),
                    ));
                }
                target = size as i64;
            }
            if target < 0 {
                return Err(Error::shape(
                    "expand",
                    format!("The expanded size of the tensor ({target}) isn't allowed: sizes must be non-negative or -1. Target sizes: {}", list(sizes)),
                ));
            }
            if size as i64 != target {
                if size != 1 {
                    return Err(Error::shape(
                        "expand",
                        format!(
                            "The expanded size of the tensor ({target}) must match the existing size ({size}) at non-singleton dimension {i}.  Target sizes: {}.  Tensor sizes: {}",
                            list(sizes),
                            list(&self.shape)
                        ),
                    ));
                }
                size = target as usize;
                stride = 0;
            }
            shape[i] = size;
            strides[i] = stride;
        }
        Layout::new_op("expand", &shape, &strides, self.offset)
    }

    /// Removes every size-1 dim (`dims = None`) or the listed ones that have size 1.
    pub fn squeeze(&self, dims: Option<&[i64]>) -> Result<Layout> {
        let mut drop: DimVec<bool> = DimVec::from_elem(false, self.ndim());
        match dims {
            None => {
                for (k, &n) in self.shape.iter().enumerate() {
                    drop[k] = n == 1;
                }
            }
            Some(ds) => {
                let mut seen: DimVec<usize> = DimVec::new();
                for &d in ds {
                    let k = wrap_dim("squeeze", d, self.ndim())?;
                    if seen.contains(&k) {
                        return Err(Error::shape(
                            "squeeze",
                            format!("dim {k} appears multiple times in the list of dims"),
                        ));
                    }
                    seen.push(k);
                    if self.ndim() > 0 && self.shape[k] == 1 {
                        drop[k] = true;
                    }
                }
            }
        }
        let (shape, strides) = self
            .dims()
            .zip(&drop)
            .filter(|(_, &x)| !x)
            .map(|(p, _)| p)
            .unzip();
        Ok(self.with(shape, strides, self.offset))
    }

    /// Inserts a size-1 dim at `dim` (range `[-ndim-1, ndim]`).
    pub fn unsqueeze(&self, dim: i64) -> Result<Layout> {
        self.edited(|l| l.unsqueeze_in(dim))
    }

    /// [`unsqueeze`](Self::unsqueeze) in place.
    #[inline]
    pub(crate) fn unsqueeze_in(&mut self, dim: i64) -> Result<()> {
        let d = wrap_insert_dim("unsqueeze", dim, self.ndim())?;
        self.unsqueeze_at(d);
        Ok(())
    }

    /// [`unsqueeze`](Self::unsqueeze) in place at a checked position `d <= ndim`.
    pub(crate) fn unsqueeze_at(&mut self, d: usize) {
        let stride = if d >= self.ndim() {
            1
        } else {
            (self.shape[d] as isize).saturating_mul(self.strides[d])
        };
        self.shape.insert(d, 1);
        self.strides.insert(d, stride);
    }

    /// `unfold(dim, size, step)`: windows of `size` along `dim` every `step`, as a new last
    /// dim.
    pub fn unfold(&self, dim: i64, size: usize, step: usize) -> Result<Layout> {
        let d = wrap_dim("unfold", dim, self.ndim())?;
        let (n, s) = if self.ndim() == 0 {
            (1, 1)
        } else {
            (self.shape[d], self.strides[d])
        };
        if size > n {
            return Err(Error::shape(
                "unfold",
                format!("maximum size for tensor at dimension {d} is {n} but size is {size}"),
            ));
        }
        if step == 0 {
            return Err(Error::value("unfold", "step is 0 but must be > 0"));
        }
        let mut shape = self.shape.clone();
        let mut strides = self.strides.clone();
        if self.ndim() > 0 {
            shape[d] = (n - size) / step + 1;
            strides[d] = s.saturating_mul(step as isize);
        }
        shape.push(size);
        strides.push(s);
        Layout::new_op("unfold", &shape, &strides, self.offset)
    }

    /// `diagonal(offset, dim1, dim2)`: the diagonal as a new last dim.
    pub fn diagonal(&self, offset: i64, dim1: i64, dim2: i64) -> Result<Layout> {
        let a = wrap_dim("diagonal", dim1, self.ndim())?;
        let b = wrap_dim("diagonal", dim2, self.ndim())?;
        if self.ndim() < 2 {
            return Err(Error::shape(
                "diagonal",
                format!(
                    "diagonal requires a tensor with at least 2 dims, got {}",
                    self.ndim()
                ),
            ));
        }
        if a == b {
            return Err(Error::shape(
                "diagonal",
                format!("diagonal dimensions cannot be identical {dim1}, {dim2}"),
            ));
        }
        let (na, nb) = (self.shape[a] as i64, self.shape[b] as i64);
        let len = if offset >= 0 {
            na.min(nb.saturating_sub(offset)).max(0)
        } else {
            na.saturating_add(offset).min(nb).max(0)
        } as usize;
        let mut new_offset = self.offset;
        if len > 0 {
            // `len > 0` bounds |offset| by a size, so it fits `usize`.
            new_offset = if offset >= 0 {
                self.shifted_by(offset as usize, self.strides[b])
            } else {
                self.shifted_by(offset.unsigned_abs() as usize, self.strides[a])
            };
        }
        let mut shape = Shape::new();
        let mut strides = Strides::new();
        for (k, (n, s)) in self.dims().enumerate() {
            if k != a && k != b {
                shape.push(n);
                strides.push(s);
            }
        }
        shape.push(len);
        strides.push(self.strides[a].saturating_add(self.strides[b]));
        Layout::new_op("diagonal", &shape, &strides, new_offset)
    }

    /// The pieces of `split(split_size, dim)`.
    pub fn split(&self, split_size: usize, dim: i64) -> Result<Vec<Layout>> {
        let d = self.split_dim("split", dim)?;
        let n = self.shape[d];
        if split_size == 0 && n != 0 {
            return Err(Error::value(
                "split",
                format!("split_size can only be 0 if dimension size is 0, but got dimension size of {n}"),
            ));
        }
        let sizes: Vec<usize> = if n == 0 {
            vec![0]
        } else {
            // The piece count comes from the user: allocate it fallibly.
            let count = n.div_ceil(split_size);
            let mut sizes = crate::error::try_vec("split", count)?;
            sizes.extend((0..count).map(|i| split_size.min(n - i * split_size)));
            sizes
        };
        self.split_with_sizes(&sizes, dim)
    }

    /// The pieces of `split_with_sizes(sizes, dim)`; the sizes must add up to the dim.
    pub fn split_with_sizes(&self, sizes: &[usize], dim: i64) -> Result<Vec<Layout>> {
        let d = self.split_dim("split_with_sizes", dim)?;
        let n = self.shape[d];
        if sizes.iter().try_fold(0usize, |a, &s| a.checked_add(s)) != Some(n) {
            return Err(Error::shape(
                "split_with_sizes",
                format!(
                    "split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at dimension {d}), but got split_sizes={}",
                    list(sizes)
                ),
            ));
        }
        let mut start = 0i64;
        let mut pieces = crate::error::try_vec("split_with_sizes", sizes.len())?;
        for &s in sizes {
            pieces.push(self.slice(d as i64, Some(start), Some(start + s as i64), 1)?);
            start += s as i64;
        }
        Ok(pieces)
    }

    /// The pieces of `chunk(chunks, dim)`: `ceil(n / chunks)` elements each, so there may
    /// be fewer than `chunks` pieces, as in PyTorch.
    pub fn chunk(&self, chunks: usize, dim: i64) -> Result<Vec<Layout>> {
        if chunks == 0 {
            return Err(Error::value(
                "chunk",
                "chunk expects `chunks` to be greater than 0, got: 0",
            ));
        }
        let d = self.split_dim("chunk", dim)?;
        let n = self.shape[d];
        if n == 0 {
            let mut zeros = crate::error::try_vec("chunk", chunks)?;
            zeros.resize(chunks, 0);
            return self.split_with_sizes(&zeros, dim);
        }
        self.split(n.div_ceil(chunks), dim)
    }

    /// The views of `unbind(dim)`: one per index, each without `dim`.
    pub fn unbind(&self, dim: i64) -> Result<Vec<Layout>> {
        let d = self.split_dim("unbind", dim)?;
        let mut pieces = crate::error::try_vec("unbind", self.shape[d])?;
        for i in 0..self.shape[d] {
            pieces.push(self.select(d as i64, i as i64)?);
        }
        Ok(pieces)
    }

    fn split_dim(&self, op: &'static str, dim: i64) -> Result<usize> {
        if self.ndim() == 0 {
            return Err(Error::shape(
                op,
                format!("{op}() expects at least a 1-dimensional tensor"),
            ));
        }
        wrap_dim(op, dim, self.ndim())
    }

    /// `flatten(start_dim, end_dim)` when it can be a view; `None` when it needs a copy.
    pub fn flatten(&self, start_dim: i64, end_dim: i64) -> Result<(Shape, Option<Layout>)> {
        let s = wrap_dim("flatten", start_dim, self.ndim())?;
        let e = wrap_dim("flatten", end_dim, self.ndim())?;
        if s > e {
            return Err(Error::value(
                "flatten",
                "flatten() has invalid args: start_dim cannot come after end_dim",
            ));
        }
        if self.ndim() == 0 {
            let shape: Shape = [1usize].into_iter().collect();
            return Ok((
                shape.clone(),
                Some(self.with(shape, [1isize].into_iter().collect(), self.offset)),
            ));
        }
        let group = &self.shape[s..=e];
        let merged = super::checked_numel("flatten", group)?;
        let mut shape = Shape::new();
        shape.extend_from_slice(&self.shape[..s]);
        shape.push(merged);
        shape.extend_from_slice(&self.shape[e + 1..]);
        let view = compute_stride(&self.shape, &self.strides, &shape)
            .map(|st| self.with(shape.clone(), st, self.offset));
        Ok((shape, view))
    }

    /// `unflatten(dim, sizes)`: splits `dim` into `sizes` (one may be `-1`). Always a view.
    pub fn unflatten(&self, dim: i64, sizes: &[i64]) -> Result<Layout> {
        let d = wrap_dim("unflatten", dim, self.ndim())?;
        if sizes.is_empty() {
            return Err(Error::shape(
                "unflatten",
                "unflatten: sizes must be non-empty",
            ));
        }
        if self.ndim() == 0 {
            return Err(Error::shape(
                "unflatten",
                "unflatten: cannot unflatten a 0-dim tensor",
            ));
        }
        let inner = infer_size("unflatten", sizes, self.shape[d]).map_err(|e| match e {
            Error::InvalidShape { .. } => Error::shape(
                "unflatten",
                format!(
                    "unflatten: Provided sizes {} don't multiply up to the size of dim {dim} ({}) in the input tensor",
                    list(sizes),
                    self.shape[d]
                ),
            ),
            other => other,
        })?;
        let mut shape = Shape::new();
        shape.extend_from_slice(&self.shape[..d]);
        shape.extend_from_slice(&inner);
        shape.extend_from_slice(&self.shape[d + 1..]);
        let strides = compute_stride(&self.shape, &self.strides, &shape).ok_or_else(|| {
            Error::shape(
                "unflatten",
                "unflatten: the strides cannot express the new shape",
            )
        })?;
        Layout::new_op("unflatten", &shape, &strides, self.offset)
    }

    /// Reinterprets elements of `from_size` bytes as elements of `to_size` bytes, by
    /// PyTorch's rule: the same size is free; otherwise the last dim must have stride 1 and
    /// is scaled, and every other stride and the offset are rescaled.
    pub fn view_dtype(
        &self,
        from_size: usize,
        to_size: usize,
        names: (&str, &str),
    ) -> Result<Layout> {
        if from_size == to_size {
            return Ok(self.clone());
        }
        let (from, to) = names;
        let what = format!("to view {from} as {to} (different element sizes)");
        let err = |msg: String| Error::dtype("view", msg);
        if self.ndim() == 0 {
            return Err(err(format!("self.dim() cannot be 0 {what}")));
        }
        let last = self.ndim() - 1;
        if self.strides[last] != 1 {
            return Err(err(format!(
                "self.stride(-1) must be 1 {what}, but got {}",
                self.strides[last]
            )));
        }
        let mut out = self.clone();
        if to_size > from_size {
            let r = to_size / from_size;
            if !self.shape[last].is_multiple_of(r) {
                return Err(err(format!(
                    "self.size(-1) must be divisible by {r} {what}, but got {}",
                    self.shape[last]
                )));
            }
            if !self.offset.is_multiple_of(r) {
                return Err(err(format!(
                    "self.storage_offset() must be divisible by {r} {what}, but got {}",
                    self.offset
                )));
            }
            for k in 0..last {
                if self.strides[k] % r as isize != 0 {
                    return Err(err(format!(
                        "self.stride({k}) must be divisible by {r} {what}, but got {}",
                        self.strides[k]
                    )));
                }
                out.strides[k] /= r as isize;
            }
            out.shape[last] /= r;
            out.offset /= r;
        } else {
            let r = from_size / to_size;
            for k in 0..last {
                out.strides[k] = self.strides[k]
                    .checked_mul(r as isize)
                    .ok_or_else(|| Error::overflow("view", "stride"))?;
            }
            out.shape[last] = self.shape[last]
                .checked_mul(r)
                .ok_or_else(|| Error::overflow("view", "size"))?;
            out.offset = self
                .offset
                .checked_mul(r)
                .ok_or_else(|| Error::overflow("view", "offset"))?;
        }
        Layout::new_op("view", &out.shape, &out.strides, out.offset)
    }

    /// The layout for `reshape(shape)` if it can be a view, else `Ok(None)` (a copy is
    /// needed); errors for invalid shapes.
    pub fn reshape_view(&self, shape: &[i64]) -> Result<(Shape, Option<Layout>)> {
        let mut out = self.clone();
        let viewable = out.reshape_in(shape)?;
        Ok((out.shape.clone(), viewable.then_some(out)))
    }

    /// [`reshape_view`](Self::reshape_view) in place: `true` when this layout is now
    /// the view; `false` when the shape cannot be a view, and then only `shape()` is
    /// meaningful (the new shape; the strides are not).
    #[inline]
    pub(crate) fn reshape_in(&mut self, shape: &[i64]) -> Result<bool> {
        let src = self.clone();
        self.reshaped_from(&src, "reshape", shape)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(shape: &[usize]) -> Layout {
        Layout::contiguous(shape).unwrap()
    }

    #[test]
    fn view_chunk_rule() {
        // arange(48).view(2,3,8)[:,:,::2].view(6,4) -> strides (8,2)
        let x = c(&[2, 3, 8]).slice(2, None, None, 2).unwrap();
        let v = x.view(&[6, 4]).unwrap();
        assert_eq!(v.strides(), &[8, 2]);
        let e = c(&[3, 4]).t().unwrap().view(&[12]).unwrap_err();
        assert!(e.to_string().starts_with("view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead."));
        assert_eq!(
            c(&[24]).view(&[5, 5]).unwrap_err().to_string(),
            "view: shape '[5, 5]' is invalid for input of size 24"
        );
        assert_eq!(
            c(&[24]).view(&[-1, -1]).unwrap_err().to_string(),
            "view: only one dimension can be inferred"
        );
        assert_eq!(
            c(&[24]).view(&[-2, 12]).unwrap_err().to_string(),
            "view: invalid shape dimension -2"
        );
        assert_eq!(c(&[24]).view(&[2, -1, 3]).unwrap().shape(), &[2, 4, 3]);
        assert!(c(&[0])
            .view(&[0, -1])
            .unwrap_err()
            .to_string()
            .contains("ambiguous"));
        // flipped run is still one chunk
        let f = c(&[6]).flip(&[0]).unwrap().view(&[2, 3]).unwrap();
        assert_eq!((f.strides(), f.offset()), (&[-3isize, -1][..], 5));
    }

    #[test]
    fn slices_follow_python() {
        assert_eq!(adjust_slice(None, None, -1, 5), (4, 5));
        assert_eq!(adjust_slice(Some(-2), None, 1, 5), (3, 2));
        assert_eq!(adjust_slice(Some(10), Some(-10), -2, 5), (4, 3));
        assert_eq!(adjust_slice(Some(3), Some(1), 1, 5), (3, 0));
        assert_eq!(adjust_slice(None, None, -1, 0).1, 0);
        assert_eq!(adjust_slice(None, None, i64::MIN, 5), (4, 1));
        assert_eq!(adjust_slice(None, None, i64::MAX, 5), (0, 1));
        let x = c(&[3, 4]).slice(0, None, None, -1).unwrap();
        assert_eq!((x.strides(), x.offset()), (&[-4isize, 1][..], 8));
        let y = c(&[3, 4]).flip(&[1]).unwrap();
        assert_eq!((y.strides(), y.offset()), (&[4isize, -1][..], 3));
        assert!(c(&[3]).slice(0, None, None, 0).is_err());
    }

    #[test]
    fn pytorch_texts() {
        let x = c(&[2, 3, 4]);
        assert_eq!(
            x.select(1, 5).unwrap_err().to_string(),
            "select(): index 5 out of range for tensor of size [2, 3, 4] at dimension 1"
        );
        assert_eq!(
            c(&[10]).narrow(0, 8, 3).unwrap_err().to_string(),
            "narrow: start (8) + length (3) exceeds dimension size (10)."
        );
        assert_eq!(
            c(&[10]).unfold(0, 11, 1).unwrap_err().to_string(),
            "unfold: maximum size for tensor at dimension 0 is 10 but size is 11"
        );
        assert_eq!(
            c(&[10]).unfold(0, 3, 0).unwrap_err().to_string(),
            "unfold: step is 0 but must be > 0"
        );
        assert_eq!(
            c(&[2, 2]).diagonal(0, 1, 1).unwrap_err().to_string(),
            "diagonal: diagonal dimensions cannot be identical 1, 1"
        );
        assert_eq!(
            x.permute(&[0, 0, 1]).unwrap_err().to_string(),
            "permute: permute(): duplicate dims are not allowed."
        );
        assert_eq!(
            x.movedim(&[0, 1], &[1, 1]).unwrap_err().to_string(),
            "movedim: movedim: repeated dim in `destination` ([1, 1])"
        );
        assert_eq!(
            c(&[2, 3]).expand(&[4, 3]).unwrap_err().to_string(),
            "expand: The expanded size of the tensor (4) must match the existing size (2) at non-singleton dimension 0.  Target sizes: [4, 3].  Tensor sizes: [2, 3]"
        );
        assert!(c(&[2, 3]).expand(&[3]).unwrap_err().to_string().contains("the number of sizes provided (1) must be greater or equal to the number of dimensions in the tensor (2)"));
        assert_eq!(
            c(&[2, 6])
                .view_dtype(4, 8, ("Float", "Double"))
                .map(|l| l.shape().to_vec())
                .unwrap(),
            vec![2, 3]
        );
        let e = c(&[2, 3])
            .view_dtype(4, 8, ("Float", "Double"))
            .unwrap_err();
        assert_eq!(e.to_string(), "view: self.size(-1) must be divisible by 2 to view Float as Double (different element sizes), but got 3");
        let e = c(&[6, 2])
            .t()
            .unwrap()
            .view_dtype(4, 8, ("Float", "Double"))
            .unwrap_err();
        assert_eq!(e.to_string(), "view: self.stride(-1) must be 1 to view Float as Double (different element sizes), but got 2");
    }

    #[test]
    fn geometry() {
        let e = c(&[2, 1]).expand(&[3, 2, 4]).unwrap();
        assert_eq!(
            (e.shape(), e.strides()),
            (&[3usize, 2, 4][..], &[0isize, 1, 0][..])
        );
        let u = c(&[10]).unfold(0, 3, 2).unwrap();
        assert_eq!(
            (u.shape(), u.strides()),
            (&[4usize, 3][..], &[2isize, 1][..])
        );
        assert_eq!(c(&[6]).chunk(4, 0).unwrap().len(), 3);
        assert_eq!(c(&[0]).chunk(3, 0).unwrap().len(), 3);
        let d = c(&[3, 4]).diagonal(1, 0, 1).unwrap();
        assert_eq!(
            (d.shape(), d.strides(), d.offset()),
            (&[3usize][..], &[5isize][..], 1)
        );
        let d = c(&[3, 4]).diagonal(-1, 0, 1).unwrap();
        assert_eq!((d.shape(), d.offset()), (&[2usize][..], 4));
        let m = c(&[2, 3, 4]).movedim(&[0], &[2]).unwrap();
        assert_eq!(m.shape(), &[3, 4, 2]);
        let un = c(&[2, 3]).unsqueeze(1).unwrap();
        assert_eq!(
            (un.shape(), un.strides()),
            (&[2usize, 1, 3][..], &[3isize, 3, 1][..])
        );
        let un = c(&[2, 3]).unsqueeze(-1).unwrap();
        assert_eq!(un.strides(), &[3, 1, 1]);
    }
}
