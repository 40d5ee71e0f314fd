//! `strata.Tensor` methods and module functions that place elements by position (the
//! core's `ops/arrange.rs` and the dim-wise scatters of `ops/index.rs`): `cat`,
//! `concat`, `stack`, `meshgrid`, `roll`, `repeat`, `tile`, `tril`, `triu`, `diff`,
//! `scatter`/`scatter_add` (and in place), `take_along_dim`, `argwhere`.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyAny, PyList, PyTuple};
use strata::Tensor;

use crate::compute::{nogil, wrap};
use crate::convert::{as_scalar, int_list, shape_args};
use crate::errors::IntoPy;
use crate::tensor::{tensor_arg, PyTensor};

/// A sequence of tensors (a list or tuple; numbers and nested lists become tensors).
pub(crate) fn tensor_seq(op: &str, obj: &Bound<'_, PyAny>) -> PyResult<Vec<Tensor>> {
    if obj.cast::<PyTensor>().is_ok()
        || !(obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>())
    {
        return Err(PyTypeError::new_err(format!(
            "{op}(): argument 'tensors' must be a tuple or list of Tensors, not {}",
            obj.get_type().name()?
        )));
    }
    obj.try_iter()?.map(|t| tensor_arg(&t?)).collect()
}

/// `*tensors`, or one list/tuple of them.
fn variadic(op: &str, args: &Bound<'_, PyTuple>) -> PyResult<Vec<Tensor>> {
    if args.len() == 1 {
        let a = args.get_item(0)?;
        if a.is_instance_of::<PyList>() || a.is_instance_of::<PyTuple>() {
            return tensor_seq(op, &a);
        }
    }
    args.iter().map(|t| tensor_arg(&t)).collect()
}

fn total(ts: &[Tensor]) -> usize {
    ts.iter().map(Tensor::numel).fold(0, usize::saturating_add)
}

/// `dim`, or its NumPy spelling `axis` (PyTorch's argument parser takes either).
fn dim_or_axis(op: &str, dim: Option<i64>, axis: Option<i64>) -> PyResult<i64> {
    match (dim, axis) {
        (Some(_), Some(_)) => Err(PyTypeError::new_err(format!(
            "{op}(): got both 'dim' and its alias 'axis'"
        ))),
        (d, a) => Ok(d.or(a).unwrap_or(0)),
    }
}

/// `strata.cat(tensors, dim=0)` (or `axis=`): the tensors joined along `dim`.
#[pyfunction]
#[pyo3(signature = (tensors, dim=None, *, axis=None))]
pub fn cat(
    py: Python<'_>,
    tensors: &Bound<'_, PyAny>,
    dim: Option<i64>,
    axis: Option<i64>,
) -> PyResult<PyTensor> {
    let dim = dim_or_axis("cat", dim, axis)?;
    let ts = tensor_seq("cat", tensors)?;
    wrap(nogil(py, total(&ts), move || {
        let refs: Vec<&Tensor> = ts.iter().collect();
        Tensor::cat(&refs, dim)
    }))
}

/// `strata.concatenate(tensors, axis=0)` (or `dim=`): NumPy's name for `cat`.
#[pyfunction]
#[pyo3(signature = (tensors, axis=None, *, dim=None))]
pub fn concatenate(
    py: Python<'_>,
    tensors: &Bound<'_, PyAny>,
    axis: Option<i64>,
    dim: Option<i64>,
) -> PyResult<PyTensor> {
    cat(py, tensors, dim, axis)
}

/// `strata.stack(tensors, dim=0)` (or `axis=`): the tensors joined along a new dim.
#[pyfunction]
#[pyo3(signature = (tensors, dim=None, *, axis=None))]
pub fn stack(
    py: Python<'_>,
    tensors: &Bound<'_, PyAny>,
    dim: Option<i64>,
    axis: Option<i64>,
) -> PyResult<PyTensor> {
    let dim = dim_or_axis("stack", dim, axis)?;
    let ts = tensor_seq("stack", tensors)?;
    wrap(nogil(py, total(&ts), move || {
        let refs: Vec<&Tensor> = ts.iter().collect();
        Tensor::stack(&refs, dim)
    }))
}

/// `strata.meshgrid(*tensors, indexing="ij")`: coordinate grids (expanded views).
#[pyfunction]
#[pyo3(signature = (*tensors, indexing="ij"))]
pub fn meshgrid<'py>(
    py: Python<'py>,
    tensors: &Bound<'py, PyTuple>,
    indexing: &str,
) -> PyResult<Bound<'py, PyTuple>> {
    let xy = match indexing {
        "ij" => false,
        "xy" => true,
        other => {
            return Err(PyValueError::new_err(format!(
                "torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: {other}"
            )))
        }
    };
    let ts = variadic("meshgrid", tensors)?;
    let refs: Vec<&Tensor> = ts.iter().collect();
    let out = Tensor::meshgrid(&refs, xy).py()?;
    PyTuple::new(
        py,
        out.into_iter()
            .map(|t| Py::new(py, PyTensor::wrap(t)))
            .collect::<PyResult<Vec<_>>>()?,
    )
}

