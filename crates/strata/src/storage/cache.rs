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
//! limit on the bytes held (a 32nd of the process's memory by default, see below;
//! `STRATA_CACHE_LIMIT` in the environment, in
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
//! - A cached block idle for [`DECAY`] (one second; `STRATA_CACHE_DECAY` in seconds, or
//!   [`set_cache_decay`]) is returned to the system: checked on every call into the
//!   cache and by a reaper thread that sleeps until the oldest block's time is up, and
//!   sleeps without a timeout while the cache is empty (an idle process with nothing
//!   cached is never woken). A loop of ops takes its blocks back long before
//!   they expire; a process whose tensors are gone is back to its footprint within about
//!   a second, with no call from the user. This is the decay of jemalloc and mimalloc's
//!   dirty pages, at the cache's grain. After the reaper frees blocks it asks glibc to
//!   hand back the free pages of its heap (`malloc_trim`): blocks under glibc's mmap
//!   threshold (32 MiB once raised) go back to that heap, not to the system, when freed.
//! - The default limit is a 32nd of the memory the process may use (the smaller of the
//!   machine's physical memory and its cgroup's limit, v1 or v2, when it has one; see
//!   [`default_limit`]), so eight workers of a pool hold at most a quarter of it between
//!   them, briefly.
//! - A `fork()`ed child starts with an empty cache and zeroed counters: the blocks it
//!   inherited are the parent's (their pages shared copy-on-write), so the child frees its
//!   copies of them on its first call into the cache, and starts its own reaper when it
//!   first caches a block (the parent's thread does not exist in it).
//! - [`empty_cache`] frees every cached block (as `torch.cuda.empty_cache()` does), and
//!   [`cache_stats`] reports the bytes held, hits and misses, what was returned to the
//!   system and when.
//!
//! The lock is held only to pick, insert or remove entries of a fixed table (no
//! allocation or system call under it); blocks are freed after it is released.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

/// Blocks smaller than this are left to `malloc`, which keeps and reuses them itself.
pub const CACHE_MIN: usize = 1 << 20;

/// The most blocks held at once.
const SLOTS: usize = 32;

/// How long a cached block may sit unused before it is returned to the system, by
/// default (`STRATA_CACHE_DECAY` in the environment, in seconds, sets it at start-up;
/// [`set_cache_decay`] at run time).
pub const DECAY: Duration = Duration::from_secs(1);

/// The decay in force, in nanoseconds.
static DECAY_NS: AtomicU64 = AtomicU64::new(1_000_000_000);

fn decay() -> Duration {
    Duration::from_nanos(DECAY_NS.load(Ordering::Relaxed))
}

/// The default limit's share of the memory the process may use (see [`default_limit`]).
const DEFAULT_SHARE: usize = 32;

/// The default limit where the machine's memory cannot be told.
const FALLBACK_LIMIT: usize = 1 << 30;

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
    /// Bytes of cached blocks returned to the system (idle past [`DECAY`], evicted for
    /// room or by a lower limit, or by [`empty_cache`]), since the process started.
    pub released_bytes: u64,
    /// Number of cached blocks returned to the system.
    pub released_blocks: u64,
    /// How long ago a cached block was last returned to the system (`None`: never).
    pub since_release: Option<Duration>,
    /// How long the least recently cached block has sat unused (`None`: nothing cached).
    pub oldest_idle: Option<Duration>,
    /// How long a block may sit unused before it is returned ([`DECAY`] unless set).
    pub decay: Duration,
}

/// Blocks taken out of the cache under its lock, to be freed after it is released. Each
/// slot is emptied at most once per lock hold, so one call never collects more than
/// every slot plus the block it was offered.
pub(crate) struct Released {
    blocks: [Block; SLOTS + 1],
    len: usize,
}

impl Released {
    const fn new() -> Released {
        Released {
            blocks: [Block { addr: 0, size: 0 }; SLOTS + 1],
            len: 0,
        }
    }

    fn push(&mut self, b: Block) {
        // Cannot be full (see the type's doc); a block over the count would leak, never
        // be freed twice. Debug builds (the test suites) check it.
        debug_assert!(
            self.len < self.blocks.len(),
            "more blocks released than slots"
        );
        if let Some(slot) = self.blocks.get_mut(self.len) {
            *slot = b;
            self.len += 1;
        }
    }

