//! A cache of large freed CPU blocks, reused for kernels' fresh outputs.
//!
//! # Note [block cache]
//!
//! An op that allocates its result (`a + b`, `t.flip(0).contiguous()`) on a large tensor
//! spends most of its time not computing but faulting in the output: every fresh page is
//! mapped and zeroed by the kernel on first touch (for a large output, most of the op's
//! time, even with huge pages). NumPy and PyTorch's CPU allocator pay that on
//! every call, because glibc returns blocks above its mmap threshold (32 MiB at most) to
//! the OS when they are freed and maps fresh ones next time.
//!
//! strata keeps the CPU allocator's freed blocks of at least [`CACHE_MIN`] bytes, up to a
//! limit on the bytes held (1 GiB by default; `STRATA_CACHE_LIMIT` in the environment, in
//! bytes with an optional K/M/G suffix, sets it at start-up and 0 turns the cache off; a
//! value it cannot read leaves the default, as no allocation can report an error about
//! it; [`set_cache_limit`] changes it at run time). A kernel's fresh output of a size the
//! cache holds takes a block whose pages are already mapped, so a loop that makes and
//! drops results of the same shapes — most numeric code — stops faulting. This is the
//! idea of PyTorch's CUDA caching allocator, applied to host memory.
//!
//! - Outputs a kernel overwrites whole take cached blocks as they are (their stale bytes
//!   are never read; debug builds poison them to prove it). Zeroed allocations (`zeros`,
//!   `empty`, reduction outputs) take one only up to 32 MiB, and clear it; larger ones
//!   come from `calloc`, whose fresh pages cost nothing until touched.
//! - A request takes the smallest cached block that fits with at most 1/8 to spare, so
//!   a small request never pins a much larger block.
//! - When a freed block would push the cache past its limit, the least recently cached
//!   blocks are freed first; a block larger than the limit is freed at once.
//! - [`empty_cache`] frees every cached block (as `torch.cuda.empty_cache()` does), and
//!   [`cache_stats`] reports the bytes held, hits and misses.
//!
//! The lock is held only to pick or insert an entry in a fixed table (no allocation or
//! system call under it); blocks are freed after it is released.

use std::sync::{Mutex, MutexGuard, OnceLock};

/// Blocks smaller than this are left to `malloc`, which keeps and reuses them itself.
pub const CACHE_MIN: usize = 1 << 20;

/// The most blocks held at once.
const SLOTS: usize = 32;

/// The default limit on cached bytes.
const DEFAULT_LIMIT: usize = 1 << 30;

/// A block as the CPU allocator got it: its start and its allocated size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Block {
    pub(crate) addr: usize,
    pub(crate) size: usize,
}

/// What the cache holds and has done, from [`cache_stats`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CacheStats {
    /// Bytes held in cached blocks.
    pub bytes: usize,
    /// Number of cached blocks.
    pub blocks: usize,
    /// The most bytes the cache may hold.
    pub limit: usize,
    /// Allocations served from the cache.
    pub hits: u64,
    /// Requests of at least [`CACHE_MIN`] bytes that the cache could not serve (zeroed
    /// requests over 32 MiB never ask it; see Note [block cache]).
    pub misses: u64,
}

/// The cache's bookkeeping. It never frees anything itself: the blocks it lets go of
/// are handed back to the caller, who frees them after the lock is released.
#[derive(Debug)]
pub(crate) struct BlockCache {
    slots: [Option<(Block, u64)>; SLOTS],
    bytes: usize,
    limit: usize,
    tick: u64,
    hits: u64,
    misses: u64,
}

impl BlockCache {
    pub(crate) const fn new(limit: usize) -> BlockCache {
        BlockCache {
            slots: [None; SLOTS],
            bytes: 0,
            limit,
            tick: 0,
            hits: 0,
            misses: 0,
        }
    }

