//! The CUDA driver, loaded at run time: one [`Gpu`] per device (its primary context, its
//! caching allocator, its compiled kernels, its cuBLAS handle), the current stream of each
//! thread, and the errors.
//!
//! Nothing here links against CUDA: `cudarc`'s dynamic loading opens `libcuda.so` (and
//! later NVRTC and cuBLAS) the first time a CUDA device is asked for. Where no driver is
//! found, or it reports no device, every CUDA request is a [`Error::Device`] saying why,
//! and [`is_available`] is false. A process that forked after initialising CUDA cannot use
//! it (the driver's state does not survive `fork`); its requests are refused with
//! PyTorch's text.

use std::collections::HashMap;
use std::ffi::CStr;
use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use cudarc::driver::sys;

use crate::error::{Error, Result};
use crate::storage::Device;

/// A raw driver result as a strata error naming `op`, the call and the device.
pub(crate) fn check(op: &'static str, device: usize, call: &str, r: sys::CUresult) -> Result<()> {
    if r == sys::CUresult::CUDA_SUCCESS {
        return Ok(());
    }
    Err(driver_error(op, device, call, r))
}

/// The error for a failed driver call.
pub(crate) fn driver_error(op: &'static str, device: usize, call: &str, r: sys::CUresult) -> Error {
    let mut name: *const std::ffi::c_char = ptr::null();
    let mut text: *const std::ffi::c_char = ptr::null();
    // SAFETY: both calls only write a pointer to a static string of the driver (or leave
    // it null for an unknown code).
    unsafe {
        sys::cuGetErrorName(r, &mut name);
        sys::cuGetErrorString(r, &mut text);
    }
    let cstr = |p: *const std::ffi::c_char| {
        if p.is_null() {
            format!("{r:?}")
        } else {
            // SAFETY: non-null pointers from cuGetErrorName/String are NUL-terminated
            // static strings.
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        }
    };
    if r == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY {
        return Error::Resource {
            op,
            msg: format!("CUDA out of memory on cuda:{device} ({call})"),
        };
    }
    Error::Device {
        op,
        device: Device::Cuda(device),
        msg: format!("CUDA error: {} ({}) in {call}", cstr(text), cstr(name)),
    }
}

/// Calls a driver function, mapping a failure to a strata error naming `$op` and the call.
macro_rules! drv {
    ($op:expr, $dev:expr, $f:ident ( $($arg:expr),* $(,)? )) => {{
        // SAFETY: a plain CUDA driver call; every pointer argument points to live memory
        // of the type the driver expects (out-parameters are locals of this frame), and
        // device pointers come from this module's allocations or checked views.
        let r = unsafe { cudarc::driver::sys::$f($($arg),*) };
        $crate::backend::cuda::driver::check($op, $dev, stringify!($f), r)
    }};
}
pub(crate) use drv;

/// One CUDA device as strata uses it.
pub(crate) struct Gpu {
    /// The device number.
    pub ordinal: usize,
    /// Its primary context (shared with every other library in the process, as the CUDA
    /// runtime, PyTorch and CuPy share it).
    pub ctx: sys::CUcontext,
    /// Compute capability, `(major, minor)`.
    pub cc: (i32, i32),
    /// Multiprocessors.
    pub sms: u32,
    /// The caching allocator's state.
    pub cache: Mutex<BlockCache>,
    /// Bytes in live storages.
    pub allocated: AtomicUsize,
    /// The most `allocated` has been since the last reset.
    pub peak: AtomicUsize,
    /// Compiled kernels by source text.
    pub kernels: Mutex<HashMap<String, Kernel>>,
    /// Compiled elementwise kernels by what decides their text (see `PlanKey`), so that
    /// a repeated op finds its kernel without generating the source again.
    pub plans: Mutex<HashMap<super::PlanKey, Kernel>>,
    /// The cuBLAS handle, made on first use.
    pub blas: Mutex<Option<usize>>,
}

// SAFETY: the context handle is a driver object usable from any thread (each thread makes
// it current before use); everything else is behind atomics or mutexes.
unsafe impl Send for Gpu {}
// SAFETY: as above.
unsafe impl Sync for Gpu {}

/// A compiled kernel: the module (kept loaded) and the function.
#[derive(Clone, Copy)]
pub(crate) struct Kernel {
    /// The function to launch.
    pub func: sys::CUfunction,
}

// SAFETY: a CUfunction handle is valid in every thread that has its context current.
unsafe impl Send for Kernel {}
// SAFETY: as above.
unsafe impl Sync for Kernel {}

/// The driver's state: the devices, or why there are none.
struct Runtime {
    gpus: Vec<Gpu>,
    pid: u32,
}

static RUNTIME: OnceLock<std::result::Result<Runtime, String>> = OnceLock::new();

/// Set in a child of `fork` (by an atfork handler registered when CUDA is initialised):
/// the driver's state does not survive it. Read on every CUDA call instead of `getpid`.
static FORKED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn forked_child() {
    FORKED.store(true, std::sync::atomic::Ordering::Relaxed);
}

