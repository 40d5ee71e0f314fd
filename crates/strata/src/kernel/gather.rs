//! The CPU loops of advanced indexing: reading masks and index tensors into element
//! offsets, and moving elements by a list of offsets (gather for `x[idx]`, scatter for
//! `x[idx] = v` and `index_put_`). What an index means (which dims, which shape, which
//! errors) is decided in `ops/index.rs`; each function here has one caller there.
//!
//! An indexed position is `base + offs[j] + Σ r·rest_strides` (in elements): `offs[j]`
//! is the offset the advanced entries select for the `j`-th element (row-major) of the
//! broadcast index shape, and `r` runs over the dims no advanced entry covers.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernel::math::dispatch;
use crate::kernel::walk;
use crate::storage::borrow::acquire;
use crate::tensor::Tensor;

/// Offsets `Σ coord·weights` of the true elements of a `bool` tensor, in row-major
/// order (any non-zero byte is true). With row-major strides of the mask's shape as
/// weights they are flat indices (`nonzero`); with a view's strides, element offsets.
pub(crate) fn true_offsets(
    op: &'static str,
    mask: &Tensor,
    weights: &[isize],
) -> Result<Vec<isize>> {
    debug_assert_eq!(mask.dtype(), DType::Bool);
    debug_assert_eq!(weights.len(), mask.ndim());
    let _g = acquire(op, &[(mask.storage(), false)])?;
    let base = mask.storage().data_ptr() as *const u8;
    // Two passes: count, then fill a vector of exactly that size (a mask may be an
    // expanded view of far more elements than memory holds; the count is what is kept).
    let l = mask.layout();
    let mut count = 0usize;
    walk(l.shape(), [l.strides()], [l.offset()], |[p]| {
        // SAFETY: `p` is an element of the mask's layout, inside its storage (L4), which
        // the shared borrow above keeps alive and unwritten.
        count += usize::from(unsafe { *base.add(p) } != 0);
    });
    let mut out = crate::error::try_vec(op, count)?;
    // Each offset is a position of a valid layout relative to its offset (weights are a
    // view's strides or row-major strides of the mask's shape), so it fits an `isize`;
    // walk's wrapping arithmetic gives it back exactly when read as `isize`.
    walk(
        l.shape(),
        [l.strides(), weights],
        [l.offset(), 0],
        |[p, w]| {
            // SAFETY: as above.
            if unsafe { *base.add(p) } != 0 {
                out.push(w as isize);
            }
        },
    );
    Ok(out)
}

/// Adds `wrap(index[j])·stride` to `offs[j]` for every element `j` (row-major) of
/// `index`, an `i64` or `u64` tensor of `offs.len()` elements. With `bound = Some((dim,
/// size))` each value is first checked against `-size..size` (negative counts from the
/// end); out of range is the index error naming the value, `dim` and `size`. With `None`
/// the values are offsets already (a mask's).
pub(crate) fn add_index_offsets(
    op: &'static str,
    offs: &mut [isize],
    index: &Tensor,
    bound: Option<(usize, usize)>,
    stride: isize,
) -> Result<()> {
    debug_assert_eq!(index.numel(), offs.len());
    let _g = acquire(op, &[(index.storage(), false)])?;
    let base = index.storage().data_ptr() as *const u8;
    let unsigned = match index.dtype() {
        DType::I64 => false,
        DType::U64 => true,
        dt => {
            return Err(Error::dtype(
                op,
                format!("index offsets from a {dt} tensor"),
            ))
        }
    };
    let l = index.layout();
    let mut j = 0usize;
    let mut bad: Option<Error> = None;
    walk(l.shape(), [l.strides()], [l.offset()], |[p]| {
        if bad.is_some() {
            return;
        }
        // SAFETY: `p` is an element of the index's layout, inside its storage (L4), kept
        // alive and unwritten by the shared borrow above; the storage may be foreign and
        // unaligned, hence the unaligned read.
        let raw = unsafe { std::ptr::read_unaligned(base.add(p * 8).cast::<[u8; 8]>()) };
        let v: i128 = if unsigned {
            u64::from_ne_bytes(raw) as i128
        } else {
            i64::from_ne_bytes(raw) as i128
        };
        let w = match bound {
            Some((dim, size)) => {
                let n = size as i128;
                if v < -n || v >= n {
                    bad = Some(Error::index(
                        op,
                        format!("index {v} is out of bounds for dimension {dim} with size {size}"),
                    ));
                    return;
                }
                if v < 0 {
                    v + n
                } else {
                    v
                }
            }
            None => v,
        };
        // In range of a valid layout, so this cannot overflow; checked all the same.
        match w
            .checked_mul(stride as i128)
            .and_then(|d| d.checked_add(offs[j] as i128))
            .and_then(|s| isize::try_from(s).ok())
        {
            Some(s) => offs[j] = s,
            None => bad = Some(Error::overflow(op, format!("the offset of index {v}"))),
        }
        j += 1;
    });
    bad.map_or(Ok(()), Err)
}

