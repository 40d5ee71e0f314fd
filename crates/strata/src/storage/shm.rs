//! Shared-memory storage: the bytes live in a `memfd` (the default) or a named POSIX
//! shared-memory segment, mapped `MAP_SHARED`, so other processes can map the same pages.
//!
//! A shared storage's backing is an [`Owner::Shared`] holding a [`SharedSegment`]: the
//! mapping, its identity (the file's `(st_dev, st_ino)`), and — within a per-process budget
//! — the open file descriptor used to send it on. See Note [shared memory lifetime] for
//! who frees what, and Note [fd budget] for why a received storage usually holds no fd.
//!
//! Note [shared memory lifetime]
//! ------------------------------
//! *memfd (the fd strategy).* A memfd is an anonymous file: it has no name anywhere, and
//! the kernel frees it when its last fd and its last mapping are gone. It is sealed with
//! `F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL`, so no peer can truncate it under another
//! process's mapping (which would turn reads into SIGBUS); receivers refuse unsealed
//! memfds. Killing any process at any step therefore leaks nothing: the kernel closes
//! the dead process's fds and mappings, including fds in flight inside a Unix socket
//! (the socket's buffer is freed with its last end). There is nothing in `/dev/shm`.
//!
//! *Named segments (the name strategy, for when fds cannot be passed).* A segment is a
//! file `/dev/shm/strata-<pid>-<counter>-<random>` created `O_EXCL`, mode 0600, by the
//! process `<pid>` (its *base name*). Every name strata makes embeds the pid of the process
//! responsible for unlinking it. The protocol:
//!
//! 1. The creator keeps the base name while its storage lives, and unlinks it when the
//!    storage drops (the mapping keeps the pages alive for everyone who mapped them).
//! 2. Each send makes a fresh *send name*, a hard link to the base name made by the sender
//!    (`strata-<sender pid>-…`), and records it as pending in the sender.
//! 3. The receiver opens the send name, unlinks it at once (each send has exactly one
//!    intended receiver), maps it and closes the fd.
//! 4. A process unlinks its still-pending send names, and the base names of its live
//!    segments, when it exits normally
//!    ([`unlink_pending_names`]; the Python package registers it with `atexit`).
//! 5. Without a daemon, [`sweep_stale_names`] unlinks every `strata-<pid>-…` name whose
//!    process is dead; it runs when a process selects the name strategy.
//!
//! What a `SIGKILL` leaves at each step:
//!
//! | killed                | step                         | left in `/dev/shm` | removed by |
//! |-----------------------|------------------------------|--------------------|------------|
//! | creator               | before `shm_open`            | nothing            | —          |
//! | creator               | between `shm_open` and drop  | base name          | sweep (5)  |
//! | sender                | after the send name is made  | send name          | receiver (3), else sweep (5) |
//! | receiver              | before opening the send name | send name          | sender's exit (4), else sweep (5) |
//! | receiver              | after opening                | nothing            | —          |
//! | sender and receiver   | between (2) and (3)          | send name          | sweep (5)  |
//!
//! The pages themselves are never leaked once every name is gone: they are freed with the
//! last mapping. Named segments cannot be sealed (only memfds can), so a peer running as
//! the same user could truncate one; the 0600 mode keeps other users out. A pid that is
//! reused before the sweep runs keeps its names until the new process exits.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::os::fd::{AsFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};

use rustix::fs::{MemfdFlags, Mode, OFlags, SealFlags};
use rustix::mm::{MapFlags, ProtFlags};

use super::{alloc, Backing, Inner, Owner, Storage};
use crate::error::{Error, Result};

/// How a shared segment is reached from another process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ShmKind {
    /// An anonymous, sealed `memfd`, passed as a file descriptor (`SCM_RIGHTS`, fd
    /// inheritance). Nothing can leak, whoever is killed.
    Memfd,
    /// A named POSIX shared-memory segment in `/dev/shm`, opened by name (for when fds
    /// cannot be passed). See Note [shared memory lifetime].
    Named,
}

/// The identity of a segment: its file's `(st_dev, st_ino)`, the same in every process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SegmentId {
    /// `st_dev`.
    pub dev: u64,
    /// `st_ino`.
    pub ino: u64,
}

pub(crate) fn os_err(op: &'static str, what: &str, e: rustix::io::Errno) -> Error {
    let hint = if e == rustix::io::Errno::MFILE || e == rustix::io::Errno::NFILE {
        " (too many open files: raise the limit with `ulimit -n`)"
    } else {
        ""
    };
    Error::Resource {
        op,
        msg: format!("{what}: {}{hint}", std::io::Error::from(e)),
    }
}

