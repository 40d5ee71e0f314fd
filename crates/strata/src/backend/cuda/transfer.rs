//! Moving data between the host and a GPU, and the gather/scatter loops of advanced
//! indexing on the GPU.
//!
//! A strided host tensor is not compacted on the host when the GPU can gather it: the
//! bytes its view spans are uploaded as they are and the device copy kernel walks them
//! with the view's strides (unless the span is much larger than the elements, as for a
//! `[::100]` view, where compacting moves fewer bytes). A strided device tensor is
//! compacted on the device before the download.

use super::driver::{self, drv};
use super::{allocate, backend, dev_ptr, pinned, Arg, CudaBackend, OpKey};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::storage::{borrow, Device, Storage};
use crate::tensor::Tensor;

fn nbytes(op: &'static str, t: &Tensor) -> Result<usize> {
    t.numel()
        .checked_mul(t.dtype().itemsize())
        .ok_or_else(|| Error::overflow(op, format!("{} elements of {}", t.numel(), t.dtype())))
}

/// Copies `n` host bytes at `host` to device address `dev` on the current stream; waits
/// unless the host memory is pinned and `non_blocking`.
fn htod(
    op: &'static str,
    ordinal: usize,
    dev: u64,
    host: *const u8,
    n: usize,
    wait: bool,
) -> Result<()> {
    if n == 0 {
        return Ok(());
    }
    let stream = driver::current_stream(ordinal);
    drv!(
        op,
        ordinal,
        cuMemcpyHtoDAsync_v2(dev, host.cast(), n, stream)
    )?;
    if wait {
        driver::stream_synchronize(op, ordinal, stream)?;
    }
    Ok(())
}

/// Copies `n` device bytes at `dev` to `host` on the current stream; waits unless
/// `non_blocking` into pinned memory.
fn dtoh(
    op: &'static str,
    ordinal: usize,
    host: *mut u8,
    dev: u64,
    n: usize,
    wait: bool,
) -> Result<()> {
    if n == 0 {
        return Ok(());
    }
    let stream = driver::current_stream(ordinal);
    drv!(
        op,
        ordinal,
        cuMemcpyDtoHAsync_v2(host.cast(), dev, n, stream)
    )?;
    if wait {
        driver::stream_synchronize(op, ordinal, stream)?;
    }
    Ok(())
}

/// The host tensor `t` on `device` (a CUDA device): a fresh row-major tensor of the same
/// shape and dtype. `non_blocking` with a pinned source queues the copy without waiting.
pub(crate) fn to_device(
    op: &'static str,
    t: &Tensor,
    device: Device,
    non_blocking: bool,
) -> Result<Tensor> {
    let Device::Cuda(ordinal) = device else {
        return Err(Error::value(
            op,
            "internal error: to_device needs a CUDA device",
        ));
    };
    let be = backend(op, ordinal)?;
    t.check_host(op)?;
    let size = nbytes(op, t)?;
    let out = Tensor::from_parts(
        allocate(op, ordinal, size, false)?,
        Layout::contiguous(t.shape())?,
        t.dtype(),
    )?;
    if size == 0 {
        return Ok(out);
    }
    let wait = !(non_blocking && pinned::is_pinned(t.storage()));
    let item = t.dtype().itemsize();
    if t.is_contiguous() {
        let _g = borrow::acquire(op, &[(t.storage(), false)])?;
        let host = t.storage().data_ptr().wrapping_add(t.byte_offset());
        htod(op, ordinal, dev_ptr(&out), host, size, wait)?;
        return Ok(out);
    }
    let (lo, hi) = t.layout().index_range().unwrap_or((t.offset(), t.offset()));
    let span = (hi - lo + 1) * item;
    if span <= size.saturating_mul(2).saturating_add(1 << 16) {
        // Upload the span as it is; the device walks it with the view's strides.
        let staged = allocate(op, ordinal, span, false)?;
        {
            let _g = borrow::acquire(op, &[(t.storage(), false)])?;
            let host = t.storage().data_ptr().wrapping_add(lo * item);
            htod(op, ordinal, staged.data_ptr() as u64, host, span, wait)?;
        }
        let view = Tensor::from_parts(
            staged,
            Layout::new(t.shape(), t.strides(), t.offset() - lo)?,
            t.dtype(),
        )?;
        be.copy_into(op, &out, &view)?;
        return Ok(out);
    }
    let compact = t.contiguous()?;
    let _g = borrow::acquire(op, &[(compact.storage(), false)])?;
    let host = compact
        .storage()
        .data_ptr()
        .wrapping_add(compact.byte_offset());
    htod(op, ordinal, dev_ptr(&out), host, size, true)?;
    Ok(out)
}

