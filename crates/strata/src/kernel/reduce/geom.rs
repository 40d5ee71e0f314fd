//! Reduction geometry: the input's dims split into kept and reduced ones, simplified the
//! way the engine simplifies a loop (`kernel/engine.rs`: drop size-1 dims, flip negative
//! strides, sort by stride, coalesce), plus an odometer over a set of dims.

use crate::layout::DimVec;

/// Whether a dim survives into the output or is folded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Role {
    /// The dim indexes output elements.
    #[default]
    Kept,
    /// The dim is reduced (or scanned).
    Reduced,
}

/// One dim of a reduction: size, input stride and output stride, in elements.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Dim {
    /// Size (> 1 after simplification).
    pub n: usize,
    /// Input stride in elements (≥ 0 unless flipping was refused for this dim).
    pub si: isize,
    /// Output stride in elements (0 for a reduced dim of a reduction).
    pub so: isize,
    role: Role,
}

/// The simplified dims of a reduction, each list ordered outer → inner (by decreasing
/// input stride, broadcast dims outermost).
#[derive(Debug, Clone)]
pub(crate) struct Geom {
    /// Dims that index the output.
    pub kept: DimVec<Dim>,
    /// Dims folded into each output element.
    pub red: DimVec<Dim>,
    /// Input element offset of the first visited element (after flips).
    pub in_off: isize,
    /// Output element offset of the first visited element (after flips).
    pub out_off: isize,
}

/// Sort key: smaller means faster (more inner). Stride-0 dims are the slowest, so a
/// broadcast dim is iterated outermost and never chosen as the streaming dim.
fn speed_key(d: &Dim) -> (usize, usize) {
    let si = if d.si == 0 {
        usize::MAX
    } else {
        d.si.unsigned_abs()
    };
    (si, d.so.unsigned_abs())
}

impl Geom {
    /// Simplifies a reduction of an input with `shape`, `strides` and `offset` (checked
    /// metadata, invariants L1–L4) into an output whose per-dim strides are `out_strides`
    /// (ignored for reduced dims of a reduction when `reduced_out_zero`).
    ///
    /// `flip_reduced` allows reversing reduced dims with negative strides (fine for
    /// order-free folds, not for arg-reductions or scans, whose index order matters).
    /// The caller handles empty inputs (a zero-size dim) before calling.
    pub(crate) fn new(
        shape: &[usize],
        strides: &[isize],
        offset: usize,
        out_strides: &[isize],
        reduced: &[bool],
        reduced_out_zero: bool,
        flip_reduced: bool,
    ) -> Geom {
        debug_assert!(!shape.contains(&0));
        let mut in_off = offset as isize;
        let mut out_off = 0isize;
        let mut dims: DimVec<Dim> = DimVec::new();
        for k in 0..shape.len() {
            if shape[k] == 1 {
                continue;
            }
            let role = if reduced[k] {
                Role::Reduced
            } else {
                Role::Kept
            };
            let so = if role == Role::Reduced && reduced_out_zero {
                0
            } else {
                out_strides[k]
            };
            let mut d = Dim {
                n: shape[k],
                si: strides[k],
                so,
                role,
            };
            if d.si < 0 && (role == Role::Kept || flip_reduced) {
                // Walk the dim forwards from its last element: the same set of elements
                // (and, for a kept dim, the same output element for each).
                let last = d.n as isize - 1;
                in_off += last * d.si;
                out_off += last * d.so;
                d.si = -d.si;
                d.so = -d.so;
            }
            dims.push(d);
        }
        // Stable sort, slowest first.
        dims.sort_by_key(|d| std::cmp::Reverse(speed_key(d)));
        // Coalesce an outer dim with the next inner one when both play the same role and
        // the pair is one evenly strided run for input and output alike.
        let mut merged: DimVec<Dim> = DimVec::new();
        for &d in dims.iter() {
            if let Some(prev) = merged.last_mut() {
                let n = d.n as isize;
                if prev.role == d.role
                    && d.si.checked_mul(n) == Some(prev.si)
                    && d.so.checked_mul(n) == Some(prev.so)
                {
                    prev.n *= d.n;
                    prev.si = d.si;
                    prev.so = d.so;
                    continue;
                }
            }
            merged.push(d);
        }
        let kept = merged
            .iter()
            .filter(|d| d.role == Role::Kept)
            .copied()
            .collect();
        let red = merged
            .iter()
            .filter(|d| d.role == Role::Reduced)
            .copied()
            .collect();
        Geom {
            kept,
            red,
            in_off,
            out_off,
        }
    }

