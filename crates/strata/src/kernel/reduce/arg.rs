//! Arg-reductions over one dim: the extreme value and the index of its first occurrence
//! (`NaN` counts as the extreme, as in PyTorch), for `max(dim)`, `min(dim)`, `argmax`
//! and `argmin`.
//!
//! The result is exact whatever the split, so any parallel split gives the sequential
//! answer: blocks are combined left to right, a later block winning only when strictly
//! better.

use rayon::prelude::*;

use super::accumulators::{better_max, better_min, Summable};
use super::geom::{count, in_bytes, out_bytes, sizes, Geom, Odometer};
use super::run::Shared;
use crate::dtype::Element;
use crate::kernel::engine::par_from;

/// Elements per block of the two-pass scan of a contiguous run.
const SCAN_BLOCK: usize = 2048;
/// Elements per parallel block of one long run.
const BLOCK: usize = 1 << 16;
/// Output elements per vertical column block.
const VBLOCK: usize = 1024;

/// Output pointers: values (optional, of the input dtype) and int64 indices, both at
/// element 0 of fresh contiguous tensors of the same shape.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ArgOut {
    /// Values, if wanted.
    pub vals: Option<*mut u8>,
    /// Indices (`i64`).
    pub idx: *mut u8,
}

#[inline(always)]
fn better<T: PartialOrd, const MAX: bool>(cand: T, best: T) -> bool {
    if MAX {
        better_max(cand, best)
    } else {
        better_min(cand, best)
    }
}

/// Best of `n ≥ 1` elements from `p` at byte stride `s`, with its index.
///
/// Contiguous runs go block by block ([`scan_contig`], compiled for the CPU level):
/// a branch-free fold finds each block's extreme, and only a block that beats the best
/// so far is searched for its first occurrence (which is then the answer so far: the
/// sequential scan's result, exactly).
///
/// # Safety
/// The `n` elements must be readable.
#[inline(always)]
unsafe fn scan<T: Summable, const MAX: bool>(p: *const u8, n: usize, s: isize) -> (T, usize) {
    // SAFETY: element 0 and every `i·s`, `i < n`, are readable.
    unsafe {
        if s != size_of::<T>() as isize && n >= GATHER_MIN && size_of::<T>() <= 8 {
            return scan_gathered::<T, MAX>(p, n, s);
        }
        if s != size_of::<T>() as isize || n < CONTIG_MIN {
            return scan_plain::<T, MAX>(p, n, s);
        }
        scan_contig_on::<T, MAX>(crate::kernel::cpu::level(), p, n)
    }
}

/// Strided runs at least this long are gathered a block at a time for [`scan_contig`].
const GATHER_MIN: usize = 4 * GATHER_BLOCK;
/// Elements gathered at a time by [`scan_gathered`].
const GATHER_BLOCK: usize = 2048;

/// [`scan`] of a strided run: each block of [`GATHER_BLOCK`] elements is copied into a
/// contiguous buffer and scanned by the vector fold ([`scan_contig`]); the blocks' answers
/// combine in order (the first NaN, else the first block strictly best), so the result is
/// the sequential scan's. (The sequential scan compares and branches per element: twice
/// NumPy's time on `a[::2]`.)
///
/// # Safety
/// As for [`scan`]; elements of at most 8 bytes.
#[inline(always)]
unsafe fn scan_gathered<T: Summable, const MAX: bool>(
    p: *const u8,
    n: usize,
    s: isize,
) -> (T, usize) {
    let isz = size_of::<T>();
    let mut buf = [0u64; GATHER_BLOCK];
    let b = buf.as_mut_ptr().cast::<u8>();
    let level = crate::kernel::cpu::level();
    let mut best: (T, usize) = (
        // SAFETY: element 0 is readable (n ≥ 1).
        unsafe { T::load(p) },
        0,
    );
    let mut lo = 0;
    while lo < n {
        let len = GATHER_BLOCK.min(n - lo);
        // SAFETY: elements `lo..lo + len` of the run are readable (caller); the buffer
        // holds `GATHER_BLOCK` elements of up to 8 bytes.
        let (v, i) = unsafe {
            for i in 0..len {
                T::load(p.offset((lo + i) as isize * s)).store(b.add(i * isz));
            }
            if len >= CONTIG_MIN {
                scan_contig_on::<T, MAX>(level, b, len)
            } else {
                scan_plain::<T, MAX>(b, len, isz as isize)
            }
        };
        #[allow(clippy::eq_op)]
        if v != v {
            return (v, lo + i); // the first NaN: nothing later beats it
        }
        // Block 0's answer is element 0 or strictly better than it.
        if better::<T, MAX>(v, best.0) {
            best = (v, lo + i);
        }
        lo += len;
    }
    best
}

