//! The half-precision vector paths (`kernel/half_convert.rs` and the kernels built on it)
//! against `half`'s scalar conversions, at every CPU level this machine has.
//!
//! - The block conversions, called at each level directly: `f16 → f32` over all 65536 bit
//!   patterns; `f32 → f16`/`bf16` over a dense sweep of `f32` bit patterns plus, for every
//!   half value, the ties halfway to its neighbour and the `f32`s either side of them,
//!   subnormals, ±0, ±inf, NaNs with payloads and the overflow threshold; each at lengths
//!   around the vector widths and the block, from unaligned starts. The oracle is `half`
//!   itself, both its hardware path (`f16::from_f32`) and its software one
//!   (`from_f32_const`).
//! - `f64 → f16`/`bf16` against an exact nearest-even oracle (`half`'s own `from_f64`
//!   rounds twice or truncates first).
//! - The ops (elementwise, casts, sums, 2-byte transposes) through the tensor API,
//!   contiguous, strided and broadcast, against the scalar conversion of each element;
//!   [`ops_at_every_level`] reruns that test in a child process per level
//!   (`STRATA_CPU`), since the level is chosen once per process.

mod common;

use common::levels;
use half::{bf16, f16};
use strata::kernel::cpu::{self, Level};
use strata::kernel::half_convert::{
    self, narrow_slice, narrow_slice_f64, widen_slice, widen_slice_f64,
};
use strata::{DType, Tensor};

/// Lengths around the vector widths (8, 16) and the block (64).
const LENGTHS: [usize; 14] = [0, 1, 2, 7, 8, 9, 15, 16, 17, 31, 33, 63, 64, 65];

/// Runs `check(start, len)` over the lengths above from a few (unaligned) starts, plus
/// the whole input.
fn pieces(total: usize, mut check: impl FnMut(usize, usize)) {
    for start in [0, 1, 3, 13] {
        for n in LENGTHS {
            if start + n <= total {
                check(start, n);
            }
        }
    }
    check(0, total);
}

#[test]
fn f16_to_f32_every_bit_pattern_at_every_level() {
    let all: Vec<f16> = (0..=u16::MAX).map(f16::from_bits).collect();
    let want: Vec<u32> = all.iter().map(|h| h.to_f32().to_bits()).collect();
    // The scalar branch-free form too.
    for (h, w) in all.iter().zip(&want) {
        let got = half_convert::f16_bits_to_f32(h.to_bits()).to_bits();
        assert_eq!(got, *w, "portable scalar f16 {:#06x}", h.to_bits());
    }
    for level in levels() {
        pieces(all.len(), |start, n| {
            let mut out = vec![f32::from_bits(0xdead_beef); n + 1];
            assert_eq!(widen_slice(level, &all[start..start + n], &mut out[..n]), n);
            for (k, v) in out[..n].iter().enumerate() {
                assert_eq!(
                    v.to_bits(),
                    want[start + k],
                    "{level:?} f16 {:#06x} (len {n})",
                    all[start + k].to_bits()
                );
            }
            assert_eq!(
                out[n].to_bits(),
                0xdead_beef,
                "{level:?}: wrote past the end"
            );
        });
    }
}

#[test]
fn bf16_to_f32_every_bit_pattern_at_every_level() {
    let all: Vec<bf16> = (0..=u16::MAX).map(bf16::from_bits).collect();
    let want: Vec<u32> = all.iter().map(|h| h.to_f32().to_bits()).collect();
    for level in levels() {
        pieces(all.len(), |start, n| {
            let mut out = vec![0f32; n];
            widen_slice(level, &all[start..start + n], &mut out);
            for (k, v) in out.iter().enumerate() {
                assert_eq!(
                    v.to_bits(),
                    want[start + k],
                    "{level:?} bf16 {:#06x}",
                    all[start + k].to_bits()
                );
            }
        });
        // To f64: exact.
        let mut out = vec![0f64; all.len()];
        widen_slice_f64(level, &all, &mut out);
        for (h, v) in all.iter().zip(&out) {
            assert!(
                v.to_bits() == h.to_f64().to_bits() || (v.is_nan() && h.is_nan()),
                "{level:?} bf16 {:#06x} to f64",
                h.to_bits()
            );
        }
        let f16s: Vec<f16> = (0..=u16::MAX).map(f16::from_bits).collect();
        widen_slice_f64(level, &f16s, &mut out);
        for (h, v) in f16s.iter().zip(&out) {
            assert!(
                v.to_bits() == (h.to_f32() as f64).to_bits() || (v.is_nan() && h.is_nan()),
                "{level:?} f16 {:#06x} to f64",
                h.to_bits()
            );
        }
    }
}

