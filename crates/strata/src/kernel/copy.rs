//! Copy and cast between any two layouts and dtypes, on the engine.

use std::marker::PhantomData;

use super::cpu::{self, Level};
use super::engine::{par_from, Loop, PAR_MIN};
use super::half_convert::{
    f64_to_f32_odd, f64_to_f32_odd_run, narrow_f64_run, run_at, AtLevel, HalfBlock, BLOCK,
};
use super::plan;
use crate::dtype::{DType, Element};
use crate::error::Result;
use crate::tensor::Tensor;
use crate::with_dtype;

/// Runs of this many bytes, up to [`OWN_LOOP_MAX`], are copied by [`copy_bytes`]'s own
/// loop.
const OWN_LOOP_MIN: usize = 2048;

/// Longer runs (a whole large contiguous tensor) go back to `memmove`, which streams
/// them past the cache with non-temporal stores.
const OWN_LOOP_MAX: usize = 1 << 20;

/// `n` bytes from `src` to `dst` (which may be the same memory, or overlap).
///
/// Long non-overlapping runs go through a loop of 64-byte moves with the stores aligned,
/// not through `memmove`: glibc copies such runs with `rep movsb`, whose speed here
/// depends on where the two buffers sit relative to each other (copying the rows of a
/// flipped 8192² f32 tensor took 19 ms when source and destination were congruent mod
/// 32 bytes, 25-36 ms when they were 16 bytes apart), and a fresh output of ours is not
/// congruent to an input NumPy allocated.
///
/// # Safety
/// `src` readable and `dst` writable for `n` bytes.
#[inline]
unsafe fn copy_bytes(src: *const u8, dst: *mut u8, n: usize) {
    let apart = (src as usize).abs_diff(dst as usize);
    // SAFETY: the caller's guarantee; the loop runs only when the ranges are disjoint,
    // each move stays below `n`.
    unsafe {
        if !(OWN_LOOP_MIN..=OWN_LOOP_MAX).contains(&n) || apart < n {
            std::ptr::copy(src, dst, n);
            return;
        }
        let head = dst.align_offset(64).min(n);
        std::ptr::copy_nonoverlapping(src, dst, head);
        let mut k = head;
        while k + 64 <= n {
            // A constant-size move: vector loads and stores, no call.
            std::ptr::copy_nonoverlapping(src.add(k), dst.add(k), 64);
            k += 64;
        }
        std::ptr::copy_nonoverlapping(src.add(k), dst.add(k), n - k);
    }
}

/// Inner kernel: `len` elements from `p[1]` (type S) to `p[0]` (type D), cast.
///
/// # Safety
/// `p[0]` must be writable and `p[1]` readable for `len` elements at the byte strides `s`.
#[inline(always)]
unsafe fn cast_run<D: Element, S: Element>(p: [*mut u8; 2], s: [isize; 2], len: usize) {
    let (o, i) = (p[0], p[1] as *const u8);
    let (ds, ss) = (size_of::<D>() as isize, size_of::<S>() as isize);
    // SAFETY: the caller guarantees every offset `k·s[_]`, `k < len`, is a valid element
    // of its operand, in every branch below.
    unsafe {
        if D::DTYPE != S::DTYPE && half_cast_run::<D, S>(p, s, len) {
            return;
        }
        if s[0] == ds && s[1] == ss {
            if D::DTYPE == S::DTYPE {
                copy_bytes(i, o, len * ds as usize);
            } else {
                for k in 0..len as isize {
                    S::load(i.offset(k * ss))
                        .cast::<D>()
                        .store(o.offset(k * ds));
                }
            }
        } else if s[1] == 0 {
            let v = S::load(i).cast::<D>();
            if s[0] == ds {
                for k in 0..len as isize {
                    v.store(o.offset(k * ds));
                }
            } else {
                for k in 0..len as isize {
                    v.store(o.offset(k * s[0]));
                }
            }
        } else if D::DTYPE == S::DTYPE
            && s[0] == ds
            && matches!(s[1], x if x == 2 * ss || x == 3 * ss || x == 4 * ss)
        {
            // An innermost step of 2, 3 or 4 (`[::2]`, ...): with the step a constant, the
            // compiler loads whole vectors and keeps the lanes it needs (SSE2 shuffles),
            // where element-by-element loads made a 4096² float32 `[::2, ::2]` copy a sixth
            // slower than NumPy's (3.5 ms against 3.1; now 2.2) and `[:, ::3]` 1.17×.
            match s[1] / ss {
                2 => step_run::<S, 2>(o, i, ss, ds, len),
                3 => step_run::<S, 3>(o, i, ss, ds, len),
                _ => step_run::<S, 4>(o, i, ss, ds, len),
            }
        } else if s[0] == ds {
            for k in 0..len as isize {
                S::load(i.offset(k * s[1]))
                    .cast::<D>()
                    .store(o.offset(k * ds));
            }
        } else {
            for k in 0..len as isize {
                S::load(i.offset(k * s[1]))
                    .cast::<D>()
                    .store(o.offset(k * s[0]));
            }
        }
    }
}

