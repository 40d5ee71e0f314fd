//! `amax` / `amin` / `max()` / `min()` over contiguous runs (the block fold of
//! `kernel/reduce/accumulators.rs`: a plain vector max/min per block, NaN checked per
//! block) against a sequential model with PyTorch's semantics (a NaN anywhere gives
//! NaN), for the float (float16 and bfloat16 included) and integer dtypes: lengths
//! around the lanes (16, 32) and the block (512), NaNs at the start, in a block, at a
//! block edge and in the tail, ±inf, ±0, the extreme integers; full reductions, per-row (`dim=1`) reductions and strided
//! inputs (the generic loop). [`extremes_at_every_level`] reruns them in a child
//! process per CPU level this machine has.

mod common;

use half::{bf16, f16};
use strata::kernel::cpu;
use strata::Tensor;

const LENGTHS: [usize; 16] = [
    1, 2, 15, 16, 17, 31, 32, 33, 63, 511, 512, 513, 1024, 1025, 1600, 70_001,
];

/// A deterministic value stream in `-1000..1000`.
fn stream(n: usize, seed: u64) -> Vec<i64> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 33) % 2001) as i64 - 1000
        })
        .collect()
}

fn model_f64(v: &[f64], max: bool) -> f64 {
    if v.iter().any(|x| x.is_nan()) {
        return f64::NAN;
    }
    v.iter().copied().fold(
        if max {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        },
        |a, x| {
            if max {
                a.max(x)
            } else {
                a.min(x)
            }
        },
    )
}

fn same(got: f64, want: f64) -> bool {
    (got.is_nan() && want.is_nan()) || got == want
}

/// Checks amax/amin/max/min of `v` (as dtype `T` through `conv`) against the model.
fn check_float<T: strata::Element + Copy>(
    name: &str,
    v: &[f64],
    conv: impl Fn(f64) -> T,
    back: impl Fn(T) -> f64,
) {
    let n = v.len();
    let data: Vec<T> = v.iter().map(|&x| conv(x)).collect();
    let vv: Vec<f64> = data.iter().map(|&x| back(x)).collect();
    let t = Tensor::from_vec(data.clone(), &[n]).unwrap();
    for max in [true, false] {
        let want = model_f64(&vv, max);
        let r = if max {
            t.amax(&[], false)
        } else {
            t.amin(&[], false)
        }
        .unwrap();
        let got = back(r.to_vec::<T>().unwrap()[0]);
        assert!(
            same(got, want),
            "{name} n {n} max {max} at {:?}: got {got}, want {want}",
            cpu::level()
        );
        let r = if max { t.max() } else { t.min() }.unwrap();
        let got = back(r.to_vec::<T>().unwrap()[0]);
        assert!(
            same(got, want),
            "{name} n {n} max() {max}: got {got}, want {want}"
        );
        // An unaligned start.
        if n > 1 {
            let s = t.slice(0, Some(1), None, 1).unwrap();
            let want = model_f64(&vv[1..], max);
            let r = if max {
                s.amax(&[], false)
            } else {
                s.amin(&[], false)
            }
            .unwrap();
            let got = back(r.to_vec::<T>().unwrap()[0]);
            assert!(
                same(got, want),
                "{name} n {n} from 1 max {max}: got {got}, want {want}"
            );
        }
        // Strided: every second element (the generic loop).
        let s = t.slice(0, None, None, 2).unwrap();
        let sv: Vec<f64> = vv.iter().step_by(2).copied().collect();
        let want = model_f64(&sv, max);
        let r = if max {
            s.amax(&[], false)
        } else {
            s.amin(&[], false)
        }
        .unwrap();
        let got = back(r.to_vec::<T>().unwrap()[0]);
        assert!(
            same(got, want),
            "{name} n {n} strided max {max}: got {got}, want {want}"
        );
    }
    // Rows: dim=1 of a (3, n / 3) view.
    let w = n / 3;
    if w > 0 {
        let m = Tensor::from_vec(data[..3 * w].to_vec(), &[3, w]).unwrap();
        for max in [true, false] {
            let r = if max {
                m.amax(&[1], false)
            } else {
                m.amin(&[1], false)
            }
            .unwrap();
            let got: Vec<f64> = r.to_vec::<T>().unwrap().into_iter().map(&back).collect();
            for (row, g) in got.iter().enumerate() {
                let want = model_f64(&vv[row * w..(row + 1) * w], max);
                assert!(
                    same(*g, want),
                    "{name} rows of {w}, row {row} max {max}: got {g}, want {want}"
                );
            }
        }
    }
}

