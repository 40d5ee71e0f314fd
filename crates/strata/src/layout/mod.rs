//! Pure view metadata: shape, signed strides and offset, in elements.
//!
//! Nothing here touches tensor data or allocates it; every function returns new metadata,
//! a flag, or an error. The view ops themselves live in [`view_metadata`]; broadcasting in
//! [`broadcast`]; memory-overlap tests in [`overlap`].
//!
//! # Invariants
//!
//! Every [`Layout`] built through [`Layout::new`] or any op in this module satisfies:
//!
//! - **L1**: `shape.len() == strides.len()` (the number of dims, `ndim`).
//! - **L2**: the element count `Π shape` fits in `isize`, and so does every partial sum
//!   `offset + Σ (shape[k]−1)·strides[k]` over any subset of dims, when the layout has
//!   elements. A layout without elements (some dim is 0) may have any sizes beside the 0,
//!   even ones whose product passes `usize` (`[0, 2^40, 2^40]`, as PyTorch accepts), and
//!   any strides: nothing is addressed through them, so the ops below never compute an
//!   offset from an empty layout's strides without checked arithmetic (an empty view keeps
//!   its offset where a move would overflow).
//! - **L3**: when the layout has elements, its lowest element index
//!   `offset + Σ_{strides[k]<0} (shape[k]−1)·strides[k]` is `≥ 0`.
//!
//! So element `[i0, i1, …]` (each `ik < shape[k]`) sits at the storage element
//! `offset + Σ ik·strides[k]`, which is in `[min_index, max_index]` and computed without
//! overflow. [`Tensor`](crate::Tensor) adds **L4**: `max_index` is below the storage's
//! element count — checked when a tensor is built over a storage, kept by construction by
//! the view ops here (they only select, reorder or repeat a layout's elements).

pub mod broadcast;
pub mod dims;
pub mod overlap;
pub mod view_metadata;

use crate::error::{list, Error, Result};

pub use dims::DimVec;

/// A shape (inline up to [`dims::INLINE_DIMS`] dims, without a heap allocation).
pub type Shape = DimVec<usize>;
/// Strides, in elements.
pub type Strides = DimVec<isize>;

/// Shape, strides (elements, signed) and offset (elements) of a view.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Layout {
    shape: Shape,
    strides: Strides,
    offset: usize,
}

/// Wraps a possibly negative dim into `0..ndim` the way PyTorch does (a 0-d tensor accepts
/// `0` and `-1`).
#[inline]
pub fn wrap_dim(op: &'static str, dim: i64, ndim: usize) -> Result<usize> {
    let n = ndim.max(1) as i64;
    if dim < -n || dim >= n {
        return Err(Error::DimOutOfRange { op, dim, ndim });
    }
    Ok(if dim < 0 { dim + n } else { dim } as usize)
}

/// Like [`wrap_dim`] for an insertion position (`unsqueeze`): range `[-ndim-1, ndim]`.
pub fn wrap_insert_dim(op: &'static str, dim: i64, ndim: usize) -> Result<usize> {
    wrap_dim(op, dim, ndim + 1)
}

/// `Π shape` for a shape known to satisfy L2: 0 when a dim is 0, even if the other dims
/// multiply past `usize` (a product that overflows before reaching the 0 stops there).
#[inline]
pub fn numel_of(shape: &[usize]) -> usize {
    shape
        .iter()
        .try_fold(1usize, |a, &n| a.checked_mul(n))
        .unwrap_or(0)
}

/// `Π shape`, or an overflow error. A shape with a 0 dim has 0 elements whatever its
/// other sizes (PyTorch's rule: only a product of non-zero sizes can overflow), but each
/// size must still fit in `isize` (PyTorch's sizes are `int64`).
pub fn checked_numel(op: &'static str, shape: &[usize]) -> Result<usize> {
    if shape.contains(&0) {
        if let Some(&big) = shape.iter().find(|&&n| n > isize::MAX as usize) {
            return Err(Error::overflow(
                op,
                format!("size {big} in shape {}", list(shape)),
            ));
        }
        return Ok(0);
    }
    let mut n: usize = 1;
    for &s in shape {
        n = n
            .checked_mul(s)
            .filter(|&n| n <= isize::MAX as usize)
            .ok_or_else(|| {
                Error::overflow(
                    op,
                    format!("the number of elements of shape {}", list(shape)),
                )
            })?;
    }
    Ok(n)
}

