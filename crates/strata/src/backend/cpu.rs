//! The CPU backend: today's engine (`kernel/`), behind [`Backend`].

use super::{Backend, Fill};
use crate::error::Result;
use crate::kernel;
use crate::ops::reduce::{ReduceSpec, Reduction};
use crate::storage::{Device, Storage};
use crate::tensor::{Scalar, Tensor};

/// Runs every op with the loops in `kernel/`.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CpuBackend;

impl Backend for CpuBackend {
    fn device(&self) -> Device {
        Device::Cpu
    }

    fn allocate(&self, _op: &'static str, nbytes: usize, zeroed: bool) -> Result<Storage> {
        if zeroed {
            Storage::zeroed(nbytes)
        } else {
            Storage::for_overwrite(nbytes)
        }
    }

    fn copy(&self, dst: &Tensor, src: &Tensor) -> Result<()> {
        kernel::copy::copy_loops(dst, src)
    }

    fn fill(&self, dst: &Tensor, value: Scalar) -> Result<()> {
        kernel::fill::fill(dst, value)
    }

    fn fill_pattern(&self, op: &'static str, dst: &Tensor, fill: Fill<'_>) -> Result<()> {
        kernel::fill::fill_pattern(op, dst, fill)
    }

    fn matmul(
        &self,
        op: &'static str,
        out: &Tensor,
        a: &Tensor,
        b: &Tensor,
        batch: &[usize],
    ) -> Result<()> {
        kernel::matmul::run_product(op, out, a, b, batch, true)
    }

    fn reduce(
        &self,
        op: Reduction,
        out: &Tensor,
        input: &Tensor,
        spec: &ReduceSpec<'_>,
    ) -> Result<()> {
        kernel::reduce::reduce(op, out, input, spec)
    }

    fn arg_reduce(
        &self,
        op: Reduction,
        values: Option<&Tensor>,
        indices: &Tensor,
        input: &Tensor,
        spec: &ReduceSpec<'_>,
    ) -> Result<()> {
        kernel::reduce::arg_reduce(op, values, indices, input, spec)
    }

    fn scan(&self, op: Reduction, out: &Tensor, input: &Tensor, dim: usize) -> Result<()> {
        kernel::reduce::scan(op, out, input, dim)
    }
}
