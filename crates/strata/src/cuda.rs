//! CUDA from Rust: availability, devices, memory statistics, streams, events, pinned
//! memory and IPC handles (PyTorch's `torch.cuda` namespace).
//!
//! The driver is loaded at run time: on a machine without one, [`is_available`] is
//! false and every CUDA request is an [`Error::Device`](crate::Error) saying why.
//! Supported: CUDA 11.4 and later drivers (the driver API), NVRTC and cuBLAS from CUDA
//! 11, 12 or 13 (`libnvrtc.so.N`, `libcublas.so.N`).

use std::sync::atomic::Ordering;

use cudarc::driver::sys;

use crate::backend::cuda::driver::{self, drv};
use crate::backend::cuda::pinned;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::storage::{Backing, Device, Storage};
use crate::{DType, Tensor};

pub use crate::backend::cuda::driver::{device_count, is_available};

fn ordinal_of(op: &'static str, device: Option<usize>) -> Result<usize> {
    let n = device.unwrap_or(0);
    driver::gpu(op, n)?;
    Ok(n)
}

/// Waits for all work queued on `device` (device 0 by default).
///
/// # Errors
/// No such device, or a failed kernel reported by the driver.
pub fn synchronize(device: Option<usize>) -> Result<()> {
    let n = ordinal_of("synchronize", device)?;
    driver::synchronize("synchronize", n)
}

/// Bytes in live CUDA storages of `device` (rounded to the allocator's size classes).
///
/// # Errors
/// No such device.
pub fn memory_allocated(device: Option<usize>) -> Result<usize> {
    let g = driver::gpu("memory_allocated", device.unwrap_or(0))?;
    Ok(g.allocated.load(Ordering::Relaxed))
}

/// The most [`memory_allocated`] has been since the start or the last
/// [`reset_peak_memory_stats`].
///
/// # Errors
/// No such device.
pub fn max_memory_allocated(device: Option<usize>) -> Result<usize> {
    let g = driver::gpu("max_memory_allocated", device.unwrap_or(0))?;
    Ok(g.peak.load(Ordering::Relaxed))
}

/// Resets the peak of [`max_memory_allocated`] to the current allocation.
///
/// # Errors
/// No such device.
pub fn reset_peak_memory_stats(device: Option<usize>) -> Result<()> {
    let g = driver::gpu("reset_peak_memory_stats", device.unwrap_or(0))?;
    g.peak
        .store(g.allocated.load(Ordering::Relaxed), Ordering::Relaxed);
    Ok(())
}

/// Bytes the caching allocator holds from the driver on `device` (live and cached).
///
/// # Errors
/// No such device.
pub fn memory_reserved(device: Option<usize>) -> Result<usize> {
    let g = driver::gpu("memory_reserved", device.unwrap_or(0))?;
    let c = g.cache.lock().unwrap_or_else(|e| e.into_inner());
    Ok(c.reserved)
}

/// Returns every cached (unused) block of every device, and cached pinned host blocks
/// whose copies finished, to the driver.
///
/// # Errors
/// A failed synchronisation.
pub fn empty_cache() -> Result<()> {
    for n in 0..device_count() {
        driver::gpu("empty_cache", n)?.empty_cache("empty_cache")?;
    }
    if is_available() {
        pinned::empty_cache();
    }
    Ok(())
}

/// A CUDA stream of one device (`torch.cuda.Stream`): kernels and copies queued on it run
/// in order; different streams may overlap.
#[derive(Debug)]
pub struct Stream {
    raw: usize,
    device: usize,
    owned: bool,
}

// SAFETY: a stream handle may be used from any thread that makes its context current
// (every use goes through `driver::gpu`, which does).
unsafe impl Send for Stream {}
// SAFETY: as above.
unsafe impl Sync for Stream {}

impl Stream {
    /// A new non-blocking stream on `device` (0 by default).
    ///
    /// # Errors
    /// No such device, or the driver refused.
    pub fn new(device: Option<usize>) -> Result<Stream> {
        let n = ordinal_of("Stream", device)?;
        let mut s: sys::CUstream = std::ptr::null_mut();
        drv!(
            "Stream",
            n,
            cuStreamCreate(&mut s, sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32)
        )?;
        Ok(Stream {
            raw: s as usize,
            device: n,
            owned: true,
        })
    }

