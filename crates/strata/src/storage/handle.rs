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

/// A handle made by hand, as text another process can be given (printed, pasted, sent
/// in a message): `"<send name>:<base name>:<nbytes>"`, with `":ro"` appended for
/// read-only memory. The send name is opened and unlinked by the one receiver (step 3 of
/// Note [shared memory lifetime] in [`super::shm`]); the base name lets the receiver
/// send the storage on by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameHandle {
    /// The send name, for one receiver.
    pub send_name: String,
    /// The segment's base name.
    pub base_name: String,
    /// Length of the storage in bytes.
    pub nbytes: usize,
    /// Receivers map it read-only.
    pub read_only: bool,
}

impl std::fmt::Display for NameHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}:{}", self.send_name, self.base_name, self.nbytes)?;
        if self.read_only {
            f.write_str(":ro")?;
        }
        Ok(())
    }
}

impl std::str::FromStr for NameHandle {
    type Err = Error;

    /// Parses the text [`Display`](std::fmt::Display) writes; anything else is a format
    /// error quoting the text.
    fn from_str(text: &str) -> Result<NameHandle> {
        let op = "from_shared_filename";
        let bad = || {
            Error::format(
                op,
                format!("{text:?} is not a shared-memory handle (expected \"<send name>:<base name>:<nbytes>\", as share_filename() writes it)"),
            )
        };
        let mut parts = text.split(':');
        let (send, base, n) = match (parts.next(), parts.next(), parts.next()) {
            (Some(s), Some(b), Some(n)) => (s, b, n),
            _ => return Err(bad()),
        };
        let read_only = match (parts.next(), parts.next()) {
            (None, _) => false,
            (Some("ro"), None) => true,
            _ => return Err(bad()),
        };
        if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        let nbytes = n.parse::<usize>().map_err(|_| {
            Error::overflow(op, format!("the handle's size {n} does not fit in usize"))
        })?;
        shm::check_name(op, send)?;
        shm::check_name(op, base)?;
        Ok(NameHandle {
            send_name: send.to_string(),
            base_name: base.to_string(),
            nbytes,
            read_only,
        })
    }
}

impl Storage {
    /// A handle by name for this storage, for one receiver ([`NameHandle`]; PyTorch's
    /// `_share_filename_cpu_`). A storage not yet shared first moves into a named segment
    /// (whatever the current strategy); one in a memfd is refused (it has no name).
    ///
    /// # Errors
    /// As [`share_memory_with`](Self::share_memory_with) and
    /// [`shm_send_name`](Self::shm_send_name).
    pub fn share_by_name(&self) -> Result<NameHandle> {
        if !self.is_shared() {
            self.share_memory_with(ShmKind::Named)?;
        }
        let (send_name, info) = self.shm_send_name()?;
        Ok(NameHandle {
            send_name,
            base_name: info.name.unwrap_or_default(),
            nbytes: info.nbytes,
            read_only: info.read_only,
        })
    }

    /// Reopens a storage from a [`NameHandle`] made in another process (PyTorch's
    /// `_new_shared_filename_cpu`). The segment must hold exactly the bytes the handle
    /// claims.
    ///
    /// # Errors
    /// A name that is not strata's, a send name already opened or whose sender exited (an
    /// OS error saying so), or a size that disagrees with the segment.
    pub fn from_name_handle(h: &NameHandle) -> Result<Storage> {
        let op = "from_shared_filename";
        shm::check_name(op, &h.base_name)?;
        let fd = shm::open_send_name(op, &h.send_name, h.read_only)?;
        exact_size(op, &fd, h.nbytes)?;
        Storage::from_shared_fd(
            op,
            fd,
            h.nbytes,
            h.read_only,
            ShmKind::Named,
            Some(h.base_name.clone()),
        )
    }

    /// A new fd of this storage's memfd, owned by the caller, and the storage's length
    /// (PyTorch's `_share_fd_cpu_`; pass the fd to one other process, e.g. with
    /// `socket.send_fds`, then close it). A storage not yet shared first moves into a
    /// memfd (whatever the current strategy).
    ///
    /// # Errors
    /// A storage in a named segment or a file map (send those by name, or through
    /// `multiprocessing`), or as [`shm_handle`](Self::shm_handle).
    pub fn share_by_fd(&self) -> Result<(OwnedFd, usize)> {
        let op = "share_fd";
        if !self.is_shared() {
            self.share_memory_with(ShmKind::Memfd)?;
        }
        let h = self.shm_handle()?;
        if h.info.kind != ShmKind::Memfd || h.info.file_offset.is_some() {
            return Err(Error::value(
                op,
                "the storage is not in a memfd (it is a named segment or a file mapped shared): send it with share_filename(), or through strata.multiprocessing",
            ));
        }
        Ok((h.fd, h.info.nbytes))
    }

