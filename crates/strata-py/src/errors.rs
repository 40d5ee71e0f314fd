//! The one place Rust errors become Python exceptions (classes in `strata/_errors.py`).

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyType;
use strata::{Error, ErrorKind};

/// The exception class name for an error kind.
fn class_name(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::Shape => "ShapeError",
        ErrorKind::Index => "TensorIndexError",
        ErrorKind::DType => "DTypeError",
        ErrorKind::Value => "StrataValueError",
        ErrorKind::ReadOnly => "ReadOnlyError",
        ErrorKind::Borrow => "BorrowError",
        ErrorKind::Overlap => "OverlapError",
        ErrorKind::Overflow => "StrataOverflowError",
        ErrorKind::Resource => "ResourceError",
        ErrorKind::Io => "FileError",
        ErrorKind::Format => "FormatError",
    }
}

/// Converts a strata error into the matching Python exception.
pub fn to_py(e: Error) -> PyErr {
    Python::attach(|py| {
        let msg = e.to_string();
        match py
            .import("strata._errors")
            .and_then(|m| m.getattr(class_name(e.kind())))
        {
            Ok(cls) => match cls.cast_into::<PyType>() {
                Ok(t) => PyErr::from_type(t, msg),
                Err(_) => PyRuntimeError::new_err(msg),
            },
            Err(_) => PyRuntimeError::new_err(msg),
        }
    })
}

/// Raises a strata error of `kind` from Python-side validation.
pub fn err(kind: ErrorKind, op: &'static str, msg: impl Into<String>) -> PyErr {
    let msg = msg.into();
    to_py(match kind {
        ErrorKind::Index => Error::Index { op, msg },
        ErrorKind::DType => Error::DType { op, msg },
        ErrorKind::Value => Error::Value { op, msg },
        ErrorKind::Overflow => Error::Overflow { op, what: msg },
        _ => Error::Shape { op, msg },
    })
}

/// `Result<T, strata::Error>` → `PyResult<T>`.
pub trait IntoPy<T> {
    /// Converts the error.
    fn py(self) -> PyResult<T>;
}

impl<T> IntoPy<T> for Result<T, Error> {
    fn py(self) -> PyResult<T> {
        self.map_err(to_py)
    }
}
