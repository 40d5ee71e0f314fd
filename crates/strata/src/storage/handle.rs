//! Handles: what another process needs to reopen a shared storage and rebuild a tensor
//! view over it — an fd (or a name, see Note [shared memory lifetime] in [`super::shm`])
//! plus a small serialised record of the segment and of the view (dtype, shape, strides,
//! offset). [`send_tensor`] / [`recv_tensor`] carry both over a Unix socket, the fd as
//! `SCM_RIGHTS` ancillary data.
//!
//! Handles come from other processes, so decoding checks everything: a bad record, a
//! file smaller than claimed, an unsealed memfd or a view outside the storage is an
//! [`Error`], never a crash.

use std::io::{IoSlice, IoSliceMut, Read, Write};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;

use rustix::net::{
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, ReturnFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags,
};

use super::shm::{self, SegmentId, ShmKind};
use super::Storage;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::tensor::{Tensor, MAX_NDIM};

const MAGIC: &[u8; 4] = b"STSH";
const VERSION: u8 = 2;
/// Largest record accepted (64 dims and a name fit in far less).
const MAX_RECORD: usize = 4096;

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

/// A tensor's view metadata, as it travels with a handle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorMeta {
    /// Element type.
    pub dtype: DType,
    /// Sizes.
    pub shape: Vec<usize>,
    /// Strides in elements (signed).
    pub strides: Vec<isize>,
    /// Offset in elements.
    pub offset: usize,
}

impl TensorMeta {
    /// The view metadata of `t`.
    pub fn of(t: &Tensor) -> TensorMeta {
        TensorMeta {
            dtype: t.dtype(),
            shape: t.shape().to_vec(),
            strides: t.strides().to_vec(),
            offset: t.offset(),
        }
    }
}

/// A shared storage ready to travel: a fresh fd for its segment plus its description.
#[derive(Debug)]
pub struct ShmHandle {
    /// An fd of the segment, owned by the handle.
    pub fd: OwnedFd,
    /// The description.
    pub info: SegmentInfo,
}

fn bad(msg: impl Into<String>) -> Error {
    Error::format("shm handle", msg)
}

/// Serialises a segment description and a view into the record that travels beside the
/// fd or name.
pub fn encode(info: &SegmentInfo, meta: &TensorMeta) -> Vec<u8> {
    let name = info.name.as_deref().unwrap_or("").as_bytes();
    let mut v = Vec::with_capacity(48 + 16 * meta.shape.len() + name.len());
    v.extend_from_slice(MAGIC);
    let dtype_ix = DType::ALL
        .iter()
        .position(|&d| d == meta.dtype)
        .unwrap_or(0);
    v.extend_from_slice(&[
        VERSION,
        if info.file_offset.is_some() {
            2
        } else {
            (info.kind == ShmKind::Named) as u8
        },
        info.read_only as u8,
        dtype_ix as u8,
    ]);
    for x in [
        info.nbytes as u64,
        info.id.dev,
        info.id.ino,
        meta.offset as u64,
        info.file_offset.unwrap_or(0),
    ] {
        v.extend_from_slice(&x.to_le_bytes());
    }
    v.extend_from_slice(&(meta.shape.len() as u32).to_le_bytes());
    v.extend_from_slice(&(name.len() as u32).to_le_bytes());
    for &n in &meta.shape {
        v.extend_from_slice(&(n as u64).to_le_bytes());
    }
    for &s in &meta.strides {
        v.extend_from_slice(&(s as i64).to_le_bytes());
    }
    v.extend_from_slice(name);
    v
}

struct Cursor<'a>(&'a [u8]);

impl Cursor<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8]> {
        if self.0.len() < n {
            return Err(bad("the record is truncated"));
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }
    fn u64(&mut self) -> Result<u64> {
        let b = self.take(8)?;
        Ok(u64::from_le_bytes(b.try_into().map_err(|_| bad("u64"))?))
    }
    fn u32(&mut self) -> Result<u32> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes(b.try_into().map_err(|_| bad("u32"))?))
    }
}

fn to_usize(x: u64, what: &str) -> Result<usize> {
    usize::try_from(x).map_err(|_| bad(format!("{what} {x} does not fit this machine")))
}