/// Runs shorter than this go through the plain scan (at least the widest [`lanes`]).
const CONTIG_MIN: usize = 64;

/// Accumulators of the block fold for elements of `T`: four 512-bit vectors of 4-byte
/// elements (with two, the fold was a latency-bound chain of dependent max steps), four
/// of 8-byte ones.
#[inline(always)]
const fn lanes<T>() -> usize {
    if size_of::<T>() <= 4 {
        64
    } else {
        32
    }
}

/// [`scan_contig`], compiled for `level`.
///
/// # Safety
/// As for [`scan_contig`]; `level` at most [`cpu::level`](crate::kernel::cpu::level).
#[inline(always)]
unsafe fn scan_contig_on<T: Summable, const MAX: bool>(
    level: crate::kernel::cpu::Level,
    p: *const u8,
    n: usize,
) -> (T, usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use crate::kernel::cpu::Level;
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn on_avx2<T: Summable, const MAX: bool>(p: *const u8, n: usize) -> (T, usize) {
            // SAFETY: the contract of `scan_contig_on`.
            unsafe { scan_contig::<T, MAX>(p, n) }
        }
        #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c")]
        unsafe fn on_avx512<T: Summable, const MAX: bool>(p: *const u8, n: usize) -> (T, usize) {
            // SAFETY: the contract of `scan_contig_on`.
            unsafe { scan_contig::<T, MAX>(p, n) }
        }
        match level {
            // SAFETY: the caller's contract; the CPU has the level's features.
            Level::Avx512 => return unsafe { on_avx512::<T, MAX>(p, n) },
            // SAFETY: as above.
            Level::Avx2 => return unsafe { on_avx2::<T, MAX>(p, n) },
            Level::Portable => {}
        }
    }
    let _ = level;
    // SAFETY: the caller's contract.
    unsafe { scan_contig::<T, MAX>(p, n) }
}

/// [`scan_contig`] of the `n` contiguous elements at each pointer `next` gives, each
/// answer handed to `put` with the pointer's output offset: one call compiled for the
/// CPU level for every run, not a dispatch and an out-of-line call per run (with the
/// changes to the fold, float32 `argmax(dim=1)` of (1000, 1000) 86 → 63 µs).
///
/// # Safety
/// `n ≥ CONTIG_MIN`; the `n` elements at every pointer `next` returns must be readable.
unsafe fn rows_contig_on<T, const MAX: bool, F, G>(n: usize, next: F, put: G)
where
    T: Summable,
    F: FnMut() -> Option<(*const u8, isize)>,
    G: FnMut(isize, T, usize),
{
    #[inline(always)]
    unsafe fn rows<T, const MAX: bool, F, G>(n: usize, mut next: F, mut put: G)
    where
        T: Summable,
        F: FnMut() -> Option<(*const u8, isize)>,
        G: FnMut(isize, T, usize),
    {
        while let Some((p, oe)) = next() {
            // SAFETY: the caller's contract.
            let (v, i) = unsafe { scan_contig::<T, MAX>(p, n) };
            put(oe, v, i);
        }
    }
    #[cfg(target_arch = "x86_64")]
    {
        use crate::kernel::cpu::Level;
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn on_avx2<T, const MAX: bool, F, G>(n: usize, next: F, put: G)
        where
            T: Summable,
            F: FnMut() -> Option<(*const u8, isize)>,
            G: FnMut(isize, T, usize),
        {
            // SAFETY: the contract of `rows_contig_on`.
            unsafe { rows::<T, MAX, F, G>(n, next, put) }
        }
        #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c")]
        unsafe fn on_avx512<T, const MAX: bool, F, G>(n: usize, next: F, put: G)
        where
            T: Summable,
            F: FnMut() -> Option<(*const u8, isize)>,
            G: FnMut(isize, T, usize),
        {
            // SAFETY: the contract of `rows_contig_on`.
            unsafe { rows::<T, MAX, F, G>(n, next, put) }
        }
        match crate::kernel::cpu::level() {
            // SAFETY: the caller's contract; the CPU has the level's features.
            Level::Avx512 => return unsafe { on_avx512::<T, MAX, F, G>(n, next, put) },
            // SAFETY: as above.
            Level::Avx2 => return unsafe { on_avx2::<T, MAX, F, G>(n, next, put) },
            Level::Portable => {}
        }
    }
    // SAFETY: the caller's contract.
    unsafe { rows::<T, MAX, F, G>(n, next, put) }
}

