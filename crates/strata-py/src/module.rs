//! Module-level functions: creation (`tensor`, `zeros`, `arange`, …), `from_numpy`,
//! `manual_seed`.

use std::sync::Mutex;

use pyo3::prelude::*;
use pyo3::types::{PyAny, PyTuple};
use strata::{DType, ErrorKind, Generator, Scalar, Tensor};

use crate::convert::{as_scalar, from_nested, shape_args, sizes};
use crate::device::{opt_device, placed};
use crate::dtype::opt_dtype;
use crate::errors::{err, IntoPy};
use crate::tensor::PyTensor;

/// PyTorch's default seed for its default CPU generator.
const DEFAULT_SEED: u64 = 67280421310721;

static GENERATOR: Mutex<Option<Generator>> = Mutex::new(None);

fn with_gen<R>(f: impl FnOnce(&mut Generator) -> R) -> R {
    let mut g = GENERATOR.lock().unwrap_or_else(|e| e.into_inner());
    f(g.get_or_insert_with(|| Generator::new(DEFAULT_SEED)))
}

/// A tensor from data: a tensor (copied), a buffer-protocol object such as a NumPy array
/// (copied), a number or nested sequences.
pub fn tensor_from(data: &Bound<'_, PyAny>, dtype: Option<DType>) -> PyResult<Tensor> {
    if let Ok(t) = data.cast::<PyTensor>() {
        let t = t.get().inner();
        return t
            .to_dtype(dtype.unwrap_or(t.dtype()))
            .py()?
            .contiguous_copy()
            .py();
    }
    if is_array_like(data)? || (as_scalar(data)?.is_none() && has_buffer(data)) {
        let t = crate::buffer::from_buffer(data)?;
        let dt = dtype.unwrap_or(t.dtype());
        let out = Tensor::zeros(t.shape(), dt).py()?;
        out.copy_(&t).py()?;
        return Ok(out);
    }
    from_nested(data, dtype)
}

/// A NumPy array or NumPy scalar (0-d included): it exports a buffer and has a dtype, so
/// its dtype is kept rather than going through a Python number.
fn is_array_like(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    Ok(has_buffer(obj) && obj.hasattr("dtype")?)
}

fn has_buffer(obj: &Bound<'_, PyAny>) -> bool {
    // SAFETY: `PyObject_CheckBuffer` only inspects the object's type.
    let exports = unsafe { pyo3::ffi::PyObject_CheckBuffer(obj.as_ptr()) != 0 };
    exports
        && !obj.is_instance_of::<pyo3::types::PyBytes>()
        && !obj.is_instance_of::<pyo3::types::PyByteArray>()
}

/// `strata.tensor(data, dtype=None, device=None)`: always copies.
#[pyfunction]
#[pyo3(signature = (data, dtype=None, device=None))]
pub fn tensor(
    data: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let dev = opt_device("tensor", device)?;
    placed(tensor_from(data, opt_dtype(dtype)?)?, dev).map(PyTensor::wrap)
}

/// `strata.from_numpy(array)`: shares memory with the array (any strides).
#[pyfunction]
pub fn from_numpy(array: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    crate::buffer::from_buffer(array).map(PyTensor::wrap)
}

