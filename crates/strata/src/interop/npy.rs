//! NumPy's `.npy` format, versions 1.0, 2.0 and 3.0: save and load, optionally memory
//! mapped (zero-copy).
//!
//! A file is the magic `\x93NUMPY`, a major and minor version byte, the header length
//! (u16 LE in 1.0, u32 LE in 2.0 and 3.0), then a Python dict literal such as
//! `{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }` padded with spaces and
//! ending in `\n`, so the data starts at a multiple of 64 bytes. Version 3.0 allows a UTF-8
//! header; 1.0 and 2.0 are latin-1.
//!
//! Loading: a `fortran_order` file becomes a zero-copy F-strided view; big-endian data is
//! byte-swapped into a fresh tensor (never misread); object, structured, string
//! and datetime dtypes are refused with errors naming the descr.

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::Path;

use super::with_row_major_bytes;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::{checked_numel, contiguous_strides, f_contiguous_strides, Layout};
use crate::storage::{FileMap, MapMode, Storage};
use crate::tensor::{Tensor, MAX_NDIM};

/// The magic string that starts every `.npy` file.
pub const MAGIC: &[u8; 6] = b"\x93NUMPY";
/// Data alignment of files strata writes (NumPy's `ARRAY_ALIGN`).
pub const ALIGN: usize = 64;
/// NumPy's default cap on the header length (`max_header_size`).
pub const DEFAULT_MAX_HEADER_LEN: usize = 10_000;

/// How [`load_npy`] reads a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NpyLoadOptions {
    /// `None` reads the data into memory; `Some(mode)` maps it (zero-copy) when the data
    /// is little-endian and aligned for its dtype, and copies otherwise (except
    /// [`MapMode::Shared`], whose writes must reach the file: then it is an error).
    pub mmap: Option<MapMode>,
    /// Largest header accepted, in bytes.
    pub max_header_len: usize,
}

impl Default for NpyLoadOptions {
    fn default() -> Self {
        NpyLoadOptions {
            mmap: None,
            max_header_len: DEFAULT_MAX_HEADER_LEN,
        }
    }
}

/// A parsed `.npy` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NpyHeader {
    /// Format version `(major, minor)`.
    pub version: (u8, u8),
    /// Element type.
    pub dtype: DType,
    /// True for big-endian multi-byte data.
    pub big_endian: bool,
    /// True for column-major data.
    pub fortran_order: bool,
    /// The array's shape.
    pub shape: Vec<usize>,
    /// Byte offset of the data in the file.
    pub data_offset: usize,
    /// Byte length of the data.
    pub data_len: usize,
}

const OP_LOAD: &str = "npy load";
const OP_SAVE: &str = "npy save";

fn bad(msg: impl Into<String>) -> Error {
    Error::format(OP_LOAD, msg)
}

/// The `.npy` descr of a dtype (`'<f4'`, `'|b1'`, …).
pub fn descr_of(dtype: DType) -> Result<&'static str> {
    Ok(match dtype {
        DType::Bool => "|b1",
        DType::U8 => "|u1",
        DType::I8 => "|i1",
        DType::I16 => "<i2",
        DType::U16 => "<u2",
        DType::I32 => "<i4",
        DType::U32 => "<u4",
        DType::I64 => "<i8",
        DType::U64 => "<u8",
        DType::F16 => "<f2",
        DType::F32 => "<f4",
        DType::F64 => "<f8",
        DType::C64 => "<c8",
        DType::C128 => "<c16",
        DType::BF16 => {
            return Err(Error::dtype(
                OP_SAVE,
                "bfloat16 has no .npy type code; save it with safetensors (or convert to float32)",
            ))
        }
    })
}

