//! File-backed storage: a memory map (memmap2) is just another foreign owner.
//!
//! Three modes, as `numpy.memmap` and `torch.from_file` offer them: a read-only map, a
//! shared writable map whose writes reach the file, and a private copy-on-write map whose
//! writes stay in this process.
//!
//! A mapped file that another process truncates or rewrites while strata reads it is
//! outside what Rust can guard against (the same caveat as every memory map): keep mapped
//! files unchanged while their tensors live. Replacing the file by another one under the
//! same path (`os.replace`, an editor's save) is harmless: a map is of the file that was
//! opened, never of the path.
//!
//! Note [sharing file maps]
//! ------------------------
//! A read-only (`'r'`) or shared (`'r+'`, `from_file(shared=True)`) map is `MAP_SHARED`:
//! its pages are the file's page cache, which every process mapping the file sees. Such a
//! storage is already shared ([`Storage::is_shared`]): `share_memory_()` leaves it where it
//! is, and sending it to another process sends the file itself (an fd, `SCM_RIGHTS`) with
//! the byte range, so the receiver maps the same region and writes on either side reach
//! the file and the other process. Moving it into a memfd instead would silently detach
//! later writes from the file. A map keeps a duplicate of the file's fd for sending, within
//! the budget of Note [fd budget] in [`super::shm`]; beyond it, a send reopens the file by
//! its path and refuses if the path now names another file (its `(st_dev, st_ino)`
//! changed).
//!
//! A copy-on-write (`'c'`, `mmap=True`, `from_file(shared=False)`) map is private memory:
//! its writes never reach the file, so `share_memory_()` copies it into a memfd like any
//! private allocation; nothing the user wrote is lost, and pages not yet written stop
//! following later changes of the file (which a private map does not promise anyway).

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use memmap2::{Mmap, MmapMut, MmapOptions};

use super::shm::{file_id, lock, os_err, KeptFd, SegmentId};
use super::{Backing, Inner, Owner, Storage};
use crate::error::{Error, Result};

/// How a file is mapped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MapMode {
    /// Read-only: tensors over it are read-only (NumPy's `mmap_mode='r'`).
    ReadOnly,
    /// Shared and writable: writes reach the file (`'r+'`, `torch.from_file(shared=True)`).
    Shared,
    /// Private copy-on-write: writable, but writes never reach the file (`'c'`,
    /// `torch.from_file(shared=False)`).
    CopyOnWrite,
}

/// One mapping of (part of) a file. Several storages may hold it through an `Arc`, each
/// over a disjoint byte range (safetensors loads every tensor of a file from one map).
#[derive(Debug)]
pub struct FileMap {
    map: MapKind,
    mode: MapMode,
    /// Byte offset in the file of the first mapped byte.
    offset: u64,
    /// The file's identity when it was mapped.
    id: SegmentId,
    /// The path it was opened by (absolute when it could be made so), for reopening.
    path: PathBuf,
    /// A duplicate of the file's fd, kept to send shared maps (see Note [sharing file
    /// maps]); `None` for private maps and beyond the fd budget.
    fd: Mutex<Option<KeptFd>>,
}

#[derive(Debug)]
enum MapKind {
    Ro(Mmap),
    Rw(MmapMut),
    /// Zero bytes (the OS refuses zero-length maps).
    Empty,
}

impl FileMap {
    /// Maps `len` bytes of `path` from byte `offset` in `mode`.
    ///
    /// # Errors
    /// An [`Error::Io`] when the file cannot be opened or mapped, an [`Error::Format`]
    /// when it holds fewer than `offset + len` bytes.
    pub fn open(
        op: &'static str,
        path: &Path,
        offset: u64,
        len: usize,
        mode: MapMode,
    ) -> Result<FileMap> {
        let file = OpenOptions::new()
            .read(true)
            .write(mode == MapMode::Shared)
            .open(path)
            .map_err(|e| Error::io(op, path, &e))?;
        // A directory opens for reading, then fails to map with ENODEV ("No such device").
        if file.metadata().is_ok_and(|m| m.is_dir()) {
            return Err(Error::Io {
                op,
                path: path.display().to_string(),
                msg: "is a directory, not a file".into(),
            });
        }
        Self::of_file(op, path, &file, offset, len, mode)
    }

