//! `strata.Tensor` methods for sorting and searching (the core's `ops/sort.rs`): `sort`,
//! `argsort`, `topk`, `unique`, `searchsorted`. `sort` and `topk` return PyTorch's
//! `(values, indices)` named tuples.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyAny, PyTuple, PyType};
use strata::Tensor;

use crate::compute::{nogil, wrap};
use crate::errors::IntoPy;
use crate::tensor::{tensor_arg, PyTensor};

static SORT_T: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static TOPK_T: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// `(values, indices)` as the named tuple type `name` (made once, like PyTorch's
/// `torch.return_types.sort`).
fn values_indices(
    py: Python<'_>,
    cell: &'static PyOnceLock<Py<PyType>>,
    name: &str,
    v: Tensor,
    i: Tensor,
) -> PyResult<Py<PyAny>> {
    let ty = cell.get_or_try_init(py, || -> PyResult<Py<PyType>> {
        let nt = py.import("collections")?.getattr("namedtuple")?;
        let t = nt.call1((name, ("values", "indices")))?;
        Ok(t.cast_into::<PyType>()?.unbind())
    })?;
    let args = (
        Py::new(py, PyTensor::wrap(v))?,
        Py::new(py, PyTensor::wrap(i))?,
    );
    Ok(ty.bind(py).call1(args)?.unbind())
}

#[pymethods]
impl PyTensor {
    /// `sort(dim=-1, descending=False, stable=False)` → `(values, indices)`; every sort
    /// is stable.
    #[pyo3(signature = (dim=-1, descending=false, stable=false))]
    fn sort(
        &self,
        py: Python<'_>,
        dim: i64,
        descending: bool,
        stable: bool,
    ) -> PyResult<Py<PyAny>> {
        let t = self.inner().clone();
        let (v, i) = nogil(py, t.numel(), move || t.sort(dim, descending, stable)).py()?;
        values_indices(py, &SORT_T, "sort", v, i)
    }

    /// `argsort(dim=-1, descending=False, stable=False)`: the sorting positions.
    #[pyo3(signature = (dim=-1, descending=false, stable=false))]
    fn argsort(
        &self,
        py: Python<'_>,
        dim: i64,
        descending: bool,
        stable: bool,
    ) -> PyResult<PyTensor> {
        let t = self.inner().clone();
        wrap(nogil(py, t.numel(), move || {
            t.argsort(dim, descending, stable)
        }))
    }

    /// `topk(k, dim=-1, largest=True, sorted=True)` → `(values, indices)`.
    #[pyo3(signature = (k, dim=-1, largest=true, sorted=true))]
    fn topk(
        &self,
        py: Python<'_>,
        k: i64,
        dim: i64,
        largest: bool,
        sorted: bool,
    ) -> PyResult<Py<PyAny>> {
        let k = usize::try_from(k).map_err(|_| {
            PyValueError::new_err(format!("topk(): k must be non-negative, got {k}"))
        })?;
        let t = self.inner().clone();
        let (v, i) = nogil(py, t.numel(), move || t.topk(k, dim, largest, sorted)).py()?;
        values_indices(py, &TOPK_T, "topk", v, i)
    }

    /// `unique(sorted=True, return_inverse=False, return_counts=False, dim=None)`: the
    /// distinct elements (ascending), or with `dim` the distinct slices along it; with the
    /// inverse and counts when asked, as a tuple.
    #[pyo3(signature = (sorted=true, return_inverse=false, return_counts=false, dim=None))]
    fn unique(
        &self,
        py: Python<'_>,
        sorted: bool,
        return_inverse: bool,
        return_counts: bool,
        dim: Option<i64>,
    ) -> PyResult<Py<PyAny>> {
        let _ = sorted;
        let t = self.inner().clone();
        let (u, inv, counts) = nogil(py, t.numel(), move || match dim {
            None => t.unique(return_inverse, return_counts),
            Some(d) => t.unique_dim(d, return_inverse, return_counts),
        })
        .py()?;
        if !return_inverse && !return_counts {
            return Ok(Py::new(py, PyTensor::wrap(u))?.into_any());
        }
        let mut items = vec![Py::new(py, PyTensor::wrap(u))?];
        items.extend(inv.map(|t| Py::new(py, PyTensor::wrap(t))).transpose()?);
        items.extend(counts.map(|t| Py::new(py, PyTensor::wrap(t))).transpose()?);
        Ok(PyTuple::new(py, items)?.into_any().unbind())
    }
}

/// `strata.searchsorted(sorted_sequence, input, *, out_int32=False, right=False,
/// side=None, sorter=None)`: insertion positions of `input` in the sorted last dim.
#[pyfunction]
#[pyo3(signature = (sorted_sequence, input, *, out_int32=false, right=false, side=None, sorter=None))]
pub fn searchsorted(
    py: Python<'_>,
    sorted_sequence: &Bound<'_, PyAny>,
    input: &Bound<'_, PyAny>,
    out_int32: bool,
    right: bool,
    side: Option<&str>,
    sorter: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let right = match side {
        None => right,
        Some("right") => true,
        Some("left") if right => {
            return Err(PyValueError::new_err(
                "torch.searchsorted(): side and right can't be set to opposites, got side of left while right was True",
            ))
        }
        Some("left") => false,
        Some(other) => {
            return Err(PyValueError::new_err(format!(
                "torch.searchsorted(): side can only be 'left' or 'right' but got {other}"
            )))
        }
    };
    let seq = tensor_arg(sorted_sequence)?;
    let vals = tensor_arg(input)?;
    let sorter = match sorter {
        Some(s) if !s.is_none() => Some(tensor_arg(s)?),
        _ => None,
    };
    let work = vals.numel();
    wrap(nogil(py, work, move || {
        seq.searchsorted(&vals, right, out_int32, sorter.as_ref())
    }))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(searchsorted, m)?)?;
    Ok(())
}
