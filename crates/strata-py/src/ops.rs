//! Engine ops on `strata.Tensor`: methods, operators and the NumPy export methods. The
//! GIL is released around every kernel.

use std::ffi::c_int;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyAny, PyDict, PyTuple};
use strata::kernel::plan::{result_type, Operand};
use strata::{DType, Scalar, Tensor};

use crate::buffer;
use crate::convert::{as_scalar, int_list};
use crate::errors::IntoPy;
use crate::tensor::{tensor_arg, PyTensor};

/// An operand from Python: a tensor (or data turned into one) or a weak scalar.
enum Arg {
    T(Tensor),
    S(Scalar),
}

impl Arg {
    fn from_py(obj: &Bound<'_, PyAny>) -> PyResult<Arg> {
        if let Ok(t) = obj.cast::<PyTensor>() {
            return Ok(Arg::T(t.get().inner.clone()));
        }
        match as_scalar(obj)? {
            Some(s) => Ok(Arg::S(s)),
            None => Ok(Arg::T(tensor_arg(obj)?)),
        }
    }

    /// The operand's shape (a scalar: 0-d).
    fn shape(&self) -> &[usize] {
        match self {
            Arg::T(t) => t.shape(),
            Arg::S(_) => &[],
        }
    }

    fn operand(&self) -> Operand<'_> {
        match self {
            Arg::T(t) => Operand::Tensor(t),
            Arg::S(s) => Operand::Scalar(*s),
        }
    }
}

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
fn broadcast_numel(shapes: &[&[usize]]) -> usize {
    strata::layout::broadcast::broadcast_all("", shapes)
        .map_or(0, |s| s.iter().fold(1, |n, &k| n.saturating_mul(k)))
}

/// The work of a matrix product, bounded above by the product of the operands' sizes
/// (m·k · k·n ≥ m·k·n multiply-adds), so a product of small operands keeps the GIL and
/// one with a large output or inner dim releases it.
fn matmul_work(a: &Tensor, b: &Tensor) -> usize {
    a.numel().saturating_mul(b.numel())
}

fn wrap(r: strata::Result<Tensor>) -> PyResult<PyTensor> {
    r.py().map(PyTensor::wrap)
}

macro_rules! unary {
    ($($name:ident),* $(,)?) => {
        #[pymethods]
        impl PyTensor {
            $(
                fn $name(&self, py: Python<'_>) -> PyResult<PyTensor> {
                    let t = self.inner.clone();
                    wrap(nogil(py, t.numel(), move || t.$name()))
                }
            )*
        }
    };
}

unary!(
    neg,
    abs,
    sign,
    sqrt,
    rsqrt,
    exp,
    exp2,
    log,
    log2,
    log1p,
    expm1,
    sin,
    cos,
    tan,
    tanh,
    sigmoid,
    relu,
    gelu,
    floor,
    ceil,
    round,
    trunc,
    reciprocal,
    square,
    logical_not,
    bitwise_not,
    isnan,
    isinf,
    isfinite
);

macro_rules! unary_inplace {
    ($($name:ident),* $(,)?) => {
        #[pymethods]
        impl PyTensor {
            $(
                fn $name<'py>(slf: PyRef<'py, Self>) -> PyResult<PyRef<'py, Self>> {
                    let t = slf.inner.clone();
                    nogil(slf.py(), t.numel(), move || t.$name().map(|_| ())).py()?;
                    Ok(slf)
                }
            )*
        }
    };
}

unary_inplace!(neg_, abs_, sqrt_, exp_, log_, relu_, sigmoid_, tanh_);

macro_rules! binary {
    ($($name:ident),* $(,)?) => {
        #[pymethods]
        impl PyTensor {
            $(
                fn $name(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
                    let a = self.inner.clone();
                    let b = Arg::from_py(other)?;
                    wrap(nogil(py, broadcast_numel(&[a.shape(), b.shape()]), move || a.$name(b.operand())))
                }
            )*
        }
    };
}

