//! safetensors files through the `safetensors` crate: save a set of named tensors, load
//! all of them or one by name, memory-mapped (zero-copy) where the data is aligned.
//!
//! Format: a u64 LE header length N, N bytes of JSON (`{"name": {"dtype", "shape",
//! "data_offsets": [begin, end)}, "__metadata__": {str: str}}`), then the data, C order,
//! little-endian, with no holes. The crate validates the offsets (contiguous, in range,
//! exactly the size of dtype × shape) and the header size (≤ 100 MB); strata adds the
//! checks the crate leaves out (the header must start with `{`) and maps every error to
//! [`Error::Format`].
//!
//! Saving: non-contiguous tensors are compacted; tensors whose memory overlaps (two views
//! of one storage, or one tensor under two names) are refused with an error naming both,
//! as the safetensors PyTorch API refuses them — clone one to save both. Loading: each
//! tensor gets its own private copy-on-write mapping of its bytes (writable, the file never
//! changes, no two tensors alias) when its data offset is aligned for its dtype, and a copy
//! otherwise. A [`SafetensorsFile`] holds the file it opened (and a map of it) until it is
//! closed: every tensor comes from that file, even if the path is replaced meanwhile
//! (`os.replace`), as the `safetensors` package does.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ::safetensors::tensor::{Metadata, SafeTensorError, SafeTensors, View};
use ::safetensors::Dtype as StDtype;

use super::tensor_from_bytes;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::storage::borrow;
use crate::storage::{FileMap, MapMode, Storage};
use crate::tensor::Tensor;

const OP_LOAD: &str = "safetensors load";
const OP_SAVE: &str = "safetensors save";

/// The safetensors dtype of a strata dtype; the format has no complex dtypes.
///
/// # Errors
/// A complex dtype.
pub fn st_dtype(d: DType) -> Result<StDtype> {
    Ok(match d {
        DType::Bool => StDtype::BOOL,
        DType::U8 => StDtype::U8,
        DType::I8 => StDtype::I8,
        DType::I16 => StDtype::I16,
        DType::U16 => StDtype::U16,
        DType::I32 => StDtype::I32,
        DType::U32 => StDtype::U32,
        DType::I64 => StDtype::I64,
        DType::U64 => StDtype::U64,
        DType::F16 => StDtype::F16,
        DType::BF16 => StDtype::BF16,
        DType::F32 => StDtype::F32,
        DType::F64 => StDtype::F64,
        DType::C64 | DType::C128 => {
            return Err(Error::dtype(
                OP_SAVE,
                format!("the safetensors format has no {d} dtype; save the real pairs (view_as_real) instead"),
            ))
        }
    })
}

/// The strata dtype of a safetensors dtype, or a dtype error (F8, F4, complex, …).
pub fn from_st_dtype(d: StDtype, name: &str) -> Result<DType> {
    Ok(match d {
        StDtype::BOOL => DType::Bool,
        StDtype::U8 => DType::U8,
        StDtype::I8 => DType::I8,
        StDtype::I16 => DType::I16,
        StDtype::U16 => DType::U16,
        StDtype::I32 => DType::I32,
        StDtype::U32 => DType::U32,
        StDtype::I64 => DType::I64,
        StDtype::U64 => DType::U64,
        StDtype::F16 => DType::F16,
        StDtype::BF16 => DType::BF16,
        StDtype::F32 => DType::F32,
        StDtype::F64 => DType::F64,
        other => {
            return Err(Error::dtype(
                OP_LOAD,
                format!("tensor {name:?} has dtype {other:?}, which strata does not support"),
            ))
        }
    })
}

/// One tensor's entry: name, dtype, shape, absolute byte offset in the file, byte length.
type Entry = (String, DType, Vec<usize>, usize, usize);

/// Named tensors and the optional `__metadata__` of a file.
pub type Loaded = (Vec<(String, Tensor)>, Option<HashMap<String, String>>);

fn format_err(e: SafeTensorError) -> Error {
    Error::format(OP_LOAD, format!("malformed safetensors data: {e}"))
}

/// Parses and validates the header at the start of `buf` (the whole file): returns the
/// header length N and the metadata.
fn parse(buf: &[u8]) -> Result<(usize, Metadata)> {
    if buf.len() >= 9 && buf[8] != b'{' {
        return Err(Error::format(
            OP_LOAD,
            format!(
                "malformed safetensors data: the header must start with '{{', found byte {:#04x}",
                buf[8]
            ),
        ));
    }
    SafeTensors::read_metadata(buf).map_err(format_err)
}

