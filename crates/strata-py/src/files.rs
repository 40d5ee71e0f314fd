//! Tensor files: `.npy` save/load, `from_file`, and the Rust side of `strata.safetensors`.
//! Glue only: parsing, mapping and validation live in `strata::interop`.

use std::collections::HashMap;
use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use strata::interop::npy::{self, NpyLoadOptions};
use strata::interop::{self as io, SafetensorsFile};
use strata::storage::MapMode;
use strata::{DType, ErrorKind, Tensor};

use crate::dtype::opt_dtype;
use crate::errors::{err, IntoPy};
use crate::tensor::PyTensor;

fn map_mode(mode: Option<&str>) -> PyResult<Option<MapMode>> {
    Ok(match mode {
        None => None,
        Some("r") => Some(MapMode::ReadOnly),
        Some("r+") => Some(MapMode::Shared),
        Some("c") => Some(MapMode::CopyOnWrite),
        Some(m) => {
            return Err(err(
                ErrorKind::Value,
                "load",
                format!("mmap_mode must be 'r', 'r+' or 'c', got {m:?}"),
            ))
        }
    })
}

/// `_save_npy(t, path, version)`: writes a `.npy` file.
#[pyfunction]
#[pyo3(signature = (t, path, version=None))]
pub fn _save_npy(
    py: Python<'_>,
    t: &PyTensor,
    path: PathBuf,
    version: Option<(u8, u8)>,
) -> PyResult<()> {
    let t = t.inner().clone();
    py.detach(move || npy::save_npy_version(path, &t, version))
        .py()
}

/// `_load_npy(path, mmap_mode, max_header_size)`: reads a `.npy` file, mapped when
/// `mmap_mode` is 'r', 'r+' or 'c'.
#[pyfunction]
#[pyo3(signature = (path, mmap_mode=None, max_header_size=npy::DEFAULT_MAX_HEADER_LEN))]
pub fn _load_npy(
    py: Python<'_>,
    path: PathBuf,
    mmap_mode: Option<&str>,
    max_header_size: usize,
) -> PyResult<PyTensor> {
    let opts = NpyLoadOptions {
        mmap: map_mode(mmap_mode)?,
        max_header_len: max_header_size,
    };
    py.detach(move || io::load_npy(path, opts))
        .py()
        .map(PyTensor::wrap)
}

/// `strata.from_file(filename, shared=False, size=0, *, dtype=None)`, as
/// `torch.from_file`: a 1-D tensor over the mapped file; with `shared`, writes reach it.
#[pyfunction]
#[pyo3(signature = (filename, shared=None, size=0, *, dtype=None))]
pub fn from_file(
    filename: PathBuf,
    shared: Option<bool>,
    size: usize,
    dtype: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let dtype = opt_dtype(dtype)?.unwrap_or(DType::F32);
    Tensor::from_file(filename, shared.unwrap_or(false), size, dtype)
        .py()
        .map(PyTensor::wrap)
}

/// The `(name, tensor)` pairs of a dict of tensors.
fn named(tensors: &Bound<'_, PyDict>) -> PyResult<Vec<(String, Tensor)>> {
    tensors
        .iter()
        .map(|(k, v)| {
            let name: String = k.extract().map_err(|_| {
                err(
                    ErrorKind::Value,
                    "safetensors save",
                    format!("tensor names must be str, got {}", k.get_type()),
                )
            })?;
            let t = v.cast::<PyTensor>().map_err(|_| {
                err(
                    ErrorKind::DType,
                    "safetensors save",
                    format!("{name:?} is a {}, not a strata Tensor", v.get_type()),
                )
            })?;
            Ok((name, t.get().inner().clone()))
        })
        .collect()
}

fn refs(v: &[(String, Tensor)]) -> Vec<(&str, &Tensor)> {
    v.iter().map(|(n, t)| (n.as_str(), t)).collect()
}