binary!(
    add,
    sub,
    mul,
    div,
    floor_divide,
    remainder,
    pow,
    maximum,
    minimum,
    atan2,
    eq,
    ne,
    lt,
    le,
    gt,
    ge,
    logical_and,
    logical_or,
    logical_xor,
    bitwise_and,
    bitwise_or,
    bitwise_xor,
    bitwise_left_shift,
    bitwise_right_shift
);

macro_rules! binary_inplace {
    ($($name:ident),* $(,)?) => {
        #[pymethods]
        impl PyTensor {
            $(
                fn $name<'py>(slf: PyRef<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<PyRef<'py, Self>> {
                    let a = slf.inner.clone();
                    let b = Arg::from_py(other)?;
                    nogil(slf.py(), broadcast_numel(&[a.shape(), b.shape()]), move || a.$name(b.operand()).map(|_| ())).py()?;
                    Ok(slf)
                }
            )*
        }
    };
}

binary_inplace!(
    add_,
    sub_,
    mul_,
    div_,
    floor_divide_,
    remainder_,
    pow_,
    maximum_,
    minimum_,
    bitwise_and_,
    bitwise_or_,
    bitwise_xor_
);

/// `rhs OP self` for a reflected operator: a Python scalar on the left stays weak
/// (`300 - uint8_tensor` is uint8, `True - uint8_tensor` is refused as `t - True` is).
fn reflected(
    py: Python<'_>,
    this: &Tensor,
    other: &Bound<'_, PyAny>,
    name: &'static str,
    f: fn(&Tensor, &Tensor) -> strata::Result<Tensor>,
) -> PyResult<PyTensor> {
    let b = this.clone();
    match Arg::from_py(other)? {
        Arg::S(s) => wrap(nogil(py, b.numel(), move || {
            strata::kernel::scalar_lhs(name, s, &b)
        })),
        Arg::T(a) => wrap(nogil(
            py,
            broadcast_numel(&[a.shape(), b.shape()]),
            move || f(&a, &b),
        )),
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
    let b = rhs.inner.clone();
    let name = name.to_owned();
    wrap(nogil(py, b.numel(), move || {
        strata::kernel::scalar_lhs(&name, s, &b)
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
    nogil(py, broadcast_numel(&[a.shape(), b.shape()]), move || {
        f(&a, b.operand())
    })
    .py()
}

// Python operators, each mapped to the named method. (Written out by hand: PyO3's magic
// methods cannot come from a `macro_rules!` expansion.)
#[pymethods]
impl PyTensor {
    fn __add__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.add(py, other)
    }

    fn __radd__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        reflected(py, &self.inner, other, "add", |a, b| a.add(b))
    }

    fn __iadd__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(py, &self.inner, other, |a, b| a.add_(b).map(|_| ()))
    }

    fn __sub__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.sub(py, other)
    }

    fn __rsub__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        reflected(py, &self.inner, other, "sub", |a, b| a.sub(b))
    }

    fn __isub__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(py, &self.inner, other, |a, b| a.sub_(b).map(|_| ()))
    }

    fn __mul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.mul(py, other)
    }

    fn __rmul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        reflected(py, &self.inner, other, "mul", |a, b| a.mul(b))
    }

    fn __imul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(py, &self.inner, other, |a, b| a.mul_(b).map(|_| ()))
    }

    fn __truediv__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.div(py, other)
    }

    fn __rtruediv__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        reflected(py, &self.inner, other, "div", |a, b| a.div(b))
    }

    fn __itruediv__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(py, &self.inner, other, |a, b| a.div_(b).map(|_| ()))
    }

    fn __floordiv__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.floor_divide(py, other)
    }

    fn __rfloordiv__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        reflected(py, &self.inner, other, "floor_divide", |a, b| {
            a.floor_divide(b)
        })
    }

    fn __ifloordiv__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(py, &self.inner, other, |a, b| {
            a.floor_divide_(b).map(|_| ())
        })
    }

    fn __mod__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.remainder(py, other)
    }

    fn __rmod__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        reflected(py, &self.inner, other, "remainder", |a, b| a.remainder(b))
    }

    fn __imod__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(py, &self.inner, other, |a, b| a.remainder_(b).map(|_| ()))
    }

    fn __and__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.bitwise_and(py, other)
    }

    fn __rand__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        reflected(py, &self.inner, other, "bitwise_and", |a, b| {
            a.bitwise_and(b)
        })
    }

    fn __iand__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(py, &self.inner, other, |a, b| a.bitwise_and_(b).map(|_| ()))
    }

    fn __or__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.bitwise_or(py, other)
    }

    fn __ror__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        reflected(py, &self.inner, other, "bitwise_or", |a, b| a.bitwise_or(b))
    }

    fn __ior__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(py, &self.inner, other, |a, b| a.bitwise_or_(b).map(|_| ()))
    }

    fn __xor__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.bitwise_xor(py, other)
    }

    fn __rxor__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        reflected(py, &self.inner, other, "bitwise_xor", |a, b| {
            a.bitwise_xor(b)
        })
    }

    fn __ixor__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(py, &self.inner, other, |a, b| a.bitwise_xor_(b).map(|_| ()))
    }

    fn __lshift__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.bitwise_left_shift(py, other)
    }

    fn __rlshift__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        reflected(py, &self.inner, other, "bitwise_left_shift", |a, b| {
            a.bitwise_left_shift(b)
        })
    }

    fn __ilshift__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(py, &self.inner, other, |a, b| {
            a.bitwise_left_shift_(b).map(|_| ())
        })
    }

    fn __rshift__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.bitwise_right_shift(py, other)
    }

    fn __rrshift__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        reflected(py, &self.inner, other, "bitwise_right_shift", |a, b| {
            a.bitwise_right_shift(b)
        })
    }

    fn __irshift__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<()> {
        inplace(py, &self.inner, other, |a, b| {
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
        reflected(py, &self.inner, other, "pow", |a, b| a.pow(b))
    }

    fn __ipow__(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        modulo: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        no_modulo(modulo)?;
        inplace(py, &self.inner, other, |a, b| a.pow_(b).map(|_| ()))
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

    /// Tensors hash by identity, as in PyTorch.
    fn __hash__(slf: &Bound<'_, Self>) -> isize {
        slf.as_ptr() as isize
    }

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
        if self.inner.dtype() == DType::Bool {
            self.logical_not(py)
        } else {
            self.bitwise_not(py)
        }
    }

    fn __matmul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.matmul(py, other)
    }

    fn __rmatmul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let a = tensor_arg(other)?;
        let b = self.inner.clone();
        wrap(nogil(py, matmul_work(&a, &b), move || a.matmul(&b)))
    }

    fn matmul(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let (a, b) = (self.inner.clone(), tensor_arg(other)?);
        wrap(nogil(py, matmul_work(&a, &b), move || a.matmul(&b)))
    }

    fn mm(&self, py: Python<'_>, mat2: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let (a, b) = (self.inner.clone(), tensor_arg(mat2)?);
        wrap(nogil(py, matmul_work(&a, &b), move || a.mm(&b)))
    }

    fn mv(&self, py: Python<'_>, vec: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let (a, b) = (self.inner.clone(), tensor_arg(vec)?);
        wrap(nogil(py, matmul_work(&a, &b), move || a.mv(&b)))
    }

    fn bmm(&self, py: Python<'_>, mat2: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let (a, b) = (self.inner.clone(), tensor_arg(mat2)?);
        wrap(nogil(py, matmul_work(&a, &b), move || a.bmm(&b)))
    }

    fn dot(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let (a, b) = (self.inner.clone(), tensor_arg(other)?);
        wrap(nogil(py, matmul_work(&a, &b), move || a.dot(&b)))
    }

    fn outer(&self, py: Python<'_>, vec2: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let (a, b) = (self.inner.clone(), tensor_arg(vec2)?);
        wrap(nogil(py, matmul_work(&a, &b), move || a.outer(&b)))
    }

    /// `clamp(min=None, max=None)` with numbers or tensors as bounds.
    #[pyo3(signature = (min=None, max=None))]
    fn clamp(
        &self,
        py: Python<'_>,
        min: Option<&Bound<'_, PyAny>>,
        max: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let a = self.inner.clone();
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
        let a = slf.inner.clone();
        let lo = min.filter(|m| !m.is_none()).map(Arg::from_py).transpose()?;
        let hi = max.filter(|m| !m.is_none()).map(Arg::from_py).transpose()?;
        nogil(slf.py(), a.numel(), move || {
            a.clamp_operands_(lo.as_ref().map(Arg::operand), hi.as_ref().map(Arg::operand))
                .map(|_| ())
        })
        .py()?;
        Ok(slf)
    }

    // ----- reductions -----

    #[pyo3(signature = (dim=None, keepdim=false))]
    fn sum(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<PyTensor> {
        let (t, d) = (self.inner.clone(), dims_arg(dim)?);
        wrap(nogil(py, t.numel(), move || t.sum(&d, keepdim)))
    }

    #[pyo3(signature = (dim=None, keepdim=false))]
    fn prod(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<PyTensor> {
        let (t, d) = (self.inner.clone(), dims_arg(dim)?);
        wrap(nogil(py, t.numel(), move || t.prod(&d, keepdim)))
    }

    #[pyo3(signature = (dim=None, keepdim=false))]
    fn mean(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<PyTensor> {
        let (t, d) = (self.inner.clone(), dims_arg(dim)?);
        wrap(nogil(py, t.numel(), move || t.mean(&d, keepdim)))
    }

    #[pyo3(signature = (dim=None, keepdim=false))]
    fn amax(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<PyTensor> {
        let (t, d) = (self.inner.clone(), dims_arg(dim)?);
        wrap(nogil(py, t.numel(), move || t.amax(&d, keepdim)))
    }

    #[pyo3(signature = (dim=None, keepdim=false))]
    fn amin(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<PyTensor> {
        let (t, d) = (self.inner.clone(), dims_arg(dim)?);
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
        let t = self.inner.clone();
        wrap(nogil(py, t.numel(), move || t.argmax(dim, keepdim)))
    }

    #[pyo3(signature = (dim=None, keepdim=false))]
    fn argmin(&self, py: Python<'_>, dim: Option<i64>, keepdim: bool) -> PyResult<PyTensor> {
        let t = self.inner.clone();
        wrap(nogil(py, t.numel(), move || t.argmin(dim, keepdim)))
    }

    #[pyo3(signature = (dim=None, keepdim=false))]
    fn all(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<PyTensor> {
        let (t, d) = (self.inner.clone(), dims_arg(dim)?);
        wrap(nogil(py, t.numel(), move || t.all(&d, keepdim)))
    }

    #[pyo3(signature = (dim=None, keepdim=false))]
    fn any(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<PyTensor> {
        let (t, d) = (self.inner.clone(), dims_arg(dim)?);
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
        let (t, d) = (self.inner.clone(), dims_arg(dim)?);
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
        let (t, d) = (self.inner.clone(), dims_arg(dim)?);
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
        let (t, d) = (self.inner.clone(), int_list(dim)?);
        wrap(nogil(py, t.numel(), move || t.logsumexp(&d, keepdim)))
    }

    fn cumsum(&self, py: Python<'_>, dim: i64) -> PyResult<PyTensor> {
        let t = self.inner.clone();
        wrap(nogil(py, t.numel(), move || t.cumsum(dim)))
    }

    fn cumprod(&self, py: Python<'_>, dim: i64) -> PyResult<PyTensor> {
        let t = self.inner.clone();
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
        buffer::array_interface(py, &self.inner)
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
        let t = self.inner.clone();
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
fn result_type_of(a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<crate::dtype::PyDType> {
    let (x, y) = (Arg::from_py(a)?, Arg::from_py(b)?);
    result_type(&[x.operand(), y.operand()])
        .py()
        .map(crate::dtype::PyDType)
}

/// Registers the module-level op functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(where_, m)?)?;
    m.add_function(wrap_pyfunction!(_scalar_lhs, m)?)?;
    let f = wrap_pyfunction!(result_type_of, m)?;
    m.add("result_type", f)?;
    Ok(())
}
