//! The per-storage reader/writer borrow (invariant S4 of [`Storage`]).
//!
//! Every kernel borrows the storages it touches for the duration of the op: exclusively
//! for the storage it writes, shared for the ones it only reads. Borrows from different
//! threads wait for each other, so writes through one view never race reads through
//! another. A borrow that conflicts with one the *same* thread already holds would wait
//! for ever, so it is an [`Error::Borrow`] instead. An op takes all its borrows at once, in
//! storage-id order, so ops on several storages cannot deadlock each other.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};

use smallvec::SmallVec;

use super::Storage;
use crate::error::{Error, Result};
use crate::kernel::pool::fork_generation;

/// [`BorrowCell::word`]: the readers, in the low bits.
const READERS: u64 = (1 << 32) - 1;
/// [`BorrowCell::word`]: a writer holds the storage.
const WRITER: u64 = 1 << 32;
/// [`BorrowCell::word`]: threads may be blocked in `freed.wait`, so a release must wake
/// them (the futex condvar's `notify_all` is a system call even when nobody waits).
const WAITERS: u64 = 1 << 33;

/// The borrow state of one storage.
///
/// A borrow that does not conflict is one compare-and-swap on `word` and its release one
/// atomic update (the mutex's lock and unlock around plain counters were four, most of
/// a small op's borrow cost); only a conflict (waiting) and the first touch after a fork
/// take the mutex.
pub(crate) struct BorrowCell {
    /// Readers (`READERS` bits), `WRITER`, `WAITERS`.
    word: AtomicU64,
    /// The fork generation (`kernel::pool::fork_generation`) `word` belongs to.
    generation: AtomicU64,
    /// Threads blocked in `freed.wait`.
    waiting: Mutex<usize>,
    freed: Condvar,
}

impl Default for BorrowCell {
    fn default() -> Self {
        BorrowCell {
            word: AtomicU64::new(0),
            generation: AtomicU64::new(fork_generation()),
            waiting: Mutex::new(0),
            freed: Condvar::new(),
        }
    }
}

/// Whether a borrow (`write`: exclusive) can be added to state `word`.
fn free_for(word: u64, write: bool) -> bool {
    if write {
        word & (READERS | WRITER) == 0
    } else {
        word & WRITER == 0 && word & READERS < READERS
    }
}

impl BorrowCell {
    fn lock(&self) -> MutexGuard<'_, usize> {
        // A plain counter updated in single statements: a poisoned lock still holds a
        // consistent value.
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The counts of this thread's borrows of storage `id`, in `held`.
    fn own(id: u64, held: &[(u64, bool, usize)]) -> u64 {
        match held.iter().find(|(i, _, _)| *i == id) {
            Some(&(_, true, _)) => WRITER,
            Some(&(_, false, n)) => n as u64,
            None => 0,
        }
    }

    /// In a `fork()`ed child, counts made before the fork name threads that do not exist
    /// there: a borrow another thread held at the fork would block this storage for ever.
    /// They are rebuilt from the one thread that survived (the forking one), whose own
    /// borrows are in `held`. Under the lock; `false` when already current.
    fn refresh(&self, id: u64, held: &[(u64, bool, usize)], waiting: &mut usize) -> bool {
        let generation = fork_generation();
        if self.generation.load(Ordering::Acquire) == generation {
            return false;
        }
        *waiting = 0;
        self.word.store(Self::own(id, held), Ordering::Relaxed);
        self.generation.store(generation, Ordering::Release);
        true
    }

    /// Takes a borrow without waiting, if the state allows it now.
    #[inline]
    fn try_take(&self, write: bool) -> bool {
        if self.generation.load(Ordering::Acquire) != fork_generation() {
            return false;
        }
        let word = self.word.load(Ordering::Relaxed);
        free_for(word, write)
            && self
                .word
                .compare_exchange(
                    word,
                    if write { word | WRITER } else { word + 1 },
                    Ordering::Acquire,
                    Ordering::Relaxed,
                )
                .is_ok()
    }

