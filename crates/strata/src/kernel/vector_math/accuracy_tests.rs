//! The accuracy of the vector math, measured in ulps against a higher-precision
//! reference, through the elementwise block loops at every CPU level this machine has
//! (contiguous and strided), over dense sweeps of the whole float range and the special
//! values; and the levels agreeing bit for bit.
//!
//! References: for float32, the float64 functions of the C library (their error, below
//! 2 float64 ulp, is 2⁻²⁸ of a float32 ulp); for float64, the C library's float64
//! functions themselves, which are not exact (glibc's `log10` is 1.54 ulp off at
//! x = 1.000561, where ours is 0.46): the bound asserted here is 2 ulp against them, and
//! the exact comparison (against mpmath at 200 bits, bound 1 ulp) is in
//! `python/tests/test_vector_math.py`.

use super::{f32_math, f64_math};
use crate::kernel::cpu::{self, Level};
use crate::kernel::elementwise_loops::{map_at_level, Fixup};

/// The levels this CPU supports.
fn levels() -> Vec<Level> {
    Level::ALL
        .into_iter()
        .filter(|&l| l <= cpu::detected())
        .collect()
}

/// The float32 values tested: every `step`-th bit pattern of each sign over the whole
/// range, and the special values (zeros, subnormals, the normal/subnormal boundary,
/// overflow and underflow thresholds, the largest values, infinities, NaN, values close
/// to multiples of π/2).
fn sweep_f32(step: u32) -> Vec<f32> {
    let mut v = Vec::new();
    let mut b = 0u32;
    while b < 0x7f80_0000 {
        v.push(f32::from_bits(b));
        v.push(-f32::from_bits(b));
        b += step;
    }
    let specials = [
        0.0,
        -0.0,
        f32::from_bits(1),
        f32::from_bits(0x007f_ffff),
        f32::MIN_POSITIVE,
        f32::MAX,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        1.0,
        -1.0,
        0.5,
        2.0,
        10.0,
        88.722_83,
        88.722_84,
        89.0,
        -87.336_55,
        -103.972_08,
        -104.0,
        1e-8,
        -1e-8,
        1e-30,
        0.999_999_94,
        1.000_000_1,
        -0.999_999_94,
        std::f32::consts::FRAC_PI_2,
        std::f32::consts::PI,
        std::f32::consts::TAU,
        3.0 * std::f32::consts::FRAC_PI_2,
        1e4,
        1e10,
        1e20,
        1e38,
        16_777_216.0,
        105_414_350.0,
        std::f32::consts::FRAC_PI_4,
        f32::from_bits(std::f32::consts::FRAC_PI_4.to_bits() - 1),
        0.414_213_57,
        2.0,
        4.0,
    ];
    for s in specials {
        v.push(s);
        v.push(-s);
        v.push(f32::from_bits(s.to_bits().wrapping_add(1)));
    }
    // Dense runs around the points where formulas switch.
    for centre in [
        0.35f32,
        0.5,
        1.0,
        2.0,
        4.0,
        0.414_213_57,
        20.0,
        40.0,
        3.95,                        // erf's clamp
        9.02,                        // tanh's clamp
        1.0 / 1024.0,                // asinh: series / logarithm
        1.0 / 536_870_912.0,         // atanh: x itself / logarithm (2⁻²⁹)
        std::f32::consts::SQRT_2,    // the logarithms' mantissa split
        std::f32::consts::FRAC_PI_2, // sin and cos: the reduction's boundaries
        std::f32::consts::PI,
        100.0 * std::f32::consts::PI,
    ] {
        let c = centre.to_bits();
        for d in 0..2000u32 {
            v.push(f32::from_bits(c - 1000 + d));
            v.push(-f32::from_bits(c - 1000 + d));
        }
    }
    v
}

/// One float32 ulp at the float32 nearest `r` (the smallest subnormal at zero).
fn ulp_f32(r: f64) -> f64 {
    let a = (r as f32).abs();
    if a < f32::MIN_POSITIVE {
        return 2f64.powi(-149);
    }
    let e = ((a.to_bits() >> 23) & 0xff) as i32 - 127;
    2f64.powi(e - 23)
}

/// The error of `got` in float32 ulps of the reference `want`: 0 when both are NaN or
/// the same infinity, infinite when only one is.
fn ulps_f32(got: f32, want: f64) -> f64 {
    if want.is_nan() || got.is_nan() {
        return if want.is_nan() && got.is_nan() {
            0.0
        } else {
            f64::INFINITY
        };
    }
    let w32 = want as f32;
    if w32 == 0.0 && got == 0.0 && w32.is_sign_negative() != got.is_sign_negative() {
        return f64::INFINITY; // a zero of the wrong sign
    }
    if w32.is_infinite() || got.is_infinite() {
        // Overflow: the reference rounds to the same infinity, or `got` is within 1 ulp
        // of f32::MAX of a reference that just rounds to it.
        return if got == w32 {
            0.0
        } else {
            ((got as f64).min(f64::from(f32::MAX) * 2.0) - want).abs() / ulp_f32(f32::MAX as f64)
        };
    }
    ((got as f64) - want).abs() / ulp_f32(want)
}

