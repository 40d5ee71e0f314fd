//! Elementwise ops over contiguous runs, which the kernels process in blocks of 64 with a
//! scalar tail: lengths around the block size, a broadcast scalar on either side, in
//! place on the input itself, and the dtypes whose loads and stores differ (bool, f16,
//! wrapping uint8). Expected values come from plain arithmetic over `to_vec`, which
//! walks a view without the engine.

mod common;

use common::values_f64;
use strata::{DType, Tensor};

const LENGTHS: [usize; 10] = [0, 1, 5, 63, 64, 65, 127, 128, 129, 1000];

fn source(n: usize, dt: DType, seed: i64) -> Tensor {
    let v: Vec<i64> = (0..n as i64)
        .map(|k| (k * 7919 + seed * 104729) % 201 - 100)
        .collect();
    Tensor::from_vec(v, &[n]).unwrap().to_dtype(dt).unwrap()
}

/// What `x op y` stores in `dt` (uint8 wraps; the sources are exact in every dtype).
fn wrap(dt: DType, v: f64) -> f64 {
    if dt == DType::U8 {
        v.rem_euclid(256.0)
    } else {
        v
    }
}

#[test]
fn binary_runs_around_the_block_size() {
    for dt in [DType::F32, DType::F64, DType::F16, DType::I32, DType::U8] {
        for n in LENGTHS {
            let (a, b) = (source(n, dt, 1), source(n, dt, 2));
            let (va, vb) = (values_f64(&a), values_f64(&b));
            let what = format!("{dt} n={n}");
            let want: Vec<f64> = va.iter().zip(&vb).map(|(x, y)| wrap(dt, x + y)).collect();
            assert_eq!(values_f64(&a.add(&b).unwrap()), want, "{what}: a + b");
            let want: Vec<f64> = va
                .iter()
                .zip(&vb)
                .map(|(x, y)| f64::from(u8::from(x < y)))
                .collect();
            assert_eq!(values_f64(&a.lt(&b).unwrap()), want, "{what}: a < b");
            // A 0-d tensor broadcasts with stride 0, on either side.
            let s = Tensor::from_vec(vec![3i64], &[])
                .unwrap()
                .to_dtype(dt)
                .unwrap();
            let want: Vec<f64> = va.iter().map(|x| wrap(dt, x * 3.0)).collect();
            assert_eq!(values_f64(&a.mul(&s).unwrap()), want, "{what}: a * s");
            let want: Vec<f64> = va.iter().map(|x| wrap(dt, 3.0 - x)).collect();
            assert_eq!(values_f64(&s.sub(&a).unwrap()), want, "{what}: s - a");
            // In place on itself: every element read before it is written.
            let c = a.clone().contiguous().unwrap();
            c.add_(&a).unwrap();
            let want: Vec<f64> = va.iter().map(|x| wrap(dt, 2.0 * x)).collect();
            assert_eq!(values_f64(&a), want, "{what}: a += a");
            assert!(c.same_storage(&a));
        }
    }
}

#[test]
fn unary_and_bool_runs_around_the_block_size() {
    for n in LENGTHS {
        let a = source(n, DType::F32, 3);
        let va = values_f64(&a);
        let want: Vec<f64> = va.iter().map(|x| -x).collect();
        assert_eq!(values_f64(&a.neg().unwrap()), want, "n={n}: neg");
        let m = a.gt(0.0).unwrap();
        let vm = values_f64(&m);
        let want: Vec<f64> = vm.iter().map(|x| 1.0 - x).collect();
        assert_eq!(
            values_f64(&m.logical_not().unwrap()),
            want,
            "n={n}: logical_not"
        );
        let both = m.logical_and(&m.logical_not().unwrap()).unwrap();
        assert!(values_f64(&both).iter().all(|&x| x == 0.0), "n={n}: m & !m");
    }
}
