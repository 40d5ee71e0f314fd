//! Tensor files: `.npy` (every version, dtype, order, byte order, mmap mode),
//! safetensors, `from_file`, and malformed inputs (which must error, never panic).

mod common;

use std::collections::HashMap;

use proptest::prelude::*;
use strata::interop::npy::{self, parse_header, save_npy_version, NpyLoadOptions};
use strata::interop::{
    deserialize_safetensors, load_npy, load_safetensors, save_npy, save_safetensors,
    serialize_safetensors, SafetensorsFile,
};
use strata::storage::{MapMode, Owner};
use strata::{DType, ErrorKind, Tensor};

use common::{tmp_path, values_f64, TmpPath};

fn tmp(ext: &str) -> TmpPath {
    tmp_path("files", ext)
}

/// A tensor of `dtype` and `shape` with varied values (bools alternate, floats have
/// fractions, signed types go negative).
fn sample(shape: &[usize], dtype: DType) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<f64> = (0..n).map(|i| (i as f64 * 1.5) - 7.0).collect();
    let t = Tensor::from_vec(v, &[n]).unwrap();
    let t = if dtype == DType::Bool {
        Tensor::from_vec((0..n).map(|i| i % 3 == 0).collect::<Vec<_>>(), &[n]).unwrap()
    } else {
        t.to_dtype(dtype).unwrap()
    };
    let shape: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
    t.reshape(&shape).unwrap()
}

fn is_mapped(t: &Tensor) -> bool {
    t.storage().with_owner(|o| matches!(o, Owner::Foreign(_)))
}

const NPY_DTYPES: [DType; 12] = [
    DType::Bool,
    DType::U8,
    DType::I8,
    DType::I16,
    DType::U16,
    DType::I32,
    DType::U32,
    DType::I64,
    DType::U64,
    DType::F16,
    DType::F32,
    DType::F64,
];

const SHAPES: [&[usize]; 5] = [&[], &[0], &[2, 0, 3], &[7], &[3, 4, 5]];

#[test]
fn npy_round_trips_every_dtype_shape_and_mode() {
    for dtype in NPY_DTYPES {
        for shape in SHAPES {
            let t = sample(shape, dtype);
            let p = tmp("npy");
            save_npy(&p.0, &t).unwrap();
            let bytes = std::fs::read(&p.0).unwrap();
            let h = parse_header(&bytes, 10_000).unwrap();
            assert_eq!(
                h.data_offset % 64,
                0,
                "data of {dtype} {shape:?} is not 64-aligned"
            );
            assert_eq!(h.version, (1, 0));
            assert_eq!(h.shape, shape);
            assert_eq!(bytes.len(), h.data_offset + h.data_len);
            for mmap in [
                None,
                Some(MapMode::ReadOnly),
                Some(MapMode::CopyOnWrite),
                Some(MapMode::Shared),
            ] {
                let opts = NpyLoadOptions {
                    mmap,
                    ..Default::default()
                };
                let u = load_npy(&p.0, opts).unwrap();
                assert_eq!(u.dtype(), dtype);
                assert_eq!(u.shape(), shape);
                assert!(u.is_contiguous());
                assert_eq!(values_f64(&u), values_f64(&t), "{dtype} {shape:?} {mmap:?}");
                let n: usize = shape.iter().product();
                if mmap.is_some() && n > 0 {
                    assert!(is_mapped(&u), "mmap load of {dtype} copied");
                }
                assert_eq!(u.is_read_only(), mmap == Some(MapMode::ReadOnly) && n > 0);
            }
        }
    }
}