// Note [fd budget]: a process keeps a segment's fd open only while fewer than a quarter of
// its fd limit (RLIMIT_NOFILE) are kept this way; beyond that the fd is closed right after
// mapping (the mapping alone keeps the pages alive) and reopened through
// `/proc/self/map_files` when the storage is sent on. So receiving and keeping any number
// of tensors never exhausts fds (PyTorch's "too many open files"), and ordinary programs
// never need the reopen.
static KEPT_FDS: AtomicUsize = AtomicUsize::new(0);

pub(crate) fn fd_budget() -> usize {
    static BUDGET: OnceLock<usize> = OnceLock::new();
    *BUDGET.get_or_init(|| {
        let lim = rustix::process::getrlimit(rustix::process::Resource::Nofile);
        let cur = lim.current.unwrap_or(4096).min(1 << 20) as usize;
        (cur / 4).clamp(8, 4096)
    })
}

/// Number of segment fds this process keeps open (see Note [fd budget]).
pub fn kept_fd_count() -> usize {
    KEPT_FDS.load(Ordering::Relaxed)
}

/// An fd counted against the budget.
#[derive(Debug)]
pub(crate) struct KeptFd(pub(crate) OwnedFd);

impl KeptFd {
    pub(crate) fn try_keep(fd: OwnedFd) -> Option<KeptFd> {
        let budget = fd_budget();
        KEPT_FDS
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < budget).then_some(n + 1)
            })
            .ok()
            .map(|_| KeptFd(fd))
    }
}

impl Drop for KeptFd {
    fn drop(&mut self) {
        KEPT_FDS.fetch_sub(1, Ordering::AcqRel);
    }
}

/// One mapping of a shared-memory file: what a shared storage's owner holds.
pub struct SharedSegment {
    ptr: NonNull<u8>,
    /// Bytes mapped (0 for an empty segment, which the kernel refuses to map).
    map_len: usize,
    writable: bool,
    id: SegmentId,
    kind: ShmKind,
    fd: Mutex<Option<KeptFd>>,
    /// The base name of a named segment (without the leading '/').
    name: Option<String>,
    /// True in the process that created the base name: it unlinks it on drop.
    owns_name: bool,
}

// SAFETY: the segment is a mapping address plus plain data; the bytes are only touched
// through the storage, whose borrow synchronises access (S4).
unsafe impl Send for SharedSegment {}
// SAFETY: as above; `&SharedSegment` exposes no bytes.
unsafe impl Sync for SharedSegment {}

impl fmt::Debug for SharedSegment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedSegment")
            .field("kind", &self.kind)
            .field("id", &self.id)
            .field("len", &self.map_len)
            .field("name", &self.name)
            .finish()
    }
}

impl SharedSegment {
    /// The identity shared by every process that maps this segment.
    pub fn id(&self) -> SegmentId {
        self.id
    }

    /// memfd or named.
    pub fn kind(&self) -> ShmKind {
        self.kind
    }

    /// The base name of a named segment.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// True while this process keeps the segment's fd open (see Note [fd budget]).
    pub fn holds_fd(&self) -> bool {
        lock(&self.fd).is_some()
    }

    /// A new fd for the segment, to send: a dup of the kept fd, else a reopen through
    /// `/proc/self/map_files` (see Note [fd budget]).
    pub fn fd_for_send(&self, op: &'static str) -> Result<OwnedFd> {
        if let Some(fd) = lock(&self.fd).as_ref() {
            return rustix::io::fcntl_dupfd_cloexec(&fd.0, 0)
                .map_err(|e| os_err(op, "dup of a shared-memory fd", e));
        }
        if self.map_len == 0 {
            // An empty segment has no bytes to share: a fresh empty memfd is as good.
            return Ok(new_memfd(op, 0)?.0);
        }
        let start = self.ptr.as_ptr() as usize;
        let end = start + self.map_len.div_ceil(page_size()) * page_size();
        let path = format!("/proc/self/map_files/{start:x}-{end:x}");
        let flags = if self.writable {
            OFlags::RDWR
        } else {
            OFlags::RDONLY
        };
        let fd = rustix::fs::open(&path, flags | OFlags::CLOEXEC, Mode::empty()).map_err(|e| {
            Error::Resource {
                op,
                msg: format!(
                    "this process closed the segment's fd (it holds more than {} shared storages, see Note [fd budget]) and cannot reopen it through {path}: {} (needs CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE); raise `ulimit -n`",
                    fd_budget(),
                    std::io::Error::from(e)
                ),
            }
        })?;
        if file_id(op, &fd)?.0 != self.id {
            return Err(Error::Resource {
                op,
                msg: format!("{path} is not the shared segment it should be"),
            });
        }
        Ok(fd)
    }
}

