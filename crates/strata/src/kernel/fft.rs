//! The CPU loops of the FFTs (`ops/fft.rs`, which decides sizes, dims, dtypes and scaling):
//! rows of contiguous buffers transformed through `rustfft` (complex to complex) and
//! `realfft` (real to complex and back, half the work), rows spread over the pool when
//! there is enough work.

use num_complex::Complex;
use realfft::RealFftPlanner;
use rustfft::num_traits::Zero;
use rustfft::{FftNum, FftPlanner};

use super::math::not_implemented;
use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// Elements (times log₂ of the length) from which rows are transformed on several threads.
const PAR_WORK: usize = 1 << 16;

fn parallel_for(n: usize, len: usize) -> bool {
    let log = (usize::BITS - len.leading_zeros()) as usize;
    n.saturating_mul(log.max(1)) >= PAR_WORK
}

/// Runs `f(out_rows, in_rows)` over matching chunks of whole rows (`out_len` and
/// `in_len` elements a row), on several threads when the work is large.
fn by_rows<A: Send, B: Sync>(
    out: &mut [A],
    out_len: usize,
    inp: &[B],
    in_len: usize,
    f: impl Fn(&mut [A], &[B]) -> Result<()> + Sync,
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
                .try_for_each(|o| f(o, &[]));
        }
        out.par_chunks_mut(per * out_len)
            .zip(inp.par_chunks(per * in_len))
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
    fn run<T: FftNum + Element>(t: &Tensor, len: usize, inverse: bool, scale: f64) -> Result<()>
    where
        Complex<T>: Element,
    {
        let mut data = t.write_slice::<Complex<T>>()?;
        if len == 0 || data.is_empty() {
            return Ok(());
        }
        let mut planner = FftPlanner::<T>::new();
        let fft = if inverse {
            planner.plan_fft_inverse(len)
        } else {
            planner.plan_fft_forward(len)
        };
        let unit: [Complex<T>; 0] = [];
        by_rows(&mut data, len, &unit, 0, |rows, _| {
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
/// contiguous real `inp` into the contiguous complex `out`, times `scale`.
pub(crate) fn r2c_rows(
    op: &'static str,
    out: &Tensor,
    inp: &Tensor,
    n: usize,
    scale: f64,
) -> Result<()> {
    fn run<T: FftNum + Element>(
        op: &'static str,
        out: &Tensor,
        inp: &Tensor,
        n: usize,
        scale: f64,
    ) -> Result<()>
    where
        Complex<T>: Element,
    {
        let src = inp.read_slice::<T>()?;
        let mut dst = out.write_slice::<Complex<T>>()?;
        if n == 0 || dst.is_empty() {
            return Ok(());
        }
        let r2c = RealFftPlanner::<T>::new().plan_fft_forward(n);
        let m = n / 2 + 1;
        by_rows(&mut dst, m, &src, n, |o, i| {
            let mut buf = r2c.make_input_vec();
            let mut scratch = r2c.make_scratch_vec();
            for (orow, irow) in o.chunks_mut(m).zip(i.chunks(n)) {
                buf.copy_from_slice(irow);
                r2c.process_with_scratch(&mut buf, orow, &mut scratch)
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
/// contiguous complex `inp` (rows of exactly `n/2 + 1`; the imaginary parts that a real
/// signal's transform cannot have — the first, and the last for even `n` — are ignored,
/// as NumPy and PyTorch do), into the contiguous real `out`, times `scale`.
pub(crate) fn c2r_rows(
    op: &'static str,
    out: &Tensor,
    inp: &Tensor,
    n: usize,
    scale: f64,
) -> Result<()> {
    fn run<T: FftNum + Element>(
        op: &'static str,
        out: &Tensor,
        inp: &Tensor,
        n: usize,
        scale: f64,
    ) -> Result<()>
    where
        Complex<T>: Element,
    {
        let src = inp.read_slice::<Complex<T>>()?;
        let mut dst = out.write_slice::<T>()?;
        if n == 0 || dst.is_empty() {
            return Ok(());
        }
        let c2r = RealFftPlanner::<T>::new().plan_fft_inverse(n);
        let m = n / 2 + 1;
        let s = <T as Element>::from_f64(scale);
        by_rows(&mut dst, n, &src, m, |o, i| {
            let mut buf = c2r.make_input_vec();
            let mut scratch = c2r.make_scratch_vec();
            for (orow, irow) in o.chunks_mut(n).zip(i.chunks(m)) {
                buf.copy_from_slice(irow);
                buf[0].im = T::zero();
                if n.is_multiple_of(2) {
                    buf[m - 1].im = T::zero();
                }
                c2r.process_with_scratch(&mut buf, orow, &mut scratch)
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
