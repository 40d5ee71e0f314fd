//! Cumulative sums and products along one dim.
//!
//! Like PyTorch's CPU kernels, each line is accumulated in sequence in a wider type
//! (`i64` for integers and bool, `f64` for `f32` and `f64`, `f32` for `f16`/`bf16`).
//! When the scanned dim is the fastest in memory, each line is scanned on its own;
//! otherwise a block of lines along the fastest kept dim advances together
//! (`acc[j] ⊕= x[i, j]; out[i, j] = acc[j]`), which vectorises and streams.

use rayon::prelude::*;

use super::accumulators::{Num, Summable};
use super::geom::{count, in_bytes, out_bytes, sizes, Geom, Odometer};
use super::run::Shared;
use crate::dtype::Element;
use crate::kernel::engine::par_from;

/// Lines per vertical block.
const VBLOCK: usize = 1024;
/// Lines scanned together in horizontal mode.
const ILP: usize = 4;

/// Sum (`PROD = false`) or product, in the scan accumulator of `T`.
#[inline(always)]
fn step<T: Summable, const PROD: bool>(a: T::ScanAcc, x: T) -> T::ScanAcc {
    if PROD {
        a.mul(x.scan_acc())
    } else {
        a.add(x.scan_acc())
    }
}

/// Scans every line of `g.red` (one dim) for every index of `g.kept`.
///
/// # Safety
/// `inp` must be the base of a storage holding every input element `g` addresses, and
/// `out` valid for writes of every output element (a fresh tensor whose element strides
/// built `g`); layouts bounds-checked (L4) over live storages (S1) borrowed by the caller
/// (S4).
pub(crate) unsafe fn scan<T: Summable, const PROD: bool>(
    g: &Geom,
    inp: *const u8,
    out: *mut u8,
    parallel: bool,
) {
    let rn = g.red.first().map_or(1, |d| d.n);
    let total = count(&g.kept).saturating_mul(rn);
    let (inp, out) = (Shared(inp), Shared(out));
    // SAFETY: forwarded from the caller.
    let go = |threads: usize| unsafe { scan_in::<T, PROD>(g, inp.get(), out.get(), threads) };
    if parallel && total >= par_from(false, &[T::DTYPE]) {
        crate::kernel::pool::parallel(go)
    } else {
        go(1)
    }
}

/// [`scan`] on up to `threads` threads (1: serially, without calling rayon).
///
/// # Safety
/// As for [`scan`].
unsafe fn scan_in<T: Summable, const PROD: bool>(
    g: &Geom,
    inp: *const u8,
    out: *mut u8,
    threads: usize,
) {
    let isz = size_of::<T>();
    let osz = size_of::<T::Out>();
    let (rn, rsi, rso) = g.red.first().map_or((1, 0, 0), |d| {
        (d.n, d.si * isz as isize, d.so * osz as isize)
    });
    let init = if PROD {
        T::ScanAcc::ONE
    } else {
        T::ScanAcc::ZERO
    };
    let par = threads > 1;
    let in0 = Shared(inp.wrapping_offset(g.in_off * isz as isize));
    let out0 = Shared(out.wrapping_offset(g.out_off * osz as isize));
    if g.horizontal() {
        let shape = sizes(&g.kept);
        let si = in_bytes(&g.kept, isz);
        let so = out_bytes(&g.kept, osz);
        let nout = count(&g.kept);
        let range = |lo: usize, hi: usize| {
            let mut od = Odometer::<2>::new(&shape, [si.clone(), so.clone()], lo);
            let mut k = lo;
            // Lines in groups of `ILP`: independent chains hide the add latency.
            while k + ILP <= hi {
                let mut p = [in0.get(); ILP];
                let mut o = [out0.get(); ILP];
                for l in 0..ILP {
                    let [io, oo] = od.off;
                    p[l] = p[l].wrapping_offset(io);
                    o[l] = o[l].wrapping_offset(oo);
                    od.step();
                }
                let mut a = [init; ILP];
                for i in 0..rn as isize {
                    for l in 0..ILP {
                        // SAFETY: element `i` of line `l`, in the input and the output.
                        unsafe {
                            a[l] = step::<T, PROD>(a[l], T::load(p[l].offset(i * rsi)));
                            T::scan_out(a[l]).store(o[l].offset(i * rso));
                        }
                    }
                }
                k += ILP;
            }
            for _ in k..hi {
                let [io, oo] = od.off;
                let (p, o) = (
                    in0.get().wrapping_offset(io),
                    out0.get().wrapping_offset(oo),
                );
                let mut a = init;
                for i in 0..rn as isize {
                    // SAFETY: element `i` of this line, in the input and the output.
                    unsafe {
                        a = step::<T, PROD>(a, T::load(p.offset(i * rsi)));
                        T::scan_out(a).store(o.offset(i * rso));
                    }
                }
                od.step();
            }
        };
        if par && nout >= 2 {
            let per = nout.div_ceil(threads * 8);
            (0..nout.div_ceil(per))
                .into_par_iter()
                .for_each(|c| range(c * per, ((c + 1) * per).min(nout)));
        } else {
            range(0, nout);
        }
        return;
    }
    let Some(v) = g.kept.last() else { return };
    let (nv, sv, svo) = (v.n, v.si * isz as isize, v.so * osz as isize);
    let outer = &g.kept[..g.kept.len() - 1];
    let shape = sizes(outer);
    let si = in_bytes(outer, isz);
    let so = out_bytes(outer, osz);
    let nb = nv.div_ceil(VBLOCK);
    let jobs = count(outer) * nb;
    let job = |j: usize| {
        let (po, bi) = (j / nb, j % nb);
        let [io, oo] = Odometer::<2>::new(&shape, [si.clone(), so.clone()], po).off;
        let j0 = bi * VBLOCK;
        let len = VBLOCK.min(nv - j0);
        let p = in0.get().wrapping_offset(io + j0 as isize * sv);
        let o = out0.get().wrapping_offset(oo + j0 as isize * svo);
        let mut acc = vec![init; len];
        for i in 0..rn as isize {
            let (pi, oi) = (p.wrapping_offset(i * rsi), o.wrapping_offset(i * rso));
            for (jj, a) in acc.iter_mut().enumerate() {
                // SAFETY: element `jj` of row `i` of this block, input and output.
                unsafe {
                    *a = step::<T, PROD>(*a, T::load(pi.offset(jj as isize * sv)));
                    T::scan_out(*a).store(oi.offset(jj as isize * svo));
                }
            }
        }
    };
    if par && jobs > 1 {
        (0..jobs).into_par_iter().for_each(job);
    } else {
        (0..jobs).for_each(job);
    }
}
