//! Discrete Fourier transforms (`strata::fft`, PyTorch's `torch.fft` and NumPy's
//! `numpy.fft`): sizes, dims, dtypes and normalisation are decided here; the rows are
//! transformed by `kernel/fft.rs` (through `rustfft` and `realfft`).
//!
//! Each transform along one dim moves that dim last into one fresh contiguous buffer
//! (zero-padded or trimmed to `n`), transforms its rows, and moves it back (the result is
//! a view of that buffer). The n-dimensional transforms are one-dim transforms in turn.
//! Real input of integer or bool dtype computes in float32 (PyTorch's rule); half
//! precision is refused on the CPU, as in PyTorch.

use super::complex::on_cpu;
use crate::autograd::{needs_grad, no_grad, record1};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernel::plan::output_for;
use crate::layout::wrap_dim;
use crate::tensor::Tensor;

/// The normalisation of a transform pair (`norm=`): which direction is scaled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Norm {
    /// `"backward"` (the default): the inverse is scaled by `1/n`.
    Backward,
    /// `"ortho"`: both directions by `1/√n`.
    Ortho,
    /// `"forward"`: the forward transform is scaled by `1/n`.
    Forward,
}

impl Norm {
    /// Reads a `norm=` argument (`None` is `"backward"`).
    ///
    /// # Errors
    /// Another string (PyTorch's text).
    pub fn parse(op: &'static str, s: Option<&str>) -> Result<Norm> {
        Ok(match s {
            None | Some("backward") => Norm::Backward,
            Some("ortho") => Norm::Ortho,
            Some("forward") => Norm::Forward,
            Some(other) => {
                return Err(Error::value(
                    op,
                    format!("Invalid normalization mode: {other}"),
                ))
            }
        })
    }

    fn scale(self, n: usize, inverse: bool) -> f64 {
        match (self, inverse) {
            (Norm::Backward, false) | (Norm::Forward, true) => 1.0,
            (Norm::Backward, true) | (Norm::Forward, false) => 1.0 / n as f64,
            (Norm::Ortho, _) => 1.0 / (n as f64).sqrt(),
        }
    }

    /// The norm of the dual transform (`hfft` is an inverse real transform run forward).
    fn swapped(self) -> Norm {
        match self {
            Norm::Backward => Norm::Forward,
            Norm::Forward => Norm::Backward,
            Norm::Ortho => Norm::Ortho,
        }
    }
}

/// The real float dtype `t` computes in (integers and bool: float32).
fn real_dtype(op: &'static str, t: &Tensor) -> Result<DType> {
    match t.dtype() {
        DType::F32 | DType::F64 => Ok(t.dtype()),
        DType::F16 | DType::BF16 => Err(Error::dtype(
            op,
            format!("Unsupported dtype {}", t.dtype().legacy_name()),
        )),
        dt if dt.is_complex() => Err(Error::dtype(
            op,
            format!(
                "{op} expects a real input tensor, but got {}",
                dt.legacy_name()
            ),
        )),
        _ => Ok(DType::F32),
    }
}

/// The complex dtype `t` computes in.
fn complex_dtype(op: &'static str, t: &Tensor) -> Result<DType> {
    if t.is_complex() {
        return Ok(t.dtype());
    }
    let r = match t.dtype() {
        DType::F16 | DType::BF16 => {
            return Err(Error::dtype(
                op,
                format!("Unsupported dtype {}", t.dtype().legacy_name()),
            ))
        }
        DType::F64 => DType::F64,
        _ => DType::F32,
    };
    Ok(r.to_complex().unwrap_or(DType::C64))
}

/// The number of points along `dim`: `n`, else the input's size there.
fn points(op: &'static str, n: Option<i64>, default: usize) -> Result<usize> {
    match n {
        None if default >= 1 => Ok(default),
        None => Err(Error::value(
            op,
            format!("Invalid number of data points ({default}) specified"),
        )),
        Some(v) if v >= 1 => usize::try_from(v).map_err(|_| Error::overflow(op, "n")),
        Some(v) => Err(Error::value(
            op,
            format!("Invalid number of data points ({v}) specified"),
        )),
    }
}