    /// Takes the smallest block of `size..=size + size / 8` bytes, if one is cached.
    pub(crate) fn take(&mut self, size: usize) -> Option<Block> {
        let most = size.saturating_add(size / 8);
        let best = self
            .slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.map(|(b, _)| (i, b.size)))
            .filter(|&(_, s)| s >= size && s <= most)
            .min_by_key(|&(_, s)| s)
            .map(|(i, _)| i);
        match best.and_then(|i| self.slots[i].take()) {
            Some((block, _)) => {
                self.bytes -= block.size;
                self.hits += 1;
                Some(block)
            }
            None => {
                self.misses += 1;
                None
            }
        }
    }

    /// Offers a freed block. `Ok(())` when the cache kept it; otherwise `Err` with a
    /// block the caller must free (the oldest cached one, making room, or `block` itself
    /// when it can never fit): offer `block` again after freeing an evicted one.
    pub(crate) fn put(&mut self, block: Block) -> Result<(), Block> {
        if block.size < CACHE_MIN || block.size > self.limit {
            return Err(block);
        }
        let free_slot = self.slots.iter().position(Option::is_none);
        match free_slot {
            Some(i) if self.bytes + block.size <= self.limit => {
                self.tick += 1;
                self.slots[i] = Some((block, self.tick));
                self.bytes += block.size;
                Ok(())
            }
            _ => Err(self.evict_oldest().unwrap_or(block)),
        }
    }

    /// Removes and returns the least recently cached block.
    fn evict_oldest(&mut self) -> Option<Block> {
        let i = self
            .slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.map(|(_, t)| (i, t)))
            .min_by_key(|&(_, t)| t)
            .map(|(i, _)| i)?;
        let (block, _) = self.slots[i].take()?;
        self.bytes -= block.size;
        Some(block)
    }

    pub(crate) fn stats(&self) -> CacheStats {
        CacheStats {
            bytes: self.bytes,
            blocks: self.slots.iter().flatten().count(),
            limit: self.limit,
            hits: self.hits,
            misses: self.misses,
        }
    }
}

static CACHE: Mutex<BlockCache> = Mutex::new(BlockCache::new(0));
static LIMIT_FROM_ENV: OnceLock<()> = OnceLock::new();

/// The process's cache, its limit read from `STRATA_CACHE_LIMIT` on first use.
fn cache() -> MutexGuard<'static, BlockCache> {
    LIMIT_FROM_ENV.get_or_init(|| {
        // Before the lock is first taken: from then on a `fork()` waits for it (see
        // `fork_prepare`).
        crate::kernel::pool::register_fork_handlers();
        let limit = std::env::var("STRATA_CACHE_LIMIT")
            .ok()
            .and_then(|v| parse_bytes(&v))
            .unwrap_or(DEFAULT_LIMIT);
        lock().limit = limit;
    });
    lock()
}

fn lock() -> MutexGuard<'static, BlockCache> {
    // The table is consistent after every statement that changes it (a panic cannot
    // leave it half-updated), so a poisoned lock is still usable.
    CACHE.lock().unwrap_or_else(|e| e.into_inner())
}

// Note [cache lock at fork]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// A `fork()` while another thread holds the cache's lock would leave it locked for ever
// in the child, whose first large allocation would then hang. The atfork handlers (see
// `kernel::pool`) take the lock before the fork and release it after it, in the parent
// and in the child, so the child's copy is never held by a thread that does not exist.
// The critical sections are a table update, so the fork waits at most that long.

thread_local! {
    /// The cache's lock, held by the forking thread across `fork()`.
    static FORK_GUARD: std::cell::RefCell<Option<MutexGuard<'static, BlockCache>>> =
        const { std::cell::RefCell::new(None) };
}

/// atfork `prepare`: takes the cache's lock (Note [cache lock at fork]).
pub(crate) fn fork_prepare() {
    // `try_with`: a fork during this thread's exit goes without (nothing to hold it in).
    let _ = FORK_GUARD.try_with(|s| *s.borrow_mut() = Some(lock()));
}

/// atfork `parent` and `child`: releases the lock `fork_prepare` took.
pub(crate) fn fork_release() {
    // `try_with`: nothing to release if the slot is gone (a fork during thread exit).
    let _ = FORK_GUARD.try_with(|s| s.borrow_mut().take());
}

/// Reads `"1073741824"`, `"512M"`, `"1G"`, `"64k"`: bytes with an optional binary suffix.
fn parse_bytes(s: &str) -> Option<usize> {
    let s = s.trim();
    let (digits, shift) = match s.as_bytes().last()? {
        b'k' | b'K' => (&s[..s.len() - 1], 10),
        b'm' | b'M' => (&s[..s.len() - 1], 20),
        b'g' | b'G' => (&s[..s.len() - 1], 30),
        _ => (s, 0),
    };
    digits.trim().parse::<usize>().ok()?.checked_mul(1 << shift)
}

/// A cached block of `size` bytes (see [`BlockCache::take`]), if there is one. Smaller
/// requests than [`CACHE_MIN`] return `None` without taking the lock.
pub(crate) fn take(size: usize) -> Option<Block> {
    if size < CACHE_MIN {
        return None;
    }
    cache().take(size)
}