/// Parses a descr string into (dtype, big-endian).
fn parse_descr(d: &str) -> Result<(DType, bool)> {
    let unsupported = |what: &str| {
        Error::dtype(
            OP_LOAD,
            format!("{what} (descr {d:?}) are not supported; strata loads bool, integer and float arrays"),
        )
    };
    let mut chars = d.chars();
    let (order, rest) = match chars.next() {
        Some(c @ ('<' | '>' | '|' | '=')) => (c, chars.as_str()),
        _ => ('=', d),
    };
    let kind = rest
        .chars()
        .next()
        .ok_or_else(|| bad(format!("empty descr {d:?}")))?;
    match kind {
        'O' => return Err(unsupported("object arrays")),
        'V' => return Err(unsupported("structured or void dtypes")),
        'U' | 'S' | 'a' => return Err(unsupported("string dtypes")),
        'M' | 'm' => return Err(unsupported("datetime dtypes")),
        _ => {}
    }
    let size: usize = rest[kind.len_utf8()..]
        .parse()
        .map_err(|_| bad(format!("unrecognised descr {d:?}")))?;
    let dtype = match (kind, size) {
        ('b', 1) => DType::Bool,
        ('u', 1) => DType::U8,
        ('i', 1) => DType::I8,
        ('i', 2) => DType::I16,
        ('u', 2) => DType::U16,
        ('i', 4) => DType::I32,
        ('u', 4) => DType::U32,
        ('i', 8) => DType::I64,
        ('u', 8) => DType::U64,
        ('f', 2) => DType::F16,
        ('f', 4) => DType::F32,
        ('f', 8) => DType::F64,
        ('c', 8) => DType::C64,
        ('c', 16) => DType::C128,
        ('c', _) => {
            return Err(unsupported(
                "complex dtypes other than complex64 and complex128",
            ))
        }
        _ => return Err(bad(format!("unrecognised descr {d:?}"))),
    };
    let big = order == '>' || (order == '=' && cfg!(target_endian = "big"));
    Ok((dtype, big && dtype.itemsize() > 1))
}

/// A value of the header dict.
#[derive(Debug, Clone, PartialEq)]
enum Value {
    Str(String),
    Bool(bool),
    Tuple(Vec<u64>),
    List,
}

/// A tiny parser for the dict literal NumPy writes (strings, True/False, tuples of ints;
/// a list appears only as a structured descr and is reported as such).
struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.s.get(self.i).copied()
    }

    fn expect(&mut self, c: u8) -> Result<()> {
        if self.peek() == Some(c) {
            self.i += 1;
            Ok(())
        } else {
            Err(bad(format!(
                "malformed header: expected {:?} at byte {}",
                c as char, self.i
            )))
        }
    }

    fn string(&mut self) -> Result<String> {
        let q = self
            .peek()
            .ok_or_else(|| bad("malformed header: unexpected end"))?;
        if q != b'\'' && q != b'"' {
            return Err(bad(format!(
                "malformed header: expected a string at byte {}",
                self.i
            )));
        }
        self.i += 1;
        let start = self.i;
        while self.i < self.s.len() && self.s[self.i] != q {
            if self.s[self.i] == b'\\' {
                return Err(bad(
                    "malformed header: escapes in strings are not supported",
                ));
            }
            self.i += 1;
        }
        if self.i >= self.s.len() {
            return Err(bad("malformed header: unterminated string"));
        }
        let out = std::str::from_utf8(&self.s[start..self.i])
            .map_err(|_| bad("malformed header: invalid UTF-8 in a string"))?
            .to_owned();
        self.i += 1;
        Ok(out)
    }

    fn int(&mut self) -> Result<u64> {
        self.ws();
        let start = self.i;
        while self.i < self.s.len() && self.s[self.i].is_ascii_digit() {
            self.i += 1;
        }
        if start == self.i {
            return Err(bad(format!(
                "malformed header: expected a non-negative integer at byte {start}"
            )));
        }
        let text = std::str::from_utf8(&self.s[start..self.i]).unwrap_or("");
        let v = text
            .parse::<u64>()
            .map_err(|_| bad(format!("shape entry {text} is too large")))?;
        // Python 2 wrote longs as `3L`.
        if self.s.get(self.i) == Some(&b'L') {
            self.i += 1;
        }
        Ok(v)
    }

    fn value(&mut self) -> Result<Value> {
        match self.peek() {
            Some(b'\'' | b'"') => Ok(Value::Str(self.string()?)),
            Some(b'(') => {
                self.i += 1;
                let mut v = Vec::new();
                loop {
                    if self.peek() == Some(b')') {
                        self.i += 1;
                        break;
                    }
                    v.push(self.int()?);
                    match self.peek() {
                        Some(b',') => self.i += 1,
                        Some(b')') => {}
                        _ => return Err(bad("malformed header: bad shape tuple")),
                    }
                }
                Ok(Value::Tuple(v))
            }
            Some(b'[') => Ok(Value::List),
            _ => {
                let rest = &self.s[self.i..];
                if rest.starts_with(b"True") {
                    self.i += 4;
                    Ok(Value::Bool(true))
                } else if rest.starts_with(b"False") {
                    self.i += 5;
                    Ok(Value::Bool(false))
                } else {
                    Err(bad(format!(
                        "malformed header: unexpected value at byte {}",
                        self.i
                    )))
                }
            }
        }
    }

    fn dict(&mut self) -> Result<Vec<(String, Value)>> {
        self.expect(b'{')?;
        let mut out = Vec::new();
        loop {
            if self.peek() == Some(b'}') {
                self.i += 1;
                break;
            }
            let k = self.string()?;
            self.expect(b':')?;
            // A structured descr is a list; report it before failing to parse it.
            if k == "descr" && self.peek() == Some(b'[') {
                return Err(Error::dtype(
                    OP_LOAD,
                    "structured dtypes (a list descr) are not supported",
                ));
            }
            let v = self.value()?;
            out.push((k, v));
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b'}') => {}
                _ => return Err(bad("malformed header: expected ',' or '}'")),
            }
        }
        self.ws();
        if self.i != self.s.len() {
            return Err(bad("malformed header: text after the closing '}'"));
        }
        Ok(out)
    }
}

