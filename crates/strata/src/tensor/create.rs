//! Constructors: from data, filled, ranges, identity and random tensors.

use rand::SeedableRng;

use super::{Scalar, Tensor};
use crate::backend::{backend_for, Fill};
use crate::dtype::{DType, Element};
use crate::error::{list, Error, Result};
use crate::layout::{checked_numel, Layout};
use crate::storage::borrow;
use crate::storage::{Device, Storage};
use crate::with_dtype;

/// A seeded random generator for [`Tensor::rand_with`] and [`Tensor::randn_with`].
#[derive(Debug, Clone)]
pub struct Generator(rand::rngs::StdRng);

impl Generator {
    /// A generator whose stream is fixed by `seed`.
    pub fn new(seed: u64) -> Generator {
        Generator(rand::rngs::StdRng::seed_from_u64(seed))
    }

    /// The random stream, for a backend's sampling loop.
    pub(crate) fn rng(&mut self) -> &mut rand::rngs::StdRng {
        &mut self.0
    }
}

fn nbytes_of(op: &'static str, numel: usize, dtype: DType) -> Result<usize> {
    numel
        .checked_mul(dtype.itemsize())
        .filter(|&n| n <= isize::MAX as usize)
        .ok_or_else(|| Error::overflow(op, format!("{numel} elements of {dtype}")))
}

impl Tensor {
    /// Fresh zeroed contiguous storage for `shape` in host memory.
    fn alloc(op: &'static str, shape: &[usize], dtype: DType) -> Result<Tensor> {
        let numel = checked_numel(op, shape)?;
        let storage = Storage::zeroed(nbytes_of(op, numel, dtype)?)?;
        Tensor::checked(op, storage, Layout::contiguous(shape)?, dtype)
    }

    /// Fresh contiguous storage for `shape` on `device`, zeroed or (for a kernel that
    /// writes it whole) not, from the device's backend.
    fn alloc_on(
        op: &'static str,
        shape: &[usize],
        dtype: DType,
        device: Device,
        zeroed: bool,
    ) -> Result<Tensor> {
        let backend = backend_for(op, device)?;
        let numel = checked_numel(op, shape)?;
        let storage = backend.allocate(op, nbytes_of(op, numel, dtype)?, zeroed)?;
        Tensor::checked(op, storage, Layout::contiguous(shape)?, dtype)
    }

    /// A fresh row-major tensor on `device` that the caller writes whole before anyone
    /// reads it (not zeroed).
    pub(crate) fn alloc_uninit_on(
        op: &'static str,
        shape: &[usize],
        dtype: DType,
        device: Device,
    ) -> Result<Tensor> {
        Self::alloc_on(op, shape, dtype, device, false)
    }

    /// Zeros on `device`.
    ///
    /// # Errors
    /// A [`Device`](crate::ErrorKind::Device) error for a device this build has no
    /// backend for (any but the CPU today), and those of [`zeros`](Self::zeros).
    pub fn zeros_on(shape: &[usize], dtype: DType, device: Device) -> Result<Tensor> {
        if device.is_cpu() {
            return Self::alloc("zeros", shape, dtype);
        }
        Self::alloc_on("zeros", shape, dtype, device, true)
    }

    /// An "uninitialised" tensor on `device` (zeroed, as [`empty`](Self::empty)).
    ///
    /// # Errors
    /// As for [`zeros_on`](Self::zeros_on).
    pub fn empty_on(shape: &[usize], dtype: DType, device: Device) -> Result<Tensor> {
        Self::alloc_on("empty", shape, dtype, device, true)
    }

    /// A tensor on `device` filled with `value` (cast to `dtype`).
    ///
    /// # Errors
    /// As for [`zeros_on`](Self::zeros_on) and [`full`](Self::full).
    pub fn full_on(
        shape: &[usize],
        value: impl Into<Scalar>,
        dtype: DType,
        device: Device,
    ) -> Result<Tensor> {
        let t = Self::alloc_on("full", shape, dtype, device, true)?;
        t.fill_(value)?;
        Ok(t)
    }

    /// A copy of this tensor on `device` (this tensor itself when it is already there),
    /// PyTorch's `to(device)`.
    ///
    /// # Errors
    /// A [`Device`](crate::ErrorKind::Device) error for a device this build has no
    /// backend for.
    pub fn to_device(&self, device: Device) -> Result<Tensor> {
        self.to_device_with(device, false)
    }