fn init() -> std::result::Result<Runtime, String> {
    // SAFETY: only tries to open the library (no symbol is called).
    if !unsafe { sys::is_culib_present() } {
        return Err("no CUDA driver was found (libcuda.so could not be loaded)".into());
    }
    let fail = |call: &str, r: sys::CUresult| driver_error("cuda", 0, call, r).to_string();
    // SAFETY: cuInit has no pointer arguments.
    let r = unsafe { sys::cuInit(0) };
    if r != sys::CUresult::CUDA_SUCCESS {
        return Err(fail("cuInit", r));
    }
    let mut count = 0i32;
    // SAFETY: writes one int.
    let r = unsafe { sys::cuDeviceGetCount(&mut count) };
    if r != sys::CUresult::CUDA_SUCCESS {
        return Err(fail("cuDeviceGetCount", r));
    }
    let mut gpus = Vec::new();
    for ordinal in 0..count.max(0) as usize {
        let mut dev: sys::CUdevice = 0;
        let mut ctx: sys::CUcontext = ptr::null_mut();
        let (mut major, mut minor, mut sms) = (0i32, 0i32, 0i32);
        // SAFETY: out-parameters are locals; `dev` comes from cuDeviceGet.
        unsafe {
            let r = sys::cuDeviceGet(&mut dev, ordinal as i32);
            if r != sys::CUresult::CUDA_SUCCESS {
                return Err(fail("cuDeviceGet", r));
            }
            let r = sys::cuDevicePrimaryCtxRetain(&mut ctx, dev);
            if r != sys::CUresult::CUDA_SUCCESS {
                return Err(fail("cuDevicePrimaryCtxRetain", r));
            }
            use sys::CUdevice_attribute as A;
            sys::cuDeviceGetAttribute(
                &mut major,
                A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                dev,
            );
            sys::cuDeviceGetAttribute(
                &mut minor,
                A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                dev,
            );
            sys::cuDeviceGetAttribute(&mut sms, A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
        }
        gpus.push(Gpu {
            ordinal,
            ctx,
            cc: (major, minor),
            sms: sms.max(1) as u32,
            cache: Mutex::new(BlockCache::default()),
            allocated: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            kernels: Mutex::new(HashMap::new()),
            plans: Mutex::new(HashMap::new()),
            blas: Mutex::new(None),
        });
    }
    // SAFETY: registers a handler that only stores to an atomic.
    #[cfg(unix)]
    unsafe {
        libc::pthread_atfork(None, None, Some(forked_child))
    };
    Ok(Runtime {
        gpus,
        pid: std::process::id(),
    })
}

/// True in a child forked after CUDA was initialised.
fn forked(rt: &Runtime) -> bool {
    FORKED.load(std::sync::atomic::Ordering::Relaxed) && rt.pid != std::process::id()
}

fn runtime() -> &'static std::result::Result<Runtime, String> {
    RUNTIME.get_or_init(init)
}

/// True when a CUDA driver was found and reports at least one device (and this process
/// did not fork after initialising it).
pub fn is_available() -> bool {
    matches!(runtime(), Ok(rt) if !rt.gpus.is_empty() && !forked(rt))
}

/// The number of CUDA devices (0 without a driver).
pub fn device_count() -> usize {
    match runtime() {
        Ok(rt) => rt.gpus.len(),
        Err(_) => 0,
    }
}

/// Device `ordinal`, its context made current on this thread; or the clear error `op`
/// reports: no driver, no such device, or a forked child.
pub(crate) fn gpu(op: &'static str, ordinal: usize) -> Result<&'static Gpu> {
    let device = Device::Cuda(ordinal);
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(why) => {
            return Err(Error::Device {
                op,
                device,
                msg: format!("device {device} is not available: {why}"),
            })
        }
    };
    if forked(rt) {
        return Err(Error::Device {
            op,
            device,
            msg: "Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, you must use the 'spawn' start method".into(),
        });
    }
    let Some(g) = rt.gpus.get(ordinal) else {
        return Err(Error::Device {
            op,
            device,
            msg: format!(
                "device {device} is not available: CUDA error: invalid device ordinal (this machine has {} CUDA device{})",
                rt.gpus.len(),
                if rt.gpus.len() == 1 { "" } else { "s" }
            ),
        });
    };
    make_current(op, g)?;
    Ok(g)
}

thread_local! {
    static CURRENT_CTX: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// Per device: the raw current stream of this thread (0: the legacy default stream).
    static CURRENT_STREAM: std::cell::RefCell<Vec<usize>> = const { std::cell::RefCell::new(Vec::new()) };
}

fn make_current(op: &'static str, g: &Gpu) -> Result<()> {
    if CURRENT_CTX.with(|c| c.get()) == g.ctx as usize {
        return Ok(());
    }
    drv!(op, g.ordinal, cuCtxSetCurrent(g.ctx))?;
    CURRENT_CTX.with(|c| c.set(g.ctx as usize));
    Ok(())
}

/// This thread's current stream on device `ordinal` (null: the legacy default stream).
pub(crate) fn current_stream(ordinal: usize) -> sys::CUstream {
    CURRENT_STREAM.with(|s| s.borrow().get(ordinal).copied().unwrap_or(0)) as sys::CUstream
}