impl Drop for SharedSegment {
    fn drop(&mut self) {
        if self.map_len > 0 {
            // SAFETY: `ptr`/`map_len` describe a mapping made by `map_fd` and unmapped
            // exactly once, here, after the last storage using it dropped its backing.
            // Failure cannot leave a dangling reference (nothing refers to it any more).
            let _ = unsafe { rustix::mm::munmap(self.ptr.as_ptr().cast(), self.map_len) };
        }
        if let (true, Some(name)) = (self.owns_name, &self.name) {
            let _ = rustix::shm::unlink(format!("/{name}").as_str());
            if let Some(set) = lock(&OWNED).as_mut() {
                set.remove(name);
            }
        }
    }
}

/// Base names of this process's live named segments (unlinked at exit, step 4).
static OWNED: Mutex<Option<HashSet<String>>> = Mutex::new(None);

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn page_size() -> usize {
    rustix::param::page_size()
}

pub(crate) fn file_id(op: &'static str, fd: &OwnedFd) -> Result<(SegmentId, u64)> {
    let st = rustix::fs::fstat(fd).map_err(|e| os_err(op, "fstat of a shared-memory fd", e))?;
    let id = SegmentId {
        dev: st.st_dev as u64,
        ino: st.st_ino as u64,
    };
    Ok((id, st.st_size.max(0) as u64))
}

fn new_memfd(op: &'static str, nbytes: usize) -> Result<(OwnedFd, SegmentId)> {
    let fd = rustix::fs::memfd_create("strata", MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING)
        .map_err(|e| os_err(op, "memfd_create", e))?;
    rustix::fs::ftruncate(&fd, nbytes as u64)
        .map_err(|e| os_err(op, &format!("sizing a {nbytes}-byte memfd"), e))?;
    rustix::fs::fcntl_add_seals(&fd, SealFlags::SHRINK | SealFlags::GROW | SealFlags::SEAL)
        .map_err(|e| os_err(op, "sealing a memfd", e))?;
    let (id, _) = file_id(op, &fd)?;
    Ok((fd, id))
}

