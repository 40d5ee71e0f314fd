//! The device seam: the op layer decides what an op means, a [`Backend`] runs its loops.
//!
//! The op layer (`ops/`, the `Tensor` methods in `tensor/` and `kernel/matmul.rs`) checks
//! arguments, broadcasts, promotes dtypes, allocates the output (on the device of the
//! inputs, through [`Backend::allocate`]) and decides in-place and overlap rules; it then
//! asks [`backend_for`] for the backend of the inputs' device and calls ONE method of it
//! with the op enum and already-allocated, already-checked tensors. The backend only runs
//! loops: it takes the storage borrows it needs while it touches the bytes (exclusive for
//! what it writes, which bumps the version counter; shared for what it reads) and writes
//! every element of a fresh output.
//!
//! Two backends: the CPU engine ([`cpu::CpuBackend`], forwarding to `kernel/`) and CUDA
//! ([`cuda::CudaBackend`], kernels generated from the op table and compiled at run time,
//! cuBLAS for matmul). Adding a backend: a module with a type implementing [`Backend`],
//! one arm in [`backend_for`], and an [`Allocator`](crate::Allocator) whose `device()`
//! names the device, for the storages it hands out. Nothing in `ops/` or `kernel/`
//! changes. Copies between devices are not a backend method: `Tensor::to_device` and
//! `copy_` call `cuda::transfer` for them. Host-only operations (data access, printing, export, saving) refuse
//! non-CPU storages through [`Storage::check_host`](crate::Storage::check_host).
//!
//! Every family of loops goes through this trait: elementwise ops (the op table's
//! `Unary`/`Binary`/`Ternary`), copies and fills, matmul, reductions and scans, and the
//! gather/scatter loops of advanced indexing, and the per-matrix factorisations of
//! linear algebra. Each is called from one place in the op
//! layer, marked `// backend seam`.

pub(crate) mod cpu;
pub(crate) mod cuda;

use crate::error::{Error, Result};
use crate::ops::linalg::{Failure, Job};
use crate::ops::reduce::{ReduceSpec, Reduction};
use crate::ops::table::{Binary, Ternary, Unary};
use crate::storage::{Device, Storage};
use crate::tensor::{Generator, Scalar, Tensor};

/// The range the values of an index tensor must lie in along dim `dim` of size `size`:
/// `-size..size` (negative counting from the end) when `negative`, else `0..size`
/// (PyTorch's rule for `gather` and `scatter`). Out of range is the index error naming the
/// value, the dim and the size.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Bound {
    pub dim: usize,
    pub size: usize,
    pub negative: bool,
}

impl Bound {
    /// `-size..size` along `dim`.
    pub(crate) fn wrapping(dim: usize, size: usize) -> Bound {
        Bound {
            dim,
            size,
            negative: true,
        }
    }

    /// `0..size` along `dim`.
    pub(crate) fn non_negative(dim: usize, size: usize) -> Bound {
        Bound {
            dim,
            size,
            negative: false,
        }
    }
}

