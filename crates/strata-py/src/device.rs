//! `device=` arguments: `"cpu"`, `"cuda"`, `"cuda:N"` (PyTorch's spellings), parsed by
//! `strata::Device`'s `FromStr`; and `_reduction_table()`, the reduction table for the
//! Python package's consistency test.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use strata::{Device, ErrorKind, Reduction, Tensor};

use crate::errors::{err, IntoPy};

/// The device named by a `device=` argument (`None`: the CPU); a device this build has
/// no backend for is the `DeviceError` `op` reports.
pub fn opt_device(op: &'static str, device: Option<&Bound<'_, PyAny>>) -> PyResult<Device> {
    let Some(d) = device else {
        return Ok(Device::Cpu);
    };
    if d.is_none() {
        return Ok(Device::Cpu);
    }
    let device = parse_device_in(op, d)?;
    device.check_available(op).py()?;
    Ok(device)
}

/// The device a `device=` argument names (not checked for availability): a string, or a
/// bare index (a CUDA device, as in PyTorch).
pub fn parse_device(d: &Bound<'_, PyAny>) -> PyResult<Device> {
    parse_device_in("device", d)
}

fn parse_device_in(op: &'static str, d: &Bound<'_, PyAny>) -> PyResult<Device> {
    if let Ok(n) = d.extract::<usize>() {
        if !d.is_instance_of::<pyo3::types::PyBool>() {
            return Ok(Device::Cuda(n));
        }
    }
    let Ok(s) = d.extract::<String>() else {
        return Err(err(
            ErrorKind::DType,
            op,
            format!(
                "device must be a string such as 'cpu' or 'cuda:0', got {}",
                d.get_type().name()?
            ),
        ));
    };
    s.parse().py()
}

/// `t` on `device` (itself when it is already there).
pub fn placed(t: Tensor, device: Device) -> PyResult<Tensor> {
    if t.device() == device {
        Ok(t)
    } else {
        t.to_device(device).py()
    }
}

/// The reduction table (`strata::Reduction`), one dict per entry: `name`, `kind`,
/// `dtype_rule`, `doc`.
#[pyfunction]
#[pyo3(name = "_reduction_table")]
pub fn reduction_table(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let list = PyList::empty(py);
    for &r in Reduction::ALL {
        let d = PyDict::new(py);
        d.set_item("name", r.name())?;
        d.set_item("kind", r.kind().name())?;
        d.set_item("dtype_rule", r.dtype_rule().name())?;
        d.set_item("doc", r.doc())?;
        list.append(d)?;
    }
    Ok(list)
}

/// The instruction-set level the CPU kernels run at (`"portable"`, `"avx2"` or
/// `"avx512"`): what the CPU has, capped by the `STRATA_CPU` environment variable.
///
/// # Errors
/// `ValueError` when `STRATA_CPU` names no level (the package checks this at import).
#[pyfunction]
pub fn cpu_level() -> PyResult<&'static str> {
    strata::kernel::cpu::env_cap().map_err(pyo3::exceptions::PyValueError::new_err)?;
    Ok(strata::kernel::cpu::level().name())
}

/// Host memory that reports `cuda:0`: for the tests of the host-only checks only (no
/// CUDA storage can be made otherwise until a CUDA backend exists).
struct FakeCuda;

impl strata::Allocator for FakeCuda {
    fn name(&self) -> &'static str {
        "fake-cuda"
    }
    fn device(&self) -> Device {
        Device::Cuda(0)
    }
    fn allocate_zeroed(&self, nbytes: usize) -> strata::Result<std::ptr::NonNull<u8>> {
        strata::CpuAllocator.allocate_zeroed(nbytes)
    }
    unsafe fn deallocate(&self, ptr: std::ptr::NonNull<u8>, nbytes: usize) {
        // SAFETY: `ptr` came from `CpuAllocator::allocate_zeroed(nbytes)` above (caller).
        unsafe { strata::CpuAllocator.deallocate(ptr, nbytes) }
    }
}

/// Test hook: a zeroed float32 tensor of `n` elements whose storage reports `cuda:0`
/// (its bytes are host memory, so a missing device check shows as a wrong result, not a
/// crash).
#[pyfunction]
#[pyo3(name = "_fake_cuda_tensor")]
pub fn fake_cuda_tensor(n: usize) -> PyResult<crate::tensor::PyTensor> {
    let nbytes = n.checked_mul(4).ok_or_else(|| {
        err(
            ErrorKind::Overflow,
            "_fake_cuda_tensor",
            format!("{n} elements"),
        )
    })?;
    let s = strata::Storage::zeroed_in(std::sync::Arc::new(FakeCuda), nbytes).py()?;
    let layout = strata::Layout::contiguous(&[n]).py()?;
    Tensor::from_parts(s, layout, strata::DType::F32)
        .py()
        .map(crate::tensor::PyTensor::wrap)
}
