//! `strata.Tensor` methods and module functions for the ops composed of other ops (the
//! core's `ops/composite.rs` and `ops/einsum.rs`): `softmax`, `log_softmax`, `isclose`,
//! `allclose`, `cross`, `cumulative_sum`, `einsum`.

use pyo3::prelude::*;
use pyo3::types::{PyAny, PyList, PyTuple};
use strata::Tensor;

use crate::compute::{nogil, wrap};
use crate::dtype::opt_dtype;
use crate::errors::IntoPy;
use crate::tensor::{tensor_arg, PyTensor};

#[pymethods]
impl PyTensor {
    /// `softmax(dim, dtype=None)`: `exp(x) / Σ exp(x)` along `dim`, computed stably.
    #[pyo3(signature = (dim, dtype=None))]
    fn softmax(
        &self,
        py: Python<'_>,
        dim: i64,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let (t, dt) = (self.inner().clone(), opt_dtype(dtype)?);
        wrap(nogil(py, t.numel(), move || t.softmax(dim, dt)))
    }

    /// `log_softmax(dim, dtype=None)`: `log(softmax(x))` along `dim`, computed stably.
    #[pyo3(signature = (dim, dtype=None))]
    fn log_softmax(
        &self,
        py: Python<'_>,
        dim: i64,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let (t, dt) = (self.inner().clone(), opt_dtype(dtype)?);
        wrap(nogil(py, t.numel(), move || t.log_softmax(dim, dt)))
    }

    /// `isclose(other, rtol=1e-05, atol=1e-08, equal_nan=False)`: elementwise closeness.
    #[pyo3(signature = (other, rtol=1e-05, atol=1e-08, equal_nan=false))]
    fn isclose(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        rtol: f64,
        atol: f64,
        equal_nan: bool,
    ) -> PyResult<PyTensor> {
        let (a, b) = (self.inner().clone(), tensor_arg(other)?);
        let work = a.numel().max(b.numel());
        wrap(nogil(py, work, move || {
            a.isclose(&b, rtol, atol, equal_nan)
        }))
    }

    /// `allclose(other, rtol=1e-05, atol=1e-08, equal_nan=False)`: whether all are close.
    #[pyo3(signature = (other, rtol=1e-05, atol=1e-08, equal_nan=false))]
    fn allclose(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        rtol: f64,
        atol: f64,
        equal_nan: bool,
    ) -> PyResult<bool> {
        let (a, b) = (self.inner().clone(), tensor_arg(other)?);
        let work = a.numel().max(b.numel());
        nogil(py, work, move || a.allclose(&b, rtol, atol, equal_nan)).py()
    }

    /// `cross(other, dim=None)`: the cross product of 3-vectors along `dim` (the first dim
    /// of size 3 when `None`).
    #[pyo3(signature = (other, dim=None))]
    fn cross(&self, other: &Bound<'_, PyAny>, dim: Option<i64>) -> PyResult<PyTensor> {
        let b = tensor_arg(other)?;
        wrap(self.inner().cross(&b, dim))
    }
}

/// `strata.cumulative_sum(x, /, *, dim=None, dtype=None, include_initial=False)`: the
/// array API's running sum.
#[pyfunction]
#[pyo3(signature = (x, /, *, dim=None, dtype=None, include_initial=false))]
pub fn cumulative_sum(
    py: Python<'_>,
    x: &Bound<'_, PyAny>,
    dim: Option<i64>,
    dtype: Option<&Bound<'_, PyAny>>,
    include_initial: bool,
) -> PyResult<PyTensor> {
    let (t, dt) = (tensor_arg(x)?, opt_dtype(dtype)?);
    wrap(nogil(py, t.numel(), move || {
        t.cumulative_sum(dim, dt, include_initial)
    }))
}

/// `strata.einsum(equation, *operands)` (or one list of operands): Einstein summation.
#[pyfunction]
#[pyo3(signature = (equation, *operands))]
pub fn einsum(py: Python<'_>, equation: &str, operands: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
    let items: Vec<Bound<'_, PyAny>> = if operands.len() == 1
        && (operands.get_item(0)?.is_instance_of::<PyList>()
            || operands.get_item(0)?.is_instance_of::<PyTuple>())
    {
        operands.get_item(0)?.try_iter()?.collect::<PyResult<_>>()?
    } else {
        operands.iter().collect()
    };
    let ts: Vec<Tensor> = items.iter().map(tensor_arg).collect::<PyResult<_>>()?;
    let eq = equation.to_string();
    let work = ts
        .iter()
        .map(Tensor::numel)
        .fold(0usize, usize::saturating_add);
    wrap(nogil(py, work, move || {
        let refs: Vec<&Tensor> = ts.iter().collect();
        Tensor::einsum(&eq, &refs)
    }))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(cumulative_sum, m)?)?;
    m.add_function(wrap_pyfunction!(einsum, m)?)?;
    Ok(())
}