    /// This thread's current stream of `device` (the legacy default stream unless
    /// [`StreamGuard`] set another).
    ///
    /// # Errors
    /// No such device.
    pub fn current(device: Option<usize>) -> Result<Stream> {
        let n = ordinal_of("current_stream", device)?;
        Ok(Stream {
            raw: driver::current_stream(n) as usize,
            device: n,
            owned: false,
        })
    }

    /// The device.
    pub fn device(&self) -> Device {
        Device::Cuda(self.device)
    }

    /// The raw `CUstream` as an integer (0: the legacy default stream).
    pub fn raw(&self) -> usize {
        self.raw
    }

    /// Waits for everything queued on this stream.
    ///
    /// # Errors
    /// A failed kernel reported by the driver.
    pub fn synchronize(&self) -> Result<()> {
        driver::stream_synchronize("Stream.synchronize", self.device, self.raw as sys::CUstream)
    }

    /// True when everything queued on this stream has finished.
    ///
    /// # Errors
    /// A failed kernel reported by the driver.
    pub fn query(&self) -> Result<bool> {
        driver::gpu("Stream.query", self.device)?;
        // SAFETY: the stream belongs to this device's (current) context.
        let r = unsafe { sys::cuStreamQuery(self.raw as sys::CUstream) };
        match r {
            sys::CUresult::CUDA_SUCCESS => Ok(true),
            sys::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
            other => Err(driver::driver_error(
                "Stream.query",
                self.device,
                "cuStreamQuery",
                other,
            )),
        }
    }

    /// Makes later work on this stream wait until `event` completes.
    ///
    /// # Errors
    /// The driver refused.
    pub fn wait_event(&self, event: &Event) -> Result<()> {
        driver::gpu("Stream.wait_event", self.device)?;
        drv!(
            "Stream.wait_event",
            self.device,
            cuStreamWaitEvent(self.raw as sys::CUstream, event.raw as sys::CUevent, 0)
        )
    }

    /// Makes later work on this stream wait for everything queued so far on `other`.
    ///
    /// # Errors
    /// The driver refused.
    pub fn wait_stream(&self, other: &Stream) -> Result<()> {
        let e = Event::new(false)?;
        e.record(Some(other))?;
        self.wait_event(&e)
    }

    /// Makes this the calling thread's current stream of its device until the guard drops.
    pub fn make_current(&self) -> StreamGuard {
        let prev = driver::set_current_stream(self.device, self.raw as sys::CUstream);
        StreamGuard {
            device: self.device,
            prev: prev as usize,
        }
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        if self.owned && self.raw != 0 && driver::gpu("Stream", self.device).is_ok() {
            // SAFETY: an owned stream made by cuStreamCreate, destroyed once; queued work
            // still completes (the driver defers the release).
            unsafe { sys::cuStreamDestroy_v2(self.raw as sys::CUstream) };
        }
    }
}

/// Restores the previous current stream when dropped (see [`Stream::make_current`]).
#[derive(Debug)]
pub struct StreamGuard {
    device: usize,
    prev: usize,
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        driver::set_current_stream(self.device, self.prev as sys::CUstream);
    }
}

/// A CUDA event (`torch.cuda.Event`): a marker in a stream, for waiting and timing.
#[derive(Debug)]
pub struct Event {
    raw: usize,
    device: usize,
    timing: bool,
}

// SAFETY: as for `Stream`.
unsafe impl Send for Event {}
// SAFETY: as for `Stream`.
unsafe impl Sync for Event {}

impl Event {
    /// A new event on device 0; `enable_timing` lets [`elapsed_time`](Self::elapsed_time)
    /// measure between two of them.
    ///
    /// # Errors
    /// No CUDA device.
    pub fn new(enable_timing: bool) -> Result<Event> {
        let n = ordinal_of("Event", None)?;
        let flags = if enable_timing {
            0
        } else {
            sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32
        };
        let mut e: sys::CUevent = std::ptr::null_mut();
        drv!("Event", n, cuEventCreate(&mut e, flags))?;
        Ok(Event {
            raw: e as usize,
            device: n,
            timing: enable_timing,
        })
    }

