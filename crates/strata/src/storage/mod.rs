//! Storage: a flat, shared, untyped run of bytes with an owner that frees it.
//!
//! A storage knows nothing of dtype or shape; tensors (`tensor/`) are views over it.
//!
//! # Invariants
//!
//! These hold for every [`Storage`] from construction until its last handle drops:
//!
//! - **S1** (*valid bytes*): the current backing's pointer is non-null and valid for reads
//!   of `nbytes` bytes, and for writes when the storage is not read-only. For zero bytes it
//!   is a dangling, 64-byte-aligned pointer that is never dereferenced.
//! - **S2** (*fixed length*): `nbytes` never changes, not even when the backing is swapped.
//!   View bounds checked against it at construction therefore stay valid for ever.
//! - **S3** (*stable pointer under a borrow*): the backing is only swapped while holding an
//!   exclusive borrow (see [`borrow`]) and while no raw export is pinned, so a pointer read
//!   while holding any borrow stays valid until that borrow is released.
//! - **S4** (*no data races*): element reads happen only under a shared or exclusive
//!   borrow and writes only under an exclusive one, and the borrow never lets a shared and
//!   an exclusive borrow coexist.
//! - **S5** (*initialised*): every byte is initialised before any view can read it: CPU
//!   allocations are zeroed, except a kernel's fresh output, which the kernel writes
//!   whole before the tensor is returned; foreign owners promise initialised memory when
//!   they are wrapped.

mod alloc;
pub mod borrow;
pub mod cache;
pub mod handle;
pub mod mmap;
pub mod shm;

use std::any::Any;
use std::fmt;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

pub use alloc::{physical_memory, Allocator, CpuAllocator, ALIGN};
pub use borrow::BorrowGuard;
pub use cache::{cache_stats, empty_cache, set_cache_decay, set_cache_limit, CacheStats};
pub(crate) use cache::{fork_prepare, fork_release};
pub use handle::{SegmentInfo, ShmHandle};
pub use mmap::{FileMap, FileRegion, MapMode};
pub use shm::{SegmentId, SharedSegment, ShmKind};

use crate::error::{Error, Result};

/// Where a storage's bytes live.
///
/// Printed and parsed as PyTorch spells devices: `"cpu"`, `"cuda:0"` (`"cuda"` parses as
/// ordinal 0). Only [`Device::Cpu`] has a backend in this build: asking for a tensor on
/// any other device is an [`Error::Device`], as is a host-only operation (data access,
/// printing, export, saving) on a storage that is not on the host (see
/// [`Storage::check_host`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Device {
    /// Host memory.
    #[default]
    Cpu,
    /// The memory of CUDA device number `ordinal`. No storage can be made there until a
    /// CUDA backend exists.
    Cuda(usize),
}

impl Device {
    /// True for host memory.
    #[inline]
    pub fn is_cpu(self) -> bool {
        matches!(self, Device::Cpu)
    }

    /// `Ok` when this build can make storages and run ops on this device; else the
    /// [`Error::Device`] that an op named `op` reports for it.
    pub fn check_available(self, op: &'static str) -> Result<()> {
        crate::backend::backend_for(op, self).map(|_| ())
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Device::Cpu => f.write_str("cpu"),
            Device::Cuda(n) => write!(f, "cuda:{n}"),
        }
    }
}

impl std::str::FromStr for Device {
    type Err = Error;