/// The device tensor `t` copied to a fresh row-major host tensor (pinned when
/// `non_blocking`, which then returns before the copy finished).
pub(crate) fn to_host(op: &'static str, t: &Tensor, non_blocking: bool) -> Result<Tensor> {
    let Device::Cuda(ordinal) = t.device() else {
        return Ok(t.clone());
    };
    backend(op, ordinal)?;
    let src = if t.is_contiguous() {
        t.clone()
    } else {
        t.contiguous()?
    };
    let size = nbytes(op, &src)?;
    let storage = if non_blocking {
        pinned::storage(size, false)?
    } else {
        Storage::for_overwrite(size)?
    };
    let out = Tensor::from_parts(storage, Layout::contiguous(t.shape())?, t.dtype())?;
    {
        let _g = borrow::acquire(op, &[(out.storage(), true), (src.storage(), false)])?;
        dtoh(
            op,
            ordinal,
            out.storage().data_ptr(),
            dev_ptr(&src),
            size,
            !non_blocking,
        )?;
    }
    Ok(out)
}

/// `dst.copy_(src)` where the two are on different devices: `src` broadcast to `dst`'s
/// shape and cast to its dtype.
pub(crate) fn copy_across(dst: &Tensor, src: &Tensor, non_blocking: bool) -> Result<()> {
    let op = "copy_";
    match (dst.device(), src.device()) {
        (Device::Cuda(d), Device::Cpu) => {
            let be = backend(op, d)?;
            if dst.is_contiguous()
                && src.is_contiguous()
                && dst.shape() == src.shape()
                && dst.dtype() == src.dtype()
            {
                // Straight into `dst`: no staging buffer, no device-side copy.
                let size = nbytes(op, src)?;
                let wait = !(non_blocking && pinned::is_pinned(src.storage()));
                let _g = borrow::acquire(op, &[(dst.storage(), true), (src.storage(), false)])?;
                let host = src.storage().data_ptr().wrapping_add(src.byte_offset());
                dst.storage().bump_version();
                return htod(op, d, dev_ptr(dst), host, size, wait);
            }
            let staged = to_device(op, src, Device::Cuda(d), non_blocking)?;
            be.copy_into(op, dst, &staged)
        }
        (Device::Cpu, Device::Cuda(_)) => {
            if dst.is_contiguous() && dst.shape() == src.shape() && dst.dtype() == src.dtype() {
                let Device::Cuda(ordinal) = src.device() else {
                    unreachable!()
                };
                let src = if src.is_contiguous() {
                    src.clone()
                } else {
                    src.contiguous()?
                };
                let size = nbytes(op, &src)?;
                let wait = !(non_blocking && pinned::is_pinned(dst.storage()));
                let _g = borrow::acquire(op, &[(dst.storage(), true), (src.storage(), false)])?;
                let host = dst.storage().data_ptr().wrapping_add(dst.byte_offset());
                dst.storage().bump_version();
                return dtoh(op, ordinal, host, dev_ptr(&src), size, wait);
            }
            let host = to_host(op, src, false)?;
            dst.copy_(&host).map(|_| ())
        }
        (Device::Cuda(d), Device::Cuda(s)) => {
            // Another GPU: through the host (peer access is not assumed).
            let host = to_host(op, src, false)?;
            let be = backend(op, d)?;
            let _ = s;
            let staged = to_device(op, &host, Device::Cuda(d), false)?;
            be.copy_into(op, dst, &staged)
        }
        (Device::Cpu, Device::Cpu) => dst.copy_(src).map(|_| ()),
    }
}

impl CudaBackend {
    /// `dst ← src` on this device (both here), broadcast and cast.
    pub(crate) fn copy_into(&self, op: &'static str, dst: &Tensor, src: &Tensor) -> Result<()> {
        let (from, to) = (src.dtype(), dst.dtype());
        self.map_keyed(op, OpKey::Copy(from, to), dst, &[Arg::T(src)], || {
            Ok((
                String::new(),
                Box::new(move |v: &[String]| super::source::store_cast(from, to, "p0", &v[0])),
            ))
        })
    }

    /// The host offsets `offs` as a device int64 tensor of `shape` (row-major), viewed
    /// over `full` (the extra trailing dims broadcast).
    fn offsets_view(
        &self,
        op: &'static str,
        offs: &[isize],
        shape: &[usize],
        full: &[usize],
    ) -> Result<Tensor> {
        let bytes: Vec<u8> = offs
            .iter()
            .flat_map(|&o| (o as i64).to_ne_bytes())
            .collect();
        let s = self.upload_bytes(op, &bytes)?;
        let mut strides = vec![0isize; full.len()];
        let mut acc = 1isize;
        for d in (0..shape.len()).rev() {
            strides[d] = acc;
            acc *= shape[d] as isize;
        }
        Tensor::from_parts(s, Layout::new(full, &strides, 0)?, DType::I64)
    }
}