    /// Records the event on `stream` (the current stream by default).
    ///
    /// # Errors
    /// The driver refused.
    pub fn record(&self, stream: Option<&Stream>) -> Result<()> {
        driver::gpu("Event.record", self.device)?;
        let s = stream.map_or_else(
            || driver::current_stream(self.device),
            |s| s.raw as sys::CUstream,
        );
        drv!(
            "Event.record",
            self.device,
            cuEventRecord(self.raw as sys::CUevent, s)
        )
    }

    /// Waits until the work before the event's record has finished.
    ///
    /// # Errors
    /// A failed kernel reported by the driver.
    pub fn synchronize(&self) -> Result<()> {
        driver::gpu("Event.synchronize", self.device)?;
        drv!(
            "Event.synchronize",
            self.device,
            cuEventSynchronize(self.raw as sys::CUevent)
        )
    }

    /// True when the work before the record has finished.
    ///
    /// # Errors
    /// A failed kernel reported by the driver.
    pub fn query(&self) -> Result<bool> {
        driver::gpu("Event.query", self.device)?;
        // SAFETY: a live event of this device's context.
        let r = unsafe { sys::cuEventQuery(self.raw as sys::CUevent) };
        match r {
            sys::CUresult::CUDA_SUCCESS => Ok(true),
            sys::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
            other => Err(driver::driver_error(
                "Event.query",
                self.device,
                "cuEventQuery",
                other,
            )),
        }
    }

    /// Milliseconds between this event and `end` (both recorded and completed, both made
    /// with timing enabled).
    ///
    /// # Errors
    /// An event without timing, or one not yet recorded or completed.
    pub fn elapsed_time(&self, end: &Event) -> Result<f32> {
        if !self.timing || !end.timing {
            return Err(Error::value(
                "elapsed_time",
                "Both events must be created with argument 'enable_timing=True'.",
            ));
        }
        driver::gpu("elapsed_time", self.device)?;
        let mut ms = 0f32;
        drv!(
            "elapsed_time",
            self.device,
            cuEventElapsedTime_v2(&mut ms, self.raw as sys::CUevent, end.raw as sys::CUevent)
        )?;
        Ok(ms)
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        if driver::gpu("Event", self.device).is_ok() {
            // SAFETY: an event made by cuEventCreate, destroyed once.
            unsafe { sys::cuEventDestroy_v2(self.raw as sys::CUevent) };
        }
    }
}

impl Tensor {
    /// A copy of this host tensor in pinned (page-locked) host memory, row-major; a
    /// CUDA tensor is an error (PyTorch: "cannot pin ... only dense CPU tensors can be
    /// pinned").
    ///
    /// # Errors
    /// No CUDA driver, a CUDA tensor, or a failed allocation.
    pub fn pin_memory(&self) -> Result<Tensor> {
        if !self.device().is_cpu() {
            return Err(Error::Device {
                op: "pin_memory",
                device: self.device(),
                msg: format!(
                    "cannot pin '{}' only dense CPU tensors can be pinned",
                    self.device()
                ),
            });
        }
        if self.is_pinned() {
            return Ok(self.clone());
        }
        let n = self
            .numel()
            .checked_mul(self.dtype().itemsize())
            .ok_or_else(|| Error::overflow("pin_memory", format!("{} elements", self.numel())))?;
        let out = Tensor::from_parts(
            pinned::storage(n, false)?,
            Layout::contiguous(self.shape())?,
            self.dtype(),
        )?;
        out.copy_(self)?;
        Ok(out)
    }

    /// True when the tensor's storage is pinned host memory from [`Tensor::pin_memory`]
    /// or [`empty_pinned`].
    pub fn is_pinned(&self) -> bool {
        self.device().is_cpu() && pinned::is_pinned(self.storage())
    }
}