/// `len` elements of type `S` from every `STEP`th element at `i` to a contiguous run at
/// `o` (`ss`, `ds`: the item sizes in bytes): the constant step lets the compiler
/// vectorise the loads.
///
/// # Safety
/// `o` writable for `len` elements, `i` readable at `STEP·k·ss` for `k < len`.
#[inline(always)]
unsafe fn step_run<S: Element, const STEP: isize>(
    o: *mut u8,
    i: *const u8,
    ss: isize,
    ds: isize,
    len: usize,
) {
    for k in 0..len as isize {
        // SAFETY: the caller's guarantee.
        unsafe { S::load(i.offset(STEP * k * ss)).store(o.offset(k * ds)) };
    }
}

/// Casts between a half type (`f16`, `bf16`) and `f32`/`f64` a block at a time through
/// the vector conversions of `kernel/half_convert.rs` (any strides); false, doing
/// nothing, when `(S, D)` is not such a pair. Decided at compile time: the other casts
/// compile to nothing here.
///
/// # Safety
/// As for [`cast_run`].
#[inline(always)]
unsafe fn half_cast_run<D: Element, S: Element>(
    p: [*mut u8; 2],
    s: [isize; 2],
    len: usize,
) -> bool {
    use half::{bf16, f16};
    let level = cpu::level();
    // SAFETY: forwarded to the caller; `level` is what the CPU has.
    unsafe {
        match (S::DTYPE, D::DTYPE) {
            (DType::F16, DType::F32 | DType::F64) => {
                widen_run::<f16>(level, p, s, len, D::DTYPE == DType::F64)
            }
            (DType::BF16, DType::F32 | DType::F64) => {
                widen_run::<bf16>(level, p, s, len, D::DTYPE == DType::F64)
            }
            (DType::F32 | DType::F64, DType::F16) => {
                narrow_run::<f16>(level, p, s, len, S::DTYPE == DType::F64)
            }
            (DType::F32 | DType::F64, DType::BF16) => {
                narrow_run::<bf16>(level, p, s, len, S::DTYPE == DType::F64)
            }
            _ => return false,
        }
    }
    true
}

/// The arguments of [`widen_run`] as an [`AtLevel`] computation.
struct WidenRun<H> {
    p: [*mut u8; 2],
    s: [isize; 2],
    len: usize,
    to_f64: bool,
    h: PhantomData<H>,
}

impl<H: HalfBlock> AtLevel for WidenRun<H> {
    #[inline(always)]
    unsafe fn run(&self, level: Level) {
        let &Self {
            p, s, len, to_f64, ..
        } = self;
        let (o, i) = (p[0], p[1] as *const u8);
        let mut tmp = [H::default(); BLOCK];
        let mut v = [0f32; BLOCK];
        let dsz: isize = if to_f64 { 8 } else { 4 };
        let mut k = 0;
        while k < len {
            let m = (len - k).min(BLOCK);
            let kk = k as isize;
            // SAFETY: elements `k..k + m` of both runs (`widen_run`'s caller).
            unsafe {
                let x = i.offset(kk * s[1]);
                let y = o.offset(kk * s[0]);
                // A contiguous float32 destination is widened into directly (through the
                // block array, bfloat16 `to(float32)` took 190 µs per 1M, float16 102),
                // unless the block's bytes meet the source's.
                let (xa, ya) = (x as usize, y as usize);
                let direct =
                    !to_f64 && s[0] == 4 && s[1] == 2 && (ya >= xa + 2 * m || xa >= ya + 4 * m);
                if direct {
                    H::widen(level, x, y.cast(), m);
                    k += m;
                    continue;
                }
                if s[1] == 2 {
                    H::widen(level, x, v.as_mut_ptr(), m);
                } else {
                    for (e, t) in tmp[..m].iter_mut().enumerate() {
                        *t = H::load(x.offset(e as isize * s[1]));
                    }
                    H::widen(level, tmp.as_ptr().cast(), v.as_mut_ptr(), m);
                }
                match (to_f64, s[0] == dsz) {
                    (false, true) => {
                        std::ptr::copy_nonoverlapping(v.as_ptr().cast::<u8>(), y, m * 4)
                    }
                    (false, false) => {
                        for (e, x) in v[..m].iter().enumerate() {
                            x.store(y.offset(e as isize * s[0]));
                        }
                    }
                    (true, true) => {
                        // Contiguous: a constant step, so the widening runs as vector code.
                        for (e, x) in v[..m].iter().enumerate() {
                            (*x as f64).store(y.add(e * 8));
                        }
                    }
                    (true, false) => {
                        for (e, x) in v[..m].iter().enumerate() {
                            (*x as f64).store(y.offset(e as isize * s[0]));
                        }
                    }
                }
            }
            k += m;
        }
    }
}

