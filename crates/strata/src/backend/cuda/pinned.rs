//! Pinned (page-locked) host memory from `cuMemHostAlloc`, with its own cache (PyTorch's
//! `CachingHostAllocator`): a pinned storage is an ordinary CPU storage to every CPU op,
//! and the GPU copies to and from it asynchronously (`non_blocking=True`).
//!
//! A freed block may still be the source or target of a copy queued on a stream; the
//! cache records an event on the freeing thread's current stream of device 0 and hands
//! the block out again only once that event has completed.

use std::collections::HashMap;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::sys;

use super::driver::{self, drv};
use crate::error::{Error, Result};
use crate::storage::{Allocator, Backing, Device, Storage};

/// The name pinned storages' allocator reports (see [`is_pinned`]).
pub(crate) const PINNED: &str = "cuda-pinned";

struct Block {
    ptr: usize,
    event: usize,
}

#[derive(Default)]
struct Cache {
    free: HashMap<usize, Vec<Block>>,
    reserved: usize,
}

fn cache() -> &'static Mutex<Cache> {
    static C: OnceLock<Mutex<Cache>> = OnceLock::new();
    C.get_or_init(Mutex::default)
}

/// Pinned host memory for CPU storages.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct PinnedAllocator;

fn size_class(n: usize) -> usize {
    n.max(1).next_power_of_two().max(4096)
}

impl Allocator for PinnedAllocator {
    fn name(&self) -> &'static str {
        PINNED
    }

    fn device(&self) -> Device {
        Device::Cpu
    }

    fn allocate_zeroed(&self, nbytes: usize) -> Result<NonNull<u8>> {
        let p = self.allocate_for_overwrite(nbytes)?;
        // SAFETY: `p` is a fresh pinned block of at least `nbytes` bytes.
        unsafe { std::ptr::write_bytes(p.as_ptr(), 0, nbytes) };
        Ok(p)
    }

    fn allocate_for_overwrite(&self, nbytes: usize) -> Result<NonNull<u8>> {
        let g = driver::gpu("pin_memory", 0)?;
        let size = size_class(nbytes);
        {
            let mut c = cache().lock().unwrap_or_else(|e| e.into_inner());
            if let Some(list) = c.free.get_mut(&size) {
                let ready = list.iter().position(|b| {
                    // SAFETY: the event was created by this cache and not destroyed.
                    b.event == 0
                        || unsafe { sys::cuEventQuery(b.event as sys::CUevent) }
                            == sys::CUresult::CUDA_SUCCESS
                });
                if let Some(i) = ready {
                    let b = list.swap_remove(i);
                    if b.event != 0 {
                        // SAFETY: as above; destroyed once, here.
                        unsafe { sys::cuEventDestroy_v2(b.event as sys::CUevent) };
                    }
                    if let Some(p) = NonNull::new(b.ptr as *mut u8) {
                        return Ok(p);
                    }
                }
            }
        }
        let mut p: *mut std::ffi::c_void = std::ptr::null_mut();
        drv!(
            "pin_memory",
            g.ordinal,
            cuMemHostAlloc(&mut p, size, sys::CU_MEMHOSTALLOC_PORTABLE)
        )?;
        cache().lock().unwrap_or_else(|e| e.into_inner()).reserved += size;
        NonNull::new(p.cast()).ok_or_else(|| Error::Resource {
            op: "pin_memory",
            msg: "cuMemHostAlloc returned a null pointer".into(),
        })
    }

    unsafe fn deallocate(&self, ptr: NonNull<u8>, nbytes: usize) {
        let mut event: sys::CUevent = std::ptr::null_mut();
        if driver::gpu("pin_memory", 0).is_ok() {
            // SAFETY: creates and records an event on the current stream; on failure the
            // block is treated as ready (event 0).
            unsafe {
                if sys::cuEventCreate(
                    &mut event,
                    sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32,
                ) == sys::CUresult::CUDA_SUCCESS
                    && sys::cuEventRecord(event, driver::current_stream(0))
                        != sys::CUresult::CUDA_SUCCESS
                {
                    sys::cuEventDestroy_v2(event);
                    event = std::ptr::null_mut();
                }
            }
        }
        let mut c = cache().lock().unwrap_or_else(|e| e.into_inner());
        c.free.entry(size_class(nbytes)).or_default().push(Block {
            ptr: ptr.as_ptr() as usize,
            event: event as usize,
        });
    }
}

/// A fresh pinned CPU storage of `nbytes` (zeroed or for overwrite).
pub(crate) fn storage(nbytes: usize, zeroed: bool) -> Result<Storage> {
    Ok(Storage::from_backing(Backing::allocate_with(
        Arc::new(PinnedAllocator),
        nbytes,
        zeroed,
    )?))
}

/// True when `s` is pinned host memory from [`PinnedAllocator`].
pub(crate) fn is_pinned(s: &Storage) -> bool {
    s.try_with_owner(|o| matches!(o, crate::storage::Owner::Allocated { allocator } if allocator.name() == PINNED))
        .unwrap_or(false)
}

/// Frees every cached pinned block whose last copy finished; returns the bytes freed.
pub(crate) fn empty_cache() -> usize {
    let mut c = cache().lock().unwrap_or_else(|e| e.into_inner());
    let mut freed = 0;
    for (size, list) in c.free.iter_mut() {
        list.retain(|b| {
            // SAFETY: events and blocks were made by this cache; each is released once.
            unsafe {
                if b.event != 0
                    && sys::cuEventQuery(b.event as sys::CUevent) != sys::CUresult::CUDA_SUCCESS
                {
                    return true;
                }
                if b.event != 0 {
                    sys::cuEventDestroy_v2(b.event as sys::CUevent);
                }
                sys::cuMemFreeHost(b.ptr as *mut std::ffi::c_void);
            }
            freed += *size;
            false
        });
    }
    c.reserved -= freed;
    freed
}
