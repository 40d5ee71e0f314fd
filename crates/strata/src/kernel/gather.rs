//! The CPU loops of advanced indexing: reading masks and index tensors into element
//! offsets, and moving elements by a list of offsets (gather for `x[idx]`, scatter for
//! `x[idx] = v` and `index_put_`). What an index means (which dims, which shape, which
//! errors) is decided in `ops/index.rs`; each function here has one caller there.
//!
//! An indexed position is `base + offs[j] + Σ r·rest_strides` (in elements): `offs[j]`
//! is the offset the advanced entries select for the `j`-th element (row-major) of the
//! broadcast index shape, and `r` runs over the dims no advanced entry covers.

use crate::dtype::DType;
use crate::error::{try_vec, Error, Result};
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
    if let (true, Some(w)) = (
        mask.layout().is_contiguous(),
        flat_step(mask.shape(), weights),
    ) {
        // SAFETY: a contiguous layout's elements are the `numel` bytes from its offset,
        // inside its storage (L4), kept alive and unwritten by the borrow above.
        let bytes = unsafe { std::slice::from_raw_parts(base.add(mask.offset()), mask.numel()) };
        return flat_true(op, bytes, w);
    }
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
    if let (false, Some((_, size)), true) = (unsigned, bound, l.is_contiguous()) {
        // SAFETY: a contiguous layout's elements are the `numel` values from its offset,
        // inside its storage (L4), kept alive and unwritten by the borrow above.
        let p = unsafe { base.add(l.offset() * 8) };
        if (p as usize).is_multiple_of(align_of::<i64>()) {
            // SAFETY: as above; aligned, and any bit pattern is an `i64`.
            let ix = unsafe { std::slice::from_raw_parts(p.cast::<i64>(), offs.len()) };
            if offsets_in_range(offs, ix, size, stride) {
                return Ok(());
            }
            // Out of range: the element-wise loop below names the first bad index.
        }
    }
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
    if fast_moves(
        mode,
        item,
        dp,
        sp,
        wl.offset(),
        bshape,
        b_strides,
        rest,
        w_rest,
        rest_strides,
        a_base,
        offs,
    ) {
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

/// The element step `w` with `Σ coord·weights = flat·w` for every coordinate of `shape`
/// (weights row-major contiguous up to the factor `w`; size-1 dims skipped), if any.
pub(crate) fn flat_step(shape: &[usize], weights: &[isize]) -> Option<isize> {
    let inner = shape
        .iter()
        .zip(weights)
        .rev()
        .find(|(&n, _)| n != 1)
        .map_or(1, |(_, &w)| w);
    let mut expected: isize = inner;
    for (&n, &w) in shape.iter().zip(weights).rev() {
        if n == 1 {
            continue;
        }
        if w != expected {
            return None;
        }
        expected = expected.checked_mul(isize::try_from(n).ok()?)?;
    }
    Some(inner)
}

/// Mask bytes per parallel chunk of [`flat_true`].
const MASK_CHUNK: usize = 1 << 16;

/// `flat·w` for every non-zero byte of `bytes` (at flat index `flat`), in order: a
/// counting pass, then a branch-free compaction; in parallel chunks (counts, then prefix
/// sums giving each chunk its place) for large masks.
fn flat_true(op: &'static str, bytes: &[u8], w: isize) -> Result<Vec<isize>> {
    let n = bytes.len();
    let par = n >= crate::kernel::engine::PAR_MIN;
    let chunks = n.div_ceil(MASK_CHUNK);
    let counts: Vec<usize> = if par {
        use rayon::prelude::*;
        crate::kernel::pool::parallel(|_| {
            (0..chunks)
                .into_par_iter()
                .map(|c| count_true(&bytes[c * MASK_CHUNK..((c + 1) * MASK_CHUNK).min(n)]))
                .collect()
        })
    } else {
        vec![count_true(bytes)]
    };
    let total: usize = counts.iter().sum();
    let mut out: Vec<isize> = try_vec(op, total)?;
    let dst = Shared(out.as_mut_ptr());
    if par {
        use rayon::prelude::*;
        let mut starts = Vec::with_capacity(chunks);
        let mut acc = 0usize;
        for &c in &counts {
            starts.push(acc);
            acc += c;
        }
        crate::kernel::pool::parallel(|_| {
            (0..chunks).into_par_iter().for_each(|c| {
                let lo = c * MASK_CHUNK;
                let part = &bytes[lo..(lo + MASK_CHUNK).min(n)];
                // SAFETY: chunk `c` writes exactly its `counts[c]` slots from
                // `starts[c]`, inside the `total` reserved; chunks write disjoint slots.
                unsafe { compact(part, lo, w, dst.get().add(starts[c])) };
            });
        });
    } else {
        // SAFETY: `total` slots are reserved; `compact` writes exactly that many.
        unsafe { compact(bytes, 0, w, dst.get()) };
    }
    // SAFETY: every slot below `total` was written above.
    unsafe { out.set_len(total) };
    Ok(out)
}

/// The non-zero bytes of `bytes`, counted in a pass that vectorises.
fn count_true(bytes: &[u8]) -> usize {
    bytes
        .chunks(1 << 12)
        .map(|c| c.iter().map(|&b| u32::from(b != 0)).sum::<u32>() as usize)
        .sum()
}

/// Writes `(base + i)·w` for every non-zero `bytes[i]`, in order, to `out`; returns how
/// many. Branch-free: every byte before the last non-zero one writes its slot and
/// advances by its truth, so no write passes the final count; eight zero bytes at a time
/// are skipped.
///
/// # Safety
/// `out` must be valid for as many writes as `bytes` has non-zero bytes.
unsafe fn compact(bytes: &[u8], base: usize, w: isize, out: *mut isize) -> usize {
    let Some(last) = bytes.iter().rposition(|&b| b != 0) else {
        return 0;
    };
    let mut k = 0usize;
    let mut i = 0usize;
    // Positions are valid offsets of a layout (the caller's mask), so `(base+i)·w` fits;
    // wrapping arithmetic only keeps debug builds from checking it per element.
    let pos = |i: usize| ((base + i) as isize).wrapping_mul(w);
    // SAFETY: each write is at `k`, the count of non-zero bytes before `i < last`, so
    // below the total (caller's contract).
    unsafe {
        while i + 8 <= last {
            let word = u64::from_ne_bytes(bytes[i..i + 8].try_into().unwrap_or([0; 8]));
            if word != 0 {
                for j in 0..8 {
                    *out.add(k) = pos(i + j);
                    k += usize::from(bytes[i + j] != 0);
                }
            }
            i += 8;
        }
        while i < last {
            *out.add(k) = pos(i);
            k += usize::from(bytes[i] != 0);
            i += 1;
        }
        *out.add(k) = pos(last);
    }
    k + 1
}

/// The contiguous `i64` index fast path of [`add_index_offsets`]: one pass for the
/// extremes, then, when every value is in `-size..size`, one that adds the wrapped
/// values times `stride`. Returns false (having written nothing) when a value is out of
/// range.
fn offsets_in_range(offs: &mut [isize], ix: &[i64], size: usize, stride: isize) -> bool {
    let Ok(n) = i64::try_from(size) else {
        return false;
    };
    let (lo, hi) = ix
        .chunks(1 << 12)
        .map(|c| {
            c.iter()
                .fold((i64::MAX, i64::MIN), |(a, b), &v| (a.min(v), b.max(v)))
        })
        .fold((i64::MAX, i64::MIN), |(a, b), (c, d)| (a.min(c), b.max(d)));
    if !ix.is_empty() && (lo < -n || hi >= n) {
        return false;
    }
    // In range: the wrapped value is a position along a dim of a valid view, so its
    // offset and the sum with the other dims' offsets fit an `isize`.
    for (o, &v) in offs.iter_mut().zip(ix) {
        let wrapped = v + ((v >> 63) & n);
        *o = o.wrapping_add((wrapped as isize).wrapping_mul(stride));
    }
    true
}

/// Walked elements from which a gather goes parallel.
const GATHER_PAR: usize = 1 << 17;

/// A pointer that rayon workers may share: the storages behind it are kept alive and
/// borrowed by the caller for the whole call, and workers touch disjoint elements.
#[derive(Clone, Copy)]
struct Shared<P>(P);
// SAFETY: see the type's doc.
unsafe impl<P> Send for Shared<P> {}
// SAFETY: as above.
unsafe impl<P> Sync for Shared<P> {}
impl<P: Copy> Shared<P> {
    /// The pointer (a method, so closures capture the `Send` wrapper, not the field).
    fn get(self) -> P {
        self.0
    }
}

/// Tight loops for the common layouts of [`run`]'s gathers and scatters (1, 2, 4 or 8
/// byte elements, the walked side's index dims one arithmetic sequence, at most one rest
/// dim): one element per index, or a row per index. Returns false, having done nothing,
/// for other layouts.
#[allow(clippy::too_many_arguments)]
fn fast_moves(
    mode: Mode,
    item: usize,
    dp: *mut u8,
    sp: *const u8,
    w_off: usize,
    bshape: &[usize],
    b_strides: &[isize],
    rest: &[usize],
    w_rest: &[isize],
    a_rest: &[isize],
    a_base: isize,
    offs: &[isize],
) -> bool {
    if mode == Mode::Accumulate || !matches!(item, 1 | 2 | 4 | 8) {
        return false;
    }
    let Some(bw) = flat_step(bshape, b_strides) else {
        return false;
    };
    let gather = mode == Mode::Gather;
    let (nr, wr, ar) = match rest {
        [] => (1, 0, 0),
        [n] => (*n, w_rest[0], a_rest[0]),
        _ => return false,
    };
    let total = offs.len().saturating_mul(nr);
    if total == 0 {
        return true;
    }
    let g = Geo {
        w_off: w_off as isize,
        bw,
        a_base,
        nr,
        wr,
        ar,
    };
    let (dp, sp) = (Shared(dp), Shared(sp));
    // Indices `[lo, hi)` of `offs`.
    let part = |lo: usize, hi: usize| {
        macro_rules! go {
            ($n:literal) => {
                // SAFETY: the positions are those of `run`'s walk (same layouts), each
                // inside its storage, the two sides not overlapping (see `run`).
                unsafe { moves::<$n>(gather, dp.get(), sp.get(), &g, &offs[lo..hi], lo) }
            };
        }
        match item {
            1 => go!(1),
            2 => go!(2),
            4 => go!(4),
            _ => go!(8),
        }
    };
    // Scatters stay serial: with repeated indices the last write must win.
    if gather && total >= GATHER_PAR && offs.len() >= 2 {
        use rayon::prelude::*;
        crate::kernel::pool::parallel(|threads| {
            let per = offs.len().div_ceil(threads * 4).max(1);
            (0..offs.len().div_ceil(per))
                .into_par_iter()
                .for_each(|c| part(c * per, ((c + 1) * per).min(offs.len())));
        });
    } else {
        part(0, offs.len());
    }
    true
}

/// Element positions of [`moves`]: index `j` and rest coordinate `r` are walked element
/// `w_off + j·bw + r·wr` and addressed element `a_base + offs[j] + r·ar`.
struct Geo {
    w_off: isize,
    bw: isize,
    a_base: isize,
    nr: usize,
    wr: isize,
    ar: isize,
}

/// The loops of [`fast_moves`] for `N`-byte elements over `offs`, indices `j0..` of the
/// walked side. Rows go index by index when the walked rest dim is contiguous, else rest
/// coordinate by rest coordinate (so the walked side streams).
///
/// # Safety
/// Every position must be an element of its storage, the destination exclusively
/// borrowed and not overlapping the source.
#[inline(always)]
unsafe fn moves<const N: usize>(
    gather: bool,
    dp: *mut u8,
    sp: *const u8,
    g: &Geo,
    offs: &[isize],
    j0: usize,
) {
    let (d, s) = (dp.cast::<[u8; N]>(), sp.cast::<[u8; N]>());
    // Valid positions of valid layouts (see `run`): they fit an `isize`; wrapping only
    // keeps debug builds from checking each one.
    let w0 = g.w_off.wrapping_add((j0 as isize).wrapping_mul(g.bw));
    let wpos = |j: usize| w0.wrapping_add((j as isize).wrapping_mul(g.bw));
    let apos = |o: isize| g.a_base.wrapping_add(o);
    // SAFETY: the caller's contract; unaligned for foreign memory.
    unsafe {
        let mv = |w: isize, a: isize| {
            if gather {
                d.offset(w).write_unaligned(s.offset(a).read_unaligned());
            } else {
                d.offset(a).write_unaligned(s.offset(w).read_unaligned());
            }
        };
        if g.nr == 1 {
            if gather && g.bw == 1 {
                let d = d.offset(w0);
                for (j, &o) in offs.iter().enumerate() {
                    d.add(j).write_unaligned(s.offset(apos(o)).read_unaligned());
                }
            } else if !gather && g.bw == 1 {
                let s = s.offset(w0);
                for (j, &o) in offs.iter().enumerate() {
                    d.offset(apos(o)).write_unaligned(s.add(j).read_unaligned());
                }
            } else {
                for (j, &o) in offs.iter().enumerate() {
                    mv(wpos(j), apos(o));
                }
            }
            return;
        }
        let (nr, wr, ar) = (g.nr as isize, g.wr, g.ar);
        if wr == 1 && ar == 1 {
            for (j, &o) in offs.iter().enumerate() {
                let (w, a) = (wpos(j), apos(o));
                let (dst, src) = if gather {
                    (d.offset(w), s.offset(a))
                } else {
                    (d.offset(a), s.offset(w))
                };
                std::ptr::copy_nonoverlapping(src.cast::<u8>(), dst.cast::<u8>(), g.nr * N);
            }
        } else if wr == 1 || wr == -1 {
            for (j, &o) in offs.iter().enumerate() {
                let (w, a) = (wpos(j), apos(o));
                for r in 0..nr {
                    mv(w + r * wr, a + r * ar);
                }
            }
        } else {
            for r in 0..nr {
                for (j, &o) in offs.iter().enumerate() {
                    mv(wpos(j) + r * wr, apos(o) + r * ar);
                }
            }
        }
    }
}