    /// Parses `"cpu"`, `"cuda"` (ordinal 0) or `"cuda:N"`, PyTorch's spellings; anything
    /// else is a value error naming the text.
    fn from_str(s: &str) -> Result<Device> {
        let (ty, ordinal) = match s.split_once(':') {
            Some((ty, n)) => (ty, Some(n)),
            None => (s, None),
        };
        let ordinal = match ordinal {
            None => None,
            // PyTorch accepts only plain decimal digits here (no sign, no spaces).
            Some(n) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => Some(
                n.parse::<usize>()
                    .map_err(|_| Error::value("device", format!("Invalid device string: '{s}'")))?,
            ),
            Some(_) => {
                return Err(Error::value(
                    "device",
                    format!("Invalid device string: '{s}'"),
                ))
            }
        };
        match ty {
            "cpu" => match ordinal {
                None | Some(0) => Ok(Device::Cpu),
                Some(n) => Err(Error::value(
                    "device",
                    format!("CPU device index must be 0, got {n} (in device string '{s}')"),
                )),
            },
            "cuda" => Ok(Device::Cuda(ordinal.unwrap_or(0))),
            _ => Err(Error::value(
                "device",
                format!("Expected one of cpu, cuda device type at start of device string: {s}"),
            )),
        }
    }
}

/// What keeps a storage's bytes alive and frees them.
pub enum Owner {
    /// Memory from an [`Allocator`], returned to it on drop.
    Allocated {
        /// The allocator that produced the memory.
        allocator: Arc<dyn Allocator>,
    },
    /// Memory owned by some other value (a NumPy array, a DLPack capsule, an mmap …),
    /// kept alive until the storage's backing is dropped or swapped out.
    Foreign(Box<dyn Any + Send + Sync>),
    /// A shared-memory mapping (memfd or named segment), unmapped with its last backing;
    /// see [`shm`].
    Shared(Arc<shm::SharedSegment>),
    /// Zero bytes: nothing to free.
    Empty,
}

impl fmt::Debug for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Owner::Allocated { allocator } => write!(f, "Allocated({})", allocator.name()),
            Owner::Foreign(_) => f.write_str("Foreign"),
            Owner::Shared(seg) => write!(f, "Shared({:?}, {:?})", seg.kind(), seg.id()),
            Owner::Empty => f.write_str("Empty"),
        }
    }
}

/// A foreign owner whose memory nothing outside the storage can reach or change (a buffer
/// that a pickle stream made for this tensor alone, an immutable `bytes`): `share_memory_`
/// may copy it into shared memory, since no one is left behind to miss later writes.
/// Any other [`Owner::Foreign`] memory (a NumPy array, a DLPack producer, a buffer export)
/// is refused there.
pub struct Exclusive(pub Box<dyn Any + Send + Sync>);

impl fmt::Debug for Exclusive {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Exclusive(..)")
    }
}

/// The memory behind a storage: a pointer, its writability and the owner that frees it.
#[derive(Debug)]
pub struct Backing {
    ptr: NonNull<u8>,
    nbytes: usize,
    read_only: bool,
    owner: Owner,
}

// SAFETY: a `Backing` is a uniquely owned pointer plus an owner that is itself `Send +
// Sync` (allocators and foreign owners are required to be); access to the bytes is
// synchronised by the storage borrow (invariant S4).
unsafe impl Send for Backing {}
// SAFETY: as above; `&Backing` only exposes the pointer value, not the bytes.
unsafe impl Sync for Backing {}

impl Backing {
    /// Allocates `nbytes` zeroed bytes from `allocator`.
    pub fn allocate(allocator: Arc<dyn Allocator>, nbytes: usize) -> Result<Backing> {
        Self::allocate_with(allocator, nbytes, true)
    }

    /// Allocates `nbytes` from `allocator`, zeroed or left for the caller to overwrite
    /// whole before anything reads them (see invariant S5).
    pub(crate) fn allocate_with(
        allocator: Arc<dyn Allocator>,
        nbytes: usize,
        zeroed: bool,
    ) -> Result<Backing> {
        if nbytes == 0 {
            return Ok(Backing::empty());
        }
        let ptr = if zeroed {
            allocator.allocate_zeroed(nbytes)?
        } else {
            allocator.allocate_for_overwrite(nbytes)?
        };
        Ok(Backing {
            ptr,
            nbytes,
            read_only: false,
            owner: Owner::Allocated { allocator },
        })
    }

    /// A zero-byte backing.
    pub fn empty() -> Backing {
        Backing {
            ptr: alloc::dangling(),
            nbytes: 0,
            read_only: false,
            owner: Owner::Empty,
        }
    }