/// One float32 function: name, vector function, reference, the error bound asserted
/// (ulps), and the input domain tested (others are NaN on both sides anyway).
type Case32 = (&'static str, fn(f32) -> f32, fn(f64) -> f64, f64);

fn cases_f32() -> Vec<Case32> {
    vec![
        ("exp", f32_math::exp, f64::exp, 1.0),
        ("exp2", f32_math::exp2, f64::exp2, 1.0),
        ("expm1", f32_math::expm1, f64::exp_m1, 1.0),
        ("ln", f32_math::ln, f64::ln, 1.0),
        ("log2", f32_math::log2, f64::log2, 1.0),
        ("log10", f32_math::log10, f64::log10, 1.0),
        ("ln_1p", f32_math::ln_1p, f64::ln_1p, 1.0),
        ("sin", f32_math::sin, f64::sin, 1.0),
        ("cos", f32_math::cos, f64::cos, 1.0),
        ("tan", f32_math::tan, f64::tan, 1.0),
        ("tanh", f32_math::tanh, f64::tanh, 1.0),
        ("sinh", f32_math::sinh, f64::sinh, 1.0),
        ("cosh", f32_math::cosh, f64::cosh, 1.0),
        ("asin", f32_math::asin, f64::asin, 1.0),
        ("acos", f32_math::acos, f64::acos, 1.0),
        ("atan", f32_math::atan, f64::atan, 1.0),
        ("asinh", f32_math::asinh, f64::asinh, 1.0),
        ("acosh", f32_math::acosh, f64::acosh, 1.0),
        ("atanh", f32_math::atanh, f64::atanh, 1.0),
        ("erf", f32_math::erf, libm::erf, 1.0),
        (
            "sigmoid",
            f32_math::sigmoid,
            |x| 1.0 / (1.0 + (-x).exp()),
            1.0,
        ),
    ]
}

#[test]
fn float32_functions_are_within_their_bound_at_every_level() {
    let xs = sweep_f32(20_011);
    let mut report = String::new();
    for (name, f, reference, bound) in cases_f32() {
        let want: Vec<f64> = xs.iter().map(|&x| reference(x as f64)).collect();
        let mut first: Option<Vec<u32>> = None;
        for level in levels() {
            let got = map_at_level(level, &xs, 1, f);
            let (mut worst, mut at) = (0.0f64, 0.0f32);
            for ((&x, &g), &w) in xs.iter().zip(&got).zip(&want) {
                let e = ulps_f32(g, w);
                if e > worst {
                    (worst, at) = (e, x);
                }
            }
            assert!(
                worst <= bound,
                "{name} at {level:?}: {worst} ulp at x = {at:e} ({:#x}): got {:e}, want {:e}",
                at.to_bits(),
                f(at),
                reference(at as f64)
            );
            // Every level computes the same bits.
            let bits: Vec<u32> = got.iter().map(|v| v.to_bits()).collect();
            match &first {
                None => first = Some(bits),
                Some(b) => assert!(*b == bits, "{name}: {level:?} differs from Portable"),
            }
            if level == Level::Portable {
                report.push_str(&format!("{name}: {worst:.3} ulp\n"));
            }
        }
        // Strided (every third element) through the gathering block loop.
        for level in levels() {
            let got = map_at_level(level, &xs, 3, f);
            for (k, &g) in got.iter().enumerate() {
                let x = xs[3 * k];
                assert_eq!(
                    g.to_bits(),
                    f(x).to_bits(),
                    "{name} strided at {level:?}, x = {x:e}"
                );
            }
        }
    }
    println!("{report}");
}

#[test]
fn float32_trig_blocks_fix_their_rare_elements() {
    // The block form (vector reduction, then the rare elements recomputed) gives the
    // element form's bits, at every level, with rare elements anywhere in a block.
    let mut xs = sweep_f32(20_011);
    for k in 0..500 {
        xs.insert(
            k * 37 % xs.len(),
            [1e9f32, -3e12, f32::INFINITY, f32::NAN, 5.0e8][k % 5],
        );
    }
    for level in levels() {
        for (name, block, one) in [
            (
                "sin",
                map_at_level(level, &xs, 1, Fixup(f32_math::Sin)),
                f32_math::sin as fn(f32) -> f32,
            ),
            (
                "cos",
                map_at_level(level, &xs, 1, Fixup(f32_math::Cos)),
                f32_math::cos,
            ),
            (
                "tan",
                map_at_level(level, &xs, 1, Fixup(f32_math::Tan)),
                f32_math::tan,
            ),
        ] {
            for (&x, &g) in xs.iter().zip(&block) {
                assert_eq!(
                    g.to_bits(),
                    one(x).to_bits(),
                    "{name} at {level:?}, x = {x:e}"
                );
            }
        }
    }
}

#[test]
fn float32_block_edges_and_scalar_calls_agree() {
    // Lengths around the 64-element block and the vector widths: the tail path and the
    // block path give the scalar function's bits.
    let xs: Vec<f32> = (0..300).map(|k| (k as f32 - 150.0) * 0.173).collect();
    for n in [
        0usize, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 127, 128, 129, 300,
    ] {
        for level in levels() {
            for (name, f, _, _) in cases_f32() {
                let got = map_at_level(level, &xs[..n], 1, f);
                assert_eq!(got.len(), n);
                for (k, &g) in got.iter().enumerate() {
                    assert_eq!(
                        g.to_bits(),
                        f(xs[k]).to_bits(),
                        "{name} n = {n} at {level:?}"
                    );
                }
            }
        }
    }
}

/// One float64 ulp at `r`.
fn ulp_f64(r: f64) -> f64 {
    // The gap to the next value up: one ulp (two at the top of a binade, the looser side).
    let a = r.abs();
    f64::from_bits(a.to_bits() + 1) - a
}

fn ulps_f64(got: f64, want: f64) -> f64 {
    if want.is_nan() || got.is_nan() {
        return if want.is_nan() && got.is_nan() {
            0.0
        } else {
            f64::INFINITY
        };
    }
    if want.is_infinite() || got.is_infinite() {
        return if got == want { 0.0 } else { f64::INFINITY };
    }
    if want == 0.0 && got == 0.0 && want.is_sign_negative() != got.is_sign_negative() {
        return f64::INFINITY; // a zero of the wrong sign
    }
    (got - want).abs() / ulp_f64(want)
}

type Case64 = (&'static str, fn(f64) -> f64, fn(f64) -> f64, f64);

#[test]
fn float64_functions_are_within_their_bound_at_every_level() {
    let mut xs: Vec<f64> = Vec::new();
    let mut b = 0u64;
    while b < 0x7ff0_0000_0000_0000 {
        xs.push(f64::from_bits(b));
        xs.push(-f64::from_bits(b));
        b += 0x0000_1357_9bdf_0247;
    }
    for s in [
        0.0,
        f64::from_bits(1),
        f64::MIN_POSITIVE,
        f64::MAX,
        f64::INFINITY,
        f64::NAN,
        1.0,
        2.0,
        0.5,
        1e-300,
        1e-10,
        709.782_712_893_383_9,
        709.782_712_893_384,
        -745.133_219_101_941,
        -745.2,
        -708.4,
        1023.0,
        1023.999,
        -1074.0,
        -1075.0,
        -1074.5,
        40.0,
        0.346_573_590_279_972_6,
        1.0 - 1e-16,
        1.0 + 2.2e-16,
    ] {
        xs.push(s);
        xs.push(-s);
        xs.push(f64::from_bits(s.to_bits().wrapping_add(1)));
    }
    for centre in [
        0.346_573_59f64,
        0.5,
        1.0,
        std::f64::consts::FRAC_1_SQRT_2,
        std::f64::consts::SQRT_2,
        40.0,
        1e-5,
    ] {
        for d in 0..3000 {
            let x = centre * (1.0 + (d as f64 - 1500.0) * 1e-6);
            xs.push(x);
            xs.push(-x);
        }
    }
    let cases: Vec<Case64> = vec![
        ("exp", f64_math::exp, f64::exp, 2.0),
        ("exp2", f64_math::exp2, f64::exp2, 2.0),
        ("expm1", f64_math::expm1, f64::exp_m1, 2.0),
        ("ln", f64_math::ln, f64::ln, 2.0),
        ("log2", f64_math::log2, f64::log2, 2.0),
        ("log10", f64_math::log10, f64::log10, 2.0),
        ("ln_1p", f64_math::ln_1p, f64::ln_1p, 2.0),
    ];
    let mut report = String::new();
    for (name, f, reference, bound) in cases {
        let want: Vec<f64> = xs.iter().map(|&x| reference(x)).collect();
        let mut first: Option<Vec<u64>> = None;
        for level in levels() {
            let got = map_at_level(level, &xs, 1, f);
            let (mut worst, mut at) = (0.0f64, 0.0f64);
            for ((&x, &g), &w) in xs.iter().zip(&got).zip(&want) {
                let e = ulps_f64(g, w);
                if e > worst {
                    (worst, at) = (e, x);
                }
            }
            assert!(
                worst <= bound,
                "{name} at {level:?}: {worst} ulp at x = {at:e}: got {:e}, want {:e}",
                f(at),
                reference(at)
            );
            let bits: Vec<u64> = got.iter().map(|v| v.to_bits()).collect();
            match &first {
                None => first = Some(bits),
                Some(b) => assert!(*b == bits, "{name}: {level:?} differs from Portable"),
            }
            if level == Level::Portable {
                report.push_str(&format!("{name}: {worst:.3} ulp\n"));
            }
        }
    }
    println!("{report}");
}
