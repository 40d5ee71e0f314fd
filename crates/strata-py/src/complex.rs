//! `strata.Tensor` methods and module functions of complex tensors (the core's
//! `ops/complex.rs`): the part views `real`/`imag` (properties, as PyTorch, and
//! assignable), `view_as_real`, `view_as_complex`, `conj`, `conj_physical`, `angle`,
//! `is_complex`, and `strata.complex` / `strata.polar`.

use pyo3::prelude::*;
use pyo3::types::{PyAny, PyComplex};
use strata::Tensor;

use crate::compute::wrap;
use crate::errors::IntoPy;
use crate::tensor::{tensor_arg, PyTensor};

/// Copies `value` (a tensor or a number, broadcast) into the view `part`.
fn assign(part: strata::Result<Tensor>, value: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
    let Some(value) = value else {
        return Err(pyo3::exceptions::PyAttributeError::new_err(
            "can't delete a tensor's real or imaginary part",
        ));
    };
    let part = part.py()?;
    let v = tensor_arg(value)?;
    part.copy_(&v).py()?;
    Ok(())
}

#[pymethods]
impl PyTensor {
    /// The real part: a view of a complex tensor's real parts; a real tensor itself.
    #[getter]
    fn real(&self) -> PyResult<PyTensor> {
        wrap(self.inner().real())
    }

    /// Writes into the real parts (`t.real = x`).
    #[setter]
    fn set_real(&self, value: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        assign(self.inner().real(), value)
    }

    /// The imaginary part: a view of a complex tensor's imaginary parts (an error for a
    /// real tensor, as in PyTorch).
    #[getter]
    fn imag(&self) -> PyResult<PyTensor> {
        wrap(self.inner().imag())
    }

    /// Writes into the imaginary parts (`t.imag = x`).
    #[setter]
    fn set_imag(&self, value: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        assign(self.inner().imag(), value)
    }

    /// A complex tensor as real pairs `[.., 2]` over the same memory.
    fn view_as_real(&self) -> PyResult<PyTensor> {
        wrap(self.inner().view_as_real())
    }

    /// Real pairs `[.., 2]` as a complex tensor over the same memory.
    fn view_as_complex(&self) -> PyResult<PyTensor> {
        wrap(self.inner().view_as_complex())
    }

    /// The complex conjugate (a new tensor for a complex one; the tensor itself for a
    /// real one).
    fn conj(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        if !slf.get().inner().is_complex() {
            // PyTorch returns the very tensor.
            return Ok(slf.clone().into_any().unbind());
        }
        let t = wrap(slf.get().inner().conj())?;
        Ok(Py::new(slf.py(), t)?.into_any())
    }

    /// The conjugate transpose of the last two dims (the `mT` view of a real tensor, a
    /// new tensor for a complex one).
    #[getter(mH)]
    fn m_h(&self) -> PyResult<PyTensor> {
        wrap(self.inner().mh())
    }

    /// The conjugate transpose of the last two dims, as `mH`.
    fn adjoint(&self) -> PyResult<PyTensor> {
        wrap(self.inner().mh())
    }

    /// The conjugate transpose of a matrix (PyTorch's `H`: 2-D only, or 0-D).
    #[getter(H)]
    fn big_h(&self) -> PyResult<PyTensor> {
        wrap(self.inner().h())
    }

    /// The complex conjugate, always a new tensor.
    fn conj_physical(&self) -> PyResult<PyTensor> {
        wrap(self.inner().conj_physical())
    }

    /// The tensor itself: strata never defers a conjugation.
    fn resolve_conj(slf: &Bound<'_, Self>) -> Py<PyAny> {
        slf.clone().into_any().unbind()
    }

    /// The tensor itself: strata never defers a negation.
    fn resolve_neg(slf: &Bound<'_, Self>) -> Py<PyAny> {
        slf.clone().into_any().unbind()
    }

    /// False: strata has no lazy conjugate bit.
    fn is_conj(&self) -> bool {
        false
    }

    /// False: strata has no lazy negation bit.
    fn is_neg(&self) -> bool {
        false
    }

    /// Python's `complex()` of a one-element tensor (any dtype).
    fn __complex__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyComplex>> {
        let (re, im) = self.inner().item().py()?.to_complex();
        Ok(PyComplex::from_doubles(py, re, im))
    }

    /// True for complex64 and complex128 tensors.
    fn is_complex(&self) -> bool {
        self.inner().is_complex()
    }

    /// The angle of each element: `atan2(imag, real)` for complex (a real result), and
    /// `0` or `π` for real input (NaN for NaN).
    fn angle(&self) -> PyResult<PyTensor> {
        wrap(self.inner().angle())
    }
}

/// `strata.complex(real, imag)`: a complex tensor from two float tensors of one dtype.
#[pyfunction]
fn complex(real: &Bound<'_, PyAny>, imag: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    wrap(Tensor::complex(&tensor_arg(real)?, &tensor_arg(imag)?))
}

/// `strata.polar(abs, angle)`: `abs·(cos angle + i·sin angle)` from two float tensors.
#[pyfunction]
fn polar(abs: &Bound<'_, PyAny>, angle: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    wrap(Tensor::polar(&tensor_arg(abs)?, &tensor_arg(angle)?))
}

/// Adds the module functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(complex, m)?)?;
    m.add_function(wrap_pyfunction!(polar, m)?)?;
    Ok(())
}
