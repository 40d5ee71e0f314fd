//! Allocators for CPU storage.

use std::alloc::Layout as AllocLayout;
use std::fmt;
use std::ptr::NonNull;

use crate::error::{Error, Result};

/// Alignment of every strata allocation, in bytes (a cache line; enough for AVX-512).
pub const ALIGN: usize = 64;

/// A source of zeroed memory for storages. Implement it to put tensors in pinned,
/// huge-page or otherwise special memory.
pub trait Allocator: Send + Sync {
    /// A short name shown in debug output.
    fn name(&self) -> &'static str;

    /// Returns `nbytes > 0` zeroed bytes aligned to at least [`ALIGN`].
    fn allocate_zeroed(&self, nbytes: usize) -> Result<NonNull<u8>>;

    /// Frees memory from [`allocate_zeroed`](Self::allocate_zeroed).
    ///
    /// # Safety
    /// `ptr` and `nbytes` must come from one earlier `allocate_zeroed` call on this
    /// allocator, and the memory must not be used afterwards.
    unsafe fn deallocate(&self, ptr: NonNull<u8>, nbytes: usize);
}

/// The default allocator: the global allocator, 64-byte aligned, zeroed.
#[derive(Debug, Clone, Copy, Default)]
pub struct CpuAllocator;

impl Allocator for CpuAllocator {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn allocate_zeroed(&self, nbytes: usize) -> Result<NonNull<u8>> {
        let layout = AllocLayout::from_size_align(nbytes.max(1), ALIGN)
            .map_err(|_| Error::overflow("allocate", format!("allocation of {nbytes} bytes")))?;
        // SAFETY: the layout has non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        NonNull::new(ptr).ok_or_else(|| Error::Resource {
            op: "allocate",
            msg: format!("out of memory allocating {nbytes} bytes"),
        })
    }

    unsafe fn deallocate(&self, ptr: NonNull<u8>, nbytes: usize) {
        // The same layout as in `allocate_zeroed`, which succeeded for these values.
        let layout = AllocLayout::from_size_align(nbytes.max(1), ALIGN)
            .unwrap_or_else(|_| AllocLayout::new::<u8>());
        // SAFETY: the caller guarantees `ptr` came from `allocate_zeroed(nbytes)`, which
        // used exactly this layout.
        unsafe { std::alloc::dealloc(ptr.as_ptr(), layout) };
    }
}

impl fmt::Debug for dyn Allocator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A non-null, [`ALIGN`]-aligned pointer for zero-byte storages; never dereferenced.
pub(crate) fn dangling() -> NonNull<u8> {
    // ALIGN is non-zero, so this is a non-null address; it is never read or written.
    NonNull::new(std::ptr::without_provenance_mut(ALIGN)).unwrap_or(NonNull::dangling())
}