/// Elements per sub-block of [`block_extreme`] (a multiple of every [`lanes`]).
const SUB: usize = 256;

/// The best of `a`'s lanes, by halves (a tree of vector max/min steps; a sequential fold
/// of the lanes is a chain of `L` dependent compares).
#[inline(always)]
fn lanes_best<T: Summable, const MAX: bool, const L: usize>(mut a: [T; L]) -> T {
    let mut w = L;
    while w > 1 {
        w /= 2;
        for l in 0..w {
            let t = if MAX {
                a[l + w] > a[l]
            } else {
                a[l + w] < a[l]
            };
            a[l] = if t { a[l + w] } else { a[l] };
        }
    }
    a[0]
}

/// The extreme `m` of `len` (`L ≤ len ≤ SCAN_BLOCK`) contiguous elements from `q` by a
/// branch-free fold into `L` accumulators (NaNs skipped), whether any element is NaN, and
/// where the first element equal to `m` can start: the accumulators after each [`SUB`]
/// elements are kept, and the first sub-block after which one of them equals `m` holds
/// `m`'s first occurrence (for rising data, that saves searching the whole block again:
/// argmax of 1M ascending float32 read every block twice). A last part shorter than `L`
/// is folded as the last `L` elements (the extreme of elements seen twice is the same),
/// not one by one.
///
/// NaNs are flagged by a second set of accumulators of the element type that keep the
/// last NaN seen (a select of two values of the element's width, so the loop vectorises;
/// a `bool` flag per lane would not).
///
/// # Safety
/// The `len` elements must be readable.
#[inline(always)]
unsafe fn block_extreme<T: Summable, const MAX: bool, const L: usize>(
    q: *const u8,
    len: usize,
) -> (T, bool, usize) {
    debug_assert!((L..=SCAN_BLOCK).contains(&len));
    let isz = size_of::<T>();
    let init = if MAX { T::lowest() } else { T::highest() };
    let mut acc = [init; L];
    let mut nan = [init; L];
    let nsub = len.div_ceil(SUB);
    // Only the first `nsub` are written, then read (left uninitialised: zeroing 2 KiB
    // per call shows in `argmax(dim=1)` of short rows).
    let mut prefix = [const { std::mem::MaybeUninit::<[T; L]>::uninit() }; SCAN_BLOCK / SUB];
    let fold = |at: usize, acc: &mut [T; L], nan: &mut [T; L]| {
        for k in 0..L {
            // SAFETY: `at + L ≤ len` at every call below (caller's contract).
            let x = unsafe { T::load(q.add((at + k) * isz)) };
            // `x > a` is false for a NaN `x`: NaNs are skipped here and flagged.
            let t = if MAX { x > acc[k] } else { x < acc[k] };
            acc[k] = if t { x } else { acc[k] };
            #[allow(clippy::eq_op)]
            let is_nan = x != x;
            nan[k] = if is_nan { x } else { nan[k] };
        }
    };
    let mut i = 0;
    for slot in prefix.iter_mut().take(nsub) {
        let end = (i + SUB).min(len);
        while i + L <= end {
            fold(i, &mut acc, &mut nan);
            i += L;
        }
        if i < end {
            // Only in the last sub-block: `end == len ≥ L`.
            fold(len - L, &mut acc, &mut nan);
            i = end;
        }
        slot.write(acc);
    }
    let m = lanes_best::<T, MAX, L>(acc);
    #[allow(clippy::eq_op)]
    let any_nan = nan.iter().fold(false, |a, &b| a | (b != b));
    // (Once a sub-block's accumulators hold `m`, every later one's do: a lane only ever
    // moves to a strictly better value. A bisection over them measured slower than this
    // scan on random rows: its branches mispredict.)
    let mut start = 0;
    for (s, slot) in prefix.iter().take(nsub).enumerate() {
        // SAFETY: the first `nsub` slots were written above.
        let v = unsafe { slot.assume_init_ref() };
        let mut hit = false;
        for &x in v {
            hit |= x == m;
        }
        if hit {
            start = s * SUB;
            break;
        }
    }
    (m, any_nan, start)
}