/// Parses a record made by [`encode`], checking every field.
pub fn decode(bytes: &[u8]) -> Result<(SegmentInfo, TensorMeta)> {
    if bytes.len() > MAX_RECORD {
        return Err(bad(format!("a {}-byte record is too long", bytes.len())));
    }
    let mut c = Cursor(bytes);
    if c.take(4)? != MAGIC {
        return Err(bad("not a strata shared-memory handle (bad magic)"));
    }
    let head = c.take(4)?;
    let (version, named, ro, dt) = (head[0], head[1], head[2], head[3]);
    if version != VERSION {
        return Err(bad(format!("handle version {version}, expected {VERSION}")));
    }
    if named > 2 || ro > 1 {
        return Err(bad("bad flags"));
    }
    let dtype = *DType::ALL
        .get(dt as usize)
        .ok_or_else(|| bad(format!("unknown dtype code {dt}")))?;
    let nbytes = to_usize(c.u64()?, "nbytes")?;
    let id = SegmentId {
        dev: c.u64()?,
        ino: c.u64()?,
    };
    let offset = to_usize(c.u64()?, "offset")?;
    let file_offset = c.u64()?;
    let ndim = c.u32()? as usize;
    let name_len = c.u32()? as usize;
    if ndim > MAX_NDIM {
        return Err(bad(format!("{ndim} dims (at most {MAX_NDIM})")));
    }
    let mut shape = Vec::with_capacity(ndim);
    for _ in 0..ndim {
        shape.push(to_usize(c.u64()?, "size")?);
    }
    let mut strides = Vec::with_capacity(ndim);
    for _ in 0..ndim {
        let s = c.u64()? as i64;
        strides.push(isize::try_from(s).map_err(|_| bad(format!("stride {s}")))?);
    }
    let name = if named == 1 {
        let raw = c.take(name_len)?;
        let n = std::str::from_utf8(raw).map_err(|_| bad("the name is not UTF-8"))?;
        shm::check_name("shm handle", n)?;
        Some(n.to_string())
    } else if name_len != 0 {
        return Err(bad("a memfd or file handle carries a name"));
    } else {
        None
    };
    if !c.0.is_empty() {
        return Err(bad("trailing bytes after the record"));
    }
    let info = SegmentInfo {
        nbytes,
        id,
        read_only: ro == 1,
        kind: if named == 1 {
            ShmKind::Named
        } else {
            ShmKind::Memfd
        },
        name,
        file_offset: (named == 2).then_some(file_offset),
    };
    if named != 2 && file_offset != 0 {
        return Err(bad("a shared-memory handle carries a file offset"));
    }
    let meta = TensorMeta {
        dtype,
        shape,
        strides,
        offset,
    };
    Ok((info, meta))
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

impl Tensor {
    /// Moves the storage into a memfd in place (PyTorch's `share_memory_`): the bytes are
    /// copied once and every view of the storage sees the shared copy; a second call does
    /// nothing, nor does a call on a file mapped shared (already shareable: it travels as
    /// the file, see Note [sharing file maps] in [`super::mmap`]).
    ///
    /// # Errors
    /// Refused while a NumPy array, buffer or DLPack capsule still points at the old bytes,
    /// and for memory another owner keeps using (a NumPy array's, a DLPack producer's):
    /// moving it would silently detach later writes (see [`Storage::check_movable`]).
    pub fn share_memory_(&self) -> Result<&Tensor> {
        self.storage().share_memory_()?;
        Ok(self)
    }

    /// True when the storage lives in memory other processes can map (shared memory, or a
    /// file mapped shared).
    pub fn is_shared(&self) -> bool {
        self.storage().is_shared()
    }

    /// A zeroed contiguous tensor created directly in shared memory of `kind`.
    pub fn zeros_shared(shape: &[usize], dtype: DType, kind: ShmKind) -> Result<Tensor> {
        let layout = Layout::contiguous(shape)?;
        let numel = layout.numel();
        let nbytes = numel.checked_mul(dtype.itemsize()).ok_or_else(|| {
            Error::overflow("zeros_shared", format!("{numel} elements of {dtype}"))
        })?;
        Tensor::from_parts(Storage::zeroed_shared(nbytes, kind)?, layout, dtype)
    }

    /// An fd and a record to rebuild this view in another process (moving the storage
    /// into a memfd first when it is not shared yet).
    pub fn to_shm_handle(&self) -> Result<(OwnedFd, Vec<u8>)> {
        self.storage().share_memory_()?;
        let h = self.storage().shm_handle()?;
        Ok((h.fd, encode(&h.info, &TensorMeta::of(self))))
    }

    /// Rebuilds a view from [`to_shm_handle`](Self::to_shm_handle)'s fd and record.
    pub fn from_shm_handle(fd: OwnedFd, record: &[u8]) -> Result<Tensor> {
        let (info, meta) = decode(record)?;
        let storage = Storage::from_shm_handle(ShmHandle { fd, info })?;
        Self::over(storage, meta)
    }

    /// A send name and a record for this view; the storage must be a named segment.
    pub fn to_shm_name(&self) -> Result<(String, Vec<u8>)> {
        let (name, info) = self.storage().shm_send_name()?;
        Ok((name, encode(&info, &TensorMeta::of(self))))
    }

    /// Rebuilds a view from [`to_shm_name`](Self::to_shm_name)'s name and record.
    pub fn from_shm_name(send_name: &str, record: &[u8]) -> Result<Tensor> {
        let (info, meta) = decode(record)?;
        let storage = Storage::from_shm_name(send_name, &info)?;
        Self::over(storage, meta)
    }

    fn over(storage: Storage, meta: TensorMeta) -> Result<Tensor> {
        let layout = Layout::new(&meta.shape, &meta.strides, meta.offset)?;
        Tensor::from_parts(storage, layout, meta.dtype)
    }
}

fn io_err(op: &'static str, e: impl std::fmt::Display) -> Error {
    Error::Resource {
        op,
        msg: e.to_string(),
    }
}

/// Sends `t` over a Unix stream socket: its storage's fd as `SCM_RIGHTS` and its record
/// (length-prefixed). The storage is moved into a memfd first when it is not shared.
pub fn send_tensor(sock: &UnixStream, t: &Tensor) -> Result<()> {
    let op = "send_tensor";
    let (fd, record) = t.to_shm_handle()?;
    let mut frame = (record.len() as u32).to_le_bytes().to_vec();
    frame.extend_from_slice(&record);
    let fds = [fd.as_fd()];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if !control.push(SendAncillaryMessage::ScmRights(&fds)) {
        return Err(io_err(op, "ancillary buffer too small"));
    }
    let sent = rustix::net::sendmsg(
        sock,
        &[IoSlice::new(&frame)],
        &mut control,
        SendFlags::NOSIGNAL,
    )
    .map_err(|e| io_err(op, std::io::Error::from(e)))?;
    (&*sock)
        .write_all(&frame[sent..])
        .map_err(|e| io_err(op, e))
}

/// Receives a tensor sent by [`send_tensor`]. Blocks until one arrives.
///
/// # Errors
/// On end of stream, a malformed record, a missing fd, or a segment that fails the
/// checks of [`Storage::from_shm_handle`].
pub fn recv_tensor(sock: &UnixStream) -> Result<Tensor> {
    let op = "recv_tensor";
    let mut len = [0u8; 4];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(2))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let msg = rustix::net::recvmsg(
        sock,
        &mut [IoSliceMut::new(&mut len)],
        &mut control,
        RecvFlags::CMSG_CLOEXEC,
    )
    .map_err(|e| io_err(op, std::io::Error::from(e)))?;
    let mut fds: Vec<OwnedFd> = Vec::new();
    for m in control.drain() {
        if let RecvAncillaryMessage::ScmRights(it) = m {
            fds.extend(it);
        }
    }
    if msg.bytes == 0 {
        return Err(io_err(op, "the peer closed the socket"));
    }
    if msg.flags.contains(ReturnFlags::CTRUNC) {
        return Err(bad(
            "ancillary data truncated (the peer sent more than one fd)",
        ));
    }
    (&*sock)
        .read_exact(&mut len[msg.bytes..])
        .map_err(|e| io_err(op, e))?;
    let n = u32::from_le_bytes(len) as usize;
    if n > MAX_RECORD {
        return Err(bad(format!("a {n}-byte record is too long")));
    }
    let mut record = vec![0u8; n];
    (&*sock)
        .read_exact(&mut record)
        .map_err(|e| io_err(op, e))?;
    if fds.len() != 1 {
        return Err(bad(format!(
            "expected one fd with the record, got {}",
            fds.len()
        )));
    }
    let fd = fds.pop().ok_or_else(|| bad("no fd"))?;
    Tensor::from_shm_handle(fd, &record)
}
