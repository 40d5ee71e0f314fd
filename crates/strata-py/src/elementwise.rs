//! The elementwise ops on `strata.Tensor`, generated from the op table
//! (`strata/src/ops/table.rs`): one native method per op and per in-place variant (the
//! same per-call path as a hand-written method), the Python operators, `clamp`, `where`,
//! `result_type`, and `_op_table()`, from which `strata/__init__.py` builds its module
//! functions. The GIL is released around every kernel large enough.

use pyo3::prelude::*;
use pyo3::types::{PyAny, PyList};
use strata::kernel::plan::{result_type, Operand};
use strata::{DType, Scalar, Tensor};

use crate::compute::{broadcast_numel, nogil, wrap};
use crate::convert::as_scalar;
use crate::errors::IntoPy;
use crate::tensor::{tensor_arg, PyTensor};

/// An operand from Python: a tensor (borrowed from its object, or data turned into one)
/// or a weak scalar.
pub(crate) enum Arg<'a> {
    T(Tensor),
    R(&'a Tensor),
    S(Scalar),
}

impl<'a> Arg<'a> {
    pub(crate) fn from_py(obj: &'a Bound<'_, PyAny>) -> PyResult<Arg<'a>> {
        if let Ok(t) = obj.cast::<PyTensor>() {
            // The object (frozen) outlives the call: no new handle needed.
            return Ok(Arg::R(t.get().inner()));
        }
        match as_scalar(obj)? {
            Some(s) => Ok(Arg::S(s)),
            None => Ok(Arg::T(tensor_arg(obj)?)),
        }
    }

    /// The operand's shape (a scalar: 0-d).
    pub(crate) fn shape(&self) -> &[usize] {
        match self {
            Arg::T(t) => t.shape(),
            Arg::R(t) => t.shape(),
            Arg::S(_) => &[],
        }
    }

    pub(crate) fn operand(&self) -> Operand<'_> {
        match self {
            Arg::T(t) => Operand::Tensor(t),
            Arg::R(t) => Operand::Tensor(t),
            Arg::S(s) => Operand::Scalar(*s),
        }
    }
}

/// The unary methods and their in-place variants, from the op table.
macro_rules! py_unary {
    ($( $(#[doc = $doc:tt])* $Kind:ident $name:ident inplace($($ip:ident)?) rule($($rule:tt)*)
        cost($cost:ident) cuda($($cu:tt)*) kernel($($k:tt)*) grad($($gr:tt)*); )*) => {
        #[pymethods]
        impl PyTensor {
            $(
                $(#[doc = $doc])*
                pub(crate) fn $name(&self, py: Python<'_>) -> PyResult<PyTensor> {
                    // By reference, also without the GIL: the object (frozen) outlives the
                    // call, and a new handle was an atomic count up and down per call.
                    let t = self.inner();
                    wrap(nogil(py, t.numel(), || t.$name()))
                }
            )*
        }

        #[pymethods]
        impl PyTensor {
            $($(
                #[doc = concat!("In-place ``", stringify!($name), "``.")]
                fn $ip<'py>(slf: PyRef<'py, Self>) -> PyResult<PyRef<'py, Self>> {
                    let t = slf.inner().clone();
                    nogil(slf.py(), t.numel(), move || t.$ip().map(|_| ())).py()?;
                    Ok(slf)
                }
            )?)*
        }
    };
}

strata::for_each_unary_op!(py_unary);