    /// Maps `len` bytes of an open `file` (`path` names it in errors).
    pub fn of_file(
        op: &'static str,
        path: &Path,
        file: &File,
        offset: u64,
        len: usize,
        mode: MapMode,
    ) -> Result<FileMap> {
        let meta = file.metadata().map_err(|e| Error::io(op, path, &e))?;
        let flen = meta.len();
        let end = offset.checked_add(len as u64);
        if end.is_none_or(|end| end > flen) {
            return Err(Error::format(
                op,
                format!(
                    "{}: the file has {flen} bytes, fewer than the {len} bytes wanted from byte offset {offset}",
                    path.display()
                ),
            ));
        }
        let id = SegmentId {
            dev: meta.dev(),
            ino: meta.ino(),
        };
        let abs_path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let fd = if mode == MapMode::CopyOnWrite {
            None
        } else {
            let dup = file
                .as_fd()
                .try_clone_to_owned()
                .map_err(|e| Error::io(op, path, &e))?;
            KeptFd::try_keep(dup)
        };
        if len == 0 {
            return Ok(FileMap {
                map: MapKind::Empty,
                mode,
                offset,
                id,
                path: abs_path,
                fd: Mutex::new(fd),
            });
        }
        let mut opts = MmapOptions::new();
        opts.offset(offset).len(len);
        // SAFETY: mapping a file is sound as long as nobody truncates or rewrites it
        // behind our back — the documented caveat of file-backed storage (module docs).
        let map = unsafe {
            match mode {
                MapMode::ReadOnly => opts.map(file).map(MapKind::Ro),
                MapMode::Shared => opts.map_mut(file).map(MapKind::Rw),
                MapMode::CopyOnWrite => opts.map_copy(file).map(MapKind::Rw),
            }
        }
        .map_err(|e| Error::io(op, path, &e))?;
        Ok(FileMap {
            map,
            mode,
            offset,
            id,
            path: abs_path,
            fd: Mutex::new(fd),
        })
    }

    /// The mapped bytes.
    pub fn bytes(&self) -> &[u8] {
        match &self.map {
            MapKind::Ro(m) => m,
            MapKind::Rw(m) => m,
            MapKind::Empty => &[],
        }
    }

    /// The mode.
    pub fn mode(&self) -> MapMode {
        self.mode
    }

    /// Byte offset in the file of the first mapped byte.
    pub fn file_offset(&self) -> u64 {
        self.offset
    }

    /// The mapped file's `(st_dev, st_ino)` when it was opened.
    pub fn file_id(&self) -> SegmentId {
        self.id
    }

    /// True for `MAP_SHARED` maps (read-only or shared writable), which other processes
    /// can map too (see Note [sharing file maps]).
    pub fn is_shared(&self) -> bool {
        self.mode != MapMode::CopyOnWrite
    }

    /// A new fd of the mapped file, to send: a dup of the kept fd, else the path reopened
    /// and checked to be the same file (see Note [sharing file maps]).
    ///
    /// # Errors
    /// When the path no longer names the mapped file, or it cannot be reopened.
    pub fn fd_for_send(&self, op: &'static str) -> Result<OwnedFd> {
        if let Some(fd) = lock(&self.fd).as_ref() {
            return rustix::io::fcntl_dupfd_cloexec(&fd.0, 0)
                .map_err(|e| os_err(op, "dup of a mapped file's fd", e));
        }
        let file = OpenOptions::new()
            .read(true)
            .write(self.mode == MapMode::Shared)
            .open(&self.path)
            .map_err(|e| Error::io(op, &self.path, &e))?;
        let fd = OwnedFd::from(file);
        if file_id(op, &fd)?.0 != self.id {
            return Err(Error::value(
                op,
                format!(
                    "{} was replaced by another file since it was mapped, and this process holds no fd of the mapped one (see Note [fd budget]); cannot send the mapped tensor",
                    self.path.display()
                ),
            ));
        }
        Ok(fd)
    }

    /// Mapped length in bytes.
    pub fn len(&self) -> usize {
        self.bytes().len()
    }

