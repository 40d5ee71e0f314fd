//! Allocators for CPU storage.

use std::alloc::Layout as AllocLayout;
use std::fmt;
use std::ptr::NonNull;
use std::sync::Arc;

use super::cache::{self, Block};
use super::Device;
use crate::error::{Error, Result};

/// Alignment of every strata allocation, in bytes (a cache line; enough for AVX-512).
pub const ALIGN: usize = 64;

/// A source of zeroed memory for storages. Implement it to put tensors in pinned,
/// huge-page or otherwise special memory.
pub trait Allocator: Send + Sync {
    /// A short name shown in debug output.
    fn name(&self) -> &'static str;

    /// The device whose memory this allocator hands out; a storage takes its
    /// [`Device`] from its allocator. Host memory by default. Ops run on a storage
    /// through the backend of its device, and host-only operations refuse any device but
    /// [`Device::Cpu`] (see [`Storage::check_host`](super::Storage::check_host)).
    ///
    /// Until every op family goes through the backend seam (`backend/`), the memory must
    /// still be host-addressable (invariant S1) whatever this reports.
    fn device(&self) -> Device {
        Device::Cpu
    }

    /// Returns `nbytes > 0` zeroed bytes aligned to at least [`ALIGN`].
    fn allocate_zeroed(&self, nbytes: usize) -> Result<NonNull<u8>>;

    /// Returns `nbytes > 0` bytes aligned to at least [`ALIGN`] that the caller writes
    /// whole before anything reads them (a kernel's fresh output), so they need not be
    /// zeroed. The default zeroes them anyway.
    fn allocate_for_overwrite(&self, nbytes: usize) -> Result<NonNull<u8>> {
        self.allocate_zeroed(nbytes)
    }

    /// Frees memory from [`allocate_zeroed`](Self::allocate_zeroed) or
    /// [`allocate_for_overwrite`](Self::allocate_for_overwrite).
    ///
    /// # Safety
    /// `ptr` and `nbytes` must come from one earlier allocation of `nbytes` on this
    /// allocator, and the memory must not be used afterwards.
    unsafe fn deallocate(&self, ptr: NonNull<u8>, nbytes: usize);
}

/// The default allocator: the global allocator, 64-byte aligned, zeroed.
#[derive(Debug, Clone, Copy, Default)]
pub struct CpuAllocator;

impl CpuAllocator {
    /// A handle to the CPU allocator for a storage's owner: one `Arc` shared by every
    /// CPU storage, so a storage costs a reference count rather than an allocation and a
    /// free of its own (a part of every small op's per-call cost).
    pub fn shared() -> Arc<dyn Allocator> {
        static CPU: std::sync::OnceLock<Arc<dyn Allocator>> = std::sync::OnceLock::new();
        CPU.get_or_init(|| Arc::new(CpuAllocator)).clone()
    }
}

impl Allocator for CpuAllocator {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn allocate_zeroed(&self, nbytes: usize) -> Result<NonNull<u8>> {
        cpu_allocate(nbytes, true)
    }

    /// Plain `malloc`, or a block of the right size from the block cache (see Note
    /// [block cache]): a reused block is not cleared (for outputs of up to glibc's mmap
    /// threshold, 32 MiB once raised, that `memset` was a fifth of an add).
    fn allocate_for_overwrite(&self, nbytes: usize) -> Result<NonNull<u8>> {
        cpu_allocate(nbytes, false)
    }

    /// A freed block of at least [`CACHE_MIN`](super::cache::CACHE_MIN) bytes goes to
    /// the block cache (see Note [block cache]) rather than back to the system.
    unsafe fn deallocate(&self, ptr: NonNull<u8>, _nbytes: usize) {
        // SAFETY: `ptr` came from `cpu_allocate(_, _)` (caller's contract), which stored
        // the block's start and size in the two words before it; nothing uses the memory
        // any more, so it may be cached or freed.
        let block = unsafe { stashed(ptr) };
        cache::put(block);
    }
}

