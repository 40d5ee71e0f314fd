//! float32 transcendental functions (see `mod.rs`).
//!
//! The exponentials, logarithms, circular functions and their inverses, `sigmoid`,
//! `sinh`, `cosh` and `atanh` compute in float32 itself, sixteen lanes to an AVX-512
//! register: Cody–Waite reductions with split constants (exact products without a fused
//! multiply-add) and the polynomials of Cephes and FreeBSD. `tanh`, `erf`, `asinh`,
//! `acosh` (and the circular functions beyond their float32 range) compute in float64
//! and round once: the `*_f64g` cores take and return float64 with about 40 correct bits
//! ("float32 grade"), enough that the final rounding to float32 is the only visible one.

use super::{horner, round_int};
use crate::kernel::elementwise_loops::{Fixup, Map1, VectorFn};
use std::f64::consts::{FRAC_1_PI, LN_2, SQRT_2};

/// `1.5·2²³`: adding it rounds a float32 of magnitude below 2²² to an integer (ties to
/// even), which its low bits then hold.
const ROUND_MAGIC_F32: f32 = 12_582_912.0;

/// `x` rounded to the nearest integer, as a float and as an integer, for `|x| < 2²²`
/// (other values give garbage that callers select away).
#[inline(always)]
fn round_int_f32(x: f32) -> (f32, i32) {
    let t = x + ROUND_MAGIC_F32;
    let k = (t.to_bits() as i32).wrapping_sub(ROUND_MAGIC_F32.to_bits() as i32);
    (t - ROUND_MAGIC_F32, k)
}

/// `2ᵏ` as a float32 for `-126 ≤ k ≤ 127` (other values give garbage).
#[inline(always)]
fn pow2_f32(k: i32) -> f32 {
    f32::from_bits((k.wrapping_add(127) as u32) << 23)
}

/// `p·2ᵏ` for a `p` near 1 and `-152 ≤ k ≤ 130`, rounded once: the first product is exact
/// (it stays normal), the second rounds to a subnormal, a normal or infinity.
#[inline(always)]
fn scale_f32(p: f32, k: i32) -> f32 {
    let k1 = k >> 1;
    p * pow2_f32(k1) * pow2_f32(k.wrapping_sub(k1))
}

/// `Horner` in float32.
#[inline(always)]
fn horner_f32<const N: usize>(x: f32, c: [f32; N]) -> f32 {
    let mut acc = c[N - 1];
    for k in (0..N - 1).rev() {
        acc = acc * x + c[k];
    }
    acc
}

/// ln 2 in two parts (Cephes): `k·LN2_HI_C` is exact for `|k| < 2¹⁵`.
const LN2_HI_C: f32 = 0.693_359_4;
const LN2_LO_C: f32 = -2.121_944_4e-4;

/// `(eʳ − 1 − r)/r²` for `|r| ≤ ln2/2` (Cephes `expf`).
const EXP_P: [f32; 6] = [
    0.5,
    0.166_666_66,
    0.041_665_796,
    0.008_333_452,
    0.001_398_199_9,
    1.987_569_1e-4,
];

/// `(k, r, eʳ − 1)` with `x = k·ln2 + r`, `|r| ≤ ln2/2`, for `x` clamped to `[-104, 90]`
/// (beyond, e^x is 0 or +inf in float32 already; NaN passes the clamps).
#[inline(always)]
fn exp_reduce(x: f32, lo: f32) -> (i32, f32) {
    let x = if x < lo { lo } else { x };
    let x = if x > 90.0 { 90.0 } else { x };
    let (kf, k) = round_int_f32(x * std::f32::consts::LOG2_E);
    // |k| ≤ 150: k·LN2_HI_C is exact and so is the subtraction (Sterbenz).
    let r = (x - kf * LN2_HI_C) - kf * LN2_LO_C;
    (k, horner_f32(r, EXP_P) * (r * r) + r)
}

/// `eˣ` (within 0.97 ulp).
#[inline(always)]
pub(crate) fn exp(x: f32) -> f32 {
    let (k, em1) = exp_reduce(x, -104.0);
    scale_f32(em1 + 1.0, k)
}

/// `(2ʳ − 1)/r` for `|r| ≤ ½` (Cephes `exp2f`).
const EXP2_P: [f32; 6] = [
    std::f32::consts::LN_2,
    0.240_226_48,
    0.055_503_324,
    0.009_618_437,
    0.001_339_887_4,
    1.535_336_2e-4,
];

/// `2ˣ` (exact at integers; within 1.21 ulp).
#[inline(always)]
pub(crate) fn exp2(x: f32) -> f32 {
    let x = if x < -152.0 { -152.0 } else { x };
    let x = if x > 130.0 { 130.0 } else { x };
    let (kf, k) = round_int_f32(x);
    let r = x - kf;
    scale_f32(r * horner_f32(r, EXP2_P) + 1.0, k)
}

/// `eˣ − 1` (within 1.55 ulp): `2ᵏ·((eʳ − 1) + (1 − 2⁻ᵏ))`, which is `eʳ − 1` itself for
/// `k = 0` (so tiny `x` and ±0 come out as `x`).
#[inline(always)]
pub(crate) fn expm1(x: f32) -> f32 {
    let (k, em1) = exp_reduce(x, -40.0);
    let nk = k.wrapping_neg();
    let one_less = 1.0 - pow2_f32(if nk < -126 { -126 } else { nk });
    let v = scale_f32(em1 + one_less, k);
    if x == 0.0 {
        x // ±0 keeps its sign
    } else if k == 0 {
        em1
    } else {
        v
    }
}

/// The logistic function `1/(1 + e⁻ˣ)`, as `eˣ/(1 + eˣ)` for `x < 0` (so results that
/// are subnormals still come out; within 2.32 ulp).
#[inline(always)]
pub(crate) fn sigmoid(x: f32) -> f32 {
    let e = exp(-x.abs());
    let num = if x < 0.0 { e } else { 1.0 };
    num / (1.0 + e)
}

/// `(sinh x − x)/x³` as a polynomial in `x²` for `|x| ≤ 1` (Cephes `sinhf`).
const SINH_P: [f32; 3] = [0.166_667_16, 0.008_330_284, 2.037_219_1e-4];

/// `eᵃ/2` for `a ≥ 0`, overflowing only where `eᵃ/2` does.
#[inline(always)]
fn exp_half(a: f32) -> f32 {
    let (k, em1) = exp_reduce(a, -104.0);
    scale_f32(em1 + 1.0, k.wrapping_sub(1))
}

/// Hyperbolic sine (within 1.6 ulp): the odd polynomial for `|x| ≤ 1`, `h − 1/(4h)` with
/// `h = e^|x|/2` beyond.
#[inline(always)]
pub(crate) fn sinh(x: f32) -> f32 {
    let a = x.abs();
    let z = x * x;
    let small = horner_f32(z, SINH_P) * z * x + x;
    let h = exp_half(a);
    let big = h - 0.25 / h;
    let big = f32::from_bits(big.to_bits() | (x.to_bits() & 0x8000_0000));
    if a <= 1.0 {
        small
    } else if x.is_nan() {
        x
    } else {
        big
    }
}