/// `a == b` for shapes, inline: a slice compare of a few words is a `memcmp` call, a
/// visible part of a small op's cost.
#[inline]
pub fn same_dims(a: &[usize], b: &[usize]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

/// Row-major (C-order) strides for `shape`: the last dim has stride 1. Size-0 and size-1
/// dims are treated as size 1 when multiplying, as PyTorch does.
///
/// A stride that would pass `isize::MAX` (only possible for a shape without elements,
/// such as `[0, 2^40, 2^40]`, whose non-zero sizes multiply past it) is `isize::MAX`:
/// saturated, so it stays representable, and never used to address an element. Every
/// op in this module treats such strides like any other of an empty layout (see L2).
pub fn contiguous_strides(shape: &[usize]) -> Strides {
    if shape.len() <= dims::INLINE_DIMS {
        let mut buf = [0isize; dims::INLINE_DIMS];
        let mut acc: isize = 1;
        for k in (0..shape.len()).rev() {
            buf[k] = acc;
            acc = acc.saturating_mul(shape[k].max(1) as isize);
        }
        return Strides::inline_from(buf, shape.len());
    }
    let mut strides = Strides::from_elem(0, shape.len());
    let mut acc: isize = 1;
    for (k, &s) in shape.iter().enumerate().rev() {
        strides[k] = acc;
        acc = acc.saturating_mul(s.max(1) as isize);
    }
    strides
}

/// Column-major (Fortran-order) strides for `shape`.
pub fn f_contiguous_strides(shape: &[usize]) -> Strides {
    let mut strides = Strides::from_elem(0, shape.len());
    let mut acc: isize = 1;
    for (k, &s) in shape.iter().enumerate() {
        strides[k] = acc;
        acc = acc.saturating_mul(s.max(1) as isize);
    }
    strides
}

impl Layout {
    /// A checked layout (invariants L1–L3).
    ///
    /// # Errors
    /// A shape error when the lengths differ or the lowest index is negative, an overflow
    /// error when the element count or extent overflows.
    pub fn new(shape: &[usize], strides: &[isize], offset: usize) -> Result<Layout> {
        Self::new_op("as_strided", shape, strides, offset)
    }

    pub(crate) fn new_op(
        op: &'static str,
        shape: &[usize],
        strides: &[isize],
        offset: usize,
    ) -> Result<Layout> {
        if shape.len() != strides.len() {
            return Err(Error::shape(
                op,
                format!(
                    "mismatch in length of strides and shape: shape {} has {} dims but strides {} has {}",
                    list(shape),
                    shape.len(),
                    list(strides),
                    strides.len()
                ),
            ));
        }
        let numel = checked_numel(op, shape)?;
        if offset > isize::MAX as usize {
            return Err(Error::overflow(op, format!("storage offset {offset}")));
        }
        let layout = Layout {
            shape: shape.into(),
            strides: strides.into(),
            offset,
        };
        if numel > 0 {
            let (lo, hi) = layout.extent_i128();
            if hi > isize::MAX as i128 || lo < isize::MIN as i128 {
                return Err(Error::overflow(
                    op,
                    format!(
                        "the extent of sizes {}, strides {}, offset {offset}",
                        list(shape),
                        list(strides)
                    ),
                ));
            }
            if lo < 0 {
                return Err(Error::shape(
                    op,
                    format!(
                        "sizes {}, strides {}, storage offset {offset} reach element {lo}, before the start of the storage",
                        list(shape),
                        list(strides)
                    ),
                ));
            }
        }
        Ok(layout)
    }

    /// A row-major layout of `shape` at offset 0.
    pub fn contiguous(shape: &[usize]) -> Result<Layout> {
        checked_numel("contiguous", shape)?;
        Ok(Layout {
            shape: shape.into(),
            strides: contiguous_strides(shape),
            offset: 0,
        })
    }

    /// A 0-d layout (one element) at `offset`.
    pub fn scalar(offset: usize) -> Layout {
        Layout {
            shape: Shape::new(),
            strides: Strides::new(),
            offset,
        }
    }

    /// Builds a layout the caller has already validated.
    pub(crate) fn from_parts_unchecked(shape: Shape, strides: Strides, offset: usize) -> Layout {
        debug_assert_eq!(shape.len(), strides.len());
        Layout {
            shape,
            strides,
            offset,
        }
    }

    /// Sizes per dim.
    #[inline]
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// Whether `other` has the same shape (a fixed-size compare for up to five dims).
    #[inline]
    pub fn same_shape(&self, other: &Layout) -> bool {
        self.shape == other.shape
    }

    /// Strides per dim, in elements.
    #[inline]
    pub fn strides(&self) -> &[isize] {
        &self.strides
    }

    /// Offset of element `[0, 0, …]`, in elements.
    #[inline]
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// Whether shape and strides are both held inline (no heap list): then the layout
    /// is plain data, and a bitwise copy of it is a clone.
    #[inline]
    pub fn inline(&self) -> bool {
        !self.shape.spilled() && !self.strides.spilled()
    }

    /// Number of dims.
    #[inline]
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }

    /// Number of elements (fits in `isize` by L2; 0 when a dim is 0, whatever the others).
    #[inline]
    pub fn numel(&self) -> usize {
        numel_of(&self.shape)
    }

    /// Storage index of the element at `index` (one entry per dim, each in range).
    ///
    /// # Errors
    /// An index error naming the dim when an index is out of range or the count is wrong.
    pub fn index_of(&self, op: &'static str, index: &[usize]) -> Result<usize> {
        if index.len() != self.ndim() {
            return Err(Error::index(
                op,
                format!(
                    "expected {} indices for a tensor of shape {}, got {}",
                    self.ndim(),
                    list(&self.shape),
                    index.len()
                ),
            ));
        }
        let mut pos = self.offset as isize;
        for (d, (&i, (&n, &s))) in index
            .iter()
            .zip(self.shape.iter().zip(&self.strides))
            .enumerate()
        {
            if i >= n {
                return Err(Error::IndexOutOfRange {
                    op,
                    index: i as i64,
                    dim: d,
                    shape: self.shape.to_vec(),
                });
            }
            // Within the extent by L2, so no overflow.
            pos += i as isize * s;
        }
        Ok(pos as usize)
    }

    fn extent_i128(&self) -> (i128, i128) {
        let mut lo = self.offset as i128;
        let mut hi = self.offset as i128;
        for (&n, &s) in self.shape.iter().zip(&self.strides) {
            let span = (n as i128 - 1) * s as i128;
            if s < 0 {
                lo += span;
            } else {
                hi += span;
            }
        }
        (lo, hi)
    }

    /// The lowest and highest storage element the view touches, or `None` when it has no
    /// elements.
    pub fn index_range(&self) -> Option<(usize, usize)> {
        if self.numel() == 0 {
            return None;
        }
        let (lo, hi) = self.extent_i128();
        // L2/L3: 0 <= lo <= hi <= isize::MAX.
        Some((lo as usize, hi as usize))
    }

    /// PyTorch's `is_contiguous`: true if there are no elements; else, walking dims from
    /// last to first and skipping size-1 dims, each stride equals the product of the
    /// sizes after it.
    pub fn is_contiguous(&self) -> bool {
        if self.numel() == 0 {
            return true;
        }
        let mut expected: isize = 1;
        for (&n, &s) in self.shape.iter().zip(&self.strides).rev() {
            if n == 1 {
                continue;
            }
            if s != expected {
                return false;
            }
            expected *= n as isize;
        }
        true
    }

    /// Whether this is exactly [`Layout::contiguous`] of its shape: offset 0 and the
    /// row-major strides, size-1 dims included (which [`is_contiguous`](Self::is_contiguous)
    /// ignores). Then a copy of it is a fresh output's layout, cheaper than rebuilding one.
    pub fn is_row_major_at_zero(&self) -> bool {
        if self.offset != 0 {
            return false;
        }
        let mut expected: isize = 1;
        for (&n, &s) in self.shape.iter().zip(&self.strides).rev() {
            if s != expected {
                return false;
            }
            expected = expected.saturating_mul(n.max(1) as isize);
        }
        true
    }

    /// Column-major contiguity, with the same conventions as [`is_contiguous`](Self::is_contiguous).
    pub fn is_f_contiguous(&self) -> bool {
        if self.numel() == 0 {
            return true;
        }
        let mut expected: isize = 1;
        for (&n, &s) in self.shape.iter().zip(&self.strides) {
            if n == 1 {
                continue;
            }
            if s != expected {
                return false;
            }
            expected *= n as isize;
        }
        true
    }

    /// PyTorch's `is_non_overlapping_and_dense`: the elements fill a contiguous run of
    /// memory exactly once, in some dim order (strides must be positive, as in PyTorch).
    pub fn is_non_overlapping_and_dense(&self) -> bool {
        if self.ndim() == 1 {
            return self.shape[0] < 2 || self.strides[0] == 1;
        }
        let mut perm: DimVec<usize> = (0..self.ndim()).collect();
        // Size-0/1 dims go last; the rest by increasing stride.
        perm.sort_by(|&a, &b| {
            let (na, nb) = (self.shape[a], self.shape[b]);
            (na < 2, self.strides[a]).cmp(&(nb < 2, self.strides[b]))
        });
        // `None` once the product passes `isize` (possible only without elements): no
        // stride can equal it.
        let mut required: Option<isize> = Some(1);
        for &d in &perm {
            let n = self.shape[d];
            if n < 2 {
                return true;
            }
            if Some(self.strides[d]) != required {
                return false;
            }
            required = required.and_then(|r| r.checked_mul(n as isize));
        }
        true
    }

    /// Shape and strides as `(size, stride)` pairs.
    #[inline]
    pub fn dims(&self) -> impl Iterator<Item = (usize, isize)> + '_ {
        self.shape.iter().copied().zip(self.strides.iter().copied())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(shape: &[usize], strides: &[isize], offset: usize) -> Layout {
        Layout::new(shape, strides, offset).unwrap()
    }

    #[test]
    fn contiguity_follows_pytorch() {
        assert!(l(&[2, 1, 3], &[3, 7, 1], 0).is_contiguous());
        assert!(!l(&[2, 3], &[1, 2], 0).is_contiguous());
        assert!(l(&[2, 3], &[1, 2], 0).is_f_contiguous());
        assert!(l(&[0, 3], &[100, 7], 0).is_contiguous());
        assert!(l(&[], &[], 3).is_contiguous());
        assert!(l(&[2, 3], &[1, 2], 0).is_non_overlapping_and_dense());
        assert!(!l(&[2, 3], &[3, -1], 2).is_non_overlapping_and_dense());
        assert!(!l(&[3], &[2], 0).is_non_overlapping_and_dense());
        assert_eq!(
            contiguous_strides(&[1, 2, 3, 4]).as_slice(),
            &[24, 12, 4, 1]
        );
        assert_eq!(f_contiguous_strides(&[2, 3, 4]).as_slice(), &[1, 2, 6]);
    }

    #[test]
    fn row_major_at_zero_is_exactly_the_contiguous_layout() {
        // The predicate against its definition, `== Layout::contiguous(shape)`: size-1
        // dims with other strides, empty shapes, offsets, transposes, flips, 0-d.
        let cases = [
            l(&[2, 3], &[3, 1], 0),
            l(&[2, 1, 3], &[3, 3, 1], 0),
            l(&[2, 1, 3], &[3, 7, 1], 0),
            l(&[0, 3], &[3, 1], 0),
            l(&[0, 3], &[100, 7], 0),
            l(&[2, 3], &[3, 1], 6),
            l(&[2, 3], &[1, 2], 0),
            l(&[3], &[-1], 2),
            l(&[1], &[1], 0),
            l(&[1], &[5], 0),
            l(&[], &[], 0),
            l(&[], &[], 4),
        ];
        for x in cases {
            assert_eq!(
                x.is_row_major_at_zero(),
                x == Layout::contiguous(x.shape()).unwrap(),
                "{x:?}"
            );
        }
        assert!(same_dims(&[2, 3], &[2, 3]) && same_dims(&[], &[]));
        assert!(!same_dims(&[2, 3], &[3, 2]) && !same_dims(&[2], &[2, 1]));
    }

    #[test]
    fn index_range_and_checks() {
        let x = l(&[3, 4], &[-4, 1], 8);
        assert_eq!(x.index_range(), Some((0, 11)));
        assert_eq!(x.index_of("get", &[2, 3]).unwrap(), 3);
        assert!(x.index_of("get", &[3, 0]).is_err());
        assert_eq!(l(&[0, 4], &[-4, 1], 0).index_range(), None);
        let e = Layout::new(&[3], &[-1], 1).unwrap_err();
        assert!(e.to_string().contains("before the start"), "{e}");
        let e = Layout::new(&[2, 3], &[1], 0).unwrap_err();
        assert!(e.to_string().contains("mismatch in length"), "{e}");
        let e = Layout::new(&[usize::MAX / 2, 4], &[1, 1], 0).unwrap_err();
        assert!(matches!(e, Error::Overflow { .. }), "{e}");
        let e = Layout::new(&[3], &[isize::MAX], 0).unwrap_err();
        assert!(matches!(e, Error::Overflow { .. }), "{e}");
    }

    #[test]
    fn wrap_dim_errors() {
        assert_eq!(wrap_dim("t", -1, 3).unwrap(), 2);
        assert_eq!(wrap_dim("t", -1, 0).unwrap(), 0);
        assert_eq!(
            wrap_dim("transpose", 3, 2).unwrap_err().to_string(),
            "transpose: Dimension out of range (expected to be in range of [-2, 1], but got 3)"
        );
    }
}