/// `f32` inputs for the narrowing tests: a dense sweep of bit patterns; every half value
/// of the kind (`widen`) with the ties halfway to the next one up and the `f32`s either
/// side of those ties; the special values.
fn narrowing_inputs(widen: impl Fn(u16) -> f32) -> Vec<f32> {
    let mut v: Vec<f32> = (0..=u32::MAX).step_by(4099).map(f32::from_bits).collect();
    // Every finite positive pattern of both kinds (f16 up to 0x7c00, bf16 up to 0x7f80).
    for b in 0..0x7f80u16 {
        let (x, y) = (widen(b), widen(b + 1));
        if !x.is_finite() || !y.is_finite() {
            continue;
        }
        let mid = (x + y) / 2.0;
        for m in [mid, -mid] {
            let bits = m.to_bits();
            v.extend([m, f32::from_bits(bits - 1), f32::from_bits(bits + 1), x, -x]);
        }
    }
    v.extend([
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -f32::NAN,
        f32::from_bits(0x7f80_0001), // signalling NaN, payload 1
        f32::from_bits(0xff80_2001),
        f32::from_bits(0x7fa0_0000),
        f32::from_bits(0x7fff_ffff),
        f32::from_bits(1),
        f32::MIN_POSITIVE,
        f32::MAX,
        f32::MIN,
        65504.0,
        65519.996,
        65520.0,
        65520.004,
        65536.0,
        -65520.0,
        5.960_464_5e-8, // smallest f16 subnormal
        2.980_232_2e-8, // half of it: a tie, to zero
        2.980_233e-8,
        6.103_515_6e-5, // smallest f16 normal
        3.389_531_4e38, // near the bf16 overflow threshold
        3.402_823_5e38,
    ]);
    v
}

#[test]
fn f32_to_f16_sweep_ties_and_specials_at_every_level() {
    let xs = narrowing_inputs(|b| f16::from_bits(b).to_f32());
    let want: Vec<u16> = xs.iter().map(|&x| f16::from_f32(x).to_bits()).collect();
    for (x, w) in xs.iter().zip(&want) {
        // half's software path agrees with its hardware one …
        assert_eq!(f16::from_f32_const(*x).to_bits(), *w, "half itself, {x:e}");
        // … and with the branch-free scalar form.
        assert_eq!(
            half_convert::f32_to_f16_bits(*x),
            *w,
            "portable scalar, {:#010x}",
            x.to_bits()
        );
    }
    for level in levels() {
        let mut out = vec![f16::ZERO; xs.len()];
        narrow_slice(level, &xs, &mut out);
        for (k, h) in out.iter().enumerate() {
            assert_eq!(
                h.to_bits(),
                want[k],
                "{level:?} f32 {:#010x}",
                xs[k].to_bits()
            );
        }
        pieces(xs.len(), |start, n| {
            let mut out = vec![f16::from_bits(0xabcd); n + 1];
            narrow_slice(level, &xs[start..start + n], &mut out[..n]);
            for (k, h) in out[..n].iter().enumerate() {
                assert_eq!(h.to_bits(), want[start + k], "{level:?} len {n}");
            }
            assert_eq!(out[n].to_bits(), 0xabcd, "{level:?}: wrote past the end");
        });
    }
}