/// The float inputs for length `n`: plain, with NaNs placed around the lanes and the
/// blocks, with ±inf, with only ±0.
fn float_cases(n: usize) -> Vec<Vec<f64>> {
    let base: Vec<f64> = stream(n, n as u64)
        .into_iter()
        .map(|x| x as f64 / 7.0)
        .collect();
    let mut cases = vec![base.clone()];
    for at in [0, 15, 16, 31, 511, 512, 1000, n / 2, n - 1] {
        if at < n {
            let mut v = base.clone();
            v[at] = f64::NAN;
            cases.push(v);
        }
    }
    let mut v = base.clone();
    v[n - 1] = f64::INFINITY;
    v[0] = f64::NEG_INFINITY;
    cases.push(v);
    let mut v = base.clone();
    v[n / 2] = f64::NAN;
    v[n - 1] = f64::INFINITY;
    cases.push(v);
    cases.push(
        (0..n)
            .map(|i| if i % 3 == 0 { -0.0 } else { 0.0 })
            .collect(),
    );
    cases.push(vec![f64::NEG_INFINITY; n]);
    cases
}

#[test]
fn float_extremes_match_the_model() {
    for n in LENGTHS {
        for v in float_cases(n) {
            check_float::<f32>("f32", &v, |x| x as f32, |x| x as f64);
            check_float::<f64>("f64", &v, |x| x, |x| x);
            // The half types: blocks widened to f32 and folded by the same code.
            check_float::<f16>("f16", &v, f16::from_f64, |x| x.to_f64());
            check_float::<bf16>("bf16", &v, bf16::from_f64, |x| x.to_f64());
        }
    }
}

#[test]
fn integer_extremes_match_the_model() {
    for n in LENGTHS {
        let base = stream(n, 7 + n as u64);
        let mut cases = vec![base.clone()];
        let mut v = base.clone();
        v[n - 1] = i64::MAX;
        v[0] = i64::MIN;
        cases.push(v);
        cases.push(vec![i64::MIN; n]);
        for v in cases {
            macro_rules! one {
                ($t:ty) => {{
                    let data: Vec<$t> = v
                        .iter()
                        .map(|&x| x.clamp(<$t>::MIN as i64, <$t>::MAX as i64) as $t)
                        .collect();
                    let t = Tensor::from_vec(data.clone(), &[n]).unwrap();
                    let (mx, mn) = (*data.iter().max().unwrap(), *data.iter().min().unwrap());
                    assert_eq!(
                        t.amax(&[], false).unwrap().to_vec::<$t>().unwrap()[0],
                        mx,
                        "{} amax n {n}",
                        stringify!($t)
                    );
                    assert_eq!(
                        t.amin(&[], false).unwrap().to_vec::<$t>().unwrap()[0],
                        mn,
                        "{} amin n {n}",
                        stringify!($t)
                    );
                    assert_eq!(
                        t.max().unwrap().to_vec::<$t>().unwrap()[0],
                        mx,
                        "{} max n {n}",
                        stringify!($t)
                    );
                    let s = t.slice(0, None, None, 2).unwrap();
                    let smax = *data.iter().step_by(2).max().unwrap();
                    assert_eq!(
                        s.amax(&[], false).unwrap().to_vec::<$t>().unwrap()[0],
                        smax,
                        "{} strided n {n}",
                        stringify!($t)
                    );
                }};
            }
            one!(i8);
            one!(u8);
            one!(i16);
            one!(i32);
            one!(i64);
        }
    }
}

/// Reruns the tests above in a child process at each level this machine has.
#[test]
fn extremes_at_every_level() {
    if common::is_child_run() {
        return;
    }
    for level in common::levels() {
        common::rerun_at(
            level,
            &[
                "float_extremes_match_the_model",
                "integer_extremes_match_the_model",
            ],
            "",
        );
    }
}