    /// Takes a borrow, waiting for other threads' conflicting ones to go.
    fn take(&self, id: u64, write: bool, held: &[(u64, bool, usize)]) {
        if self.try_take(write) {
            return;
        }
        let mut waiting = self.lock();
        self.refresh(id, held, &mut waiting);
        loop {
            let word = self.word.load(Ordering::Acquire);
            if free_for(word, write) {
                let new = if write { word | WRITER } else { word + 1 };
                if self
                    .word
                    .compare_exchange(word, new, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
                {
                    return;
                }
                continue;
            }
            // Announce the wait, then look again: a release that came before the flag
            // did not wake anyone; one after it finds the flag and, to wake us, must take
            // the lock, which we hold until `wait` releases it.
            *waiting += 1;
            let word = self.word.fetch_or(WAITERS, Ordering::AcqRel) | WAITERS;
            if !free_for(word, write) {
                waiting = self.freed.wait(waiting).unwrap_or_else(|e| e.into_inner());
            }
            *waiting -= 1;
            if *waiting == 0 {
                self.word.fetch_and(!WAITERS, Ordering::AcqRel);
            }
        }
    }

    /// Releases a borrow of storage `id` (`held`: this thread's record, which no longer
    /// lists it), waking waiters if there are any.
    fn release(&self, id: u64, write: bool, held: &[(u64, bool, usize)]) {
        let undo = |word: &AtomicU64| {
            if write {
                word.fetch_and(!WRITER, Ordering::Release)
            } else {
                word.fetch_sub(1, Ordering::Release)
            }
        };
        if self.generation.load(Ordering::Acquire) == fork_generation() {
            if undo(&self.word) & WAITERS != 0 {
                let _waiting = self.lock();
                self.freed.notify_all();
            }
            return;
        }
        // First touch since a fork: the counts are rebuilt from the record, in which this
        // borrow is released already.
        let mut waiting = self.lock();
        if !self.refresh(id, held, &mut waiting) {
            undo(&self.word);
        }
        if *waiting > 0 {
            self.freed.notify_all();
        }
    }
}

thread_local! {
    /// Borrows this thread holds: (storage id, exclusive, count).
    static HELD: RefCell<Vec<(u64, bool, usize)>> = const { RefCell::new(Vec::new()) };
}

fn mode(write: bool) -> &'static str {
    if write {
        "mutably"
    } else {
        "immutably"
    }
}