/// Parses the magic, version and header dict at the start of `buf` (which may hold more
/// bytes after the header). `buf` must hold at least the whole header.
pub fn parse_header(buf: &[u8], max_header_len: usize) -> Result<NpyHeader> {
    if buf.len() < 10 {
        return Err(bad(format!(
            "truncated file: {} bytes, fewer than the 10 of a header prefix",
            buf.len()
        )));
    }
    if &buf[..6] != MAGIC {
        return Err(bad(format!(
            "not a .npy file: the magic bytes are {:?}, expected \\x93NUMPY",
            String::from_utf8_lossy(&buf[..6])
        )));
    }
    let version = (buf[6], buf[7]);
    let (prefix, hlen) = match version {
        (1, 0) => (10, u16::from_le_bytes([buf[8], buf[9]]) as usize),
        (2 | 3, 0) => {
            if buf.len() < 12 {
                return Err(bad("truncated file: header length missing"));
            }
            (
                12,
                u32::from_le_bytes([buf[8], buf[9], buf[10], buf[11]]) as usize,
            )
        }
        (a, b) => return Err(bad(format!("unsupported .npy format version {a}.{b}"))),
    };
    if hlen > max_header_len {
        return Err(bad(format!(
            "header length {hlen} exceeds the limit of {max_header_len} bytes (pass a larger max_header_size to load it; max_header_len in Rust's NpyOptions)"
        )));
    }
    let end = prefix + hlen;
    if buf.len() < end {
        return Err(bad(format!(
            "truncated file: the header says {hlen} bytes, only {} are present",
            buf.len() - prefix
        )));
    }
    let raw = &buf[prefix..end];
    // 1.0 and 2.0 headers are latin-1; 3.0 is UTF-8. Non-ASCII bytes can only appear in
    // strings, so decoding latin-1 to UTF-8 keeps every structural byte in place.
    let text: Vec<u8> = if version.0 == 3 {
        std::str::from_utf8(raw).map_err(|_| bad("header is not valid UTF-8"))?;
        raw.to_vec()
    } else {
        raw.iter()
            .map(|&b| b as char)
            .collect::<String>()
            .into_bytes()
    };
    let dict = Parser { s: &text, i: 0 }.dict()?;
    let mut keys: Vec<&str> = dict.iter().map(|(k, _)| k.as_str()).collect();
    keys.sort_unstable();
    if keys != ["descr", "fortran_order", "shape"] {
        return Err(bad(format!(
            "header keys are {keys:?}, expected ['descr', 'fortran_order', 'shape']"
        )));
    }
    let get = |k: &str| dict.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    let (dtype, big_endian) = match get("descr") {
        Some(Value::Str(d)) => parse_descr(&d)?,
        _ => return Err(bad("'descr' is not a string")),
    };
    let fortran_order = match get("fortran_order") {
        Some(Value::Bool(b)) => b,
        _ => return Err(bad("'fortran_order' is not True or False")),
    };
    let shape: Vec<usize> = match get("shape") {
        Some(Value::Tuple(v)) => v
            .into_iter()
            .map(|x| usize::try_from(x).map_err(|_| bad(format!("shape entry {x} is too large"))))
            .collect::<Result<_>>()?,
        _ => return Err(bad("'shape' is not a tuple of integers")),
    };
    if shape.len() > MAX_NDIM {
        return Err(bad(format!(
            "shape has {} dims; tensors have at most {MAX_NDIM}",
            shape.len()
        )));
    }
    let data_len = checked_numel(OP_LOAD, &shape)?
        .checked_mul(dtype.itemsize())
        .filter(|&n| n <= isize::MAX as usize)
        .ok_or_else(|| Error::overflow(OP_LOAD, format!("the byte size of shape {shape:?}")))?;
    Ok(NpyHeader {
        version,
        dtype,
        big_endian,
        fortran_order,
        shape,
        data_offset: end,
        data_len,
    })
}

