//! DLPack: the C ABI frameworks use to hand tensors to each other without copying.
//!
//! Both the versioned ABI (`DLManagedTensorVersioned`, DLPack ≥ 1.0, with READ_ONLY and
//! IS_COPIED flags) and the legacy `DLManagedTensor` are supported, in both directions.
//!
//! - **Export** ([`to_dlpack_versioned`], [`to_dlpack_legacy`]) allocates a managed tensor
//!   whose context holds a clone of the tensor (so the storage stays alive) and an export
//!   pin (so the storage cannot be moved to shared memory under the consumer). Strides are
//!   always exported; `data` points at the first element and `byte_offset` is 0, as the
//!   header recommends. The consumer calls the deleter exactly once.
//! - **Import** ([`from_dlpack_versioned`], [`from_dlpack_legacy`]) wraps the producer's
//!   memory as a foreign-owner storage whose drop calls the producer's deleter, exactly
//!   once, when the last view goes. It honours `byte_offset`, NULL strides (compact),
//!   negative strides, zero-size and 0-d tensors, and the READ_ONLY flag. Anything it cannot
//!   represent — another device, an unknown dtype, lanes ≠ 1, more than 64 dims, a major
//!   version above 1, negative sizes, extents that overflow — is an error, and the deleter
//!   is then called at once (the importer owns the tensor from the moment it is passed in).

use std::ffi::c_void;
use std::ptr::{self, NonNull};

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::{checked_numel, contiguous_strides, Layout};
use crate::storage::{ExportPin, Storage};
use crate::tensor::{Tensor, MAX_NDIM};

/// The DLPack ABI version strata exports.
pub const DLPACK_VERSION: DLPackVersion = DLPackVersion { major: 1, minor: 1 };
/// `DLDeviceType::kDLCPU`.
pub const DL_CPU: i32 = 1;
/// `kDLCUDA`.
pub const DL_CUDA: i32 = 2;
/// `kDLCUDAHost`: pinned host memory (what a pinned strata tensor exports as).
pub const DL_CUDA_HOST: i32 = 3;
/// `kDLCUDAManaged`: managed memory, readable from the host.
pub const DL_CUDA_MANAGED: i32 = 13;
/// The tensor must not be written by the consumer.
pub const FLAG_READ_ONLY: u64 = 1 << 0;
/// The producer made a copy for this export.
pub const FLAG_IS_COPIED: u64 = 1 << 1;

/// `DLDataTypeCode` values.
pub mod code {
    /// Signed integer.
    pub const INT: u8 = 0;
    /// Unsigned integer.
    pub const UINT: u8 = 1;
    /// IEEE float.
    pub const FLOAT: u8 = 2;
    /// bfloat16.
    pub const BFLOAT: u8 = 4;
    /// Complex.
    pub const COMPLEX: u8 = 5;
    /// Boolean (8 bits).
    pub const BOOL: u8 = 6;
}

/// `DLPackVersion`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DLPackVersion {
    /// Major version (ABI breaks).
    pub major: u32,
    /// Minor version.
    pub minor: u32,
}

/// `DLDevice`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DLDevice {
    /// `DLDeviceType`.
    pub device_type: i32,
    /// Device ordinal.
    pub device_id: i32,
}

/// `DLDataType`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DLDataType {
    /// `DLDataTypeCode`.
    pub code: u8,
    /// Bits per lane.
    pub bits: u8,
    /// Lanes (1 for scalars).
    pub lanes: u16,
}

/// `DLTensor`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct DLTensor {
    /// Data pointer (of the allocation; `byte_offset` added gives the first element).
    pub data: *mut c_void,
    /// Where the data lives.
    pub device: DLDevice,
    /// Number of dims.
    pub ndim: i32,
    /// Element type.
    pub dtype: DLDataType,
    /// `ndim` sizes.
    pub shape: *mut i64,
    /// `ndim` strides in elements, or NULL for compact row-major.
    pub strides: *mut i64,
    /// Bytes from `data` to the first element.
    pub byte_offset: u64,
}