    /// Wraps memory owned by `owner`.
    ///
    /// # Safety
    /// `ptr` must be valid for reads of `nbytes` initialised bytes (and for writes unless
    /// `read_only`) for as long as `owner` is alive, and nothing else may write those bytes
    /// while the storage is in use except through strata.
    pub unsafe fn foreign(
        ptr: NonNull<u8>,
        nbytes: usize,
        read_only: bool,
        owner: Box<dyn Any + Send + Sync>,
    ) -> Backing {
        Backing {
            ptr,
            nbytes,
            read_only,
            owner: Owner::Foreign(owner),
        }
    }

    /// The owner.
    pub fn owner(&self) -> &Owner {
        &self.owner
    }
}

impl Drop for Backing {
    fn drop(&mut self) {
        if let Owner::Allocated { allocator } = &self.owner {
            // SAFETY: `ptr`/`nbytes` came from this allocator's `allocate_zeroed` (see
            // `Backing::allocate`) and are freed exactly once, here.
            unsafe { allocator.deallocate(self.ptr, self.nbytes) };
        }
    }
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

struct Inner {
    id: u64,
    nbytes: usize,
    device: Device,
    backing: Mutex<Backing>,
    /// `backing.ptr` and `backing.read_only`, readable without the lock (each kernel asks
    /// for its operands' addresses: the lock and unlock were a part of a small op's cost);
    /// stored with the backing, under its lock, by `replace_backing`.
    ptr: AtomicPtr<u8>,
    read_only: AtomicBool,
    /// Whether the backing (a slice's: its root's) was a `MAP_SHARED` file map when set:
    /// a cheap first test before [`Storage::shared_file_position`] takes the lock (see
    /// Note [one file mapped twice]). Stored with the backing by `replace_backing`.
    file_map: AtomicBool,
    borrow: borrow::BorrowCell,
    version: AtomicU64,
    exports: AtomicUsize,
    /// Set once a raw address escaped with no way to learn when its user is done.
    pinned_for_life: AtomicBool,
    /// For a slice of another storage ([`Storage::slice_bytes`]), that storage (never
    /// itself a slice): the one whose borrows and version counter the slice uses, so a
    /// write through either is ordered against, and seen by, the other.
    root: Option<Storage>,
}

/// A shared, reference-counted run of bytes. Cloning is an `Arc` clone.
#[derive(Clone)]
pub struct Storage(Arc<Inner>);

impl fmt::Debug for Storage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.backing();
        f.debug_struct("Storage")
            .field("id", &self.0.id)
            .field("nbytes", &self.0.nbytes)
            .field("device", &self.0.device)
            .field("ptr", &b.ptr)
            .field("read_only", &b.read_only)
            .field("owner", &b.owner)
            .finish()
    }
}

impl Storage {
    /// A storage over `backing`.
    pub fn from_backing(backing: Backing) -> Storage {
        let device = match &backing.owner {
            Owner::Allocated { allocator } => allocator.device(),
            _ => Device::Cpu,
        };
        Self::from_backing_on(backing, device)
    }

    /// This storage, the only handle to it, reporting `device` (for foreign memory whose
    /// device is known only after wrapping). Any other handle keeps the old device: the
    /// result is a new storage over the same backing.
    pub(crate) fn rehome(self, device: Device) -> Storage {
        match Arc::try_unwrap(self.0) {
            Ok(inner) => {
                let backing = inner
                    .backing
                    .into_inner()
                    .unwrap_or_else(|e| e.into_inner());
                Self::from_backing_on(backing, device)
            }
            Err(arc) => Storage(arc),
        }
    }

    /// A storage over `backing`, whose memory is on `device` (for foreign memory on a
    /// GPU: a DLPack capsule's, an IPC mapping's).
    pub fn from_backing_on(backing: Backing, device: Device) -> Storage {
        Self::with_root(backing, device, None)
    }

