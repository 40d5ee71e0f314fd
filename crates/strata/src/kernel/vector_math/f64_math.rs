//! float64 exponentials and logarithms, branch-free (see `mod.rs`).
//!
//! The reductions and polynomials are fdlibm's (`e_exp.c`, `e_log.c`, `e_log10.c`: the
//! public-domain Sun library every C library's float64 math descends from), rewritten
//! with selects instead of branches: Cody–Waite reduction by ln2 split into a high part
//! with 32 trailing zero bits (so `k·ln2_hi` is exact without a fused multiply-add) and a
//! low part, then a rational form of the reduced function.

use super::{horner, pow2, round_int};
use std::f64::consts::{LN_2, LOG2_E, SQRT_2};

/// ln2's high part (its low 32 bits zero) and the rest.
const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000);
const LN2_LO: f64 = f64::from_bits(0x3dea_39ef_3579_3c76);

/// fdlibm's `exp` polynomial: `r·(eʳ+1)/(eʳ−1) ≈ 2 + r²·P(r²)` on `|r| ≤ ln2/2`.
const EXP_P: [f64; 5] = [
    f64::from_bits(0x3fc5_5555_5555_553e),
    f64::from_bits(0xbf66_c16c_16be_bd93),
    f64::from_bits(0x3f11_566a_af25_de2c),
    f64::from_bits(0xbebb_bd41_c5d2_6bf1),
    f64::from_bits(0x3e66_3769_72be_a4d0),
];

/// `e^(hi − lo)` for `|hi − lo| ≤ ln2/2`, from the two parts of the reduced argument
/// (fdlibm's form: the low part enters where it keeps its precision).
#[inline(always)]
fn exp_reduced(hi: f64, lo: f64) -> f64 {
    let r = hi - lo;
    let t = r * r;
    let c = r - t * horner(t, EXP_P);
    1.0 - ((lo - (r * c) / (2.0 - c)) - hi)
}

/// `y·2ᵏ` for `-1100 < k < 1100`, in two exact steps and one final rounding (a
/// subnormal result is rounded once).
#[inline(always)]
fn scale(y: f64, k: i64) -> f64 {
    let k1 = k / 2;
    y * pow2(k1) * pow2(k - k1)
}

/// Above this `eˣ` overflows; below [`EXP_UNDER`] it is 0.
const EXP_OVER: f64 = 709.782_712_893_384;
const EXP_UNDER: f64 = -745.133_219_101_941_1;

/// `eˣ`.
#[inline(always)]
pub(crate) fn exp(x: f64) -> f64 {
    let xc = x.clamp(-746.0, 710.0);
    let (kf, k) = round_int(xc * LOG2_E);
    let hi = xc - kf * LN2_HI;
    let lo = kf * LN2_LO;
    let v = scale(exp_reduced(hi, lo), k);
    if x > EXP_OVER {
        f64::INFINITY
    } else if x < EXP_UNDER {
        0.0
    } else if x.is_nan() {
        x
    } else {
        v
    }
}

/// The logistic function `1/(1 + e⁻ˣ)`.
#[inline(always)]
pub(crate) fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + exp(-x))
}

/// `2ˣ` (exact at integers).
#[inline(always)]
pub(crate) fn exp2(x: f64) -> f64 {
    let xc = x.clamp(-1100.0, 1100.0);
    let (kf, k) = round_int(xc);
    // xc − kf is exact; its product with ln2 is within 2⁻⁵⁴ of the reduced argument.
    let v = scale(exp_reduced((xc - kf) * LN_2, 0.0), k);
    if x >= 1024.0 {
        f64::INFINITY
    } else if x < -1075.0 {
        0.0
    } else if x.is_nan() {
        x
    } else {
        v
    }
}

/// `eʳ − 1` for `-ln2/2 ≤ r < ln2`: the Taylor series to r¹⁷ (truncation below 2⁻⁶²),
/// the leading `r` added last.
#[inline(always)]
fn expm1_series(r: f64) -> f64 {
    let tail = horner(
        r,
        [
            1.0 / 2.0,
            1.0 / 6.0,
            1.0 / 24.0,
            1.0 / 120.0,
            1.0 / 720.0,
            1.0 / 5040.0,
            1.0 / 40320.0,
            1.0 / 362_880.0,
            1.0 / 3_628_800.0,
            1.0 / 39_916_800.0,
            1.0 / 479_001_600.0,
            1.0 / 6_227_020_800.0,
            1.0 / 87_178_291_200.0,
            1.0 / 1_307_674_368_000.0,
            1.0 / 20_922_789_888_000.0,
            1.0 / 355_687_428_096_000.0,
        ],
    );
    r + r * r * tail
}

