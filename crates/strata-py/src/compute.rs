//! The compute methods of `strata.Tensor` other than the elementwise ones (those are
//! generated from the op table in `elementwise.rs`): matmul, the reductions and scans,
//! the buffer-protocol slots, and the rule every compute method follows for releasing
//! the GIL (`nogil`).

use std::ffi::c_int;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyAny, PyDict, PyTuple};
use strata::Tensor;

use crate::buffer;
use crate::convert::int_list;
use crate::errors::IntoPy;
use crate::tensor::{tensor_arg, PyTensor};

/// Optional dims: `None` → all, an int, or a sequence of ints.
fn dims_arg(dim: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<i64>> {
    match dim {
        None => Ok(Vec::new()),
        Some(d) if d.is_none() => Ok(Vec::new()),
        Some(d) => int_list(d),
    }
}

/// Elements of work from which a kernel runs with the GIL released. Releasing and taking
/// it back costs about as much as an elementwise kernel over a few thousand elements, so
/// smaller ops keep it (NumPy's threshold is 500 elements; it too keeps the GIL below).
pub(crate) const NOGIL_MIN: usize = 4096;

/// Runs `f`, a kernel over about `work` elements, without the GIL when `work` is at least
/// [`NOGIL_MIN`]. A kernel holds no GIL-dependent state: its borrows are taken and released
/// inside `f`, so a thread that waits for one while holding the GIL cannot deadlock.
pub(crate) fn nogil<T, F>(py: Python<'_>, work: usize, f: F) -> T
where
    F: pyo3::marker::Ungil + FnOnce() -> T,
    T: pyo3::marker::Ungil,
{
    if work >= NOGIL_MIN {
        py.detach(f)
    } else {
        f()
    }
}

/// Elements of the broadcast result of `shapes`: the work of an elementwise op, whose
/// output can be far larger than any input (`(1000, 1) + (1, 1000)`). Shapes that do not
/// broadcast count as no work: the op fails at once, with the GIL held.
pub(crate) fn broadcast_numel(shapes: &[&[usize]]) -> usize {
    // The common small-op case, equal shapes (or a scalar operand), needs no broadcast.
    if let [a, b] = shapes {
        if b.is_empty() || strata::layout::same_dims(a, b) {
            return a.iter().fold(1, |n, &k| n.saturating_mul(k));
        }
    }
    strata::layout::broadcast::broadcast_all("", shapes)
        .map_or(0, |s| s.iter().fold(1, |n, &k| n.saturating_mul(k)))
}

/// The work of a matrix product, bounded above by the product of the operands' sizes
/// (m·k · k·n ≥ m·k·n multiply-adds), so a product of small operands keeps the GIL and
/// one with a large output or inner dim releases it.
fn matmul_work(a: &Tensor, b: &Tensor) -> usize {
    a.numel().saturating_mul(b.numel())
}

pub(crate) fn wrap(r: strata::Result<Tensor>) -> PyResult<PyTensor> {
    r.py().map(PyTensor::wrap)
}

#[pymethods]
impl PyTensor {
    /// Tensors hash by identity, as in PyTorch.
    fn __hash__(slf: &Bound<'_, Self>) -> isize {
        slf.as_ptr() as isize
    }

    fn __matmul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.matmul(py, other)
    }

    fn __rmatmul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let a = tensor_arg(other)?;
        let b = self.inner().clone();
        wrap(nogil(py, matmul_work(&a, &b), move || a.matmul(&b)))
    }

    fn matmul(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let (a, b) = (self.inner().clone(), tensor_arg(other)?);
        wrap(nogil(py, matmul_work(&a, &b), move || a.matmul(&b)))
    }

    fn mm(&self, py: Python<'_>, mat2: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let (a, b) = (self.inner().clone(), tensor_arg(mat2)?);
        wrap(nogil(py, matmul_work(&a, &b), move || a.mm(&b)))
    }

    fn mv(&self, py: Python<'_>, vec: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let (a, b) = (self.inner().clone(), tensor_arg(vec)?);
        wrap(nogil(py, matmul_work(&a, &b), move || a.mv(&b)))
    }

    fn bmm(&self, py: Python<'_>, mat2: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let (a, b) = (self.inner().clone(), tensor_arg(mat2)?);
        wrap(nogil(py, matmul_work(&a, &b), move || a.bmm(&b)))
    }

    fn dot(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let (a, b) = (self.inner().clone(), tensor_arg(other)?);
        wrap(nogil(py, matmul_work(&a, &b), move || a.dot(&b)))
    }

    fn outer(&self, py: Python<'_>, vec2: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let (a, b) = (self.inner().clone(), tensor_arg(vec2)?);
        wrap(nogil(py, matmul_work(&a, &b), move || a.outer(&b)))
    }

    // ----- reductions -----

    #[pyo3(signature = (dim=None, keepdim=false))]
    fn sum(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<PyTensor> {
        let (t, d) = (self.inner().clone(), dims_arg(dim)?);
        wrap(nogil(py, t.numel(), move || t.sum(&d, keepdim)))
    }

    #[pyo3(signature = (dim=None, keepdim=false))]
    fn prod(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<PyTensor> {
        let (t, d) = (self.inner().clone(), dims_arg(dim)?);
        wrap(nogil(py, t.numel(), move || t.prod(&d, keepdim)))
    }

    #[pyo3(signature = (dim=None, keepdim=false))]
    fn mean(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<PyTensor> {
        let (t, d) = (self.inner().clone(), dims_arg(dim)?);
        wrap(nogil(py, t.numel(), move || t.mean(&d, keepdim)))
    }

    #[pyo3(signature = (dim=None, keepdim=false))]
    fn amax(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<PyTensor> {
        let (t, d) = (self.inner().clone(), dims_arg(dim)?);
        wrap(nogil(py, t.numel(), move || t.amax(&d, keepdim)))
    }

    #[pyo3(signature = (dim=None, keepdim=false))]
    fn amin(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<PyTensor> {
        let (t, d) = (self.inner().clone(), dims_arg(dim)?);
        wrap(nogil(py, t.numel(), move || t.amin(&d, keepdim)))
    }

    /// `max()` → 0-d; `max(dim, keepdim=False)` → `(values, indices)`; `max(other)` →
    /// elementwise maximum.
    #[pyo3(signature = (dim=None, keepdim=false))]
    fn max(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<Py<PyAny>> {
        self.extreme(py, dim, keepdim, true)
    }

    #[pyo3(signature = (dim=None, keepdim=false))]
    fn min(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<Py<PyAny>> {
        self.extreme(py, dim, keepdim, false)
    }

    #[pyo3(signature = (dim=None, keepdim=false))]
    fn argmax(&self, py: Python<'_>, dim: Option<i64>, keepdim: bool) -> PyResult<PyTensor> {
        let t = self.inner().clone();
        wrap(nogil(py, t.numel(), move || t.argmax(dim, keepdim)))
    }

    #[pyo3(signature = (dim=None, keepdim=false))]
    fn argmin(&self, py: Python<'_>, dim: Option<i64>, keepdim: bool) -> PyResult<PyTensor> {
        let t = self.inner().clone();
        wrap(nogil(py, t.numel(), move || t.argmin(dim, keepdim)))
    }

    #[pyo3(signature = (dim=None, keepdim=false))]
    fn all(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<PyTensor> {
        let (t, d) = (self.inner().clone(), dims_arg(dim)?);
        wrap(nogil(py, t.numel(), move || t.all(&d, keepdim)))
    }

    #[pyo3(signature = (dim=None, keepdim=false))]
    fn any(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<PyTensor> {
        let (t, d) = (self.inner().clone(), dims_arg(dim)?);
        wrap(nogil(py, t.numel(), move || t.any(&d, keepdim)))
    }

    #[pyo3(signature = (dim=None, *, correction=None, keepdim=false, unbiased=None))]
    fn var(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        correction: Option<f64>,
        keepdim: bool,
        unbiased: Option<bool>,
    ) -> PyResult<PyTensor> {
        let (t, d) = (self.inner().clone(), dims_arg(dim)?);
        let c = correction.unwrap_or(if unbiased == Some(false) { 0.0 } else { 1.0 });
        wrap(nogil(py, t.numel(), move || {
            t.var_correction(&d, c, keepdim)
        }))
    }

    #[pyo3(signature = (dim=None, *, correction=None, keepdim=false, unbiased=None))]
    fn std(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        correction: Option<f64>,
        keepdim: bool,
        unbiased: Option<bool>,
    ) -> PyResult<PyTensor> {
        let (t, d) = (self.inner().clone(), dims_arg(dim)?);
        let c = correction.unwrap_or(if unbiased == Some(false) { 0.0 } else { 1.0 });
        wrap(nogil(py, t.numel(), move || {
            t.std_correction(&d, c, keepdim)
        }))
    }

    #[pyo3(signature = (dim, keepdim=false))]
    fn logsumexp(
        &self,
        py: Python<'_>,
        dim: &Bound<'_, PyAny>,
        keepdim: bool,
    ) -> PyResult<PyTensor> {
        let (t, d) = (self.inner().clone(), int_list(dim)?);
        wrap(nogil(py, t.numel(), move || t.logsumexp(&d, keepdim)))
    }

    fn cumsum(&self, py: Python<'_>, dim: i64) -> PyResult<PyTensor> {
        let t = self.inner().clone();
        wrap(nogil(py, t.numel(), move || t.cumsum(dim)))
    }

    fn cumprod(&self, py: Python<'_>, dim: i64) -> PyResult<PyTensor> {
        let t = self.inner().clone();
        wrap(nogil(py, t.numel(), move || t.cumprod(dim)))
    }

    // ----- NumPy exchange -----

    /// Buffer protocol export (see Note [Buffer ownership] in buffer.rs).
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut ffi::Py_buffer,
        flags: c_int,
    ) -> PyResult<()> {
        // SAFETY: PyO3 passes the `view` given to `bf_getbuffer`.
        unsafe { buffer::get_buffer(&slf, view, flags) }
    }

    unsafe fn __releasebuffer__(&self, view: *mut ffi::Py_buffer) {
        // SAFETY: PyO3 passes a view this object filled in `__getbuffer__`.
        unsafe { buffer::release_buffer(view) }
    }

    #[getter]
    fn __array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        buffer::array_interface(py, self.inner())
    }

    /// A NumPy array sharing this tensor's memory.
    fn numpy<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        buffer::to_numpy(slf)
    }
}

impl PyTensor {
    fn extreme(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        is_max: bool,
    ) -> PyResult<Py<PyAny>> {
        let t = self.inner().clone();
        match dim {
            None => {
                let r = nogil(
                    py,
                    t.numel(),
                    move || if is_max { t.max() } else { t.min() },
                );
                Ok(Py::new(py, wrap(r)?)?.into_any())
            }
            Some(d) if d.cast::<PyTensor>().is_ok() => {
                let r = if is_max {
                    self.maximum(py, d)?
                } else {
                    self.minimum(py, d)?
                };
                Ok(Py::new(py, r)?.into_any())
            }
            Some(d) => {
                let dim: i64 = d.extract()?;
                let n = t.numel();
                let (v, i) = nogil(py, n, move || {
                    if is_max {
                        t.max_dim(dim, keepdim)
                    } else {
                        t.min_dim(dim, keepdim)
                    }
                })
                .py()?;
                let tup = PyTuple::new(
                    py,
                    [
                        Py::new(py, PyTensor::wrap(v))?,
                        Py::new(py, PyTensor::wrap(i))?,
                    ],
                )?;
                Ok(tup.into_any().unbind())
            }
        }
    }
}

/// Registers the module-level op functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    crate::elementwise::register(m)
}