#[test]
fn npy_saves_views_compacted_and_f_order_as_fortran() {
    let base = sample(&[4, 6], DType::F32);
    let views = [
        base.t().unwrap(),
        base.flip(&[0, 1]).unwrap(),
        base.slice(1, None, None, 2).unwrap(),
    ];
    for v in &views {
        let p = tmp("npy");
        save_npy(&p.0, v).unwrap();
        let u = load_npy(&p.0, NpyLoadOptions::default()).unwrap();
        assert_eq!(u.shape(), v.shape());
        assert_eq!(values_f64(&u), values_f64(v));
    }
    // The transpose is F-contiguous: written as it lies, read back as an F-strided view.
    let p = tmp("npy");
    save_npy(&p.0, &views[0]).unwrap();
    let h = parse_header(&std::fs::read(&p.0).unwrap(), 10_000).unwrap();
    assert!(h.fortran_order);
    for mmap in [None, Some(MapMode::ReadOnly)] {
        let u = load_npy(
            &p.0,
            NpyLoadOptions {
                mmap,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(u.strides(), &[1, 6]);
        assert!(u.is_f_contiguous());
        assert_eq!(values_f64(&u), values_f64(&views[0]));
    }
}

#[test]
fn npy_versions_2_and_3_load() {
    let t = sample(&[3, 2], DType::I32);
    for v in [(1, 0), (2, 0), (3, 0)] {
        let p = tmp("npy");
        save_npy_version(&p.0, &t, Some(v)).unwrap();
        let bytes = std::fs::read(&p.0).unwrap();
        assert_eq!((bytes[6], bytes[7]), v);
        let h = parse_header(&bytes, 10_000).unwrap();
        assert_eq!(h.data_offset % 64, 0);
        let u = load_npy(&p.0, NpyLoadOptions::default()).unwrap();
        assert_eq!(values_f64(&u), values_f64(&t));
    }
    let p = tmp("npy");
    let e = save_npy_version(&p.0, &t, Some((4, 0))).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Value);
}

/// A hand-made `.npy` file: header dict text (padded here) and raw data.
fn handmade(version: (u8, u8), dict: &str, data: &[u8]) -> Vec<u8> {
    let prefix = if version.0 == 1 { 10 } else { 12 };
    let mut h = dict.as_bytes().to_vec();
    while !(prefix + h.len() + 1).is_multiple_of(64) {
        h.push(b' ');
    }
    h.push(b'\n');
    let mut out = b"\x93NUMPY".to_vec();
    out.extend_from_slice(&[version.0, version.1]);
    if prefix == 10 {
        out.extend_from_slice(&(h.len() as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&(h.len() as u32).to_le_bytes());
    }
    out.extend_from_slice(&h);
    out.extend_from_slice(data);
    out
}

#[test]
fn npy_big_endian_loads_by_byte_swapping_copy() {
    let vals = [1.5f32, -2.25, 3.0e7, f32::INFINITY];
    let data: Vec<u8> = vals.iter().flat_map(|v| v.to_be_bytes()).collect();
    let file = handmade(
        (1, 0),
        "{'descr': '>f4', 'fortran_order': False, 'shape': (2, 2), }",
        &data,
    );
    let p = tmp("npy");
    std::fs::write(&p.0, &file).unwrap();
    for mmap in [None, Some(MapMode::ReadOnly), Some(MapMode::CopyOnWrite)] {
        let t = load_npy(
            &p.0,
            NpyLoadOptions {
                mmap,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(t.to_vec::<f32>().unwrap(), vals);
        assert!(!is_mapped(&t));
    }
    let e = load_npy(
        &p.0,
        NpyLoadOptions {
            mmap: Some(MapMode::Shared),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Value);
    assert!(e.to_string().contains("big-endian"), "{e}");
    // Big-endian i64, and a 1-byte type where order is irrelevant.
    let data: Vec<u8> = [-3i64, 1 << 40]
        .iter()
        .flat_map(|v| v.to_be_bytes())
        .collect();
    std::fs::write(
        &p.0,
        handmade(
            (1, 0),
            "{'descr': '>i8', 'fortran_order': False, 'shape': (2,), }",
            &data,
        ),
    )
    .unwrap();
    let t = load_npy(&p.0, NpyLoadOptions::default()).unwrap();
    assert_eq!(t.to_vec::<i64>().unwrap(), [-3, 1 << 40]);
}

#[test]
fn npy_mmap_modes_share_or_protect_the_file() {
    let t = sample(&[16], DType::F32);
    let p = tmp("npy");
    save_npy(&p.0, &t).unwrap();
    let orig = std::fs::read(&p.0).unwrap();
    // Copy-on-write: the tensor changes, the file does not.
    let c = load_npy(
        &p.0,
        NpyLoadOptions {
            mmap: Some(MapMode::CopyOnWrite),
            ..Default::default()
        },
    )
    .unwrap();
    c.fill_(9.0).unwrap();
    assert_eq!(c.to_vec::<f32>().unwrap(), vec![9.0; 16]);
    assert_eq!(std::fs::read(&p.0).unwrap(), orig);
    // Read-only: writes are refused.
    let r = load_npy(
        &p.0,
        NpyLoadOptions {
            mmap: Some(MapMode::ReadOnly),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(r.fill_(1.0).unwrap_err().kind(), ErrorKind::ReadOnly);
    // Shared: writes reach the file.
    let s = load_npy(
        &p.0,
        NpyLoadOptions {
            mmap: Some(MapMode::Shared),
            ..Default::default()
        },
    )
    .unwrap();
    s.set(&[3], 42.0).unwrap();
    drop(s);
    let u = load_npy(&p.0, NpyLoadOptions::default()).unwrap();
    let mut want = t.to_vec::<f32>().unwrap();
    want[3] = 42.0;
    assert_eq!(u.to_vec::<f32>().unwrap(), want);
    // The read-only map taken before the write sees it too (same page cache).
    assert_eq!(r.get::<f32>(&[3]).unwrap(), 42.0);
}

#[test]
fn npy_rejects_bf16_and_unsupported_descrs() {
    let p = tmp("npy");
    let e = save_npy(&p.0, &Tensor::zeros(&[2], DType::BF16).unwrap()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::DType);
    assert!(e.to_string().contains("safetensors"), "{e}");
    assert!(!p.0.exists(), "a refused save left a file");
    for (descr, what) in [
        ("'|O'", "object"),
        ("'<c32'", "complex"),
        ("'<U5'", "string"),
        ("'<M8[ns]'", "datetime"),
        ("[('a', '<f4'), ('b', '<i4')]", "structured"),
        ("'|V8'", "structured"),
    ] {
        let dict = format!("{{'descr': {descr}, 'fortran_order': False, 'shape': (1,), }}");
        std::fs::write(&p.0, handmade((1, 0), &dict, &[0; 16])).unwrap();
        let e = load_npy(&p.0, NpyLoadOptions::default()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::DType, "{descr}: {e}");
        assert!(e.to_string().contains(what), "{descr}: {e}");
    }
}

#[test]
fn npy_malformed_files_error() {
    let good = {
        let p = tmp("npy");
        save_npy(&p.0, &sample(&[4, 4], DType::F64)).unwrap();
        std::fs::read(&p.0).unwrap()
    };
    let p = tmp("npy");
    let mut cases: Vec<(&str, Vec<u8>)> =
        vec![
        ("empty", vec![]),
        ("bad magic", [b"\x93NUMPZ".as_slice(), &good[6..]].concat()),
        ("truncated data", good[..good.len() - 1].to_vec()),
        ("truncated header", good[..40].to_vec()),
        ("version 9", {
            let mut b = good.clone();
            b[6] = 9;
            b
        }),
        (
            "missing key",
            handmade((1, 0), "{'descr': '<f4', 'shape': (1,), }", &[0; 4]),
        ),
        (
            "extra key",
            handmade(
                (1, 0),
                "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': True, }",
                &[0; 4],
            ),
        ),
        (
            "negative shape",
            handmade((1, 0), "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", &[]),
        ),
        (
            "overflowing shape",
            handmade(
                (1, 0),
                "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }",
                &[],
            ),
        ),
        (
            "huge entry",
            handmade(
                (1, 0),
                "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,), }",
                &[],
            ),
        ),
        (
            "bad literal",
            handmade((1, 0), "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,), }", &[0; 4]),
        ),
        (
            "unterminated",
            handmade((1, 0), "{'descr': '<f4, 'fortran_order': False", &[0; 4]),
        ),
        (
            "header lies (too long)",
            {
                let mut b = good.clone();
                b[8..10].copy_from_slice(&5000u16.to_le_bytes());
                b
            },
        ),
    ];
    // An oversized header: valid, but beyond the 10000-byte default cap.
    let big = format!(
        "{{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }}{}",
        " ".repeat(20_000)
    );
    cases.push(("oversized header", handmade((2, 0), &big, &[0; 4])));
    for (what, bytes) in cases {
        std::fs::write(&p.0, &bytes).unwrap();
        let e = load_npy(&p.0, NpyLoadOptions::default());
        let e = e.err().unwrap_or_else(|| panic!("{what}: loaded"));
        assert!(
            matches!(
                e.kind(),
                ErrorKind::Format | ErrorKind::Overflow | ErrorKind::Shape
            ),
            "{what}: {e:?}"
        );
    }
    // The oversized header loads once the cap allows it.
    std::fs::write(&p.0, handmade((2, 0), &big, &1.0f32.to_le_bytes())).unwrap();
    let t = load_npy(
        &p.0,
        NpyLoadOptions {
            mmap: None,
            max_header_len: 100_000,
        },
    )
    .unwrap();
    assert_eq!(t.to_vec::<f32>().unwrap(), [1.0]);
    // A missing file is an I/O error naming it.
    let e = load_npy("/nonexistent/x.npy", NpyLoadOptions::default()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io);
    assert!(e.to_string().contains("/nonexistent/x.npy"));
}

#[test]
fn from_file_maps_shared_or_private() {
    let p = tmp("bin");
    let data: Vec<u8> = (0..16u32).flat_map(|v| (v as f32).to_le_bytes()).collect();
    std::fs::write(&p.0, &data).unwrap();
    let t = Tensor::from_file(&p.0, false, 16, DType::F32).unwrap();
    assert_eq!(
        t.to_vec::<f32>().unwrap(),
        (0..16).map(|v| v as f32).collect::<Vec<_>>()
    );
    t.fill_(0.0).unwrap();
    assert_eq!(
        std::fs::read(&p.0).unwrap(),
        data,
        "a private map wrote the file"
    );
    let s = Tensor::from_file(&p.0, true, 8, DType::F32).unwrap();
    s.set(&[0], -1.0).unwrap();
    drop(s);
    assert_eq!(&std::fs::read(&p.0).unwrap()[..4], &(-1.0f32).to_le_bytes());
    let e = Tensor::from_file(&p.0, false, 17, DType::F32).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Format);
    assert!(e.to_string().contains("64 bytes"), "{e}");
    assert_eq!(
        Tensor::from_file(&p.0, true, 0, DType::F64)
            .unwrap()
            .numel(),
        0
    );
}

#[test]
fn safetensors_round_trip_every_dtype_zero_copy() {
    // The format has no complex dtypes (refused on save: `files.rs` below).
    let tensors: Vec<(String, Tensor)> = DType::ALL
        .iter()
        .filter(|d| !d.is_complex())
        .enumerate()
        .map(|(i, &d)| (format!("t{i}_{d}"), sample(SHAPES[i % SHAPES.len()], d)))
        .collect();
    let refs: Vec<(&str, &Tensor)> = tensors.iter().map(|(n, t)| (n.as_str(), t)).collect();
    let meta = HashMap::from([("format".to_owned(), "pt".to_owned())]);
    let p = tmp("safetensors");
    save_safetensors(&p.0, &refs, Some(meta.clone())).unwrap();
    let f = SafetensorsFile::open(&p.0).unwrap();
    assert_eq!(f.metadata(), Some(&meta));
    let mut names = f.names();
    names.sort();
    let mut want: Vec<String> = tensors.iter().map(|(n, _)| n.clone()).collect();
    want.sort();
    assert_eq!(names, want);
    for (name, t) in &tensors {
        let u = f.get(name).unwrap();
        assert_eq!(u.dtype(), t.dtype());
        assert_eq!(u.shape(), t.shape());
        assert_eq!(values_f64(&u), values_f64(t), "{name}");
        if u.numel() > 0 {
            assert!(is_mapped(&u), "{name} was copied");
            assert!(!u.is_read_only());
        }
    }
    // load_all, and the in-memory parser agree.
    let all = load_safetensors(&p.0).unwrap();
    assert_eq!(all.len(), tensors.len());
    let (mem, m2) = deserialize_safetensors(&std::fs::read(&p.0).unwrap()).unwrap();
    assert_eq!(m2, Some(meta));
    for (n, t) in mem {
        let orig = &tensors.iter().find(|(m, _)| *m == n).unwrap().1;
        assert_eq!(values_f64(&t), values_f64(orig));
    }
    // Writes to a loaded tensor stay private: the file and a second load are unchanged.
    let a = f.get(&tensors[11].0).unwrap();
    a.fill_(5.0).unwrap();
    let b = f.get(&tensors[11].0).unwrap();
    assert_eq!(values_f64(&b), values_f64(&tensors[11].1));
    assert_eq!(f.get("nope").unwrap_err().kind(), ErrorKind::Index);
}

#[test]
fn safetensors_saves_views_and_refuses_shared_memory() {
    let base = sample(&[4, 6], DType::F32);
    let t = base.t().unwrap();
    let half = base.narrow(0, 0, 2).unwrap();
    let other = base.narrow(0, 2, 2).unwrap();
    let bytes = serialize_safetensors(&[("t", &t)], None).unwrap();
    let (back, _) = deserialize_safetensors(&bytes).unwrap();
    assert_eq!(values_f64(&back[0].1), values_f64(&t));
    // Disjoint slices of one storage are independent tensors: allowed.
    serialize_safetensors(&[("a", &half), ("b", &other)], None).unwrap();
    for pair in [
        [("a", &base), ("b", &t)],
        [("a", &base), ("b", &half)],
        [("a", &base), ("b", &base)],
    ] {
        let e = serialize_safetensors(&pair, None).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Value);
        assert!(e.to_string().contains("share memory"), "{e}");
    }
    let e = serialize_safetensors(&[("a", &base), ("a", &half)], None).unwrap_err();
    assert!(e.to_string().contains("two tensors"), "{e}");
    let e = serialize_safetensors(&[("__metadata__", &base)], None).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Value);
}

/// A safetensors file from a header JSON and data bytes.
fn st_file(header: &str, data: &[u8]) -> Vec<u8> {
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out
}

#[test]
fn safetensors_misaligned_data_loads_by_copy() {
    // A 1-byte tensor first puts the f32 at data offset 1: not aligned, so it is copied.
    let h = r#"{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"b":{"dtype":"F32","shape":[2],"data_offsets":[1,9]}}"#;
    let h = format!("{h:<width$}", width = h.len().next_multiple_of(8));
    let mut data = vec![7u8];
    data.extend(1.5f32.to_le_bytes());
    data.extend((-2.0f32).to_le_bytes());
    let p = tmp("safetensors");
    std::fs::write(&p.0, st_file(&h, &data)).unwrap();
    let f = SafetensorsFile::open(&p.0).unwrap();
    let b = f.get("b").unwrap();
    assert_eq!(b.to_vec::<f32>().unwrap(), [1.5, -2.0]);
    assert!(!is_mapped(&b));
    assert_eq!(f.get("a").unwrap().to_vec::<u8>().unwrap(), [7]);
}

#[test]
fn safetensors_malformed_files_error() {
    let ok = r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#;
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty", vec![]),
        ("short", vec![1, 2, 3]),
        ("truncated data", st_file(ok, &[0; 7])),
        ("trailing data", st_file(ok, &[0; 9])),
        ("header size lies", {
            let mut b = st_file(ok, &[0; 8]);
            b[..8].copy_from_slice(&1000u64.to_le_bytes());
            b
        }),
        ("oversized header", {
            let mut b = st_file(ok, &[0; 8]);
            b[..8].copy_from_slice(&(200_000_000u64).to_le_bytes());
            b
        }),
        ("huge header size", {
            let mut b = st_file(ok, &[0; 8]);
            b[..8].copy_from_slice(&u64::MAX.to_le_bytes());
            b
        }),
        ("not starting with {", st_file(&format!(" {ok}"), &[0; 8])),
        ("bad json", st_file(r#"{"a":{"dtype":"F32","#, &[0; 8])),
        (
            "size mismatch",
            st_file(
                r#"{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}"#,
                &[0; 8],
            ),
        ),
        (
            "overlapping offsets",
            st_file(
                r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}"#,
                &[0; 8],
            ),
        ),
        (
            "hole",
            st_file(
                r#"{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}"#,
                &[0; 8],
            ),
        ),
        (
            "out of range",
            st_file(
                r#"{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}"#,
                &[0; 8],
            ),
        ),
        (
            "unknown dtype",
            st_file(
                r#"{"a":{"dtype":"Q7","shape":[2],"data_offsets":[0,8]}}"#,
                &[0; 8],
            ),
        ),
        (
            "overflowing shape",
            st_file(
                r#"{"a":{"dtype":"F32","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,8]}}"#,
                &[0; 8],
            ),
        ),
        (
            "unsupported dtype",
            st_file(
                r#"{"a":{"dtype":"F8_E4M3","shape":[8],"data_offsets":[0,8]}}"#,
                &[0; 8],
            ),
        ),
    ];
    let p = tmp("safetensors");
    for (what, bytes) in cases {
        let e = deserialize_safetensors(&bytes)
            .err()
            .unwrap_or_else(|| panic!("{what}: parsed"));
        assert!(
            matches!(e.kind(), ErrorKind::Format | ErrorKind::DType),
            "{what}: {e:?}"
        );
        std::fs::write(&p.0, &bytes).unwrap();
        let e = SafetensorsFile::open(&p.0).and_then(|f| f.load_all());
        assert!(e.is_err(), "{what}: opened");
    }
}

fn valid_npy() -> Vec<u8> {
    let p = tmp("npy");
    save_npy(&p.0, &sample(&[3, 5], DType::I16)).unwrap();
    std::fs::read(&p.0).unwrap()
}

fn valid_st() -> Vec<u8> {
    let a = sample(&[3, 2], DType::F32);
    let b = sample(&[5], DType::U8);
    serialize_safetensors(&[("a", &a), ("b", &b)], None).unwrap()
}

/// Random damage: overwrite bytes, truncate, or append.
fn damage(mut b: Vec<u8>, edits: &[(usize, u8)], cut: Option<usize>) -> Vec<u8> {
    for &(i, v) in edits {
        if !b.is_empty() {
            let n = b.len();
            b[i % n] = v;
        }
    }
    if let Some(c) = cut {
        b.truncate(c % (b.len() + 1));
    }
    b
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn corrupted_npy_never_panics(
        edits in prop::collection::vec((0usize..200, any::<u8>()), 0..6),
        cut in prop::option::of(0usize..400),
    ) {
        let b = damage(valid_npy(), &edits, cut);
        let _ = parse_header(&b, 10_000);
        let p = tmp("npy");
        std::fs::write(&p.0, &b).unwrap();
        for mmap in [None, Some(MapMode::ReadOnly)] {
            if let Ok(t) = load_npy(&p.0, NpyLoadOptions { mmap, ..Default::default() }) {
                // Whatever loaded must be readable in full.
                let _ = values_f64(&t);
            }
        }
    }

    #[test]
    fn corrupted_safetensors_never_panics(
        edits in prop::collection::vec((0usize..200, any::<u8>()), 0..6),
        cut in prop::option::of(0usize..300),
    ) {
        let b = damage(valid_st(), &edits, cut);
        if let Ok((ts, _)) = deserialize_safetensors(&b) {
            for (_, t) in ts {
                let _ = values_f64(&t);
            }
        }
        let p = tmp("safetensors");
        std::fs::write(&p.0, &b).unwrap();
        if let Ok(f) = SafetensorsFile::open(&p.0) {
            if let Ok(all) = f.load_all() {
                for (_, t) in all {
                    let _ = values_f64(&t);
                }
            }
        }
    }

    #[test]
    fn random_bytes_never_panic(b in prop::collection::vec(any::<u8>(), 0..256)) {
        let _ = parse_header(&b, 10_000);
        let _ = deserialize_safetensors(&b);
        let mut with_magic = npy::MAGIC.to_vec();
        with_magic.extend_from_slice(&b);
        let _ = parse_header(&with_magic, 10_000);
    }
}

/// One file mapped twice (Note [one file mapped twice] in `storage/mmap.rs`): copies and
/// elementwise writes from one mapping into the other, shifted so that the ranges overlap
/// in the file, act as if the source were read first (staged), as within one mapping;
/// at lengths walked as small copies and past them, 1-D and through strided 2-D views,
/// and from a byte slice of one mapping. A private (copy-on-write) map does not follow
/// the file once written, so it is not the same memory.
#[test]
fn one_file_mapped_twice_stages_overlapping_copies() {
    let mapped = |p: &std::path::Path, mode: MapMode| {
        let opts = NpyLoadOptions {
            mmap: Some(mode),
            ..Default::default()
        };
        load_npy(p, opts).unwrap()
    };
    for n in [10usize, 3000] {
        let p = tmp("npy");
        let base: Vec<f32> = (0..n).map(|k| k as f32).collect();
        save_npy(&p.0, &Tensor::from_vec(base.clone(), &[n]).unwrap()).unwrap();
        let x = mapped(&p.0, MapMode::Shared);
        let y = mapped(&p.0, MapMode::Shared);
        assert!(!x.same_storage(&y));
        let m = n as i64;
        // y[1:] = x[:-1] and back: a forward and a backward shift.
        y.narrow(0, 1, m - 1)
            .unwrap()
            .copy_(&x.narrow(0, 0, m - 1).unwrap())
            .unwrap();
        let mut want = base.clone();
        want.copy_within(0..n - 1, 1);
        assert_eq!(x.to_vec::<f32>().unwrap(), want, "n {n}, forward shift");
        x.narrow(0, 0, m - 1)
            .unwrap()
            .copy_(&y.narrow(0, 1, m - 1).unwrap())
            .unwrap();
        want.copy_within(1..n, 0);
        assert_eq!(y.to_vec::<f32>().unwrap(), want, "n {n}, backward shift");
        // An elementwise op whose output is the other mapping, shifted.
        y.narrow(0, 2, m - 2)
            .unwrap()
            .add_(&x.narrow(0, 0, m - 2).unwrap())
            .unwrap();
        let before = want.clone();
        for k in 0..n - 2 {
            want[k + 2] = before[k + 2] + before[k];
        }
        assert_eq!(
            x.to_vec::<f32>().unwrap(),
            want,
            "n {n}, add into the other mapping"
        );
    }
    // 2-D: the transpose of one mapping into the other (a square: every element moves).
    let p = tmp("npy");
    let base: Vec<f32> = (0..64).map(|k| k as f32).collect();
    save_npy(&p.0, &Tensor::from_vec(base.clone(), &[8, 8]).unwrap()).unwrap();
    let x = mapped(&p.0, MapMode::Shared);
    let y = mapped(&p.0, MapMode::Shared);
    assert!(x.may_share_memory(&y));
    let (x0, y1) = (x.narrow(0, 0, 4).unwrap(), y.narrow(0, 4, 4).unwrap());
    assert!(!x0.may_share_memory(&y1) && x0.may_share_memory(&y.narrow(0, 3, 1).unwrap()));
    y.copy_(&x.t().unwrap()).unwrap();
    let want: Vec<f32> = (0..64).map(|k| base[(k % 8) * 8 + k / 8]).collect();
    assert_eq!(
        x.to_vec::<f32>().unwrap(),
        want,
        "transpose into the other mapping"
    );
    // A byte slice of one mapping's storage, as a tensor, against the other mapping.
    let s = x.storage().slice_bytes("test", 4, 4 * 64).unwrap();
    let xs = Tensor::from_parts(s, strata::Layout::contiguous(&[63]).unwrap(), DType::F32).unwrap();
    let before = y.to_vec::<f32>().unwrap();
    y.view(&[64])
        .unwrap()
        .narrow(0, 0, 63)
        .unwrap()
        .copy_(&xs)
        .unwrap();
    let mut want = before.clone();
    want.copy_within(1..64, 0);
    assert_eq!(
        x.to_vec::<f32>().unwrap(),
        want,
        "from a slice of the other mapping"
    );
    // Copy-on-write: once written, its pages are its own.
    let c = mapped(&p.0, MapMode::CopyOnWrite);
    assert_eq!(c.storage().shared_file_position(), None);
    assert!(x.storage().shared_file_position().is_some());
}