/// `eˣ − 1`, accurate near 0.
#[inline(always)]
pub(crate) fn expm1(x: f64) -> f64 {
    let xc = x.clamp(-40.0, 710.0);
    let (kf, k) = round_int(xc * LOG2_E);
    // On (ln2/2, ln2), k = 1 would leave 2·(eʳ − 1) + 1 with r < 0: a cancellation that
    // doubles em's error. The series is still accurate for r up to ln2 there: take k = 0.
    let direct = xc > 0.0 && xc < LN_2;
    let (kf, k) = if direct { (0.0, 0) } else { (kf, k) };
    // xc − k·ln2_hi is exact (Sterbenz, or k = 0); the low part then rounds once.
    let r = (xc - kf * LN2_HI) - kf * LN2_LO;
    let em = expm1_series(r);
    // eˣ − 1 = 2ᵏ·(eʳ − 1) + (2ᵏ − 1): both terms exact up to em's own error for
    // k ≤ 60; beyond, the −1 is below the result's last bit, and 2ᵏ is applied in two
    // steps so k = 1024 still works.
    let near = pow2(k) * em + (pow2(k) - 1.0);
    let far = (em + 1.0) * pow2(k - 1) * 2.0;
    let v = if k <= 60 { near } else { far };
    if x > EXP_OVER {
        f64::INFINITY
    } else if x < -40.0 {
        -1.0
    } else if x.is_nan() || x == 0.0 {
        // NaN, and ±0 with its sign.
        x
    } else {
        v
    }
}

/// fdlibm's `log` polynomial: `ln((1+s)/(1−s)) = 2s + s·R(s²)`.
const LOG_LG: [f64; 7] = [
    f64::from_bits(0x3fe5_5555_5555_5593),
    f64::from_bits(0x3fd9_9999_9997_fa04),
    f64::from_bits(0x3fd2_4924_9422_9359),
    f64::from_bits(0x3fcc_71c5_1d8e_78af),
    f64::from_bits(0x3fc7_4664_96cb_03de),
    f64::from_bits(0x3fc3_9a09_d078_c69f),
    f64::from_bits(0x3fc2_f112_df3e_5244),
];

/// `x = 2ᵏ·(1 + f)` with `1 + f` in `[√½, √2)`, and the parts of `ln(1 + f)`:
/// `(k, f, hfsq, s·(hfsq + R))` so that `ln(1+f) = f − (hfsq − s·(hfsq + R))`. For finite
/// `x > 0` (subnormals included).
#[inline(always)]
fn log_parts(x: f64) -> (f64, f64, f64, f64) {
    let sub = x < f64::MIN_POSITIVE;
    let xs = if sub { x * 18_014_398_509_481_984.0 } else { x }; // 2⁵⁴
    let bits = xs.to_bits();
    let e = ((bits >> 52) & 0x7ff) as i64 - 1023 - if sub { 54 } else { 0 };
    let m = f64::from_bits((bits & 0x000f_ffff_ffff_ffff) | 0x3ff0_0000_0000_0000);
    let big = m > SQRT_2;
    let m = if big { m * 0.5 } else { m };
    let k = if big { e + 1 } else { e };
    let f = m - 1.0;
    let hfsq = 0.5 * f * f;
    let s = f / (2.0 + f);
    let z = s * s;
    let r = z * horner(z, LOG_LG);
    (k as f64, f, hfsq, s * (hfsq + r))
}

/// The special cases of a logarithm: `-inf` at ±0, NaN below 0 and for NaN, `+inf` at
/// `+inf`; otherwise `v`.
#[inline(always)]
fn log_special(x: f64, v: f64) -> f64 {
    if x == 0.0 {
        f64::NEG_INFINITY
    } else if x < 0.0 || x.is_nan() {
        f64::NAN
    } else if x == f64::INFINITY {
        f64::INFINITY
    } else {
        v
    }
}

/// A finite positive stand-in for `x` (see [`log_special`]).
#[inline(always)]
fn log_arg(x: f64) -> f64 {
    if x > 0.0 && x < f64::INFINITY {
        x
    } else {
        1.0
    }
}

/// `ln x`.
#[inline(always)]
pub(crate) fn ln(x: f64) -> f64 {
    let (k, f, hfsq, sr) = log_parts(log_arg(x));
    log_special(x, k * LN2_HI - ((hfsq - (sr + k * LN2_LO)) - f))
}

