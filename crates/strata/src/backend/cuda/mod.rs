//! The CUDA backend: every [`Backend`] method on CUDA tensors of any layout, with
//! kernels generated from the op table and compiled at run time (`source.rs`), cuBLAS
//! for matmul (`blas.rs`), reductions (`reduce.rs`) and the host↔device copies
//! (`transfer.rs`). The driver is loaded at run time (`driver.rs`): a build without CUDA
//! installed runs everywhere and reports every CUDA request as a clear error.
//!
//! Kernels are queued on the calling thread's current stream and not waited for; the host
//! waits only where it must read the result (a copy to the host, `item`, printing) or
//! where the caller synchronises.

pub(crate) mod blas;
pub(crate) mod driver;
#[cfg(test)]
mod kernel_check;
pub(crate) mod pinned;
pub(crate) mod reduce;
pub(crate) mod source;
pub(crate) mod transfer;

use std::sync::Arc;

use cudarc::driver::sys;

use super::{Backend, Bound, Fill};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernel::math::not_implemented;
use crate::ops::reduce::{ReduceSpec, Reduction};
use crate::ops::table::{Binary, BinaryRule, CudaClass, Ternary, Unary, UnaryRule};
use crate::storage::{borrow, Allocator, Backing, Device, Storage};
use crate::tensor::{Scalar, Tensor};
use driver::Gpu;
use source::{load, store, store_cast, vtype, Geometry, LoopArgs, Slot, MAX_DIMS, MAX_OPS};

/// The backend of CUDA device `ordinal`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CudaBackend {
    /// The device number.
    pub ordinal: usize,
}

/// The backend for `cuda:ordinal`, or the clear error why there is none.
pub(crate) fn backend(op: &'static str, ordinal: usize) -> Result<&'static CudaBackend> {
    const N: usize = 64;
    static BACKENDS: [CudaBackend; N] = {
        let mut a = [CudaBackend { ordinal: 0 }; N];
        let mut i = 0;
        while i < N {
            a[i].ordinal = i;
            i += 1;
        }
        a
    };
    driver::gpu(op, ordinal)?;
    BACKENDS.get(ordinal).ok_or_else(|| Error::Device {
        op,
        device: Device::Cuda(ordinal),
        msg: format!("device cuda:{ordinal} is not available: strata supports {N} CUDA devices"),
    })
}

/// Device memory from the caching allocator (`driver.rs`), tied to the stream it was
/// allocated on (a freed block is reused on that stream only).
#[derive(Debug)]
pub(crate) struct CudaAllocator {
    ordinal: usize,
    stream: usize,
}

impl Allocator for CudaAllocator {
    fn name(&self) -> &'static str {
        "cuda"
    }

    fn device(&self) -> Device {
        Device::Cuda(self.ordinal)
    }

    fn allocate_zeroed(&self, nbytes: usize) -> Result<std::ptr::NonNull<u8>> {
        let p = self.allocate_for_overwrite(nbytes)?;
        let g = driver::gpu("zeros", self.ordinal)?;
        driver::drv!(
            "zeros",
            g.ordinal,
            cuMemsetD8Async(p.as_ptr() as u64, 0, nbytes, self.stream as sys::CUstream)
        )?;
        Ok(p)
    }

    fn allocate_for_overwrite(&self, nbytes: usize) -> Result<std::ptr::NonNull<u8>> {
        let g = driver::gpu("empty", self.ordinal)?;
        let p = g.alloc("empty", nbytes, self.stream as sys::CUstream)?;
        std::ptr::NonNull::new(p as *mut u8).ok_or_else(|| Error::Resource {
            op: "empty",
            msg: "cuMemAlloc returned a null pointer".into(),
        })
    }

    unsafe fn deallocate(&self, ptr: std::ptr::NonNull<u8>, nbytes: usize) {
        if let Ok(g) = driver::gpu("free", self.ordinal) {
            g.free(ptr.as_ptr() as u64, nbytes, self.stream as sys::CUstream);
        }
    }
}