    fn as_slice(&self) -> &[Block] {
        &self.blocks[..self.len]
    }

    /// Frees every block collected (the lock must not be held).
    fn free(self) -> usize {
        for &b in self.as_slice() {
            super::alloc::free_block(b);
        }
        self.len
    }
}

/// One cached block: the block, its insertion tick (least recent first) and when it was
/// cached.
type Slot = Option<(Block, u64, Instant)>;

/// The cache's bookkeeping. It never frees anything itself: the blocks it lets go of are
/// collected in a [`Released`] for the caller, who frees them after the lock is released.
#[derive(Debug)]
pub(crate) struct BlockCache {
    slots: [Slot; SLOTS],
    bytes: usize,
    limit: usize,
    tick: u64,
    hits: u64,
    misses: u64,
    released_bytes: u64,
    released_blocks: u64,
    last_release: Option<Instant>,
    /// The fork generation (see `kernel::pool::fork_generation`) these contents belong to.
    generation: u64,
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
            released_bytes: 0,
            released_blocks: 0,
            last_release: None,
            generation: 0,
        }
    }

    /// Takes the smallest block of `size..=size + size / 8` bytes, if one is cached.
    pub(crate) fn take(&mut self, size: usize) -> Option<Block> {
        let most = size.saturating_add(size / 8);
        let best = self
            .slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.map(|(b, _, _)| (i, b.size)))
            .filter(|&(_, s)| s >= size && s <= most)
            .min_by_key(|&(_, s)| s)
            .map(|(i, _)| i);
        match best.and_then(|i| self.slots[i].take()) {
            Some((block, _, _)) => {
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

    /// Offers a freed block, cached at `now`. Blocks that must go (the oldest cached
    /// ones, making room, or `block` itself when it can never fit) are added to `out`.
    pub(crate) fn put(&mut self, block: Block, now: Instant, out: &mut Released) {
        if block.size < CACHE_MIN || block.size > self.limit {
            return out.push(block);
        }
        loop {
            let free_slot = self.slots.iter().position(Option::is_none);
            match free_slot {
                Some(i) if self.bytes + block.size <= self.limit => {
                    self.tick += 1;
                    self.slots[i] = Some((block, self.tick, now));
                    self.bytes += block.size;
                    return;
                }
                _ => match self.evict_oldest(now) {
                    Some(old) => out.push(old),
                    // Nothing left to evict (cannot happen: the block fits the limit).
                    None => return out.push(block),
                },
            }
        }
    }

    /// Removes and returns the least recently cached block, counted as released at `now`.
    fn evict_oldest(&mut self, now: Instant) -> Option<Block> {
        let i = self
            .slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.map(|(_, t, _)| (i, t)))
            .min_by_key(|&(_, t)| t)
            .map(|(i, _)| i)?;
        let (block, _, _) = self.slots[i].take()?;
        self.bytes -= block.size;
        self.count_release(block, now);
        Some(block)
    }

    fn count_release(&mut self, block: Block, now: Instant) {
        self.released_bytes += block.size as u64;
        self.released_blocks += 1;
        self.last_release = Some(now);
    }

    /// Moves every block cached before `now - decay` to `out`.
    pub(crate) fn expire(&mut self, now: Instant, decay: Duration, out: &mut Released) {
        if self.bytes == 0 {
            return;
        }
        for i in 0..SLOTS {
            if let Some((block, _, since)) = self.slots[i] {
                if now.saturating_duration_since(since) >= decay {
                    self.slots[i] = None;
                    self.bytes -= block.size;
                    self.count_release(block, now);
                    out.push(block);
                }
            }
        }
    }

    /// Moves every block over the limit (oldest first) to `out`.
    fn trim_to_limit(&mut self, now: Instant, out: &mut Released) {
        while self.bytes > self.limit {
            match self.evict_oldest(now) {
                Some(b) => out.push(b),
                None => return,
            }
        }
    }

    /// When the least recently cached block was cached (`None`: nothing is).
    fn oldest(&self) -> Option<Instant> {
        self.slots
            .iter()
            .flatten()
            .map(|&(_, _, since)| since)
            .min()
    }

    /// In a `fork()`ed child, on its first use: the inherited blocks are moved to `out`
    /// and the counters start from zero (Note [block cache]).
    fn adopt(&mut self, generation: u64, out: &mut Released) {
        if self.generation == generation {
            return;
        }
        for slot in &mut self.slots {
            if let Some((block, _, _)) = slot.take() {
                out.push(block);
            }
        }
        *self = BlockCache {
            generation,
            ..BlockCache::new(self.limit)
        };
    }

    pub(crate) fn stats(&self, now: Instant) -> CacheStats {
        CacheStats {
            bytes: self.bytes,
            blocks: self.slots.iter().flatten().count(),
            limit: self.limit,
            hits: self.hits,
            misses: self.misses,
            released_bytes: self.released_bytes,
            released_blocks: self.released_blocks,
            since_release: self.last_release.map(|t| now.saturating_duration_since(t)),
            oldest_idle: self.oldest().map(|t| now.saturating_duration_since(t)),
            decay: decay(),
        }
    }
}