/// `_st_save(tensors, path, metadata)`.
#[pyfunction]
#[pyo3(signature = (tensors, path, metadata=None))]
pub fn _st_save(
    py: Python<'_>,
    tensors: &Bound<'_, PyDict>,
    path: PathBuf,
    metadata: Option<HashMap<String, String>>,
) -> PyResult<()> {
    let v = named(tensors)?;
    py.detach(move || io::save_safetensors(path, &refs(&v), metadata))
        .py()
}

/// `_st_serialize(tensors, metadata) -> bytes`.
#[pyfunction]
#[pyo3(signature = (tensors, metadata=None))]
pub fn _st_serialize<'py>(
    py: Python<'py>,
    tensors: &Bound<'py, PyDict>,
    metadata: Option<HashMap<String, String>>,
) -> PyResult<Bound<'py, PyBytes>> {
    let v = named(tensors)?;
    let bytes = py
        .detach(move || io::serialize_safetensors(&refs(&v), metadata))
        .py()?;
    Ok(PyBytes::new(py, &bytes))
}

/// A safetensors `__metadata__` map.
type Metadata = HashMap<String, String>;

/// `_st_deserialize(data) -> (dict, metadata)`: copies every tensor out of `data`.
#[pyfunction]
pub fn _st_deserialize<'py>(
    py: Python<'py>,
    data: &[u8],
) -> PyResult<(Bound<'py, PyDict>, Option<Metadata>)> {
    let (tensors, meta) = io::deserialize_safetensors(data).py()?;
    let d = PyDict::new(py);
    for (n, t) in tensors {
        d.set_item(n, PyTensor::wrap(t))?;
    }
    Ok((d, meta))
}

/// An open safetensors file: the header is parsed once, tensors are mapped on demand from
/// the file that was opened (never by reopening the path, which may have been replaced
/// since), until `close()`.
#[pyclass(name = "_SafeFile", module = "strata._strata", frozen)]
pub struct PySafeFile {
    file: std::sync::Mutex<Option<std::sync::Arc<SafetensorsFile>>>,
}

impl PySafeFile {
    fn open_file(&self) -> PyResult<std::sync::Arc<SafetensorsFile>> {
        self.file
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .ok_or_else(|| {
                err(
                    ErrorKind::Value,
                    "safe_open",
                    "the file is closed (safe_open's `with` block has ended); tensors taken before stay valid",
                )
            })
    }
}

#[pymethods]
impl PySafeFile {
    #[new]
    fn new(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let file = py.detach(move || SafetensorsFile::open(path)).py()?;
        Ok(PySafeFile {
            file: std::sync::Mutex::new(Some(std::sync::Arc::new(file))),
        })
    }

    /// Tensor names in file order.
    fn keys(&self) -> PyResult<Vec<String>> {
        Ok(self.open_file()?.names())
    }

    /// The `__metadata__` dict, or None.
    fn metadata(&self) -> PyResult<Option<HashMap<String, String>>> {
        Ok(self.open_file()?.metadata().cloned())
    }

    /// The tensor called `name` (mapped copy-on-write when aligned, else copied).
    fn get_tensor(&self, py: Python<'_>, name: &str) -> PyResult<PyTensor> {
        let file = self.open_file()?;
        py.detach(|| file.get(name)).py().map(PyTensor::wrap)
    }

    /// Closes the file (its fd and header map); tensors already returned keep their own
    /// mappings and stay valid.
    fn close(&self) {
        self.file.lock().unwrap_or_else(|e| e.into_inner()).take();
    }
}

/// Registers the file functions and classes.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_save_npy, m)?)?;
    m.add_function(wrap_pyfunction!(_load_npy, m)?)?;
    m.add_function(wrap_pyfunction!(from_file, m)?)?;
    m.add_function(wrap_pyfunction!(_st_save, m)?)?;
    m.add_function(wrap_pyfunction!(_st_serialize, m)?)?;
    m.add_function(wrap_pyfunction!(_st_deserialize, m)?)?;
    m.add_class::<PySafeFile>()?;
    Ok(())
}
