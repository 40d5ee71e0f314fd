//! `strata.cuda`: availability, memory statistics, `Stream`, `Event`, IPC handles, and the
//! CUDA methods of `Tensor` (`cuda()`, `is_cuda`, `pin_memory()`, `is_pinned()`,
//! `__cuda_array_interface__`).

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};
use strata::{cuda, Device, Tensor};

use crate::errors::IntoPy;
use crate::tensor::PyTensor;

fn dev(device: Option<&Bound<'_, PyAny>>) -> PyResult<Option<usize>> {
    let Some(d) = device else { return Ok(None) };
    if d.is_none() {
        return Ok(None);
    }
    if let Ok(n) = d.extract::<usize>() {
        return Ok(Some(n));
    }
    match crate::device::parse_device(d)? {
        Device::Cuda(n) => Ok(Some(n)),
        Device::Cpu => Err(pyo3::exceptions::PyValueError::new_err(
            "Expected a cuda device, but got: cpu",
        )),
    }
}

#[pyfunction]
fn _cuda_is_available() -> bool {
    cuda::is_available()
}

#[pyfunction]
fn _cuda_device_count() -> usize {
    if cuda::is_available() {
        cuda::device_count()
    } else {
        0
    }
}

#[pyfunction]
#[pyo3(signature = (device=None))]
fn _cuda_synchronize(py: Python<'_>, device: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
    let d = dev(device)?;
    py.detach(|| cuda::synchronize(d)).py()
}

#[pyfunction]
#[pyo3(signature = (device=None))]
fn _cuda_memory_allocated(device: Option<&Bound<'_, PyAny>>) -> PyResult<usize> {
    cuda::memory_allocated(dev(device)?).py()
}

#[pyfunction]
#[pyo3(signature = (device=None))]
fn _cuda_max_memory_allocated(device: Option<&Bound<'_, PyAny>>) -> PyResult<usize> {
    cuda::max_memory_allocated(dev(device)?).py()
}

#[pyfunction]
#[pyo3(signature = (device=None))]
fn _cuda_reset_peak_memory_stats(device: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
    cuda::reset_peak_memory_stats(dev(device)?).py()
}

#[pyfunction]
#[pyo3(signature = (device=None))]
fn _cuda_memory_reserved(device: Option<&Bound<'_, PyAny>>) -> PyResult<usize> {
    cuda::memory_reserved(dev(device)?).py()
}

#[pyfunction]
fn _cuda_empty_cache(py: Python<'_>) -> PyResult<()> {
    py.detach(cuda::empty_cache).py()
}

/// Sets this thread's current stream of `device` to `raw`; returns the previous raw one.
#[pyfunction]
fn _cuda_set_stream(device: usize, raw: usize) -> PyResult<usize> {
    cuda::set_current_stream_raw(device, raw).py()
}

/// A CUDA stream (`torch.cuda.Stream`).
#[pyclass(name = "Stream", module = "strata.cuda", frozen)]
#[derive(Debug)]
pub struct PyStream {
    inner: cuda::Stream,
}

#[pymethods]
impl PyStream {
    /// `Stream(device=None)`: a new stream; `Stream(stream_ptr=n)` wraps an existing
    /// `CUstream` (another library's) without owning it.
    #[new]
    #[pyo3(signature = (device=None, priority=0, stream_ptr=None))]
    fn new(
        device: Option<&Bound<'_, PyAny>>,
        priority: i32,
        stream_ptr: Option<usize>,
    ) -> PyResult<Self> {
        let _ = priority;
        let d = dev(device)?;
        let inner = match stream_ptr {
            Some(p) => cuda::Stream::external(d, p),
            None => cuda::Stream::new(d),
        }
        .py()?;
        Ok(PyStream { inner })
    }

    /// The raw `CUstream` as an integer (0: the legacy default stream).
    #[getter]
    fn cuda_stream(&self) -> usize {
        self.inner.raw()
    }

    #[getter]
    fn device(&self) -> String {
        self.inner.device().to_string()
    }

    #[getter]
    fn device_index(&self) -> usize {
        match self.inner.device() {
            Device::Cuda(n) => n,
            Device::Cpu => 0,
        }
    }