/// `t` (of `dtype`) with `dim` moved last, its size there trimmed or zero-padded to `n`,
/// in a fresh contiguous tensor the kernels may write.
fn rows_of(t: &Tensor, dim: usize, n: usize, dtype: DType) -> Result<Tensor> {
    let d = dim as i64;
    let last = t.ndim() as i64 - 1;
    let have = t.shape()[dim];
    let x = t.movedim(&[d], &[last])?;
    let mut shape = x.shape().to_vec();
    shape[t.ndim() - 1] = n;
    if have >= n {
        // One copy (and cast) into a fresh row-major buffer, every element written.
        let out = output_for(&shape, dtype, &[])?;
        out.copy_(&x.narrow(last, 0, n as i64)?)?;
        return Ok(out);
    }
    let out = Tensor::zeros(&shape, dtype)?;
    out.narrow(last, 0, have as i64)?.copy_(&x)?;
    Ok(out)
}

fn check_dims(op: &'static str, t: &Tensor, dim: i64) -> Result<usize> {
    on_cpu(op, t)?;
    if t.ndim() == 0 {
        return Err(Error::index(
            op,
            format!("Dimension specified as {dim} but tensor has no dimensions"),
        ));
    }
    wrap_dim(op, dim, t.ndim())
}

/// A complex-to-complex transform along one dim.
fn c2c(
    op: &'static str,
    t: &Tensor,
    n: Option<i64>,
    dim: i64,
    norm: Norm,
    inverse: bool,
) -> Result<Tensor> {
    let d = check_dims(op, t, dim)?;
    let n = points(op, n, t.shape()[d])?;
    c2c_scaled(op, t, n, d, norm.scale(n, inverse), inverse)
}

/// [`c2c`] of `n` points along `d` scaled by `scale`, recorded for autograd: the adjoint of
/// a transform is the opposite transform with the same (real) scale, its result fitted
/// back to the input's size (the DFT matrix is symmetric, and conjugating it flips the
/// direction).
fn c2c_scaled(
    op: &'static str,
    t: &Tensor,
    n: usize,
    d: usize,
    scale: f64,
    inverse: bool,
) -> Result<Tensor> {
    let out = {
        let _off = no_grad();
        let rows = rows_of(&t.detach(), d, n, complex_dtype(op, t)?)?;
        crate::kernel::fft::c2c_rows(op, &rows, n, inverse, scale)?;
        rows.movedim(&[t.ndim() as i64 - 1], &[d as i64])?
    };
    if !needs_grad(&[t]) {
        return Ok(out);
    }
    let m = t.shape()[d];
    record1(
        "FftC2CBackward0",
        &[t],
        out,
        &[],
        Box::new(move |_saved, grads, _needs| {
            let g = c2c_scaled(op, &grads[0], n, d, scale, !inverse)?;
            Ok(vec![Some(fit(&g, d, m)?)])
        }),
    )
}

/// `g` with dim `d` trimmed or zero-padded to `size`: the adjoint of the fitting
/// [`rows_of`] does.
fn fit(g: &Tensor, d: usize, size: usize) -> Result<Tensor> {
    let have = g.shape()[d];
    if have >= size {
        return g.narrow(d as i64, 0, size as i64);
    }
    let mut pad = g.shape().to_vec();
    pad[d] = size - have;
    let zeros = Tensor::zeros_on(&pad, g.dtype(), g.device())?;
    Tensor::cat(&[g, &zeros], d as i64)
}

/// The real-input transform along one dim: the `n/2 + 1` non-negative frequencies.
fn r2c(op: &'static str, t: &Tensor, n: Option<i64>, dim: i64, norm: Norm) -> Result<Tensor> {
    let d = check_dims(op, t, dim)?;
    let n = points(op, n, t.shape()[d])?;
    let real = real_dtype(op, t)?;
    r2c_scaled(op, t, n, d, real, norm.scale(n, false))
}