/// `strata.frombuffer(buffer, *, dtype, count=-1, offset=0)`: a 1-D tensor over `count`
/// elements of `dtype` (all when -1) of a buffer-protocol object from byte `offset`,
/// sharing its memory (PyTorch's `torch.frombuffer`; read-only when the buffer is). The
/// tensor's storage is exactly those bytes (a slice of the buffer's when it is a part).
#[pyfunction]
#[pyo3(signature = (buffer, *, dtype, count=-1, offset=0))]
pub fn frombuffer(
    buffer: &Bound<'_, PyAny>,
    dtype: &Bound<'_, PyAny>,
    count: i64,
    offset: i64,
) -> PyResult<PyTensor> {
    let op = "frombuffer";
    let value = |msg: String| err(ErrorKind::Value, op, msg);
    let dt = opt_dtype(Some(dtype))?.unwrap_or(DType::F32);
    // SAFETY: `PyObject_CheckBuffer` only inspects the object's type.
    if unsafe { pyo3::ffi::PyObject_CheckBuffer(buffer.as_ptr()) } == 0 {
        return Err(value(
            "object does not implement Python buffer protocol.".to_string(),
        ));
    }
    let src = crate::buffer::from_buffer(buffer)?;
    if !src.is_contiguous() {
        return Err(value("the buffer is not contiguous".to_string()));
    }
    let len = src.numel() * src.dtype().itemsize();
    let k = dt.itemsize();
    if len == 0 || count == 0 {
        return Err(value(format!(
            "both buffer length ({len}) and count ({count}) must not be 0"
        )));
    }
    let off = usize::try_from(offset).ok().filter(|&o| o < len).ok_or_else(|| {
        value(format!(
            "offset ({offset} bytes) must be non-negative and no greater than buffer length ({len} bytes) minus 1"
        ))
    })?;
    if count < 0 && (len - off) % k != 0 {
        return Err(value(format!(
            "buffer length ({} bytes) after offset ({offset} bytes) must be a multiple of element size ({k})",
            len - off
        )));
    }
    let n = if count < 0 {
        (len - off) / k
    } else {
        count as usize
    };
    let nbytes = n
        .checked_mul(k)
        .filter(|&b| b <= len - off)
        .ok_or_else(|| {
            value(format!(
                "requested buffer length ({n} * {k} bytes) after offset ({offset} bytes) must not be greater than actual buffer length ({len} bytes)"
            ))
        })?;
    let start = src.byte_offset() + off;
    let addr = src.storage().data_ptr() as usize + start;
    if !addr.is_multiple_of(k) {
        return Err(value(format!(
            "the buffer's bytes from offset {offset} start at {addr:#x}, not aligned for {dt} ({k} bytes); strata's elements are aligned: pass an aligned offset, or copy the bytes first"
        )));
    }
    let storage = if start == 0 && nbytes == src.storage().nbytes() {
        src.storage().clone()
    } else {
        src.storage().slice_bytes(op, start, start + nbytes).py()?
    };
    Tensor::from_parts(storage, strata::Layout::contiguous(&[n]).py()?, dt)
        .py()
        .map(PyTensor::wrap)
}

/// `strata.as_tensor(data, dtype=None)`: shares memory when possible.
#[pyfunction]
#[pyo3(signature = (data, dtype=None))]
pub fn as_tensor(data: &Bound<'_, PyAny>, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
    let dt = opt_dtype(dtype)?;
    let t = if let Ok(t) = data.cast::<PyTensor>() {
        t.get().inner().clone()
    } else if is_array_like(data)? || (as_scalar(data)?.is_none() && has_buffer(data)) {
        crate::buffer::from_buffer(data)?
    } else {
        from_nested(data, dt)?
    };
    match dt {
        Some(d) if d != t.dtype() => t.to_dtype(d).py().map(PyTensor::wrap),
        _ => Ok(PyTensor::wrap(t)),
    }
}

fn shape_of(op: &'static str, args: &Bound<'_, PyTuple>) -> PyResult<Vec<usize>> {
    sizes(op, &shape_args(args)?)
}

#[pyfunction]
#[pyo3(signature = (*size, dtype=None, device=None, pin_memory=false))]
pub fn zeros(
    size: &Bound<'_, PyTuple>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    pin_memory: bool,
) -> PyResult<PyTensor> {
    let dev = opt_device("zeros", device)?;
    let dt = opt_dtype(dtype)?.unwrap_or(DType::F32);
    let t = Tensor::zeros_on(&shape_of("zeros", size)?, dt, dev).py()?;
    pinned(t, pin_memory).map(PyTensor::wrap)
}

#[pyfunction]
#[pyo3(signature = (*size, dtype=None, device=None, pin_memory=false))]
pub fn ones(
    size: &Bound<'_, PyTuple>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    pin_memory: bool,
) -> PyResult<PyTensor> {
    let dev = opt_device("ones", device)?;
    let dt = opt_dtype(dtype)?.unwrap_or(DType::F32);
    let t = Tensor::full_on(&shape_of("ones", size)?, 1, dt, dev).py()?;
    pinned(t, pin_memory).map(PyTensor::wrap)
}