/// Hyperbolic cosine: `h + 1/(4h)` with `h = e^|x|/2` (within 1.42 ulp).
#[inline(always)]
pub(crate) fn cosh(x: f32) -> f32 {
    let h = exp_half(x.abs());
    h + 0.25 / h
}

/// FreeBSD `k_logf.h`: `(ln(1 + f) − f + f²/2 − s·f²/2)/s` as an even polynomial in `s`,
/// `s = f/(2 + f)`.
const LG: [f32; 4] = [0.666_666_6, 0.400_009_72, 0.284_987_87, 0.242_790_79];
/// ln 2 in two parts (FreeBSD): `e·LN2_HI_B` is exact for every float32 exponent.
const LN2_HI_B: f32 = f32::from_bits(0x3f31_7180);
const LN2_LO_B: f32 = f32::from_bits(0x3717_f7d1);

/// `(f²/2, s·(f²/2 + R))` with `ln(1 + f) = f − f²/2 + s·(f²/2 + R)`, for `f` in about
/// `[√½ − 1, √2 − 1]`.
#[inline(always)]
fn klog_f(f: f32) -> (f32, f32) {
    let s = f / (2.0 + f);
    let z = s * s;
    let w = z * z;
    let r = z * (LG[0] + w * LG[2]) + w * (LG[1] + w * LG[3]);
    let hfsq = 0.5 * f * f;
    (hfsq, s * (hfsq + r))
}

/// `(e, f)` with `x = 2ᵉ·(1 + f)`, `1 + f` in `[√½, √2)`, for a positive, normal, finite
/// `x` (an integer subtraction moves the mantissa to that range).
#[inline(always)]
fn log_split_f32(x: f32) -> (i32, f32) {
    let t = (x.to_bits() as i32).wrapping_sub(0x3f35_04f3);
    let m = f32::from_bits((t & 0x007f_ffff).wrapping_add(0x3f35_04f3) as u32);
    (t >> 23, m - 1.0)
}

/// Whether a logarithm's fast form does not hold at `x` (zero, subnormal, negative,
/// infinite, NaN): one unsigned comparison.
#[inline(always)]
fn log_rare(x: f32) -> bool {
    x.to_bits().wrapping_sub(0x0080_0000) >= 0x7f00_0000
}

/// A logarithm's full form: subnormals scaled by 2²⁴ (the exponent corrected), its
/// special cases selected (`-inf` at ±0, NaN below 0 and for NaN, `+inf` at `+inf`).
#[inline(always)]
fn log_full(x: f32, fast: impl Fn(i32, f32) -> f32) -> f32 {
    let sub = x < f32::MIN_POSITIVE;
    let xa = if x > 0.0 && x < f32::INFINITY { x } else { 1.0 };
    let xa = if sub && x > 0.0 {
        xa * 16_777_216.0
    } else {
        xa
    };
    let (e, f) = log_split_f32(xa);
    let v = fast(if sub { e - 24 } else { e }, f);
    if x == 0.0 {
        f32::NEG_INFINITY
    } else if x < 0.0 || x.is_nan() {
        f32::NAN
    } else if x == f32::INFINITY {
        x
    } else {
        v
    }
}

/// `ln(2ᵉ·(1 + f))` (within 0.82 ulp).
#[inline(always)]
fn ln_parts(e: i32, f: f32) -> f32 {
    let e = e as f32;
    let (hfsq, sr) = klog_f(f);
    e * LN2_HI_B + (f - (hfsq - (sr + e * LN2_LO_B)))
}

/// `(hi, lo)` with `ln(1 + f) = hi + lo` and `hi` of 12 significant bits, so that its
/// products with the 12-bit heads of the constants below are exact (FreeBSD's
/// `e_log2f.c`, `e_log10f.c`).
#[inline(always)]
fn ln_hi_lo(f: f32) -> (f32, f32) {
    let (hfsq, sr) = klog_f(f);
    let hi = f32::from_bits((f - hfsq).to_bits() & 0xffff_f000);
    (hi, (f - hi) - hfsq + sr)
}

const IVLN2_HI: f32 = f32::from_bits(0x3fb8_b000);
const IVLN2_LO: f32 = f32::from_bits(0xb938_9ad4);
const IVLN10_HI: f32 = f32::from_bits(0x3ede_6000);
const IVLN10_LO: f32 = f32::from_bits(0xb804_ead9);
const LOG10_2_HI: f32 = f32::from_bits(0x3e9a_2080);
const LOG10_2_LO: f32 = f32::from_bits(0x3554_27db);

/// `log₂(2ᵉ·(1 + f))` (exact at powers of two; within 0.85 ulp).
#[inline(always)]
fn log2_parts(e: i32, f: f32) -> f32 {
    let (hi, lo) = ln_hi_lo(f);
    (lo + hi) * IVLN2_LO + lo * IVLN2_HI + hi * IVLN2_HI + e as f32
}

/// `log₁₀(2ᵉ·(1 + f))` (within 0.83 ulp).
#[inline(always)]
fn log10_parts(e: i32, f: f32) -> f32 {
    let (hi, lo) = ln_hi_lo(f);
    let e = e as f32;
    e * LOG10_2_LO + (lo + hi) * IVLN10_LO + lo * IVLN10_HI + hi * IVLN10_HI + e * LOG10_2_HI
}

/// `ln x`.
#[inline(always)]
pub(crate) fn ln(x: f32) -> f32 {
    log_full(x, ln_parts)
}

/// `log₂ x`.
#[inline(always)]
pub(crate) fn log2(x: f32) -> f32 {
    log_full(x, log2_parts)
}

/// `log₁₀ x`.
#[inline(always)]
pub(crate) fn log10(x: f32) -> f32 {
    log_full(x, log10_parts)
}

/// The logarithms as vector functions ([`VectorFn`]): the fast form holds for positive,
/// normal, finite inputs; a block holding any other value recomputes those elements by
/// the full form. (The full form's subnormal scaling and special-case selects cost about
/// as much again as the logarithm itself.)
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Ln;
/// See [`Ln`].
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Log2;
/// See [`Ln`].
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Log10;

macro_rules! log_vector_fn {
    ($($t:ident: $parts:ident, $full:ident;)*) => {$(
        impl VectorFn<f32> for $t {
            #[inline(always)]
            fn fast(x: f32) -> f32 {
                let (e, f) = log_split_f32(x);
                $parts(e, f)
            }
            #[inline(always)]
            fn rare(x: f32) -> bool {
                log_rare(x)
            }
            #[inline(always)]
            fn exact(x: f32) -> f32 {
                $full(x)
            }
        }
    )*};
}

log_vector_fn! {
    Ln: ln_parts, ln;
    Log2: log2_parts, log2;
    Log10: log10_parts, log10;
}