    fn with_root(backing: Backing, device: Device, root: Option<Storage>) -> Storage {
        // Before any storage exists, so before any borrow can be held across a fork (see
        // `borrow::BorrowCell::refresh`).
        crate::kernel::pool::register_fork_handlers();
        let file_map = match &root {
            Some(r) => r.0.file_map.load(Ordering::Acquire),
            None => mmap::is_shared_file_map(&backing.owner),
        };
        Storage(Arc::new(Inner {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            nbytes: backing.nbytes,
            device,
            ptr: AtomicPtr::new(backing.ptr.as_ptr()),
            read_only: AtomicBool::new(backing.read_only),
            file_map: AtomicBool::new(file_map),
            backing: Mutex::new(backing),
            borrow: borrow::BorrowCell::default(),
            version: AtomicU64::new(0),
            exports: AtomicUsize::new(0),
            pinned_for_life: AtomicBool::new(false),
            root,
        }))
    }

    /// A storage over bytes `start..end` of this one, sharing them (PyTorch's
    /// `UntypedStorage` slicing): writes through either are seen by the other. The slice
    /// borrows through this storage (S4 holds across both) and shares its version
    /// counter; it pins this storage's backing, so `share_memory_()` on this storage
    /// refuses while the slice lives (moving the bytes would detach it).
    ///
    /// # Errors
    /// A value error naming `op` when the range is reversed or past the end; a device
    /// error for memory not on the host.
    pub fn slice_bytes(&self, op: &'static str, start: usize, end: usize) -> Result<Storage> {
        self.check_host(op)?;
        if start > end || end > self.nbytes() {
            return Err(Error::value(
                op,
                format!(
                    "byte range {start}..{end} is out of bounds for a storage of {} bytes",
                    self.nbytes()
                ),
            ));
        }
        let root = self.borrow_root().clone();
        let pin = root.pin_export();
        // The pin keeps the root's backing in place, so this address stays valid.
        // SAFETY: `start <= end <= nbytes`, so `data_ptr() + start` lies within (or one past
        // the end of) the current backing, non-null.
        let ptr = unsafe { NonNull::new_unchecked(self.data_ptr().add(start)) };
        let read_only = self.is_read_only();
        // SAFETY: the bytes belong to the root's backing, valid for `end - start` bytes
        // from `ptr` while `pin` (kept by the new backing) holds it in place; every access
        // borrows through the root (see `borrow_root`).
        let backing = unsafe { Backing::foreign(ptr, end - start, read_only, Box::new(pin)) };
        Ok(Self::with_root(backing, Device::Cpu, Some(root)))
    }

    /// The storage whose borrow cell and version counter this one uses: itself, or for
    /// a slice the storage it views.
    #[inline]
    pub(crate) fn borrow_root(&self) -> &Storage {
        self.0.root.as_ref().unwrap_or(self)
    }

    /// True for a slice of another storage ([`slice_bytes`](Self::slice_bytes)).
    pub fn is_slice(&self) -> bool {
        self.0.root.is_some()
    }

    /// `nbytes` zeroed bytes from the default 64-byte-aligned CPU allocator.
    pub fn zeroed(nbytes: usize) -> Result<Storage> {
        Self::zeroed_in(CpuAllocator::shared(), nbytes)
    }

    /// `nbytes` zeroed bytes from `allocator`.
    pub fn zeroed_in(allocator: Arc<dyn Allocator>, nbytes: usize) -> Result<Storage> {
        Ok(Self::from_backing(Backing::allocate(allocator, nbytes)?))
    }

    /// `nbytes` of CPU memory for a kernel's fresh output, which the kernel writes whole
    /// before the storage is seen by anyone (the exception S5 allows): not zeroed.
    pub(crate) fn for_overwrite(nbytes: usize) -> Result<Storage> {
        Ok(Self::from_backing(Backing::allocate_with(
            CpuAllocator::shared(),
            nbytes,
            false,
        )?))
    }

