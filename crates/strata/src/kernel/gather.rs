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
use crate::kernel::half_convert::{run_at, AtLevel};
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
    bound: Option<crate::backend::Bound>,
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
    if let (false, Some(b), true) = (unsigned, bound, l.is_contiguous()) {
        // SAFETY: a contiguous layout's elements are the `numel` values from its offset,
        // inside its storage (L4), kept alive and unwritten by the borrow above.
        let p = unsafe { base.add(l.offset() * 8) };
        if (p as usize).is_multiple_of(align_of::<i64>()) {
            // SAFETY: as above; aligned, and any bit pattern is an `i64`.
            let ix = unsafe { std::slice::from_raw_parts(p.cast::<i64>(), offs.len()) };
            if offsets_in_range(offs, ix, b.size, b.negative, stride) {
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
            Some(crate::backend::Bound {
                dim,
                size,
                negative,
            }) => {
                let n = size as i128;
                if v < if negative { -n } else { 0 } || v >= n {
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

/// `wrap(index[j])·stride` for every element `j` (row-major) of an `i64` or `u64`
/// `index`, each value checked against `-size..size` of `bound = (dim, size)` (the index
/// error of [`add_index_offsets`] names the first bad one). A contiguous aligned `i64`
/// index goes in two tight passes (extremes, then the offsets into a fresh vector);
/// others through [`add_index_offsets`] into zeros.
pub(crate) fn index_offsets(
    op: &'static str,
    index: &Tensor,
    bound: crate::backend::Bound,
    stride: isize,
) -> Result<Vec<isize>> {
    let count = index.numel();
    // The vector path wraps negative values: for bounds that allow them.
    if bound.negative && index.dtype() == DType::I64 && index.layout().is_contiguous() {
        let _g = acquire(op, &[(index.storage(), false)])?;
        // SAFETY: a contiguous layout's elements are the `numel` values from its offset,
        // inside its storage (L4), kept alive and unwritten by the borrow above.
        let p = unsafe { (index.storage().data_ptr() as *const u8).add(index.offset() * 8) };
        if (p as usize).is_multiple_of(align_of::<i64>()) {
            // SAFETY: as above; aligned, and any bit pattern is an `i64`.
            let ix = unsafe { std::slice::from_raw_parts(p.cast::<i64>(), count) };
            if let Ok(n) = i64::try_from(bound.size) {
                let mut offs: Vec<isize> = try_vec(op, count)?;
                let level = crate::kernel::cpu::level();
                // SAFETY: `count` slots are reserved; `wrap_offsets_on` writes them all.
                if unsafe { wrap_offsets_on(level, ix, n, stride, offs.as_mut_ptr()) } {
                    // SAFETY: every slot below `count` was written.
                    unsafe { offs.set_len(count) };
                    return Ok(offs);
                }
            }
            // Out of range: the element-wise loop below names the first bad index.
        }
    }
    let mut offs: Vec<isize> = try_vec(op, count)?;
    offs.resize(count, 0);
    add_index_offsets(op, &mut offs, index, Some(bound), stride)?;
    Ok(offs)
}

/// [`wrap_offsets`], compiled for `level`.
///
/// # Safety
/// As for [`wrap_offsets`]; `level` at most [`cpu::level`](crate::kernel::cpu::level).
unsafe fn wrap_offsets_on(
    level: crate::kernel::cpu::Level,
    ix: &[i64],
    n: i64,
    stride: isize,
    out: *mut isize,
) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use crate::kernel::cpu::Level;
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn on_avx2(ix: &[i64], n: i64, stride: isize, out: *mut isize) -> bool {
            // SAFETY: the contract of `wrap_offsets_on`.
            unsafe { wrap_offsets(ix, n, stride, out) }
        }
        #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c")]
        unsafe fn on_avx512(ix: &[i64], n: i64, stride: isize, out: *mut isize) -> bool {
            // SAFETY: the contract of `wrap_offsets_on`.
            unsafe { wrap_offsets(ix, n, stride, out) }
        }
        match level {
            // SAFETY: the caller's contract; the CPU has the level's features.
            Level::Avx512 => return unsafe { on_avx512(ix, n, stride, out) },
            // SAFETY: as above.
            Level::Avx2 => return unsafe { on_avx2(ix, n, stride, out) },
            Level::Portable => {}
        }
    }
    let _ = level;
    // SAFETY: the caller's contract.
    unsafe { wrap_offsets(ix, n, stride, out) }
}

/// Writes `wrap(ix[j])·stride` to `out[j]` for every `j` in one branch-free pass and
/// returns whether every value was in `-n..n` (`n ≥ 0`); when not, what was written
/// is meaningless (the caller reports the first bad value another way).
///
/// The range test is one unsigned compare: `v + n` (mod 2⁶⁴) is below `2n` exactly
/// for `-n ≤ v < n`.
///
/// # Safety
/// `out` must be valid for `ix.len()` writes.
#[inline(always)]
unsafe fn wrap_offsets(ix: &[i64], n: i64, stride: isize, out: *mut isize) -> bool {
    let span = (n as u64).wrapping_mul(2);
    let mut bad = 0u64;
    // Wrapping arithmetic: in range, the offset is a position along a dim of a valid
    // view and fits; out of range, the result is discarded.
    let wrap = |v: i64| v.wrapping_add((v >> 63) & n);
    // SAFETY: every write is below `ix.len()` (caller's contract).
    unsafe {
        if stride == 1 {
            for (j, &v) in ix.iter().enumerate() {
                bad |= u64::from(v.wrapping_add(n) as u64 >= span);
                *out.add(j) = wrap(v) as isize;
            }
        } else {
            for (j, &v) in ix.iter().enumerate() {
                bad |= u64::from(v.wrapping_add(n) as u64 >= span);
                *out.add(j) = (wrap(v) as isize).wrapping_mul(stride);
            }
        }
    }
    bad == 0
}

/// `Some(size as i64)` when every value of `ix` is in `-size..size` (one pass for the
/// extremes, in blocks that vectorise).
fn in_range(ix: &[i64], size: usize, negative: bool) -> Option<i64> {
    let n = i64::try_from(size).ok()?;
    let (lo, hi) = ix
        .chunks(1 << 12)
        .map(|c| {
            c.iter()
                .fold((i64::MAX, i64::MIN), |(a, b), &v| (a.min(v), b.max(v)))
        })
        .fold((i64::MAX, i64::MIN), |(a, b), (c, d)| (a.min(c), b.max(d)));
    let floor = if negative { -n } else { 0 };
    (ix.is_empty() || (lo >= floor && hi < n)).then_some(n)
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
        complex C => add!(C, |x: C, y: C| x + y);
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

/// `flat·w` for every non-zero byte of `bytes` (at flat index `flat`), in order (see
/// [`true_positions`]).
fn flat_true(op: &'static str, bytes: &[u8], w: isize) -> Result<Vec<isize>> {
    let plan = TruePlan::new(bytes);
    let mut out: Vec<isize> = try_vec(op, plan.total)?;
    // SAFETY: `total` slots are reserved; `fill` writes exactly that many.
    unsafe {
        plan.fill(bytes, w, out.as_mut_ptr());
        out.set_len(plan.total);
    }
    Ok(out)
}

/// The `(count, 1)` `int64` tensor of the flat indices of the non-zero bytes of a
/// contiguous `bool` tensor (`nonzero` of a 1-D mask), written in place: a counting
/// pass, then the branch-free compaction straight into the result; `None` for a
/// non-contiguous mask.
pub(crate) fn nonzero_flat(op: &'static str, mask: &Tensor) -> Result<Option<Tensor>> {
    debug_assert_eq!(mask.dtype(), DType::Bool);
    if !mask.layout().is_contiguous() {
        return Ok(None);
    }
    let _g = acquire(op, &[(mask.storage(), false)])?;
    let base = mask.storage().data_ptr() as *const u8;
    // SAFETY: a contiguous layout's elements are the `numel` bytes from its offset,
    // inside its storage (L4), kept alive and unwritten by the borrow above.
    let bytes = unsafe { std::slice::from_raw_parts(base.add(mask.offset()), mask.numel()) };
    let plan = TruePlan::new(bytes);
    // Not zeroed: `fill` writes every element (S5).
    let out = crate::kernel::plan::output_for(&[plan.total, 1], DType::I64, &[])?;
    let _w = acquire(op, &[(out.storage(), true)])?;
    let dst = out.storage().data_ptr().cast::<i64>();
    // SAFETY: the fresh contiguous output holds exactly `total` `i64`s from its start
    // (offset 0), exclusively borrowed; `fill` writes exactly that many.
    unsafe { plan.fill(bytes, 1, dst) };
    drop(_w);
    Ok(Some(out))
}

/// An output position of the compaction: `isize` offsets or `i64` indices.
trait Pos: Copy {
    fn from_isize(v: isize) -> Self;
}
impl Pos for isize {
    #[inline(always)]
    fn from_isize(v: isize) -> Self {
        v
    }
}
impl Pos for i64 {
    #[inline(always)]
    fn from_isize(v: isize) -> Self {
        v as i64
    }
}

/// The counts of [`true_positions`]: per parallel chunk for large masks (the chunks'
/// places come from prefix sums), else one.
struct TruePlan {
    counts: Vec<usize>,
    total: usize,
    par: bool,
}

impl TruePlan {
    fn new(bytes: &[u8]) -> TruePlan {
        let n = bytes.len();
        // With one thread, no rayon call (see `kernel::pool`): from a thread outside the
        // pool, a parallel iterator hands its work to a worker and sleeps until it is
        // done, which cost more than the work here.
        let (counts, par): (Vec<usize>, bool) = if n >= crate::kernel::engine::PAR_MIN {
            use rayon::prelude::*;
            crate::kernel::pool::parallel(|threads| {
                if threads > 1 {
                    (bytes.par_chunks(MASK_CHUNK).map(count_true).collect(), true)
                } else {
                    (vec![count_true(bytes)], false)
                }
            })
        } else {
            (vec![count_true(bytes)], false)
        };
        let total = counts.iter().sum();
        TruePlan { counts, total, par }
    }

    /// Writes `(flat index)·w` of every non-zero byte, in order, to `out`.
    ///
    /// # Safety
    /// `out` must be valid for `self.total` writes, and `self` the plan of `bytes`.
    unsafe fn fill<O: Pos>(&self, bytes: &[u8], w: isize, out: *mut O) {
        let level = crate::kernel::cpu::level();
        if self.par {
            use rayon::prelude::*;
            let mut starts = Vec::with_capacity(self.counts.len());
            let mut acc = 0usize;
            for &c in &self.counts {
                starts.push(acc);
                acc += c;
            }
            let dst = Shared(out);
            crate::kernel::pool::parallel(|_| {
                bytes
                    .par_chunks(MASK_CHUNK)
                    .enumerate()
                    .for_each(|(c, part)| {
                        // SAFETY: chunk `c` writes exactly its `counts[c]` slots from
                        // `starts[c]`, inside the `total` reserved; chunks write
                        // disjoint slots.
                        unsafe {
                            compact_on(
                                level,
                                part,
                                self.counts[c],
                                c * MASK_CHUNK,
                                w,
                                dst.get().add(starts[c]),
                            )
                        };
                    });
            });
        } else {
            // SAFETY: the caller's contract.
            unsafe { compact_on(level, bytes, self.total, 0, w, out) };
        }
    }
}

/// The non-zero bytes of `bytes`, counted in byte lanes (255 at a time, so a lane
/// cannot overflow) by a loop that vectorises.
fn count_true(bytes: &[u8]) -> usize {
    bytes
        .chunks(255)
        .map(|c| c.iter().fold(0u8, |a, &b| a + u8::from(b != 0)) as usize)
        .sum()
}

/// Bit `j` set when byte `j` (little-endian order) of `word` is non-zero.
#[inline(always)]
fn byte_mask(word: u64) -> usize {
    const LO7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    // The high bit of each byte: set when the byte is non-zero.
    let hi = ((word & LO7).wrapping_add(LO7) | word) & !LO7;
    // The eight high bits gathered into the top byte (the products do not carry).
    ((hi >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56) as usize
}

/// For each 8-bit mask, the positions of its set bits, in order (then zeros).
static SET_BITS: [[u8; 8]; 256] = {
    let mut t = [[0u8; 8]; 256];
    let mut m = 0;
    while m < 256 {
        let (mut k, mut j) = (0, 0);
        while j < 8 {
            if m & (1 << j) != 0 {
                t[m][k] = j as u8;
                k += 1;
            }
            j += 1;
        }
        m += 1;
    }
    t
};

/// [`compact`], compiled for `level`.
///
/// # Safety
/// As for [`compact`]; `level` at most [`cpu::level`](crate::kernel::cpu::level).
unsafe fn compact_on<O: Pos>(
    level: crate::kernel::cpu::Level,
    bytes: &[u8],
    count: usize,
    base: usize,
    w: isize,
    out: *mut O,
) {
    #[cfg(target_arch = "x86_64")]
    {
        use crate::kernel::cpu::Level;
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn on_avx2<O: Pos>(b: &[u8], count: usize, base: usize, w: isize, out: *mut O) {
            // SAFETY: the contract of `compact_on`.
            unsafe { compact(b, count, base, w, out) }
        }
        #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c")]
        unsafe fn on_avx512<O: Pos>(b: &[u8], count: usize, base: usize, w: isize, out: *mut O) {
            // SAFETY: the contract of `compact_on`.
            unsafe { compact(b, count, base, w, out) }
        }
        match level {
            // SAFETY: the caller's contract; the CPU has the level's features.
            Level::Avx512 => return unsafe { on_avx512(bytes, count, base, w, out) },
            // SAFETY: as above.
            Level::Avx2 => return unsafe { on_avx2(bytes, count, base, w, out) },
            Level::Portable => {}
        }
    }
    let _ = level;
    // SAFETY: the caller's contract.
    unsafe { compact(bytes, count, base, w, out) }
}

/// Writes `(base + i)·w` for every non-zero `bytes[i]`, in order, to `out`, which has
/// room for exactly `count` of them (the number of non-zero bytes).
///
/// Branch-free per byte. With `w = 1` and at least one byte in 16 non-zero, eight bytes
/// at a time: a word of zeros is skipped, else its mask of non-zero bytes picks a row of
/// [`SET_BITS`] and all eight slots from `k` are written (those past the word's count
/// are overwritten by the next word) while at least eight slots remain. The rest (and
/// any `w`, and sparse masks) goes byte by byte up to the last non-zero byte, each
/// writing its slot and advancing by its truth, so no write passes `count`; words of
/// zeros are skipped there.
///
/// # Safety
/// `out` must be valid for `count` writes, `count` the number of non-zero bytes.
#[inline(always)]
unsafe fn compact<O: Pos>(bytes: &[u8], count: usize, base: usize, w: isize, out: *mut O) {
    let n = bytes.len();
    let (mut k, mut i) = (0usize, 0usize);
    let word_at = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().unwrap_or([0; 8]));
    // Positions are valid offsets of a layout (the caller's mask), so `(base+i)·w` fits;
    // wrapping arithmetic only keeps debug builds from checking it per element.
    let pos = |i: usize| O::from_isize(((base + i) as isize).wrapping_mul(w));
    // SAFETY: a word's eight writes are at `k..k + 8 ≤ count`; the byte loop's at `k`,
    // the number of non-zero bytes before `i < last`, below `count` (caller's contract).
    unsafe {
        // The table pays off on dense masks; sparse ones are mostly words of zeros,
        // which the byte loop below skips more cheaply.
        if w == 1 && count >= n / 16 {
            while i + 8 <= n && k + 8 <= count {
                let word = word_at(i);
                if word != 0 {
                    let m = byte_mask(word);
                    let row = &SET_BITS[m];
                    let b = (base + i) as isize;
                    for j in 0..8 {
                        *out.add(k + j) = O::from_isize(b + row[j] as isize);
                    }
                    k += m.count_ones() as usize;
                }
                i += 8;
            }
        }
        if k == count {
            return;
        }
        let Some(last) = bytes.iter().rposition(|&b| b != 0) else {
            return;
        };
        while i + 8 <= last {
            if word_at(i) != 0 {
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
        k += 1;
    }
    debug_assert_eq!(k, count);
}

/// The contiguous `i64` index fast path of [`add_index_offsets`]: one pass for the
/// extremes, then, when every value is in `-size..size`, one that adds the wrapped
/// values times `stride`. Returns false (having written nothing) when a value is out of
/// range.
fn offsets_in_range(
    offs: &mut [isize],
    ix: &[i64],
    size: usize,
    negative: bool,
    stride: isize,
) -> bool {
    let Some(n) = in_range(ix, size, negative) else {
        return false;
    };
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
            8 => go!(8),
            _ => go!(16),
        }
    };
    // Scatters stay serial: with repeated indices the last write must win.
    if gather && total >= GATHER_PAR && offs.len() >= 2 {
        use rayon::prelude::*;
        crate::kernel::pool::parallel(|threads| {
            // With one thread, no rayon call (see `TruePlan::new`): 500 rows of 1000
            // float32 took 117 µs through a one-worker pool, 56 without it.
            if threads < 2 {
                return part(0, offs.len());
            }
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
    // A local copy: the writes below could alias `g` for all the compiler knows, and a
    // reload per element costs in the tight loops.
    let a_base = g.a_base;
    let apos = |o: isize| a_base.wrapping_add(o);
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
        } else if gather && g.bw == 1 {
            // Columns of rows (`index_select` along an inner dim): per row, a contiguous
            // run of the output from one row of the source.
            for r in 0..nr {
                let drow = d.offset(w0.wrapping_add(r.wrapping_mul(wr)));
                let srow = s.offset(a_base.wrapping_add(r.wrapping_mul(ar)));
                for (j, &o) in offs.iter().enumerate() {
                    drow.add(j).write_unaligned(srow.offset(o).read_unaligned());
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

/// PyTorch's `gather` in one pass: `out[c] = src[c with coordinate dim := index[c]]` for
/// every coordinate `c` of `index` (row-major), reading each index value, checking it
/// against `0..size` of `dim` and moving the element — no vector of offsets is built.
/// Taken when `index` is a contiguous, aligned `int64` host tensor of `out`'s shape, `out` is
/// contiguous (a fresh tensor, disjoint from `src`) and elements are 1, 2, 4 or 8 bytes;
/// returns `Ok(false)`, having done nothing, otherwise. An out-of-range value is the
/// index error of [`add_index_offsets`], naming the first one in row-major order.
pub(crate) fn gather_dim(
    op: &'static str,
    out: &Tensor,
    src: &Tensor,
    dim: usize,
    index: &Tensor,
) -> Result<bool> {
    let item = src.dtype().itemsize();
    let nd = index.ndim();
    if !matches!(item, 1 | 2 | 4 | 8)
        || nd == 0
        || nd != src.ndim()
        || index.dtype() != DType::I64
        || !index.device().is_cpu()
        || !index.layout().is_contiguous()
        || !out.layout().is_contiguous()
        || out.shape() != index.shape()
    {
        return Ok(false);
    }
    // SAFETY: a contiguous layout's elements are the `numel` values from its offset,
    // inside its storage (L4); read only under the borrow below.
    let ip = unsafe { (index.storage().data_ptr() as *const u8).add(index.offset() * 8) };
    if !(ip as usize).is_multiple_of(align_of::<i64>()) {
        return Ok(false);
    }
    // Taken only once the path is sure: declining must leave `out` untouched (its
    // version unbumped).
    let _g = super::plan::borrow_for_write(op, out, [src, index])?;
    let numel = index.numel();
    let k = index.shape()[nd - 1];
    if numel == 0 {
        return Ok(true);
    }
    // SAFETY: the `numel` values from `ip` (see above), kept alive and unwritten by the
    // borrow; aligned, and any bit pattern is an `i64`.
    let ix = unsafe { std::slice::from_raw_parts(ip.cast::<i64>(), numel) };
    // Each row's first element in `src` (the coordinates but `dim`'s and the last's):
    // positions of `src`'s valid layout, as the index's other dims are no longer than
    // `src`'s (checked by the caller).
    let mut weights: crate::layout::DimVec<isize> =
        crate::layout::DimVec::from_slice(&src.strides()[..nd - 1]);
    if dim < nd - 1 {
        weights[dim] = 0;
    }
    let mut bases: Vec<isize> = try_vec(op, numel / k)?;
    walk(
        &index.shape()[..nd - 1],
        [&weights],
        [src.offset()],
        |[b]| bases.push(b as isize),
    );
    let g = DimGeo {
        size: src.shape()[dim] as u64,
        stride: src.strides()[dim],
        step: if dim == nd - 1 {
            0
        } else {
            src.strides()[nd - 1]
        },
        k,
    };
    let (dp, sp) = (
        Shared(out.storage().data_ptr()),
        Shared(src.storage().data_ptr() as *const u8),
    );
    let o0 = out.offset();
    let level = crate::kernel::cpu::level();
    // Rows `[lo, hi)`: the first bad (row, value), if any, having stopped there.
    let part = |lo: usize, hi: usize| -> Option<(usize, i64)> {
        macro_rules! go {
            ($n:literal) => {
                // SAFETY: `out` is contiguous from `o0` with `bases.len()·k` elements;
                // each read is checked in range before it is made, and is then an element
                // of `src`'s valid layout; the borrows above hold both storages; `level`
                // is the machine's.
                unsafe {
                    let rows = DimRows::<$n> {
                        dp: dp.get(),
                        sp: sp.get(),
                        o0,
                        g: &g,
                        bases: &bases,
                        ix,
                        lo,
                        hi,
                        bad: std::cell::Cell::new(None),
                    };
                    run_at(level, &rows);
                    rows.bad.get()
                }
            };
        }
        match item {
            1 => go!(1),
            2 => go!(2),
            4 => go!(4),
            8 => go!(8),
            _ => go!(16),
        }
    };
    let rows = bases.len();
    let bad = if numel >= GATHER_DIM_PAR && rows >= 2 {
        use rayon::prelude::*;
        crate::kernel::pool::parallel(|threads| {
            if threads < 2 {
                return part(0, rows);
            }
            let per = rows.div_ceil(threads * 4).max(1);
            (0..rows.div_ceil(per))
                .into_par_iter()
                .filter_map(|c| part(c * per, ((c + 1) * per).min(rows)))
                .min_by_key(|&(row, _)| row)
        })
    } else {
        part(0, rows)
    };
    match bad {
        None => Ok(true),
        Some((_, v)) => Err(Error::index(
            op,
            format!(
                "index {v} is out of bounds for dimension {dim} with size {}",
                g.size
            ),
        )),
    }
}

/// Elements from which [`gather_dim`] goes parallel: its loop does a read, a check and a
/// move per element, a few times the work of a move by offset ([`GATHER_PAR`]).
const GATHER_DIM_PAR: usize = 1 << 15;

/// What [`dim_rows`] needs of a gather along a dim: its `size` and `stride` in `src`, the
/// `src` step of the index's last dim (0 when that is the gathered dim) and the row
/// length `k`.
struct DimGeo {
    size: u64,
    stride: isize,
    step: isize,
    k: usize,
}

/// [`dim_rows`] as an [`AtLevel`] computation, so it is compiled for each CPU level
/// (wider vectors for the checks; the level's gather instructions for the moves, where
/// the compiler finds them worth it).
struct DimRows<'a, const N: usize> {
    dp: *mut u8,
    sp: *const u8,
    o0: usize,
    g: &'a DimGeo,
    bases: &'a [isize],
    ix: &'a [i64],
    lo: usize,
    hi: usize,
    bad: std::cell::Cell<Option<(usize, i64)>>,
}

impl<const N: usize> AtLevel for DimRows<'_, N> {
    #[inline(always)]
    unsafe fn run(&self, _level: crate::kernel::cpu::Level) {
        // SAFETY: the contract of `dim_rows`, which whoever built this value keeps.
        self.bad.set(unsafe {
            dim_rows::<N>(
                self.dp, self.sp, self.o0, self.g, self.bases, self.ix, self.lo, self.hi,
            )
        });
    }
}

/// Rows `lo..hi` of [`gather_dim`] for `N`-byte elements: each row's index values are
/// checked first (one branch-free pass over values already in L1), then moved. Returns
/// the first bad (row, value), having written only the rows before it.
///
/// # Safety
/// `dp` from element `o0` must be valid for `bases.len()·k` writes, disjoint from `sp`;
/// `bases[r] + j·step + v·stride` must be an element of `sp`'s storage for every row `r`,
/// `j < k` and `v < size`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
unsafe fn dim_rows<const N: usize>(
    dp: *mut u8,
    sp: *const u8,
    o0: usize,
    g: &DimGeo,
    bases: &[isize],
    ix: &[i64],
    lo: usize,
    hi: usize,
) -> Option<(usize, i64)> {
    let (d, s) = (dp.cast::<[u8; N]>(), sp.cast::<[u8; N]>());
    let (size, stride, step, k) = (g.size, g.stride, g.step, g.k);
    for r in lo..hi {
        let row = &ix[r * k..(r + 1) * k];
        let bad = row.iter().fold(false, |acc, &v| acc | ((v as u64) >= size));
        if bad {
            let v = *row.iter().find(|&&v| (v as u64) >= size)?;
            return Some((r, v));
        }
        let b = bases[r];
        // SAFETY: the caller's contract; every value of the row is in `0..size`.
        unsafe {
            let drow = d.add(o0 + r * k);
            if step == 0 && stride == 1 {
                let srow = s.offset(b);
                for (j, &v) in row.iter().enumerate() {
                    drow.add(j).write(srow.offset(v as isize).read_unaligned());
                }
            } else {
                for (j, &v) in row.iter().enumerate() {
                    let p = b
                        .wrapping_add((j as isize).wrapping_mul(step))
                        .wrapping_add((v as isize).wrapping_mul(stride));
                    drow.add(j).write(s.offset(p).read_unaligned());
                }
            }
        }
    }
    None
}