#[test]
fn f32_to_bf16_sweep_ties_and_specials_at_every_level() {
    let xs = narrowing_inputs(|b| bf16::from_bits(b).to_f32());
    let want: Vec<u16> = xs.iter().map(|&x| bf16::from_f32(x).to_bits()).collect();
    for (x, w) in xs.iter().zip(&want) {
        assert_eq!(
            half_convert::f32_to_bf16_bits(*x),
            *w,
            "portable scalar, {:#010x}",
            x.to_bits()
        );
    }
    for level in levels() {
        let mut out = vec![bf16::ZERO; xs.len()];
        narrow_slice(level, &xs, &mut out);
        for (k, h) in out.iter().enumerate() {
            assert_eq!(
                h.to_bits(),
                want[k],
                "{level:?} f32 {:#010x}",
                xs[k].to_bits()
            );
        }
        pieces(xs.len(), |start, n| {
            let mut out = vec![bf16::ZERO; n];
            narrow_slice(level, &xs[start..start + n], &mut out);
            for (k, h) in out.iter().enumerate() {
                assert_eq!(h.to_bits(), want[start + k], "{level:?} len {n}");
            }
        });
    }
}

/// The half value nearest `x` (ties to even), from the `f32`-rounded candidate and its
/// neighbours; differences of such close values are exact in `f64`.
fn nearest<H: Copy>(
    x: f64,
    from_bits: impl Fn(u16) -> H,
    to_f64: impl Fn(H) -> f64,
    from_f32: impl Fn(f32) -> H,
    bits: impl Fn(H) -> u16,
    max_mid: f64,
) -> u16 {
    if x.is_nan() {
        return 0xffff; // checked separately
    }
    if x.abs() >= max_mid {
        return bits(from_f32(if x > 0.0 {
            f32::INFINITY
        } else {
            f32::NEG_INFINITY
        }));
    }
    let c = bits(from_f32(x as f32));
    let mut best = c;
    for d in [c.wrapping_sub(1), c.wrapping_add(1)] {
        if (d & 0x7fff) > (c & 0x7fff) + 1 || (d ^ c) & 0x8000 != 0 {
            continue;
        }
        let (eb, ed) = (
            (to_f64(from_bits(best)) - x).abs(),
            (to_f64(from_bits(d)) - x).abs(),
        );
        if !ed.is_finite() {
            continue;
        }
        if ed < eb || (ed == eb && d & 1 == 0) {
            best = d;
        }
    }
    // Signed zero keeps the sign of x.
    if best & 0x7fff == 0 {
        best = if x.is_sign_negative() { 0x8000 } else { 0 };
    }
    best
}

#[test]
fn f64_to_half_is_correctly_rounded_at_every_level() {
    let mut xs: Vec<f64> = Vec::new();
    let mut s = 0x2545_f491_4f6c_dd1du64;
    for b in 1..0x7bffu16 {
        let (x, y) = (f16::from_bits(b).to_f64(), f16::from_bits(b + 1).to_f64());
        let mid = (x + y) / 2.0;
        // Just above and below a tie, by less than an f32 ulp: rounding to f32 first
        // (nearest) lands on the tie and then on the wrong side half the time.
        for m in [
            mid,
            mid * (1.0 + 1e-12),
            mid * (1.0 - 1e-12),
            -mid * (1.0 + 1e-12),
        ] {
            xs.push(m);
        }
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        xs.push(x + (y - x) * ((s >> 11) as f64 / (1u64 << 53) as f64));
    }
    xs.extend([
        0.0,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        65504.0,
        65_519.999_999,
        65520.0,
        1e300,
        -1e-300,
        5.960_464_477_539_063e-8 / 2.0,
        2.98e-8,
    ]);
    for level in levels() {
        let mut out = vec![f16::ZERO; xs.len()];
        narrow_slice_f64(level, &xs, &mut out);
        for (x, h) in xs.iter().zip(&out) {
            let want = nearest(
                *x,
                f16::from_bits,
                |h: f16| h.to_f64(),
                f16::from_f32,
                |h: f16| h.to_bits(),
                65520.0,
            );
            assert_eq!(h.to_bits(), want, "{level:?} f64 {x:e} to f16");
        }
        let mut out = vec![bf16::ZERO; xs.len()];
        narrow_slice_f64(level, &xs, &mut out);
        for (x, h) in xs.iter().zip(&out) {
            // Halfway between the largest bf16 and 2^128.
            let max_mid = bf16::MAX.to_f64() + 2f64.powi(119);
            let want = nearest(
                *x,
                bf16::from_bits,
                |h: bf16| h.to_f64(),
                bf16::from_f32,
                |h: bf16| h.to_bits(),
                max_mid,
            );
            assert_eq!(h.to_bits(), want, "{level:?} f64 {x:e} to bf16");
        }
        let mut out = vec![f16::ZERO; 3];
        narrow_slice_f64(
            level,
            &[f64::NAN, -f64::NAN, f64::from_bits(0x7ff0_0000_0000_0001)],
            &mut out,
        );
        assert!(out.iter().all(|h| h.is_nan()), "{level:?}: NaN stays NaN");
        assert!(out[1].is_sign_negative(), "{level:?}: NaN keeps its sign");
    }
}