/// The layout of a header's data (C or F order) over a storage holding just the data.
fn layout_of(h: &NpyHeader) -> Result<Layout> {
    if h.fortran_order {
        Layout::new(&h.shape, &f_contiguous_strides(&h.shape), 0)
    } else {
        Layout::new(&h.shape, &contiguous_strides(&h.shape), 0)
    }
}

/// Reads the header of the `.npy` file at `path`.
pub fn read_header(path: &Path, max_header_len: usize) -> Result<NpyHeader> {
    let mut f = File::open(path).map_err(|e| Error::io(OP_LOAD, path, &e))?;
    read_header_from(&mut f, path, max_header_len)
}

fn read_header_from(f: &mut File, path: &Path, max_header_len: usize) -> Result<NpyHeader> {
    let mut prefix = Vec::with_capacity(12);
    Read::by_ref(f)
        .take(12)
        .read_to_end(&mut prefix)
        .map_err(|e| Error::io(OP_LOAD, path, &e))?;
    if prefix.len() >= 8 && &prefix[..6] == MAGIC {
        let hlen = match (prefix[6], prefix.len()) {
            (1, n) if n >= 10 => Some(u16::from_le_bytes([prefix[8], prefix[9]]) as usize),
            (2 | 3, 12) => {
                Some(u32::from_le_bytes([prefix[8], prefix[9], prefix[10], prefix[11]]) as usize)
            }
            _ => None,
        };
        if let Some(hlen) = hlen.filter(|&h| h <= max_header_len) {
            let head_end = if prefix[6] == 1 { 10 } else { 12 } + hlen;
            let want = head_end.saturating_sub(prefix.len());
            Read::by_ref(f)
                .take(want as u64)
                .read_to_end(&mut prefix)
                .map_err(|e| Error::io(OP_LOAD, path, &e))?;
            // Version 1.0's prefix is 10 bytes: the two read beyond it are header text.
        }
    }
    parse_header(&prefix, max_header_len)
}

/// Loads the `.npy` file at `path`.
///
/// # Errors
/// I/O errors; format errors for bad magic, unsupported versions, malformed or oversized
/// headers and truncated data; dtype errors for object, structured, string and
/// datetime arrays; a value error for a shared map of big-endian data.
pub fn load_npy(path: impl AsRef<Path>, opts: NpyLoadOptions) -> Result<Tensor> {
    let path = path.as_ref();
    // The map is made from this very open file, never by reopening the path, so a file
    // replaced in between cannot be mixed with the header read here.
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(opts.mmap == Some(MapMode::Shared))
        .open(path)
        .map_err(|e| Error::io(OP_LOAD, path, &e))?;
    let h = read_header_from(&mut f, path, opts.max_header_len)?;
    let flen = f
        .metadata()
        .map_err(|e| Error::io(OP_LOAD, path, &e))?
        .len();
    let have = flen.saturating_sub(h.data_offset as u64);
    if have < h.data_len as u64 {
        return Err(bad(format!(
            "truncated file: shape {:?} of {} needs {} data bytes, the file has {have}",
            h.shape, h.dtype, h.data_len
        )));
    }
    let layout = layout_of(&h)?;
    if let Some(mode) = opts.mmap {
        let aligned = h.data_offset % h.dtype.itemsize() == 0;
        if !h.big_endian && aligned {
            let map = FileMap::of_file(OP_LOAD, path, &f, h.data_offset as u64, h.data_len, mode)?;
            let storage = Storage::from_file_map(&std::sync::Arc::new(map), 0, h.data_len)?;
            return Tensor::from_parts(storage, layout, h.dtype);
        }
        if mode == MapMode::Shared {
            return Err(Error::Value {
                op: OP_LOAD,
                msg: format!(
                    "{}: cannot map {} data writable and shared ({}); load it without a shared map to get a copy",
                    path.display(),
                    h.dtype,
                    if h.big_endian { "it is big-endian" } else { "it is not aligned for its dtype" }
                ),
            });
        }
    }
    let mut data = crate::error::try_vec(OP_LOAD, h.data_len)?;
    data.resize(h.data_len, 0u8);
    f.read_exact(&mut data)
        .map_err(|e| Error::io(OP_LOAD, path, &e))?;
    if h.big_endian {
        // A complex element is two floats, each swapped on its own.
        let n = h.dtype.to_real().itemsize();
        for item in data.chunks_exact_mut(n) {
            item.reverse();
        }
    }
    let t = super::tensor_from_bytes(OP_LOAD, &data, &[h.data_len / h.dtype.itemsize()], h.dtype)?;
    Tensor::from_parts(t.storage().clone(), layout, h.dtype)
}

