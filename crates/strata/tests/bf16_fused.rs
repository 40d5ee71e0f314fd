//! The fused `bfloat16` paths (`kernel/elementwise_loops.rs`: `bf16_block`; the `bf16`
//! sum blocks of `kernel/reduce/accumulators.rs`) against the scalar model: widen with
//! `half`'s `bf16::to_f32`, compute in `f32`, round back with `bf16::from_f32` (round to
//! nearest even, NaNs made quiet). The inputs are every `bf16` bit pattern (NaNs with
//! payloads, signalling ones included, ±inf, subnormals, ±0) against a permutation of
//! them, plus pairs whose sum or product is an exact tie between two `bf16`s; over
//! lengths around the block (64) from aligned and unaligned starts, contiguous, strided,
//! broadcast and in place. [`bf16_at_every_level`] reruns the checks in a child process
//! per CPU level this machine has (`STRATA_CPU` is read once per process).

mod common;

use half::bf16;
use strata::kernel::cpu;
use strata::{DType, Tensor};

/// Every bit pattern, then pairs of exact ties (first operands; see [`partners`]).
fn operands() -> (Vec<u16>, Vec<u16>) {
    let mut x: Vec<u16> = (0..=u16::MAX).collect();
    // An odd multiplier permutes the patterns.
    let mut y: Vec<u16> = (0..=u16::MAX as u32)
        .map(|i| (i.wrapping_mul(40503).wrapping_add(12345) & 0xffff) as u16)
        .collect();
    // Ties: 1 + 2^-8 (to even: 1), (1 + 2^-7) + 2^-8 (to even: 1 + 2^-6), their
    // negatives, (1 + 2^-7)·1.5 = 1.5 + 2^-7 + 2^-8 (up), tiny subnormal sums, the
    // largest finite plus half an ulp (to inf).
    let ties: [(u16, u16); 9] = [
        (0x3f80, 0x3b80),
        (0x3f81, 0x3b80),
        (0xbf80, 0xbb80),
        (0xbf81, 0xbb80),
        (0x3f81, 0x3fc0),
        (0x3f83, 0x3fc0),
        (0x0001, 0x0001),
        (0x8001, 0x0002),
        (0x7f7f, 0x7380),
    ];
    for _ in 0..8 {
        for (a, b) in ties {
            x.push(a);
            y.push(b);
        }
    }
    (x, y)
}

fn to_f32(b: u16) -> f32 {
    bf16::from_bits(b).to_f32()
}

fn from_f32(v: f32) -> u16 {
    bf16::from_f32(v).to_bits()
}

fn tensor(bits: &[u16]) -> Tensor {
    let v: Vec<bf16> = bits.iter().map(|&b| bf16::from_bits(b)).collect();
    let n = v.len();
    Tensor::from_vec(v, &[n]).unwrap()
}

fn bits(t: &Tensor) -> Vec<u16> {
    t.to_vec::<bf16>()
        .unwrap()
        .iter()
        .map(|h| h.to_bits())
        .collect()
}

fn is_nan(b: u16) -> bool {
    b & 0x7fff > 0x7f80
}

/// `got` against `want` element by element: equal bits, except that where both inputs
/// of an element are NaN either input's payload may come out (the compiler may swap
/// the operands of `+` and `·`), as long as it is a quiet NaN.
fn check(what: &str, x: &[u16], y: &[u16], got: &[u16], want: &[u16]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for i in 0..got.len() {
        let both_nan = is_nan(x[i]) && is_nan(y[i]);
        let ok = if both_nan {
            is_nan(got[i]) && got[i] & 0x0040 != 0
        } else {
            got[i] == want[i]
        };
        assert!(
            ok,
            "{what} at {:?}: element {i}: x {:#06x} y {:#06x}: got {:#06x}, want {:#06x}",
            cpu::level(),
            x[i],
            y[i],
            got[i],
            want[i]
        );
    }
}