    /// Wraps foreign memory, keeping `owner` alive until the last view is gone.
    ///
    /// # Safety
    /// As for [`Backing::foreign`].
    pub unsafe fn from_foreign(
        ptr: NonNull<u8>,
        nbytes: usize,
        read_only: bool,
        owner: Box<dyn Any + Send + Sync>,
    ) -> Storage {
        // SAFETY: forwarded to the caller.
        Self::from_backing(unsafe { Backing::foreign(ptr, nbytes, read_only, owner) })
    }

    fn backing(&self) -> MutexGuard<'_, Backing> {
        // A poisoned lock only means a panic happened while holding it; the backing is
        // swapped atomically (one assignment), so it is still consistent.
        self.0.backing.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A process-unique id (never reused while the process runs).
    pub fn id(&self) -> u64 {
        self.0.id
    }

    /// Length in bytes.
    pub fn nbytes(&self) -> usize {
        self.0.nbytes
    }

    /// The device the bytes live on.
    pub fn device(&self) -> Device {
        self.0.device
    }

    /// Address of the first byte. Only dereference it while holding a borrow (S3).
    #[inline]
    pub fn data_ptr(&self) -> *mut u8 {
        self.0.ptr.load(Ordering::Acquire)
    }

    /// True when writes are refused.
    #[inline]
    pub fn is_read_only(&self) -> bool {
        self.0.read_only.load(Ordering::Acquire)
    }

    /// Runs `f` on the owner of the current backing (to ask, say, whether it is shared
    /// memory).
    pub fn with_owner<R>(&self, f: impl FnOnce(&Owner) -> R) -> R {
        f(&self.backing().owner)
    }

    /// As [`with_owner`](Self::with_owner), but never waits: `None` while another
    /// thread holds the backing (a garbage collector's traversal must not block).
    pub fn try_with_owner<R>(&self, f: impl FnOnce(&Owner) -> R) -> Option<R> {
        match self.0.backing.try_lock() {
            Ok(b) => Some(f(&b.owner)),
            Err(std::sync::TryLockError::Poisoned(e)) => Some(f(&e.into_inner().owner)),
            Err(std::sync::TryLockError::WouldBlock) => None,
        }
    }

    /// True when both handles refer to the same storage.
    pub fn same(&self, other: &Storage) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// Number of live handles to this storage.
    pub fn handle_count(&self) -> usize {
        Arc::strong_count(&self.0)
    }

    /// True when this handle is the only way to reach the storage (no other handle, and
    /// no registry's weak one from which another could be made).
    pub(crate) fn is_unique(&self) -> bool {
        Arc::strong_count(&self.0) == 1 && Arc::weak_count(&self.0) == 0
    }

    /// The version counter shared by every view of this storage.
    pub fn version(&self) -> u64 {
        self.borrow_root().0.version.load(Ordering::Relaxed)
    }

    /// Bumps the version counter (every in-place write does).
    pub fn bump_version(&self) {
        self.borrow_root().0.version.fetch_add(1, Ordering::Relaxed);
    }

    /// Pins the current backing for a raw export (a buffer, a DLPack capsule): until the
    /// returned pin drops, [`replace_backing`](Self::replace_backing) refuses to swap.
    pub fn pin_export(&self) -> ExportPin {
        self.0.exports.fetch_add(1, Ordering::AcqRel);
        ExportPin(self.clone())
    }

    /// Pins the current backing for the rest of the storage's life: for raw exports whose
    /// end cannot be observed (an `__array_interface__` address, which NumPy keeps with no
    /// release call). [`replace_backing`](Self::replace_backing) refuses from then on.
    pub fn pin_for_life(&self) {
        self.0.pinned_for_life.store(true, Ordering::Release);
    }

    /// Number of live export pins.
    pub fn export_count(&self) -> usize {
        self.0.exports.load(Ordering::Acquire)
    }