/// The binary methods and their in-place variants, from the op table.
macro_rules! py_binary {
    ($( $(#[doc = $doc:tt])* $Kind:ident $name:ident inplace($($ip:ident)?) rule($($rule:tt)*)
        cost($cost:ident) check($check:ident) cuda($($cu:tt)*) kernel($($k:tt)*) grad($($gr:tt)*); )*) => {
        #[pymethods]
        impl PyTensor {
            $(
                $(#[doc = $doc])*
                pub(crate) fn $name(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
                    let a = self.inner();
                    let b = Arg::from_py(other)?;
                    wrap(nogil(py, broadcast_numel(&[a.shape(), b.shape()]), || a.$name(b.operand())))
                }
            )*
        }

        #[pymethods]
        impl PyTensor {
            $($(
                #[doc = concat!("In-place ``", stringify!($name), "``.")]
                fn $ip<'py>(slf: PyRef<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<PyRef<'py, Self>> {
                    let a = slf.inner().clone();
                    let b = Arg::from_py(other)?;
                    let r = nogil(slf.py(), broadcast_numel(&[a.shape(), b.shape()]), || a.$ip(b.operand()).map(|_| ()));
                    // An op that made `a` require grad (`zeros(3).add_(w)`) made it on the clone.
                    slf.inner().adopt_autograd(&a);
                    r.py()?;
                    Ok(slf)
                }
            )?)*
        }
    };
}

strata::for_each_binary_op!(py_binary);

/// `_op_table()`: the elementwise ops as `(name, arity, in-place name or None)`, unary,
/// then binary, then ternary, in table order.
#[pyfunction]
fn _op_table(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let rows: Vec<(&str, u8, Option<&str>)> = strata::ops::op_table()
        .map(|o| (o.name, o.arity, o.inplace))
        .collect();
    PyList::new(py, rows)
}

/// `rhs OP self` for a reflected operator: a Python scalar on the left stays weak
/// (`300 - uint8_tensor` is uint8, `True - uint8_tensor` is refused as `t - True` is).
fn reflected(
    py: Python<'_>,
    this: &Tensor,
    other: &Bound<'_, PyAny>,
    name: &'static str,
    f: fn(&Tensor, &Tensor) -> strata::Result<Tensor>,
) -> PyResult<PyTensor> {
    let b = this;
    match Arg::from_py(other)? {
        Arg::S(s) => wrap(nogil(py, b.numel(), || strata::ops::scalar_lhs(name, s, b))),
        Arg::T(a) => wrap(nogil(py, broadcast_numel(&[a.shape(), b.shape()]), || {
            f(&a, b)
        })),
        Arg::R(a) => wrap(nogil(py, broadcast_numel(&[a.shape(), b.shape()]), || {
            f(a, b)
        })),
    }
}

/// Python's three-argument `pow(t, e, mod)` has no tensor meaning: refuse it.
fn no_modulo(modulo: &Bound<'_, PyAny>) -> PyResult<()> {
    if modulo.is_none() {
        Ok(())
    } else {
        Err(pyo3::exceptions::PyTypeError::new_err(
            "pow(): three-argument pow (a modulus) is not supported for tensors",
        ))
    }
}

/// `strata.<op>(scalar, tensor)`: the module function with a Python scalar first, weak.
#[pyfunction]
pub fn _scalar_lhs(
    py: Python<'_>,
    name: &str,
    lhs: &Bound<'_, PyAny>,
    rhs: &PyTensor,
) -> PyResult<PyTensor> {
    let s = as_scalar(lhs)?.ok_or_else(|| {
        crate::errors::err(
            strata::ErrorKind::DType,
            "scalar_lhs",
            format!("expected a Python number, got {}", lhs.get_type()),
        )
    })?;
    let b = rhs.inner().clone();
    let name = name.to_owned();
    wrap(nogil(py, b.numel(), move || {
        strata::ops::scalar_lhs(&name, s, &b)
    }))
}

/// `self OP= rhs`.
fn inplace(
    py: Python<'_>,
    this: &Tensor,
    other: &Bound<'_, PyAny>,
    f: fn(&Tensor, Operand<'_>) -> strata::Result<()>,
) -> PyResult<()> {
    let a = this.clone();
    let b = Arg::from_py(other)?;
    let r = nogil(py, broadcast_numel(&[a.shape(), b.shape()]), || {
        f(&a, b.operand())
    });
    // An op that made `a` require grad (`zeros(3).add_(w)`) made it on the clone.
    this.adopt_autograd(&a);
    r.py()
}

// Python operators, each mapped to the named method. (Written out by hand: PyO3's magic
// methods cannot come from a `macro_rules!` expansion.)
#[pymethods]
impl PyTensor {
    fn __add__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.add(py, other)
    }

    fn __radd__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        reflected(py, self.inner(), other, "add", |a, b| a.add(b))
    }

    fn __iadd__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(py, self.inner(), other, |a, b| a.add_(b).map(|_| ()))
    }

    fn __sub__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.sub(py, other)
    }

    fn __rsub__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        reflected(py, self.inner(), other, "sub", |a, b| a.sub(b))
    }

    fn __isub__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(py, self.inner(), other, |a, b| a.sub_(b).map(|_| ()))
    }

    fn __mul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.mul(py, other)
    }

    fn __rmul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        reflected(py, self.inner(), other, "mul", |a, b| a.mul(b))
    }

    fn __imul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(py, self.inner(), other, |a, b| a.mul_(b).map(|_| ()))
    }

    fn __truediv__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.div(py, other)
    }

    fn __rtruediv__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        reflected(py, self.inner(), other, "div", |a, b| a.div(b))
    }

    fn __itruediv__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(py, self.inner(), other, |a, b| a.div_(b).map(|_| ()))
    }

    fn __floordiv__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.floor_divide(py, other)
    }

    fn __rfloordiv__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        reflected(py, self.inner(), other, "floor_divide", |a, b| {
            a.floor_divide(b)
        })
    }

    fn __ifloordiv__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(py, self.inner(), other, |a, b| {
            a.floor_divide_(b).map(|_| ())
        })
    }

    fn __mod__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.remainder(py, other)
    }

    fn __rmod__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        reflected(py, self.inner(), other, "remainder", |a, b| a.remainder(b))
    }

    fn __imod__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(py, self.inner(), other, |a, b| a.remainder_(b).map(|_| ()))
    }

    fn __and__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.bitwise_and(py, other)
    }

    fn __rand__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        reflected(py, self.inner(), other, "bitwise_and", |a, b| {
            a.bitwise_and(b)
        })
    }

    fn __iand__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(py, self.inner(), other, |a, b| {
            a.bitwise_and_(b).map(|_| ())
        })
    }

    fn __or__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.bitwise_or(py, other)
    }

    fn __ror__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        reflected(py, self.inner(), other, "bitwise_or", |a, b| {
            a.bitwise_or(b)
        })
    }

    fn __ior__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(py, self.inner(), other, |a, b| a.bitwise_or_(b).map(|_| ()))
    }

    fn __xor__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.bitwise_xor(py, other)
    }

    fn __rxor__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        reflected(py, self.inner(), other, "bitwise_xor", |a, b| {
            a.bitwise_xor(b)
        })
    }

    fn __ixor__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(py, self.inner(), other, |a, b| {
            a.bitwise_xor_(b).map(|_| ())
        })
    }

    fn __lshift__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.bitwise_left_shift(py, other)
    }

    fn __rlshift__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        reflected(py, self.inner(), other, "bitwise_left_shift", |a, b| {
            a.bitwise_left_shift(b)
        })
    }

    fn __ilshift__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(py, self.inner(), other, |a, b| {
            a.bitwise_left_shift_(b).map(|_| ())
        })
    }

    fn __rshift__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.bitwise_right_shift(py, other)
    }

    fn __rrshift__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        reflected(py, self.inner(), other, "bitwise_right_shift", |a, b| {
            a.bitwise_right_shift(b)
        })
    }

    fn __irshift__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(py, self.inner(), other, |a, b| {
            a.bitwise_right_shift_(b).map(|_| ())
        })
    }
}

