//! The one entry to parallel work, and what keeps it working in a `fork()`ed child.
//!
//! Every kernel that may split work across threads (the loop engine, reductions, scans,
//! arg-reductions, matmul and `gemm`) does so only inside [`parallel`]. In a process that
//! never forked, [`parallel`] calls its closure on the calling thread with the current
//! pool's thread count (rayon's global pool, or the pool the caller installed), as
//! before: the cost is one `Once` check and one atomic load.
//!
//! After a `fork()` only the forking thread exists in the child, so rayon's global pool
//! there is a table of workers that do not exist: the first job handed to it would wait
//! for ever (a `multiprocessing` child with the fork start method, a `Pool`, a data
//! loader). A `pthread_atfork` child handler, registered before strata first goes
//! parallel, marks the process as forked; from then on [`parallel`] runs its closure in
//! a fresh pool built in that process (once; a child of the child builds its own), so
//! the child gets full parallelism and never touches the dead pool. If no pool can be
//! built there (no threads left), the closure runs on the calling thread with a thread
//! count of 1, and every kernel then stays serial without calling rayon at all.
//!
//! Kernels must therefore (a) never call rayon outside [`parallel`] and (b) when handed a
//! thread count of 1, not call rayon at all. Debug builds check (a) in forked children
//! through [`threads`].

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};
use std::sync::Once;

/// Set in a `fork()`ed child (by the atfork handler) and never cleared.
static FORKED: AtomicBool = AtomicBool::new(false);
/// The pool built in this forked process, or null (reset in each child: the pool of the
/// parent is leaked there, since its workers do not exist to be shut down).
static CHILD_POOL: AtomicPtr<rayon::ThreadPool> = AtomicPtr::new(std::ptr::null_mut());
static REGISTER: Once = Once::new();
/// Bumped in each `fork()`ed child: state counted before the fork (storage borrows) is
/// stale when its generation differs.
static FORK_GENERATION: AtomicU64 = AtomicU64::new(0);

/// Runs in the child right after `fork()`, where only async-signal-safe work is allowed:
/// two atomic stores, then the block cache's lock is handed back (see
/// [`crate::storage::cache`]).
#[cfg(unix)]
extern "C" fn on_fork_child() {
    FORKED.store(true, Ordering::SeqCst);
    FORK_GENERATION.fetch_add(1, Ordering::SeqCst);
    CHILD_POOL.store(std::ptr::null_mut(), Ordering::SeqCst);
    crate::storage::fork_release();
}

#[cfg(unix)]
extern "C" fn on_fork_prepare() {
    crate::storage::fork_prepare();
}

#[cfg(unix)]
extern "C" fn on_fork_parent() {
    crate::storage::fork_release();
}

/// Registers the fork handlers (once per process; a child inherits them). Called before
/// the first parallel op and the block cache's first use, so before rayon's global pool
/// exists or the cache's lock can be held.
pub(crate) fn register_fork_handlers() {
    REGISTER.call_once(|| {
        #[cfg(unix)]
        // SAFETY: the handlers are `extern "C"` functions that live for the whole program
        // and only do what is allowed around `fork()` (atomic stores; locking and
        // unlocking one mutex before and after it, on the forking thread).
        unsafe {
            // ENOMEM is the only failure; a child would then fall back to nothing, so
            // there is nothing better to do than to go on (it cannot happen in practice
            // this early).
            let _ = libc::pthread_atfork(
                Some(on_fork_prepare),
                Some(on_fork_parent),
                Some(on_fork_child),
            );
        }
    });
}

/// How many `fork()`s separate this process from the one that registered the handlers.
#[inline]
pub(crate) fn fork_generation() -> u64 {
    FORK_GENERATION.load(Ordering::Relaxed)
}

/// True in a `fork()`ed child (of a process where strata registered its handlers).
#[inline]
pub(crate) fn forked() -> bool {
    FORKED.load(Ordering::Relaxed)
}

/// The pool of this forked process, built on first use; `None` if it cannot be built.
fn child_pool() -> Option<&'static rayon::ThreadPool> {
    let p = CHILD_POOL.load(Ordering::Acquire);
    if !p.is_null() {
        // SAFETY: a non-null pointer came from `Box::into_raw` below and is never freed
        // (a fork leaks it in the child; nothing else resets it).
        return Some(unsafe { &*p });
    }
    // As many threads as the parent's pool had (the global registry's count is a plain
    // field of it: reading it does not touch its dead workers).
    let n = rayon::current_num_threads().max(1);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .thread_name(|i| format!("strata-{i}"))
        .build()
        .ok()?;
    let fresh = Box::into_raw(Box::new(pool));
    match CHILD_POOL.compare_exchange(
        std::ptr::null_mut(),
        fresh,
        Ordering::AcqRel,
        Ordering::Acquire,
    ) {
        // SAFETY: `fresh` is ours, published above and never freed.
        Ok(_) => Some(unsafe { &*fresh }),
        Err(other) => {
            // Another thread built one first: use it, shut ours down.
            // SAFETY: `fresh` was never published, so this is its only owner.
            drop(unsafe { Box::from_raw(fresh) });
            // SAFETY: as for `p` above.
            Some(unsafe { &*other })
        }
    }
}

/// Runs `f(threads)` where its rayon calls reach live workers: `threads` is the number of
/// threads `f` may split its work across (1: run serially and call no rayon API).
///
/// Call it only for work large enough to go parallel; small work calls its serial path
/// directly.
#[inline]
pub(crate) fn parallel<R: Send>(f: impl FnOnce(usize) -> R + Send) -> R {
    register_fork_handlers();
    if !forked() {
        return f(rayon::current_num_threads());
    }
    // In a forked child, even a thread that was a rayon worker in the parent (a fork from
    // inside a parallel job) belongs to a dead pool: always go through this process's
    // own (`install` runs `f` directly when already on one of its workers).
    match child_pool() {
        Some(pool) => pool.install(|| f(rayon::current_num_threads())),
        None => f(1),
    }
}

/// The thread count of the pool a kernel is running in: for kernels inside
/// [`parallel`], which passes it; debug builds check that, in a forked child, the caller
/// really is on a live pool's worker.
#[inline]
pub(crate) fn threads() -> usize {
    debug_assert!(
        !forked() || rayon::current_thread_index().is_some(),
        "a kernel reached rayon outside kernel::pool::parallel in a forked child"
    );
    rayon::current_num_threads()
}