    /// Swaps what backs this storage, in place: `make` receives the current bytes and
    /// returns a new backing of the same length holding them. Every view sees the swap.
    ///
    /// # Errors
    /// A borrow error if any borrow of the storage is held by this thread; an error if a
    /// raw export is pinned; a shape error if the new backing's length differs.
    pub fn replace_backing(
        &self,
        op: &'static str,
        make: impl FnOnce(&[u8]) -> Result<Backing>,
    ) -> Result<()> {
        self.check_host(op)?;
        let _guard = borrow::acquire(op, &[(self, true)])?;
        if self.0.pinned_for_life.load(Ordering::Acquire) {
            return Err(Error::value(
                op,
                "the storage's address was handed out through __array_interface__, which cannot tell when its users are done, so its memory can never move; call share_memory_() before exporting, or clone() the tensor".to_string(),
            ));
        }
        if self.export_count() > 0 {
            return Err(Error::value(
                op,
                format!(
                    "the storage's memory is still exported raw ({} live export(s): a NumPy array, buffer or DLPack capsule); drop them first",
                    self.export_count()
                ),
            ));
        }
        let mut backing = self.backing();
        // SAFETY: S1 makes the pointer readable for `nbytes`; the exclusive borrow held
        // above (S4) means no one writes the bytes while the slice lives.
        let bytes = unsafe { std::slice::from_raw_parts(backing.ptr.as_ptr(), self.0.nbytes) };
        let new = make(bytes)?;
        if new.nbytes != self.0.nbytes {
            return Err(Error::shape(
                op,
                format!(
                    "new backing has {} bytes but the storage has {}",
                    new.nbytes, self.0.nbytes
                ),
            ));
        }
        self.0.ptr.store(new.ptr.as_ptr(), Ordering::Release);
        self.0.read_only.store(new.read_only, Ordering::Release);
        self.0
            .file_map
            .store(mmap::is_shared_file_map(&new.owner), Ordering::Release);
        let old = std::mem::replace(&mut *backing, new);
        drop(backing);
        drop(old);
        Ok(())
    }

    /// The one "must be on the host" check: `Ok` for CPU memory, else the
    /// [`Error::Device`] naming `op` and the device. Every operation that reads or writes
    /// the bytes from the host — element access, slice guards, printing, `explain`,
    /// NumPy/buffer/DLPack export, shared memory, saving to a file — calls it (through
    /// [`Tensor::check_host`](crate::Tensor::check_host)) before touching the pointer.
    #[inline]
    pub fn check_host(&self, op: &'static str) -> Result<()> {
        match self.0.device {
            Device::Cpu => Ok(()),
            device => Err(Error::not_on_host(op, device)),
        }
    }

    /// Fails with [`Error::ReadOnly`] when the storage is read-only.
    pub fn check_writable(&self, op: &'static str) -> Result<()> {
        if self.is_read_only() {
            Err(Error::ReadOnly { op })
        } else {
            Ok(())
        }
    }

    pub(crate) fn borrow_cell(&self) -> &borrow::BorrowCell {
        &self.0.borrow
    }
}

/// Keeps a storage's current backing from being swapped while a raw export lives.
#[derive(Debug)]
pub struct ExportPin(Storage);

impl ExportPin {
    /// The pinned storage.
    pub fn storage(&self) -> &Storage {
        &self.0
    }
}

