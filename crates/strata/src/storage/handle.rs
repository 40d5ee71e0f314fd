//! Handles to a shared storage: what another process needs to reopen it — an fd (or a
//! name, see Note [shared memory lifetime] in [`super::shm`]) plus a [`SegmentInfo`]. The
//! record that also carries a view (dtype, shape, strides, offset) and the socket transport
//! are tensor-level and live in `interop/shared_tensor.rs`.
//!
//! Handles come from other processes, so reopening checks everything: a file smaller than
//! claimed, an unsealed memfd or a bad name is an [`Error`], never a crash.

use std::os::fd::OwnedFd;

use super::shm::{self, SegmentId, ShmKind};
use super::Storage;
use crate::error::{Error, Result};

/// What a receiver learns about a segment besides its fd or name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentInfo {
    /// Length of the storage in bytes.
    pub nbytes: usize,
    /// The segment's identity in the sender (informational: receivers use their own
    /// `fstat`).
    pub id: SegmentId,
    /// Receivers map it read-only and refuse writes.
    pub read_only: bool,
    /// memfd or named segment.
    pub kind: ShmKind,
    /// The base name of a named segment.
    pub name: Option<String>,
    /// `Some(offset)` when the storage is a region of a regular file mapped shared, from
    /// this byte offset (sent by fd, like a memfd; see Note [sharing file maps] in
    /// [`super::mmap`]).
    pub file_offset: Option<u64>,
}

/// A shared storage ready to travel: a fresh fd for its segment plus its description.
#[derive(Debug)]
pub struct ShmHandle {
    /// An fd of the segment, owned by the handle.
    pub fd: OwnedFd,
    /// The description.
    pub info: SegmentInfo,
}

pub(crate) fn bad(msg: impl Into<String>) -> Error {
    Error::format("shm handle", msg)
}

impl Storage {
    fn segment_info(
        &self,
        op: &'static str,
    ) -> Result<(SegmentInfo, std::sync::Arc<shm::SharedSegment>)> {
        self.check_host(op)?;
        let seg = self.shared_segment().ok_or_else(|| {
            if self.shared_file_map().is_some() {
                Error::value(
                    op,
                    "the storage is a file mapped shared, which has no shared-memory name: it travels by fd",
                )
            } else {
                Error::value(
                    op,
                    "the storage is not in shared memory: call share_memory_() first",
                )
            }
        })?;
        let info = SegmentInfo {
            nbytes: self.nbytes(),
            id: seg.id(),
            read_only: self.is_read_only(),
            kind: seg.kind(),
            name: seg.name().map(str::to_string),
            file_offset: None,
        };
        Ok((info, seg))
    }

    /// A handle (a fresh fd and a description) to send this shared storage.
    ///
    /// # Errors
    /// When the storage is not shared, or no fd can be had (see Note [fd budget]).
    pub fn shm_handle(&self) -> Result<ShmHandle> {
        self.check_host("shm_handle")?;
        if let Some(r) = self.file_region("shm_handle")? {
            return Ok(ShmHandle {
                fd: r.fd,
                info: SegmentInfo {
                    nbytes: self.nbytes(),
                    id: r.id,
                    read_only: self.is_read_only(),
                    kind: ShmKind::Memfd,
                    name: None,
                    file_offset: Some(r.offset),
                },
            });
        }
        let (info, seg) = self.segment_info("shm_handle")?;
        Ok(ShmHandle {
            fd: seg.fd_for_send("shm_handle")?,
            info,
        })
    }

    /// Reopens a storage from a handle received from another process. The same segment
    /// received twice gives the same storage.
    pub fn from_shm_handle(h: ShmHandle) -> Result<Storage> {
        let i = h.info;
        if let Some(off) = i.file_offset {
            return Storage::from_file_fd("from_shm_handle", h.fd, off, i.nbytes, i.read_only);
        }
        Storage::from_shared_fd(
            "from_shm_handle",
            h.fd,
            i.nbytes,
            i.read_only,
            i.kind,
            i.name,
        )
    }

    /// A fresh send name for this storage (a named segment), for one receiver: step 2 of
    /// Note [shared memory lifetime].
    pub fn shm_send_name(&self) -> Result<(String, SegmentInfo)> {
        let (info, seg) = self.segment_info("shm_send_name")?;
        Ok((shm::link_send_name("shm_send_name", &seg)?, info))
    }

    /// Opens (and unlinks) a send name made by [`shm_send_name`](Self::shm_send_name).
    pub fn from_shm_name(send_name: &str, info: &SegmentInfo) -> Result<Storage> {
        let op = "from_shm_name";
        if info.kind != ShmKind::Named || info.file_offset.is_some() {
            return Err(bad("a memfd handle cannot be opened by name"));
        }
        let fd = shm::open_send_name(op, send_name, info.read_only)?;
        Storage::from_shared_fd(
            op,
            fd,
            info.nbytes,
            info.read_only,
            info.kind,
            info.name.clone(),
        )
    }
}