/// The block behind an aligned pointer handed out by `cpu_allocate`.
///
/// # Safety
/// `ptr` must come from `cpu_allocate` and its block must not have been freed.
unsafe fn stashed(ptr: NonNull<u8>) -> Block {
    // SAFETY: `cpu_allocate` wrote two words at `ptr - STASH` inside the block (caller).
    let [addr, size] = unsafe { ptr.as_ptr().sub(STASH).cast::<[usize; 2]>().read() };
    Block { addr, size }
}

/// Returns a block to the global allocator.
pub(super) fn free_block(block: Block) {
    // `cpu_allocate` made this block with this size and alignment, so the layout is valid.
    let layout = AllocLayout::from_size_align(block.size, 16).unwrap_or(AllocLayout::new::<u8>());
    // SAFETY: `block` is exactly an allocation made by `cpu_allocate` with `layout`, which
    // nothing uses any more (it came out of `deallocate` or the cache, each of which
    // holds a block once).
    unsafe { std::alloc::dealloc(std::ptr::with_exposed_provenance_mut(block.addr), layout) };
}

/// The CPU allocator's block for `nbytes`, zeroed or not.
fn cpu_allocate(nbytes: usize, zeroed: bool) -> Result<NonNull<u8>> {
    // Asking the global allocator for 64-byte alignment makes it `memset` a zeroed block
    // (posix_memalign + write_bytes), touching every page up front. With the default
    // 16-byte alignment it uses `calloc` (or `malloc`), which hands out fresh pages from
    // the OS untouched for large blocks; the pages then fault in where the kernel first
    // writes them (in parallel, for parallel kernels). So: over-allocate by ALIGN bytes,
    // return the first 64-byte boundary past room for two words, and keep the block's
    // start and size in them for `deallocate`.
    let layout = calloc_layout(nbytes)?;
    // A block of the size needed may be cached, its pages mapped. A zeroed request takes
    // one only up to ZEROED_FROM_CACHE and clears it: above that, `calloc` maps fresh
    // pages that cost nothing until touched (and a large `zeros` often is only partly).
    let from_cache = !zeroed || layout.size() <= ZEROED_FROM_CACHE;
    let cached = if from_cache {
        cache::take(layout.size())
    } else {
        None
    };
    let (raw, size, clear) = match cached {
        Some(b) => (
            std::ptr::with_exposed_provenance_mut::<u8>(b.addr),
            b.size,
            zeroed,
        ),
        None => (fresh_block(layout, zeroed)?, layout.size(), false),
    };
    let addr = raw.expose_provenance();
    let aligned = (addr + STASH).next_multiple_of(ALIGN);
    // `raw` is 16-aligned, so `aligned - addr` is 16, 32, 48 or 64: the block (of at least
    // `nbytes + ALIGN` bytes) ends at or after `aligned + nbytes`, and the two stash
    // words lie inside it, before `aligned`.
    let ptr = raw.wrapping_add(aligned - addr);
    // SAFETY: `ptr - STASH .. ptr` lies inside the block (see above); it is 16-aligned
    // because `ptr` is 64-aligned.
    unsafe { ptr.sub(STASH).cast::<[usize; 2]>().write([addr, size]) };
    if clear {
        // SAFETY: `ptr .. ptr + nbytes` lies inside the block, which nothing else uses.
        unsafe { ptr.write_bytes(0, nbytes) };
    }
    // Debug builds (every test suite) poison a block meant for overwriting, so a kernel
    // that left an element unwritten shows garbage (0xA5 bytes: a large negative integer,
    // a float around -2.9e-16, `true`) instead of a zero that might pass.
    #[cfg(debug_assertions)]
    if !zeroed {
        // SAFETY: `ptr .. ptr + nbytes` lies inside the fresh block.
        unsafe { ptr.write_bytes(0xA5, nbytes) };
    }
    NonNull::new(ptr).ok_or_else(|| Error::Resource {
        op: "allocate",
        msg: format!("out of memory allocating {nbytes} bytes"),
    })
}