/// [`r2c`] of `n` points along `d` (computed in `real`) scaled by `scale`, recorded for
/// autograd: `∂X_k/∂x_j = s·e^{−2πijk/n}`, so the gradient of `x` is the real part of the
/// inverse transform (same scale) of the output gradient zero-padded to `n` points.
fn r2c_scaled(
    op: &'static str,
    t: &Tensor,
    n: usize,
    d: usize,
    real: DType,
    scale: f64,
) -> Result<Tensor> {
    let out = {
        let _off = no_grad();
        let rows = rows_of(&t.detach(), d, n, real)?;
        let mut shape = rows.shape().to_vec();
        let last = shape.len() - 1;
        shape[last] = n / 2 + 1;
        let out = output_for(&shape, real.to_complex().unwrap_or(DType::C64), &[])?;
        crate::kernel::fft::r2c_rows(op, &out, &rows, n, scale)?;
        out.movedim(&[last as i64], &[d as i64])?
    };
    if !needs_grad(&[t]) {
        return Ok(out);
    }
    let m = t.shape()[d];
    record1(
        "FftR2CBackward0",
        &[t],
        out,
        &[],
        Box::new(move |_saved, grads, _needs| {
            let full = fit(&grads[0], d, n)?;
            let g = c2c_scaled(op, &full, n, d, scale, true)?.real()?;
            Ok(vec![Some(fit(&g, d, m)?)])
        }),
    )
}

/// The inverse of [`r2c`]: `n` reals (default `2·(m − 1)` for `m` input points).
fn c2r(op: &'static str, t: &Tensor, n: Option<i64>, dim: i64, norm: Norm) -> Result<Tensor> {
    let d = check_dims(op, t, dim)?;
    let m = t.shape()[d];
    let n = match n {
        Some(_) => points(op, n, m)?,
        None => points(op, Some(2 * (m as i64 - 1)), m)?,
    };
    let cdt = complex_dtype(op, t)?;
    c2r_scaled(op, t, n, d, cdt, norm.scale(n, true))
}

/// [`c2r`] of `n` points along `d` (input in `cdt`) scaled by `scale`, recorded for
/// autograd: each frequency `0 < k < n/2` stands for itself and its mirror image, so its
/// gradient is twice that bin of the forward real transform (same scale) of the output
/// gradient; the zero and Nyquist bins count once, and only their real parts are read
/// (PyTorch's `fft_c2r_backward`).
fn c2r_scaled(
    op: &'static str,
    t: &Tensor,
    n: usize,
    d: usize,
    cdt: DType,
    scale: f64,
) -> Result<Tensor> {
    let half = n / 2 + 1;
    let out = {
        let _off = no_grad();
        let rows = rows_of(&t.detach(), d, half, cdt)?;
        let mut shape = rows.shape().to_vec();
        let last = shape.len() - 1;
        shape[last] = n;
        let out = output_for(&shape, cdt.to_real(), &[])?;
        crate::kernel::fft::c2r_rows(op, &out, &rows, n, scale)?;
        out.movedim(&[last as i64], &[d as i64])?
    };
    if !needs_grad(&[t]) {
        return Ok(out);
    }
    let m = t.shape()[d];
    let nd = t.ndim();
    record1(
        "FftC2RBackward0",
        &[t],
        out,
        &[],
        Box::new(move |_saved, grads, _needs| {
            let g = r2c_scaled(op, &grads[0], n, d, grads[0].dtype(), scale)?;
            let twice = n - half;
            let weights: Vec<f64> = (0..half)
                .map(|k| if k >= 1 && k <= twice { 2.0 } else { 1.0 })
                .collect();
            let mut wshape = vec![1usize; nd];
            wshape[d] = half;
            let w = Tensor::from_vec(weights, &wshape)?.to_dtype(g.dtype().to_real())?;
            Ok(vec![Some(fit(&g.mul(&w)?, d, m)?)])
        }),
    )
}