kernel_map!(
    /// `eˣ` as a map.
    f32, ExpMap, exp, avx512_f32, Exp
);
kernel_map!(
    /// `2ˣ` as a map.
    f32, Exp2Map, exp2, avx512_f32, Exp2
);
kernel_map!(
    /// `ln x` as a map (the vector function [`Ln`] below AVX-512).
    f32, LnMap, Fixup(Ln), avx512_f32, Ln
);
kernel_map!(
    /// `log₂ x` as a map.
    f32, Log2Map, Fixup(Log2), avx512_f32, Log2
);
kernel_map!(
    /// `log₁₀ x` as a map.
    f32, Log10Map, Fixup(Log10), avx512_f32, Log10
);
kernel_map!(
    /// `ln(1 + x)` as a map.
    f32, Ln1pMap, ln_1p, avx512_f32, Ln1p
);
kernel_map!(
    /// `eˣ − 1` as a map.
    f32, Expm1Map, expm1, avx512_f32, Expm1
);
kernel_map!(
    /// The logistic function as a map.
    f32, SigmoidMap, sigmoid, avx512_f32, Sigmoid
);
kernel_map!(
    /// `erf x` as a map.
    f32, ErfMap, erf, avx512_f32, Erf
);
kernel_map!(
    /// GELU as a map.
    f32, GeluMap, gelu, avx512_f32, Gelu
);

kernel_map!(
    /// `tanh x` as a map.
    f32, TanhMap, tanh, avx512_f32, Tanh
);
kernel_map!(
    /// `sinh x` as a map.
    f32, SinhMap, sinh, avx512_f32, Sinh
);
kernel_map!(
    /// `cosh x` as a map.
    f32, CoshMap, cosh, avx512_f32, Cosh
);
kernel_map!(
    /// `asinh x` as a map.
    f32, AsinhMap, asinh, avx512_f32, Asinh
);
kernel_map!(
    /// `acosh x` as a map.
    f32, AcoshMap, acosh, avx512_f32, Acosh
);
kernel_map!(
    /// `atanh x` as a map.
    f32, AtanhMap, atanh, avx512_f32, Atanh
);

kernel_map!(
    /// `sin x` as a map (the vector function [`Sin`] below AVX-512).
    f32, SinMap, Fixup(Sin), avx512_f32, Sin
);
kernel_map!(
    /// `cos x` as a map (the vector function [`Cos`] below AVX-512).
    f32, CosMap, Fixup(Cos), avx512_f32, Cos
);
kernel_map!(
    /// `tan x` as a map (the vector function [`Tan`] below AVX-512).
    f32, TanMap, Fixup(Tan), avx512_f32, Tan
);

kernel_map!(
    /// `atan x` as a map.
    f32, AtanMap, atan, avx512_f32, Atan
);
kernel_map!(
    /// `asin x` as a map.
    f32, AsinMap, asin, avx512_f32, Asin
);
kernel_map!(
    /// `acos x` as a map.
    f32, AcosMap, acos, avx512_f32, Acos
);

/// `ln(1 + x)`, accurate near 0 (within 0.82 ulp): `u = 1 + x` is split as for `ln`, and
/// what its rounding lost, `c = x − (u − 1)` (exact), enters as `c/u`.
#[inline(always)]
pub(crate) fn ln_1p(x: f32) -> f32 {
    let u = 1.0 + x;
    let ok = u > 0.0 && u < f32::INFINITY;
    let uu = if ok { u } else { 2.0 };
    let (e, f) = log_split_f32(uu);
    let c = if ok { x - (uu - 1.0) } else { 0.0 };
    let e = e as f32;
    let (hfsq, sr) = klog_f(f);
    let v = e * LN2_HI_B + (f - (hfsq - (sr + (e * LN2_LO_B + c / uu))));
    if x == -1.0 {
        f32::NEG_INFINITY
    } else if x < -1.0 || x.is_nan() {
        f32::NAN
    } else if x == f32::INFINITY || x == 0.0 {
        x // ±0 keeps its sign
    } else {
        v
    }
}

/// `(atanh x − x)/x³` as a polynomial in `x²` for `|x| < ½` (Cephes `atanhf`).
const ATANH_P: [f32; 5] = [
    0.333_337_3,
    0.199_782_16,
    0.146_691_43,
    0.082_437_03,
    0.181_740_08,
];

/// Inverse hyperbolic tangent (within 1.33 ulp): the odd polynomial below ½, `½·ln((1 +
/// a)/(1 − a))` from ½ (where `1 − a` is exact), sign restored.
#[inline(always)]
pub(crate) fn atanh(x: f32) -> f32 {
    let a = x.abs();
    let z = x * x;
    let small = horner_f32(z, ATANH_P) * z * x + x;
    let ac = if (0.5..1.0).contains(&a) { a } else { 0.75 };
    let (e, f) = log_split_f32((1.0 + ac) / (1.0 - ac));
    let big = 0.5 * ln_parts(e, f);
    let big = f32::from_bits(big.to_bits() | (x.to_bits() & 0x8000_0000));
    if a == 1.0 {
        f32::INFINITY.copysign(x)
    } else if a > 1.0 || a.is_nan() {
        f32::NAN
    } else if a < 0.5 {
        small
    } else {
        big
    }
}

/// `ln x` for a positive, finite, normal float64 `x` (float32 grade).
#[inline(always)]
pub(crate) fn log_f64g(x: f64) -> f64 {
    let (e, p) = log_parts(x);
    e * LN_2 + p
}

/// `atanh(s)/s` as a polynomial in `s²` for `|s| ≤ 3 − 2√2 ≈ 0.1716` (fitted to the
/// relative error, within 2⁻³⁷·⁸), for `ln m = 2·atanh((m − 1)/(m + 1))`.
const ATANH_POLY: [f64; 5] = [
    1.000_000_000_004_182_9,
    0.333_333_326_209_667_5,
    0.200_001_929_154_047_6,
    0.142_674_905_513_414_05,
    0.118_088_191_873_331_11,
];

/// `x = 2ᵉ·m` with `m` in `[1, 2)`: `(e, m)`, for positive, finite, normal `x`.
#[inline(always)]
fn split(x: f64) -> (i64, f64) {
    let bits = x.to_bits();
    let e = ((bits >> 52) & 0x7ff) as i64 - 1023;
    (
        e,
        f64::from_bits((bits & 0x000f_ffff_ffff_ffff) | 0x3ff0_0000_0000_0000),
    )
}

/// `x = 2ᵉ·m` with `m` in `[√½, √2)`: `(e, ln m)`, for positive, finite, normal `x`.
#[inline(always)]
fn log_parts(x: f64) -> (f64, f64) {
    let (e, m) = split(x);
    let big = m > SQRT_2;
    let m = if big { m * 0.5 } else { m };
    let e = if big { e + 1 } else { e };
    // ln m = 2·atanh(s), s = (m − 1)/(m + 1), |s| ≤ 0.172.
    let f = m - 1.0;
    let s = f / (2.0 + f);
    (e as f64, 2.0 * s * horner(s * s, ATANH_POLY))
}

/// π/2 in three parts: 24, 24 and 53 significant bits. For `k < 2²⁹` the products
/// `k·P1` and `k·P2` are exact and so are the subtractions (Cody–Waite).
const PIO2_1: f64 = f64::from_bits(0x3ff9_21fb_6000_0000);
const PIO2_2: f64 = f64::from_bits(0xbe67_77a5_c000_0000);
const PIO2_3: f64 = f64::from_bits(0xbcde_e59d_9cce_ba40);

