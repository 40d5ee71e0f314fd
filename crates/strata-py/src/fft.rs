//! The native functions behind `strata.fft` (the core's `ops/fft.rs`, `strata::fft`);
//! `python/strata/fft.py` gives them PyTorch's `torch.fft` signatures.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyAny;
use strata::{fft, Tensor};

use crate::compute::{nogil, wrap};
use crate::convert::int_list;
use crate::dtype::opt_dtype;
use crate::tensor::{tensor_arg, PyTensor};

/// Sizes or dims given as an int or a sequence of ints; `None` for `None`.
fn ints(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Vec<i64>>> {
    match obj.filter(|o| !o.is_none()) {
        None => Ok(None),
        Some(o) => match o.extract::<i64>() {
            Ok(v) => Ok(Some(vec![v])),
            Err(_) => int_list(o).map(Some),
        },
    }
}

/// A one-dim transform: `kind` is `fft`, `ifft`, `rfft`, `irfft`, `hfft` or `ihfft`.
#[pyfunction]
#[pyo3(signature = (kind, input, n, dim, norm))]
fn _fft_1d(
    py: Python<'_>,
    kind: &str,
    input: &Bound<'_, PyAny>,
    n: Option<i64>,
    dim: i64,
    norm: Option<String>,
) -> PyResult<PyTensor> {
    let f = match kind {
        "fft" => fft::fft,
        "ifft" => fft::ifft,
        "rfft" => fft::rfft,
        "irfft" => fft::irfft,
        "hfft" => fft::hfft,
        "ihfft" => fft::ihfft,
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown transform {other:?}"
            )))
        }
    };
    let t = tensor_arg(input)?;
    let work = t.numel().saturating_mul(8);
    wrap(nogil(py, work, move || f(&t, n, dim, norm.as_deref())))
}

/// An n-dim transform: `kind` is `fftn`, `ifftn`, `rfftn` or `irfftn`.
#[pyfunction]
#[pyo3(signature = (kind, input, s, dim, norm))]
fn _fft_nd(
    py: Python<'_>,
    kind: &str,
    input: &Bound<'_, PyAny>,
    s: Option<&Bound<'_, PyAny>>,
    dim: Option<&Bound<'_, PyAny>>,
    norm: Option<String>,
) -> PyResult<PyTensor> {
    type Nd = fn(&Tensor, Option<&[i64]>, Option<&[i64]>, Option<&str>) -> strata::Result<Tensor>;
    let f: Nd = match kind {
        "fftn" => fft::fftn,
        "ifftn" => fft::ifftn,
        "rfftn" => fft::rfftn,
        "irfftn" => fft::irfftn,
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown transform {other:?}"
            )))
        }
    };
    let (s, dim) = (ints(s)?, ints(dim)?);
    let t = tensor_arg(input)?;
    let work = t.numel().saturating_mul(8);
    wrap(nogil(py, work, move || {
        f(&t, s.as_deref(), dim.as_deref(), norm.as_deref())
    }))
}

/// `fftfreq(n, d)` (or `rfftfreq` with `real`) in `dtype` (default float32).
#[pyfunction]
#[pyo3(signature = (n, d, dtype, real))]
fn _fftfreq(n: i64, d: f64, dtype: Option<&Bound<'_, PyAny>>, real: bool) -> PyResult<PyTensor> {
    let dt = opt_dtype(dtype)?.unwrap_or(strata::DType::F32);
    wrap(if real {
        fft::rfftfreq(n, d, dt)
    } else {
        fft::fftfreq(n, d, dt)
    })
}

/// `fftshift(input, dim)` (or `ifftshift` with `inverse`).
#[pyfunction]
#[pyo3(signature = (input, dim, inverse))]
fn _fftshift(
    input: &Bound<'_, PyAny>,
    dim: Option<&Bound<'_, PyAny>>,
    inverse: bool,
) -> PyResult<PyTensor> {
    let t = tensor_arg(input)?;
    let dims = ints(dim)?;
    wrap(if inverse {
        fft::ifftshift(&t, dims.as_deref())
    } else {
        fft::fftshift(&t, dims.as_deref())
    })
}

/// Adds the native functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_fft_1d, m)?)?;
    m.add_function(wrap_pyfunction!(_fft_nd, m)?)?;
    m.add_function(wrap_pyfunction!(_fftfreq, m)?)?;
    m.add_function(wrap_pyfunction!(_fftshift, m)?)?;
    Ok(())
}