/// Keeps `block` in the cache, or frees it (and whatever the cache evicts to make room).
pub(crate) fn put(block: Block) {
    if block.size < CACHE_MIN {
        return super::alloc::free_block(block);
    }
    loop {
        let rejected = cache().put(block);
        match rejected {
            Ok(()) => return,
            Err(b) => {
                super::alloc::free_block(b);
                if b == block {
                    return;
                }
            }
        }
    }
}

/// Frees blocks that `pick` takes out of the cache, one at a time, each after the lock is
/// released, until it takes none.
fn free_while(mut pick: impl FnMut(&mut BlockCache) -> Option<Block>) {
    loop {
        let picked = pick(&mut cache());
        match picked {
            Some(b) => super::alloc::free_block(b),
            None => return,
        }
    }
}

/// The cache's counters and holdings.
pub fn cache_stats() -> CacheStats {
    cache().stats()
}

/// Sets the most bytes the cache may hold (0 turns it off) and frees what is over it.
/// Returns the previous limit.
pub fn set_cache_limit(bytes: usize) -> usize {
    let old = std::mem::replace(&mut cache().limit, bytes);
    free_while(|c| (c.bytes > c.limit).then(|| c.evict_oldest()).flatten());
    old
}

/// Frees every cached block back to the system allocator.
pub fn empty_cache() {
    free_while(BlockCache::evict_oldest);
}

#[cfg(test)]
mod tests {
    use super::*;

    const MB: usize = 1 << 20;

    fn block(addr: usize, size: usize) -> Block {
        Block { addr, size }
    }

    #[test]
    fn takes_the_smallest_block_that_fits_within_an_eighth() {
        let mut c = BlockCache::new(64 * MB);
        for (addr, size) in [(1, 8 * MB), (2, 4 * MB), (3, 4 * MB + MB / 4), (4, 16 * MB)] {
            c.put(block(addr, size)).unwrap();
        }
        assert_eq!(c.take(4 * MB), Some(block(2, 4 * MB)));
        // 4.25 MiB is within 1/8 of 4 MiB; 8 MiB is not.
        assert_eq!(c.take(4 * MB), Some(block(3, 4 * MB + MB / 4)));
        assert_eq!(c.take(4 * MB), None);
        assert_eq!(c.take(15 * MB), Some(block(4, 16 * MB)));
        assert_eq!(c.take(9 * MB), None);
        let s = c.stats();
        assert_eq!((s.hits, s.misses, s.blocks, s.bytes), (3, 2, 1, 8 * MB));
    }

    #[test]
    fn refuses_small_blocks_and_blocks_over_the_limit() {
        let mut c = BlockCache::new(8 * MB);
        assert_eq!(c.put(block(1, MB - 64)), Err(block(1, MB - 64)));
        assert_eq!(c.put(block(2, 9 * MB)), Err(block(2, 9 * MB)));
        let mut off = BlockCache::new(0);
        assert_eq!(off.put(block(3, 2 * MB)), Err(block(3, 2 * MB)));
        assert_eq!((c.stats().blocks, off.stats().blocks), (0, 0));
    }

    #[test]
    fn evicts_the_oldest_block_to_make_room() {
        let mut c = BlockCache::new(10 * MB);
        c.put(block(1, 4 * MB)).unwrap();
        c.put(block(2, 4 * MB)).unwrap();
        // 4 + 4 + 3 > 10: the first block goes, then the new one fits.
        assert_eq!(c.put(block(3, 3 * MB)), Err(block(1, 4 * MB)));
        assert_eq!(c.put(block(3, 3 * MB)), Ok(()));
        assert_eq!(c.stats().bytes, 7 * MB);
        assert_eq!(c.take(4 * MB), Some(block(2, 4 * MB)));
    }

    #[test]
    fn a_full_table_evicts_too() {
        let mut c = BlockCache::new(usize::MAX);
        for i in 0..SLOTS {
            c.put(block(i + 1, MB)).unwrap();
        }
        assert_eq!(c.put(block(99, MB)), Err(block(1, MB)));
        assert_eq!(c.put(block(99, MB)), Ok(()));
        assert_eq!(c.stats().blocks, SLOTS);
    }

    #[test]
    fn reads_sizes_with_suffixes() {
        assert_eq!(parse_bytes("0"), Some(0));
        assert_eq!(parse_bytes("1048576"), Some(MB));
        assert_eq!(parse_bytes(" 512M "), Some(512 * MB));
        assert_eq!(parse_bytes("2g"), Some(2 << 30));
        assert_eq!(parse_bytes("64K"), Some(64 << 10));
        assert_eq!(parse_bytes("lots"), None);
        assert_eq!(parse_bytes(""), None);
        assert_eq!(parse_bytes("99999999999999999999G"), None);
    }
}