/// `log_b x` for the base whose `1/ln b` is `inv_hi + inv_lo` (`inv_hi` with 32 trailing
/// zero bits) and `log_b 2 = l2_hi + l2_lo` (FreeBSD's `e_log2.c`/`e_log10.c`): `ln(1+f)` is
/// split as `hi + lo` with `hi`'s low 32 bits cleared, so `hi·inv_hi` is exact, and the
/// integer part `k·log_b 2` is added with its rounding error carried.
#[inline(always)]
fn log_base(x: f64, inv_hi: f64, inv_lo: f64, l2_hi: f64, l2_lo: f64) -> f64 {
    let (k, f, hfsq, sr) = log_parts(log_arg(x));
    let hi = f64::from_bits((f - hfsq).to_bits() & 0xffff_ffff_0000_0000);
    let lo = (f - hi) - hfsq + sr;
    let val_hi = hi * inv_hi;
    let y = k * l2_hi;
    let val_lo = k * l2_lo + (lo + hi) * inv_lo + lo * inv_hi;
    let w = y + val_hi;
    let val_lo = val_lo + ((y - w) + val_hi);
    log_special(x, val_lo + w)
}

/// `log₂ x` (exact at powers of two).
#[inline(always)]
pub(crate) fn log2(x: f64) -> f64 {
    const INV_LN2_HI: f64 = f64::from_bits(0x3ff7_1547_6520_0000);
    const INV_LN2_LO: f64 = f64::from_bits(0x3de7_05fc_2eef_a200);
    log_base(x, INV_LN2_HI, INV_LN2_LO, 1.0, 0.0)
}

/// `log₁₀ x`.
#[inline(always)]
pub(crate) fn log10(x: f64) -> f64 {
    const INV_LN10_HI: f64 = f64::from_bits(0x3fdb_cb7b_1520_0000);
    const INV_LN10_LO: f64 = f64::from_bits(0x3dbb_9438_ca9a_add5);
    const LOG10_2_HI: f64 = f64::from_bits(0x3fd3_4413_509f_6000);
    const LOG10_2_LO: f64 = f64::from_bits(0x3d59_fef3_11f1_2b36);
    log_base(x, INV_LN10_HI, INV_LN10_LO, LOG10_2_HI, LOG10_2_LO)
}

/// `ln(1 + x)`, accurate near 0: `ln u − ((u − 1) − x)/u` with `u = 1 + x` (the second
/// term puts back what rounding `u` lost).
#[inline(always)]
pub(crate) fn ln_1p(x: f64) -> f64 {
    let u = 1.0 + x;
    let uu = log_arg(u);
    let (k, f, hfsq, sr) = log_parts(uu);
    let lu = k * LN2_HI - ((hfsq - (sr + k * LN2_LO)) - f);
    let v = lu - ((uu - 1.0) - x) / uu;
    if x == -1.0 {
        f64::NEG_INFINITY
    } else if x < -1.0 || x.is_nan() {
        f64::NAN
    } else if x == f64::INFINITY || x == 0.0 {
        // +inf, and ±0 with its sign.
        x
    } else {
        v
    }
}

// The other float64 functions, without a vector form yet: the C library's, one call per element
// (their full-range argument reduction needs more than float64 arithmetic; see
// `docs/ARCHITECTURE.md`).

/// Sine (C library).
#[inline(always)]
pub(crate) fn sin(x: f64) -> f64 {
    x.sin()
}
/// Cosine (C library).
#[inline(always)]
pub(crate) fn cos(x: f64) -> f64 {
    x.cos()
}
/// Tangent (C library).
#[inline(always)]
pub(crate) fn tan(x: f64) -> f64 {
    x.tan()
}
/// Hyperbolic tangent (C library: fdlibm's form on the expm1 above measured 3 ulp).
#[inline(always)]
pub(crate) fn tanh(x: f64) -> f64 {
    x.tanh()
}
/// Arcsine (C library).
#[inline(always)]
pub(crate) fn asin(x: f64) -> f64 {
    libm::asin(x)
}
/// Arccosine (C library).
#[inline(always)]
pub(crate) fn acos(x: f64) -> f64 {
    libm::acos(x)
}
/// Arctangent (C library).
#[inline(always)]
pub(crate) fn atan(x: f64) -> f64 {
    libm::atan(x)
}
/// Hyperbolic sine (C library).
#[inline(always)]
pub(crate) fn sinh(x: f64) -> f64 {
    libm::sinh(x)
}
/// Hyperbolic cosine (C library).
#[inline(always)]
pub(crate) fn cosh(x: f64) -> f64 {
    libm::cosh(x)
}
/// Inverse hyperbolic sine (C library).
#[inline(always)]
pub(crate) fn asinh(x: f64) -> f64 {
    libm::asinh(x)
}
/// Inverse hyperbolic cosine (C library).
#[inline(always)]
pub(crate) fn acosh(x: f64) -> f64 {
    libm::acosh(x)
}
/// Inverse hyperbolic tangent (C library).
#[inline(always)]
pub(crate) fn atanh(x: f64) -> f64 {
    libm::atanh(x)
}