    /// Whether the reduced dims should be the streaming (innermost) loop: the fastest
    /// input dim is reduced and long enough, or nothing is kept. Otherwise the innermost
    /// kept dim streams and the reduced dims are walked around it ("vertical").
    pub(crate) fn horizontal(&self) -> bool {
        let (Some(r), Some(k)) = (self.red.last(), self.kept.last()) else {
            return self.kept.is_empty();
        };
        let (rs, ks) = (speed_key(r).0, speed_key(k).0);
        // A short reduced run (such as `(1_000_000, 2).sum(-1)`) is better folded across
        // rows of the kept dim, unless that dim is so far apart in memory that walking it
        // would touch a new cache line per element.
        rs < ks && (r.n >= 16 || ks > 64)
    }
}

/// Number of elements over a list of dims.
pub(crate) fn count(dims: &[Dim]) -> usize {
    // 0 once a product passes `usize`, possible only in a view with a 0 dim.
    dims.iter()
        .try_fold(1usize, |a, d| a.checked_mul(d.n))
        .unwrap_or(0)
}

/// A row-major odometer over `dims`, tracking `N` byte offsets (one per stride set).
#[derive(Debug, Clone)]
pub(crate) struct Odometer<const N: usize> {
    shape: DimVec<usize>,
    strides: [DimVec<isize>; N],
    idx: DimVec<usize>,
    /// Current byte offsets.
    pub off: [isize; N],
}

impl<const N: usize> Odometer<N> {
    /// An odometer positioned at flat row-major index `start` of `shape`, with per-dim
    /// byte strides `strides[k]` for operand `k`.
    pub(crate) fn new(shape: &[usize], strides: [DimVec<isize>; N], start: usize) -> Self {
        let mut idx: DimVec<usize> = DimVec::from_elem(0, shape.len());
        let mut off = [0isize; N];
        let mut rem = start;
        for d in (0..shape.len()).rev() {
            idx[d] = rem % shape[d];
            rem /= shape[d];
            for k in 0..N {
                off[k] += idx[d] as isize * strides[k][d];
            }
        }
        Odometer {
            shape: shape.into(),
            strides,
            idx,
            off,
        }
    }

    /// Advances to the next index (wrapping to 0 after the last).
    #[inline]
    pub(crate) fn step(&mut self) {
        let mut d = self.shape.len();
        while d > 0 {
            d -= 1;
            self.idx[d] += 1;
            for k in 0..N {
                self.off[k] += self.strides[k][d];
            }
            if self.idx[d] < self.shape[d] {
                return;
            }
            for k in 0..N {
                self.off[k] -= self.shape[d] as isize * self.strides[k][d];
            }
            self.idx[d] = 0;
        }
    }
}

/// Byte strides of `dims` for the input (`si · isz`).
pub(crate) fn in_bytes(dims: &[Dim], isz: usize) -> DimVec<isize> {
    dims.iter().map(|d| d.si * isz as isize).collect()
}

/// Byte strides of `dims` for the output (`so · osz`).
pub(crate) fn out_bytes(dims: &[Dim], osz: usize) -> DimVec<isize> {
    dims.iter().map(|d| d.so * osz as isize).collect()
}

/// Sizes of `dims`.
pub(crate) fn sizes(dims: &[Dim]) -> DimVec<usize> {
    dims.iter().map(|d| d.n).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coalesces_and_orders() {
        // (4, 5, 6) contiguous, reduce dim 1 and 2: one reduced run of 30.
        let g = Geom::new(
            &[4, 5, 6],
            &[30, 6, 1],
            0,
            &[1, 0, 0],
            &[false, true, true],
            true,
            true,
        );
        assert_eq!(g.kept.len(), 1);
        assert_eq!((g.red.len(), g.red[0].n, g.red[0].si), (1, 30, 1));
        assert!(g.horizontal());
        // Transposed: reduce the dim with the large stride → vertical.
        let g = Geom::new(&[8, 100], &[1, 8], 0, &[1, 0], &[false, true], true, true);
        assert!(!g.horizontal());
        // Flip a kept dim: offsets move to its last element.
        let g = Geom::new(&[3, 4], &[-4, 1], 8, &[1, 0], &[false, true], true, true);
        assert_eq!((g.in_off, g.out_off, g.kept[0].so), (0, 2, -1));
        let mut o = Odometer::<1>::new(&[2, 3], [[10, 1].into_iter().collect()], 2);
        assert_eq!(o.off, [2]);
        o.step();
        assert_eq!(o.off, [10]);
    }
}