fn model2(x: &[u16], y: &[u16], f: impl Fn(f32, f32) -> f32) -> Vec<u16> {
    x.iter()
        .zip(y)
        .map(|(&a, &b)| from_f32(f(to_f32(a), to_f32(b))))
        .collect()
}

#[test]
fn bf16_ops_match_the_scalar_model() {
    let (xs, ys) = operands();
    let total = xs.len();
    let mut pieces: Vec<(usize, usize)> = vec![(0, total)];
    for start in [0usize, 1, 5] {
        for n in [0usize, 1, 2, 63, 64, 65, 127, 128, 129, 1000] {
            pieces.push((start * 777, n));
        }
    }
    for (start, n) in pieces {
        let (x, y) = (&xs[start..start + n], &ys[start..start + n]);
        let what = format!("start {start} n {n}");
        let (full_a, full_b) = (tensor(&xs), tensor(&ys));
        // Views into the full tensors: unaligned starts.
        let s = start as i64;
        let a = full_a.slice(0, Some(s), Some(s + n as i64), 1).unwrap();
        let b = full_b.slice(0, Some(s), Some(s + n as i64), 1).unwrap();
        let add = bits(&a.add(&b).unwrap());
        check(
            &format!("{what}: a + b"),
            x,
            y,
            &add,
            &model2(x, y, |p, q| p + q),
        );
        let mul = bits(&a.mul(&b).unwrap());
        check(
            &format!("{what}: a * b"),
            x,
            y,
            &mul,
            &model2(x, y, |p, q| p * q),
        );
        let sub = bits(&a.sub(&b).unwrap());
        check(
            &format!("{what}: a - b"),
            x,
            y,
            &sub,
            &model2(x, y, |p, q| p - q),
        );
        let div = bits(&a.div(&b).unwrap());
        check(
            &format!("{what}: a / b"),
            x,
            y,
            &div,
            &model2(x, y, |p, q| p / q),
        );
        // maximum gives the canonical NaN: exact bits everywhere.
        let mx = bits(&a.maximum(&b).unwrap());
        let want = model2(x, y, |p, q| {
            if p.is_nan() || q.is_nan() {
                f32::NAN
            } else if p < q {
                q
            } else {
                p
            }
        });
        assert_eq!(mx, want, "{what}: maximum");
        // A 0-d operand on either side (a stride-0 input).
        let c = tensor(&[0x3fc0]).reshape(&[]).unwrap(); // 1.5
        let cs = vec![0x3fc0u16; n];
        let got = bits(&a.mul(&c).unwrap());
        check(
            &format!("{what}: a * 1.5"),
            x,
            &cs,
            &got,
            &model2(x, &cs, |p, q| p * q),
        );
        let got = bits(&c.sub(&a).unwrap());
        check(
            &format!("{what}: 1.5 - a"),
            &cs,
            x,
            &got,
            &model2(&cs, x, |p, q| p - q),
        );
        // Unary: the sign ops keep a NaN's payload (made quiet); exp as the f32 op.
        let neg = bits(&a.neg().unwrap());
        let want: Vec<u16> = x.iter().map(|&p| from_f32(-to_f32(p))).collect();
        assert_eq!(neg, want, "{what}: neg");
        let abs = bits(&a.abs().unwrap());
        let want: Vec<u16> = x.iter().map(|&p| from_f32(to_f32(p).abs())).collect();
        assert_eq!(abs, want, "{what}: abs");
        let e32 = a.to_dtype(DType::F32).unwrap().exp().unwrap();
        let want: Vec<u16> = e32
            .to_vec::<f32>()
            .unwrap()
            .into_iter()
            .map(from_f32)
            .collect();
        check(
            &format!("{what}: exp"),
            x,
            x,
            &bits(&a.exp().unwrap()),
            &want,
        );
        // In place, the output its own input.
        let t = a.contiguous_copy().unwrap();
        t.add_(&t.clone()).unwrap();
        check(
            &format!("{what}: t += t"),
            x,
            x,
            &bits(&t),
            &model2(x, x, |p, q| p + q),
        );
        // Strided (every second element: the unfused block path) agrees too.
        let a2 = full_a.slice(0, None, None, 2).unwrap();
        let b2 = full_b.slice(0, None, None, 2).unwrap();
        let x2: Vec<u16> = xs.iter().step_by(2).copied().collect();
        let y2: Vec<u16> = ys.iter().step_by(2).copied().collect();
        let got = bits(&a2.add(&b2).unwrap());
        check(
            "strided a + b",
            &x2,
            &y2,
            &got,
            &model2(&x2, &y2, |p, q| p + q),
        );
    }
}