/// Name, dtype, shape and absolute byte range in the file of every tensor, in file order.
fn entries(n: usize, meta: &Metadata) -> Result<Vec<Entry>> {
    let mut out = Vec::new();
    for name in meta.offset_keys() {
        let info = meta
            .info(&name)
            .ok_or_else(|| Error::format(OP_LOAD, format!("tensor {name:?} has no entry")))?;
        let dtype = from_st_dtype(info.dtype, &name)?;
        let (b, e) = info.data_offsets;
        // The offsets come from the file: checked (the reader compares them with the
        // file's length afterwards).
        let bad = || {
            Error::format(
                OP_LOAD,
                format!("tensor {name:?} has data offsets [{b}, {e})"),
            )
        };
        let start = n
            .checked_add(8)
            .and_then(|x| x.checked_add(b))
            .ok_or_else(bad)?;
        let len = e.checked_sub(b).ok_or_else(bad)?;
        out.push((name, dtype, info.shape.clone(), start, len));
    }
    Ok(out)
}

/// A safetensors file opened for lazy loading: the header is parsed once; tensors are
/// mapped one at a time by name.
#[derive(Debug)]
pub struct SafetensorsFile {
    path: PathBuf,
    /// The file opened; tensors are mapped from it, never from the path.
    file: File,
    map: Arc<FileMap>,
    header_len: usize,
    meta: Metadata,
}

impl SafetensorsFile {
    /// Opens and validates the file at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<SafetensorsFile> {
        let path = path.as_ref();
        let f = File::open(path).map_err(|e| Error::io(OP_LOAD, path, &e))?;
        let len = f
            .metadata()
            .map_err(|e| Error::io(OP_LOAD, path, &e))?
            .len();
        let len = usize::try_from(len).map_err(|_| Error::overflow(OP_LOAD, "file size"))?;
        let map = Arc::new(FileMap::of_file(
            OP_LOAD,
            path,
            &f,
            0,
            len,
            MapMode::ReadOnly,
        )?);
        let (header_len, meta) = parse(map.bytes())?;
        Ok(SafetensorsFile {
            path: path.to_path_buf(),
            file: f,
            map,
            header_len,
            meta,
        })
    }

    /// Tensor names, in the order their data lies in the file.
    pub fn names(&self) -> Vec<String> {
        self.meta.offset_keys()
    }

    /// The `__metadata__` map, if the file has one.
    pub fn metadata(&self) -> Option<&HashMap<String, String>> {
        self.meta.metadata().as_ref()
    }

    /// The tensor called `name`.
    ///
    /// # Errors
    /// An index error naming the tensor when the file has no such tensor.
    pub fn get(&self, name: &str) -> Result<Tensor> {
        let all = entries(self.header_len, &self.meta)?;
        let (_, dtype, shape, start, len) =
            all.into_iter()
                .find(|e| e.0 == name)
                .ok_or_else(|| Error::Index {
                    op: OP_LOAD,
                    msg: format!("no tensor named {name:?} in {}", self.path.display()),
                })?;
        let layout = Layout::contiguous(&shape)?;
        if start % dtype.itemsize() == 0 {
            let map = FileMap::of_file(
                OP_LOAD,
                &self.path,
                &self.file,
                start as u64,
                len,
                MapMode::CopyOnWrite,
            )?;
            let storage = Storage::from_file_map(&Arc::new(map), 0, len)?;
            return Tensor::from_parts(storage, layout, dtype);
        }
        tensor_from_bytes(
            OP_LOAD,
            &self.map.bytes()[start..start + len],
            &shape,
            dtype,
        )
    }

    /// Every tensor, in file order.
    pub fn load_all(&self) -> Result<Vec<(String, Tensor)>> {
        self.names()
            .into_iter()
            .map(|n| self.get(&n).map(|t| (n, t)))
            .collect()
    }
}

/// Parses a whole safetensors buffer held in memory, copying each tensor out.
pub fn deserialize_safetensors(buf: &[u8]) -> Result<Loaded> {
    let (n, meta) = parse(buf)?;
    let tensors = entries(n, &meta)?
        .into_iter()
        .map(|(name, dtype, shape, start, len)| {
            tensor_from_bytes(OP_LOAD, &buf[start..start + len], &shape, dtype).map(|t| (name, t))
        })
        .collect::<Result<_>>()?;
    Ok((tensors, meta.metadata().clone()))
}

/// One tensor prepared for writing: compact, bool stored as bytes, borrowed for reading.
struct Prepared {
    dtype: StDtype,
    shape: Vec<usize>,
    tensor: Tensor,
}