/// A zeroed row-major tensor in pinned host memory (`empty(..., pin_memory=True)`).
///
/// # Errors
/// No CUDA driver, or a failed allocation.
pub fn empty_pinned(shape: &[usize], dtype: DType) -> Result<Tensor> {
    let numel = crate::layout::checked_numel("empty", shape)?;
    let n = numel
        .checked_mul(dtype.itemsize())
        .ok_or_else(|| Error::overflow("empty", format!("{numel} elements of {dtype}")))?;
    Tensor::from_parts(pinned::storage(n, true)?, Layout::contiguous(shape)?, dtype)
}

/// What another process needs to map a CUDA tensor's memory: the IPC handle of the
/// allocation, the byte offset of the storage in it, and the storage's size.
#[derive(Debug, Clone)]
pub struct IpcHandle {
    /// `cuIpcGetMemHandle`'s 64 bytes.
    pub handle: [u8; 64],
    /// The device.
    pub device: usize,
    /// Bytes from the allocation's base to the storage's first byte.
    pub offset: usize,
    /// The storage's bytes.
    pub nbytes: usize,
}

/// The IPC handle of `t`'s storage (PyTorch's `storage._share_cuda_()`).
///
/// # Errors
/// A host tensor, or memory the driver cannot share (for example memory imported from
/// another library through DLPack whose allocation is not IPC-capable).
pub fn ipc_handle(t: &Tensor) -> Result<IpcHandle> {
    let Device::Cuda(n) = t.device() else {
        return Err(Error::Device {
            op: "share_cuda",
            device: t.device(),
            msg: "IPC handles are for CUDA tensors".into(),
        });
    };
    driver::gpu("share_cuda", n)?;
    let p = t.storage().data_ptr() as u64;
    let mut base: sys::CUdeviceptr = 0;
    let mut size = 0usize;
    drv!(
        "share_cuda",
        n,
        cuMemGetAddressRange_v2(&mut base, &mut size, p)
    )?;
    let mut h = sys::CUipcMemHandle { reserved: [0; 64] };
    drv!("share_cuda", n, cuIpcGetMemHandle(&mut h, base))?;
    t.storage().pin_for_life();
    let mut handle = [0u8; 64];
    for (d, s) in handle.iter_mut().zip(h.reserved.iter()) {
        *d = *s as u8;
    }
    Ok(IpcHandle {
        handle,
        device: n,
        offset: (p - base) as usize,
        nbytes: t.storage().nbytes(),
    })
}

/// Owns an opened IPC mapping; closes it when the last storage over it drops.
struct IpcMapping {
    base: u64,
    device: usize,
}

impl Drop for IpcMapping {
    fn drop(&mut self) {
        if driver::gpu("share_cuda", self.device).is_ok() {
            // SAFETY: `base` came from cuIpcOpenMemHandle, closed once.
            unsafe { sys::cuIpcCloseMemHandle(self.base) };
        }
    }
}

/// A storage over another process's CUDA memory, from its [`IpcHandle`]: writes are
/// visible both ways; the mapping closes when the storage drops (the exporting process
/// keeps its memory while it lives).
///
/// # Errors
/// No such device, a handle the driver refuses (IPC unsupported, or from this same
/// process), or an offset and size that do not fit the allocation.
pub fn open_ipc(h: &IpcHandle) -> Result<Storage> {
    let g = driver::gpu("open_ipc", h.device)?;
    let mut raw = sys::CUipcMemHandle { reserved: [0; 64] };
    for (d, s) in raw.reserved.iter_mut().zip(h.handle.iter()) {
        *d = *s as std::ffi::c_char;
    }
    let mut base: sys::CUdeviceptr = 0;
    drv!(
        "open_ipc",
        g.ordinal,
        cuIpcOpenMemHandle_v2(
            &mut base,
            raw,
            sys::CUipcMem_flags::CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS as u32
        )
    )?;
    let owner = IpcMapping {
        base,
        device: h.device,
    };
    let mut alloc_base: sys::CUdeviceptr = 0;
    let mut size = 0usize;
    drv!(
        "open_ipc",
        g.ordinal,
        cuMemGetAddressRange_v2(&mut alloc_base, &mut size, base)
    )?;
    let end = h.offset.checked_add(h.nbytes);
    if end.is_none_or(|e| e > size) {
        return Err(Error::value(
            "open_ipc",
            format!(
                "IPC storage of {} bytes at offset {} does not fit the {size}-byte allocation",
                h.nbytes, h.offset
            ),
        ));
    }
    let ptr = std::ptr::NonNull::new((base + h.offset as u64) as *mut u8).ok_or_else(|| {
        Error::Resource {
            op: "open_ipc",
            msg: "cuIpcOpenMemHandle returned a null pointer".into(),
        }
    })?;
    // SAFETY: the mapping covers `offset + nbytes` bytes (checked above) and lives as
    // long as the owner.
    let backing = unsafe { Backing::foreign(ptr, h.nbytes, false, Box::new(owner)) };
    Ok(Storage::from_backing_on(backing, Device::Cuda(h.device)))
}

