//! PyO3 glue for the `strata` Python package: classes, conversions and the one mapping of
//! Rust errors to Python exceptions. No tensor logic lives here.

mod arrange;
mod autograd;
mod buffer;
mod complex;
mod composite;
mod compute;
mod convert;
mod cuda;
mod device;
mod dlpack;
mod dtype;
mod elementwise;
mod errors;
mod fft;
mod files;
mod freelist;
mod linalg;
mod module;
mod ndarray;
mod shm;
mod sort;
mod storage;
mod tensor;

use pyo3::prelude::*;

#[pymodule]
fn _strata(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<tensor::PyTensor>()?;
    {
        use pyo3::PyTypeInfo;
        let py = m.py();
        if let Some(at) = tensor::direct_offset(py) {
            // SAFETY: the `Tensor` type pyo3 just made ready, with its value where
            // `direct_offset` found it (see `freelist::install`).
            unsafe { freelist::install(py, tensor::PyTensor::type_object_raw(py), at)? };
        }
    }
    m.add_class::<storage::PyUntypedStorage>()?;
    m.add_class::<dtype::PyDType>()?;
    for dt in strata::DType::ALL {
        m.add(dt.name(), dtype::canonical(m.py(), dt)?)?;
    }
    m.add_function(wrap_pyfunction!(module::tensor, m)?)?;
    m.add_function(wrap_pyfunction!(module::as_tensor, m)?)?;
    m.add_function(wrap_pyfunction!(module::from_numpy, m)?)?;
    m.add_function(wrap_pyfunction!(module::frombuffer, m)?)?;
    m.add_function(wrap_pyfunction!(module::zeros, m)?)?;
    m.add_function(wrap_pyfunction!(module::ones, m)?)?;
    m.add_function(wrap_pyfunction!(module::empty, m)?)?;
    m.add_function(wrap_pyfunction!(module::full, m)?)?;
    m.add_function(wrap_pyfunction!(module::arange, m)?)?;
    m.add_function(wrap_pyfunction!(module::linspace, m)?)?;
    m.add_function(wrap_pyfunction!(module::eye, m)?)?;
    m.add_function(wrap_pyfunction!(module::rand, m)?)?;
    m.add_function(wrap_pyfunction!(module::randn, m)?)?;
    m.add_function(wrap_pyfunction!(module::manual_seed, m)?)?;
    m.add_function(wrap_pyfunction!(device::reduction_table, m)?)?;
    m.add_function(wrap_pyfunction!(device::cpu_level, m)?)?;
    m.add_function(wrap_pyfunction!(device::fake_cuda_tensor, m)?)?;
    m.add_function(wrap_pyfunction!(module::empty_cache, m)?)?;
    m.add_function(wrap_pyfunction!(module::set_cache_limit, m)?)?;
    m.add_function(wrap_pyfunction!(module::set_cache_decay, m)?)?;
    m.add_function(wrap_pyfunction!(module::cache_info, m)?)?;
    compute::register(m)?;
    arrange::register(m)?;
    sort::register(m)?;
    linalg::register(m)?;
    composite::register(m)?;
    complex::register(m)?;
    fft::register(m)?;
    autograd::register(m)?;
    files::register(m)?;
    shm::register(m)?;
    cuda::register(m)?;
    m.add_function(wrap_pyfunction!(dlpack::from_dlpack, m)?)?;
    m.add_function(wrap_pyfunction!(tensor::views_built_in_place, m)?)?;
    m.add_function(wrap_pyfunction!(tensor::tensors_kept, m)?)?;
    m.add_function(wrap_pyfunction!(tensor::share_as, m)?)?;
    Ok(())
}
