//! The native functions behind `strata.linalg` (the core's `ops/linalg.rs`, `strata::linalg`)
//! and the `trace` method / `strata.tensordot`. `python/strata/linalg.py` wraps the
//! `_linalg_*` functions with PyTorch's signatures and named tuples.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyAny, PyString, PyTuple};
use strata::linalg::{self, NormOrd};
use strata::Tensor;

use crate::compute::{nogil, wrap};
use crate::errors::IntoPy;
use crate::tensor::{tensor_arg, PyTensor};

/// The work estimate that decides whether to release the GIL: the input's elements.
fn work(t: &Tensor) -> usize {
    t.numel().saturating_mul(16)
}

fn tuple(py: Python<'_>, ts: Vec<Tensor>) -> PyResult<Py<PyTuple>> {
    let items: Vec<Py<PyTensor>> = ts
        .into_iter()
        .map(|t| Py::new(py, PyTensor::wrap(t)))
        .collect::<PyResult<_>>()?;
    Ok(PyTuple::new(py, items)?.unbind())
}

/// `ord` as given to the norms: a number, `'fro'` or `'nuc'`, or `None`.
fn norm_ord(ord: Option<&Bound<'_, PyAny>>) -> PyResult<Option<NormOrd>> {
    let Some(o) = ord.filter(|o| !o.is_none()) else {
        return Ok(None);
    };
    if let Ok(s) = o.cast::<PyString>() {
        return match s.to_str()? {
            "fro" => Ok(Some(NormOrd::Fro)),
            "nuc" => Ok(Some(NormOrd::Nuc)),
            other => Err(PyValueError::new_err(format!(
                "linalg.norm: Order {other} not supported."
            ))),
        };
    }
    let p: f64 = o.extract().map_err(|_| {
        PyTypeError::new_err(format!(
            "linalg.norm: ord must be a number, 'fro' or 'nuc', not {}",
            o.get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default()
        ))
    })?;
    Ok(Some(NormOrd::P(p)))
}