/// Shifts as a list: an int or a sequence of ints.
fn int_or_list(obj: &Bound<'_, PyAny>) -> PyResult<Vec<i64>> {
    if let Ok(i) = obj.extract::<i64>() {
        return Ok(vec![i]);
    }
    int_list(obj)
}

/// The source of a scatter: a tensor, or a number.
enum Src {
    Tensor(Tensor),
    Value(strata::Scalar),
}

fn scatter_src(src: Option<&Bound<'_, PyAny>>, value: Option<&Bound<'_, PyAny>>) -> PyResult<Src> {
    let obj = match (src, value) {
        (Some(s), None) | (None, Some(s)) => s,
        _ => {
            return Err(PyTypeError::new_err(
                "scatter(): expected exactly one of 'src' (a tensor) or 'value' (a number)",
            ))
        }
    };
    if obj.cast::<PyTensor>().is_err() {
        if let Some(s) = as_scalar(obj)? {
            return Ok(Src::Value(s));
        }
    }
    Ok(Src::Tensor(tensor_arg(obj)?))
}

fn check_reduce(reduce: Option<&str>) -> PyResult<bool> {
    match reduce {
        None => Ok(false),
        Some("add") => Ok(true),
        Some(other) => Err(PyValueError::new_err(format!(
            "scatter(): reduce argument must be 'add' (the others are deprecated in PyTorch), got '{other}'"
        ))),
    }
}

#[pymethods]
impl PyTensor {
    /// `roll(shifts, dims=None)`: elements shifted along dims, wrapping around.
    #[pyo3(signature = (shifts, dims=None))]
    fn roll(
        &self,
        py: Python<'_>,
        shifts: &Bound<'_, PyAny>,
        dims: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let s = int_or_list(shifts)?;
        let d = match dims {
            Some(d) if !d.is_none() => int_or_list(d)?,
            _ => Vec::new(),
        };
        let t = self.inner().clone();
        wrap(nogil(py, t.numel(), move || t.roll(&s, &d)))
    }

    /// `repeat(*sizes)`: the tensor repeated along each dim (NumPy's `tile`).
    #[pyo3(signature = (*sizes))]
    fn repeat(&self, py: Python<'_>, sizes: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        let s = shape_args(sizes)?;
        let t = self.inner().clone();
        let work = t
            .numel()
            .saturating_mul(s.iter().map(|&r| r.max(0) as usize).product());
        wrap(nogil(py, work, move || t.repeat(&s)))
    }

    /// `tile(dims)`: NumPy's `tile`.
    #[pyo3(signature = (*dims))]
    fn tile(&self, py: Python<'_>, dims: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        let s = shape_args(dims)?;
        let t = self.inner().clone();
        let work = t
            .numel()
            .saturating_mul(s.iter().map(|&r| r.max(0) as usize).product());
        wrap(nogil(py, work, move || t.tile(&s)))
    }

    /// `tril(diagonal=0)`: the lower triangle of the last two dims.
    #[pyo3(signature = (diagonal=0))]
    fn tril(&self, py: Python<'_>, diagonal: i64) -> PyResult<PyTensor> {
        let t = self.inner().clone();
        wrap(nogil(py, t.numel(), move || t.tril(diagonal)))
    }

    /// `triu(diagonal=0)`: the upper triangle of the last two dims.
    #[pyo3(signature = (diagonal=0))]
    fn triu(&self, py: Python<'_>, diagonal: i64) -> PyResult<PyTensor> {
        let t = self.inner().clone();
        wrap(nogil(py, t.numel(), move || t.triu(diagonal)))
    }