#[pymethods]
impl PyTensor {
    fn __pow__(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        modulo: &Bound<'_, PyAny>,
    ) -> PyResult<PyTensor> {
        no_modulo(modulo)?;
        self.pow(py, other)
    }

    fn __rpow__(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        modulo: &Bound<'_, PyAny>,
    ) -> PyResult<PyTensor> {
        no_modulo(modulo)?;
        reflected(py, self.inner(), other, "pow", |a, b| a.pow(b))
    }

    fn __ipow__(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        modulo: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        no_modulo(modulo)?;
        inplace(py, self.inner(), other, |a, b| a.pow_(b).map(|_| ()))
    }

    /// `==`: elementwise; an operand that is not a tensor, a number or array data (`None`,
    /// an arbitrary object) gives `NotImplemented`, so Python falls back to identity
    /// (`t == None` is False), as PyTorch does.
    fn __eq__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        if Arg::from_py(other).is_err() {
            return Ok(py.NotImplemented());
        }
        Ok(Py::new(py, self.eq(py, other)?)?.into_any())
    }

    fn __ne__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        if Arg::from_py(other).is_err() {
            return Ok(py.NotImplemented());
        }
        Ok(Py::new(py, self.ne(py, other)?)?.into_any())
    }

    fn __lt__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.lt(py, other)
    }

    fn __le__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.le(py, other)
    }

    fn __gt__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.gt(py, other)
    }

    fn __ge__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.ge(py, other)
    }
}

#[pymethods]
impl PyTensor {
    fn __neg__(&self, py: Python<'_>) -> PyResult<PyTensor> {
        self.neg(py)
    }

    fn __pos__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __abs__(&self, py: Python<'_>) -> PyResult<PyTensor> {
        self.abs(py)
    }