/// The position of the first of `len` contiguous elements from `q` equal to `m`, or
/// `len`: 32 elements at a time tested together (a branch-free compare that vectorises),
/// then the group that holds it compared into a bit mask, the hit its lowest set bit.
///
/// # Safety
/// The `len` elements must be readable.
#[inline(always)]
unsafe fn find_first_eq<T: Summable>(q: *const u8, len: usize, m: T) -> usize {
    let isz = size_of::<T>();
    let mut i = 0;
    // SAFETY: every element read is one of the `len` (caller's contract).
    unsafe {
        while i + 32 <= len {
            let mut any = false;
            for k in 0..32 {
                any |= T::load(q.add((i + k) * isz)) == m;
            }
            if any {
                // The bit mask only for the group that holds it: built in a loop, it
                // compiles to an OR-reduction of shifted lanes, several times the cost
                // of the compare and test above.
                let mut bits = 0u32;
                for k in 0..32 {
                    bits |= u32::from(T::load(q.add((i + k) * isz)) == m) << k;
                }
                return i + bits.trailing_zeros() as usize;
            }
            i += 32;
        }
        while i < len {
            if T::load(q.add(i * isz)) == m {
                return i;
            }
            i += 1;
        }
    }
    len
}

/// The best of `n ≥ CONTIG_MIN` contiguous elements and the index of its first
/// occurrence, block by block: a block with a NaN ends the scan at its first NaN (a NaN
/// wins and no later element beats it); the last block whose extreme was strictly better
/// than the best before it is searched, at the end, for the extreme's first occurrence.
/// Exactly the sequential scan's answer.
///
/// # Safety
/// The `n` elements from `p` must be readable.
#[inline(always)]
unsafe fn scan_contig<T: Summable, const MAX: bool>(p: *const u8, n: usize) -> (T, usize) {
    let isz = size_of::<T>();
    let l = lanes::<T>();
    debug_assert!(n >= l);
    // SAFETY: every element read is one of the `n` (caller's contract).
    unsafe {
        let (mut best, mut bi) = (T::load(p), 0);
        // The block holding the best so far, if not element 0's: `(lo, len, start)`.
        let mut win = None;
        let mut lo = 0;
        while lo < n {
            let mut len = SCAN_BLOCK.min(n - lo);
            if (1..l).contains(&(n - lo - len)) {
                // Leave the last block at least `l` elements.
                len -= l;
            }
            let q = p.add(lo * isz);
            let (m, nan, start) = if l == 64 {
                block_extreme::<T, MAX, 64>(q, len)
            } else {
                block_extreme::<T, MAX, 32>(q, len)
            };
            if nan {
                for i in 0..len {
                    let x = T::load(q.add(i * isz));
                    #[allow(clippy::eq_op)]
                    if x != x {
                        return (x, lo + i);
                    }
                }
            }
            let t = if MAX { m > best } else { m < best };
            if t {
                // Searched once, at the end: a later block replaces this one only with
                // a strictly better extreme (on ascending data every block is better;
                // searching each cost argmax of 1M float32 ~10%).
                best = m;
                win = Some((lo, len, start));
            }
            lo += len;
        }
        if let Some((lo, len, start)) = win {
            // `best` is one of the block's elements (not NaN: no NaN in the block), the
            // first of them at `start` or later.
            let q = p.add(lo * isz);
            let i = start + find_first_eq::<T>(q.add(start * isz), len - start, best);
            if i >= len {
                // Not reached (`best` is in the block); the sequential scan if it were.
                return scan_plain::<T, MAX>(p, n, isz as isize);
            }
            best = T::load(q.add(i * isz));
            bi = lo + i;
        }
        (best, bi)
    }
}

