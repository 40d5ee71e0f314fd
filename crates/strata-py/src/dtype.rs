//! `strata.dtype` objects (`strata.float32`, …).

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyAny;
use strata::{DType, ErrorKind};

use crate::errors::err;

/// A tensor element type.
#[pyclass(name = "dtype", module = "strata", frozen, eq, hash, from_py_object)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PyDType(pub DType);

#[pymethods]
impl PyDType {
    fn __repr__(&self) -> String {
        format!("strata.{}", self.0.name())
    }

    /// The dtype's name (`"float32"`).
    #[getter]
    fn name(&self) -> &'static str {
        self.0.name()
    }

    /// Bytes per element.
    #[getter]
    fn itemsize(&self) -> usize {
        self.0.itemsize()
    }

    /// True for floating-point dtypes.
    #[getter]
    fn is_floating_point(&self) -> bool {
        self.0.is_float()
    }

    /// True for the complex dtypes.
    #[getter]
    fn is_complex(&self) -> bool {
        self.0.is_complex()
    }

    /// True for signed dtypes (signed integers, floats and complex).
    #[getter]
    fn is_signed(&self) -> bool {
        matches!(
            self.0.kind(),
            strata::DTypeKind::Int | strata::DTypeKind::Float | strata::DTypeKind::Complex
        )
    }

    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyAny>, (String,))> {
        let f = py.import("strata")?.getattr("_dtype_from_name")?;
        Ok((f, (self.0.name().into(),)))
    }
}

/// The one `strata.dtype` object of `dt`: the module's attribute (`strata.float32`) and
/// what every dtype handed to Python is, so that `t.dtype is strata.float32` holds, as
/// PyTorch's dtypes are singletons (and the getter allocates nothing).
pub fn canonical(py: Python<'_>, dt: DType) -> PyResult<Bound<'_, PyDType>> {
    static TABLE: PyOnceLock<Vec<Py<PyDType>>> = PyOnceLock::new();
    let table = TABLE.get_or_try_init(py, || {
        DType::ALL
            .iter()
            .map(|&d| Py::new(py, PyDType(d)))
            .collect::<PyResult<Vec<_>>>()
    })?;
    // `ALL` lists every dtype once, so the search always finds it.
    let i = DType::ALL.iter().position(|&d| d == dt).unwrap_or(0);
    Ok(table[i].bind(py).clone())
}

/// Whether `obj` names a dtype rather than a shape: a `strata.dtype`, a string, a type
/// (`np.float64`, `float`, `bool`) or a NumPy dtype object (`np.dtype('f8')`).
pub fn is_dtype_like(obj: &Bound<'_, PyAny>) -> bool {
    obj.is_instance_of::<PyDType>()
        || obj.is_instance_of::<pyo3::types::PyString>()
        || obj.is_instance_of::<pyo3::types::PyType>()
        || is_numpy_dtype(obj)
}

/// A `numpy.dtype` instance (its class is `numpy.dtype` or, in NumPy 2, a subclass in
/// `numpy.dtypes`).
fn is_numpy_dtype(obj: &Bound<'_, PyAny>) -> bool {
    obj.get_type().module().is_ok_and(|m| {
        m.to_str()
            .is_ok_and(|m| m == "numpy" || m.starts_with("numpy."))
    }) && obj.hasattr("kind").unwrap_or(false)
        && obj.hasattr("itemsize").unwrap_or(false)
        && obj.hasattr("byteorder").unwrap_or(false)
}

/// Reads a dtype argument: a `strata.dtype`, a name string, or a NumPy dtype/type (by
/// its name).
pub fn parse_dtype(obj: &Bound<'_, PyAny>) -> PyResult<DType> {
    if let Ok(d) = obj.extract::<PyDType>() {
        return Ok(d.0);
    }
    if is_numpy_dtype(obj) {
        let order: String = obj.getattr("byteorder")?.extract()?;
        let native = if cfg!(target_endian = "little") {
            '<'
        } else {
            '>'
        };
        let swapped = if native == '<' { '>' } else { '<' };
        if order.starts_with(swapped) {
            return Err(err(
                ErrorKind::DType,
                "dtype",
                format!(
                    "{} has non-native byte order; strata dtypes are native-endian",
                    obj.repr()?
                ),
            ));
        }
    }
    let name: String = if let Ok(s) = obj.extract::<String>() {
        s
    } else if let Ok(n) = obj.getattr("name").and_then(|n| n.extract::<String>()) {
        n
    } else if let Ok(n) = obj.getattr("__name__").and_then(|n| n.extract::<String>()) {
        n
    } else {
        return Err(err(
            ErrorKind::DType,
            "dtype",
            format!("expected a strata dtype, got {}", obj.repr()?),
        ));
    };
    let name = match name.as_str() {
        "bool_" => "bool",
        "float" => "float64",
        "complex" => "complex128",
        "int" => "int64",
        other => other,
    };
    DType::from_name(name).ok_or_else(|| {
        err(
            ErrorKind::DType,
            "dtype",
            format!("unsupported dtype {name:?}"),
        )
    })
}

/// Reads an optional dtype argument.
pub fn opt_dtype(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<DType>> {
    match obj {
        None => Ok(None),
        Some(o) if o.is_none() => Ok(None),
        Some(o) => parse_dtype(o).map(Some),
    }
}