    /// True for a zero-byte mapping.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Flushes a shared mapping's writes to the file (a no-op otherwise).
    pub fn flush(&self) -> Result<()> {
        if let (MapKind::Rw(m), MapMode::Shared) = (&self.map, self.mode) {
            m.flush().map_err(|e| Error::Io {
                op: "flush",
                path: String::from("<mapped file>"),
                msg: e.to_string(),
            })?;
        }
        Ok(())
    }
}

impl Storage {
    /// A storage over bytes `start..start + len` of `map`, kept alive by the storage.
    /// Read-only when the map is.
    ///
    /// # Errors
    /// A [`Error::Format`] when the range lies outside the map.
    pub fn from_file_map(map: &Arc<FileMap>, start: usize, len: usize) -> Result<Storage> {
        let end = start.checked_add(len);
        if end.is_none_or(|end| end > map.len()) {
            return Err(Error::format(
                "from_file_map",
                format!(
                    "byte range {start}..{start}+{len} is outside the {}-byte mapping",
                    map.len()
                ),
            ));
        }
        if len == 0 {
            return Ok(Storage::from_backing(Backing::empty()));
        }
        let base = map.bytes().as_ptr().wrapping_add(start).cast_mut();
        let ptr = NonNull::new(base).ok_or_else(|| Error::format("from_file_map", "null map"))?;
        let read_only = map.mode == MapMode::ReadOnly;
        // SAFETY: `ptr..ptr+len` lies inside the mapping (checked above), which the owner
        // (`Arc<FileMap>`) keeps mapped until the backing drops; it is writable unless the
        // map is read-only. Every storage over one map covers a range the caller chose;
        // callers give each storage a disjoint range (or read-only maps).
        Ok(unsafe { Storage::from_foreign(ptr, len, read_only, Box::new(Arc::clone(map))) })
    }

    /// Maps `len` bytes of the file at `path` from byte `offset` as a storage.
    pub fn map_file(path: &Path, offset: u64, len: usize, mode: MapMode) -> Result<Storage> {
        let map = Arc::new(FileMap::open("map_file", path, offset, len, mode)?);
        Storage::from_file_map(&map, 0, len)
    }
}

/// What identifies one shared file region in this process: the file, the byte offset, the
/// length and whether it is mapped writable.
type RegionKey = (SegmentId, u64, usize, bool);

/// Per-process registry of shared file regions sent or received, so the same region
/// received twice (or sent away and received back) is one storage over one mapping: two
/// mappings of one file page would be two addresses for the same bytes.
static FILE_REGISTRY: Mutex<Option<HashMap<RegionKey, Weak<Inner>>>> = Mutex::new(None);

fn file_registry() -> MutexGuard<'static, Option<HashMap<RegionKey, Weak<Inner>>>> {
    lock(&FILE_REGISTRY)
}

fn register_region(reg: &mut Option<HashMap<RegionKey, Weak<Inner>>>, key: RegionKey, s: &Storage) {
    let map = reg.get_or_insert_with(HashMap::new);
    if map.len() >= 64 && map.len().is_power_of_two() {
        map.retain(|_, w| w.strong_count() > 0);
    }
    map.insert(key, Arc::downgrade(&s.0));
}

/// The region of a file a shared file-map storage covers, and a fresh fd to send it.
#[derive(Debug)]
pub struct FileRegion {
    /// A new fd of the file.
    pub fd: OwnedFd,
    /// The file's identity.
    pub id: SegmentId,
    /// Byte offset in the file of the storage's first byte.
    pub offset: u64,
}

/// Whether `owner` is a `MAP_SHARED` map of a file with bytes.
pub(super) fn is_shared_file_map(owner: &Owner) -> bool {
    match owner {
        Owner::Foreign(o) => o
            .downcast_ref::<Arc<FileMap>>()
            .is_some_and(|m| m.is_shared() && !m.is_empty()),
        _ => false,
    }
}

// Note [one file mapped twice]
// Loading one file twice (`load(p, mmap_mode="r+")` twice, or `from_file` and `load`)
// gives two mappings: two addresses for the same bytes, so an overlap check by address
// (`kernel::plan::must_stage`) sees two disjoint ranges where a copy from one into the
// other reads bytes it has already written. For `MAP_SHARED` file maps (the ones whose
// writes reach the file and every other mapping of it), the check compares positions in
// the file instead: `Storage::shared_file_position` gives the file and the file offset
// of a storage's first byte. Private (copy-on-write) maps are left out: their pages stop
// following the file once written.

