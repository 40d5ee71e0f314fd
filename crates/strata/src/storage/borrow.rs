//! The per-storage reader/writer borrow (invariant S4 of [`Storage`]).
//!
//! Every kernel borrows the storages it touches for the duration of the op: exclusively
//! for the storage it writes, shared for the ones it only reads. Borrows from different
//! threads wait for each other, so writes through one view never race reads through
//! another. A borrow that conflicts with one the *same* thread already holds would wait
//! for ever, so it is an [`Error::Borrow`] instead. An op takes all its borrows at once, in
//! storage-id order, so ops on several storages cannot deadlock each other.

use std::cell::RefCell;
use std::sync::{Condvar, Mutex, MutexGuard};

use smallvec::SmallVec;

use super::Storage;
use crate::error::{Error, Result};

#[derive(Default)]
struct State {
    readers: usize,
    writer: bool,
    /// Threads blocked in `freed.wait`: a release wakes them only if there are any (the
    /// futex condvar's `notify_all` is a system call even when nobody waits, which was a
    /// fifth of a small op's time).
    waiting: usize,
    /// The fork generation (`kernel::pool::fork_generation`) these counts belong to.
    generation: u64,
}

impl State {
    /// In a `fork()`ed child, counts made before the fork name threads that do not exist
    /// there: a borrow another thread held at the fork would block this storage for ever.
    /// They are rebuilt from the one thread that survived (the forking one), whose own
    /// borrows are in `HELD`. One atomic load when nothing forked.
    fn refresh(&mut self, id: u64) {
        let generation = crate::kernel::pool::fork_generation();
        if self.generation == generation {
            return;
        }
        self.generation = generation;
        self.waiting = 0;
        let (writer, readers) =
            HELD.with(
                |held| match held.borrow().iter().find(|(i, _, _)| *i == id) {
                    Some(&(_, true, _)) => (true, 0),
                    Some(&(_, false, n)) => (false, n),
                    None => (false, 0),
                },
            );
        self.writer = writer;
        self.readers = readers;
    }
}

/// The borrow state of one storage.
#[derive(Default)]
pub(crate) struct BorrowCell {
    state: Mutex<State>,
    freed: Condvar,
}

impl BorrowCell {
    fn lock(&self) -> MutexGuard<'_, State> {
        // The state is a pair of plain counters updated in single statements, so a
        // poisoned lock still holds consistent values.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
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
pub struct BorrowGuard {
    held: SmallVec<[(Storage, bool); 4]>,
    _not_send: std::marker::PhantomData<*const ()>,
}

/// Borrows every `(storage, exclusive)` pair at once. A storage listed twice is borrowed
/// once, exclusively if any entry asks for it.
///
/// # Errors
/// [`Error::Borrow`] when this thread already holds a conflicting borrow of one of them.
pub fn acquire(op: &'static str, wants: &[(&Storage, bool)]) -> Result<BorrowGuard> {
    let mut list: SmallVec<[(Storage, bool); 4]> = SmallVec::new();
    for &(s, w) in wants {
        match list.iter_mut().find(|(t, _)| t.same(s)) {
            Some(entry) => entry.1 |= w,
            None => list.push((s.clone(), w)),
        }
    }
    list.sort_by_key(|(s, _)| s.id());
    HELD.with(|held| {
        let held = held.borrow();
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
        Ok(())
    })?;
    // Waiting cannot fail, so every borrow in `list` is taken before it becomes the guard.
    for &(ref s, w) in &list {
        {
            let cell = s.borrow_cell();
            let mut st = cell.lock();
            st.refresh(s.id());
            while st.writer || (w && st.readers > 0) {
                st.waiting += 1;
                st = cell.freed.wait(st).unwrap_or_else(|e| e.into_inner());
                st.waiting -= 1;
            }
            if w {
                st.writer = true;
            } else {
                st.readers += 1;
            }
        }
        HELD.with(|held| {
            let mut held = held.borrow_mut();
            match held.iter_mut().find(|(id, _, _)| *id == s.id()) {
                Some(entry) => entry.2 += 1,
                None => held.push((s.id(), w, 1)),
            }
        });
    }
    Ok(BorrowGuard {
        held: list,
        _not_send: std::marker::PhantomData,
    })
}

impl Drop for BorrowGuard {
    fn drop(&mut self) {
        for (s, w) in self.held.drain(..) {
            HELD.with(|held| {
                let mut held = held.borrow_mut();
                if let Some(i) = held.iter().position(|(id, _, _)| *id == s.id()) {
                    held[i].2 -= 1;
                    if held[i].2 == 0 {
                        held.swap_remove(i);
                    }
                }
            });
            let cell = s.borrow_cell();
            let mut st = cell.lock();
            if st.generation != crate::kernel::pool::fork_generation() {
                // First touch since a fork: the counts are rebuilt from `HELD`, which no
                // longer lists this borrow (updated above), so it is released already.
                st.refresh(s.id());
            } else if w {
                st.writer = false;
            } else {
                st.readers -= 1;
            }
            let wake = st.waiting > 0;
            drop(st);
            if wake {
                cell.freed.notify_all();
            }
        }
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
        assert_eq!(s.borrow_cell().lock().waiting, 0);
    }
}
