//! File-backed storage: a memory map (memmap2) is just another foreign owner.
//!
//! Three modes, as `numpy.memmap` and `torch.from_file` offer them: a read-only map, a
//! shared writable map whose writes reach the file, and a private copy-on-write map whose
//! writes stay in this process.
//!
//! A mapped file that another process truncates or rewrites while strata reads it is
//! outside what Rust can guard against (the same caveat as every memory map): keep mapped
//! files unchanged while their tensors live.

use std::fs::{File, OpenOptions};
use std::path::Path;
use std::ptr::NonNull;
use std::sync::Arc;

use memmap2::{Mmap, MmapMut, MmapOptions};

use super::{Backing, Storage};
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
        let flen = file.metadata().map_err(|e| Error::io(op, path, &e))?.len();
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
        if len == 0 {
            return Ok(FileMap {
                map: MapKind::Empty,
                mode,
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
        Ok(FileMap { map, mode })
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