    /// `diff(n=1, dim=-1, prepend=None, append=None)`: forward differences.
    #[pyo3(signature = (n=1, dim=-1, prepend=None, append=None))]
    fn diff(
        &self,
        n: i64,
        dim: i64,
        prepend: Option<&Bound<'_, PyAny>>,
        append: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        if n < 0 {
            return Err(PyValueError::new_err(format!(
                "diff expects n to be non-negative, got {n}"
            )));
        }
        let opt = |o: Option<&Bound<'_, PyAny>>| -> PyResult<Option<Tensor>> {
            match o {
                Some(o) if !o.is_none() => tensor_arg(o).map(Some),
                _ => Ok(None),
            }
        };
        let (p, a) = (opt(prepend)?, opt(append)?);
        wrap(self.inner().diff(n as usize, dim, p.as_ref(), a.as_ref()))
    }

    /// `scatter(dim, index, src)` / `scatter(dim, index, value=v)`: a copy with
    /// `src`'s elements (or `value`) written at `index` along `dim`.
    #[pyo3(signature = (dim, index, src=None, *, value=None, reduce=None))]
    fn scatter(
        &self,
        dim: i64,
        index: &Bound<'_, PyAny>,
        src: Option<&Bound<'_, PyAny>>,
        value: Option<&Bound<'_, PyAny>>,
        reduce: Option<&str>,
    ) -> PyResult<PyTensor> {
        let ix = tensor_arg(index)?;
        let add = check_reduce(reduce)?;
        let t = self.inner();
        let r = match scatter_src(src, value)? {
            Src::Tensor(s) if add => t.scatter_add(dim, &ix, &s),
            Src::Tensor(s) => t.scatter(dim, &ix, &s),
            Src::Value(v) if add => {
                let s = Tensor::full_on(ix.shape(), v, t.dtype(), t.device()).py()?;
                t.scatter_add(dim, &ix, &s)
            }
            Src::Value(v) => t.scatter_value(dim, &ix, v),
        };
        wrap(r)
    }

    /// `scatter_(dim, index, src)` / `scatter_(dim, index, value=v)`, in place.
    #[pyo3(signature = (dim, index, src=None, *, value=None, reduce=None))]
    fn scatter_<'py>(
        slf: PyRef<'py, Self>,
        dim: i64,
        index: &Bound<'py, PyAny>,
        src: Option<&Bound<'py, PyAny>>,
        value: Option<&Bound<'py, PyAny>>,
        reduce: Option<&str>,
    ) -> PyResult<PyRef<'py, Self>> {
        let ix = tensor_arg(index)?;
        let add = check_reduce(reduce)?;
        let t = slf.inner().clone();
        let r = match scatter_src(src, value)? {
            Src::Tensor(s) if add => t.scatter_add_(dim, &ix, &s).map(|_| ()),
            Src::Tensor(s) => t.scatter_(dim, &ix, &s).map(|_| ()),
            Src::Value(v) if add => Tensor::full_on(ix.shape(), v, t.dtype(), t.device())
                .and_then(|s| t.scatter_add_(dim, &ix, &s).map(|_| ())),
            Src::Value(v) => t.scatter_value_(dim, &ix, v).map(|_| ()),
        };
        // An op that made `t` require grad made it on the clone.
        slf.inner().adopt_autograd(&t);
        r.py()?;
        Ok(slf)
    }

    /// `scatter_add(dim, index, src)`: a copy with `src` added at `index` along `dim`.
    fn scatter_add(
        &self,
        dim: i64,
        index: &Bound<'_, PyAny>,
        src: &Bound<'_, PyAny>,
    ) -> PyResult<PyTensor> {
        let (ix, s) = (tensor_arg(index)?, tensor_arg(src)?);
        wrap(self.inner().scatter_add(dim, &ix, &s))
    }

    /// `scatter_add_(dim, index, src)`, in place.
    fn scatter_add_<'py>(
        slf: PyRef<'py, Self>,
        dim: i64,
        index: &Bound<'py, PyAny>,
        src: &Bound<'py, PyAny>,
    ) -> PyResult<PyRef<'py, Self>> {
        let (ix, s) = (tensor_arg(index)?, tensor_arg(src)?);
        let t = slf.inner().clone();
        let r = t.scatter_add_(dim, &ix, &s).map(|_| ());
        slf.inner().adopt_autograd(&t);
        r.py()?;
        Ok(slf)
    }

    /// `take_along_dim(indices, dim=None)`: NumPy's `take_along_axis`.
    #[pyo3(signature = (indices, dim=None))]
    fn take_along_dim(&self, indices: &Bound<'_, PyAny>, dim: Option<i64>) -> PyResult<PyTensor> {
        let ix = tensor_arg(indices)?;
        wrap(self.inner().take_along_dim(&ix, dim))
    }

    /// `argwhere()`: the coordinates of the non-zero elements, `(n, ndim)` int64.
    fn argwhere(&self, py: Python<'_>) -> PyResult<PyTensor> {
        let t = self.inner().clone();
        wrap(nogil(py, t.numel(), move || t.argwhere()))
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(cat, m)?)?;
    m.add_function(wrap_pyfunction!(concatenate, m)?)?;
    m.add_function(wrap_pyfunction!(stack, m)?)?;
    m.add_function(wrap_pyfunction!(meshgrid, m)?)?;
    Ok(())
}