/// `len` halves `H` from `p[1]` widened to `f32` (or `f64` with `to_f64`) at `p[0]`,
/// at byte strides `s`, in blocks compiled for `level`.
///
/// # Safety
/// As for [`cast_run`]; `level` at most [`cpu::detected`].
#[inline(always)]
unsafe fn widen_run<H: HalfBlock>(
    level: Level,
    p: [*mut u8; 2],
    s: [isize; 2],
    len: usize,
    to_f64: bool,
) {
    let body = WidenRun::<H> {
        p,
        s,
        len,
        to_f64,
        h: PhantomData,
    };
    // SAFETY: the caller's contract.
    unsafe { run_at(level, &body) }
}

/// The arguments of [`narrow_run`] as an [`AtLevel`] computation.
struct NarrowRun<H> {
    p: [*mut u8; 2],
    s: [isize; 2],
    len: usize,
    from_f64: bool,
    h: PhantomData<H>,
}

impl<H: HalfBlock> AtLevel for NarrowRun<H> {
    #[inline(always)]
    unsafe fn run(&self, level: Level) {
        let &Self {
            p,
            s,
            len,
            from_f64,
            ..
        } = self;
        let (o, i) = (p[0], p[1] as *const u8);
        let mut tmp = [H::default(); BLOCK];
        let mut v = [0f32; BLOCK];
        let mut k = 0;
        while k < len {
            let m = (len - k).min(BLOCK);
            let kk = k as isize;
            // SAFETY: elements `k..k + m` of both runs (`narrow_run`'s caller).
            unsafe {
                let x = i.offset(kk * s[1]);
                if from_f64 && s == [2, 8] {
                    // Both contiguous: vector code (with the step a variable, float64
                    // `half()` took 5x PyTorch's time; see `narrow_f64_run`).
                    narrow_f64_run::<H>(level, x.cast(), o.offset(kk * 2), m, &mut v);
                    k += m;
                    continue;
                }
                let src: *const f32 = match (from_f64, s[1] == 4) {
                    (false, true) => x.cast(),
                    (false, false) => {
                        for (e, t) in v[..m].iter_mut().enumerate() {
                            *t = f32::load(x.offset(e as isize * s[1]));
                        }
                        v.as_ptr()
                    }
                    (true, _) if s[1] == 8 => {
                        // A contiguous input (a strided output): vector rounding.
                        f64_to_f32_odd_run(level, x.cast(), v.as_mut_ptr(), m);
                        v.as_ptr()
                    }
                    (true, _) => {
                        for (e, t) in v[..m].iter_mut().enumerate() {
                            *t = f64_to_f32_odd(f64::load(x.offset(e as isize * s[1])));
                        }
                        v.as_ptr()
                    }
                };
                let y = o.offset(kk * s[0]);
                if s[0] == 2 {
                    H::narrow(level, src, y, m);
                } else {
                    H::narrow(level, src, tmp.as_mut_ptr().cast(), m);
                    for (e, t) in tmp[..m].iter().enumerate() {
                        t.store(y.offset(e as isize * s[0]));
                    }
                }
            }
            k += m;
        }
    }
}