/// A fresh storage of `nbytes` on `cuda:ordinal`, for the current stream.
pub(crate) fn allocate(
    op: &'static str,
    ordinal: usize,
    nbytes: usize,
    zeroed: bool,
) -> Result<Storage> {
    driver::gpu(op, ordinal)?;
    let alloc = Arc::new(CudaAllocator {
        ordinal,
        stream: driver::current_stream(ordinal) as usize,
    });
    // `from_backing_on`: a zero-byte backing has no allocator to name the device.
    Ok(Storage::from_backing_on(
        Backing::allocate_with(alloc, nbytes, zeroed)?,
        Device::Cuda(ordinal),
    ))
}

/// The device address of `t`'s first element.
pub(crate) fn dev_ptr(t: &Tensor) -> u64 {
    (t.storage().data_ptr() as u64).wrapping_add(t.byte_offset() as u64)
}

/// `t`'s strides broadcast to `shape` (0 along broadcast dims).
fn strides_for(op: &'static str, t: &Tensor, shape: &[usize]) -> Result<Vec<isize>> {
    if t.shape() == shape {
        return Ok(t.strides().to_vec());
    }
    let target: Vec<i64> = shape.iter().map(|&n| n as i64).collect();
    let l = t.layout().expand(&target).map_err(|_| {
        Error::shape(
            op,
            format!("cannot broadcast {:?} to {:?}", t.shape(), shape),
        )
    })?;
    Ok(l.strides().to_vec())
}

/// An operand of [`CudaBackend::map`]: a device tensor walked elementwise, or a value (a
/// CPU 0-d tensor's, or a fill value) passed to the kernel.
pub(crate) enum Arg<'a> {
    /// A tensor on this device.
    T(&'a Tensor),
    /// A value of this dtype.
    S(DType, Scalar),
}