static CACHE: Mutex<BlockCache> = Mutex::new(BlockCache::new(0));
static LIMIT_FROM_ENV: OnceLock<()> = OnceLock::new();

/// The default limit: a [`DEFAULT_SHARE`]th of the memory the process may use (the
/// smaller of physical memory and the cgroup's limit, see
/// [`memory_available`](super::alloc::memory_available)), or 1 GiB where it cannot be
/// told.
pub fn default_limit() -> usize {
    super::alloc::memory_available().map_or(FALLBACK_LIMIT, |m| m / DEFAULT_SHARE)
}

/// The process's cache, its limit read from `STRATA_CACHE_LIMIT` on first use; in a
/// `fork()`ed child the inherited blocks are moved to `out` first.
fn cache(out: &mut Released) -> MutexGuard<'static, BlockCache> {
    LIMIT_FROM_ENV.get_or_init(|| {
        // Before the lock is first taken: from then on a `fork()` waits for it (see
        // `fork_prepare`).
        crate::kernel::pool::register_fork_handlers();
        let limit = std::env::var("STRATA_CACHE_LIMIT")
            .ok()
            .and_then(|v| parse_bytes(&v))
            .unwrap_or_else(default_limit);
        lock().limit = limit;
        if let Some(d) = std::env::var("STRATA_CACHE_DECAY")
            .ok()
            .and_then(|v| Duration::try_from_secs_f64(v.trim().parse().ok()?).ok())
        {
            store_decay(d);
        }
    });
    let mut c = lock();
    c.adopt(crate::kernel::pool::fork_generation(), out);
    c
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
// The critical sections are a table update, so the fork waits at most that long. The
// reaper waits on its condition variable with the lock released, so it never holds up
// a fork; in the child it does not exist, and `REAPER_GENERATION` tells the child to
// start its own.

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

// ------------------------------------------------------------------------- the reaper

/// Wakes the reaper when the cache goes from empty to holding a block while the reaper
/// sleeps without a timeout.
static REAPER_WAKE: Condvar = Condvar::new();
/// Whether the reaper sleeps without a timeout (nothing was cached); read and written
/// under the cache's lock. A reaper in a timed wait is not woken for a new block: it
/// wakes when the block it waited for was due, finds the new one not yet due and waits
/// again. (Waking it on every put cost a loop that allocates and frees one large output
/// a context switch per call: a tenth of a 1 MiB float64 add.)
static REAPER_IDLE: AtomicBool = AtomicBool::new(false);
/// The fork generation whose process has a reaper thread (`u64::MAX`: none yet).
static REAPER_GENERATION: AtomicU64 = AtomicU64::new(u64::MAX);

/// Starts this process's reaper thread unless it has one.
fn ensure_reaper() {
    let generation = crate::kernel::pool::fork_generation();
    if REAPER_GENERATION.load(Ordering::Acquire) == generation
        || REAPER_GENERATION.swap(generation, Ordering::AcqRel) == generation
    {
        return;
    }
    // A process that cannot start a thread still has blocks expire on its calls into
    // the cache; that is all that is lost.
    let _ = std::thread::Builder::new()
        .name("strata-cache".into())
        .stack_size(64 << 10)
        .spawn(reap);
}