impl Storage {
    /// Whether this storage may be over a `MAP_SHARED` file map (or a slice of one): one
    /// atomic load, for paths that check overlap by address alone and must leave two
    /// such storages to [`Storage::shared_file_position`] (Note [one file mapped twice]).
    #[inline]
    pub(crate) fn maybe_shared_file_map(&self) -> bool {
        self.0.file_map.load(Ordering::Acquire)
    }

    /// For a storage over a `MAP_SHARED` file map (or a slice of one): the file's
    /// identity and the byte offset in the file of this storage's first byte (see Note
    /// [one file mapped twice]). `None` for any other storage, at the cost of one atomic
    /// load.
    pub fn shared_file_position(&self) -> Option<(SegmentId, u64)> {
        if !self.maybe_shared_file_map() {
            return None;
        }
        let root = self.borrow_root();
        let (map, start) = root.shared_file_map()?;
        // A slice's bytes start inside its root's (`slice_bytes`).
        let within = (self.data_ptr() as usize).checked_sub(root.data_ptr() as usize)?;
        let offset = map
            .file_offset()
            .checked_add(start as u64)?
            .checked_add(within as u64)?;
        Some((map.file_id(), offset))
    }

    /// The shared file map behind this storage, with the storage's byte offset in it, if
    /// the storage is a `MAP_SHARED` file map (see Note [sharing file maps]).
    pub fn shared_file_map(&self) -> Option<(Arc<FileMap>, usize)> {
        let b = self.backing();
        match &b.owner {
            Owner::Foreign(o) => {
                let map = o.downcast_ref::<Arc<FileMap>>()?;
                if !map.is_shared() || map.is_empty() {
                    return None;
                }
                let start = (b.ptr.as_ptr() as usize).checked_sub(map.bytes().as_ptr() as usize)?;
                Some((Arc::clone(map), start))
            }
            _ => None,
        }
    }

    /// A fresh fd and the file region of a shared file-map storage, to send; registers
    /// the storage so that receiving it back gives this very storage.
    pub(crate) fn file_region(&self, op: &'static str) -> Result<Option<FileRegion>> {
        let Some((map, start)) = self.shared_file_map() else {
            return Ok(None);
        };
        let offset = map.file_offset().checked_add(start as u64).ok_or_else(|| {
            Error::overflow(op, format!("file offset {} + {start}", map.file_offset()))
        })?;
        let fd = map.fd_for_send(op)?;
        let writable = !self.is_read_only();
        register_region(
            &mut file_registry(),
            (map.file_id(), offset, self.nbytes(), writable),
            self,
        );
        Ok(Some(FileRegion {
            fd,
            id: map.file_id(),
            offset,
        }))
    }

    /// Maps `nbytes` of the received file `fd` from byte `offset`, shared (writes reach the
    /// file) unless `read_only`; the storage this process already has for that region if
    /// any. Everything is checked: the fd must be a regular file holding the whole range.
    pub(crate) fn from_file_fd(
        op: &'static str,
        fd: OwnedFd,
        offset: u64,
        nbytes: usize,
        read_only: bool,
    ) -> Result<Storage> {
        let st = rustix::fs::fstat(&fd).map_err(|e| os_err(op, "fstat of a received file", e))?;
        if rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::RegularFile {
            return Err(Error::format(
                op,
                "the received fd of a mapped file is not a regular file",
            ));
        }
        let (id, _) = file_id(op, &fd)?;
        let key = (id, offset, nbytes, !read_only);
        let mut reg = file_registry();
        if let Some(s) = reg
            .as_ref()
            .and_then(|m| m.get(&key))
            .and_then(Weak::upgrade)
            .map(Storage)
        {
            return Ok(s);
        }
        let mode = if read_only {
            MapMode::ReadOnly
        } else {
            MapMode::Shared
        };
        let file = File::from(fd);
        let path = PathBuf::from(format!(
            "<file received from another process, inode {}>",
            id.ino
        ));
        let map = Arc::new(FileMap::of_file(op, &path, &file, offset, nbytes, mode)?);
        let s = Storage::from_file_map(&map, 0, nbytes)?;
        if nbytes > 0 {
            register_region(&mut reg, key, &s);
        }
        Ok(s)
    }
}
