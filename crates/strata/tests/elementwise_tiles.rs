//! Elementwise ops and casts whose inputs are transposed against the output: the engine
//! iterates them in cache tiles and stages each transposed input into a compact scratch
//! block before the kernel runs. Every result is checked against values computed here by
//! plain index arithmetic over `to_vec` (which walks a view without the engine).
//!
//! Shapes cover ragged tile edges, tiles longer than one scratch chunk (bool outputs over
//! f64 inputs), both inputs staged, the parallel path, and inputs the staging must leave
//! alone (stepped, reversed, broadcast).

mod common;

use common::values_f64;
use strata::{DType, Tensor};

/// A contiguous `[m, n]` tensor of distinct small integers, as `dt`.
fn source(m: usize, n: usize, dt: DType, seed: i64) -> Tensor {
    let v: Vec<i64> = (0..(m * n) as i64)
        .map(|k| (k * 7919 + seed * 104729) % 251 - 125)
        .collect();
    Tensor::from_vec(v, &[m, n]).unwrap().to_dtype(dt).unwrap()
}

/// Inputs of shape `[m, n]`, each a transposed, stepped, reversed or broadcast view.
fn inputs(m: usize, n: usize, dt: DType) -> Vec<(String, Tensor)> {
    let t = source(n, m, dt, 1).t().unwrap();
    let t2 = source(n, 2 * m, dt, 2)
        .t()
        .unwrap()
        .slice(0, None, None, 2)
        .unwrap();
    let row = source(1, n, dt, 3).expand(&[m as i64, n as i64]).unwrap();
    vec![
        ("transposed".into(), t.clone()),
        ("transposed, flipped".into(), t.flip(&[0]).unwrap()),
        ("transposed, rows stepped".into(), t2),
        ("contiguous".into(), source(m, n, dt, 4)),
        ("broadcast row".into(), row),
    ]
}

const SHAPES: [(usize, usize); 5] = [(8, 8), (37, 53), (300, 131), (1030, 40), (600, 600)];

fn check_binary(dt: DType) {
    for (m, n) in SHAPES {
        let ins = inputs(m, n, dt);
        for (wa, a) in &ins {
            for (wb, b) in &ins {
                let (va, vb) = (values_f64(a), values_f64(b));
                let what = format!("{dt} [{m}, {n}] {wa} + {wb}");
                let sum = a.add(b).unwrap();
                assert_eq!(sum.shape(), &[m, n], "{what}");
                // uint8 sums wrap, as in PyTorch.
                let want: Vec<f64> = va
                    .iter()
                    .zip(&vb)
                    .map(|(x, y)| {
                        if dt == DType::U8 {
                            (x + y) % 256.0
                        } else {
                            x + y
                        }
                    })
                    .collect();
                assert_eq!(values_f64(&sum), want, "{what}");
                let lt = a.lt(b).unwrap();
                let want: Vec<f64> = va
                    .iter()
                    .zip(&vb)
                    .map(|(x, y)| f64::from(u8::from(x < y)))
                    .collect();
                assert_eq!(values_f64(&lt), want, "{what}: lt");
            }
        }
    }
}

#[test]
fn binary_f32() {
    check_binary(DType::F32);
}

#[test]
fn binary_f64() {
    check_binary(DType::F64);
}

#[test]
fn binary_f16_i16_i64_u8() {
    for dt in [DType::F16, DType::I16, DType::I64, DType::U8] {
        check_binary(dt);
    }
}

#[test]
fn unary_cast_and_where() {
    for (m, n) in SHAPES {
        for dt in [DType::F32, DType::F64, DType::I16] {
            for (w, a) in inputs(m, n, dt) {
                let what = format!("{dt} [{m}, {n}] {w}");
                let va = values_f64(&a);
                let neg = a.neg().unwrap();
                let want: Vec<f64> = va.iter().map(|x| -x).collect();
                assert_eq!(values_f64(&neg), want, "{what}: neg");
                for to in [DType::F64, DType::F32, DType::I32, DType::Bool] {
                    let c = a.to_dtype(to).unwrap();
                    let want: Vec<f64> = va
                        .iter()
                        .map(|&x| {
                            if to == DType::Bool {
                                f64::from(u8::from(x != 0.0))
                            } else {
                                x
                            }
                        })
                        .collect();
                    assert_eq!(values_f64(&c), want, "{what}: to {to}");
                }
                let b = source(n, m, dt, 5).t().unwrap();
                let cond = a.gt(&b).unwrap();
                let vb = values_f64(&b);
                let w = Tensor::where_cond(&cond, &a, &b).unwrap();
                let want: Vec<f64> = va.iter().zip(&vb).map(|(x, y)| x.max(*y)).collect();
                assert_eq!(values_f64(&w), want, "{what}: where");
            }
        }
    }
}

#[test]
fn in_place_with_transposed_inputs() {
    for (m, n) in [(37usize, 37usize), (300, 300)] {
        let x = source(m, n, DType::F32, 6);
        let before = values_f64(&x);
        // x += x.T overlaps x exactly (transposed): staged as a whole, then tiled.
        x.add_(&x.t().unwrap()).unwrap();
        let want: Vec<f64> = (0..m * n)
            .map(|k| before[k] + before[(k % n) * n + k / n])
            .collect();
        assert_eq!(values_f64(&x), want, "[{m}, {n}] x += x.T");
        // A transposed destination with a contiguous input.
        let y = source(n, m, DType::F64, 7);
        let yt = y.t().unwrap();
        let vyt = values_f64(&yt);
        let z = source(m, n, DType::F64, 8);
        yt.mul_(&z).unwrap();
        let want: Vec<f64> = vyt.iter().zip(values_f64(&z)).map(|(p, q)| p * q).collect();
        assert_eq!(values_f64(&yt), want, "[{m}, {n}] y.T *= z");
    }
}