/// The dims and sizes of an n-dimensional transform: `dims` (default: the last
/// `s.len()` dims, or all), each wrapped and distinct; `s` (default: the input's sizes;
/// `-1` keeps a size).
fn plan_nd(
    op: &'static str,
    t: &Tensor,
    s: Option<&[i64]>,
    dims: Option<&[i64]>,
) -> Result<Vec<(usize, Option<i64>)>> {
    let nd = t.ndim();
    if nd == 0 && (dims.is_some_and(|d| !d.is_empty()) || s.is_some_and(|s| !s.is_empty())) {
        return Err(Error::index(
            op,
            "the tensor has no dimensions to transform",
        ));
    }
    let dims: Vec<i64> = match (dims, s) {
        (Some(d), _) => d.to_vec(),
        (None, Some(s)) => {
            if s.len() > nd {
                return Err(Error::value(
                    op,
                    format!(
                        "Got shape with {} values but input tensor only has {nd} dimensions.",
                        s.len()
                    ),
                ));
            }
            ((nd - s.len()) as i64..nd as i64).collect()
        }
        (None, None) => (0..nd as i64).collect(),
    };
    if let Some(s) = s {
        if s.len() != dims.len() {
            return Err(Error::value(
                op,
                format!(
                    "When given, dim and shape arguments must have the same length, but got {} and {}",
                    dims.len(),
                    s.len()
                ),
            ));
        }
    }
    let mut seen = vec![false; nd];
    let mut out = Vec::with_capacity(dims.len());
    for (i, &d) in dims.iter().enumerate() {
        let w = wrap_dim(op, d, nd)?;
        if seen[w] {
            return Err(Error::value(op, "FFT dims must be unique"));
        }
        seen[w] = true;
        let n = s.map(|s| s[i]).filter(|&v| v != -1);
        out.push((w, n));
    }
    Ok(out)
}

/// The transforms of the `strata::fft` module (PyTorch's `torch.fft`); every function
/// takes PyTorch's arguments (`n`/`s`, `dim`, `norm`).
pub mod api {
    use super::*;

    /// The 1-D transform along `dim` (default -1 in PyTorch) of `n` points (the input
    /// trimmed or zero-padded to them; default its size).
    pub fn fft(t: &Tensor, n: Option<i64>, dim: i64, norm: Option<&str>) -> Result<Tensor> {
        let op = "fft_fft";
        c2c(op, t, n, dim, Norm::parse(op, norm)?, false)
    }

    /// The inverse of [`fft`].
    pub fn ifft(t: &Tensor, n: Option<i64>, dim: i64, norm: Option<&str>) -> Result<Tensor> {
        let op = "fft_ifft";
        c2c(op, t, n, dim, Norm::parse(op, norm)?, true)
    }

    /// The transform of real input: its `n/2 + 1` non-negative frequencies.
    pub fn rfft(t: &Tensor, n: Option<i64>, dim: i64, norm: Option<&str>) -> Result<Tensor> {
        let op = "rfft";
        r2c(op, t, n, dim, Norm::parse(op, norm)?)
    }

    /// The inverse of [`rfft`]: `n` real points (default `2·(m − 1)`).
    pub fn irfft(t: &Tensor, n: Option<i64>, dim: i64, norm: Option<&str>) -> Result<Tensor> {
        let op = "irfft";
        c2r(op, t, n, dim, Norm::parse(op, norm)?)
    }

    /// The transform of a Hermitian-symmetric signal given by its first half: `n` real
    /// points (default `2·(m − 1)`).
    pub fn hfft(t: &Tensor, n: Option<i64>, dim: i64, norm: Option<&str>) -> Result<Tensor> {
        let op = "hfft";
        let norm = Norm::parse(op, norm)?;
        c2r(op, &t.conj()?, n, dim, norm.swapped())
    }

    /// The inverse of [`hfft`]: the first `n/2 + 1` points of a real signal's inverse
    /// transform.
    pub fn ihfft(t: &Tensor, n: Option<i64>, dim: i64, norm: Option<&str>) -> Result<Tensor> {
        let op = "ihfft";
        let norm = Norm::parse(op, norm)?;
        r2c(op, t, n, dim, norm.swapped())?.conj()
    }

    /// The transform over `dims` (default: the last `s.len()` dims, or all) with sizes
    /// `s` (default: the input's).
    pub fn fftn(
        t: &Tensor,
        s: Option<&[i64]>,
        dims: Option<&[i64]>,
        norm: Option<&str>,
    ) -> Result<Tensor> {
        nd_c2c("fftn", t, s, dims, norm, false)
    }