/// Maps `nbytes` of `fd` shared; an empty mapping for zero bytes.
fn map_fd(op: &'static str, fd: &OwnedFd, nbytes: usize, writable: bool) -> Result<NonNull<u8>> {
    if nbytes == 0 {
        return Ok(alloc::dangling());
    }
    let prot = if writable {
        ProtFlags::READ | ProtFlags::WRITE
    } else {
        ProtFlags::READ
    };
    // SAFETY: a fresh mapping at an address the kernel picks aliases no Rust reference;
    // the file holds at least `nbytes` bytes (sized by us, or checked by `from_fd`), and
    // memfds are sealed against shrinking, so the pages stay valid (S1) until `munmap`.
    let p = unsafe {
        rustix::mm::mmap(
            std::ptr::null_mut(),
            nbytes,
            prot,
            MapFlags::SHARED,
            fd.as_fd(),
            0,
        )
    }
    .map_err(|e| os_err(op, &format!("mmap of {nbytes} shared bytes"), e))?;
    NonNull::new(p.cast()).ok_or_else(|| Error::Resource {
        op,
        msg: "mmap returned NULL".into(),
    })
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A fresh name `strata-<pid>-<counter>-<random>` (without the leading '/').
fn unique_name() -> String {
    format!(
        "strata-{}-{}-{:016x}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed),
        rand::random::<u64>()
    )
}

/// Checks that `name` is one strata made (`strata-<digits>-…`, no slashes).
pub(crate) fn check_name(op: &'static str, name: &str) -> Result<()> {
    let ok = name.len() <= 200
        && name.starts_with("strata-")
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.');
    if ok {
        Ok(())
    } else {
        Err(Error::format(
            op,
            format!("{name:?} is not a strata shared-memory name"),
        ))
    }
}

impl SharedSegment {
    /// A new zeroed segment of `nbytes`.
    pub fn create(op: &'static str, nbytes: usize, kind: ShmKind) -> Result<SharedSegment> {
        let (fd, name) = match kind {
            ShmKind::Memfd => (new_memfd(op, nbytes)?.0, None),
            ShmKind::Named => {
                let name = unique_name();
                let fd = rustix::shm::open(
                    format!("/{name}").as_str(),
                    rustix::shm::OFlags::CREATE
                        | rustix::shm::OFlags::EXCL
                        | rustix::shm::OFlags::RDWR,
                    Mode::RUSR | Mode::WUSR,
                )
                .map_err(|e| os_err(op, &format!("shm_open /{name}"), e))?;
                let unlink = || {
                    let _ = rustix::shm::unlink(format!("/{name}").as_str());
                };
                if let Err(e) = rustix::fs::ftruncate(&fd, nbytes as u64) {
                    unlink();
                    return Err(os_err(op, &format!("sizing /{name}"), e));
                }
                lock(&OWNED)
                    .get_or_insert_with(HashSet::new)
                    .insert(name.clone());
                (fd, Some(name))
            }
        };
        let owns_name = name.is_some();
        Self::from_fd(op, fd, nbytes, true, kind, name, owns_name)
    }

    /// Maps `nbytes` of the shared-memory file `fd` (taking it), checking its size and,
    /// for memfds, its seals.
    pub(crate) fn from_fd(
        op: &'static str,
        fd: OwnedFd,
        nbytes: usize,
        writable: bool,
        kind: ShmKind,
        name: Option<String>,
        owns_name: bool,
    ) -> Result<SharedSegment> {
        let fail = |e: Error| {
            if let (true, Some(n)) = (owns_name, &name) {
                let _ = rustix::shm::unlink(format!("/{n}").as_str());
            }
            e
        };
        let (id, size) = file_id(op, &fd).map_err(fail)?;
        if size < nbytes as u64 {
            return Err(fail(Error::format(
                op,
                format!("the shared-memory file holds {size} bytes, fewer than the {nbytes} the handle claims"),
            )));
        }
        if kind == ShmKind::Memfd {
            let seals = rustix::fs::fcntl_get_seals(&fd).map_err(|e| {
                fail(if e == rustix::io::Errno::INVAL {
                    // Only memfds (and other shmem files) have seals.
                    Error::format(
                        op,
                        "the fd is not a memfd (a plain file or socket, which cannot be sealed against shrinking)",
                    )
                } else {
                    os_err(op, "reading a memfd's seals", e)
                })
            })?;
            if !seals.contains(SealFlags::SHRINK) {
                return Err(fail(Error::format(
                    op,
                    "the received memfd is not sealed against shrinking (a peer could truncate it under our mapping)",
                )));
            }
        }
        let ptr = map_fd(op, &fd, nbytes, writable).map_err(fail)?;
        Ok(SharedSegment {
            ptr,
            map_len: nbytes,
            writable,
            id,
            kind,
            fd: Mutex::new(KeptFd::try_keep(fd)),
            name,
            owns_name,
        })
    }
}

/// Per-process registry of shared storages by segment identity, so the same segment
/// received twice maps to one storage (and one mapping).
static REGISTRY: Mutex<Option<HashMap<SegmentId, Weak<Inner>>>> = Mutex::new(None);

fn registry() -> MutexGuard<'static, Option<HashMap<SegmentId, Weak<Inner>>>> {
    lock(&REGISTRY)
}

fn register(reg: &mut Option<HashMap<SegmentId, Weak<Inner>>>, id: SegmentId, storage: &Storage) {
    let map = reg.get_or_insert_with(HashMap::new);
    if map.len() >= 64 && map.len().is_power_of_two() {
        map.retain(|_, w| w.strong_count() > 0);
    }
    map.insert(id, Arc::downgrade(&storage.0));
}

/// Serialises `share_memory_` so two threads cannot move one storage twice.
static SHARE_LOCK: Mutex<()> = Mutex::new(());

impl Backing {
    fn shared(seg: Arc<SharedSegment>, read_only: bool) -> Backing {
        Backing {
            ptr: seg.ptr,
            nbytes: seg.map_len,
            read_only: read_only || !seg.writable,
            owner: Owner::Shared(seg),
        }
    }
}