/// Sets this thread's current stream on device `ordinal`; returns the previous one.
pub(crate) fn set_current_stream(ordinal: usize, stream: sys::CUstream) -> sys::CUstream {
    CURRENT_STREAM.with(|s| {
        let mut v = s.borrow_mut();
        if v.len() <= ordinal {
            v.resize(ordinal + 1, 0);
        }
        std::mem::replace(&mut v[ordinal], stream as usize) as sys::CUstream
    })
}

// ---------------------------------------------------------------------------------------
// The caching allocator.
// ---------------------------------------------------------------------------------------

/// Freed device blocks kept for reuse, by (stream, size): a block is handed out again
/// only on the stream it was freed on (work queued there before the free finishes before
/// anything queued after the reuse), as PyTorch's caching allocator does. Sizes are
/// rounded (see [`round_size`]) so that a loop of same-shaped ops reuses blocks exactly.
#[derive(Default)]
pub(crate) struct BlockCache {
    free: HashMap<(usize, usize), Vec<u64>>,
    /// Bytes held from the driver: live blocks plus cached ones.
    pub reserved: usize,
    /// Bytes in cached (free) blocks.
    pub cached: usize,
}

/// The size class of a request: multiples of 512 bytes up to 1 MiB, of 128 KiB up to
/// 16 MiB, of 2 MiB beyond.
pub(crate) fn round_size(n: usize) -> usize {
    let q = if n <= 1 << 20 {
        512
    } else if n <= 16 << 20 {
        128 << 10
    } else {
        2 << 20
    };
    n.div_ceil(q).saturating_mul(q)
}

impl Gpu {
    /// `nbytes` of device memory for use on `stream`: a cached block of the size class
    /// freed on that stream, or a fresh `cuMemAlloc` (after emptying the cache once if
    /// the device is full).
    pub(crate) fn alloc(
        &self,
        op: &'static str,
        nbytes: usize,
        stream: sys::CUstream,
    ) -> Result<u64> {
        let size = round_size(nbytes);
        let key = (stream as usize, size);
        {
            let mut c = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(p) = c.free.get_mut(&key).and_then(Vec::pop) {
                c.cached -= size;
                drop(c);
                self.count_alloc(size);
                return Ok(p);
            }
        }
        let mut p: sys::CUdeviceptr = 0;
        // SAFETY: writes one device pointer.
        let mut r = unsafe { sys::cuMemAlloc_v2(&mut p, size) };
        if r == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY {
            self.empty_cache(op)?;
            // SAFETY: as above.
            r = unsafe { sys::cuMemAlloc_v2(&mut p, size) };
        }
        if r == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY {
            let c = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            return Err(Error::Resource {
                op,
                msg: format!(
                    "CUDA out of memory. Tried to allocate {nbytes} bytes on cuda:{} ({} bytes reserved by strata, {} allocated)",
                    self.ordinal,
                    c.reserved,
                    self.allocated.load(Ordering::Relaxed)
                ),
            });
        }
        check(op, self.ordinal, "cuMemAlloc", r)?;
        self.cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .reserved += size;
        self.count_alloc(size);
        Ok(p)
    }

    fn count_alloc(&self, size: usize) {
        let now = self.allocated.fetch_add(size, Ordering::Relaxed) + size;
        self.peak.fetch_max(now, Ordering::Relaxed);
    }

    /// Returns a block from [`alloc`](Self::alloc) to the cache of `stream`.
    pub(crate) fn free(&self, p: u64, nbytes: usize, stream: sys::CUstream) {
        let size = round_size(nbytes);
        self.allocated.fetch_sub(size, Ordering::Relaxed);
        let mut c = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        c.cached += size;
        c.free.entry((stream as usize, size)).or_default().push(p);
    }

    /// Frees every cached block to the driver (after the device finished its work, so no
    /// queued kernel still uses one), as `torch.cuda.empty_cache()`.
    pub(crate) fn empty_cache(&self, op: &'static str) -> Result<()> {
        make_current(op, self)?;
        drv!(op, self.ordinal, cuCtxSynchronize())?;
        let mut c = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        for ((_, size), ptrs) in c.free.drain().collect::<Vec<_>>() {
            for p in ptrs {
                // SAFETY: `p` is a cached block from cuMemAlloc that no storage uses.
                unsafe { sys::cuMemFree_v2(p) };
                c.reserved -= size;
                c.cached -= size;
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------
// Streams and events.
// ---------------------------------------------------------------------------------------

/// Waits for all work on device `ordinal`.
pub(crate) fn synchronize(op: &'static str, ordinal: usize) -> Result<()> {
    let g = gpu(op, ordinal)?;
    drv!(op, g.ordinal, cuCtxSynchronize())
}

/// Waits for the work queued on `stream` of device `ordinal`.
pub(crate) fn stream_synchronize(
    op: &'static str,
    ordinal: usize,
    stream: sys::CUstream,
) -> Result<()> {
    gpu(op, ordinal)?;
    drv!(op, ordinal, cuStreamSynchronize(stream))
}