/// The two operands a gather or scatter walks over `shape` (index dims first, `nb` of
/// them, then the rest): `base`'s storage from its offset, stride 0 along the index dims
/// and `rest_strides` along the others, and the device view of the index offsets `offs`
/// (added to the first per element).
fn indexed(
    be: &CudaBackend,
    op: &'static str,
    base: &Tensor,
    shape: &[usize],
    nb: usize,
    rest_strides: &[isize],
    offs: &[isize],
) -> Result<(Tensor, Tensor)> {
    let mut strides = vec![0isize; shape.len()];
    strides[nb..].copy_from_slice(rest_strides);
    let view = Tensor::from_parts(
        base.storage().clone(),
        Layout::new(shape, &strides, base.offset())?,
        base.dtype(),
    )?;
    let ix = be.offsets_view(op, offs, &shape[..nb], shape)?;
    Ok((view, ix))
}

/// `out[j, r] = src[src.offset + offs[j] + r·rest_strides]` on the device.
pub(crate) fn gather(
    be: &CudaBackend,
    op: &'static str,
    out: &Tensor,
    nb: usize,
    src: &Tensor,
    rest_strides: &[isize],
    offs: &[isize],
) -> Result<()> {
    if out.numel() == 0 {
        return Ok(());
    }
    let (view, ix) = indexed(be, op, src, out.shape(), nb, rest_strides, offs)?;
    let dt = out.dtype();
    be.map(op, out, &[Arg::T(&view), Arg::T(&ix)], "", |_| {
        super::source::store(dt, "p0", &super::source::load(dt, "p1 + *p2"))
    })
}

/// `dst[dst.offset + offs[j] + r·rest_strides] = src[j, r]` (`+=` with `accumulate`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn scatter(
    be: &CudaBackend,
    op: &'static str,
    dst: &Tensor,
    rest_strides: &[isize],
    offs: &[isize],
    src: &Tensor,
    nb: usize,
    accumulate: bool,
) -> Result<()> {
    if src.numel() == 0 {
        return Ok(());
    }
    let (view, ix) = indexed(be, op, dst, src.shape(), nb, rest_strides, offs)?;
    let dt = dst.dtype();
    let atomic = has_atomic_add(dt);
    // Repeated positions: with `accumulate` and no atomic add for the dtype, or without
    // `accumulate` (the last write wins, as on the CPU), the loop runs in order on one
    // thread.
    let repeated = {
        let mut sorted = offs.to_vec();
        sorted.sort_unstable();
        sorted.windows(2).any(|w| w[0] == w[1])
    };
    let serial = repeated && !(accumulate && atomic);
    let code = scatter_code(dt, accumulate);
    let body = |v: &[String]| code.replace("{A}", &v[0]);
    be.map_in(op, &view, &[Arg::T(src), Arg::T(&ix)], "", body, serial)
}

/// A host copy of a whole device storage (for `explain`).
pub(crate) fn storage_to_host(op: &'static str, s: &Storage) -> Result<Storage> {
    let Device::Cuda(ordinal) = s.device() else {
        return Ok(s.clone());
    };
    backend(op, ordinal)?;
    let out = Storage::for_overwrite(s.nbytes())?;
    {
        let _g = borrow::acquire(op, &[(&out, true), (s, false)])?;
        dtoh(
            op,
            ordinal,
            out.data_ptr(),
            s.data_ptr() as u64,
            s.nbytes(),
            true,
        )?;
    }
    Ok(out)
}

/// Whether the device adds `dt` atomically (else an accumulating scatter with repeated
/// positions runs in order on one thread).
fn has_atomic_add(dt: DType) -> bool {
    matches!(
        dt,
        DType::F32 | DType::F64 | DType::I32 | DType::U32 | DType::I64 | DType::U64
    )
}

/// The statement a scatter runs per element: `p0 + *p2` the target, `{A}` the value.
pub(crate) fn scatter_code(dt: DType, accumulate: bool) -> String {
    let val = "{A}";
    if !accumulate {
        super::source::store(dt, "p0 + *p2", val)
    } else if has_atomic_add(dt) {
        match dt {
            DType::I64 | DType::U64 => {
                format!("atomicAdd((unsigned long long*)(p0 + *p2), (unsigned long long)({val}));")
            }
            DType::I32 => format!("atomicAdd((int*)(p0 + *p2), {val});"),
            DType::U32 => format!("atomicAdd((unsigned int*)(p0 + *p2), {val});"),
            _ => format!("atomicAdd(p0 + *p2, {val});"),
        }
    } else {
        let old = super::source::load(dt, "p0 + *p2");
        let sum = match dt {
            DType::Bool => format!("({old} || {val})"),
            DType::F16 | DType::BF16 => format!("({old} + {val})"),
            _ => format!("wadd({old}, ({})({val}))", super::source::vtype(dt)),
        };
        super::source::store(dt, "p0 + *p2", &sum)
    }
}