    /// Reopens a storage from the fd of a memfd received by hand (PyTorch's
    /// `_new_shared_fd_cpu`). `fd` stays the caller's: the storage maps a duplicate.
    /// Read-only when `fd` was opened read-only. The memfd must be sealed against
    /// shrinking and hold exactly `nbytes`.
    ///
    /// # Errors
    /// A closed or foreign fd (an OS error), an unsealed memfd, or a size that disagrees.
    pub fn from_fd_handle(fd: std::os::fd::BorrowedFd<'_>, nbytes: usize) -> Result<Storage> {
        let op = "from_shared_fd";
        let own = rustix::io::fcntl_dupfd_cloexec(fd, 0)
            .map_err(|e| shm::os_err(op, "duplicating the handle's fd", e))?;
        let mode = rustix::fs::fcntl_getfl(&own)
            .map_err(|e| shm::os_err(op, "reading the handle's fd flags", e))?;
        let read_only = !mode.intersects(rustix::fs::OFlags::RDWR | rustix::fs::OFlags::WRONLY);
        exact_size(op, &own, nbytes)?;
        Storage::from_shared_fd(op, own, nbytes, read_only, ShmKind::Memfd, None)
    }
}

/// Refuses a hand-made handle whose size disagrees with its segment's.
fn exact_size(op: &'static str, fd: &OwnedFd, nbytes: usize) -> Result<()> {
    let (_, size) = shm::file_id(op, fd)?;
    if size != nbytes as u64 {
        return Err(Error::format(
            op,
            format!("the handle claims {nbytes} bytes but its shared-memory file holds {size}"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_handles_print_and_parse_back() {
        let h = NameHandle {
            send_name: "strata-12-3-ab".into(),
            base_name: "strata-12-1-cd".into(),
            nbytes: 100,
            read_only: false,
        };
        assert_eq!(h.to_string(), "strata-12-3-ab:strata-12-1-cd:100");
        assert_eq!(h.to_string().parse::<NameHandle>().unwrap(), h);
        let ro = NameHandle {
            read_only: true,
            ..h.clone()
        };
        assert_eq!(ro.to_string().parse::<NameHandle>().unwrap(), ro);
        for text in [
            "",
            "strata-1",
            "strata-1:strata-2",
            "strata-1:strata-2:",
            "strata-1:strata-2:-5",
            "strata-1:strata-2:1e3",
            "strata-1:strata-2:10:rw",
            "strata-1:strata-2:10:ro:x",
            "/etc/passwd:strata-2:10",
            "strata-1:../x:10",
        ] {
            let e = text.parse::<NameHandle>().unwrap_err();
            assert!(matches!(e, Error::Format { .. }), "{text:?}: {e}");
        }
        let e = "strata-1:strata-2:99999999999999999999999"
            .parse::<NameHandle>()
            .unwrap_err();
        assert!(matches!(e, Error::Overflow { .. }), "{e}");
    }

    #[test]
    fn hand_made_handles_reopen_the_same_bytes() {
        let s = Storage::zeroed(64).unwrap();
        let (fd, n) = s.share_by_fd().unwrap();
        assert_eq!(n, 64);
        // In this process the segment is already mapped: the same storage comes back.
        let r = Storage::from_fd_handle(std::os::fd::AsFd::as_fd(&fd), 64).unwrap();
        assert!(r.same(&s));
        let e = Storage::from_fd_handle(std::os::fd::AsFd::as_fd(&fd), 65).unwrap_err();
        assert!(e.to_string().contains("claims 65 bytes"), "{e}");
        // A memfd storage has no name; a named one cannot go by fd.
        assert!(s.share_by_name().unwrap_err().to_string().contains("memfd"));
        let t = Storage::zeroed(32).unwrap();
        let h = t.share_by_name().unwrap();
        assert_eq!(h.nbytes, 32);
        assert!(t
            .share_by_fd()
            .unwrap_err()
            .to_string()
            .contains("not in a memfd"));
        let wrong = NameHandle {
            nbytes: 31,
            ..h.clone()
        };
        let e = Storage::from_name_handle(&wrong).unwrap_err();
        assert!(e.to_string().contains("claims 31 bytes"), "{e}");
        // The send name was unlinked by the failed open: a handle is good for one receiver.
        let e = Storage::from_name_handle(&h).unwrap_err();
        assert!(matches!(e, Error::Resource { .. }), "{e}");
        let h2 = t.share_by_name().unwrap();
        assert!(Storage::from_name_handle(&h2).unwrap().same(&t));
    }
}