// ---- The ops, through the tensor API, at this process's level ----

/// Integer-valued sources (exact in every type, sums exact in f32).
fn source(n: usize, seed: i64) -> Vec<f32> {
    (0..n as i64)
        .map(|k| ((k * 7919 + seed * 104_729) % 201 - 100) as f32 / 8.0)
        .collect()
}

fn half_tensor(v: &[f32], dt: DType) -> Tensor {
    Tensor::from_vec(v.to_vec(), &[v.len()])
        .unwrap()
        .to_dtype(dt)
        .unwrap()
}

/// The values of a half tensor as bits.
fn bits(t: &Tensor) -> Vec<u16> {
    match t.dtype() {
        DType::F16 => t
            .to_vec::<f16>()
            .unwrap()
            .iter()
            .map(|h| h.to_bits())
            .collect(),
        _ => t
            .to_vec::<bf16>()
            .unwrap()
            .iter()
            .map(|h| h.to_bits())
            .collect(),
    }
}

/// `f` per element in f32, rounded to `dt` with half's scalar conversion.
fn scalar(dt: DType, xs: &[f32], f: impl Fn(f32) -> f32) -> Vec<u16> {
    xs.iter()
        .map(|&x| match dt {
            DType::F16 => f16::from_f32(f(f16::from_f32(x).to_f32())).to_bits(),
            _ => bf16::from_f32(f(bf16::from_f32(x).to_f32())).to_bits(),
        })
        .collect()
}