/// Below this magnitude [`reduce`] is exact enough (k < 2²⁹); above it, and for ±inf and
/// NaN, the circular functions take their exact scalar form.
const TRIG_FAST_MAX: f32 = 5.0e8;

/// The reduction of a float32 `x` with `|x| ≤` [`TRIG_FAST_MAX`] for the circular
/// functions: `(θ, q)` with `x = θ + q·π/2 (mod 2π)` and `|θ| ≤ π/4`, θ to about 2⁻⁵⁰
/// relative (the float32 values below 5·10⁸ stay about 2⁻³⁰ away from multiples of π/2,
/// far above the 2⁻⁷⁰ error of the three-part constant).
#[inline(always)]
fn reduce(x: f32) -> (f64, i64) {
    let xd = x as f64;
    let (kf, k) = round_int(xd * std::f64::consts::FRAC_2_PI);
    (((xd - kf * PIO2_1) - kf * PIO2_2) - kf * PIO2_3, k & 3)
}

/// `(sin θ, cos θ)` for `|θ| ≤ π/4` (Taylor to θ¹¹ and θ¹²: below 2⁻³⁷ relative).
#[inline(always)]
fn sincos_poly(t: f64) -> (f64, f64) {
    let z = t * t;
    let s = t + t
        * z
        * horner(
            z,
            [
                -1.0 / 6.0,
                1.0 / 120.0,
                -1.0 / 5040.0,
                1.0 / 362_880.0,
                -1.0 / 39_916_800.0,
            ],
        );
    let c = 1.0
        + z * horner(
            z,
            [
                -1.0 / 2.0,
                1.0 / 24.0,
                -1.0 / 720.0,
                1.0 / 40320.0,
                -1.0 / 3_628_800.0,
                1.0 / 479_001_600.0,
            ],
        );
    (s, c)
}

/// `sin(t)/t` as a polynomial in `t²` for `|t| ≤ π/2` (fitted to the relative error,
/// within 2⁻³⁵·⁴): one polynomial serves the sine and the cosine, each reduced by a
/// multiple of π (a reduction by π/2 needs both a sine and a cosine polynomial).
const SIN_POLY: [f64; 6] = [
    0.999_999_999_978_863_9,
    -0.166_666_666_085_912_9,
    0.008_333_330_710_132_963,
    -0.000_198_408_314_150_504_83,
    2.752_389_684_695_933e-06,
    -2.386_700_767_575_966_6e-08,
];

/// π in three parts (twice those of π/2): `k·PI_1` and `k·PI_2` are exact for `k < 2²⁸`.
const PI_1: f64 = 2.0 * PIO2_1;
const PI_2: f64 = 2.0 * PIO2_2;
const PI_3: f64 = 2.0 * PIO2_3;

/// `sin t` for `|t| ≤ π/2` (float32 grade, relative).
#[inline(always)]
fn sin_poly(t: f64) -> f64 {
    t * horner(t * t, SIN_POLY)
}

/// `v` with its sign flipped when `neg`.
#[inline(always)]
fn flip(v: f64, neg: bool) -> f64 {
    f64::from_bits(v.to_bits() ^ ((neg as u64) << 63))
}

/// The sine, cosine and tangent computed in float64 (the fallback of [`Sin`], [`Cos`],
/// [`Tan`] beyond their float32 range), as vector functions themselves: the fast form
/// reduces in float64 by Cody–Waite below [`TRIG_FAST_MAX`]; beyond (and at ±inf, NaN)
/// each element takes the C library's float64 function, rounded once (within 2⁻²⁸ ulp of
/// exact: float64 carries 29 more bits). Within 0.502 ulp.
#[derive(Debug, Clone, Copy, Default)]
struct SinWide;
/// See [`SinWide`].
#[derive(Debug, Clone, Copy, Default)]
struct CosWide;
/// See [`SinWide`].
#[derive(Debug, Clone, Copy, Default)]
struct TanWide;

impl VectorFn<f32> for SinWide {
    #[inline(always)]
    fn fast(x: f32) -> f32 {
        // x = t + kπ, |t| ≤ π/2: sin x = (−1)ᵏ sin t. (k < 2²⁸ below TRIG_FAST_MAX.)
        let xd = x as f64;
        let (kf, k) = round_int(xd * FRAC_1_PI);
        let t = ((xd - kf * PI_1) - kf * PI_2) - kf * PI_3;
        let v = flip(sin_poly(t), k & 1 != 0) as f32;
        // ±0 keeps its sign (the polynomial's sum gives +0).
        if x == 0.0 {
            x
        } else {
            v
        }
    }
    #[inline(always)]
    fn rare(x: f32) -> bool {
        wide_rare(x)
    }
    #[inline(always)]
    fn exact(x: f32) -> f32 {
        (x as f64).sin() as f32
    }
}

impl VectorFn<f32> for CosWide {
    #[inline(always)]
    fn fast(x: f32) -> f32 {
        // x = t + (2j + 1)·π/2, |t| ≤ π/2: cos x = (−1)ʲ⁺¹ sin t. (2j + 1 < 2²⁹ below
        // TRIG_FAST_MAX: the three-part π/2 is exact for it.)
        let xd = x as f64;
        let (jf, j) = round_int(xd * FRAC_1_PI - 0.5);
        let q = 2.0 * jf + 1.0;
        let t = ((xd - q * PIO2_1) - q * PIO2_2) - q * PIO2_3;
        flip(sin_poly(t), j & 1 == 0) as f32
    }
    #[inline(always)]
    fn rare(x: f32) -> bool {
        wide_rare(x)
    }
    #[inline(always)]
    fn exact(x: f32) -> f32 {
        (x as f64).cos() as f32
    }
}

impl VectorFn<f32> for TanWide {
    #[inline(always)]
    fn fast(x: f32) -> f32 {
        let (t, q) = reduce(x);
        let (s, c) = sincos_poly(t);
        // tan(θ + π/2) = −cos θ / sin θ; the period is π.
        let v = (if q & 1 == 1 { -c / s } else { s / c }) as f32;
        if x == 0.0 {
            x
        } else {
            v
        }
    }
    #[inline(always)]
    fn rare(x: f32) -> bool {
        wide_rare(x)
    }
    #[inline(always)]
    fn exact(x: f32) -> f32 {
        (x as f64).tan() as f32
    }
}

/// Whether a float64 circular function takes its exact scalar form at `x` (beyond
/// [`TRIG_FAST_MAX`], ±inf, NaN).
#[inline(always)]
fn wide_rare(x: f32) -> bool {
    x.abs() > TRIG_FAST_MAX || x.is_nan()
}

/// π/2 in four float32 parts of 8, 11, 11 and 24 significant bits: for `k < 2¹³` the
/// products `k·P1`, `k·P2`, `k·P3` are exact, `x − k·P1` is exact (Sterbenz) and so is its
/// difference with `k·P2` (both on the 2⁻²⁴ grid, the result below 1); the third
/// subtraction is made error-free (Fast2Sum) and `k·P4` goes into the low part.
pub(super) const PIO2_F1: f32 = 1.570_312_5;
pub(super) const PIO2_F2: f32 = 4.837_513e-4;
pub(super) const PIO2_F3: f32 = 7.549_533_6e-8;
pub(super) const PIO2_F4: f32 = 2.563_344e-12;