/// `len` `f32`s (or `f64`s with `from_f64`, correctly rounded through round-to-odd
/// `f32`s) from `p[1]` narrowed to halves `H` at `p[0]`, at byte strides `s`, in blocks
/// compiled for `level`.
///
/// # Safety
/// As for [`cast_run`]; `level` at most [`cpu::detected`].
#[inline(always)]
unsafe fn narrow_run<H: HalfBlock>(
    level: Level,
    p: [*mut u8; 2],
    s: [isize; 2],
    len: usize,
    from_f64: bool,
) {
    let body = NarrowRun::<H> {
        p,
        s,
        len,
        from_f64,
        h: PhantomData,
    };
    // SAFETY: the caller's contract.
    unsafe { run_at(level, &body) }
}

/// Runs the cast kernel over a copy loop.
///
/// # Safety
/// As for [`Loop::run`], with operand 0 of type `D` and operand 1 of type `S`.
unsafe fn run_cast<D: Element, S: Element>(lp: &Loop<2>) {
    // SAFETY: forwarded to the caller; `cast_run` accesses exactly the loop's runs.
    unsafe {
        lp.run(par_from(false, &[D::DTYPE, S::DTYPE]), |p, s, n| {
            cast_run::<D, S>(p, s, n)
        })
    }
}

/// Runs a same-type copy over a loop: cache tiles (transposes, permutes) move in register
/// blocks (see [`transpose`](super::transpose)), everything else run by run.
///
/// # Safety
/// As for [`Loop::run`], with both operands of type `T`, disjoint or identical.
unsafe fn run_copy<T: Element>(lp: &Loop<2>) {
    let row = |p, s, n| {
        // SAFETY: the engine (or `copy_tile`) passes runs inside the loop's operands.
        unsafe { cast_run::<T, T>(p, s, n) }
    };
    // SAFETY: forwarded to the caller; `cast_run` and `copy_tile` access exactly the runs
    // and tiles the loop hands them.
    unsafe {
        lp.run_tiles(PAR_MIN, row, |p, ts, ls, rows, len, stream| {
            super::transpose::copy_tile(p, ts, ls, (rows, len), size_of::<T>(), stream, row)
        })
    }
}

/// The CPU loops of `copy_`: `src` (broadcast to `dst`'s shape, cast to its dtype) into
/// `dst`, in place. The op layer (`Tensor::copy_`) has checked the shapes and that `dst`
/// is writable and free of self-overlap, and staged an `src` that partially overlaps it.
pub(crate) fn copy_loops(dst: &Tensor, src: &Tensor) -> Result<()> {
    let same_shape = dst.shape() == src.shape();
    let _g = plan::borrow_for_write("copy_", dst, [src])?;
    if same_shape && dst.dtype() == src.dtype() && dst.numel() <= SMALL_COPY {
        let walk: unsafe fn(&Tensor, &Tensor) = match dst.dtype().itemsize() {
            1 => walk_copy::<u8>,
            2 => walk_copy::<u16>,
            4 => walk_copy::<u32>,
            8 => walk_copy::<u64>,
            _ => walk_copy::<[u64; 2]>,
        };
        // SAFETY: both layouts lie inside their storages (L4), borrowed above; dst does
        // not overlap itself and src is disjoint from it, identical, or staged; `T` has
        // the operands' item size.
        unsafe { walk(dst, src) };
        return Ok(());
    }
    let target: Vec<i64> = dst.shape().iter().map(|&n| n as i64).collect();
    let src_view = src.layout().expand(&target)?;
    let lp = Loop::new(
        dst.shape(),
        [
            (
                dst.layout(),
                dst.dtype().itemsize(),
                dst.storage().data_ptr(),
            ),
            (&src_view, src.dtype().itemsize(), src.storage().data_ptr()),
        ],
    );
    let kernel: unsafe fn(&Loop<2>) = if dst.dtype() == src.dtype() {
        // Plain copies dispatch on the item size only: bytes are bytes.
        match dst.dtype().itemsize() {
            1 => run_copy::<u8>,
            2 => run_copy::<u16>,
            4 => run_copy::<u32>,
            8 => run_copy::<u64>,
            _ => run_copy::<crate::Complex64>,
        }
    } else {
        with_dtype!(dst.dtype(), D => with_dtype!(src.dtype(), S => run_cast::<D, S>))
    };
    // SAFETY: the loop's pointers come from layouts inside their storages (L4), borrowed
    // above (exclusive for dst, shared for src); dst does not overlap itself
    // (`check_write`) and src is disjoint from dst, identical to it, or staged; the kernel
    // matches the operands' item sizes.
    unsafe { kernel(&lp) };
    Ok(())
}