/// What a creation op writes into its fresh tensor, element `i` of the flattened output.
pub(crate) enum Fill<'a> {
    /// `arange`: `start + i·step`, exact in `i64` when `int` (the dtype is an integer
    /// one and every bound was an integer), else computed in `f64`.
    Arange {
        /// First value.
        start: Scalar,
        /// Step.
        step: Scalar,
        /// Integer arithmetic.
        int: bool,
    },
    /// `linspace`: PyTorch's symmetric formula from `start` to `end` inclusive.
    Linspace {
        /// First value.
        start: f64,
        /// Last value.
        end: f64,
    },
    /// `rand`: uniform samples in `[0, 1)` drawn in order from the generator.
    Uniform(&'a mut Generator),
    /// `randn`: standard normal samples drawn in order from the generator.
    Normal(&'a mut Generator),
}

/// The loops of one device. Every method receives tensors the op layer has checked:
/// shapes fit, dtypes are the ones the op's rule gives, outputs are writable and do not
/// overlap themselves or (unless identical) their inputs, and all tensors live on this
/// backend's device.
pub(crate) trait Backend: Send + Sync {
    /// The device this backend runs on.
    #[allow(dead_code)]
    fn device(&self) -> Device;

    /// `nbytes` of fresh memory on the device: zeroed, or for a kernel to overwrite whole
    /// before anyone reads it (invariant S5).
    fn allocate(&self, op: &'static str, nbytes: usize, zeroed: bool) -> Result<Storage>;

    /// Unary op `op` of the op table (`ops/table.rs`) elementwise: `out ← op(a)`. `a` has
    /// the op's compute dtype and `out`'s shape; `out` has the result dtype.
    fn unary(&self, op: Unary, out: &Tensor, a: &Tensor) -> Result<()>;

    /// Binary op `op`: `out ← op(a, b)`, `a` and `b` of the compute dtype, broadcast to
    /// `out`'s shape.
    fn binary(&self, op: Binary, out: &Tensor, a: &Tensor, b: &Tensor) -> Result<()>;

    /// Ternary op `op` (`where`: `a` the bool condition; `clamp`: `a` the input, `b` and
    /// `c` the bounds), all broadcast to `out`'s shape.
    fn ternary(&self, op: Ternary, out: &Tensor, a: &Tensor, b: &Tensor, c: &Tensor) -> Result<()>;

    /// Index offsets: the element offsets (`Σ position·weight`) of `mask`'s true
    /// elements, in row-major order (`weights` has one entry per dim of `mask`).
    fn true_offsets(
        &self,
        op: &'static str,
        mask: &Tensor,
        weights: &[isize],
    ) -> Result<Vec<isize>>;

    /// `nonzero` of a 1-D `bool` tensor: the `(count, 1)` `int64` tensor of its true
    /// positions, written in place; `None` when this backend has no direct path for the
    /// mask's layout (the op then goes through [`true_offsets`](Self::true_offsets)).
    fn nonzero_flat(&self, op: &'static str, mask: &Tensor) -> Result<Option<Tensor>>;

    /// Adds `index[j]·stride` to `offs[j]` for every element `j` (row-major) of the int64
    /// or uint64 `index`; with a `bound` each value is checked against it first (a
    /// negative one, where allowed, counts from the end).
    fn add_index_offsets(
        &self,
        op: &'static str,
        offs: &mut [isize],
        index: &Tensor,
        bound: Option<Bound>,
        stride: isize,
    ) -> Result<()>;

    /// The offsets `wrap(index[j])·stride` of every element `j` (row-major) of the int64
    /// or uint64 `index`, each value checked against `bound` first: [`add_index_offsets`](Self::add_index_offsets) into zeros, which is
    /// what this default does.
    fn index_offsets(
        &self,
        op: &'static str,
        index: &Tensor,
        bound: Bound,
        stride: isize,
    ) -> Result<Vec<isize>> {
        let mut offs: Vec<isize> = crate::error::try_vec(op, index.numel())?;
        offs.resize(index.numel(), 0);
        self.add_index_offsets(op, &mut offs, index, Some(bound), stride)?;
        Ok(offs)
    }

    /// `out[j, r] = src[src.offset + offs[j] + r·rest_strides]`, `out`'s first `nb` dims
    /// being the broadcast index dims (a fresh tensor, disjoint from `src`).
    fn gather(
        &self,
        op: &'static str,
        out: &Tensor,
        nb: usize,
        src: &Tensor,
        rest_strides: &[isize],
        offs: &[isize],
    ) -> Result<()>;

    /// PyTorch's `gather` along `dim` in one pass, for the layouts the backend has such a
    /// loop for (`out` a fresh tensor of `index`'s shape, `index` int64 with its other
    /// dims no longer than `src`'s, both checked by the op layer); `Ok(false)`, having
    /// done nothing, sends the op layer the general way ([`index_offsets`] then
    /// [`gather`]), which is what this default does.
    ///
    /// [`index_offsets`]: Self::index_offsets
    /// [`gather`]: Self::gather
    fn gather_dim(
        &self,
        _op: &'static str,
        _out: &Tensor,
        _src: &Tensor,
        _dim: usize,
        _index: &Tensor,
    ) -> Result<bool> {
        Ok(false)
    }

    /// `dst[dst.offset + offs[j] + r·rest_strides] = src[j, r]` (`+=` with
    /// `accumulate`); `src` is disjoint from `dst` (the op layer staged it).
    #[allow(clippy::too_many_arguments)]
    fn scatter(
        &self,
        op: &'static str,
        dst: &Tensor,
        rest_strides: &[isize],
        offs: &[isize],
        src: &Tensor,
        nb: usize,
        accumulate: bool,
    ) -> Result<()>;

    /// `dst ← src`, `src` broadcast to `dst`'s shape and cast to its dtype (`copy_`,
    /// `clone`, `contiguous`, `to_dtype`). `src` does not partially overlap `dst` (the op
    /// layer staged it).
    fn copy(&self, dst: &Tensor, src: &Tensor) -> Result<()>;

    /// Every element of `dst` set to `value` (which fits `dst`'s dtype).
    fn fill(&self, dst: &Tensor, value: Scalar) -> Result<()>;

    /// A fresh contiguous 1-d (`Arange`, `Linspace`) or any-shape (`Uniform`, `Normal`)
    /// tensor written whole with `fill`.
    fn fill_pattern(&self, op: &'static str, dst: &Tensor, fill: Fill<'_>) -> Result<()>;

    /// `out[i..] = a[i..] · b[i..]`: `a` is `[.., m, k]`, `b` is `[.., k, n]`, their
    /// leading dims broadcast to `batch`; `out` is a fresh contiguous `[batch.., m, n]`
    /// of their (common, non-bool) dtype.
    fn matmul(
        &self,
        op: &'static str,
        out: &Tensor,
        a: &Tensor,
        b: &Tensor,
        batch: &[usize],
    ) -> Result<()>;

    /// A reduction (`sum`, `mean`, `var`, …) of `input` over `spec`'s dims into the fresh
    /// contiguous keep-shaped `out`, of the dtype the op's rule gives.
    fn reduce(
        &self,
        op: Reduction,
        out: &Tensor,
        input: &Tensor,
        spec: &ReduceSpec<'_>,
    ) -> Result<()>;

    /// An arg-reduction along one dim: the index (int64) of the best element into
    /// `indices`, and its value into `values` when given (both fresh, contiguous,
    /// keep-shaped). `input` has elements.
    fn arg_reduce(
        &self,
        op: Reduction,
        values: Option<&Tensor>,
        indices: &Tensor,
        input: &Tensor,
        spec: &ReduceSpec<'_>,
    ) -> Result<()>;

    /// A scan (`cumsum`, `cumprod`) of `input` along `dim` into the fresh contiguous
    /// `out` of the same shape. `input` has elements.
    fn scan(&self, op: Reduction, out: &Tensor, input: &Tensor, dim: usize) -> Result<()>;

    /// `sort`/`topk` along `dim`: the first `k` elements of each lane of `input` in
    /// ascending (or `descending`) order into `values` (when given) and their positions
    /// into `indices` (int64); both fresh and contiguous, `input`'s shape with `k` along
    /// `dim`. Equal elements keep their order (stable); NaN sorts as the largest value.
    fn sort(
        &self,
        op: &'static str,
        values: Option<&Tensor>,
        indices: &Tensor,
        input: &Tensor,
        dim: usize,
        descending: bool,
    ) -> Result<()>;

    /// `searchsorted`: into the fresh contiguous int64/int32 `out` of `values`' shape,
    /// the insertion position of each value in its row (last dim) of the sorted `seq`
    /// (1-D, or with `values`' leading dims), after equal elements when `right`; `sorter`
    /// (int64, `seq`'s shape) gives the order of an unsorted `seq`. `values` has `seq`'s
    /// dtype.
    fn searchsorted(
        &self,
        op: &'static str,
        out: &Tensor,
        seq: &Tensor,
        values: &Tensor,
        sorter: Option<&Tensor>,
        right: bool,
    ) -> Result<()>;

    /// One factorisation per matrix (`ops/linalg.rs`, [`Job`](crate::ops::linalg::Job)):
    /// `ins` (float32 or float64, `[batch.., r, c]`, any strides, already broadcast to the
    /// batch shape) into the fresh row-major `outs`. Returns the first batch element whose
    /// factorisation could not be completed (a zero pivot, a matrix that is not positive
    /// definite, no convergence), for the op layer's error.
    fn linalg(
        &self,
        op: &'static str,
        job: Job,
        outs: &[&Tensor],
        ins: &[&Tensor],
    ) -> Result<Option<Failure>>;
}

/// The backend that runs `op` on `device`, or the [`Error::Device`] saying this build has
/// none for it. One match on a `Copy` enum per op; nothing per element.
#[inline]
pub(crate) fn backend_for(op: &'static str, device: Device) -> Result<&'static dyn Backend> {
    match device {
        Device::Cpu => Ok(&cpu::CpuBackend),
        Device::Cuda(n) => Ok(cuda::backend(op, n)?),
    }
}

/// The backend for an op reading or writing all of `tensors`, which must share a device.
#[inline]
///
/// As in PyTorch, a 0-d CPU tensor (a scalar) may join tensors on another device: the
/// backend reads its value.
pub(crate) fn backend_of(op: &'static str, tensors: &[&Tensor]) -> Result<&'static dyn Backend> {
    let device = common_device(tensors);
    for t in tensors {
        if t.device() != device && !is_cpu_scalar(t) {
            return Err(Error::device_mismatch(op, device, t.device()));
        }
    }
    backend_for(op, device)
}

/// A 0-d tensor in host memory.
fn is_cpu_scalar(t: &Tensor) -> bool {
    t.ndim() == 0 && t.device().is_cpu()
}

/// The device an op on `tensors` runs on: the first that is not a 0-d CPU tensor's (the
/// first tensor's when all are, the CPU when there are none).
pub(crate) fn common_device(tensors: &[&Tensor]) -> Device {
    tensors
        .iter()
        .find(|t| !is_cpu_scalar(t))
        .or(tensors.first())
        .map_or(Device::Cpu, |t| t.device())
}