/// The float32 circular functions' range: `k = round(x·2/π) < 2¹³`.
pub(super) const TRIG_F32_MAX: f32 = 12_867.0;

/// `x = (hi + lo) + k·π/2` with `|hi + lo| ≤ π/4` (slightly above where k rounds), for
/// `0 ≤ a ≤` [`TRIG_F32_MAX`]: `hi + lo` is within 2⁻²⁸ relative of the exact remainder
/// (checked for every float32 in the range; the float32 nearest a multiple of π/2 there
/// lies 2⁻²⁷·⁸ from it).
#[inline(always)]
fn reduce_f32(a: f32) -> (f32, f32, i32) {
    let (kf, k) = round_int_f32(a * std::f32::consts::FRAC_2_PI);
    let r = (a - kf * PIO2_F1) - kf * PIO2_F2;
    let e = kf * PIO2_F3;
    let hi = r - e;
    let lo = ((r - hi) - e) - kf * PIO2_F4;
    (hi, lo, k)
}

/// `(sin t − t)/t³` in `t²`, `|t| ≤ π/4` (Cephes `sinf`).
pub(super) const SIN_S: [f32; 3] = [-0.166_666_55, 0.008_332_161, -1.951_529_6e-4];
/// `(cos t − 1 + t²/2)/t⁴` in `t²`, `|t| ≤ π/4` (Cephes `sinf`).
pub(super) const COS_C: [f32; 3] = [0.041_666_646, -0.001_388_731_6, 2.443_315_7e-5];

/// `(sin t, cos t)` for `t = hi + lo`.
#[inline(always)]
fn sincos_f32(hi: f32, lo: f32) -> (f32, f32) {
    let z = hi * hi;
    let s = hi + (lo + hi * z * horner_f32(z, SIN_S));
    let w = 0.5 * z;
    let h = 1.0 - w;
    let c = h + (((1.0 - h) - w) + (z * z * horner_f32(z, COS_C) - hi * lo));
    (s, c)
}

/// `v` with the sign bits `sign` flipped.
#[inline(always)]
fn flip_f32(v: f32, sign: u32) -> f32 {
    f32::from_bits(v.to_bits() ^ sign)
}

/// `(tan t − t)/t³` in `t²`, `|t| ≤ π/4` (Cephes `tanf`).
pub(super) const TAN_P: [f32; 6] = [
    0.333_331_56,
    0.133_388,
    0.053_411_28,
    0.024_430_135,
    0.003_119_922_2,
    0.009_385_402,
];

/// The sine, cosine and tangent as vector functions (`kernel/elementwise_loops.rs`'s
/// [`VectorFn`]): the fast form computes in float32 for `|x| ≤` [`TRIG_F32_MAX`] (the
/// four-part reduction above, then Cephes' polynomials; measured over every float32 in
/// the range: sin 1.00 ulp, cos 1.03, tan 1.73); beyond, and at ±inf and NaN, an element
/// takes the float64 form ([`SinWide`]).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Sin;
/// See [`Sin`].
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Cos;
/// See [`Sin`].
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Tan;

/// The sine's float32 fast form (see [`Sin`]).
#[inline(always)]
fn sin_fast(x: f32) -> f32 {
    let (hi, lo, k) = reduce_f32(x.abs());
    let (s, c) = sincos_f32(hi, lo);
    let v = if k & 1 != 0 { c } else { s };
    flip_f32(v, ((k as u32 & 2) << 30) ^ (x.to_bits() & 0x8000_0000))
}

/// The cosine's float32 fast form (see [`Sin`]).
#[inline(always)]
fn cos_fast(x: f32) -> f32 {
    let (hi, lo, k) = reduce_f32(x.abs());
    let (s, c) = sincos_f32(hi, lo);
    let v = if k & 1 != 0 { s } else { c };
    flip_f32(v, (k.wrapping_add(1) as u32 & 2) << 30)
}

/// The tangent's float32 fast form (see [`Sin`]).
#[inline(always)]
fn tan_fast(x: f32) -> f32 {
    let (hi, lo, k) = reduce_f32(x.abs());
    let z = hi * hi;
    // tan(hi + lo) = tan hi + lo·(1 + tan² hi): y = hi + yl.
    let yl = z * (hi * horner_f32(z, TAN_P) + lo) + lo;
    let y = hi + yl;
    // Odd quadrants: −1/tan t, corrected for the rounding of y.
    let e = yl - (y - hi);
    let q = -1.0 / y;
    let cot = q + q * q * e;
    let v = if k & 1 != 0 { cot } else { y };
    flip_f32(v, x.to_bits() & 0x8000_0000)
}

macro_rules! trig_vector_fn {
    ($($t:ident: $fast:ident, $wide:ident;)*) => {$(
        impl VectorFn<f32> for $t {
            #[inline(always)]
            fn fast(x: f32) -> f32 {
                $fast(x)
            }
            #[inline(always)]
            fn rare(x: f32) -> bool {
                trig_rare(x)
            }
            #[inline(always)]
            fn exact(x: f32) -> f32 {
                Fixup($wide).one(x)
            }
        }
    )*};
}

trig_vector_fn! {
    Sin: sin_fast, SinWide;
    Cos: cos_fast, CosWide;
    Tan: tan_fast, TanWide;
}

/// Whether a circular function takes its float64 form at `x` (beyond
/// [`TRIG_F32_MAX`], ±inf, NaN).
#[inline(always)]
fn trig_rare(x: f32) -> bool {
    x.abs() > TRIG_F32_MAX || x.is_nan()
}

/// Sine (one element; the block loops run [`Sin`] a block at a time).
#[inline(always)]
pub(crate) fn sin(x: f32) -> f32 {
    Fixup(Sin).one(x)
}

/// Cosine (one element; see [`sin`]).
#[inline(always)]
pub(crate) fn cos(x: f32) -> f32 {
    Fixup(Cos).one(x)
}

/// Tangent (one element; see [`sin`]).
#[inline(always)]
pub(crate) fn tan(x: f32) -> f32 {
    Fixup(Tan).one(x)
}

/// `tanh(a)/a = P(a²)/Q(a²)` for `0 ≤ a ≤ 9.02` (a rational function fitted to the
/// relative error, within 2⁻³⁴·⁷; beyond 9.02, tanh rounds to 1 in float32).
const TANH_P: [f64; 6] = [
    0.999_999_999_963_726_2,
    0.140_992_211_714_626_73,
    0.004_425_964_325_467_827,
    4.227_412_233_934_982e-05,
    1.111_781_805_865_226_1e-07,
    3.674_560_820_940_822_3e-11,
];
/// See [`TANH_P`].
const TANH_Q: [f64; 6] = [
    1.0,
    0.474_325_544_648_384_17,
    0.029_201_146_603_270_95,
    0.000_500_837_087_237_906_6,
    2.603_889_624_016_049_4e-06,
    2.951_252_705_238_001e-09,
];