    /// The inverse of [`fftn`].
    pub fn ifftn(
        t: &Tensor,
        s: Option<&[i64]>,
        dims: Option<&[i64]>,
        norm: Option<&str>,
    ) -> Result<Tensor> {
        nd_c2c("ifftn", t, s, dims, norm, true)
    }

    /// [`rfft`] over the last of `dims`, then [`fft`] over the others.
    pub fn rfftn(
        t: &Tensor,
        s: Option<&[i64]>,
        dims: Option<&[i64]>,
        norm: Option<&str>,
    ) -> Result<Tensor> {
        let op = "rfftn";
        let norm = Norm::parse(op, norm)?;
        on_cpu(op, t)?;
        let plan = plan_nd(op, t, s, dims)?;
        let Some((&(last, n_last), rest)) = plan.split_last() else {
            return Err(Error::value(op, "rfftn must transform at least one axis"));
        };
        let mut x = r2c(op, t, n_last, last as i64, norm)?;
        for &(d, n) in rest {
            x = c2c(op, &x, n, d as i64, norm, false)?;
        }
        Ok(x)
    }

    /// The inverse of [`rfftn`]: [`ifft`] over all but the last of `dims`, then
    /// [`irfft`] over it (default size `2·(m − 1)`).
    pub fn irfftn(
        t: &Tensor,
        s: Option<&[i64]>,
        dims: Option<&[i64]>,
        norm: Option<&str>,
    ) -> Result<Tensor> {
        let op = "irfftn";
        let norm = Norm::parse(op, norm)?;
        on_cpu(op, t)?;
        let plan = plan_nd(op, t, s, dims)?;
        let Some((&(last, n_last), rest)) = plan.split_last() else {
            return Err(Error::value(op, "irfftn must transform at least one axis"));
        };
        let mut x = t.clone();
        for &(d, n) in rest {
            x = c2c(op, &x, n, d as i64, norm, true)?;
        }
        c2r(op, &x, n_last, last as i64, norm)
    }

    fn nd_c2c(
        op: &'static str,
        t: &Tensor,
        s: Option<&[i64]>,
        dims: Option<&[i64]>,
        norm: Option<&str>,
        inverse: bool,
    ) -> Result<Tensor> {
        let norm = Norm::parse(op, norm)?;
        on_cpu(op, t)?;
        let plan = plan_nd(op, t, s, dims)?;
        if plan.is_empty() {
            // No dims: the input in the complex dtype (PyTorch returns a copy).
            return t.to_dtype(complex_dtype(op, t)?)?.contiguous_copy();
        }
        let mut x = t.clone();
        for &(d, n) in &plan {
            x = c2c(op, &x, n, d as i64, norm, inverse)?;
        }
        Ok(x)
    }

    /// The sample frequencies of an `n`-point transform with sample spacing `d`:
    /// `[0, 1, …, ⌈n/2⌉ − 1, −⌊n/2⌋, …, −1] / (d·n)`.
    pub fn fftfreq(n: i64, d: f64, dtype: DType) -> Result<Tensor> {
        let op = "fftfreq";
        let n = usize::try_from(n).map_err(|_| {
            Error::value(op, format!("Invalid number of data points ({n}) specified"))
        })?;
        if !dtype.is_float() {
            return Err(Error::dtype(
                op,
                format!("fftfreq expects a floating point dtype, got {dtype}"),
            ));
        }
        let k = n as i64;
        // The size is the caller's: allocated fallibly (a huge one is an error, not an
        // abort).
        let mut vals = crate::error::try_vec(op, n)?;
        vals.extend(
            (0..k)
                .map(|i| if i < (k + 1) / 2 { i } else { i - k })
                .map(|i| i as f64 / (d * k as f64)),
        );
        Tensor::from_vec(vals, &[n])?.to_dtype(dtype)
    }