#[pyfunction]
#[pyo3(signature = (*size, dtype=None, device=None, pin_memory=false))]
pub fn empty(
    size: &Bound<'_, PyTuple>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    pin_memory: bool,
) -> PyResult<PyTensor> {
    let dev = opt_device("empty", device)?;
    let dt = opt_dtype(dtype)?.unwrap_or(DType::F32);
    let t = Tensor::empty_on(&shape_of("empty", size)?, dt, dev).py()?;
    pinned(t, pin_memory).map(PyTensor::wrap)
}

/// `t`, moved to pinned host memory when `pin` (PyTorch's `pin_memory=True`; a CUDA
/// device with it is PyTorch's error).
fn pinned(t: Tensor, pin: bool) -> PyResult<Tensor> {
    if pin {
        t.pin_memory().py()
    } else {
        Ok(t)
    }
}

/// `full(size, fill_value, dtype=None)`: the dtype defaults from the value, as PyTorch.
#[pyfunction]
#[pyo3(signature = (size, fill_value, dtype=None, device=None))]
pub fn full(
    size: &Bound<'_, PyAny>,
    fill_value: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let dev = opt_device("full", device)?;
    let v = crate::tensor::scalar_arg("full", fill_value)?;
    let dt = opt_dtype(dtype)?.unwrap_or(v.default_dtype());
    let shape = sizes("full", &crate::convert::int_list(size)?)?;
    Tensor::full_on(&shape, v, dt, dev).py().map(PyTensor::wrap)
}

/// `arange(end)`, `arange(start, end, step=1)`; int64 when all arguments are ints, else
/// float32.
#[pyfunction]
#[pyo3(signature = (start, end=None, step=None, dtype=None, device=None))]
pub fn arange(
    start: &Bound<'_, PyAny>,
    end: Option<&Bound<'_, PyAny>>,
    step: Option<&Bound<'_, PyAny>>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let dev = opt_device("arange", device)?;
    let a = crate::tensor::scalar_arg("arange", start)?;
    let (s, e) = match end {
        Some(e) if !e.is_none() => (a, crate::tensor::scalar_arg("arange", e)?),
        _ => (Scalar::Int(0), a),
    };
    let st = match step {
        Some(x) if !x.is_none() => crate::tensor::scalar_arg("arange", x)?,
        _ => Scalar::Int(1),
    };
    let any_float = [s, e, st].iter().any(|v| matches!(v, Scalar::Float(_)));
    let dt = opt_dtype(dtype)?.unwrap_or(if any_float { DType::F32 } else { DType::I64 });
    placed(Tensor::arange(s, e, st, dt).py()?, dev).map(PyTensor::wrap)
}

#[pyfunction]
#[pyo3(signature = (start, end, steps, dtype=None, device=None))]
pub fn linspace(
    start: f64,
    end: f64,
    steps: i64,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let dev = opt_device("linspace", device)?;
    let n = sizes("linspace", &[steps])?[0];
    let dt = opt_dtype(dtype)?.unwrap_or(DType::F32);
    placed(Tensor::linspace(start, end, n, dt).py()?, dev).map(PyTensor::wrap)
}

#[pyfunction]
#[pyo3(signature = (n, m=None, dtype=None, device=None))]
pub fn eye(
    n: i64,
    m: Option<i64>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let dev = opt_device("eye", device)?;
    let n2 = sizes("eye", &[n, m.unwrap_or(n)])?;
    let dt = opt_dtype(dtype)?.unwrap_or(DType::F32);
    placed(Tensor::eye(n2[0], n2[1], dt).py()?, dev).map(PyTensor::wrap)
}

/// Uniform samples in [0, 1) from the default generator (see `manual_seed`).
#[pyfunction]
#[pyo3(signature = (*size, dtype=None, device=None))]
pub fn rand(
    size: &Bound<'_, PyTuple>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let dev = opt_device("rand", device)?;
    let dt = opt_dtype(dtype)?.unwrap_or(DType::F32);
    let shape = shape_of("rand", size)?;
    placed(with_gen(|g| Tensor::rand_with(&shape, dt, g)).py()?, dev).map(PyTensor::wrap)
}