/// Hyperbolic tangent: one rational function in float64 (no exponential; one division).
#[inline(always)]
pub(crate) fn tanh(x: f32) -> f32 {
    let a = (x.abs() as f64).min(9.02);
    let z = a * a;
    let v = flip(
        a * (horner(z, TANH_P) / horner(z, TANH_Q)),
        x.is_sign_negative(),
    ) as f32;
    if x.is_nan() {
        x
    } else {
        v
    }
}

/// `(atan u − u)/u³` in `u²`, `|u| ≤ 7/16` (FreeBSD `s_atanf.c`).
pub(super) const ATAN_P: [f32; 5] = [
    -0.333_333_28,
    0.199_991_58,
    -0.142_536_36,
    0.106_480_174,
    -0.061_687_607,
];

/// `atan c` as float32 `hi + lo` for `c = ½, 1, ∞`.
pub(super) const ATAN_HALF: (f32, f32) = (0.463_647_6, 5.012_158_7e-9);
pub(super) const ATAN_ONE: (f32, f32) = (std::f32::consts::FRAC_PI_4, -2.185_569_4e-8);
pub(super) const ATAN_INF: (f32, f32) = (std::f32::consts::FRAC_PI_2, -4.371_139e-8);

/// Arctangent (within 0.91 ulp, every float32 checked): `atan|x| = atan c + atan u`,
/// `u = (|x| − c)/(1 + |x|·c)` with `c = 0, ½, 1` split at 7/16 and 11/16, or `u = −1/|x|`
/// from 39/16 (fdlibm's breakpoints less 19/16), so `|u| ≤ 7/16`; `|x| − c` is exact; one
/// division.
#[inline(always)]
pub(crate) fn atan(x: f32) -> f32 {
    let a = x.abs();
    let r1 = a >= 0.4375;
    let r2 = a >= 0.6875;
    let r4 = a >= 2.4375;
    let c = if r2 {
        1.0
    } else if r1 {
        0.5
    } else {
        0.0
    };
    let (yh, yl) = if r4 {
        ATAN_INF
    } else if r2 {
        ATAN_ONE
    } else if r1 {
        ATAN_HALF
    } else {
        (0.0, 0.0)
    };
    let num = if r4 { -1.0 } else { a - c };
    let den = if r4 { a } else { 1.0 + a * c };
    let u = num / den;
    let z = u * u;
    // At a = inf, u = −0 and the sum is π/2; NaN stays NaN.
    let v = yh + (u + (yl + u * z * horner_f32(z, ATAN_P)));
    flip_f32(v, x.to_bits() & 0x8000_0000)
}

/// π as a high and a low float32.
pub(super) const PI_PAIR: (f32, f32) = (std::f32::consts::PI, -8.742_278e-8);

/// `(asin s − s)/s³` in `s²`, `|s| ≤ ½` (Cephes `asinf`).
pub(super) const ASIN_P: [f32; 5] = [
    0.166_667_52,
    0.074_953_005,
    0.045_470_025,
    0.024_181_312,
    0.042_163_2,
];

/// For `a = |x|`: `(s, sl, z, big)` with `asin a = asin(s + sl)` when `a ≤ ½` (`s = a`)
/// and `asin a = π/2 − 2·asin(s + sl)` beyond, `s + sl = √((1 − a)/2)` to about 2⁻⁴⁰ (the
/// square root's rounding corrected: its exact residual by Dekker's split, divided by
/// `2s` through a bit-trick reciprocal and one Newton step). `z = s²`.
#[inline(always)]
fn asin_arg(a: f32) -> (f32, f32, f32, bool) {
    let big = a > 0.5;
    let zb = (1.0 - a) * 0.5; // exact for a ≥ ½
    let z = if big { zb } else { a * a };
    let sq = zb.sqrt();
    let c = sq * 4097.0;
    let sh = c - (c - sq);
    let sl = sq - sh;
    let r = ((zb - sh * sh) - 2.0 * sh * sl) - sl * sl;
    let y0 = f32::from_bits(0x7ef3_11c7u32.wrapping_sub(sq.to_bits()));
    let y = y0 * (2.0 - sq * y0);
    let corr = r * y * 0.5;
    let s = if big { sq } else { a };
    let slo = if big { corr } else { 0.0 };
    (s, slo, z, big)
}

/// `base + m·(s + p)` with `base = bh + bl`, the first sum made error-free (Fast2Sum).
#[inline(always)]
fn asin_sum(bh: f32, bl: f32, m: f32, s: f32, p: f32) -> f32 {
    let ms = m * s;
    let h = bh + ms;
    let err = (bh - h) + ms;
    h + ((err + bl) + m * p)
}

/// Arcsine (within 0.70 ulp, every float32 checked): the Cephes polynomial on `|x|` up to
/// ½, on `√((1 − |x|)/2)` beyond ([`asin_arg`]).
#[inline(always)]
pub(crate) fn asin(x: f32) -> f32 {
    let (s, sl, z, big) = asin_arg(x.abs());
    let p = s * z * horner_f32(z, ASIN_P) + sl;
    let (bh, bl, m) = if big {
        (ATAN_INF.0, ATAN_INF.1, -2.0)
    } else {
        (0.0, 0.0, 1.0)
    };
    let v = flip_f32(asin_sum(bh, bl, m, s, p), x.to_bits() & 0x8000_0000);
    // (NaN and |x| > 1: one NaN, whichever instructions ran.)
    if x.abs() <= 1.0 {
        v
    } else {
        f32::NAN
    }
}

/// Arccosine (within 0.69 ulp, every float32 checked): `2·asin s` above ½, `π − 2·asin s`
/// below −½, `π/2 ∓ asin|x|` between ([`asin_arg`]).
#[inline(always)]
pub(crate) fn acos(x: f32) -> f32 {
    let neg = x < 0.0;
    let (s, sl, z, big) = asin_arg(x.abs());
    let p = s * z * horner_f32(z, ASIN_P) + sl;
    let (bh, bl, m) = if big {
        if neg {
            (PI_PAIR.0, PI_PAIR.1, -2.0)
        } else {
            (0.0, 0.0, 2.0)
        }
    } else {
        (ATAN_INF.0, ATAN_INF.1, if neg { 1.0 } else { -1.0 })
    };
    let v = asin_sum(bh, bl, m, s, p);
    if x.abs() <= 1.0 {
        v
    } else {
        f32::NAN
    }
}

/// Inverse hyperbolic sine: `ln(a + √(a² + 1))` for `a = |x| ≥ 2⁻¹⁰` (its argument is
/// within 2⁻⁵² of exact, so the logarithm is within 2⁻⁵² absolute, 2⁻⁴² relative; a² is
/// exact in float64 and cannot overflow), `a − a³/6 + 3a⁵/40` below.
#[inline(always)]
pub(crate) fn asinh(x: f32) -> f32 {
    let a = x.abs() as f64;
    let z = a * a;
    let series = a + a * z * (-1.0 / 6.0 + z * (3.0 / 40.0));
    let aa = if a < f64::INFINITY { a } else { 1.0 };
    let logged = log_f64g(aa + (aa * aa + 1.0).sqrt());
    let v = flip(
        if a < 1.0 / 1024.0 { series } else { logged },
        x.is_sign_negative(),
    ) as f32;
    if x.is_infinite() {
        x
    } else if x.is_nan() {
        f32::NAN
    } else {
        v
    }
}