/// `dim` as given to the norms: `None`, an int or a sequence of ints.
fn dims(dim: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Vec<i64>>> {
    match dim.filter(|d| !d.is_none()) {
        None => Ok(None),
        Some(d) => {
            if let Ok(i) = d.extract::<i64>() {
                Ok(Some(vec![i]))
            } else {
                Ok(Some(d.extract::<Vec<i64>>()?))
            }
        }
    }
}

#[pyfunction]
#[pyo3(signature = (a, upper=false))]
fn _linalg_cholesky(py: Python<'_>, a: &Bound<'_, PyAny>, upper: bool) -> PyResult<PyTensor> {
    let a = tensor_arg(a)?;
    wrap(nogil(py, work(&a), move || linalg::cholesky(&a, upper)))
}

#[pyfunction]
fn _linalg_inv(py: Python<'_>, a: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    let a = tensor_arg(a)?;
    wrap(nogil(py, work(&a), move || linalg::inv(&a)))
}

#[pyfunction]
fn _linalg_det(py: Python<'_>, a: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    let a = tensor_arg(a)?;
    wrap(nogil(py, work(&a), move || linalg::det(&a)))
}

#[pyfunction]
fn _linalg_slogdet(py: Python<'_>, a: &Bound<'_, PyAny>) -> PyResult<Py<PyTuple>> {
    let a = tensor_arg(a)?;
    let (s, l) = nogil(py, work(&a), move || linalg::slogdet(&a)).py()?;
    tuple(py, vec![s, l])
}

#[pyfunction]
#[pyo3(signature = (a, uplo="L"))]
fn _linalg_eigh(py: Python<'_>, a: &Bound<'_, PyAny>, uplo: &str) -> PyResult<Py<PyTuple>> {
    let a = tensor_arg(a)?;
    let u = uplo.to_string();
    let (w, v) = nogil(py, work(&a), move || linalg::eigh(&a, &u)).py()?;
    tuple(py, vec![w, v])
}

#[pyfunction]
#[pyo3(signature = (a, uplo="L"))]
fn _linalg_eigvalsh(py: Python<'_>, a: &Bound<'_, PyAny>, uplo: &str) -> PyResult<PyTensor> {
    let a = tensor_arg(a)?;
    let u = uplo.to_string();
    wrap(nogil(py, work(&a), move || linalg::eigvalsh(&a, &u)))
}

#[pyfunction]
#[pyo3(signature = (a, mode="reduced"))]
fn _linalg_qr(py: Python<'_>, a: &Bound<'_, PyAny>, mode: &str) -> PyResult<Py<PyTuple>> {
    let a = tensor_arg(a)?;
    let m = mode.to_string();
    let (q, r) = nogil(py, work(&a), move || linalg::qr(&a, &m)).py()?;
    tuple(py, vec![q, r])
}

#[pyfunction]
#[pyo3(signature = (a, full_matrices=true))]
fn _linalg_svd(py: Python<'_>, a: &Bound<'_, PyAny>, full_matrices: bool) -> PyResult<Py<PyTuple>> {
    let a = tensor_arg(a)?;
    let (u, s, vh) = nogil(py, work(&a), move || linalg::svd(&a, full_matrices)).py()?;
    tuple(py, vec![u, s, vh])
}

#[pyfunction]
fn _linalg_svdvals(py: Python<'_>, a: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    let a = tensor_arg(a)?;
    wrap(nogil(py, work(&a), move || linalg::svdvals(&a)))
}

#[pyfunction]
#[pyo3(signature = (a, b, left=true))]
fn _linalg_solve(
    py: Python<'_>,
    a: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
    left: bool,
) -> PyResult<PyTensor> {
    let (a, b) = (tensor_arg(a)?, tensor_arg(b)?);
    let w = work(&a).saturating_add(work(&b));
    wrap(nogil(py, w, move || linalg::solve(&a, &b, left)))
}

#[pyfunction]
#[pyo3(signature = (a, atol=None, rtol=None, hermitian=false))]
fn _linalg_pinv(
    py: Python<'_>,
    a: &Bound<'_, PyAny>,
    atol: Option<f64>,
    rtol: Option<f64>,
    hermitian: bool,
) -> PyResult<PyTensor> {
    let a = tensor_arg(a)?;
    wrap(nogil(py, work(&a), move || {
        linalg::pinv(&a, atol, rtol, hermitian)
    }))
}

#[pyfunction]
#[pyo3(signature = (a, b, rcond=None, driver=None))]
fn _linalg_lstsq(
    py: Python<'_>,
    a: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
    rcond: Option<f64>,
    driver: Option<String>,
) -> PyResult<Py<PyTuple>> {
    let (a, b) = (tensor_arg(a)?, tensor_arg(b)?);
    let w = work(&a).saturating_add(work(&b));
    let r = nogil(py, w, move || {
        linalg::lstsq(&a, &b, rcond, driver.as_deref())
    })
    .py()?;
    tuple(py, vec![r.solution, r.residuals, r.rank, r.singular_values])
}

#[pyfunction]
#[pyo3(signature = (a, atol=None, rtol=None, hermitian=false))]
fn _linalg_matrix_rank(
    py: Python<'_>,
    a: &Bound<'_, PyAny>,
    atol: Option<f64>,
    rtol: Option<f64>,
    hermitian: bool,
) -> PyResult<PyTensor> {
    let a = tensor_arg(a)?;
    wrap(nogil(py, work(&a), move || {
        linalg::matrix_rank(&a, atol, rtol, hermitian)
    }))
}

#[pyfunction]
#[pyo3(signature = (x, ord=2.0, dim=None, keepdim=false))]
fn _linalg_vector_norm(
    py: Python<'_>,
    x: &Bound<'_, PyAny>,
    ord: f64,
    dim: Option<&Bound<'_, PyAny>>,
    keepdim: bool,
) -> PyResult<PyTensor> {
    let x = tensor_arg(x)?;
    let d = dims(dim)?;
    wrap(nogil(py, x.numel(), move || {
        linalg::vector_norm(&x, ord, d.as_deref(), keepdim)
    }))
}

#[pyfunction]
#[pyo3(signature = (a, ord=None, dim=None, keepdim=false))]
fn _linalg_matrix_norm(
    py: Python<'_>,
    a: &Bound<'_, PyAny>,
    ord: Option<&Bound<'_, PyAny>>,
    dim: Option<&Bound<'_, PyAny>>,
    keepdim: bool,
) -> PyResult<PyTensor> {
    let a = tensor_arg(a)?;
    let ord = norm_ord(ord)?.unwrap_or(NormOrd::Fro);
    let d = match dims(dim)? {
        None => [-2, -1],
        Some(v) if v.len() == 2 => [v[0], v[1]],
        Some(v) => {
            return Err(PyValueError::new_err(format!(
                "linalg.matrix_norm: dim must be a 2-tuple. Got {v:?}"
            )))
        }
    };
    wrap(nogil(py, work(&a), move || {
        linalg::matrix_norm(&a, ord, d, keepdim)
    }))
}

#[pyfunction]
#[pyo3(signature = (a, ord=None, dim=None, keepdim=false))]
fn _linalg_norm(
    py: Python<'_>,
    a: &Bound<'_, PyAny>,
    ord: Option<&Bound<'_, PyAny>>,
    dim: Option<&Bound<'_, PyAny>>,
    keepdim: bool,
) -> PyResult<PyTensor> {
    let a = tensor_arg(a)?;
    let ord = norm_ord(ord)?;
    let d = dims(dim)?;
    wrap(nogil(py, work(&a), move || {
        linalg::norm(&a, ord, d.as_deref(), keepdim)
    }))
}

#[pyfunction]
#[pyo3(signature = (x, y, dim=-1))]
fn _linalg_vecdot(
    py: Python<'_>,
    x: &Bound<'_, PyAny>,
    y: &Bound<'_, PyAny>,
    dim: i64,
) -> PyResult<PyTensor> {
    let (x, y) = (tensor_arg(x)?, tensor_arg(y)?);
    let w = x.numel().max(y.numel());
    wrap(nogil(py, w, move || linalg::vecdot(&x, &y, dim)))
}

/// `strata.tensordot(a, b, dims=2)`: `dims` an int (the last `dims` of `a` with the first
/// `dims` of `b`) or a pair of dim lists (or of single dims).
#[pyfunction]
#[pyo3(signature = (a, b, dims=None))]
pub fn tensordot(
    py: Python<'_>,
    a: &Bound<'_, PyAny>,
    b: &Bound<'_, PyAny>,
    dims: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let (a, b) = (tensor_arg(a)?, tensor_arg(b)?);
    let list = |o: &Bound<'_, PyAny>| -> PyResult<Vec<i64>> {
        if let Ok(i) = o.extract::<i64>() {
            Ok(vec![i])
        } else {
            o.extract::<Vec<i64>>()
        }
    };
    let (da, db) = match dims.filter(|d| !d.is_none()) {
        None => ((-2..0).collect(), (0..2).collect()),
        Some(d) => {
            if let Ok(n) = d.extract::<i64>() {
                if n < 0 {
                    return Err(PyValueError::new_err(format!(
                        "tensordot expects dims >= 0, but got dims={n}"
                    )));
                }
                ((-n..0).collect(), (0..n).collect())
            } else {
                let pair: Vec<Bound<'_, PyAny>> = d.try_iter()?.collect::<PyResult<_>>()?;
                if pair.len() != 2 {
                    return Err(PyTypeError::new_err(
                        "tensordot expects dims to be an int or a pair of lists of dims",
                    ));
                }
                (list(&pair[0])?, list(&pair[1])?)
            }
        }
    };
    let w = a.numel().max(b.numel());
    wrap(nogil(py, w, move || a.tensordot(&b, &da, &db)))
}

#[pymethods]
impl PyTensor {
    /// `trace()`: the sum of the main diagonal of a 2-d tensor.
    fn trace(&self) -> PyResult<PyTensor> {
        wrap(self.inner().trace())
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_linalg_cholesky, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_inv, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_det, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_slogdet, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_eigh, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_eigvalsh, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_qr, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_svd, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_svdvals, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_solve, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_pinv, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_lstsq, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_matrix_rank, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_vector_norm, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_matrix_norm, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_norm, m)?)?;
    m.add_function(wrap_pyfunction!(_linalg_vecdot, m)?)?;
    m.add_function(wrap_pyfunction!(tensordot, m)?)?;
    Ok(())
}