/// The reaper: sleeps until the oldest cached block is due (without a timeout while
/// nothing is cached), frees what expired, and asks the C heap to return its free pages.
fn reap() {
    loop {
        let mut out = Released::new();
        {
            let mut c = cache(&mut out);
            // Awake, holding the lock (also on a forked child's first pass, which may have
            // inherited the flag from a parent whose reaper slept).
            REAPER_IDLE.store(false, Ordering::Relaxed);
            loop {
                let now = Instant::now();
                let decay = decay();
                // When the oldest block is due (`None`: nothing cached, or a decay too long
                // to reach).
                match c.oldest().and_then(|t| t.checked_add(decay)) {
                    None => {
                        REAPER_IDLE.store(true, Ordering::Relaxed);
                        c = REAPER_WAKE.wait(c).unwrap_or_else(|e| e.into_inner());
                        REAPER_IDLE.store(false, Ordering::Relaxed);
                    }
                    Some(due) if due <= now => {
                        c.expire(now, decay, &mut out);
                        break;
                    }
                    Some(due) => {
                        c = REAPER_WAKE
                            .wait_timeout(c, due - now)
                            .map(|(g, _)| g)
                            .unwrap_or_else(|e| e.into_inner().0);
                    }
                }
            }
        }
        if out.free() > 0 {
            return_heap_pages();
        }
    }
}