    fn __invert__(&self, py: Python<'_>) -> PyResult<PyTensor> {
        if self.inner().dtype() == DType::Bool {
            self.logical_not(py)
        } else {
            self.bitwise_not(py)
        }
    }

    /// `clamp(min=None, max=None)` with numbers or tensors as bounds.
    #[pyo3(signature = (min=None, max=None))]
    fn clamp(
        &self,
        py: Python<'_>,
        min: Option<&Bound<'_, PyAny>>,
        max: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let a = self.inner().clone();
        let lo = min.filter(|m| !m.is_none()).map(Arg::from_py).transpose()?;
        let hi = max.filter(|m| !m.is_none()).map(Arg::from_py).transpose()?;
        let bounds = [&lo, &hi].map(|b| b.as_ref().map_or(&[][..], Arg::shape));
        let work = broadcast_numel(&[a.shape(), bounds[0], bounds[1]]);
        wrap(nogil(py, work, move || {
            a.clamp_operands(lo.as_ref().map(Arg::operand), hi.as_ref().map(Arg::operand))
        }))
    }

    #[pyo3(signature = (min=None, max=None))]
    fn clamp_<'py>(
        slf: PyRef<'py, Self>,
        min: Option<&Bound<'py, PyAny>>,
        max: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<PyRef<'py, Self>> {
        let a = slf.inner().clone();
        let lo = min.filter(|m| !m.is_none()).map(Arg::from_py).transpose()?;
        let hi = max.filter(|m| !m.is_none()).map(Arg::from_py).transpose()?;
        let r = nogil(slf.py(), a.numel(), || {
            a.clamp_operands_(lo.as_ref().map(Arg::operand), hi.as_ref().map(Arg::operand))
                .map(|_| ())
        });
        slf.inner().adopt_autograd(&a);
        r.py()?;
        Ok(slf)
    }
}

#[pymethods]
impl PyTensor {
    /// `masked_fill(mask, value)`: `value` (a number or a 0-d tensor) where `mask` is true.
    fn masked_fill(
        &self,
        py: Python<'_>,
        mask: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<PyTensor> {
        let a = self.inner();
        let m = tensor_arg(mask)?;
        let v = Arg::from_py(value)?;
        wrap(nogil(py, broadcast_numel(&[a.shape(), m.shape()]), || {
            a.masked_fill(&m, v.operand())
        }))
    }

    /// In-place `masked_fill`.
    fn masked_fill_<'py>(
        slf: PyRef<'py, Self>,
        mask: &Bound<'py, PyAny>,
        value: &Bound<'py, PyAny>,
    ) -> PyResult<PyRef<'py, Self>> {
        let a = slf.inner().clone();
        let m = tensor_arg(mask)?;
        let v = Arg::from_py(value)?;
        let r = nogil(slf.py(), a.numel(), || {
            a.masked_fill_(&m, v.operand()).map(|_| ())
        });
        slf.inner().adopt_autograd(&a);
        r.py()?;
        Ok(slf)
    }
}

/// `where(cond, a, b)` as a module function.
#[pyfunction]
#[pyo3(name = "where")]
fn where_(
    py: Python<'_>,
    condition: &Bound<'_, PyAny>,
    input: &Bound<'_, PyAny>,
    other: &Bound<'_, PyAny>,
) -> PyResult<PyTensor> {
    let c = tensor_arg(condition)?;
    let (a, b) = (Arg::from_py(input)?, Arg::from_py(other)?);
    wrap(nogil(
        py,
        broadcast_numel(&[c.shape(), a.shape(), b.shape()]),
        move || Tensor::where_cond(&c, a.operand(), b.operand()),
    ))
}

/// `result_type(a, b)`.
#[pyfunction]
fn result_type_of<'py>(
    a: &Bound<'py, PyAny>,
    b: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, crate::dtype::PyDType>> {
    let (x, y) = (Arg::from_py(a)?, Arg::from_py(b)?);
    let dt = result_type(&[x.operand(), y.operand()]).py()?;
    crate::dtype::canonical(a.py(), dt)
}

/// Registers the module-level elementwise functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(where_, m)?)?;
    m.add_function(wrap_pyfunction!(_scalar_lhs, m)?)?;
    m.add_function(wrap_pyfunction!(_op_table, m)?)?;
    let f = wrap_pyfunction!(result_type_of, m)?;
    m.add("result_type", f)?;
    Ok(())
}