/// Inverse hyperbolic cosine: `ln(x + √((x − 1)(x + 1)))`; near 1 the product is exact
/// (x ± 1 are), so the result, at least 2⁻¹¹·⁵ there, is within 2⁻⁴⁰ relative.
#[inline(always)]
pub(crate) fn acosh(x: f32) -> f32 {
    let xd = x as f64;
    let xx = if (1.0..f64::INFINITY).contains(&xd) {
        xd
    } else {
        1.0
    };
    let v = log_f64g(xx + ((xx - 1.0) * (xx + 1.0)).sqrt()) as f32;
    if x < 1.0 || x.is_nan() {
        f32::NAN
    } else if x == f32::INFINITY {
        x
    } else {
        v
    }
}

/// The error function: `x·P(x²)/Q(x²)` for `|x| ≤ 3.95` (a rational function fitted to
/// the relative error, within 2⁻³⁷·²: one division, no exponential); beyond, erf rounds
/// to ±1 in float32 (erfc 3.95 < 2⁻²⁵).
#[inline(always)]
pub(crate) fn erf(x: f32) -> f32 {
    let a = (x.abs() as f64).min(3.95);
    let z = a * a;
    let v = flip(
        a * (horner(z, ERF_P) / horner(z, ERF_Q)),
        x.is_sign_negative(),
    ) as f32;
    if x.is_nan() {
        x
    } else {
        v
    }
}

/// GELU, PyTorch's default (erf) form: `x·½·(1 + erf(x/√2))` in float32, the expression
/// of the op table's scalar kernel (so the block and element forms agree bit for bit).
/// For `x < 0` the sum cancels: its error is about `|x|·2⁻²⁴`, absolute.
#[inline(always)]
pub(crate) fn gelu(x: f32) -> f32 {
    x * 0.5 * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2))
}

/// The numerator of [`erf`]'s rational function (coefficients of `z = x²`).
const ERF_P: [f64; 8] = [
    1.128_379_167_088_262_4,
    0.198_468_312_638_741_93,
    0.057_834_367_510_700_6,
    0.004_875_912_057_378_748,
    0.000_507_757_860_419_533_1,
    2.123_515_657_908_781e-05,
    7.506_953_676_644_923e-07,
    3.066_695_156_392_297_4e-09,
];
/// Its denominator.
const ERF_Q: [f64; 8] = [
    1.0,
    0.509_221_295_502_176_8,
    0.120_994_808_502_585_1,
    0.017_540_151_496_544_99,
    0.001_691_930_245_249_586_4,
    0.000_109_659_066_306_592_95,
    4.437_904_896_386_645e-06,
    7.405_055_603_858_522e-08,
];

/// `2⁵²`: every float64 at least this large is an integer; adding and subtracting it rounds
/// a smaller non-negative float64 to an integer.
const TWO_52: f64 = 4_503_599_627_370_496.0;

/// Whether the non-negative `v` (or NaN: false) is an integer.
#[inline(always)]
fn is_integer(v: f64) -> bool {
    v >= TWO_52 || (v + TWO_52) - TWO_52 == v
}

/// `1/k!` for k = 0…10: `eʳ` by Taylor's series on `|r| ≤ ln2/2` (truncation below 2⁻⁴²).
const EXP_TAYLOR: [f64; 11] = super::inv_factorials(0);

/// `eᵖ` for float64 `|p| ≤ 105` (float32 grade, within 2⁻⁴¹ relative; no division):
/// `p = k·ln2 + r` with ln 2 in two parts (the high one's product with `k` exact), then
/// the series and `2ᵏ`, a normal float64 here.
#[inline(always)]
fn exp_f64g(p: f64) -> f64 {
    const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000);
    const LN2_LO: f64 = f64::from_bits(0x3dea_39ef_3579_3c76);
    let (kf, k) = round_int(p * std::f64::consts::LOG2_E);
    let r = (p - kf * LN2_HI) - kf * LN2_LO;
    horner(r, EXP_TAYLOR) * f64::from_bits((k.wrapping_add(1023) as u64) << 52)
}

/// `xʸ` with C's `powf` special cases (C99 Annex F: `x⁰ = 1` and `1ʸ = 1` even for NaN,
/// `(−1)^±∞ = 1`, a negative finite base to a non-integer power is NaN, signed zeros and
/// infinities by the exponent's parity), computed in float64 as `e^(y·ln|x|)` and rounded
/// once. The float32-grade logarithm ([`log_f64g`], `ln m` within 2⁻³⁷·⁸ relative, `m`
/// the mantissa near 1) and [`exp_f64g`] keep the float64 value within `|y·ln m|·2⁻³⁷·⁸ +
/// 2⁻⁴¹` relative of `xʸ`: below 2⁻³¹ wherever the result is a float32 (`|y·ln|x|| <
/// 104`), so the float32 result is within 0.51 ulp (tested over dense sweeps). `y·ln|x|`
/// is clamped to [−104.5, 89.5], beyond which the rounded result is 0 or ∞ anyway.
/// Branch-free, so the block loops run it as vector code; the C library's `powf` was a
/// call an element.
#[inline(always)]
pub(crate) fn pow(x: f32, y: f32) -> f32 {
    let (xd, yd) = (f64::from(x), f64::from(y));
    let ax = xd.abs();
    // Every nonzero finite float32 is a normal float64.
    let finite = ax > 0.0 && ax < f64::INFINITY;
    let p = yd * log_f64g(if finite { ax } else { 1.0 });
    let r = exp_f64g(p.clamp(-104.5, 89.5));
    // A zero base: 0 for y > 0, ∞ for y < 0; an infinite one the other way round.
    let r = if ax == 0.0 {
        if yd < 0.0 {
            f64::INFINITY
        } else {
            0.0
        }
    } else if ax == f64::INFINITY {
        if yd < 0.0 {
            0.0
        } else {
            f64::INFINITY
        }
    } else {
        r
    };
    let ay = yd.abs();
    let int = is_integer(ay);
    // Odd: an integer whose half is not one (every float32 from 2²⁴ up is even).
    let odd = int && !is_integer(ay * 0.5);
    let r = if x.is_sign_negative() && odd { -r } else { r };
    let r = if (x < 0.0 && x > f32::NEG_INFINITY && !int) || x.is_nan() || y.is_nan() {
        f64::NAN
    } else {
        r
    };
    if y == 0.0 || x == 1.0 || (x == -1.0 && ay == f64::INFINITY) {
        1.0
    } else {
        r as f32
    }
}

/// `k·π/2 + s·atan c` as float32 high and low parts, at `4·o + i` for the octant `o`
/// (`(k, s)` = `(0, 1)`, `(1, −1)`, `(2, −1)`, `(1, 1)`: `r`, `π/2 − r`, `π − r`,
/// `π/2 + r`) and [`atan2`]'s interval `i` (`c = 0, ½, 1`); the fourth slot of each
/// octant is unused.
pub(super) const ATAN2_BASE: ([f32; 16], [f32; 16]) = atan2_base();

