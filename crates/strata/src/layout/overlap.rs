//! Memory-overlap tests on layouts (no data access).

use super::{DimVec, Layout};

/// Whether two elements of one view can share a storage element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overlap {
    /// Every element has its own storage element.
    No,
    /// At least two elements share a storage element.
    Yes,
    /// Not decidable cheaply (the exact question is a knapsack problem).
    Maybe,
}

impl Layout {
    /// Whether this view's elements alias each other.
    ///
    /// Exact when the view is dense, has a stride-0 dim of size > 1, or passes the sorted
    /// |stride| test (each |stride| exceeds the span of all smaller dims); also exact when
    /// one |stride| is a small multiple of a smaller one or the elements outnumber the
    /// storage range they span (pigeonhole). `Maybe` only remains for the rest.
    pub fn internal_overlap(&self) -> Overlap {
        if self.numel() == 0 {
            return Overlap::No;
        }
        // One dim (most small tensors): overlapping only when repeated (stride 0).
        if let ([n], [s]) = (self.shape(), self.strides()) {
            return if *n > 1 && *s == 0 {
                Overlap::Yes
            } else {
                Overlap::No
            };
        }
        // Row-major (the usual case for a written view: `t[1:3]`, a fresh output): its
        // elements are distinct, which one walk of the strides shows without the sort.
        if self.is_contiguous() {
            return Overlap::No;
        }
        let mut dims: DimVec<(usize, usize)> = DimVec::new();
        for (n, s) in self.dims() {
            if n == 1 {
                continue;
            }
            if s == 0 {
                return Overlap::Yes;
            }
            dims.push((n, s.unsigned_abs()));
        }
        dims.sort_by_key(|&(_, s)| s);
        // Sufficient condition for no overlap. (A view with elements spans at most
        // `isize::MAX` elements (L2, L3), so these sums fit; saturating all the same, as
        // the layout may come from untrusted metadata.)
        let mut span: usize = 0;
        let mut sufficient = true;
        for &(n, s) in &dims {
            if s <= span {
                sufficient = false;
                break;
            }
            span = span.saturating_add((n - 1).saturating_mul(s));
        }
        if sufficient {
            return Overlap::No;
        }
        // Pigeonhole: more elements than distinct positions in the range.
        let numel = self.numel();
        let range = dims.iter().fold(1usize, |acc, &(n, s)| {
            acc.saturating_add((n - 1).saturating_mul(s))
        });
        if numel > range {
            return Overlap::Yes;
        }
        // A larger stride that is k times a smaller one, with k < the smaller dim's size,
        // lands on an element the smaller dim already reaches.
        for (i, &(ni, si)) in dims.iter().enumerate() {
            for &(_, sj) in &dims[i + 1..] {
                if sj % si == 0 && sj / si < ni {
                    return Overlap::Yes;
                }
            }
        }
        Overlap::Maybe
    }

    /// True when the storage element ranges of `self` and `other` intersect.
    pub fn ranges_intersect(&self, other: &Layout) -> bool {
        match (self.index_range(), other.index_range()) {
            (Some((a0, a1)), Some((b0, b1))) => a0 <= b1 && b0 <= a1,
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(shape: &[usize], strides: &[isize]) -> Layout {
        Layout::new(shape, strides, 100).unwrap()
    }

    /// Brute force over all elements.
    fn brute(x: &Layout) -> bool {
        let mut seen = std::collections::HashSet::new();
        let n = x.numel();
        for flat in 0..n {
            let mut rem = flat;
            let mut pos = x.offset() as isize;
            for (size, s) in x.shape().iter().zip(x.strides()).rev() {
                let (size, s) = (*size, *s);
                pos += (rem % size) as isize * s;
                rem /= size;
            }
            if !seen.insert(pos) {
                return true;
            }
        }
        false
    }

    #[test]
    fn cases() {
        assert_eq!(l(&[3, 4], &[4, 1]).internal_overlap(), Overlap::No);
        assert_eq!(l(&[3, 4], &[-1, 3]).internal_overlap(), Overlap::No);
        assert_eq!(l(&[3, 4], &[0, 1]).internal_overlap(), Overlap::Yes);
        assert_eq!(l(&[5, 2], &[1, 1]).internal_overlap(), Overlap::Yes); // unfold(0,2,1)
        assert_eq!(l(&[2, 2], &[3, 2]).internal_overlap(), Overlap::No);
    }

    #[test]
    fn never_wrong_against_brute_force() {
        let sizes = [1usize, 2, 3, 4];
        let strides = [-5isize, -3, -2, -1, 0, 1, 2, 3, 4, 6, 7];
        for &n0 in &sizes {
            for &n1 in &sizes {
                for &s0 in &strides {
                    for &s1 in &strides {
                        for &s2 in &[1isize, 5, -12] {
                            let x = l(&[n0, n1, 2], &[s0, s1, s2]);
                            let truth = brute(&x);
                            match x.internal_overlap() {
                                Overlap::No => assert!(!truth, "{x:?}"),
                                Overlap::Yes => assert!(truth, "{x:?}"),
                                Overlap::Maybe => {}
                            }
                        }
                    }
                }
            }
        }
    }
}