    /// The non-negative sample frequencies of an `n`-point real transform:
    /// `[0, 1, …, ⌊n/2⌋] / (d·n)`.
    pub fn rfftfreq(n: i64, d: f64, dtype: DType) -> Result<Tensor> {
        let op = "rfftfreq";
        let n = usize::try_from(n).map_err(|_| {
            Error::value(op, format!("Invalid number of data points ({n}) specified"))
        })?;
        if !dtype.is_float() {
            return Err(Error::dtype(
                op,
                format!("rfftfreq expects a floating point dtype, got {dtype}"),
            ));
        }
        let mut vals = crate::error::try_vec(op, n / 2 + 1)?;
        vals.extend((0..=n / 2).map(|i| i as f64 / (d * n as f64)));
        Tensor::from_vec(vals, &[n / 2 + 1])?.to_dtype(dtype)
    }

    /// Rolls the zero frequency to the centre of `dims` (default all).
    pub fn fftshift(t: &Tensor, dims: Option<&[i64]>) -> Result<Tensor> {
        shift(t, dims, false)
    }

    /// The inverse of [`fftshift`].
    pub fn ifftshift(t: &Tensor, dims: Option<&[i64]>) -> Result<Tensor> {
        shift(t, dims, true)
    }

    fn shift(t: &Tensor, dims: Option<&[i64]>, inverse: bool) -> Result<Tensor> {
        let all: Vec<i64> = (0..t.ndim() as i64).collect();
        let dims = dims.unwrap_or(&all);
        let op = if inverse { "ifftshift" } else { "fftshift" };
        let mut shifts = Vec::with_capacity(dims.len());
        for &d in dims {
            let n = t.shape()[wrap_dim(op, d, t.ndim())?] as i64;
            shifts.push(if inverse { -(n / 2) } else { n / 2 });
        }
        if dims.is_empty() {
            return Ok(t.clone());
        }
        t.roll(&shifts, dims)
    }
}

#[cfg(test)]
mod tests {
    use super::api::*;
    use super::*;
    use crate::{Complex32, Complex64};

    #[test]
    fn impulse_and_constant_transform_to_each_other() {
        let x = Tensor::from_vec(vec![1.0f64, 0.0, 0.0, 0.0, 0.0], &[5]).unwrap();
        let y = fft(&x, None, -1, None)
            .unwrap()
            .to_vec::<Complex64>()
            .unwrap();
        assert_eq!(y, vec![Complex64::new(1.0, 0.0); 5]);
        let ones = Tensor::from_vec(vec![Complex32::new(1.0, 0.0); 4], &[4]).unwrap();
        let back = ifft(&ones, None, 0, Some("forward"))
            .unwrap()
            .to_vec::<Complex32>()
            .unwrap();
        assert_eq!(back[0], Complex32::new(4.0, 0.0));
        assert!(back[1..].iter().all(|z| z.norm() < 1e-6));
    }

    #[test]
    fn real_round_trip_pads_and_trims() {
        let x = Tensor::from_vec((0..6).map(f64::from).collect::<Vec<_>>(), &[2, 3]).unwrap();
        let spec = rfft(&x, Some(8), 1, Some("ortho")).unwrap();
        assert_eq!(spec.shape(), &[2, 5]);
        let back = irfft(&spec, Some(8), 1, Some("ortho")).unwrap();
        assert_eq!(back.shape(), &[2, 8]);
        let v = back.contiguous().unwrap().to_vec::<f64>().unwrap();
        let want = [
            0.0, 1.0, 2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 3.0, 4.0, 5.0, 0.0, 0.0, 0.0, 0.0, 0.0,
        ];
        assert!(
            v.iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-12),
            "{v:?}"
        );
        let short = fft(&x, Some(2), 1, None).unwrap();
        assert_eq!(short.shape(), &[2, 2]);
    }

    #[test]
    fn bad_arguments_are_errors() {
        let x = Tensor::zeros(&[4], DType::F32).unwrap();
        assert!(fft(&x, Some(0), -1, None).is_err());
        assert!(fft(&x, None, 1, None).is_err());
        assert!(Norm::parse("fft", Some("both")).is_err());
        assert!(rfft(&x.to_dtype(DType::C64).unwrap(), None, -1, None).is_err());
        assert!(fft(&Tensor::zeros(&[], DType::F32).unwrap(), None, -1, None).is_err());
        assert!(fftfreq(-2, 1.0, DType::F32).is_err());
    }
}