    fn synchronize(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.inner.synchronize()).py()
    }

    fn query(&self) -> PyResult<bool> {
        self.inner.query().py()
    }

    fn wait_event(&self, event: &PyEvent) -> PyResult<()> {
        self.inner.wait_event(&event.inner).py()
    }

    fn wait_stream(&self, stream: &PyStream) -> PyResult<()> {
        self.inner.wait_stream(&stream.inner).py()
    }

    /// Records a new event on this stream and returns it.
    #[pyo3(signature = (event=None))]
    fn record_event(&self, py: Python<'_>, event: Option<Py<PyEvent>>) -> PyResult<Py<PyEvent>> {
        let e = match event {
            Some(e) => e,
            None => Py::new(
                py,
                PyEvent {
                    inner: cuda::Event::new(false).py()?,
                },
            )?,
        };
        e.get().inner.record(Some(&self.inner)).py()?;
        Ok(e)
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<PyStream>().is_ok_and(|o| {
            o.get().inner.raw() == self.inner.raw() && o.get().inner.device() == self.inner.device()
        })
    }

    fn __hash__(&self) -> usize {
        self.inner.raw()
    }

    fn __repr__(&self) -> String {
        format!(
            "<strata.cuda.Stream device={} cuda_stream={:#x}>",
            self.inner.device(),
            self.inner.raw()
        )
    }
}

/// This thread's current stream of `device`.
#[pyfunction]
#[pyo3(signature = (device=None))]
fn current_stream(device: Option<&Bound<'_, PyAny>>) -> PyResult<PyStream> {
    Ok(PyStream {
        inner: cuda::Stream::current(dev(device)?).py()?,
    })
}

/// A CUDA event (`torch.cuda.Event`).
#[pyclass(name = "Event", module = "strata.cuda", frozen)]
#[derive(Debug)]
pub struct PyEvent {
    inner: cuda::Event,
}

#[pymethods]
impl PyEvent {
    #[new]
    #[pyo3(signature = (enable_timing=false, blocking=false, interprocess=false))]
    fn new(enable_timing: bool, blocking: bool, interprocess: bool) -> PyResult<Self> {
        let _ = (blocking, interprocess);
        Ok(PyEvent {
            inner: cuda::Event::new(enable_timing).py()?,
        })
    }

    /// Records the event on `stream` (the current stream by default).
    #[pyo3(signature = (stream=None))]
    fn record(&self, stream: Option<&PyStream>) -> PyResult<()> {
        self.inner.record(stream.map(|s| &s.inner)).py()
    }

    fn synchronize(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.inner.synchronize()).py()
    }

    fn query(&self) -> PyResult<bool> {
        self.inner.query().py()
    }

    /// Makes `stream` (the current stream by default) wait for this event.
    #[pyo3(signature = (stream=None))]
    fn wait(&self, stream: Option<&PyStream>) -> PyResult<()> {
        match stream {
            Some(s) => s.inner.wait_event(&self.inner).py(),
            None => cuda::Stream::current(None)
                .py()?
                .wait_event(&self.inner)
                .py(),
        }
    }

    /// Milliseconds from this event to `end_event`.
    fn elapsed_time(&self, end_event: &PyEvent) -> PyResult<f32> {
        self.inner.elapsed_time(&end_event.inner).py()
    }
}

/// `(handle, device, offset, nbytes)` of a CUDA tensor's storage, for another process.
#[pyfunction]
fn _cuda_ipc_export<'py>(py: Python<'py>, t: &PyTensor) -> PyResult<Bound<'py, PyTuple>> {
    let h = cuda::ipc_handle(t.inner()).py()?;
    PyTuple::new(
        py,
        [
            PyBytes::new(py, &h.handle).into_any(),
            h.device.into_pyobject(py)?.into_any(),
            h.offset.into_pyobject(py)?.into_any(),
            h.nbytes.into_pyobject(py)?.into_any(),
        ],
    )
}