/// The largest zeroed request served (and cleared) from the block cache. This is glibc's
/// largest mmap threshold: below it, `calloc` itself hands out reused heap memory and
/// clears it, once freed blocks of that size have been returned to it; kept in the cache,
/// they never are, and every `calloc` of the size would map and fault in fresh pages
/// (which more than doubled the time of a reduction with a few-MiB zeroed output).
const ZEROED_FROM_CACHE: usize = 32 << 20;

/// A block of `layout` from the global allocator, with huge pages advised.
fn fresh_block(layout: AllocLayout, zeroed: bool) -> Result<*mut u8> {
    // SAFETY: the layout has non-zero size.
    let raw = unsafe {
        if zeroed {
            std::alloc::alloc_zeroed(layout)
        } else {
            std::alloc::alloc(layout)
        }
    };
    if raw.is_null() {
        return Err(Error::Resource {
            op: "allocate",
            msg: format!("out of memory allocating {} bytes", layout.size()),
        });
    }
    advise_huge_pages(raw, layout.size());
    Ok(raw)
}

/// Blocks at least this large are backed by transparent huge pages where the kernel
/// offers them on request (NumPy does the same from 4 MiB): a fresh 256 MiB output then
/// faults in 128 times instead of 65536, which is most of the cost of an op that
/// allocates its result.
const HUGE_PAGE_MIN: usize = 4 << 20;