impl View for &Prepared {
    fn dtype(&self) -> StDtype {
        self.dtype
    }

    fn shape(&self) -> &[usize] {
        &self.shape
    }

    fn data(&self) -> Cow<'_, [u8]> {
        let n = self.data_len();
        if n == 0 {
            return Cow::Borrowed(&[]);
        }
        let t = &self.tensor;
        let start = t.storage().data_ptr().wrapping_add(t.byte_offset());
        // SAFETY: `t` is contiguous (made so in `prepare`), so its `n` bytes from its first
        // element lie inside its storage; `serialize_with` holds a shared borrow of every
        // prepared storage while the crate calls `data`, and storage bytes are initialised.
        Cow::Borrowed(unsafe { std::slice::from_raw_parts(start, n) })
    }

    fn data_len(&self) -> usize {
        self.tensor.numel() * self.tensor.dtype().itemsize()
    }
}

fn prepare(tensors: &[(&str, &Tensor)]) -> Result<Vec<(String, Prepared)>> {
    for (i, (a, ta)) in tensors.iter().enumerate() {
        if *a == "__metadata__" {
            return Err(Error::Value {
                op: OP_SAVE,
                msg: "\"__metadata__\" is reserved and cannot name a tensor".into(),
            });
        }
        for (b, tb) in &tensors[i + 1..] {
            if a == b {
                return Err(Error::Value {
                    op: OP_SAVE,
                    msg: format!("two tensors are named {a:?}"),
                });
            }
            if ta.numel() > 0 && tb.numel() > 0 && ta.may_share_memory(tb) {
                return Err(Error::Value {
                    op: OP_SAVE,
                    msg: format!(
                        "tensors {a:?} and {b:?} share memory; safetensors stores every tensor separately, so save a clone() of one of them"
                    ),
                });
            }
        }
    }
    tensors
        .iter()
        .map(|(name, t)| {
            let dtype = st_dtype(t.dtype())?;
            let c = if t.dtype() == DType::Bool {
                // Bool bytes need not be 0/1 in memory; the file must hold 0/1.
                t.to_dtype(DType::U8)?
            } else {
                t.contiguous()?
            };
            Ok((
                (*name).to_owned(),
                Prepared {
                    dtype,
                    shape: t.shape().to_vec(),
                    tensor: c,
                },
            ))
        })
        .collect()
}

fn serialize_with<R>(
    tensors: &[(&str, &Tensor)],
    f: impl FnOnce(Vec<(String, &Prepared)>) -> std::result::Result<R, SafeTensorError>,
) -> Result<R> {
    for (_, t) in tensors {
        t.check_host(OP_SAVE)?;
    }
    let prepared = prepare(tensors)?;
    let storages: Vec<(&Storage, bool)> = prepared
        .iter()
        .map(|(_, p)| (p.tensor.storage(), false))
        .collect();
    let _guard = borrow::acquire(OP_SAVE, &storages)?;
    let views = prepared.iter().map(|(n, p)| (n.clone(), p)).collect();
    f(views).map_err(|e| match e {
        SafeTensorError::IoError(e) => Error::Io {
            op: OP_SAVE,
            path: String::new(),
            msg: e.to_string(),
        },
        e => Error::Value {
            op: OP_SAVE,
            msg: e.to_string(),
        },
    })
}

/// The bytes of a safetensors file holding `tensors` and `metadata`.
pub fn serialize_safetensors(
    tensors: &[(&str, &Tensor)],
    metadata: Option<HashMap<String, String>>,
) -> Result<Vec<u8>> {
    serialize_with(tensors, |v| ::safetensors::serialize(v, metadata))
}

/// Saves `tensors` and `metadata` to the safetensors file at `path`.
pub fn save_safetensors(
    path: impl AsRef<Path>,
    tensors: &[(&str, &Tensor)],
    metadata: Option<HashMap<String, String>>,
) -> Result<()> {
    let path = path.as_ref();
    serialize_with(tensors, |v| {
        ::safetensors::serialize_to_file(v, metadata, path)
    })
    .map_err(|e| match e {
        Error::Io { op, msg, .. } => Error::Io {
            op,
            path: path.display().to_string(),
            msg,
        },
        e => e,
    })
}

/// Loads every tensor of the safetensors file at `path` (see [`SafetensorsFile`]).
pub fn load_safetensors(path: impl AsRef<Path>) -> Result<Vec<(String, Tensor)>> {
    SafetensorsFile::open(path)?.load_all()
}
