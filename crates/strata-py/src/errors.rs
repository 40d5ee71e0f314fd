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
        ErrorKind::Device => "DeviceError",
        ErrorKind::Autograd => "AutogradError",
        ErrorKind::LinAlg => "LinAlgError",
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
        ErrorKind::Resource => Error::Resource { op, msg },
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

/// Runs `f` (which may drop a storage, and so run a foreign owner's code: a DLPack
/// deleter written in Python, a buffer exporter's release) with the thread's pending
/// Python exception, if any, set aside and restored afterwards. CPython requires this of
/// any code that may call into Python while an exception is set (a deallocator running as
/// an error unwinds); without it the callee fails with "error return without exception
/// set" or loses the original error. Costs one load of the thread state when no exception
/// is pending.
///
/// # Safety
/// The thread must hold the GIL (be attached to the interpreter).
pub unsafe fn preserving_error<R>(f: impl FnOnce() -> R) -> R {
    // SAFETY: the GIL is held (caller); `PyErr_Occurred` only reads the thread state.
    if unsafe { pyo3::ffi::PyErr_Occurred() }.is_null() {
        return f();
    }
    let (mut t, mut v, mut tb) = (
        std::ptr::null_mut(),
        std::ptr::null_mut(),
        std::ptr::null_mut(),
    );
    // SAFETY: the GIL is held; the three slots receive owned references, handed back by
    // `PyErr_Restore` (which steals them) after `f`, so the pending error is the same one.
    #[allow(deprecated)]
    unsafe {
        pyo3::ffi::PyErr_Fetch(&mut t, &mut v, &mut tb)
    };
    let r = f();
    // A new error that `f` left set (an exception in a deleter) is reported as
    // unraisable, as CPython does for exceptions in destructors, rather than replacing
    // or chaining onto the one being raised.
    // SAFETY: as above.
    unsafe {
        if !pyo3::ffi::PyErr_Occurred().is_null() {
            pyo3::ffi::PyErr_WriteUnraisable(std::ptr::null_mut());
        }
        #[allow(deprecated)]
        pyo3::ffi::PyErr_Restore(t, v, tb)
    };
    r
}