/// The sequential scan.
///
/// # Safety
/// As for [`scan`].
#[inline(always)]
unsafe fn scan_plain<T: Summable, const MAX: bool>(p: *const u8, n: usize, s: isize) -> (T, usize) {
    // SAFETY: element 0 and every `i·s`, `i < n`, are readable.
    unsafe {
        let mut best = T::load(p);
        let mut bi = 0;
        for i in 1..n {
            let v = T::load(p.offset(i as isize * s));
            if better::<T, MAX>(v, best) {
                best = v;
                bi = i;
            }
        }
        (best, bi)
    }
}

/// Best of a long run, in parallel blocks when allowed.
///
/// # Safety
/// As for [`scan`].
unsafe fn scan_run<T: Summable, const MAX: bool>(
    p: *const u8,
    n: usize,
    s: isize,
    par: bool,
) -> (T, usize) {
    if !par || n < 2 * BLOCK {
        // SAFETY: forwarded.
        return unsafe { scan::<T, MAX>(p, n, s) };
    }
    let base = Shared(p);
    let parts: Vec<(T, usize)> = (0..n.div_ceil(BLOCK))
        .into_par_iter()
        .map(|b| {
            let lo = b * BLOCK;
            let len = BLOCK.min(n - lo);
            // SAFETY: a block of the run.
            let (v, i) = unsafe { scan::<T, MAX>(base.get().offset(lo as isize * s), len, s) };
            (v, i + lo)
        })
        .collect();
    let mut best = parts[0];
    for &c in &parts[1..] {
        if better::<T, MAX>(c.0, best.0) {
            best = c;
        }
    }
    best
}

/// Writes, for every output element of `g.kept`, the best of its `g.red` elements (at
/// most one reduced dim) and that element's index along the dim.
///
/// # Safety
/// `inp` must be the base of a storage holding every input element `g` addresses and
/// the output pointers valid for every output element it addresses (bounds-checked
/// layouts, L4, of live storages, S1, borrowed by the caller, S4); the outputs are fresh.
pub(crate) unsafe fn arg_fold<T: Summable, const MAX: bool>(
    g: &Geom,
    inp: *const u8,
    out: ArgOut,
    parallel: bool,
) {
    let rn = g.red.first().map_or(1, |d| d.n);
    let total = count(&g.kept).saturating_mul(rn);
    let (inp, out) = (Shared(inp), Shared(out));
    // SAFETY: forwarded from the caller.
    let go = |threads: usize| unsafe { arg_in::<T, MAX>(g, inp.get(), out.get(), threads) };
    if parallel && total >= par_from(false, &[T::DTYPE]) {
        crate::kernel::pool::parallel(go)
    } else {
        go(1)
    }
}