/// A storage over foreign device memory (a DLPack or `__cuda_array_interface__`
/// producer's), kept alive by `owner`.
///
/// # Safety
/// `ptr` must address `nbytes` bytes of memory on `cuda:device` that stay valid while
/// `owner` lives.
pub unsafe fn foreign_storage(
    ptr: std::ptr::NonNull<u8>,
    nbytes: usize,
    device: usize,
    owner: Box<dyn std::any::Any + Send + Sync>,
) -> Storage {
    // SAFETY: the caller's contract.
    let backing = unsafe { Backing::foreign(ptr, nbytes, false, owner) };
    Storage::from_backing_on(backing, Device::Cuda(device))
}

/// Sets the calling thread's current stream of `device` to the raw `CUstream` `raw` (0:
/// the legacy default stream); returns the previous one. For bindings that manage the
/// scope themselves (Python's `with strata.cuda.stream(s):`); Rust code uses
/// [`Stream::make_current`].
///
/// # Errors
/// No such device.
pub fn set_current_stream_raw(device: usize, raw: usize) -> Result<usize> {
    driver::gpu("set_stream", device)?;
    Ok(driver::set_current_stream(device, raw as sys::CUstream) as usize)
}

impl Stream {
    /// A handle to an existing stream (another library's, given as its `CUstream`
    /// integer; 0, 1 and 2 are the legacy default, legacy and per-thread default streams);
    /// dropping it does not destroy the stream.
    ///
    /// # Errors
    /// No such device.
    pub fn external(device: Option<usize>, raw: usize) -> Result<Stream> {
        let n = ordinal_of("ExternalStream", device)?;
        Ok(Stream {
            raw,
            device: n,
            owned: false,
        })
    }
}

/// Makes the consumer's stream `consumer` (DLPack's / the CUDA array interface's stream
/// integer: 1 the legacy default stream, 2 the per-thread default, any other a
/// `CUstream`; -1 or `None`: no synchronisation) wait for the work queued so far on this
/// thread's current stream of `device`, so that the data is ready for it.
///
/// # Errors
/// A stream value the standard forbids (0), or the driver refused.
pub fn sync_for_consumer(device: usize, consumer: Option<i64>) -> Result<()> {
    let Some(c) = consumer else { return Ok(()) };
    if c == -1 {
        return Ok(());
    }
    if c == 0 {
        return Err(Error::value(
            "__dlpack__",
            "stream 0 is ambiguous for CUDA and not allowed (use 1 for the legacy default stream, 2 for the per-thread default stream)",
        ));
    }
    if c < -1 {
        return Err(Error::value("__dlpack__", format!("invalid stream {c}")));
    }
    driver::gpu("__dlpack__", device)?;
    let ours = driver::current_stream(device) as usize;
    let theirs = c as usize;
    // The legacy default stream (ours = 0) synchronises with every blocking stream; still
    // record and wait, which is cheap and also covers non-blocking consumer streams.
    if ours == theirs || (ours == 0 && theirs == 1) {
        return Ok(());
    }
    let e = Event::new(false)?;
    e.record(None)?;
    drv!(
        "__dlpack__",
        device,
        cuStreamWaitEvent(theirs as sys::CUstream, e.raw as sys::CUevent, 0)
    )
}
