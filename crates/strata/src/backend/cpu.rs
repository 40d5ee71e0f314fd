//! The CPU backend: today's engine (`kernel/`), behind [`Backend`].

use super::{Backend, Bound, Fill};
use crate::error::Result;
use crate::kernel;
use crate::ops::linalg::{Failure, Job};
use crate::ops::reduce::{ReduceSpec, Reduction};
use crate::ops::table::{Binary, Ternary, Unary};
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

    fn unary(&self, op: Unary, out: &Tensor, a: &Tensor) -> Result<()> {
        kernel::run_unary(op, out, a)
    }

    fn binary(&self, op: Binary, out: &Tensor, a: &Tensor, b: &Tensor) -> Result<()> {
        kernel::run_binary(op, out, a, b)
    }

    fn ternary(&self, op: Ternary, out: &Tensor, a: &Tensor, b: &Tensor, c: &Tensor) -> Result<()> {
        kernel::run_ternary(op, out, a, b, c)
    }

    fn true_offsets(
        &self,
        op: &'static str,
        mask: &Tensor,
        weights: &[isize],
    ) -> Result<Vec<isize>> {
        kernel::gather::true_offsets(op, mask, weights)
    }

    fn nonzero_flat(&self, op: &'static str, mask: &Tensor) -> Result<Option<Tensor>> {
        kernel::gather::nonzero_flat(op, mask)
    }

    fn index_offsets(
        &self,
        op: &'static str,
        index: &Tensor,
        bound: Bound,
        stride: isize,
    ) -> Result<Vec<isize>> {
        kernel::gather::index_offsets(op, index, bound, stride)
    }

    fn add_index_offsets(
        &self,
        op: &'static str,
        offs: &mut [isize],
        index: &Tensor,
        bound: Option<Bound>,
        stride: isize,
    ) -> Result<()> {
        kernel::gather::add_index_offsets(op, offs, index, bound, stride)
    }

    fn gather(
        &self,
        op: &'static str,
        out: &Tensor,
        nb: usize,
        src: &Tensor,
        rest_strides: &[isize],
        offs: &[isize],
    ) -> Result<()> {
        kernel::gather::gather(op, out, nb, src, rest_strides, offs)
    }

    fn gather_dim(
        &self,
        op: &'static str,
        out: &Tensor,
        src: &Tensor,
        dim: usize,
        index: &Tensor,
    ) -> Result<bool> {
        kernel::gather::gather_dim(op, out, src, dim, index)
    }

    fn scatter(
        &self,
        op: &'static str,
        dst: &Tensor,
        rest_strides: &[isize],
        offs: &[isize],
        src: &Tensor,
        nb: usize,
        accumulate: bool,
    ) -> Result<()> {
        kernel::gather::scatter(op, dst, rest_strides, offs, src, nb, accumulate)
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

    fn sort(
        &self,
        op: &'static str,
        values: Option<&Tensor>,
        indices: &Tensor,
        input: &Tensor,
        dim: usize,
        descending: bool,
    ) -> Result<()> {
        kernel::sort::sort(op, values, indices, input, dim, descending)
    }

    fn searchsorted(
        &self,
        op: &'static str,
        out: &Tensor,
        seq: &Tensor,
        values: &Tensor,
        sorter: Option<&Tensor>,
        right: bool,
    ) -> Result<()> {
        kernel::sort::search(op, out, seq, values, sorter, right)
    }

    fn linalg(
        &self,
        op: &'static str,
        job: Job,
        outs: &[&Tensor],
        ins: &[&Tensor],
    ) -> Result<Option<Failure>> {
        kernel::linalg::run(op, job, outs, ins)
    }
}