/// Borrows held for one op; released on drop, on the thread that took them (the guard is
/// neither `Send` nor `Sync`, since the per-thread record of held borrows must match).
#[derive(Debug)]
pub struct BorrowGuard<'a> {
    /// The storages, by reference: the caller's tensors outlive the op, and a counted
    /// handle per storage (an atomic increment and decrement each) was most of a small
    /// op's borrow cost.
    held: SmallVec<[(&'a Storage, bool); 4]>,
    _not_send: std::marker::PhantomData<*const ()>,
}

/// Borrows every `(storage, exclusive)` pair at once. A storage listed twice is borrowed
/// once, exclusively if any entry asks for it. A slice of a storage
/// ([`Storage::slice_bytes`]) is borrowed as the storage it views.
///
/// # Errors
/// [`Error::Borrow`] when this thread already holds a conflicting borrow of one of them.
pub fn acquire<'a>(op: &'static str, wants: &[(&'a Storage, bool)]) -> Result<BorrowGuard<'a>> {
    let mut list: SmallVec<[(&'a Storage, bool); 4]> = SmallVec::new();
    for &(s, w) in wants {
        let s = s.borrow_root();
        match list.iter_mut().find(|(t, _)| t.same(s)) {
            Some(entry) => entry.1 |= w,
            None => list.push((s, w)),
        }
    }
    if list.len() > 1 {
        list.sort_by_key(|(s, _)| s.id());
    }
    // The thread's record is read and updated once per op (a thread-local is a call in a
    // shared library), and kept borrowed while the cells are taken: nothing below touches
    // it any other way.
    HELD.with(|held| {
        let mut held = held.borrow_mut();
        for (s, w) in &list {
            if let Some(&(_, hw, _)) = held.iter().find(|(id, _, _)| *id == s.id()) {
                if hw || *w {
                    return Err(Error::Borrow {
                        op,
                        held: mode(hw),
                        wanted: mode(*w),
                    });
                }
            }
        }
        // Waiting cannot fail, so every borrow in `list` is taken before it becomes the
        // guard. A cell first touched since a fork is rebuilt from the record as it was
        // before this op (the new borrows are listed after).
        for &(s, w) in &list {
            s.borrow_cell().take(s.id(), w, &held);
        }
        for &(s, w) in &list {
            match held.iter_mut().find(|(id, _, _)| *id == s.id()) {
                Some(entry) => entry.2 += 1,
                None => held.push((s.id(), w, 1)),
            }
        }
        Ok(())
    })?;
    Ok(BorrowGuard {
        held: list,
        _not_send: std::marker::PhantomData,
    })
}

impl Drop for BorrowGuard<'_> {
    fn drop(&mut self) {
        // The record first (one thread-local access for the whole op), then the cells: a
        // cell first touched since a fork is rebuilt from the record, which then no longer
        // lists this borrow, so it is released already.
        HELD.with(|held| {
            let mut held = held.borrow_mut();
            for (s, _) in &self.held {
                if let Some(i) = held.iter().position(|(id, _, _)| *id == s.id()) {
                    held[i].2 -= 1;
                    if held[i].2 == 0 {
                        held.swap_remove(i);
                    }
                }
            }
            for (s, w) in self.held.drain(..) {
                s.borrow_cell().release(s.id(), w, &held);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_thread_conflicts_are_errors() {
        let s = Storage::zeroed(8).unwrap();
        let r1 = acquire("a", &[(&s, false)]).unwrap();
        let r2 = acquire("b", &[(&s, false)]).unwrap();
        let e = acquire("fill_", &[(&s, true)]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "fill_: storage is already borrowed immutably by this thread; cannot borrow it mutably"
        );
        drop(r1);
        drop(r2);
        let w = acquire("fill_", &[(&s, true), (&s, false)]).unwrap();
        assert!(acquire("x", &[(&s, false)]).is_err());
        drop(w);
        acquire("x", &[(&s, true)]).unwrap();
    }

    #[test]
    fn other_threads_wait() {
        let s = Storage::zeroed(8).unwrap();
        let w = acquire("w", &[(&s, true)]).unwrap();
        let s2 = s.clone();
        let t = std::thread::spawn(move || {
            let _r = acquire("r", &[(&s2, false)]).unwrap();
        });
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(!t.is_finished());
        drop(w);
        t.join().unwrap();
    }

    /// Readers and writers on several threads: a writer is always alone, and every waiter
    /// is woken (a lost wake-up would hang this test).
    #[test]
    fn contended_borrows_exclude_and_wake() {
        use std::sync::atomic::{AtomicIsize, Ordering};
        use std::sync::Arc;
        let s = Storage::zeroed(8).unwrap();
        // > 0: that many readers inside; -1: one writer inside.
        let inside = Arc::new(AtomicIsize::new(0));
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let (s, inside) = (s.clone(), inside.clone());
                std::thread::spawn(move || {
                    for i in 0..2000 {
                        let write = (i + t) % 3 == 0;
                        let _g = acquire("stress", &[(&s, write)]).unwrap();
                        if write {
                            assert_eq!(inside.swap(-1, Ordering::SeqCst), 0);
                            std::hint::spin_loop();
                            assert_eq!(inside.swap(0, Ordering::SeqCst), -1);
                        } else {
                            assert!(inside.fetch_add(1, Ordering::SeqCst) >= 0);
                            std::hint::spin_loop();
                            assert!(inside.fetch_sub(1, Ordering::SeqCst) >= 1);
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(*s.borrow_cell().lock(), 0);
        assert_eq!(s.borrow_cell().word.load(Ordering::Relaxed), 0);
    }
    /// Ops borrowing two storages at once, in every mode and either order, on several
    /// threads: each storage's writer is alone, nothing deadlocks (a hang fails the
    /// test), and every count returns to zero.
    #[test]
    fn two_storage_borrows_exclude_without_deadlock() {
        use std::sync::atomic::AtomicIsize;
        use std::sync::Arc;
        let s = [Storage::zeroed(8).unwrap(), Storage::zeroed(8).unwrap()];
        let inside: Arc<[AtomicIsize; 2]> = Arc::new([AtomicIsize::new(0), AtomicIsize::new(0)]);
        let threads: Vec<_> = (0..4usize)
            .map(|t| {
                let (s, inside) = (s.clone(), inside.clone());
                std::thread::spawn(move || {
                    for i in 0..3000usize {
                        let k = (i * 7 + t) % 8;
                        let (first, w0, w1) = (k & 1, k & 2 != 0, k & 4 != 0);
                        let (a, b) = (&s[first], &s[1 - first]);
                        let _g = acquire("stress2", &[(a, w0), (b, w1)]).unwrap();
                        for (slot, w) in [(first, w0), (1 - first, w1)] {
                            if w {
                                assert_eq!(inside[slot].swap(-1, Ordering::SeqCst), 0);
                            } else {
                                assert!(inside[slot].fetch_add(1, Ordering::SeqCst) >= 0);
                            }
                        }
                        std::hint::spin_loop();
                        for (slot, w) in [(first, w0), (1 - first, w1)] {
                            if w {
                                assert_eq!(inside[slot].swap(0, Ordering::SeqCst), -1);
                            } else {
                                assert!(inside[slot].fetch_sub(1, Ordering::SeqCst) >= 1);
                            }
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        for x in &s {
            assert_eq!(*x.borrow_cell().lock(), 0);
            assert_eq!(x.borrow_cell().word.load(Ordering::Relaxed), 0);
        }
    }
}