impl Drop for ExportPin {
    fn drop(&mut self) {
        self.0 .0.exports.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_byte_storage() {
        let s = Storage::zeroed(0).unwrap();
        assert_eq!(s.nbytes(), 0);
        assert_eq!(s.data_ptr() as usize % ALIGN, 0);
    }

    #[test]
    fn allocation_is_aligned_and_zeroed() {
        let s = Storage::zeroed(1000).unwrap();
        assert_eq!(s.data_ptr() as usize % ALIGN, 0);
        let g = borrow::acquire("test", &[(&s, false)]).unwrap();
        // SAFETY: S1 and the shared borrow `g`.
        let b = unsafe { std::slice::from_raw_parts(s.data_ptr(), 1000) };
        assert!(b.iter().all(|&x| x == 0));
        drop(g);
    }

    #[test]
    fn slices_share_bytes_borrows_and_version_and_pin_the_root() {
        let s = Storage::zeroed(16).unwrap();
        let a = s.slice_bytes("test", 4, 12).unwrap();
        let b = a.slice_bytes("test", 2, 6).unwrap();
        assert_eq!((a.nbytes(), b.nbytes()), (8, 4));
        assert_eq!(a.data_ptr() as usize, s.data_ptr() as usize + 4);
        assert_eq!(b.data_ptr() as usize, s.data_ptr() as usize + 6);
        assert!(a.is_slice() && b.is_slice() && !s.is_slice());
        // A slice of a slice views the first storage, not the intermediate one.
        assert!(b.borrow_root().same(&s));
        // One borrow cell: a write borrow of the slice conflicts with a read of the root.
        let g = borrow::acquire("test", &[(&s, false)]).unwrap();
        let e = borrow::acquire("test", &[(&b, true)]).unwrap_err();
        assert!(matches!(e, Error::Borrow { .. }), "{e}");
        drop(g);
        // Listed together, they are one storage: borrowed once, exclusively.
        drop(borrow::acquire("test", &[(&s, false), (&a, true)]).unwrap());
        let v = s.version();
        b.bump_version();
        assert_eq!((s.version(), a.version()), (v + 1, v + 1));
        // The root's bytes cannot move while a slice views them.
        let e = s
            .replace_backing("share_memory_", |_| Ok(Backing::empty()))
            .unwrap_err();
        assert!(e.to_string().contains("exported"), "{e}");
        drop((a, b));
        assert_eq!(s.export_count(), 0);
        for (lo, hi) in [(0, 17), (9, 8), (usize::MAX, usize::MAX)] {
            let e = s.slice_bytes("storage[]", lo, hi).unwrap_err();
            assert!(e.to_string().contains("out of bounds"), "{e}");
        }
        assert_eq!(s.slice_bytes("test", 16, 16).unwrap().nbytes(), 0);
    }

    #[test]
    fn replace_backing_is_seen_by_all_handles_and_respects_pins() {
        let s = Storage::zeroed(16).unwrap();
        let s2 = s.clone();
        let old = s.data_ptr();
        s.replace_backing("test", |bytes| {
            let b = Backing::allocate(CpuAllocator::shared(), bytes.len())?;
            Ok(b)
        })
        .unwrap();
        assert_ne!(old, s2.data_ptr());
        let pin = s.pin_export();
        let err = s
            .replace_backing("share_memory_", |_| Ok(Backing::empty()))
            .unwrap_err();
        assert!(err.to_string().contains("exported"), "{err}");
        drop(pin);
        let err = s
            .replace_backing("test", |_| Ok(Backing::empty()))
            .unwrap_err();
        assert!(err.to_string().contains("new backing has 0 bytes"), "{err}");
        s.pin_for_life();
        let err = s
            .replace_backing("share_memory_", |b| {
                Backing::allocate(CpuAllocator::shared(), b.len())
            })
            .unwrap_err();
        assert!(err.to_string().contains("__array_interface__"), "{err}");
    }

    #[test]
    fn foreign_owner_is_dropped_with_last_handle() {
        struct Flag(Arc<std::sync::atomic::AtomicBool>);
        impl Drop for Flag {
            fn drop(&mut self) {
                self.0.store(true, Ordering::SeqCst);
            }
        }
        let dropped = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut buf = vec![1u8, 2, 3, 4];
        let ptr = NonNull::new(buf.as_mut_ptr()).unwrap();
        // SAFETY: `buf` outlives the storage (dropped at the end of the test).
        let s = unsafe { Storage::from_foreign(ptr, 4, true, Box::new(Flag(dropped.clone()))) };
        let s2 = s.clone();
        assert!(s.is_read_only());
        assert!(s.check_writable("fill_").is_err());
        drop(s);
        assert!(!dropped.load(Ordering::SeqCst));
        drop(s2);
        assert!(dropped.load(Ordering::SeqCst));
        drop(buf);
    }
}