impl Storage {
    /// `nbytes` zeroed bytes created directly in shared memory.
    pub fn zeroed_shared(nbytes: usize, kind: ShmKind) -> Result<Storage> {
        let seg = Arc::new(SharedSegment::create("zeros_shared", nbytes, kind)?);
        let id = seg.id;
        // S5: a new memfd or shm file reads as zeros.
        let s = Storage::from_backing(Backing::shared(seg, false));
        register(&mut registry(), id, &s);
        Ok(s)
    }

    /// Moves the bytes into a memfd in place (see [`share_memory_with`](Self::share_memory_with)).
    pub fn share_memory_(&self) -> Result<()> {
        self.share_memory_with(ShmKind::Memfd)
    }

    /// Moves the bytes into shared memory of `kind`, in place: they are copied once and
    /// every view of the storage sees the shared copy. A storage already in shared memory
    /// is left as it is (whatever its kind). A read-only storage stays read-only.
    ///
    /// # Errors
    /// Refused while a raw export (a NumPy array, buffer or DLPack capsule) points at the
    /// old bytes, or while this thread borrows the storage; an OS error if the segment
    /// cannot be made.
    pub fn share_memory_with(&self, kind: ShmKind) -> Result<()> {
        self.check_host("share_memory_")?;
        let _serial = lock(&SHARE_LOCK);
        if self.is_shared() {
            return Ok(());
        }
        self.check_movable("share_memory_")?;
        let read_only = self.is_read_only();
        let mut made = None;
        self.replace_backing("share_memory_", |bytes| {
            let seg = Arc::new(SharedSegment::create("share_memory_", bytes.len(), kind)?);
            if !bytes.is_empty() {
                // SAFETY: the new mapping is writable, `bytes.len()` long and private to
                // us until this backing is installed (S1); `bytes` is the old backing,
                // readable under the exclusive borrow `replace_backing` holds (S3, S4).
                unsafe {
                    std::ptr::copy_nonoverlapping(bytes.as_ptr(), seg.ptr.as_ptr(), bytes.len())
                };
            }
            made = Some(seg.id);
            Ok(Backing::shared(seg, read_only))
        })?;
        if let Some(id) = made {
            register(&mut registry(), id, self);
        }
        Ok(())
    }

    /// True when the bytes live in memory other processes can map: shared memory, or a
    /// `MAP_SHARED` file map (read-only, or shared writable; see Note [sharing file maps]
    /// in [`super::mmap`]).
    pub fn is_shared(&self) -> bool {
        self.with_owner(|o| match o {
            Owner::Shared(_) => true,
            Owner::Foreign(f) => f
                .downcast_ref::<Arc<super::FileMap>>()
                .is_some_and(|m| m.is_shared() && !m.is_empty()),
            _ => false,
        })
    }

    /// Fails unless the bytes may be copied elsewhere without detaching the storage from
    /// an owner that can still read or write them: strata's own allocations, private
    /// copy-on-write file maps and [`Exclusive`](super::Exclusive) foreign owners may
    /// move; memory of a NumPy array, a DLPack producer or a buffer export may not (later
    /// writes on one side would silently miss the other).
    pub fn check_movable(&self, op: &'static str) -> Result<()> {
        let what = self.with_owner(|o| match o {
            Owner::Allocated { .. } | Owner::Empty | Owner::Shared(_) => None,
            Owner::Foreign(f) => {
                if f.is::<super::Exclusive>() {
                    None
                } else if f.is::<super::ExportPin>() {
                    Some("is a slice of another storage (share that storage before slicing it)")
                } else if let Some(m) = f.downcast_ref::<Arc<super::FileMap>>() {
                    match m.mode() {
                        super::MapMode::CopyOnWrite => None,
                        _ if m.is_empty() => None,
                        _ => Some("is a file mapped shared"),
                    }
                } else {
                    Some("is owned outside strata (by a NumPy array, a DLPack producer or a buffer-protocol export)")
                }
            }
        });
        match what {
            None => Ok(()),
            Some(what) => Err(Error::value(
                op,
                format!(
                    "the tensor's memory {what}; moving it into shared memory would detach the tensor from its owner, so later writes on either side would be lost. Share a copy instead: t.clone().share_memory_()"
                ),
            )),
        }
    }

    /// The shared segment behind this storage, if it is shared.
    pub fn shared_segment(&self) -> Option<Arc<SharedSegment>> {
        self.with_owner(|o| match o {
            Owner::Shared(seg) => Some(Arc::clone(seg)),
            _ => None,
        })
    }