/// [`arg_fold`] on up to `threads` threads (1: serially, without calling rayon).
///
/// # Safety
/// As for [`arg_fold`].
unsafe fn arg_in<T: Summable, const MAX: bool>(
    g: &Geom,
    inp: *const u8,
    out: ArgOut,
    threads: usize,
) {
    debug_assert!(g.red.len() <= 1);
    let isz = size_of::<T>();
    let (rn, rs) = g.red.first().map_or((1, 0), |d| (d.n, d.si * isz as isize));
    let par = threads > 1;
    let in0 = Shared(inp.wrapping_offset(g.in_off * isz as isize));
    let vals0 = Shared(
        out.vals
            .map(|v| v.wrapping_offset(g.out_off * isz as isize)),
    );
    let idx0 = Shared(out.idx.wrapping_offset(g.out_off * 8));
    let put = |oe: isize, v: T, i: usize| {
        // SAFETY: output element `oe` of the fresh outputs; each is written by one job.
        unsafe {
            if let Some(vp) = vals0.get() {
                v.store(vp.offset(oe * isz as isize));
            }
            (i as i64).store(idx0.get().offset(oe * 8));
        }
    };
    if g.horizontal() {
        let shape = sizes(&g.kept);
        let si = in_bytes(&g.kept, isz);
        let so = out_bytes(&g.kept, 1);
        let nout = count(&g.kept);
        let range = |lo: usize, hi: usize, inner: bool| {
            let mut od = Odometer::<2>::new(&shape, [si.clone(), so.clone()], lo);
            if rs == isz as isize && rn >= CONTIG_MIN && (!inner || rn < 2 * BLOCK) {
                // Contiguous runs: one call compiled for the CPU level for all of them.
                let mut left = hi - lo;
                let next = || {
                    if left == 0 {
                        return None;
                    }
                    left -= 1;
                    let [io, oe] = od.off;
                    od.step();
                    Some((in0.get().wrapping_offset(io), oe))
                };
                // SAFETY: the runs of outputs `lo..hi` (caller's contract).
                unsafe { rows_contig_on::<T, MAX, _, _>(rn, next, put) };
                return;
            }
            for _ in lo..hi {
                let [io, oe] = od.off;
                // SAFETY: the run of output `oe` (caller's contract).
                let (v, i) = unsafe { scan_run::<T, MAX>(in0.get().offset(io), rn, rs, inner) };
                put(oe, v, i);
                od.step();
            }
        };
        if par && nout >= 2 * threads {
            let per = nout.div_ceil(threads * 8);
            (0..nout.div_ceil(per))
                .into_par_iter()
                .for_each(|c| range(c * per, ((c + 1) * per).min(nout), false));
        } else {
            range(0, nout, par);
        }
        return;
    }
    // Vertical: the fastest kept dim streams, the reduced dim is walked row by row.
    let Some(v) = g.kept.last() else { return };
    let (nv, sv, svo) = (v.n, v.si * isz as isize, v.so);
    let outer = &g.kept[..g.kept.len() - 1];
    let shape = sizes(outer);
    let si = in_bytes(outer, isz);
    let so = out_bytes(outer, 1);
    let nb = nv.div_ceil(VBLOCK);
    let level = crate::kernel::cpu::level();
    let jobs = count(outer) * nb;
    let job = |j: usize| {
        let (po, bi) = (j / nb, j % nb);
        let [io, oe] = Odometer::<2>::new(&shape, [si.clone(), so.clone()], po).off;
        let j0 = bi * VBLOCK;
        let len = VBLOCK.min(nv - j0);
        let base = in0.get().wrapping_offset(io + j0 as isize * sv);
        let mut best: Vec<T> = (0..len)
            // SAFETY: row 0 of this block.
            .map(|jj| unsafe { T::load(base.offset(jj as isize * sv)) })
            .collect();
        // Row indices as u32 (the same lane width as f32 values, so the selects
        // vectorise); a dim longer than u32::MAX falls back to usize.
        if rn <= u32::MAX as usize {
            let mut idx = vec![0u32; len];
            // SAFETY: the rows of this block (caller's contract).
            unsafe { column_best_on::<T, MAX, u32>(level, base, sv, rs, rn, &mut best, &mut idx) };
            for jj in 0..len {
                put(oe + (j0 + jj) as isize * svo, best[jj], idx[jj] as usize);
            }
        } else {
            let mut idx = vec![0usize; len];
            // SAFETY: as above.
            unsafe {
                column_best_on::<T, MAX, usize>(level, base, sv, rs, rn, &mut best, &mut idx)
            };
            for jj in 0..len {
                put(oe + (j0 + jj) as isize * svo, best[jj], idx[jj]);
            }
        }
    };
    if par && jobs > 1 {
        (0..jobs).into_par_iter().for_each(job);
    } else {
        (0..jobs).for_each(job);
    }
}