/// Asks the kernel to back the whole 2 MiB pages inside `raw..raw + len` with huge pages.
/// Advice only: failure (no THP, another OS) changes nothing.
fn advise_huge_pages(raw: *mut u8, len: usize) {
    #[cfg(target_os = "linux")]
    if len >= HUGE_PAGE_MIN {
        const HUGE: usize = 2 << 20;
        let start = (raw as usize).next_multiple_of(HUGE);
        let end = (raw as usize + len) & !(HUGE - 1);
        if end > start {
            // SAFETY: `start..end` lies inside the block just allocated, which nothing else
            // uses yet; MADV_HUGEPAGE changes how pages are backed, never their contents.
            let _ = unsafe {
                rustix::mm::madvise(
                    raw.wrapping_add(start - raw as usize).cast(),
                    end - start,
                    rustix::mm::Advice::LinuxHugepage,
                )
            };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (raw, len);
}

/// Bytes before an aligned block that hold the block's start and size.
const STASH: usize = 2 * size_of::<usize>();

/// The layout actually requested for `nbytes`: ALIGN bytes more, 16-byte aligned (the
/// alignment malloc guarantees on 64-bit targets, so `alloc_zeroed` is plain `calloc`).
fn calloc_layout(nbytes: usize) -> Result<AllocLayout> {
    nbytes
        .checked_add(ALIGN)
        .and_then(|n| AllocLayout::from_size_align(n, 16).ok())
        .ok_or_else(|| Error::overflow("allocate", format!("allocation of {nbytes} bytes")))
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

/// Bytes of physical memory on this machine (`sysconf`), or `None` where it cannot be
/// told. For sizing what user input would make the process build (e.g. the Python
/// objects of `tolist()`, a boolean mask's reading), never for correctness. Read once per
/// process: glibc answers `_SC_PHYS_PAGES` with a `sysinfo` system call, which was a
/// third of a small `t[mask]`'s per-call time (2.1 µs, now 1.4).
pub fn physical_memory() -> Option<usize> {
    static PHYSICAL: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
    *PHYSICAL.get_or_init(read_physical_memory)
}

fn read_physical_memory() -> Option<usize> {
    #[cfg(unix)]
    {
        // SAFETY: `sysconf` only reads system configuration; it takes no pointers.
        let (pages, page) = unsafe {
            (
                libc::sysconf(libc::_SC_PHYS_PAGES),
                libc::sysconf(libc::_SC_PAGESIZE),
            )
        };
        if pages > 0 && page > 0 {
            return (pages as usize).checked_mul(page as usize);
        }
    }
    None
}

/// Bytes of memory this process may use: the smaller of [`physical_memory`] and its
/// cgroup's memory limit ([`cgroup_memory_limit`]), or `None` where neither can be told.
pub fn memory_available() -> Option<usize> {
    match (physical_memory(), cgroup_memory_limit()) {
        (Some(p), Some(c)) => Some(p.min(c)),
        (p, c) => p.or(c),
    }
}

/// The memory limit of this process's cgroup (Linux): the smallest `memory.max` (cgroup
/// v2) or `memory.limit_in_bytes` (v1) set on its cgroup or any cgroup above it, from
/// `/proc/self/cgroup`; `None` without one (unlimited, another OS, no cgroup files).
pub fn cgroup_memory_limit() -> Option<usize> {
    #[cfg(target_os = "linux")]
    {
        let table = std::fs::read_to_string("/proc/self/cgroup").ok()?;
        cgroup_limit_from(&table, |path| std::fs::read_to_string(path).ok())
    }
    #[cfg(not(target_os = "linux"))]
    None
}

/// [`cgroup_memory_limit`] from the text of `/proc/self/cgroup` and a reader of files.
/// A v2 line is `0::/path` (limits in `/sys/fs/cgroup/path/memory.max`, `max` for
/// none); a v1 line names the `memory` controller, `4:memory:/path` (limits in
/// `/sys/fs/cgroup/memory/path/memory.limit_in_bytes`, a value near `i64::MAX` for none).
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn cgroup_limit_from(table: &str, read: impl Fn(&str) -> Option<String>) -> Option<usize> {
    let mut best: Option<usize> = None;
    for line in table.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let (root, file) = if controllers.is_empty() {
            ("/sys/fs/cgroup", "memory.max")
        } else if controllers.split(',').any(|c| c == "memory") {
            ("/sys/fs/cgroup/memory", "memory.limit_in_bytes")
        } else {
            continue;
        };
        // The cgroup and each one above it, up to the root.
        let mut dir = path.trim_end_matches('/');
        loop {
            let value = read(&format!("{root}{dir}/{file}"));
            // "max" (v2) and v1's page-rounded i64::MAX read as no limit.
            if let Some(n) = value.and_then(|v| v.trim().parse::<u64>().ok()) {
                if n < (1 << 62) {
                    let n = usize::try_from(n).unwrap_or(usize::MAX);
                    best = Some(best.map_or(n, |b| b.min(n)));
                }
            }
            match dir.rfind('/') {
                Some(i) => dir = &dir[..i],
                None => break,
            }
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader of a fixed set of files.
    fn files<'a>(map: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |p| {
            map.iter()
                .find(|(k, _)| *k == p)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn cgroup_limits_are_read_from_the_process_cgroup_and_those_above_it() {
        // v2: the smallest limit on the path wins; "max" is none.
        let v2 = [
            ("/sys/fs/cgroup/memory.max", "max\n"),
            ("/sys/fs/cgroup/a/memory.max", "8589934592\n"),
            ("/sys/fs/cgroup/a/b/memory.max", "max\n"),
        ];
        assert_eq!(cgroup_limit_from("0::/a/b\n", files(&v2)), Some(8 << 30));
        assert_eq!(cgroup_limit_from("0::/\n", files(&v2)), None);
        // v1: the memory controller's line only; i64::MAX rounded to pages is none.
        let v1 = [
            (
                "/sys/fs/cgroup/memory/memory.limit_in_bytes",
                "9223372036854771712\n",
            ),
            (
                "/sys/fs/cgroup/memory/job/memory.limit_in_bytes",
                "2147483648\n",
            ),
            ("/sys/fs/cgroup/cpu/job/memory.limit_in_bytes", "1024\n"),
        ];
        let table = "5:cpu,cpuacct:/job\n4:memory:/job\n0::/\n";
        assert_eq!(cgroup_limit_from(table, files(&v1)), Some(2 << 30));
        assert_eq!(cgroup_limit_from("4:memory:/\n", files(&v1)), None);
        // Unreadable or odd contents are no limit, never an error.
        let odd = [("/sys/fs/cgroup/x/memory.max", "lots\n")];
        assert_eq!(cgroup_limit_from("0::/x\ngarbage\n", files(&odd)), None);
        assert_eq!(cgroup_limit_from("", files(&odd)), None);
    }
}