impl CudaBackend {
    pub(crate) fn gpu(&self, op: &'static str) -> Result<&'static Gpu> {
        driver::gpu(op, self.ordinal)
    }

    /// The operand `t` of an elementwise op: a CPU 0-d tensor travels as a value.
    fn arg<'a>(&self, op: &'static str, t: &'a Tensor) -> Result<Arg<'a>> {
        if t.device() == Device::Cuda(self.ordinal) {
            Ok(Arg::T(t))
        } else if t.device().is_cpu() && t.numel() == 1 {
            Ok(Arg::S(t.dtype(), t.item()?))
        } else {
            Err(Error::device_mismatch(
                op,
                Device::Cuda(self.ordinal),
                t.device(),
            ))
        }
    }

    /// Runs the statement `body(values)` for every element of `out` (broadcasting the
    /// tensor operands to its shape): `values[i]` is the C++ expression of operand `i`'s
    /// value (in `vtype` of its dtype); the body stores through `p0`, `out`'s element.
    pub(crate) fn map(
        &self,
        op: &'static str,
        out: &Tensor,
        args: &[Arg<'_>],
        prefix: &str,
        body: impl Fn(&[String]) -> String,
    ) -> Result<()> {
        self.map_in(op, out, args, prefix, body, false)
    }

    /// As [`map`](Self::map); with `serial`, in element order on one GPU thread (for
    /// scatters with repeated positions, where the order decides the result).
    pub(crate) fn map_in(
        &self,
        op: &'static str,
        out: &Tensor,
        args: &[Arg<'_>],
        prefix: &str,
        body: impl Fn(&[String]) -> String,
        serial: bool,
    ) -> Result<()> {
        let code = || Ok((prefix.to_string(), Box::new(body) as BodyFn<'_>));
        self.run_loop(op, out, args, None, code, serial)
    }

    /// As [`map`](Self::map) for an op whose code `key` decides: `code` (the prefix and
    /// the body) runs only the first time a layout class of `key` is seen; later calls
    /// find the compiled kernel by key, without generating its source.
    fn map_keyed<'b>(
        &self,
        op: &'static str,
        key: OpKey,
        out: &Tensor,
        args: &[Arg<'_>],
        code: impl FnOnce() -> Result<(String, BodyFn<'b>)>,
    ) -> Result<()> {
        self.run_loop(op, out, args, Some(key), code, false)
    }

    fn run_loop<'b>(
        &self,
        op: &'static str,
        out: &Tensor,
        args: &[Arg<'_>],
        key: Option<OpKey>,
        code: impl FnOnce() -> Result<(String, BodyFn<'b>)>,
        serial: bool,
    ) -> Result<()> {
        let g = self.gpu(op)?;
        let Some(lay) = layout_loop(op, out, args, !serial)? else {
            // Nothing to run, but an op with no kernel for these dtypes still says so.
            return code().map(|_| ());
        };
        let k = match key {
            Some(key) => {
                let pk = PlanKey {
                    op: key,
                    slots: lay.slots.clone(),
                    mode: lay.mode,
                };
                let known = g
                    .plans
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .get(&pk)
                    .copied();
                match known {
                    Some(k) => k,
                    None => {
                        let (prefix, body) = code()?;
                        let k = g.kernel(op, &loop_source(&lay, &prefix, &*body))?;
                        g.plans
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .insert(pk, k);
                        k
                    }
                }
            }
            None => {
                let (prefix, body) = code()?;
                g.kernel(op, &loop_source(&lay, &prefix, &*body))?
            }
        };
        let mut borrows: Vec<(&Storage, bool)> = vec![(out.storage(), true)];
        for a in args {
            if let Arg::T(t) = a {
                borrows.push((t.storage(), false));
            }
        }
        let _guard = borrow::acquire(op, &borrows)?;
        let stream = driver::current_stream(self.ordinal);
        if serial {
            g.launch_grid(op, k, (1, 1, 1), (1, 1, 1), 0, stream, &lay.args)
        } else if let Some((grid, block)) = lay.launch {
            g.launch_grid(op, k, grid, block, 0, stream, &lay.args)
        } else {
            g.launch(op, k, lay.n, stream, &lay.args)
        }
    }

    /// Uploads `data` (host bytes) to a fresh device storage on the current stream.
    pub(crate) fn upload_bytes(&self, op: &'static str, data: &[u8]) -> Result<Storage> {
        let s = allocate(op, self.ordinal, data.len(), false)?;
        if !data.is_empty() {
            driver::drv!(
                op,
                self.ordinal,
                cuMemcpyHtoDAsync_v2(
                    s.data_ptr() as u64,
                    data.as_ptr().cast(),
                    data.len(),
                    driver::current_stream(self.ordinal)
                )
            )?;
            // Pageable memory: the call returns once the bytes were staged, but the
            // caller's buffer may be freed right after; wait for the copy to be safe.
            driver::stream_synchronize(op, self.ordinal, driver::current_stream(self.ordinal))?;
        }
        Ok(s)
    }

    /// A device tensor with the contents of the host tensor `t` (same shape and dtype).
    pub(crate) fn upload(&self, op: &'static str, t: &Tensor) -> Result<Tensor> {
        transfer::to_device(op, t, Device::Cuda(self.ordinal), false)
    }

    /// The host copy of the device tensor `t`.
    pub(crate) fn download(&self, op: &'static str, t: &Tensor) -> Result<Tensor> {
        transfer::to_host(op, t, false)
    }
}

/// A loop body generator: the statement for the operands' value expressions.
pub(crate) type BodyFn<'b> = Box<dyn Fn(&[String]) -> String + 'b>;

/// What decides the code of a table op's kernel, besides its layout class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum OpKey {
    /// Unary op, compute dtype, output dtype.
    Unary(Unary, DType, DType),
    /// Binary op, compute dtype, output dtype.
    Binary(Binary, DType, DType),
    /// Ternary op, first and second operand dtypes, output dtype.
    Ternary(Ternary, DType, DType, DType),
    /// A copy with a cast: source and destination dtypes.
    Copy(DType, DType),
}

/// Which of the three loop kernels a layout gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum LoopMode {
    /// Every operand contiguous: the unrolled flat loop.
    Flat { wide: bool },
    /// The strided loop (runtime dims, offsets per element).
    Strided { wide: bool },
    /// The loop over rows (offsets per row; the last dim walked with its strides).
    Rows { wide: bool },
    /// The shared-memory tiled loop; bit `k` set when operand `k` is read through the tile.
    Tiled { mask: u8, wide: bool },
}

/// A compiled elementwise kernel's identity: its code, its operands, its loop kind.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct PlanKey {
    op: OpKey,
    slots: Vec<Slot>,
    mode: LoopMode,
}

/// The launch of a loop kernel, its code aside: operands, argument block, element
/// count, loop kind and (tiled) grid.
pub(crate) struct LoopLayout {
    pub slots: Vec<Slot>,
    pub args: LoopArgs,
    pub n: usize,
    pub mode: LoopMode,
    /// The grid and block of the tiled and row loops; `None` for the flat and strided
    /// loops (256-thread blocks, as many as the element count calls for).
    pub launch: Option<(Dim3, Dim3)>,
}

/// A CUDA grid or block size.
pub(crate) type Dim3 = (u32, u32, u32);

/// The dims of a tiled loop, `(J, L)`: `L` the output's unit-stride dim, `J` the
/// unit-stride dim of every input that has one elsewhere (read through shared memory so
/// that both the reads and the writes are coalesced), both at least 16 long; `None` when
/// the plain loop reads and writes coalesced already.
fn tile_dims(geo: &Geometry, slots: &[Slot]) -> Option<(usize, usize)> {
    let unit = |k: usize| geo.strides[k].iter().position(|&s| s == 1 || s == -1);
    let l = unit(0)?;
    let mut j = None;
    for (k, slot) in slots.iter().enumerate().skip(1) {
        if let Slot::Tensor(_) = slot {
            match unit(k) {
                Some(u) if u != l && geo.strides[k][l].unsigned_abs() > 1 => match j {
                    None => j = Some(u),
                    Some(prev) if prev != u => return None,
                    _ => {}
                },
                _ => {}
            }
        }
    }
    let j = j?;
    (geo.sizes[j] >= 16 && geo.sizes[l] >= 16 && geo.sizes[j].div_ceil(32) <= 65535)
        .then_some((j, l))
}

/// The source of the kernel that runs `body(values)` for every element of `out` (see
/// [`CudaBackend::map`]); `None` when `out` is empty. Pure: builds text and numbers only.
#[cfg(test)]
pub(crate) fn plan_loop(
    op: &'static str,
    out: &Tensor,
    args: &[Arg<'_>],
    prefix: &str,
    body: impl Fn(&[String]) -> String,
    allow_tile: bool,
) -> Result<Option<String>> {
    Ok(layout_loop(op, out, args, allow_tile)?.map(|layout| loop_source(&layout, prefix, &body)))
}

/// The layout half of a loop kernel's plan: operands, merged geometry, loop kind; `None` when
/// `out` is empty. `parallel` false (a scatter that must run in element order on one
/// thread) keeps to the flat and strided loops.
pub(crate) fn layout_loop(
    op: &'static str,
    out: &Tensor,
    args: &[Arg<'_>],
    parallel: bool,
) -> Result<Option<LoopLayout>> {
    let n = out.numel();
    if n == 0 {
        return Ok(None);
    }
    if args.len() + 1 > MAX_OPS {
        return Err(Error::value(
            op,
            "internal error: too many operands for a CUDA loop",
        ));
    }
    let shape = out.shape();
    let mut slots = vec![Slot::Tensor(out.dtype())];
    let mut strides = vec![out.strides().to_vec()];
    let mut la = LoopArgs {
        ptr: [0; MAX_OPS],
        scalar: [0; MAX_OPS],
        size: [1; MAX_DIMS],
        stride: [[0; MAX_DIMS]; MAX_OPS],
        n: n as i64,
        nd: 0,
        tj: 0,
        tl: 0,
        nb: 0,
    };
    la.ptr[0] = dev_ptr(out);
    for (i, a) in args.iter().enumerate() {
        let k = i + 1;
        match a {
            Arg::T(t) => {
                slots.push(Slot::Tensor(t.dtype()));
                strides.push(strides_for(op, t, shape)?);
                la.ptr[k] = dev_ptr(t);
            }
            Arg::S(dt, v) => {
                slots.push(Slot::Scalar(*dt));
                strides.push(vec![0; shape.len()]);
                la.scalar[k] = source::scalar_bits(*dt, *v);
            }
        }
    }
    let geo = Geometry::new(shape, strides);
    if geo.sizes.len() > MAX_DIMS {
        return Err(Error::value(
            op,
            format!(
                "this layout needs {} dims after merging; CUDA kernels take at most {MAX_DIMS} (call .contiguous() first)",
                geo.sizes.len()
            ),
        ));
    }
    let flat = geo.flat();
    let mut wide = n > i32::MAX as usize;
    for (k, st) in geo.strides.iter().enumerate() {
        let mut reach: u128 = 0;
        for (d, &s) in st.iter().enumerate() {
            la.stride[k][d] = s as i64;
            reach += u128::from(s.unsigned_abs() as u64) * (geo.sizes[d] as u128);
        }
        wide |= reach > i32::MAX as u128;
    }
    for (d, &s) in geo.sizes.iter().enumerate() {
        la.size[d] = s as i64;
    }
    la.nd = geo.sizes.len() as i64;
    if let Some((j, l)) = tile_dims(&geo, &slots).filter(|_| parallel) {
        // Inputs whose unit stride is along `j` are read through the tile.
        let mut mask = 0u8;
        for (k, slot) in slots.iter().enumerate() {
            if k > 0 && matches!(slot, Slot::Tensor(_)) && geo.strides[k][j].unsigned_abs() == 1 {
                mask |= 1 << k;
            }
        }
        la.tj = j as i64;
        la.tl = l as i64;
        la.nb = (n / (geo.sizes[j] * geo.sizes[l])) as i64;
        let grid = (
            geo.sizes[l].div_ceil(32) as u32,
            geo.sizes[j].div_ceil(32) as u32,
            (la.nb as usize).clamp(1, 65535) as u32,
        );
        return Ok(Some(LoopLayout {
            slots,
            args: la,
            n,
            mode: LoopMode::Tiled { mask, wide },
            launch: Some((grid, (32, 8, 1))),
        }));
    }
    let nd = geo.sizes.len();
    let inner = geo.sizes.last().copied().unwrap_or(1);
    if parallel && !flat && nd >= 2 && inner >= 32 {
        // Rows: threads along the last dim (a power of two up to 256 wide), the rest of
        // the 256 along rows.
        let tx = inner.next_power_of_two().min(256);
        let ty = 256 / tx;
        let rows = n / inner;
        let gx = inner.div_ceil(tx * source::UNROLL).min(65535);
        let gy = rows.div_ceil(ty).min(65535);
        return Ok(Some(LoopLayout {
            slots,
            args: la,
            n,
            mode: LoopMode::Rows { wide },
            launch: Some(((gx as u32, gy as u32, 1), (tx as u32, ty as u32, 1))),
        }));
    }
    let mode = if flat {
        LoopMode::Flat { wide }
    } else {
        LoopMode::Strided { wide }
    };
    Ok(Some(LoopLayout {
        slots,
        args: la,
        n,
        mode,
        launch: None,
    }))
}

/// The source of the kernel for `lay` running `body(values)` after `prefix`.
pub(crate) fn loop_source(
    lay: &LoopLayout,
    prefix: &str,
    body: &dyn Fn(&[String]) -> String,
) -> String {
    let slots = &lay.slots;
    let values: Vec<String> = slots[1..]
        .iter()
        .enumerate()
        .map(|(i, slot)| match slot {
            Slot::Tensor(dt) => load(*dt, &format!("p{}", i + 1)),
            Slot::Scalar(_) => format!("s{}", i + 1),
        })
        .collect();
    match lay.mode {
        LoopMode::Tiled { mask, wide } => {
            let tiled: Vec<bool> = (0..slots.len()).map(|k| mask & (1 << k) != 0).collect();
            let values: Vec<String> = values
                .into_iter()
                .enumerate()
                .map(|(i, v)| {
                    if tiled[i + 1] {
                        format!("t{}[tx][q]", i + 1)
                    } else {
                        v
                    }
                })
                .collect();
            source::tiled_kernel(
                slots,
                &tiled,
                wide,
                &format!("{prefix}\n    {}", body(&values)),
            )
        }
        LoopMode::Flat { wide } | LoopMode::Rows { wide } => {
            // The unrolled loops, their inputs' values loaded first.
            let bodies: Vec<String> = (0..source::UNROLL)
                .map(|k| {
                    let vals: Vec<String> = slots[1..]
                        .iter()
                        .enumerate()
                        .map(|(i, slot)| match slot {
                            Slot::Tensor(_) => format!("v{k}_{}", i + 1),
                            Slot::Scalar(_) => format!("s{}", i + 1),
                        })
                        .collect();
                    body(&vals)
                })
                .collect();
            if matches!(lay.mode, LoopMode::Rows { .. }) {
                source::rows_kernel(slots, wide, prefix, &bodies)
            } else {
                source::flat_kernel(slots, wide, prefix, &bodies)
            }
        }
        LoopMode::Strided { wide } => source::loop_kernel(
            slots,
            wide,
            false,
            &format!("{prefix}\n    {}", body(&values)),
        ),
    }
}

/// What an elementwise op's value is: its compute dtype, or bool for predicates.
fn unary_value_dtype(op: Unary, compute: DType) -> DType {
    match op.rule() {
        UnaryRule::Pred | UnaryRule::Logical => DType::Bool,
        _ => compute,
    }
}

fn binary_value_dtype(op: Binary, compute: DType) -> DType {
    match op.rule() {
        BinaryRule::Compare => DType::Bool,
        _ => compute,
    }
}

/// The `typedef`s a table expression needs: `T` (the compute type) and, for the half
/// types, which one it is.
fn expr_prefix(compute: DType) -> String {
    format!(
        "typedef {} T;\n    const bool HALF_IS_BF16 = {};",
        vtype(compute),
        compute == DType::BF16
    )
}

/// The prefix and body of unary op `op` on operands of the compute dtype `compute`
/// (`{A}` in the body stands for the operand's value) storing into `out_dt`.
pub(crate) fn unary_code(op: Unary, compute: DType, out_dt: DType) -> Result<(String, String)> {
    let Some(expr) = op.cuda_expr(CudaClass::of(compute)) else {
        return Err(cuda_not_implemented(op.name(), compute));
    };
    let value = unary_value_dtype(op, compute);
    Ok((
        expr_prefix(compute),
        format!(
            "const T x = {{A}};\n    {}",
            store_cast(value, out_dt, "p0", &format!("({expr})"))
        ),
    ))
}

/// As [`unary_code`], for binary op `op` (`{A}`, `{B}`).
pub(crate) fn binary_code(op: Binary, compute: DType, out_dt: DType) -> Result<(String, String)> {
    let Some(expr) = op.cuda_expr(CudaClass::of(compute)) else {
        return Err(cuda_not_implemented(op.name(), compute));
    };
    let value = binary_value_dtype(op, compute);
    Ok((
        expr_prefix(compute),
        format!(
            "const T a = {{A}}; const T b = {{B}};\n    {}",
            store_cast(value, out_dt, "p0", &format!("({expr})"))
        ),
    ))
}

/// As [`unary_code`], for `where` (`{A}` the condition, values of `b_dt`) and `clamp`
/// (`{A}` of `a_dt`, bounds `{B}`, `{C}`).
pub(crate) fn ternary_code(
    op: Ternary,
    a_dt: DType,
    b_dt: DType,
    out_dt: DType,
) -> Result<(String, String)> {
    match op {
        Ternary::Where => Ok((
            String::new(),
            store_cast(b_dt, out_dt, "p0", "({A} ? {B} : {C})"),
        )),
        Ternary::Clamp => {
            let expr = match CudaClass::of(a_dt) {
                CudaClass::Bool => return Err(cuda_not_implemented(op.name(), DType::Bool)),
                CudaClass::Int => "((x < lo ? lo : x) > hi ? hi : (x < lo ? lo : x))",
                _ => "rminimum(rmaximum(x, lo), hi)",
            };
            Ok((
                expr_prefix(a_dt),
                format!(
                    "const T x = {{A}}; const T lo = {{B}}; const T hi = {{C}};\n    {}",
                    store_cast(a_dt, out_dt, "p0", expr)
                ),
            ))
        }
    }
}

/// The CUDA name of an op in the "not implemented" error (PyTorch's `"op_cuda"`).
fn cuda_not_implemented(op: &'static str, dt: DType) -> Error {
    let e = not_implemented(op, dt);
    match e {
        Error::DType { op, msg } => Error::DType {
            op,
            msg: msg.replace("_cpu\"", "_cuda\""),
        },
        other => other,
    }
}

impl Backend for CudaBackend {
    fn device(&self) -> Device {
        Device::Cuda(self.ordinal)
    }

    fn allocate(&self, op: &'static str, nbytes: usize, zeroed: bool) -> Result<Storage> {
        allocate(op, self.ordinal, nbytes, zeroed)
    }

    fn unary(&self, op: Unary, out: &Tensor, a: &Tensor) -> Result<()> {
        // A read-only or self-overlapping destination (an expanded view) is refused, as
        // the CPU engine's write access refuses it. (Internal loops such as the serial
        // scatter write through aliasing views on purpose, so the check is here.)
        out.check_write(op.name())?;
        let (adt, odt) = (a.dtype(), out.dtype());
        let arg = self.arg(op.name(), a)?;
        let key = OpKey::Unary(op, adt, odt);
        self.map_keyed(op.name(), key, out, &[arg], || {
            let (prefix, body) = unary_code(op, adt, odt)?;
            Ok((
                prefix,
                Box::new(move |v: &[String]| body.replace("{A}", &v[0])),
            ))
        })
    }

    fn binary(&self, op: Binary, out: &Tensor, a: &Tensor, b: &Tensor) -> Result<()> {
        out.check_write(op.name())?;
        let (adt, odt) = (a.dtype(), out.dtype());
        let name = op.name();
        let (aa, bb) = (self.arg(name, a)?, self.arg(name, b)?);
        check_divisor(self, op, out, &bb)?;
        let key = OpKey::Binary(op, adt, odt);
        self.map_keyed(name, key, out, &[aa, bb], || {
            let (prefix, body) = binary_code(op, adt, odt)?;
            Ok((
                prefix,
                Box::new(move |v: &[String]| body.replace("{A}", &v[0]).replace("{B}", &v[1])),
            ))
        })
    }

    fn ternary(&self, op: Ternary, out: &Tensor, a: &Tensor, b: &Tensor, c: &Tensor) -> Result<()> {
        let name = op.name();
        out.check_write(name)?;
        let (adt, bdt, odt) = (a.dtype(), b.dtype(), out.dtype());
        let args = [self.arg(name, a)?, self.arg(name, b)?, self.arg(name, c)?];
        let key = OpKey::Ternary(op, adt, bdt, odt);
        self.map_keyed(name, key, out, &args, || {
            let (prefix, body) = ternary_code(op, adt, bdt, odt)?;
            Ok((
                prefix,
                Box::new(move |v: &[String]| {
                    body.replace("{A}", &v[0])
                        .replace("{B}", &v[1])
                        .replace("{C}", &v[2])
                }),
            ))
        })
    }

    fn true_offsets(
        &self,
        op: &'static str,
        mask: &Tensor,
        weights: &[isize],
    ) -> Result<Vec<isize>> {
        let host = self.download(op, mask)?;
        crate::kernel::gather::true_offsets(op, &host, weights)
    }

    fn nonzero_flat(&self, _op: &'static str, _mask: &Tensor) -> Result<Option<Tensor>> {
        Ok(None)
    }

    fn add_index_offsets(
        &self,
        op: &'static str,
        offs: &mut [isize],
        index: &Tensor,
        bound: Option<Bound>,
        stride: isize,
    ) -> Result<()> {
        let host = if index.device().is_cpu() {
            index.clone()
        } else {
            self.download(op, index)?
        };
        crate::kernel::gather::add_index_offsets(op, offs, &host, bound, stride)
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
        transfer::gather(self, op, out, nb, src, rest_strides, offs)
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
        transfer::scatter(self, op, dst, rest_strides, offs, src, nb, accumulate)
    }

    fn copy(&self, dst: &Tensor, src: &Tensor) -> Result<()> {
        let (from, to) = (src.dtype(), dst.dtype());
        if from == to
            && src.device() == dst.device()
            && src.shape() == dst.shape()
            && src.is_contiguous()
            && dst.is_contiguous()
            && dst.numel() > 0
        {
            // Same bytes in the same order: the copy engine's memcpy.
            let n = dst.numel() * to.itemsize();
            let _g = borrow::acquire("copy_", &[(dst.storage(), true), (src.storage(), false)])?;
            return driver::drv!(
                "copy_",
                self.ordinal,
                cuMemcpyDtoDAsync_v2(
                    dev_ptr(dst),
                    dev_ptr(src),
                    n,
                    driver::current_stream(self.ordinal)
                )
            );
        }
        let arg = self.arg("copy_", src)?;
        self.map("copy_", dst, &[arg], "", |v| {
            store_cast(from, to, "p0", &v[0])
        })
    }

    fn fill(&self, dst: &Tensor, value: Scalar) -> Result<()> {
        let dt = dst.dtype();
        self.map("fill_", dst, &[Arg::S(dt, value)], "", |v| {
            store(dt, "p0", &v[0])
        })
    }

    fn fill_pattern(&self, op: &'static str, dst: &Tensor, fill: Fill<'_>) -> Result<()> {
        // The CPU engine writes the pattern (the same values, the same random stream of
        // the generator), then one upload.
        let host = Tensor::zeros(dst.shape(), dst.dtype())?;
        crate::kernel::fill::fill_pattern(op, &host, fill)?;
        let dev = self.upload(op, &host)?;
        self.copy(dst, &dev)
    }

    fn matmul(
        &self,
        op: &'static str,
        out: &Tensor,
        a: &Tensor,
        b: &Tensor,
        batch: &[usize],
    ) -> Result<()> {
        blas::matmul(self, op, out, a, b, batch)
    }

    fn reduce(
        &self,
        op: Reduction,
        out: &Tensor,
        input: &Tensor,
        spec: &ReduceSpec<'_>,
    ) -> Result<()> {
        reduce::reduce(self, op, out, input, spec)
    }

    fn arg_reduce(
        &self,
        op: Reduction,
        values: Option<&Tensor>,
        indices: &Tensor,
        input: &Tensor,
        spec: &ReduceSpec<'_>,
    ) -> Result<()> {
        reduce::arg_reduce(self, op, values, indices, input, spec)
    }

    fn scan(&self, op: Reduction, out: &Tensor, input: &Tensor, dim: usize) -> Result<()> {
        reduce::scan(self, op, out, input, dim)
    }

    fn sort(
        &self,
        op: &'static str,
        _values: Option<&Tensor>,
        _indices: &Tensor,
        input: &Tensor,
        _dim: usize,
        _descending: bool,
    ) -> Result<()> {
        Err(Error::unsupported_on(op, input.device()))
    }

    fn searchsorted(
        &self,
        op: &'static str,
        _out: &Tensor,
        seq: &Tensor,
        _values: &Tensor,
        _sorter: Option<&Tensor>,
        _right: bool,
    ) -> Result<()> {
        Err(Error::unsupported_on(op, seq.device()))
    }

    fn linalg(
        &self,
        op: &'static str,
        _job: crate::ops::linalg::Job,
        _outs: &[&Tensor],
        ins: &[&Tensor],
    ) -> Result<Option<crate::ops::linalg::Failure>> {
        Err(Error::unsupported_on(op, ins[0].device()))
    }
}

/// The integer-divisor and exponent checks of the op table (`Check`), made on the
/// device (one reduction, read back) before anything is written, as the CPU engine does.
fn check_divisor(be: &CudaBackend, op: Binary, out: &Tensor, b: &Arg<'_>) -> Result<()> {
    use crate::ops::table::Check;
    let check = op.check();
    if check == Check::Nothing || out.numel() == 0 {
        return Ok(());
    }
    let (bad, dt) = match b {
        Arg::S(dt, v) => {
            if !dt.is_int() {
                return Ok(());
            }
            let bad = match (check, v) {
                (Check::ZeroDivisor, s) => s.to_f64() == 0.0,
                (Check::NegativeExponent, s) => s.to_f64() < 0.0,
                _ => false,
            };
            (bad, *dt)
        }
        Arg::T(t) => {
            if !t.dtype().is_int() || t.numel() == 0 {
                return Ok(());
            }
            let pred = if check == Check::ZeroDivisor {
                t.eq(0)?
            } else {
                t.lt(0)?
            };
            let any = pred.any(&[], false)?;
            let host = be.download(op.name(), &any)?;
            (host.item()?.to_f64() != 0.0, t.dtype())
        }
    };
    let _ = dt;
    if !bad {
        return Ok(());
    }
    Err(match check {
        Check::ZeroDivisor => Error::value(op.name(), "ZeroDivisionError"),
        _ => Error::value(
            op.name(),
            "Integers to negative integer powers are not allowed.",
        ),
    })
}
