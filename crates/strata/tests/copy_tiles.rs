//! Copies that the engine runs in cache tiles (transposes, permutes), checked against
//! `to_vec`, which walks the view with plain index arithmetic and never uses the engine.
//!
//! The cases cover every register-block size (1-byte elements fall back to the row
//! kernel), ragged tile edges, tiles longer than one tile row, the parallel path, and
//! layouts the blocks must not take (stepped or reversed inputs).

use strata::{DType, Tensor};

fn source(shape: &[usize], dt: DType) -> Tensor {
    let n: usize = shape.iter().product();
    let v: Vec<i64> = (0..n as i64).map(|k| k * 7919 % 65521 - 30000).collect();
    let t = Tensor::from_vec(v, shape).unwrap();
    t.to_dtype(dt).unwrap()
}

fn check<T: strata::Element + PartialEq + std::fmt::Debug>(what: &str, v: &Tensor) {
    let want = v.to_vec::<T>().unwrap();
    let c = v.contiguous().unwrap();
    assert!(c.is_contiguous());
    assert_eq!(c.to_vec::<T>().unwrap(), want, "{what}: contiguous()");
    // copy_ into an existing, already-written destination.
    let d = Tensor::zeros(v.shape(), v.dtype()).unwrap();
    d.copy_(v).unwrap();
    assert_eq!(d.to_vec::<T>().unwrap(), want, "{what}: copy_");
}

fn views(x: &Tensor) -> Vec<(String, Tensor)> {
    let nd = x.ndim();
    let mut out = vec![("t".to_string(), x.transpose(0, nd as i64 - 1).unwrap())];
    if nd == 3 {
        out.push(("permute(2,0,1)".into(), x.permute(&[2, 0, 1]).unwrap()));
        out.push(("permute(1,2,0)".into(), x.permute(&[1, 2, 0]).unwrap()));
    }
    let t = x.transpose(0, nd as i64 - 1).unwrap();
    out.push(("t.flip(-1)".into(), t.flip(&[-1]).unwrap()));
    out.push(("t.flip(0)".into(), t.flip(&[0]).unwrap()));
    out.push((
        "t[:, ::2]".into(),
        t.slice(nd as i64 - 1, None, None, 2).unwrap(),
    ));
    out.push(("t[1:-3, 2:]".into(), {
        let a = t.slice(0, Some(1), Some(-3), 1).unwrap();
        a.slice(nd as i64 - 1, Some(2), None, 1).unwrap()
    }));
    out
}

macro_rules! dtype_case {
    ($name:ident, $dt:expr, $t:ty) => {
        #[test]
        fn $name() {
            for shape in [
                &[37usize, 53][..],
                &[8, 8],
                &[300, 131],
                &[5, 19, 23],
                &[3, 64, 70],
            ] {
                let x = source(shape, $dt);
                for (what, v) in views(&x) {
                    check::<$t>(&format!("{shape:?} {what}"), &v);
                }
            }
        }
    };
}

dtype_case!(tiles_u8, DType::U8, u8);
dtype_case!(tiles_i16, DType::I16, i16);
dtype_case!(tiles_f16, DType::F16, half::f16);
dtype_case!(tiles_i32, DType::I32, i32);
dtype_case!(tiles_f32, DType::F32, f32);
dtype_case!(tiles_i64, DType::I64, i64);
dtype_case!(tiles_f64, DType::F64, f64);

/// Above the engine's parallel threshold for copies (`PAR_MIN`, 2^18 elements): the tiles
/// are split across threads.
#[test]
fn tiles_parallel() {
    let shape = &[600usize, 520][..];
    let x = source(shape, DType::F32);
    for (what, v) in views(&x) {
        check::<f32>(&format!("{shape:?} {what}"), &v);
    }
    let x = source(shape, DType::U8);
    for (what, v) in views(&x) {
        check::<u8>(&format!("{shape:?} {what}"), &v);
    }
}

/// Outputs of at least the engine's streaming size (8 MiB): the tiles store whole output
/// lines non-temporally where they are aligned (line-wide blocks with AVX-512, 16-byte
/// blocks otherwise) and normally where not (`t[1:-3, 2:]` shifts every row), with ragged
/// edges on both sides of the line-wide blocks.
#[test]
fn tiles_streaming() {
    for (shape, dt) in [
        (&[2048usize, 1040][..], DType::F32),
        (&[1500, 1501], DType::I32),
        (&[1030, 1100], DType::F64),
        (&[2100, 2050], DType::I16),
        (&[3, 1400, 531], DType::F32),
    ] {
        let x = source(shape, dt);
        for (what, v) in views(&x) {
            let what = format!("{shape:?} {dt:?} {what}");
            match dt {
                DType::F32 => check::<f32>(&what, &v),
                DType::I32 => check::<i32>(&what, &v),
                DType::F64 => check::<f64>(&what, &v),
                _ => check::<i16>(&what, &v),
            }
        }
    }
}