/// The header bytes (magic through the final `\n`) for `dtype`/`shape` in `version`
/// (`None`: the smallest version that fits, as NumPy chooses).
pub fn header_bytes(
    dtype: DType,
    fortran_order: bool,
    shape: &[usize],
    version: Option<(u8, u8)>,
) -> Result<Vec<u8>> {
    let descr = descr_of(dtype)?;
    let shape_txt = match shape {
        [] => "()".to_owned(),
        [n] => format!("({n},)"),
        s => format!(
            "({})",
            s.iter()
                .map(|n| n.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let fo = if fortran_order { "True" } else { "False" };
    let dict = format!("{{'descr': '{descr}', 'fortran_order': {fo}, 'shape': {shape_txt}, }}");
    let padded = |prefix: usize| {
        // Spaces then '\n' so that prefix + header is a multiple of ALIGN.
        let total = (prefix + dict.len() + 1).div_ceil(ALIGN) * ALIGN;
        total - prefix
    };
    let version = match version {
        Some(v) => v,
        None if padded(10) <= u16::MAX as usize => (1, 0),
        None => (2, 0),
    };
    let prefix = match version {
        (1, 0) => 10,
        (2 | 3, 0) => 12,
        (a, b) => {
            return Err(Error::Value {
                op: OP_SAVE,
                msg: format!("unsupported .npy format version {a}.{b} (use 1.0, 2.0 or 3.0)"),
            })
        }
    };
    let hlen = padded(prefix);
    if prefix == 10 && hlen > u16::MAX as usize {
        return Err(Error::Value {
            op: OP_SAVE,
            msg: format!("a {hlen}-byte header does not fit format 1.0; use 2.0"),
        });
    }
    let mut out = Vec::with_capacity(prefix + hlen);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[version.0, version.1]);
    if prefix == 10 {
        out.extend_from_slice(&(hlen as u16).to_le_bytes());
    } else {
        let h = u32::try_from(hlen).map_err(|_| Error::overflow(OP_SAVE, "header length"))?;
        out.extend_from_slice(&h.to_le_bytes());
    }
    out.extend_from_slice(dict.as_bytes());
    out.resize(prefix + hlen - 1, b' ');
    out.push(b'\n');
    Ok(out)
}

/// Writes `t` in `.npy` format to `w`. C-contiguous and non-contiguous tensors are written
/// in C order (the latter compacted); an F-contiguous tensor is written as it lies, with
/// `fortran_order: True`, as NumPy does.
pub fn write_npy(w: &mut impl Write, t: &Tensor, version: Option<(u8, u8)>) -> Result<()> {
    t.check_host(OP_SAVE)?;
    let fortran = t.ndim() > 1 && !t.is_contiguous() && t.is_f_contiguous();
    let head = header_bytes(t.dtype(), fortran, t.shape(), version)?;
    let io = |e: std::io::Error| Error::Io {
        op: OP_SAVE,
        path: String::from("<writer>"),
        msg: e.to_string(),
    };
    w.write_all(&head).map_err(io)?;
    let src = if fortran {
        let rev: Vec<i64> = (0..t.ndim() as i64).rev().collect();
        t.permute(&rev)?
    } else {
        t.clone()
    };
    with_row_major_bytes(OP_SAVE, &src, |b| w.write_all(b))?.map_err(io)
}

/// Saves `t` to the `.npy` file at `path` (the smallest format version that fits).
pub fn save_npy(path: impl AsRef<Path>, t: &Tensor) -> Result<()> {
    save_npy_version(path, t, None)
}

/// Saves `t` to `path` in a given format version (`(1, 0)`, `(2, 0)` or `(3, 0)`).
pub fn save_npy_version(
    path: impl AsRef<Path>,
    t: &Tensor,
    version: Option<(u8, u8)>,
) -> Result<()> {
    let path = path.as_ref();
    // Validate before creating the file, so a bf16 tensor leaves nothing behind.
    t.check_host(OP_SAVE)?;
    descr_of(t.dtype())?;
    let f = File::create(path).map_err(|e| Error::io(OP_SAVE, path, &e))?;
    let mut w = BufWriter::new(f);
    write_npy(&mut w, t, version).map_err(|e| match e {
        Error::Io { op, msg, .. } => Error::Io {
            op,
            path: path.display().to_string(),
            msg,
        },
        e => e,
    })?;
    w.flush().map_err(|e| Error::io(OP_SAVE, path, &e))
}