#[test]
fn bf16_sums_match_the_scalar_model() {
    for n in [0usize, 1, 15, 16, 63, 64, 65, 127, 128, 129, 1000, 70_001] {
        // Integer-valued quarters: every sum is exact in f32.
        let v: Vec<u16> = (0..n as i64)
            .map(|k| from_f32(((k * 7919) % 201 - 100) as f32 / 4.0))
            .collect();
        for start in [0usize, 1] {
            if start > n {
                continue;
            }
            let t = tensor(&v).slice(0, Some(start as i64), None, 1).unwrap();
            // (A fold from +0: `Iterator::sum` of no f32s is -0.)
            let want_f32: f32 = v[start..].iter().fold(0.0, |s, &b| s + to_f32(b));
            let s = bits(&t.sum(&[], false).unwrap())[0];
            assert_eq!(
                s,
                from_f32(want_f32),
                "sum n {n} start {start} at {:?}",
                cpu::level()
            );
            if n - start > 0 {
                let m = bits(&t.mean(&[], false).unwrap())[0];
                let want = from_f32(want_f32 / (n - start) as f32);
                assert_eq!(m, want, "mean n {n} start {start}");
            }
        }
        // Strided runs (`x[start::step]`; step 2 reads 4-byte words and drops the
        // element between): the skipped elements hold NaN and inf, which must not leak.
        for step in [2usize, 3] {
            for start in [0usize, 1] {
                if start >= n {
                    continue;
                }
                let mut w = v.clone();
                for (i, b) in w.iter_mut().enumerate() {
                    if i < start || (i - start) % step != 0 {
                        *b = if i % 2 == 0 { 0x7f81 } else { 0xff80 };
                    }
                }
                let t = tensor(&w)
                    .slice(0, Some(start as i64), None, step as i64)
                    .unwrap();
                let want_f32: f32 = w[start..]
                    .iter()
                    .step_by(step)
                    .fold(0.0, |s, &b| s + to_f32(b));
                let s = bits(&t.sum(&[], false).unwrap())[0];
                assert_eq!(
                    s,
                    from_f32(want_f32),
                    "sum n {n} [{start}::{step}] at {:?}",
                    cpu::level()
                );
            }
        }
        if n < 2 {
            continue;
        }
        // One signalling NaN (payload 1): the sum is that NaN made quiet.
        let mut w = v.clone();
        w[n / 2] = 0x7f81;
        assert_eq!(
            bits(&tensor(&w).sum(&[], false).unwrap())[0],
            0x7fc1,
            "NaN sum n {n}"
        );
        // ±inf: inf; both: NaN.
        let mut w = v.clone();
        w[n - 1] = 0xff80;
        assert_eq!(
            bits(&tensor(&w).sum(&[], false).unwrap())[0],
            0xff80,
            "-inf sum n {n}"
        );
        w[0] = 0x7f80;
        assert!(
            is_nan(bits(&tensor(&w).sum(&[], false).unwrap())[0]),
            "inf - inf n {n}"
        );
    }
}

/// Reruns the tests above in a child process at each level this machine has.
#[test]
fn bf16_at_every_level() {
    if common::is_child_run() {
        return;
    }
    for level in common::levels() {
        common::rerun_at(
            level,
            &[
                "bf16_ops_match_the_scalar_model",
                "bf16_sums_match_the_scalar_model",
            ],
            "",
        );
    }
}