    /// [`to_device`](Self::to_device), optionally without waiting (`non_blocking`): a
    /// copy from pinned host memory to a GPU is queued on the current stream and the call
    /// returns at once; a copy from a GPU lands in fresh pinned memory that is complete
    /// once the stream reaches it (synchronise before reading it).
    ///
    /// # Errors
    /// As [`to_device`](Self::to_device).
    pub fn to_device_with(&self, device: Device, non_blocking: bool) -> Result<Tensor> {
        if device == self.device() {
            return Ok(self.clone());
        }
        backend_for("to", device)?;
        backend_for("to", self.device())?;
        use crate::backend::cuda::transfer;
        match (self.device(), device) {
            (Device::Cpu, _) => transfer::to_device("to", self, device, non_blocking),
            (_, Device::Cpu) => transfer::to_host("to", self, non_blocking),
            _ => {
                let host = transfer::to_host("to", self, false)?;
                transfer::to_device("to", &host, device, false)
            }
        }
    }

    /// A tensor of `shape` holding `data` in row-major order (copied into 64-byte-aligned
    /// storage).
    ///
    /// # Errors
    /// A shape error when `data.len()` is not the product of `shape`.
    pub fn from_vec<T: Element>(data: Vec<T>, shape: &[usize]) -> Result<Tensor> {
        Self::from_slice(&data, shape)
    }

    /// As [`from_vec`](Self::from_vec), from a slice.
    pub fn from_slice<T: Element>(data: &[T], shape: &[usize]) -> Result<Tensor> {
        let numel = checked_numel("from_slice", shape)?;
        if numel != data.len() {
            return Err(Error::shape(
                "from_slice",
                format!(
                    "shape {} needs {numel} elements but {} were given",
                    list(shape),
                    data.len()
                ),
            ));
        }
        let t = Self::alloc("from_slice", shape, T::DTYPE)?;
        {
            let _g = borrow::acquire("from_slice", &[(&t.storage, true)])?;
            let base = t.storage.data_ptr();
            for (i, &v) in data.iter().enumerate() {
                // SAFETY: the fresh storage holds exactly `numel` elements of T (S1) and no
                // other handle to it exists yet.
                unsafe { v.store(base.add(i * size_of::<T>())) };
            }
        }
        Ok(t)
    }

    /// A 0-d tensor holding `value`.
    pub fn scalar<T: Element>(value: T) -> Tensor {
        Self::from_slice(&[value], &[]).unwrap_or_else(|_| unreachable!("one element fits"))
    }

    /// A 0-d tensor of `dtype` holding `value`, cast as a conversion casts (an integer out
    /// of range wraps; `full` and `fill_` refuse it instead).
    pub fn scalar_of(value: impl Into<Scalar>, dtype: DType) -> Result<Tensor> {
        let value = value.into();
        with_dtype!(dtype, T => Ok(Self::scalar(value.to::<T>())))
    }

    /// Zeros.
    pub fn zeros(shape: &[usize], dtype: DType) -> Result<Tensor> {
        Self::alloc("zeros", shape, dtype)
    }

    /// Ones.
    pub fn ones(shape: &[usize], dtype: DType) -> Result<Tensor> {
        Self::full(shape, 1, dtype)
    }

    /// A tensor filled with `value` (cast to `dtype`).
    pub fn full(shape: &[usize], value: impl Into<Scalar>, dtype: DType) -> Result<Tensor> {
        let t = Self::alloc("full", shape, dtype)?;
        t.fill_(value)?;
        Ok(t)
    }

    /// An "uninitialised" tensor. strata never exposes uninitialised bytes, so it is
    /// zeroed (fresh pages from the OS are zero anyway, so this costs little).
    pub fn empty(shape: &[usize], dtype: DType) -> Result<Tensor> {
        Self::alloc("empty", shape, dtype)
    }

    /// `zeros` with the shape and dtype of `other`.
    pub fn zeros_like(other: &Tensor) -> Result<Tensor> {
        Self::zeros(other.shape(), other.dtype())
    }