#[test]
fn ops_match_the_scalar_conversions() {
    let lengths = [
        0usize, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 127, 129, 1000, 70_001,
    ];
    for dt in [DType::F16, DType::BF16] {
        for n in lengths {
            let what = format!("{dt} n={n} at {:?}", cpu::level());
            let (va, vb) = (source(n, 1), source(n, 2));
            let (a, b) = (half_tensor(&va, dt), half_tensor(&vb, dt));
            // a + b, a * b, contiguous.
            let want: Vec<u16> = va
                .iter()
                .zip(&vb)
                .map(|(x, y)| scalar(dt, &[*x], |p| p + scalar_val(dt, *y))[0])
                .collect();
            assert_eq!(bits(&a.add(&b).unwrap()), want, "{what}: a + b");
            let want: Vec<u16> = va
                .iter()
                .zip(&vb)
                .map(|(x, y)| scalar(dt, &[*x], |p| p * scalar_val(dt, *y))[0])
                .collect();
            assert_eq!(bits(&a.mul(&b).unwrap()), want, "{what}: a * b");
            // A broadcast 0-d operand on either side.
            let s = Tensor::from_vec(vec![1.5f32], &[])
                .unwrap()
                .to_dtype(dt)
                .unwrap();
            assert_eq!(
                bits(&a.mul(&s).unwrap()),
                scalar(dt, &va, |p| p * 1.5),
                "{what}: a * s"
            );
            assert_eq!(
                bits(&s.sub(&a).unwrap()),
                scalar(dt, &va, |p| 1.5 - p),
                "{what}: s - a"
            );
            // exp: the f32 op on the widened values, narrowed.
            let e32 = a.to_dtype(DType::F32).unwrap().exp().unwrap();
            let want_direct = scalar_narrow(dt, &e32.to_vec::<f32>().unwrap());
            assert_eq!(bits(&a.exp().unwrap()), want_direct, "{what}: exp");
            // In place on itself.
            let c = a.contiguous_copy().unwrap();
            let before = c.to_dtype(DType::F32).unwrap().to_vec::<f32>().unwrap();
            c.add_(&c.clone()).unwrap();
            assert_eq!(bits(&c), scalar(dt, &before, |p| p + p), "{what}: c += c");
            // Strided: every second element of a 2n run, and a reversed view.
            let vw = source(2 * n, 3);
            let w = half_tensor(&vw, dt);
            let ws = w.slice(0, None, None, 2).unwrap();
            let every2: Vec<f32> = vw.iter().step_by(2).copied().collect();
            assert_eq!(
                bits(&ws.add(&ws).unwrap()),
                scalar(dt, &every2, |p| p + p),
                "{what}: strided add"
            );
            assert_eq!(
                bits(&ws.neg().unwrap()),
                scalar(dt, &every2, |p| -p),
                "{what}: strided neg"
            );
            let e = ws
                .to_dtype(DType::F32)
                .unwrap()
                .exp()
                .unwrap()
                .to_vec::<f32>()
                .unwrap();
            let want = scalar_narrow(dt, &e);
            assert_eq!(bits(&ws.exp().unwrap()), want, "{what}: strided exp");
            // Casts, contiguous and strided, both ways, and from/to f64.
            let x32: Vec<f32> = va.iter().map(|x| x * 1.001 + 1e-3).collect();
            let t32 = Tensor::from_vec(x32.clone(), &[n]).unwrap();
            assert_eq!(
                bits(&t32.to_dtype(dt).unwrap()),
                scalar_narrow(dt, &x32),
                "{what}: f32 -> half"
            );
            let t32s = Tensor::from_vec(
                source(2 * n, 5)
                    .iter()
                    .map(|x| x * 1.001)
                    .collect::<Vec<_>>(),
                &[2 * n],
            )
            .unwrap()
            .slice(0, None, None, 2)
            .unwrap();
            let x32s = t32s.to_vec::<f32>().unwrap();
            assert_eq!(
                bits(&t32s.to_dtype(dt).unwrap()),
                scalar_narrow(dt, &x32s),
                "{what}: strided f32 -> half"
            );
            let h = t32.to_dtype(dt).unwrap();
            let hb = bits(&h);
            let back = h.to_dtype(DType::F32).unwrap().to_vec::<f32>().unwrap();
            let want: Vec<f32> = hb.iter().map(|&b| widen_bits(dt, b)).collect();
            assert_eq!(back, want, "{what}: half -> f32");
            let back64 = h.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap();
            assert_eq!(
                back64,
                want.iter().map(|&x| x as f64).collect::<Vec<_>>(),
                "{what}: half -> f64"
            );
            let ws32 = ws.to_dtype(DType::F32).unwrap().to_vec::<f32>().unwrap();
            let want: Vec<f32> = bits(&ws).iter().map(|&b| widen_bits(dt, b)).collect();
            assert_eq!(ws32, want, "{what}: strided half -> f32");
            let x64: Vec<f64> = x32.iter().map(|&x| x as f64 * (1.0 + 1e-9)).collect();
            let t64 = Tensor::from_vec(x64.clone(), &[n]).unwrap();
            let mut want = vec![0u16; n];
            if dt == DType::F16 {
                let mut o = vec![f16::ZERO; n];
                narrow_slice_f64(Level::Portable, &x64, &mut o);
                want.iter_mut().zip(&o).for_each(|(w, h)| *w = h.to_bits());
            } else {
                let mut o = vec![bf16::ZERO; n];
                narrow_slice_f64(Level::Portable, &x64, &mut o);
                want.iter_mut().zip(&o).for_each(|(w, h)| *w = h.to_bits());
            }
            assert_eq!(
                bits(&t64.to_dtype(dt).unwrap()),
                want,
                "{what}: f64 -> half"
            );
            // Sums and means (integer-valued eighths: exact in f32).
            let exact: f64 = va.iter().map(|&x| x as f64).sum();
            let sum = a
                .sum(&[], false)
                .unwrap()
                .to_dtype(DType::F64)
                .unwrap()
                .to_vec::<f64>()
                .unwrap()[0];
            assert_eq!(
                sum,
                widen_bits(dt, scalar_narrow(dt, &[exact as f32])[0]) as f64,
                "{what}: sum"
            );
            let strided_exact: f64 = every2.iter().map(|&x| x as f64).sum();
            let sum = ws
                .sum(&[], false)
                .unwrap()
                .to_dtype(DType::F64)
                .unwrap()
                .to_vec::<f64>()
                .unwrap()[0];
            assert_eq!(
                sum,
                widen_bits(dt, scalar_narrow(dt, &[strided_exact as f32])[0]) as f64,
                "{what}: strided sum"
            );
            if n > 0 {
                let mean = a
                    .mean(&[], false)
                    .unwrap()
                    .to_dtype(DType::F64)
                    .unwrap()
                    .to_vec::<f64>()
                    .unwrap()[0];
                let want =
                    widen_bits(dt, scalar_narrow(dt, &[(exact / n as f64) as f32])[0]) as f64;
                assert_eq!(mean, want, "{what}: mean");
            }
        }
    }
}