/// `DLManagedTensor` (legacy, unversioned).
#[repr(C)]
#[derive(Debug)]
pub struct DLManagedTensor {
    /// The tensor.
    pub dl_tensor: DLTensor,
    /// Producer's context.
    pub manager_ctx: *mut c_void,
    /// Frees the tensor; called once by the consumer.
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

/// `DLManagedTensorVersioned` (DLPack ≥ 1.0).
#[repr(C)]
#[derive(Debug)]
pub struct DLManagedTensorVersioned {
    /// ABI version of this struct.
    pub version: DLPackVersion,
    /// Producer's context.
    pub manager_ctx: *mut c_void,
    /// Frees the tensor; called once by the consumer.
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    /// Bit flags (`FLAG_READ_ONLY`, `FLAG_IS_COPIED`).
    pub flags: u64,
    /// The tensor.
    pub dl_tensor: DLTensor,
}

/// The DLPack type of a dtype.
pub fn dl_dtype(d: DType) -> DLDataType {
    let c = match d {
        DType::Bool => code::BOOL,
        DType::U8 | DType::U16 | DType::U32 | DType::U64 => code::UINT,
        DType::I8 | DType::I16 | DType::I32 | DType::I64 => code::INT,
        DType::F16 | DType::F32 | DType::F64 => code::FLOAT,
        DType::BF16 => code::BFLOAT,
        DType::C64 | DType::C128 => code::COMPLEX,
    };
    DLDataType {
        code: c,
        bits: (d.itemsize() * 8) as u8,
        lanes: 1,
    }
}

/// The strata dtype of a DLPack type.
pub fn from_dl_dtype(t: DLDataType) -> Result<DType> {
    let op = "from_dlpack";
    if t.lanes != 1 {
        return Err(Error::dtype(
            op,
            format!("vector types (lanes = {}) are not supported", t.lanes),
        ));
    }
    Ok(match (t.code, t.bits) {
        (code::BOOL, 8) => DType::Bool,
        (code::UINT, 8) => DType::U8,
        (code::UINT, 16) => DType::U16,
        (code::UINT, 32) => DType::U32,
        (code::UINT, 64) => DType::U64,
        (code::INT, 8) => DType::I8,
        (code::INT, 16) => DType::I16,
        (code::INT, 32) => DType::I32,
        (code::INT, 64) => DType::I64,
        (code::FLOAT, 16) => DType::F16,
        (code::FLOAT, 32) => DType::F32,
        (code::COMPLEX, 64) => DType::C64,
        (code::COMPLEX, 128) => DType::C128,
        (code::FLOAT, 64) => DType::F64,
        (code::BFLOAT, 16) => DType::BF16,
        (c, b) => {
            return Err(Error::dtype(
                op,
                format!("DLPack dtype code {c} with {b} bits is not supported"),
            ))
        }
    })
}

/// What an exported managed tensor owns.
struct ExportCtx {
    shape: Vec<i64>,
    strides: Vec<i64>,
    _tensor: Tensor,
    _pin: ExportPin,
}

#[repr(C)]
struct VersionedExport {
    managed: DLManagedTensorVersioned,
    ctx: ExportCtx,
}

#[repr(C)]
struct LegacyExport {
    managed: DLManagedTensor,
    ctx: ExportCtx,
}

/// The DLPack device of `t`: `kDLCPU`, `kDLCUDAHost` for pinned host memory, `kDLCUDA`
/// for a GPU's.
pub fn dl_device(t: &Tensor) -> DLDevice {
    match t.device() {
        crate::Device::Cuda(n) => DLDevice {
            device_type: DL_CUDA,
            device_id: i32::try_from(n).unwrap_or(i32::MAX),
        },
        crate::Device::Cpu if t.is_pinned() => DLDevice {
            device_type: DL_CUDA_HOST,
            device_id: 0,
        },
        crate::Device::Cpu => DLDevice {
            device_type: DL_CPU,
            device_id: 0,
        },
    }
}

fn export_parts(t: &Tensor) -> Result<(DLTensor, ExportCtx)> {
    let mut ctx = ExportCtx {
        shape: t.shape().iter().map(|&n| n as i64).collect(),
        strides: t.strides().iter().map(|&s| s as i64).collect(),
        _pin: t.storage().pin_export(),
        _tensor: t.clone(),
    };
    let ndim = i32::try_from(t.ndim()).map_err(|_| Error::overflow("to_dlpack", "ndim"))?;
    let data = t.storage().data_ptr().wrapping_add(t.byte_offset());
    let dl = DLTensor {
        data: data.cast(),
        device: dl_device(t),
        ndim,
        dtype: dl_dtype(t.dtype()),
        shape: ctx.shape.as_mut_ptr(),
        strides: ctx.strides.as_mut_ptr(),
        byte_offset: 0,
    };
    Ok((dl, ctx))
}

unsafe extern "C" fn delete_versioned(m: *mut DLManagedTensorVersioned) {
    if !m.is_null() {
        // SAFETY: `m` came from `Box::into_raw` of a `VersionedExport` (whose first field it
        // is, `repr(C)`) in `to_dlpack_versioned`; the consumer calls the deleter once.
        drop(unsafe { Box::from_raw(m.cast::<VersionedExport>()) });
    }
}

unsafe extern "C" fn delete_legacy(m: *mut DLManagedTensor) {
    if !m.is_null() {
        // SAFETY: as above, for `LegacyExport` from `to_dlpack_legacy`.
        drop(unsafe { Box::from_raw(m.cast::<LegacyExport>()) });
    }
}

/// Exports `t` as a versioned managed tensor. With `copy`, a compact copy is exported and
/// flagged IS_COPIED; a read-only tensor is flagged READ_ONLY. The caller hands the
/// pointer to a consumer, which must call its deleter exactly once.
pub fn to_dlpack_versioned(t: &Tensor, copy: bool) -> Result<*mut DLManagedTensorVersioned> {
    t.device().check_available("to_dlpack")?;
    let src = if copy {
        t.contiguous_copy()?
    } else {
        t.clone()
    };
    let mut flags = 0;
    if copy {
        flags |= FLAG_IS_COPIED;
    }
    if src.is_read_only() {
        flags |= FLAG_READ_ONLY;
    }
    let (dl_tensor, ctx) = export_parts(&src)?;
    let b = Box::new(VersionedExport {
        managed: DLManagedTensorVersioned {
            version: DLPACK_VERSION,
            manager_ctx: ptr::null_mut(),
            deleter: Some(delete_versioned),
            flags,
            dl_tensor,
        },
        ctx,
    });
    Ok(Box::into_raw(b).cast())
}

/// Exports `t` as a legacy managed tensor (no flags: a read-only tensor is refused, since
/// the legacy ABI cannot say so).
pub fn to_dlpack_legacy(t: &Tensor, copy: bool) -> Result<*mut DLManagedTensor> {
    t.device().check_available("to_dlpack")?;
    if t.is_read_only() && !copy {
        return Err(Error::ReadOnly {
            op: "to_dlpack (legacy, unversioned: it has no read-only flag)",
        });
    }
    let src = if copy {
        t.contiguous_copy()?
    } else {
        t.clone()
    };
    let (dl_tensor, ctx) = export_parts(&src)?;
    let b = Box::new(LegacyExport {
        managed: DLManagedTensor {
            dl_tensor,
            manager_ctx: ptr::null_mut(),
            deleter: Some(delete_legacy),
        },
        ctx,
    });
    Ok(Box::into_raw(b).cast())
}

/// Calls a producer's deleter once, when dropped: the owner of imported memory.
enum Producer {
    Versioned(*mut DLManagedTensorVersioned),
    Legacy(*mut DLManagedTensor),
}

// SAFETY: DLPack deleters may be called from any thread (producers that need a lock, such
// as Python's GIL, take it in the deleter, as the DLPack Python spec requires); the
// pointer is used only to call the deleter, once.
unsafe impl Send for Producer {}
// SAFETY: `&Producer` gives no access to the pointer.
unsafe impl Sync for Producer {}

impl Drop for Producer {
    fn drop(&mut self) {
        match *self {
            Producer::Versioned(m) => {
                // SAFETY: `m` is a live managed tensor we own (see the import functions);
                // its deleter is called exactly once, here.
                if let Some(d) = unsafe { (*m).deleter } {
                    // SAFETY: as above.
                    unsafe { d(m) }
                }
            }
            Producer::Legacy(m) => {
                // SAFETY: as above.
                if let Some(d) = unsafe { (*m).deleter } {
                    // SAFETY: as above.
                    unsafe { d(m) }
                }
            }
        }
    }
}

/// Wraps `*dl` (owned by `producer`, which is dropped — calling the deleter — on error).
///
/// # Safety
/// `dl` must describe memory valid for its extent while `producer` lives (DLPack's
/// contract), with `ndim` readable shape and (if non-NULL) stride entries.
unsafe fn import(dl: *const DLTensor, read_only: bool, producer: Producer) -> Result<Tensor> {
    let op = "from_dlpack";
    // A copy, so nothing refers into the managed tensor when an error drops `producer`.
    // SAFETY: `dl` is valid (caller's contract).
    let dl = unsafe { ptr::read(dl) };
    // Host memory (plain, pinned or managed), or a GPU's.
    let device = match dl.device.device_type {
        DL_CPU | DL_CUDA_HOST | DL_CUDA_MANAGED => crate::Device::Cpu,
        DL_CUDA => {
            let id = usize::try_from(dl.device.device_id).map_err(|_| Error::Value {
                op,
                msg: format!("bad CUDA device id {}", dl.device.device_id),
            })?;
            let d = crate::Device::Cuda(id);
            d.check_available(op)?;
            d
        }
        other => {
            return Err(Error::Value {
                op,
                msg: format!(
                    "only CPU and CUDA tensors can be imported (device type {other}, id {})",
                    dl.device.device_id
                ),
            })
        }
    };
    let dtype = from_dl_dtype(dl.dtype)?;
    let ndim = usize::try_from(dl.ndim)
        .ok()
        .filter(|&n| n <= MAX_NDIM)
        .ok_or_else(|| Error::shape(op, format!("ndim {} is outside [0, {MAX_NDIM}]", dl.ndim)))?;
    let read = |p: *const i64, what: &str| -> Result<Vec<i64>> {
        if ndim == 0 {
            return Ok(Vec::new());
        }
        if p.is_null() {
            return Err(Error::shape(op, format!("{what} is NULL with ndim {ndim}")));
        }
        // SAFETY: the producer provides `ndim` entries (caller's contract).
        Ok(unsafe { std::slice::from_raw_parts(p, ndim) }.to_vec())
    };
    let shape64 = read(dl.shape, "shape")?;
    let shape: Vec<usize> = shape64
        .iter()
        .map(|&n| {
            usize::try_from(n)
                .map_err(|_| Error::shape(op, format!("negative size {n} in shape {shape64:?}")))
        })
        .collect::<Result<_>>()?;
    let strides: Vec<isize> = if dl.strides.is_null() {
        contiguous_strides(&shape).to_vec()
    } else {
        read(dl.strides, "strides")?
            .into_iter()
            .map(|s| isize::try_from(s).map_err(|_| Error::overflow(op, format!("stride {s}"))))
            .collect::<Result<_>>()?
    };
    let item = dtype.itemsize() as i128;
    // Checked (the producer's sizes are untrusted): a 0 size makes 0 elements whatever
    // the others, as in PyTorch; otherwise the product must fit `isize`.
    let numel = checked_numel(op, &shape)?;
    let overflow = || {
        Error::overflow(
            op,
            format!("the extent of shape {shape:?} with strides {strides:?}"),
        )
    };
    if numel == 0 {
        let layout = Layout::new(&shape, &strides, 0)?;
        // SAFETY: zero bytes are never read; the producer is kept to be freed with it.
        let storage =
            unsafe { Storage::from_foreign(NonNull::dangling(), 0, read_only, Box::new(producer)) };
        let storage = on_device(storage, device);
        return Tensor::from_parts(storage, layout, dtype);
    }
    if dl.data.is_null() {
        return Err(Error::Value {
            op,
            msg: format!("the data pointer is NULL for a tensor of shape {shape:?}"),
        });
    }
    // Lowest and highest element offsets the view touches, relative to its first element;
    // every step checked, since many dims of large extent can pass even `i128`.
    let extent = || -> Option<(i128, i128, i128)> {
        let (mut lo, mut hi) = (0i128, 0i128);
        for (&n, &s) in shape.iter().zip(&strides) {
            let e = (n as i128 - 1).checked_mul(s as i128)?;
            if e < 0 {
                lo = lo.checked_add(e)?;
            } else {
                hi = hi.checked_add(e)?;
            }
        }
        let nbytes = (hi - lo + 1).checked_mul(item)?;
        let first = (dl.data as usize as i128).checked_add(dl.byte_offset as i128)?;
        let base = first.checked_add(lo.checked_mul(item)?)?;
        Some((lo, nbytes, base))
    };
    let (lo, nbytes, base) = extent().ok_or_else(overflow)?;
    if nbytes > isize::MAX as i128 || base <= 0 || base + nbytes > usize::MAX as i128 {
        return Err(overflow());
    }
    let base = base as usize;
    if !base.is_multiple_of(dtype.itemsize()) {
        return Err(Error::Value {
            op,
            msg: format!("the data at {base:#x} is not aligned for {dtype}"),
        });
    }
    let offset = usize::try_from(-lo).map_err(|_| overflow())?;
    let layout = Layout::new(&shape, &strides, offset)?;
    let ptr = NonNull::new(base as *mut u8).ok_or_else(overflow)?;
    // SAFETY: the producer guarantees the bytes of every element of the view are valid
    // (and writable unless READ_ONLY) until its deleter runs; `base..base+nbytes` is
    // exactly the span of those elements, and `producer` (the owner) calls the deleter only
    // when the storage's backing drops.
    let storage =
        unsafe { Storage::from_foreign(ptr, nbytes as usize, read_only, Box::new(producer)) };
    Tensor::from_parts(on_device(storage, device), layout, dtype)
}

/// `s` (a fresh foreign storage, the only handle) re-homed on `device`.
fn on_device(s: Storage, device: crate::Device) -> Storage {
    if device.is_cpu() {
        return s;
    }
    s.rehome(device)
}

/// Imports a versioned managed tensor, taking ownership of it: its deleter is called
/// exactly once — when the last view of the result goes, or at once on error.
///
/// # Safety
/// `m` must be a valid `DLManagedTensorVersioned` not yet consumed, per the DLPack spec.
pub unsafe fn from_dlpack_versioned(m: *mut DLManagedTensorVersioned) -> Result<Tensor> {
    let m = NonNull::new(m).ok_or_else(|| Error::Value {
        op: "from_dlpack",
        msg: "NULL managed tensor".into(),
    })?;
    let producer = Producer::Versioned(m.as_ptr());
    // SAFETY: valid per the caller.
    let r = unsafe { m.as_ref() };
    if r.version.major != DLPACK_VERSION.major {
        let v = r.version;
        drop(producer);
        return Err(Error::Value {
            op: "from_dlpack",
            msg: format!(
                "DLPack version {}.{} is not supported (strata reads major version {})",
                v.major, v.minor, DLPACK_VERSION.major
            ),
        });
    }
    let ro = r.flags & FLAG_READ_ONLY != 0;
    let dl = ptr::addr_of!(r.dl_tensor);
    // SAFETY: the producer's contract, forwarded from the caller.
    unsafe { import(dl, ro, producer) }
}

/// Imports a legacy managed tensor (see [`from_dlpack_versioned`]).
///
/// # Safety
/// `m` must be a valid `DLManagedTensor` not yet consumed.
pub unsafe fn from_dlpack_legacy(m: *mut DLManagedTensor) -> Result<Tensor> {
    let m = NonNull::new(m).ok_or_else(|| Error::Value {
        op: "from_dlpack",
        msg: "NULL managed tensor".into(),
    })?;
    let producer = Producer::Legacy(m.as_ptr());
    // SAFETY: valid per the caller.
    let dl = unsafe { ptr::addr_of!((*m.as_ptr()).dl_tensor) };
    // SAFETY: the producer's contract, forwarded from the caller.
    unsafe { import(dl, false, producer) }
}