    /// Reopens a segment from a received fd (taking it), or returns the storage this
    /// process already has for it.
    pub(crate) fn from_shared_fd(
        op: &'static str,
        fd: OwnedFd,
        nbytes: usize,
        read_only: bool,
        kind: ShmKind,
        name: Option<String>,
    ) -> Result<Storage> {
        let mut reg = registry();
        let (id, _) = file_id(op, &fd)?;
        if let Some(s) = reg
            .as_ref()
            .and_then(|m| m.get(&id))
            .and_then(Weak::upgrade)
            .map(Storage)
        {
            if s.nbytes() != nbytes {
                return Err(Error::format(
                    op,
                    format!(
                        "the handle claims {nbytes} bytes but this process maps the segment as {}",
                        s.nbytes()
                    ),
                ));
            }
            return Ok(s);
        }
        let seg = SharedSegment::from_fd(op, fd, nbytes, !read_only, kind, name, false)?;
        let s = Storage::from_backing(Backing::shared(Arc::new(seg), read_only));
        register(&mut reg, id, &s);
        Ok(s)
    }
}

/// Names this process made for sends that a receiver may not have opened yet.
static PENDING: Mutex<Option<HashSet<String>>> = Mutex::new(None);

/// Makes a fresh send name for a named segment (step 2 of Note [shared memory lifetime]).
pub(crate) fn link_send_name(op: &'static str, seg: &SharedSegment) -> Result<String> {
    let base = seg.name.as_deref().ok_or_else(|| {
        Error::value(
            op,
            "the storage lives in a memfd, which has no name: send it by fd, or create it under the name strategy",
        )
    })?;
    let send = unique_name();
    std::fs::hard_link(format!("/dev/shm/{base}"), format!("/dev/shm/{send}")).map_err(|e| {
        Error::Resource {
            op,
            msg: format!("linking /dev/shm/{base} as /dev/shm/{send}: {e} (its creator has dropped it: send it from the creating process, or by fd)"),
        }
    })?;
    let mut p = lock(&PENDING);
    let set = p.get_or_insert_with(HashSet::new);
    if set.len() >= 1024 && set.len().is_power_of_two() {
        set.retain(|n| std::path::Path::new(&format!("/dev/shm/{n}")).exists());
    }
    set.insert(send.clone());
    Ok(send)
}

/// Opens a send name and unlinks it (step 3 of Note [shared memory lifetime]).
pub(crate) fn open_send_name(op: &'static str, name: &str, read_only: bool) -> Result<OwnedFd> {
    check_name(op, name)?;
    let flags = if read_only {
        rustix::shm::OFlags::RDONLY
    } else {
        rustix::shm::OFlags::RDWR
    };
    let path = format!("/{name}");
    let fd = rustix::shm::open(path.as_str(), flags, Mode::empty())
        .map_err(|e| os_err(op, &format!("shm_open {path} (was its sender killed, or did it exit before the tensor was received?)"), e))?;
    let _ = rustix::shm::unlink(path.as_str());
    Ok(fd)
}

/// Unlinks the send names this process made that may still exist and the base names of
/// its live named segments (step 4 of Note [shared memory lifetime]); returns how many it
/// removed. Call at normal exit only: afterwards those segments can no longer be sent by
/// name (their mappings stay valid).
pub fn unlink_pending_names() -> usize {
    let mut names = lock(&PENDING).take().unwrap_or_default();
    names.extend(lock(&OWNED).take().unwrap_or_default());
    names
        .iter()
        .filter(|n| rustix::shm::unlink(format!("/{n}").as_str()).is_ok())
        .count()
}

/// Unlinks every `/dev/shm/strata-<pid>-…` whose process `<pid>` is dead (step 5 of Note
/// [shared memory lifetime]); returns how many it removed. Safe to run at any time.
pub fn sweep_stale_names() -> Result<usize> {
    let dir = match std::fs::read_dir("/dev/shm") {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(Error::io("sweep_stale_names", "/dev/shm".as_ref(), &e)),
    };
    let mut removed = 0;
    for entry in dir.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(pid) = name
            .strip_prefix("strata-")
            .and_then(|r| r.split('-').next())
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        let dead = match rustix::process::Pid::from_raw(pid) {
            Some(p) => rustix::process::test_kill_process(p) == Err(rustix::io::Errno::SRCH),
            None => false,
        };
        if dead && rustix::shm::unlink(format!("/{name}").as_str()).is_ok() {
            removed += 1;
        }
    }
    Ok(removed)
}