/// The tensor another process exported with `_cuda_ipc_export`: a view (`shape`,
/// `strides`, `offset` in elements, `dtype`) over the mapped storage.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn _cuda_ipc_import(
    handle: &[u8],
    device: usize,
    offset: usize,
    nbytes: usize,
    dtype: &Bound<'_, PyAny>,
    shape: Vec<usize>,
    strides: Vec<isize>,
    storage_offset: usize,
) -> PyResult<PyTensor> {
    let mut h = [0u8; 64];
    if handle.len() != 64 {
        return Err(PyTypeError::new_err(format!(
            "a CUDA IPC handle is 64 bytes, got {}",
            handle.len()
        )));
    }
    h.copy_from_slice(handle);
    let s = cuda::open_ipc(&cuda::IpcHandle {
        handle: h,
        device,
        offset,
        nbytes,
    })
    .py()?;
    let dt = crate::dtype::parse_dtype(dtype)?;
    let layout = strata::Layout::new(&shape, &strides, storage_offset).py()?;
    Tensor::from_parts(s, layout, dt).py().map(PyTensor::wrap)
}

#[pymethods]
impl PyTensor {
    /// A copy on a CUDA device (`device` an index or "cuda:N"; the current device 0 by
    /// default); itself when already there.
    #[pyo3(signature = (device=None, non_blocking=false))]
    fn cuda(
        &self,
        py: Python<'_>,
        device: Option<&Bound<'_, PyAny>>,
        non_blocking: bool,
    ) -> PyResult<PyTensor> {
        let d = Device::Cuda(dev(device)?.unwrap_or(0));
        d.check_available("cuda").py()?;
        let t = self.inner().clone();
        py.detach(|| t.to_device_with(d, non_blocking))
            .py()
            .map(PyTensor::wrap)
    }

    #[getter]
    fn is_cuda(&self) -> bool {
        matches!(self.inner().device(), Device::Cuda(_))
    }

    /// A copy in pinned (page-locked) host memory; itself when already pinned.
    fn pin_memory(&self) -> PyResult<PyTensor> {
        self.inner().pin_memory().py().map(PyTensor::wrap)
    }

    fn is_pinned(&self) -> bool {
        self.inner().is_pinned()
    }

    /// The CUDA array interface (version 3) of a CUDA tensor, for CuPy and Numba.
    #[getter]
    fn __cuda_array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let t = self.inner();
        let Device::Cuda(n) = t.device() else {
            return Err(pyo3::exceptions::PyAttributeError::new_err(
                "Can't get __cuda_array_interface__ on non-CUDA tensor type: strata.Tensor If CUDA data is required use tensor.cuda() to copy tensor to device memory.",
            ));
        };
        if t.dtype() == strata::DType::BF16 {
            return Err(PyTypeError::new_err(
                "__cuda_array_interface__: bfloat16 has no typestr in the array interface",
            ));
        }
        let d = PyDict::new(py);
        let item = t.dtype().itemsize();
        d.set_item("shape", PyTuple::new(py, t.shape())?)?;
        d.set_item("typestr", crate::buffer::typestr_of(t.dtype()))?;
        let ptr = if t.numel() == 0 { 0 } else { t.data_ptr() };
        d.set_item("data", (ptr, t.is_read_only()))?;
        d.set_item("version", 3)?;
        if t.is_contiguous() {
            d.set_item("strides", py.None())?;
        } else {
            let st: Vec<isize> = t.strides().iter().map(|&s| s * item as isize).collect();
            d.set_item("strides", PyTuple::new(py, st)?)?;
        }
        // The consumer must wait for our current stream (1: the legacy default stream).
        let raw = cuda::Stream::current(Some(n)).py()?.raw();
        d.set_item("stream", if raw == 0 { 1 } else { raw })?;
        Ok(d)
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyStream>()?;
    m.add_class::<PyEvent>()?;
    m.add_function(wrap_pyfunction!(_cuda_is_available, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_device_count, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_synchronize, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_memory_allocated, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_max_memory_allocated, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_reset_peak_memory_stats, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_memory_reserved, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_empty_cache, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_set_stream, m)?)?;
    m.add_function(wrap_pyfunction!(current_stream, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_ipc_export, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_ipc_import, m)?)?;
    Ok(())
}