fn scalar_val(dt: DType, x: f32) -> f32 {
    widen_bits(dt, scalar_narrow(dt, &[x])[0])
}

fn scalar_narrow(dt: DType, xs: &[f32]) -> Vec<u16> {
    xs.iter()
        .map(|&x| match dt {
            DType::F16 => f16::from_f32(x).to_bits(),
            _ => bf16::from_f32(x).to_bits(),
        })
        .collect()
}

fn widen_bits(dt: DType, b: u16) -> f32 {
    match dt {
        DType::F16 => f16::from_bits(b).to_f32(),
        _ => bf16::from_bits(b).to_f32(),
    }
}

#[test]
fn two_byte_transposes_match_the_index_model() {
    for (r, c) in [
        (1, 1),
        (15, 17),
        (16, 16),
        (33, 31),
        (64, 64),
        (100, 70),
        (257, 300),
        (600, 520),
        (1024, 96),
    ] {
        let v: Vec<i16> = (0..(r * c) as i64)
            .map(|k| (k * 31 % 65_521) as i16)
            .collect();
        let t = Tensor::from_vec(v.clone(), &[r, c]).unwrap();
        for dt in [DType::I16, DType::F16, DType::BF16] {
            let x = if dt == DType::I16 {
                t.clone()
            } else {
                // Same bits, reinterpreted through a view of the dtype's values.
                let h: Vec<u16> = v.iter().map(|&k| k as u16 & 0x3bff).collect();
                match dt {
                    DType::F16 => Tensor::from_vec(
                        h.iter().map(|&b| f16::from_bits(b)).collect::<Vec<_>>(),
                        &[r, c],
                    )
                    .unwrap(),
                    _ => Tensor::from_vec(
                        h.iter().map(|&b| bf16::from_bits(b)).collect::<Vec<_>>(),
                        &[r, c],
                    )
                    .unwrap(),
                }
            };
            let src: Vec<u16> = match dt {
                DType::I16 => x
                    .to_vec::<i16>()
                    .unwrap()
                    .iter()
                    .map(|&k| k as u16)
                    .collect(),
                _ => bits(&x),
            };
            let y = x.t().unwrap().contiguous().unwrap();
            let got: Vec<u16> = match dt {
                DType::I16 => y
                    .to_vec::<i16>()
                    .unwrap()
                    .iter()
                    .map(|&k| k as u16)
                    .collect(),
                _ => bits(&y),
            };
            for i in 0..c {
                for j in 0..r {
                    assert_eq!(got[i * r + j], src[j * c + i], "{dt} {r}x{c} at ({i}, {j})");
                }
            }
        }
    }
}

/// Reruns [`ops_match_the_scalar_conversions`] and the transposes in a child process at
/// each level this machine has (`STRATA_CPU` caps the level, read once per process).
#[test]
fn ops_at_every_level() {
    if common::is_child_run() {
        return;
    }
    for level in levels() {
        common::rerun_at(
            level,
            &[
                "ops_match_the_scalar_conversions",
                "two_byte_transposes_match_the_index_model",
            ],
            "",
        );
    }
}
