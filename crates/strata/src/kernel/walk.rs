//! An odometer over the elements of a shape, yielding storage indices for N operands.

use crate::layout::DimVec;

/// Calls `f` once per element of `shape`, in row-major order, with the storage element
/// index of that element in each of the `N` operands (`offsets[k] + Σ i·strides[k]`).
///
/// The caller guarantees (by invariants L2–L4) that every index computed is in range.
pub(crate) fn walk<const N: usize>(
    shape: &[usize],
    strides: [&[isize]; N],
    offsets: [usize; N],
    mut f: impl FnMut([usize; N]),
) {
    if shape.contains(&0) {
        return;
    }
    let nd = shape.len();
    if nd == 0 {
        f(offsets);
        return;
    }
    let inner = shape[nd - 1];
    let inner_strides: [isize; N] = std::array::from_fn(|k| strides[k][nd - 1]);
    let mut counter: DimVec<usize> = DimVec::from_elem(0, nd - 1);
    let mut base: [isize; N] = std::array::from_fn(|k| offsets[k] as isize);
    loop {
        let mut pos = base;
        for _ in 0..inner {
            f(std::array::from_fn(|k| pos[k] as usize));
            for k in 0..N {
                // Wrapping: a size-1 dim may carry a huge (meaningless) stride, and the
                // odometer steps past the last element before it stops; every index it
                // hands to `f` is in range.
                pos[k] = pos[k].wrapping_add(inner_strides[k]);
            }
        }
        // Advance the outer dims like an odometer.
        let mut d = nd - 1;
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            counter[d] += 1;
            for k in 0..N {
                base[k] = base[k].wrapping_add(strides[k][d]);
            }
            if counter[d] < shape[d] {
                break;
            }
            for k in 0..N {
                base[k] = base[k].wrapping_sub(strides[k][d].wrapping_mul(shape[d] as isize));
            }
            counter[d] = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn visits_in_row_major_order() {
        let mut seen = Vec::new();
        walk(&[2, 3], [&[3, 1], &[1, -2]], [0, 4], |[a, b]| {
            seen.push((a, b))
        });
        assert_eq!(seen, vec![(0, 4), (1, 2), (2, 0), (3, 5), (4, 3), (5, 1)]);
        let mut n = 0;
        walk(&[], [&[]], [7], |[a]| {
            assert_eq!(a, 7);
            n += 1
        });
        assert_eq!(n, 1);
        walk(&[3, 0], [&[1, 1]], [0], |_| panic!("no elements"));
    }
}