/// A row index type for [`column_best`].
trait RowIndex: Copy + Send {
    fn from_row(r: usize) -> Self;
}
impl RowIndex for u32 {
    #[inline(always)]
    fn from_row(r: usize) -> Self {
        r as u32
    }
}
impl RowIndex for usize {
    #[inline(always)]
    fn from_row(r: usize) -> Self {
        r
    }
}

/// [`column_best`], compiled for `level`.
///
/// # Safety
/// As for [`column_best`]; `level` at most [`cpu::level`](crate::kernel::cpu::level).
#[inline(always)]
unsafe fn column_best_on<T: Summable, const MAX: bool, I: RowIndex>(
    level: crate::kernel::cpu::Level,
    base: *const u8,
    sv: isize,
    rs: isize,
    rn: usize,
    best: &mut [T],
    idx: &mut [I],
) {
    #[cfg(target_arch = "x86_64")]
    {
        use crate::kernel::cpu::Level;
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn on_avx2<T: Summable, const MAX: bool, I: RowIndex>(
            base: *const u8,
            sv: isize,
            rs: isize,
            rn: usize,
            best: &mut [T],
            idx: &mut [I],
        ) {
            // SAFETY: the contract of `column_best_on`.
            unsafe { column_best::<T, MAX, I>(base, sv, rs, rn, best, idx) }
        }
        #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c")]
        unsafe fn on_avx512<T: Summable, const MAX: bool, I: RowIndex>(
            base: *const u8,
            sv: isize,
            rs: isize,
            rn: usize,
            best: &mut [T],
            idx: &mut [I],
        ) {
            // SAFETY: the contract of `column_best_on`.
            unsafe { column_best::<T, MAX, I>(base, sv, rs, rn, best, idx) }
        }
        match level {
            // SAFETY: the caller's contract; the CPU has the level's features.
            Level::Avx512 => return unsafe { on_avx512::<T, MAX, I>(base, sv, rs, rn, best, idx) },
            // SAFETY: as above.
            Level::Avx2 => return unsafe { on_avx2::<T, MAX, I>(base, sv, rs, rn, best, idx) },
            Level::Portable => {}
        }
    }
    let _ = level;
    // SAFETY: the caller's contract.
    unsafe { column_best::<T, MAX, I>(base, sv, rs, rn, best, idx) }
}

/// Updates `best`/`idx` (initialised from row 0) with rows `1..rn` of a block: row `r`
/// holds `best.len()` elements from `base + r·rs` at byte stride `sv`. Rows go in order,
/// so the first occurrence wins.
///
/// # Safety
/// Every such element must be readable.
#[inline(always)]
unsafe fn column_best<T: Summable, const MAX: bool, I: RowIndex>(
    base: *const u8,
    sv: isize,
    rs: isize,
    rn: usize,
    best: &mut [T],
    idx: &mut [I],
) {
    let step = |b: &mut T, ix: &mut I, x: T, r: usize| {
        // Branch-free, so the column loop vectorises.
        let t = better::<T, MAX>(x, *b);
        *b = if t { x } else { *b };
        *ix = if t { I::from_row(r) } else { *ix };
    };
    let isz = size_of::<T>();
    for r in 1..rn {
        let row = base.wrapping_offset(r as isize * rs);
        if sv == isz as isize {
            for (jj, (b, ix)) in best.iter_mut().zip(idx.iter_mut()).enumerate() {
                // SAFETY: element `jj` of row `r` (caller's contract).
                let x = unsafe { T::load(row.add(jj * isz)) };
                step(b, ix, x, r);
            }
        } else {
            for (jj, (b, ix)) in best.iter_mut().zip(idx.iter_mut()).enumerate() {
                // SAFETY: element `jj` of row `r` (caller's contract).
                let x = unsafe { T::load(row.offset(jj as isize * sv)) };
                step(b, ix, x, r);
            }
        }
    }
}