/// Asks glibc to give the free pages of its heaps back to the system (blocks freed below
/// its mmap threshold stay in its heap otherwise). Elsewhere, nothing.
fn return_heap_pages() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` only reorganises the allocator's free memory; it takes the
    // allocator's own locks.
    unsafe {
        libc::malloc_trim(0);
    }
}

// ---------------------------------------------------------------------- the entries

/// A cached block of `size` bytes (see [`BlockCache::take`]), if there is one. Smaller
/// requests than [`CACHE_MIN`] return `None` without taking the lock.
pub(crate) fn take(size: usize) -> Option<Block> {
    if size < CACHE_MIN {
        return None;
    }
    let now = Instant::now();
    let mut out = Released::new();
    let got = {
        let mut c = cache(&mut out);
        c.expire(now, decay(), &mut out);
        c.take(size)
    };
    out.free();
    got
}

/// Keeps `block` in the cache, or frees it (and whatever the cache lets go of).
pub(crate) fn put(block: Block) {
    if block.size < CACHE_MIN {
        return super::alloc::free_block(block);
    }
    let now = Instant::now();
    let mut out = Released::new();
    let (filled, wake) = {
        let mut c = cache(&mut out);
        c.expire(now, decay(), &mut out);
        let was_empty = c.bytes == 0;
        c.put(block, now, &mut out);
        let filled = was_empty && c.bytes > 0;
        (filled, filled && REAPER_IDLE.load(Ordering::Relaxed))
    };
    if filled {
        ensure_reaper();
    }
    if wake {
        REAPER_WAKE.notify_one();
    }
    out.free();
}

/// The cache's counters and holdings.
pub fn cache_stats() -> CacheStats {
    let now = Instant::now();
    let mut out = Released::new();
    let s = cache(&mut out).stats(now);
    out.free();
    s
}

/// Sets the most bytes the cache may hold (0 turns it off) and frees what is over it.
/// Returns the previous limit.
pub fn set_cache_limit(bytes: usize) -> usize {
    let now = Instant::now();
    let mut out = Released::new();
    let old = {
        let mut c = cache(&mut out);
        let old = std::mem::replace(&mut c.limit, bytes);
        c.trim_to_limit(now, &mut out);
        old
    };
    out.free();
    old
}

/// Sets how long a cached block may sit unused before it is returned to the system
/// ([`DECAY`] by default; `Duration::ZERO` returns each block at the next call into the
/// cache or reaper pass, `Duration::MAX` never) and returns the previous value. Blocks
/// already idle for longer go at once.
pub fn set_cache_decay(decay: Duration) -> Duration {
    let mut out = Released::new();
    let old = {
        let c = cache(&mut out);
        let old = store_decay(decay);
        drop(c);
        old
    };
    // The reaper recomputes its wait with the new decay.
    REAPER_WAKE.notify_one();
    out.free();
    old
}

/// Stores `d` (saturated to `u64::MAX` nanoseconds, 584 years) as the decay; returns the
/// previous one.
fn store_decay(d: Duration) -> Duration {
    let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    Duration::from_nanos(DECAY_NS.swap(ns, Ordering::Relaxed))
}

/// Frees every cached block back to the system allocator (and the C heap's free pages
/// back to the system).
pub fn empty_cache() {
    let now = Instant::now();
    let mut out = Released::new();
    {
        let mut c = cache(&mut out);
        while let Some(b) = c.evict_oldest(now) {
            out.push(b);
        }
    }
    if out.free() > 0 {
        return_heap_pages();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MB: usize = 1 << 20;

    fn block(addr: usize, size: usize) -> Block {
        Block { addr, size }
    }

    /// Puts `b` at `now`, returning what the cache let go of.
    fn put(c: &mut BlockCache, b: Block, now: Instant) -> Vec<Block> {
        let mut out = Released::new();
        c.put(b, now, &mut out);
        out.as_slice().to_vec()
    }

    #[test]
    fn takes_the_smallest_block_that_fits_within_an_eighth() {
        let now = Instant::now();
        let mut c = BlockCache::new(64 * MB);
        for (addr, size) in [(1, 8 * MB), (2, 4 * MB), (3, 4 * MB + MB / 4), (4, 16 * MB)] {
            assert_eq!(put(&mut c, block(addr, size), now), []);
        }
        assert_eq!(c.take(4 * MB), Some(block(2, 4 * MB)));
        // 4.25 MiB is within 1/8 of 4 MiB; 8 MiB is not.
        assert_eq!(c.take(4 * MB), Some(block(3, 4 * MB + MB / 4)));
        assert_eq!(c.take(4 * MB), None);
        assert_eq!(c.take(15 * MB), Some(block(4, 16 * MB)));
        assert_eq!(c.take(9 * MB), None);
        let s = c.stats(now);
        assert_eq!((s.hits, s.misses, s.blocks, s.bytes), (3, 2, 1, 8 * MB));
        // Taken blocks were handed out, not returned to the system.
        assert_eq!((s.released_blocks, s.since_release), (0, None));
    }

    #[test]
    fn refuses_small_blocks_and_blocks_over_the_limit() {
        let now = Instant::now();
        let mut c = BlockCache::new(8 * MB);
        assert_eq!(put(&mut c, block(1, MB - 64), now), [block(1, MB - 64)]);
        assert_eq!(put(&mut c, block(2, 9 * MB), now), [block(2, 9 * MB)]);
        let mut off = BlockCache::new(0);
        assert_eq!(put(&mut off, block(3, 2 * MB), now), [block(3, 2 * MB)]);
        assert_eq!((c.stats(now).blocks, off.stats(now).blocks), (0, 0));
        // Never held, so never counted as released.
        assert_eq!(c.stats(now).released_blocks, 0);
    }

    #[test]
    fn evicts_the_oldest_blocks_to_make_room() {
        let now = Instant::now();
        let mut c = BlockCache::new(10 * MB);
        assert_eq!(put(&mut c, block(1, 4 * MB), now), []);
        assert_eq!(put(&mut c, block(2, 4 * MB), now), []);
        // 4 + 4 + 3 > 10: the first block goes, then the new one fits.
        assert_eq!(put(&mut c, block(3, 3 * MB), now), [block(1, 4 * MB)]);
        assert_eq!(c.stats(now).bytes, 7 * MB);
        // 4 + 3 + 9 > 10 and 3 + 9 > 10: both go, oldest first.
        let out = put(&mut c, block(4, 9 * MB), now);
        assert_eq!(out, [block(2, 4 * MB), block(3, 3 * MB)]);
        let s = c.stats(now);
        assert_eq!((s.bytes, s.blocks, s.released_blocks), (9 * MB, 1, 3));
        assert_eq!(s.released_bytes, (11 * MB) as u64);
        assert_eq!(c.take(9 * MB), Some(block(4, 9 * MB)));
    }

    #[test]
    fn a_full_table_evicts_too() {
        let now = Instant::now();
        let mut c = BlockCache::new(usize::MAX);
        for i in 0..SLOTS {
            assert_eq!(put(&mut c, block(i + 1, MB), now), []);
        }
        assert_eq!(put(&mut c, block(99, MB), now), [block(1, MB)]);
        assert_eq!(c.stats(now).blocks, SLOTS);
    }

    #[test]
    fn blocks_idle_past_the_decay_expire_oldest_first() {
        let t0 = Instant::now();
        let mut c = BlockCache::new(64 * MB);
        let ms = Duration::from_millis;
        assert_eq!(put(&mut c, block(1, 2 * MB), t0), []);
        assert_eq!(put(&mut c, block(2, 3 * MB), t0 + ms(400)), []);
        assert_eq!(put(&mut c, block(3, 4 * MB), t0 + ms(800)), []);
        let s = c.stats(t0 + ms(900));
        assert_eq!(s.oldest_idle, Some(ms(900)));
        assert_eq!(s.decay, DECAY);
        let expire = |c: &mut BlockCache, at: Duration| {
            let mut out = Released::new();
            c.expire(t0 + at, DECAY, &mut out);
            out.as_slice().to_vec()
        };
        assert_eq!(expire(&mut c, ms(999)), []);
        assert_eq!(expire(&mut c, ms(1000)), [block(1, 2 * MB)]);
        // A block taken and cached again starts its idle time afresh.
        assert_eq!(c.take(3 * MB), Some(block(2, 3 * MB)));
        assert_eq!(put(&mut c, block(2, 3 * MB), t0 + ms(1500)), []);
        assert_eq!(expire(&mut c, ms(1900)), [block(3, 4 * MB)]);
        let s = c.stats(t0 + ms(2000));
        assert_eq!((s.blocks, s.bytes, s.released_blocks), (1, 3 * MB, 2));
        assert_eq!(s.released_bytes, (6 * MB) as u64);
        assert_eq!(s.since_release, Some(ms(100)));
        assert_eq!(s.oldest_idle, Some(ms(500)));
        assert_eq!(expire(&mut c, ms(2500)), [block(2, 3 * MB)]);
        let s = c.stats(t0 + ms(2500));
        assert_eq!((s.blocks, s.bytes, s.oldest_idle), (0, 0, None));
    }

    #[test]
    fn a_lower_limit_evicts_down_to_it() {
        let now = Instant::now();
        let mut c = BlockCache::new(64 * MB);
        for i in 0..4 {
            assert_eq!(put(&mut c, block(i + 1, 4 * MB), now), []);
        }
        c.limit = 9 * MB;
        let mut out = Released::new();
        c.trim_to_limit(now, &mut out);
        assert_eq!(out.as_slice(), [block(1, 4 * MB), block(2, 4 * MB)]);
        assert_eq!(c.stats(now).bytes, 8 * MB);
    }

    #[test]
    fn a_new_generation_adopts_an_empty_table() {
        let now = Instant::now();
        let mut c = BlockCache::new(64 * MB);
        assert_eq!(put(&mut c, block(1, 2 * MB), now), []);
        assert_eq!(put(&mut c, block(2, 2 * MB), now), []);
        let _ = c.take(2 * MB);
        let _ = c.take(2 * MB);
        assert_eq!(put(&mut c, block(3, 5 * MB), now), []);
        let mut out = Released::new();
        c.adopt(0, &mut out);
        assert_eq!(out.as_slice(), []);
        c.adopt(1, &mut out);
        // The inherited blocks are handed back to be freed, not counted as released.
        assert_eq!(out.as_slice(), [block(3, 5 * MB)]);
        let s = c.stats(now);
        assert_eq!((s.bytes, s.blocks, s.hits, s.misses), (0, 0, 0, 0));
        assert_eq!((s.released_blocks, s.limit), (0, 64 * MB));
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