    /// `[start, start+step, …)` up to `end` (exclusive), as PyTorch's `arange`: the length
    /// is `ceil((end − start) / step)`; value `i` is `start + i·step` computed in the
    /// dtype's domain (exact for integers).
    ///
    /// # Errors
    /// A zero step, a step of the wrong sign, or non-finite bounds.
    pub fn arange(
        start: impl Into<Scalar>,
        end: impl Into<Scalar>,
        step: impl Into<Scalar>,
        dtype: DType,
    ) -> Result<Tensor> {
        let (start, end, step) = (start.into(), end.into(), step.into());
        let (s, e, st) = (start.to_f64(), end.to_f64(), step.to_f64());
        if !(s.is_finite() && e.is_finite()) {
            return Err(Error::value(
                "arange",
                format!("unsupported range: {start} -> {end}"),
            ));
        }
        if st == 0.0 || st.is_nan() {
            return Err(Error::value("arange", "step must be nonzero"));
        }
        if (st > 0.0 && e < s) || (st < 0.0 && e > s) {
            return Err(Error::value(
                "arange",
                format!("upper bound and larger bound inconsistent with step sign (start {start}, end {end}, step {step})"),
            ));
        }
        let all_int = [start, end, step]
            .iter()
            .all(|v| !matches!(v, Scalar::Float(_)));
        let n = if all_int {
            let (s, e, st) = (
                start.to::<i64>() as i128,
                end.to::<i64>() as i128,
                step.to::<i64>() as i128,
            );
            // ceil((e - s) / st) for integers of the same sign.
            let num = e - s;
            ((num + st - st.signum()) / st).max(0) as f64
        } else {
            ((e - s) / st).ceil().max(0.0)
        };
        if n > isize::MAX as f64 {
            return Err(Error::overflow(
                "arange",
                format!("the length of range {start} -> {end} by {step}"),
            ));
        }
        let n = n as usize;
        // Not zeroed: the backend writes every element (S5).
        let t = Self::alloc_on("arange", &[n], dtype, Device::Cpu, false)?;
        let fill = Fill::Arange {
            start,
            step,
            int: all_int && !dtype.is_float(),
        };
        backend_for("arange", t.device())?.fill_pattern("arange", &t, fill)?;
        Ok(t)
    }

    /// `steps` values evenly spaced from `start` to `end` inclusive (PyTorch's symmetric
    /// formula: the first half counts up from `start`, the second down from `end`).
    pub fn linspace(start: f64, end: f64, steps: usize, dtype: DType) -> Result<Tensor> {
        let t = Self::alloc_on("linspace", &[steps], dtype, Device::Cpu, false)?;
        backend_for("linspace", t.device())?.fill_pattern(
            "linspace",
            &t,
            Fill::Linspace { start, end },
        )?;
        Ok(t)
    }

    /// The `n × m` identity (ones on the main diagonal).
    pub fn eye(n: usize, m: usize, dtype: DType) -> Result<Tensor> {
        let t = Self::zeros(&[n, m], dtype)?;
        t.diagonal(0, 0, 1)?.fill_(1)?;
        Ok(t)
    }

    /// Uniform samples in `[0, 1)` from a generator seeded with `seed` (float dtypes; a
    /// complex one draws both parts so).
    pub fn rand(shape: &[usize], dtype: DType, seed: u64) -> Result<Tensor> {
        Self::rand_with(shape, dtype, &mut Generator::new(seed))
    }

    /// Standard normal samples from a generator seeded with `seed` (float dtypes; a complex
    /// one draws both parts with variance ½, as PyTorch).
    pub fn randn(shape: &[usize], dtype: DType, seed: u64) -> Result<Tensor> {
        Self::randn_with(shape, dtype, &mut Generator::new(seed))
    }

    /// Uniform samples in `[0, 1)` drawn from `gen`.
    pub fn rand_with(shape: &[usize], dtype: DType, gen: &mut Generator) -> Result<Tensor> {
        Self::sample("rand", shape, dtype, Fill::Uniform(gen))
    }

    /// Standard normal samples drawn from `gen`.
    pub fn randn_with(shape: &[usize], dtype: DType, gen: &mut Generator) -> Result<Tensor> {
        Self::sample("randn", shape, dtype, Fill::Normal(gen))
    }

    fn sample(op: &'static str, shape: &[usize], dtype: DType, fill: Fill<'_>) -> Result<Tensor> {
        if dtype.is_complex() {
            // PyTorch's: both parts drawn independently, each with variance ½ for `randn`
            // (so that E|z|² = 1), each uniform in [0, 1) for `rand`.
            let normal = matches!(fill, Fill::Normal(_));
            let mut pairs = shape.to_vec();
            pairs.push(2);
            let parts = Self::sample(op, &pairs, dtype.to_real(), fill)?;
            if normal {
                parts.mul_(std::f64::consts::FRAC_1_SQRT_2)?;
            }
            return parts.view_as_complex();
        }
        if !dtype.is_float() {
            return Err(Error::dtype(
                op,
                format!("\"{op}\" not implemented for '{}'", dtype.legacy_name()),
            ));
        }
        // Not zeroed: the backend writes every element (S5).
        let t = Self::alloc_on(op, shape, dtype, Device::Cpu, false)?;
        backend_for(op, t.device())?.fill_pattern(op, &t, fill)?;
        Ok(t)
    }
}