/// Elements up to which a same-dtype copy between two layouts of one shape walks the
/// elements directly ([`walk_copy`]), without the loop planner: the planner's set-up (simplify, sort,
/// coalesce, the tile decision) was most of a small copy's time (`t.T.contiguous()` of a
/// 4x4 tensor from Python: 910 ns against NumPy's 250).
const SMALL_COPY: usize = 1024;

/// Copies every element of `src` to the same coordinates of `dst` (same shape), as `T`.
///
/// # Safety
/// Both tensors' layouts lie inside their storages, which are borrowed by the caller
/// (dst exclusively); `T`'s size is the item size of both; dst does not overlap src
/// unless it is src.
unsafe fn walk_copy<T: Copy>(dst: &Tensor, src: &Tensor) {
    let n = dst.numel();
    let shape = dst.shape();
    let (ds, ss) = (dst.strides(), src.strides());
    let o = dst.storage().data_ptr().cast::<T>();
    let i = src.storage().data_ptr().cast::<T>().cast_const();
    let (mut po, mut pi) = (dst.offset() as isize, src.offset() as isize);
    let Some(last) = shape.len().checked_sub(1) else {
        // SAFETY: a 0-d tensor's one element is at its offset.
        unsafe { o.offset(po).write_unaligned(i.offset(pi).read_unaligned()) };
        return;
    };
    if n == 0 {
        return;
    }
    // The innermost dims that are one run in both layouts merge into one (a contiguous
    // clone is then one row); that row as a tight loop, or a byte copy where both
    // strides are 1, the outer dims walked as a counter.
    let (mut last, mut inner) = (last, shape[last]);
    let (di, si) = (ds[last], ss[last]);
    while last > 0 {
        let size = shape[last] as isize;
        let runs = |st: &[isize]| st[last].checked_mul(size) == Some(st[last - 1]);
        if !(runs(ds) && runs(ss)) {
            break;
        }
        last -= 1;
        inner *= shape[last];
    }
    let outer = &shape[..last];
    let mut at = [0usize; crate::tensor::MAX_NDIM];
    for _ in 0..n / inner {
        if di == 1 && si == 1 {
            // SAFETY: the row's `inner` elements lie inside both layouts; the two are
            // disjoint or identical (caller), which `copy` allows.
            unsafe {
                std::ptr::copy(
                    i.offset(pi).cast::<u8>(),
                    o.offset(po).cast::<u8>(),
                    inner * size_of::<T>(),
                )
            };
        } else {
            for k in 0..inner as isize {
                // SAFETY: `k < inner` keeps both indices on this row, inside both layouts.
                unsafe {
                    o.offset(po + k * di)
                        .write_unaligned(i.offset(pi + k * si).read_unaligned())
                };
            }
        }
        // Steps only within the shape, then rewinds by `(n-1)·stride`: both stay inside
        // the extent (L2), while a step past the end of a size-1 dim (whose stride may be
        // anything) could overflow.
        for d in (0..outer.len()).rev() {
            if at[d] + 1 < outer[d] {
                at[d] += 1;
                po += ds[d];
                pi += ss[d];
                break;
            }
            let back = outer[d] as isize - 1;
            po -= ds[d] * back;
            pi -= ss[d] * back;
            at[d] = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs of every 2nd, 3rd and 4th element (the constant-step path of `cast_run`) at
    /// every length remainder of the vector widths, from two starts, for each item size,
    /// against the index model `out[k] = src[start + step·k]`; also as the inner dim of
    /// a 2-d copy.
    #[test]
    fn stepped_runs_match_the_index_model() {
        use crate::dtype::DType;
        // The source's own values, read through a cast (a different code path).
        let values = |t: &Tensor| t.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap();
        let dtypes = [
            DType::U8,
            DType::I16,
            DType::F16,
            DType::BF16,
            DType::F32,
            DType::I64,
            DType::F64,
        ];
        for dt in dtypes {
            // Past SMALL_COPY elements (smaller copies are walked, not run through the
            // engine), every remainder modulo the vector widths.
            for len in (1025usize..1058).chain([2047, 4099]) {
                for (step, start) in [(2usize, 0usize), (2, 1), (3, 0), (3, 2), (4, 0), (4, 3)] {
                    let src = Tensor::arange(0, (step * len + step) as i64, 1, dt).unwrap();
                    let all = values(&src);
                    let v = src.slice(0, Some(start as i64), None, step as i64).unwrap();
                    let v = v.narrow(0, 0, len as i64).unwrap();
                    let got = values(&v.contiguous().unwrap());
                    let want: Vec<f64> = (0..len).map(|k| all[start + step * k]).collect();
                    assert_eq!(got, want, "{dt:?} len {len} step {step} start {start}");
                }
            }
            // Every other column of every other row of a 2-d tensor.
            let x = Tensor::arange(0, 6 * 802, 1, dt).unwrap();
            let all = values(&x);
            let x = x.view(&[6, 802]).unwrap();
            let v = x.slice(0, None, None, 2).unwrap();
            let v = v.slice(1, Some(1), None, 2).unwrap();
            let got = values(&v.contiguous().unwrap());
            let want: Vec<f64> = (0..3)
                .flat_map(|r| (0..401).map(move |c| (r, c)))
                .map(|(r, c)| all[2 * r * 802 + 1 + 2 * c])
                .collect();
            assert_eq!(got, want, "{dt:?} 2-d");
        }
    }

    /// Contiguous casts through `cast_run`, into an aligned output and one a byte off
    /// alignment, at lengths around the vector widths, against each value cast on its own.
    #[test]
    fn contiguous_cast_runs_match_each_value_cast() {
        fn check<D: Element, S: Element>(make: impl Fn(usize) -> S) {
            let (ds, ss) = (size_of::<D>(), size_of::<S>());
            for len in [0usize, 1, 3, 7, 8, 15, 16, 17, 31, 33, 64, 100] {
                let src: Vec<S> = (0..len).map(&make).collect();
                for at in [0usize, 1] {
                    let mut buf = vec![0u8; (len + 1) * ds];
                    let o = buf.as_mut_ptr().wrapping_add(at);
                    // SAFETY: `buf` holds `len` elements of `D` from `o`, `src` `len` of
                    // `S`; the two are disjoint.
                    unsafe {
                        cast_run::<D, S>(
                            [o, src.as_ptr() as *mut u8],
                            [ds as isize, ss as isize],
                            len,
                        )
                    };
                    for (k, v) in src.iter().enumerate() {
                        // SAFETY: element `k` of the output was written above.
                        let got = unsafe { D::load(o.add(k * ds)) };
                        let want = v.cast::<D>();
                        let same = got == want || (got != got && want != want);
                        assert!(
                            same,
                            "{:?} -> {:?} at {k} of {len}, offset {at}",
                            S::DTYPE,
                            D::DTYPE
                        );
                    }
                }
            }
        }
        check::<f64, i32>(|k| (k as i32 - 40) * 1_000_003);
        check::<f32, f64>(|k| {
            if k == 5 {
                f64::NAN
            } else {
                (k as f64 - 30.0) * 1.0e37
            }
        });
        check::<i32, f32>(|k| (k as f32 - 30.0) * 0.75e8);
        check::<u8, i64>(|k| (k as i64 - 50) * 77);
        check::<bool, f32>(|k| (k % 3) as f32);
        check::<f32, bool>(|k| k % 2 == 0);
        check::<i64, u8>(|k| (k * 41) as u8);
    }

    /// Small copies (the walk) of views whose inner dims form one run in both layouts,
    /// in part or not at all, through `clone_data` and `contiguous`, against the index
    /// model `value = offset + Σ index·stride` over an `arange` base.
    #[test]
    fn small_copies_merge_inner_runs() {
        use crate::dtype::DType;
        for dt in [DType::U8, DType::I16, DType::I32, DType::I64] {
            let base = Tensor::arange(0, 240, 1, dt).unwrap();
            let t = base.view(&[4, 6, 10]).unwrap();
            let views = [
                t.clone(),
                t.slice(0, None, None, 2).unwrap(),
                t.slice(2, Some(1), None, 2).unwrap(),
                t.narrow(1, 1, 4).unwrap(),
                t.narrow(2, 0, 9).unwrap(),
                t.permute(&[1, 0, 2]).unwrap(),
                t.permute(&[0, 2, 1]).unwrap(),
                t.flip(&[0]).unwrap(),
                t.flip(&[2]).unwrap(),
                t.narrow(0, 1, 1).unwrap().narrow(1, 2, 1).unwrap(),
            ];
            for v in &views {
                let (shape, strides) = (v.shape().to_vec(), v.strides().to_vec());
                let mut want = Vec::new();
                for a in 0..shape[0] {
                    for b in 0..shape[1] {
                        for c in 0..shape[2] {
                            let at = v.offset() as isize
                                + a as isize * strides[0]
                                + b as isize * strides[1]
                                + c as isize * strides[2];
                            want.push(at as i64);
                        }
                    }
                }
                let as_i64 = |x: &Tensor| x.to_dtype(DType::I64).unwrap().to_vec::<i64>().unwrap();
                assert_eq!(as_i64(&v.clone_data().unwrap()), want, "{dt:?} clone {v:?}");
                assert_eq!(
                    as_i64(&v.contiguous().unwrap()),
                    want,
                    "{dt:?} contiguous {v:?}"
                );
            }
        }
    }

    /// The small-copy walk reads all of an overlapping source before writing (staged, as
    /// the planned path does), both ways along a storage, and takes any strides.
    #[test]
    fn small_copies_stage_overlaps_and_walk_any_layout() {
        use crate::dtype::DType;
        for (to, from) in [(1i64, 0i64), (0, 1)] {
            let t = Tensor::arange(0, 10, 1, DType::I64).unwrap();
            let want: Vec<i64> = {
                let mut v: Vec<i64> = (0..10).collect();
                let s: Vec<i64> = v[from as usize..from as usize + 9].to_vec();
                v[to as usize..to as usize + 9].copy_from_slice(&s);
                v
            };
            let dst = t.slice(0, Some(to), Some(to + 9), 1).unwrap();
            let src = t.slice(0, Some(from), Some(from + 9), 1).unwrap();
            dst.copy_(&src).unwrap();
            assert_eq!(t.to_vec::<i64>().unwrap(), want, "to {to} from {from}");
        }
        let x = Tensor::arange(0, 42, 1, DType::I16).unwrap();
        let x = x.view(&[6, 7]).unwrap();
        let src = x.t().unwrap().flip(&[1]).unwrap();
        let src = src.slice(0, None, None, 2).unwrap();
        let got = src.contiguous().unwrap().to_vec::<i16>().unwrap();
        let mut want = Vec::new();
        for r in (0..7).step_by(2) {
            for c in (0..6).rev() {
                want.push((c * 7 + r) as i16);
            }
        }
        assert_eq!(got, want);
        let b = Tensor::arange(0, 3, 1, DType::F64).unwrap();
        let b = b.view(&[3, 1]).unwrap().expand(&[3, 4]).unwrap();
        let got = b.contiguous().unwrap().to_vec::<f64>().unwrap();
        assert_eq!(got, (0..12).map(|k| (k / 4) as f64).collect::<Vec<_>>());
    }

    /// `copy_bytes` against `copy_within` on one buffer: runs on both sides of its own
    /// loop's threshold, every alignment of source and destination within a 64-byte
    /// line, disjoint and overlapping (forwards and backwards) ranges.
    #[test]
    fn copy_bytes_matches_memmove() {
        let pattern: Vec<u8> = (0..2_200_000u32).map(|k| (k * 7 + k / 251) as u8).collect();
        // Past OWN_LOOP_MAX: back to memmove.
        let big = OWN_LOOP_MAX + 3;
        let mut got = pattern.clone();
        let base = got.as_mut_ptr();
        // SAFETY: both ranges lie inside the buffer and are disjoint.
        unsafe { copy_bytes(base.add(5), base.add(big + 64), big) };
        assert!(got[big + 64..2 * big + 64] == pattern[5..big + 5]);
        for n in [
            0,
            1,
            63,
            OWN_LOOP_MIN - 1,
            OWN_LOOP_MIN,
            OWN_LOOP_MIN + 65,
            9_001,
        ] {
            for (s, d) in [(0, 20_000), (3, 20_064), (17, 20_005), (40, 20_040)]
                .into_iter()
                .chain([(100, 100), (100, 137), (137, 100), (64, 64 + n / 2)])
            {
                let mut got = pattern.clone();
                let mut want = pattern.clone();
                let base = got.as_mut_ptr();
                // SAFETY: both ranges lie inside the buffer.
                unsafe { copy_bytes(base.add(s), base.add(d), n) };
                want.copy_within(s..s + n, d);
                assert!(got == want, "n {n}, src {s}, dst {d}");
            }
        }
    }
}