/// Standard normal samples from the default generator.
#[pyfunction]
#[pyo3(signature = (*size, dtype=None, device=None))]
pub fn randn(
    size: &Bound<'_, PyTuple>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let dev = opt_device("randn", device)?;
    let dt = opt_dtype(dtype)?.unwrap_or(DType::F32);
    let shape = shape_of("randn", size)?;
    placed(with_gen(|g| Tensor::randn_with(&shape, dt, g)).py()?, dev).map(PyTensor::wrap)
}

/// Reseeds the default generator.
#[pyfunction]
pub fn manual_seed(seed: i64) -> PyResult<()> {
    if seed < 0 {
        return Err(err(
            ErrorKind::Value,
            "manual_seed",
            format!("seed must be non-negative, got {seed}"),
        ));
    }
    let mut g = GENERATOR.lock().unwrap_or_else(|e| e.into_inner());
    *g = Some(Generator::new(seed as u64));
    Ok(())
}

/// Frees every block the allocator's cache holds (see `cache_info`).
#[pyfunction]
pub fn empty_cache(py: Python<'_>) {
    py.detach(strata::storage::empty_cache);
}

/// Sets the most bytes the allocator's cache of freed blocks may hold (0 turns it off)
/// and returns the previous limit.
#[pyfunction]
pub fn set_cache_limit(py: Python<'_>, nbytes: i64) -> PyResult<usize> {
    let n = usize::try_from(nbytes).map_err(|_| {
        err(
            ErrorKind::Value,
            "set_cache_limit",
            format!("the limit must be a non-negative number of bytes, got {nbytes}"),
        )
    })?;
    Ok(py.detach(|| strata::storage::set_cache_limit(n)))
}

/// Sets how long, in seconds, a cached block may sit unused before it is returned to the
/// system (1.0 by default; `inf` keeps blocks until evicted) and returns the previous
/// value.
#[pyfunction]
pub fn set_cache_decay(py: Python<'_>, seconds: f64) -> PyResult<f64> {
    if seconds.is_nan() || seconds < 0.0 {
        return Err(err(
            ErrorKind::Value,
            "set_cache_decay",
            format!("the decay must be a non-negative number of seconds, got {seconds}"),
        ));
    }
    // Past what a `Duration` holds (`inf` included): never.
    let d = std::time::Duration::try_from_secs_f64(seconds).unwrap_or(std::time::Duration::MAX);
    Ok(decay_secs(
        py.detach(|| strata::storage::set_cache_decay(d)),
    ))
}

/// A decay in seconds; the saturated one (584 years, what `inf` sets) reads as infinity.
fn decay_secs(d: std::time::Duration) -> f64 {
    if d.as_nanos() >= u128::from(u64::MAX) {
        f64::INFINITY
    } else {
        d.as_secs_f64()
    }
}

/// What the allocator's cache of freed blocks holds and has done: `bytes`, `blocks`,
/// `limit`, the `hits` and `misses` of allocations large enough to use it, what it
/// returned to the system (`released_bytes`, `released_blocks`, and `since_release`,
/// seconds since it last did, `None` if never), how long its least recently cached block
/// has sat unused (`oldest_idle`, seconds, `None` when empty), and how long a block may
/// sit unused before it is returned (`decay`, seconds).
#[pyfunction]
pub fn cache_info(py: Python<'_>) -> PyResult<Bound<'_, pyo3::types::PyDict>> {
    let s = py.detach(strata::storage::cache_stats);
    let d = pyo3::types::PyDict::new(py);
    d.set_item("bytes", s.bytes)?;
    d.set_item("blocks", s.blocks)?;
    d.set_item("limit", s.limit)?;
    d.set_item("hits", s.hits)?;
    d.set_item("misses", s.misses)?;
    d.set_item("released_bytes", s.released_bytes)?;
    d.set_item("released_blocks", s.released_blocks)?;
    d.set_item("since_release", s.since_release.map(|t| t.as_secs_f64()))?;
    d.set_item("oldest_idle", s.oldest_idle.map(|t| t.as_secs_f64()))?;
    d.set_item("decay", decay_secs(s.decay))?;
    d.set_item("min_block", strata::storage::cache::CACHE_MIN)?;
    Ok(d)
}