const fn atan2_base() -> ([f32; 16], [f32; 16]) {
    // atan ½ and atan 1 in float64 (within 2⁻⁵⁴: the low part needs 48 bits).
    let atan_c = [0.0, 0.463_647_609_000_806_1, std::f64::consts::FRAC_PI_4];
    let ks = [0.0, 1.0, 2.0, 1.0];
    let ss = [1.0, -1.0, -1.0, 1.0];
    let (mut hi, mut lo) = ([0.0f32; 16], [0.0f32; 16]);
    let mut o = 0;
    while o < 4 {
        let mut i = 0;
        while i < 3 {
            let b = ks[o] * std::f64::consts::FRAC_PI_2 + ss[o] * atan_c[i];
            hi[4 * o + i] = b as f32;
            lo[4 * o + i] = (b - hi[4 * o + i] as f64) as f32;
            i += 1;
        }
        o += 1;
    }
    (hi, lo)
}

/// `c[0] + x·(c[1] + x·(…))`, fused (as the AVX-512 kernels' `poly`).
#[inline(always)]
fn horner_fused_f32<const N: usize>(x: f32, c: [f32; N]) -> f32 {
    let mut acc = c[N - 1];
    for k in (0..N - 1).rev() {
        acc = acc.mul_add(x, c[k]);
    }
    acc
}

/// `atan2(y, x)` in float32 arithmetic, within 0.75 ulp measured (1 ulp tested) and
/// C99's special values. With `num/den = min(|x|, |y|)/max(|x|, |y|)` (both scaled by a
/// power of two, [`ATAN2_BIG`], [`ATAN2_SMALL`]: `den + num` stays finite, and wherever
/// `c ≠ 0` both are normal, so `c·num` and `c·den` are exact), `atan(num/den) = atan c +
/// atan u`, `u = (num − c·den)/(den + c·num)` for `c = 0, ½, 1` split at 7/16 and 11/16
/// (so `|u| ≤ 7/16`, [`atan`]'s polynomial): the numerator is exact, the denominator's
/// rounding error is kept (fast two-sum) and the quotient's residual taken by an fma, so
/// `u + ul` is the reduced argument to about 2⁻⁴⁰ (a reciprocal times `n` instead of the
/// first quotient loses that residual to underflow where the result is tiny: 1.1 ulp at
/// `atan2(4e-45, 1.8e-16)`). The octant's base and `atan c` are one constant (`hi + lo`,
/// [`ATAN2_BASE`]), so the result `hi ± u + (lo ± (ul + u³·P))` rounds once (`hi ± u` by a
/// two-sum). `0/0` and `x/∞` take `u = 0`, `∞/∞` is `1/1`; NaN gives the positive quiet
/// NaN. Exactly the operations of the AVX-512 kernel (`avx512_f32::atan2_run`), so both
/// give the same bits.
#[inline(always)]
pub(crate) fn atan2(y: f32, x: f32) -> f32 {
    let (mut ay, mut ax) = (y.abs(), x.abs());
    if ay == f32::INFINITY && ax == f32::INFINITY {
        (ay, ax) = (1.0, 1.0);
    }
    let swap = ay > ax;
    let (num, den) = if swap { (ax, ay) } else { (ay, ax) };
    let scale = if den >= ATAN2_BIG {
        0.5
    } else if den < ATAN2_SMALL {
        ATAN2_UP
    } else {
        1.0
    };
    let (num, den) = (num * scale, den * scale);
    let i = usize::from(num > 0.4375 * den) + usize::from(num > 0.6875 * den);
    let c = 0.5 * i as f32;
    let n = num - c * den;
    let cn = c * num;
    let d = den + cn;
    let e = (den - d) + cn;
    let u = n / d;
    let r = (-u).mul_add(d, n);
    let ul = (-u).mul_add(e, r) / d;
    let none = num == 0.0 || den == f32::INFINITY;
    let (u, ul) = if none { (0.0, 0.0) } else { (u, ul) };
    let z = u * u;
    let q = (u * z).mul_add(horner_fused_f32(z, ATAN_P), ul);
    let neg = x.is_sign_negative();
    let k = 4 * (usize::from(swap) + 2 * usize::from(neg)) + i;
    let (u, q) = if swap != neg { (-u, -q) } else { (u, q) };
    // `hi + u` as a two-sum (`|hi| ≥ |u|` wherever `hi ≠ 0`), so that only the last
    // addition rounds: rounding `u + lo` first cost up to 0.62 ulp (`atan2(-3.5, -1)`).
    let bh = ATAN2_BASE.0[k];
    let sh = bh + u;
    let sl = (bh - sh) + u;
    let v = sh + (sl + (ATAN2_BASE.1[k] + q));
    let v = v.copysign(y);
    if x.is_nan() || y.is_nan() {
        f32::NAN
    } else {
        v
    }
}

/// [`atan2`]'s scaling: `den` from 2¹²⁷ halved (so `den + num` stays finite), below
/// 2⁻¹⁰⁰ times 2¹⁰⁰ (then `num`, where `c ≠ 0` above 0.43·`den`, is normal too).
pub(super) const ATAN2_BIG: f32 = f32::from_bits(0x7f00_0000);
pub(super) const ATAN2_SMALL: f32 = f32::from_bits(0x0d80_0000);
pub(super) const ATAN2_UP: f32 = f32::from_bits(0x7180_0000);

/// `atan2(y, x)` of float32 as a binary map: [`atan2`] per element, and over a block
/// the AVX-512 kernel with the same operations (`avx512_f32::atan2_run`) where the CPU
/// level allows (the AVX-512 copy of the block loops is the only caller in the op path).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Atan2Map;

impl crate::kernel::elementwise_loops::Map2<f32, f32, f32> for Atan2Map {
    #[inline(always)]
    fn one(&self, y: f32, x: f32) -> f32 {
        atan2(y, x)
    }

    #[inline(always)]
    fn block(
        &self,
        y: &[f32; crate::kernel::elementwise_loops::RUN_BLOCK],
        x: &[f32; crate::kernel::elementwise_loops::RUN_BLOCK],
    ) -> [f32; crate::kernel::elementwise_loops::RUN_BLOCK] {
        #[cfg(target_arch = "x86_64")]
        if crate::kernel::cpu::level() == crate::kernel::cpu::Level::Avx512 {
            let mut r = [0.0; crate::kernel::elementwise_loops::RUN_BLOCK];
            // SAFETY: the CPU has AVX-512 (its level); the three arrays hold `RUN_BLOCK`
            // float32 each.
            unsafe {
                super::avx512_f32::atan2_run(r.as_mut_ptr(), y.as_ptr(), x.as_ptr(), r.len())
            };
            return r;
        }
        std::array::from_fn(|k| atan2(y[k], x[k]))
    }

    const AVX512: bool = true;
}

plain_map2!(
    /// [`pow`] as a binary map for the AVX-512 level (see `plain_map2!`).
    f32, PowMap, |x, y| pow(x, y)
);