/// `out[j, r] = src[src.offset + offs[j] + r·rest_strides]`: `out`'s first `nb` dims are
/// the broadcast index dims (walked row-major, `j` counting), the others the rest dims.
/// `out` must not share memory with `src` (it is a fresh tensor).
pub(crate) fn gather(
    op: &'static str,
    out: &Tensor,
    nb: usize,
    src: &Tensor,
    rest_strides: &[isize],
    offs: &[isize],
) -> Result<()> {
    run(op, out, src, nb, rest_strides, offs, Mode::Gather)
}

/// `dst[dst.offset + offs[j] + r·rest_strides] = src[j, r]` (or `+=` with
/// `accumulate`), `src`'s first `nb` dims being the broadcast index dims. With repeated
/// offsets the last write wins. `src` must not share memory with `dst` (the caller
/// stages it).
pub(crate) fn scatter(
    op: &'static str,
    dst: &Tensor,
    rest_strides: &[isize],
    offs: &[isize],
    src: &Tensor,
    nb: usize,
    accumulate: bool,
) -> Result<()> {
    let mode = if accumulate {
        Mode::Accumulate
    } else {
        Mode::Scatter
    };
    run(op, dst, src, nb, rest_strides, offs, mode)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Gather,
    Scatter,
    Accumulate,
}

/// The shared loop, writing `dst` from `src`. The side walked by position is `dst` in a
/// gather and `src` in a scatter; the other is addressed by `offs`.
fn run(
    op: &'static str,
    dst: &Tensor,
    src: &Tensor,
    nb: usize,
    rest_strides: &[isize],
    offs: &[isize],
    mode: Mode,
) -> Result<()> {
    let _g = super::plan::borrow_for_write(op, dst, [src])?;
    let (walked, addressed) = match mode {
        Mode::Gather => (dst, src),
        Mode::Scatter | Mode::Accumulate => (src, dst),
    };
    let wl = walked.layout();
    let (bshape, rest) = wl.shape().split_at(nb);
    let (b_strides, w_rest) = wl.strides().split_at(nb);
    debug_assert_eq!(rest_strides.len(), rest.len());
    debug_assert_eq!(crate::layout::numel_of(bshape), offs.len());
    let a_base = addressed.offset() as isize;
    let item = dst.dtype().itemsize();
    let (dp, sp) = (
        dst.storage().data_ptr(),
        src.storage().data_ptr() as *const u8,
    );
    // Calls `f(walked position, addressed position)` for every element.
    let each = |f: &mut dyn FnMut(usize, usize)| {
        let mut j = 0usize;
        walk(bshape, [b_strides], [wl.offset()], |[wb]| {
            let ab = a_base.wrapping_add(offs[j]) as usize;
            j += 1;
            walk(rest, [w_rest, rest_strides], [wb, ab], |[w, a]| f(w, a));
        });
    };
    // SAFETY (for every access below): each position comes from a layout inside its
    // storage (L4) — the addressed ones from in-range indices (checked when `offs` was
    // built) over a valid view — and `dst` is exclusively, `src` shared borrowed (S4); the
    // callers guarantee the two do not overlap in memory.
    if mode == Mode::Accumulate {
        accumulate(dst.dtype(), dp, sp, each);
        return Ok(());
    }
    // (destination, source) of a (walked, addressed) pair.
    let gather = mode == Mode::Gather;
    let pair = |w: usize, a: usize| if gather { (w, a) } else { (a, w) };
    macro_rules! moves {
        ($n:literal) => {
            each(&mut |w, a| {
                let (d, s) = pair(w, a);
                // SAFETY: see above; unaligned for foreign memory.
                unsafe {
                    std::ptr::write_unaligned(
                        dp.add(d * $n).cast::<[u8; $n]>(),
                        std::ptr::read_unaligned(sp.add(s * $n).cast::<[u8; $n]>()),
                    )
                }
            })
        };
    }
    match item {
        1 => moves!(1),
        2 => moves!(2),
        4 => moves!(4),
        8 => moves!(8),
        _ => each(&mut |w, a| {
            let (d, s) = pair(w, a);
            // SAFETY: see above.
            unsafe { std::ptr::copy_nonoverlapping(sp.add(s * item), dp.add(d * item), item) }
        }),
    }
    Ok(())
}

/// `dst[d] += src[s]` for the pairs `each` yields (scatter order: walked = src).
fn accumulate(dt: DType, dp: *mut u8, sp: *const u8, each: impl Fn(&mut dyn FnMut(usize, usize))) {
    macro_rules! add {
        ($T:ty, $add:expr) => {{
            let (d, s) = (dp.cast::<$T>(), sp.cast::<$T>());
            each(&mut |w, a| {
                // SAFETY: see `run`; unaligned for foreign memory.
                unsafe {
                    let x = std::ptr::read_unaligned(d.add(a));
                    let y = std::ptr::read_unaligned(s.add(w));
                    std::ptr::write_unaligned(d.add(a), $add(x, y));
                }
            });
        }};
    }
    dispatch!(dt;
        int I => add!(I, |x: I, y: I| x.wrapping_add(y));
        real R => add!(R, |x: R, y: R| x + y);
        half H => add!(H, |x: H, y: H| H::from_f32(x.to_f32() + y.to_f32()));
        bool => add!(u8, |x: u8, y: u8| u8::from(x != 0 || y != 0));
    );
}
