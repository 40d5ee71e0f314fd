//! The CPU loops of the FFTs (`ops/fft.rs`, which decides sizes, dims, dtypes and scaling):
//! rows of contiguous buffers transformed through `rustfft` (complex to complex) and
//! `realfft` (real to complex and back, half the work), rows spread over the pool when
//! there is enough work.

use std::sync::{Mutex, OnceLock, TryLockError};

use num_complex::Complex;
use realfft::RealFftPlanner;
use rustfft::num_traits::Zero;
use rustfft::{FftNum, FftPlanner};

use super::math::not_implemented;
use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// The planners, one per element type, kept for the process: a planner caches each plan
/// it makes (twiddle factors, the chosen algorithm), which for a long transform costs as
/// much as running it; NumPy's pocketfft keeps its plans too.
trait Planners: FftNum + Element {
    fn complex() -> &'static Mutex<FftPlanner<Self>>;
    fn real() -> &'static Mutex<RealFftPlanner<Self>>;
}

macro_rules! planners {
    ($($t:ty),*) => {$(
        impl Planners for $t {
            fn complex() -> &'static Mutex<FftPlanner<$t>> {
                static P: OnceLock<Mutex<FftPlanner<$t>>> = OnceLock::new();
                P.get_or_init(|| Mutex::new(FftPlanner::new()))
            }
            fn real() -> &'static Mutex<RealFftPlanner<$t>> {
                static P: OnceLock<Mutex<RealFftPlanner<$t>>> = OnceLock::new();
                P.get_or_init(|| Mutex::new(RealFftPlanner::new()))
            }
        }
    )*};
}
planners!(f32, f64);

/// Runs `f` with the cached planner, or with a fresh one when another thread holds it:
/// never waits, so a fork while some thread plans cannot leave the child blocked (the
/// child plans afresh). A planner poisoned by a panic is still sound (its cache only
/// ever gains complete plans).
fn with_planner<P, R>(m: &Mutex<P>, fresh: impl FnOnce() -> P, f: impl FnOnce(&mut P) -> R) -> R {
    match m.try_lock() {
        Ok(mut p) => f(&mut p),
        Err(TryLockError::Poisoned(e)) => f(&mut e.into_inner()),
        Err(TryLockError::WouldBlock) => f(&mut fresh()),
    }
}

/// Elements (times log₂ of the length) from which rows are transformed on several threads.
const PAR_WORK: usize = 1 << 16;

fn parallel_for(n: usize, len: usize) -> bool {
    let log = (usize::BITS - len.leading_zeros()) as usize;
    n.saturating_mul(log.max(1)) >= PAR_WORK
}

/// Runs `f(out_rows, in_rows)` over matching chunks of whole rows (`out_len` and
/// `in_len` elements a row), on several threads when the work is large. The input rows
/// are handed over mutable: the real transforms use them as scratch.
fn by_rows<A: Send, B: Send>(
    out: &mut [A],
    out_len: usize,
    inp: &mut [B],
    in_len: usize,
    f: impl Fn(&mut [A], &mut [B]) -> Result<()> + Sync,
) -> Result<()> {
    let rows = out.len().checked_div(out_len).unwrap_or(0);
    if rows < 2 || !parallel_for(out.len().max(inp.len()), out_len.max(in_len)) {
        return f(out, inp);
    }
    crate::kernel::pool::parallel(|threads| {
        if threads < 2 {
            return f(out, inp);
        }
        use rayon::prelude::*;
        let per = rows.div_ceil(threads * 4).max(1);
        if in_len == 0 {
            return out
                .par_chunks_mut(per * out_len)
                .try_for_each(|o| f(o, &mut []));
        }
        out.par_chunks_mut(per * out_len)
            .zip(inp.par_chunks_mut(per * in_len))
            .try_for_each(|(o, i)| f(o, i))
    })
}

fn scale_all<T: FftNum + Element>(data: &mut [Complex<T>], scale: f64) {
    if scale != 1.0 {
        let s = <T as Element>::from_f64(scale);
        for z in data {
            *z = *z * s;
        }
    }
}

/// Transforms each row of `len` elements of the fresh contiguous complex tensor `t` in
/// place (inverse: `e^{+2πi…}`), then multiplies every element by `scale`.
pub(crate) fn c2c_rows(
    op: &'static str,
    t: &Tensor,
    len: usize,
    inverse: bool,
    scale: f64,
) -> Result<()> {
    fn run<T: Planners>(t: &Tensor, len: usize, inverse: bool, scale: f64) -> Result<()>
    where
        Complex<T>: Element,
    {
        let mut data = t.write_slice::<Complex<T>>()?;
        if len == 0 || data.is_empty() {
            return Ok(());
        }
        let fft = with_planner(T::complex(), FftPlanner::new, |p| {
            if inverse {
                p.plan_fft_inverse(len)
            } else {
                p.plan_fft_forward(len)
            }
        });
        let mut unit: [Complex<T>; 0] = [];
        by_rows(&mut data, len, &mut unit, 0, |rows, _| {
            let mut scratch = vec![Complex::<T>::zero(); fft.get_inplace_scratch_len()];
            fft.process_with_scratch(rows, &mut scratch);
            scale_all(rows, scale);
            Ok(())
        })
    }
    match t.dtype() {
        DType::C64 => run::<f32>(t, len, inverse, scale),
        DType::C128 => run::<f64>(t, len, inverse, scale),
        dt => Err(not_implemented(op, dt)),
    }
}

/// The first `n/2 + 1` coefficients of the transform of each row of `n` reals of the
/// fresh contiguous real `inp` (used as scratch) into the contiguous complex `out`, times
/// `scale`.
pub(crate) fn r2c_rows(
    op: &'static str,
    out: &Tensor,
    inp: &Tensor,
    n: usize,
    scale: f64,
) -> Result<()> {
    fn run<T: Planners>(
        op: &'static str,
        out: &Tensor,
        inp: &Tensor,
        n: usize,
        scale: f64,
    ) -> Result<()>
    where
        Complex<T>: Element,
    {
        let mut src = inp.write_slice::<T>()?;
        let mut dst = out.write_slice::<Complex<T>>()?;
        if n == 0 || dst.is_empty() {
            return Ok(());
        }
        let r2c = with_planner(T::real(), RealFftPlanner::new, |p| p.plan_fft_forward(n));
        let m = n / 2 + 1;
        by_rows(&mut dst, m, &mut src, n, |o, i| {
            let mut scratch = r2c.make_scratch_vec();
            for (orow, irow) in o.chunks_mut(m).zip(i.chunks_mut(n)) {
                r2c.process_with_scratch(irow, orow, &mut scratch)
                    .map_err(|e| Error::value(op, e.to_string()))?;
                scale_all(orow, scale);
            }
            Ok(())
        })
    }
    match inp.dtype() {
        DType::F32 => run::<f32>(op, out, inp, n, scale),
        DType::F64 => run::<f64>(op, out, inp, n, scale),
        dt => Err(not_implemented(op, dt)),
    }
}

/// The `n` reals whose transform's first `n/2 + 1` coefficients are each row of the
/// fresh contiguous complex `inp` (used as scratch; rows of exactly `n/2 + 1`; the imaginary parts that a real
/// signal's transform cannot have — the first, and the last for even `n` — are ignored,
/// as NumPy and PyTorch do), into the contiguous real `out`, times `scale`.
pub(crate) fn c2r_rows(
    op: &'static str,
    out: &Tensor,
    inp: &Tensor,
    n: usize,
    scale: f64,
) -> Result<()> {
    fn run<T: Planners>(
        op: &'static str,
        out: &Tensor,
        inp: &Tensor,
        n: usize,
        scale: f64,
    ) -> Result<()>
    where
        Complex<T>: Element,
    {
        let mut src = inp.write_slice::<Complex<T>>()?;
        let mut dst = out.write_slice::<T>()?;
        if n == 0 || dst.is_empty() {
            return Ok(());
        }
        let c2r = with_planner(T::real(), RealFftPlanner::new, |p| p.plan_fft_inverse(n));
        let m = n / 2 + 1;
        let s = <T as Element>::from_f64(scale);
        by_rows(&mut dst, n, &mut src, m, |o, i| {
            let mut scratch = c2r.make_scratch_vec();
            for (orow, irow) in o.chunks_mut(n).zip(i.chunks_mut(m)) {
                irow[0].im = T::zero();
                if n.is_multiple_of(2) {
                    irow[m - 1].im = T::zero();
                }
                c2r.process_with_scratch(irow, orow, &mut scratch)
                    .map_err(|e| Error::value(op, e.to_string()))?;
                if scale != 1.0 {
                    for x in orow.iter_mut() {
                        *x = *x * s;
                    }
                }
            }
            Ok(())
        })
    }
    match out.dtype() {
        DType::F32 => run::<f32>(op, out, inp, n, scale),
        DType::F64 => run::<f64>(op, out, inp, n, scale),
        dt => Err(not_implemented(op, dt)),
    }
}
