//! float32 transcendental functions, computed in float64 and rounded once (see `mod.rs`).
//!
//! The `*_f64g` cores take and return float64 with about 40 correct bits ("float32
//! grade"): enough that the final rounding to float32 is the only visible one.

use super::{horner, pow2, round_int};
use crate::kernel::elementwise_loops::{Fixup, Map1, VectorFn};
use std::f64::consts::{FRAC_1_PI, FRAC_PI_2, FRAC_PI_4, LN_2, LOG10_2, LOG10_E, LOG2_E, SQRT_2};

/// `eʳ` for `|r| ≤ ln2/2`: a degree-7 polynomial fitted to the relative error (near
/// minimax, Lawson-weighted least squares), within 2⁻³⁴·⁵ (the Taylor polynomial of the
/// same degree gives 2⁻²⁷).
const EXP_POLY: [f64; 8] = [
    0.999_999_999_961_594_7,
    1.000_000_000_243_688_6,
    0.500_000_010_471_478_1,
    0.166_666_651_232_499_4,
    0.041_666_224_921_414_26,
    0.008_333_561_390_729_926,
    0.001_394_821_727_768_207_8,
    0.000_197_751_152_360_364_15,
];

/// `eˣ` for `-700 ≤ x ≤ 700` (float32 grade).
#[inline(always)]
pub(crate) fn exp_f64g(x: f64) -> f64 {
    let (kf, k) = round_int(x * LOG2_E);
    // |kf·ln2| ≤ 700: the product's rounding error is below 2⁻⁴⁴.
    let r = x - kf * LN_2;
    horner(r, EXP_POLY) * pow2(k)
}

/// `eˣ − 1` for `-700 ≤ x ≤ 700` (float32 grade, relative, also near 0).
#[inline(always)]
pub(crate) fn expm1_f64g(x: f64) -> f64 {
    // Near 0 the series itself: x·(1 + x/2 + x²/6 + …), to 2⁻⁴² for |x| < 0.35.
    let series = x * horner(
        x,
        [
            1.0,
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
        ],
    );
    // Further out eˣ − 1 loses at most 2 bits to cancellation (|eˣ − 1| ≥ 0.29).
    let far = exp_f64g(x) - 1.0;
    if x.abs() < 0.35 {
        series
    } else {
        far
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

/// `ln(n/d)` for positive, finite, normal `n` and `d` as `(e, p)`, `ln(n/d) = e·ln2 + p`,
/// with one division: `n = 2ᵃ·u`, `d = 2ᵇ·v` with `u`, `v` in `[1, 2)`, one of them
/// doubled so that `u/v` lies in `[√½, √2)`; then `p = 2·atanh((u − v)/(u + v))`, where
/// `u − v` is exact (the two are within a factor of two).
#[inline(always)]
fn log_ratio_parts(n: f64, d: f64) -> (f64, f64) {
    let (en, u) = split(n);
    let (ed, v) = split(d);
    let up = u > v * SQRT_2;
    let down = u * SQRT_2 < v;
    let v = if up { v * 2.0 } else { v };
    let u = if down { u * 2.0 } else { u };
    let e = en - ed + i64::from(up) - i64::from(down);
    let s = (u - v) / (u + v);
    (e as f64, 2.0 * s * horner(s * s, ATANH_POLY))
}

/// The float32 special cases of a logarithm: `-inf` at ±0, NaN below 0 and for NaN,
/// `+inf` at `+inf`; otherwise `v`.
#[inline(always)]
fn log_special(x: f32, v: f32) -> f32 {
    if x == 0.0 {
        f32::NEG_INFINITY
    } else if x < 0.0 || x.is_nan() {
        f32::NAN
    } else if x == f32::INFINITY {
        f32::INFINITY
    } else {
        v
    }
}

/// A finite positive float64 standing in for `x` in a logarithm's arithmetic, so that
/// its special cases (0, negative, infinite, NaN: handled by [`log_special`]) compute
/// harmless values that are then replaced.
#[inline(always)]
fn log_arg(x: f32) -> f64 {
    let xd = x as f64;
    if xd > 0.0 && xd < f64::INFINITY {
        xd
    } else {
        1.0
    }
}

/// `eˣ`.
#[inline(always)]
pub(crate) fn exp(x: f32) -> f32 {
    // Beyond ±160 the float32 result is 0 or +inf already; NaN passes `clamp`.
    exp_f64g((x as f64).clamp(-160.0, 100.0)) as f32
}

/// `2ˣ` (exact at integers).
#[inline(always)]
pub(crate) fn exp2(x: f32) -> f32 {
    let xd = (x as f64).clamp(-160.0, 140.0);
    let (kf, k) = round_int(xd);
    (horner((xd - kf) * LN_2, EXP_POLY) * pow2(k)) as f32
}

/// `eˣ − 1`.
#[inline(always)]
pub(crate) fn expm1(x: f32) -> f32 {
    expm1_f64g((x as f64).clamp(-40.0, 100.0)) as f32
}

/// `ln x`.
#[inline(always)]
pub(crate) fn ln(x: f32) -> f32 {
    log_special(x, log_f64g(log_arg(x)) as f32)
}

/// `log₂ x` (exact at powers of two).
#[inline(always)]
pub(crate) fn log2(x: f32) -> f32 {
    let (e, p) = log_parts(log_arg(x));
    log_special(x, (e + p * LOG2_E) as f32)
}

/// `log₁₀ x`.
#[inline(always)]
pub(crate) fn log10(x: f32) -> f32 {
    let (e, p) = log_parts(log_arg(x));
    log_special(x, (e * LOG10_2 + p * LOG10_E) as f32)
}

/// `ln(1 + x)`, accurate near 0.
#[inline(always)]
pub(crate) fn ln_1p(x: f32) -> f32 {
    let xd = x as f64;
    // 1 + x is exact in float64 for every float32 x ≥ 2⁻²⁹; below, the correction
    // x/(u − 1) restores what rounding u lost, and u = 1 gives x itself.
    let u = 1.0 + xd;
    let ok = u > 0.0 && u < f64::INFINITY;
    let uu = if ok { u } else { 2.0 };
    let corrected = log_f64g(uu) * (xd / (uu - 1.0));
    let v = if u == 1.0 { xd } else { corrected };
    if x == -1.0 {
        f32::NEG_INFINITY
    } else if x < -1.0 || x.is_nan() {
        f32::NAN
    } else if x == f32::INFINITY {
        f32::INFINITY
    } else {
        v as f32
    }
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

/// The sine, cosine and tangent as vector functions (`kernel/elementwise_loops.rs`'s
/// [`VectorFn`]): the fast form reduces in float64 by Cody–Waite below
/// [`TRIG_FAST_MAX`]; beyond (and at ±inf, NaN) each element takes the C library's
/// float64 function, rounded once (within 2⁻²⁸ ulp of exact: float64 carries 29 more bits).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Sin;
/// See [`Sin`].
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Cos;
/// See [`Sin`].
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Tan;

impl VectorFn<f32> for Sin {
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
        trig_rare(x)
    }
    #[inline(always)]
    fn exact(x: f32) -> f32 {
        (x as f64).sin() as f32
    }
}

impl VectorFn<f32> for Cos {
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
        trig_rare(x)
    }
    #[inline(always)]
    fn exact(x: f32) -> f32 {
        (x as f64).cos() as f32
    }
}

impl VectorFn<f32> for Tan {
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
        trig_rare(x)
    }
    #[inline(always)]
    fn exact(x: f32) -> f32 {
        (x as f64).tan() as f32
    }
}

/// Whether a circular function takes its exact scalar form at `x` (beyond
/// [`TRIG_FAST_MAX`], ±inf, NaN).
#[inline(always)]
fn trig_rare(x: f32) -> bool {
    x.abs() > TRIG_FAST_MAX || x.is_nan()
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

/// The logistic function `1/(1 + e⁻ˣ)`, in float64 (so results that are float32
/// subnormals, below x ≈ −87, still come out, where float32 arithmetic would overflow
/// e⁻ˣ and give 0).
#[inline(always)]
pub(crate) fn sigmoid(x: f32) -> f32 {
    let v = (1.0 / (1.0 + exp_f64g((-(x as f64)).clamp(-700.0, 700.0)))) as f32;
    if x.is_nan() {
        x
    } else {
        v
    }
}

/// Hyperbolic sine.
#[inline(always)]
pub(crate) fn sinh(x: f32) -> f32 {
    // sinh|x| = (m + m/(m + 1))/2 with m = e^{|x|} − 1 (no cancellation near 0); beyond
    // |x| = 100 it is +inf in float32.
    let ax = (x.abs() as f64).min(100.0);
    let m = expm1_f64g(ax);
    let v = flip(0.5 * (m + m / (m + 1.0)), x.is_sign_negative()) as f32;
    if x.is_nan() {
        x
    } else {
        v
    }
}

/// Hyperbolic cosine.
#[inline(always)]
pub(crate) fn cosh(x: f32) -> f32 {
    let ax = (x.abs() as f64).min(100.0);
    let e = exp_f64g(ax);
    let v = (0.5 * (e + 1.0 / e)) as f32;
    if x.is_nan() {
        x
    } else {
        v
    }
}

/// `atan a` for `a ≥ 0` (any magnitude, +inf included), float32 grade, with one
/// division: `a` itself up to tan(π/8); `π/4 + atan((a − 1)/(a + 1))` up to tan(3π/8);
/// `π/2 + atan(−1/a)` beyond; then the odd series to u²⁵ for `|u| ≤ tan(π/8)`. (Two
/// divisions, one per reduction, kept the compiler from vectorising the loop.)
#[inline(always)]
fn atan_pos(a: f64) -> f64 {
    const TAN_PI_8: f64 = 0.414_213_562_373_095_1;
    const TAN_3PI_8: f64 = 2.414_213_562_373_095;
    let mid = a > TAN_PI_8;
    let far = a > TAN_3PI_8;
    let num = if far {
        -1.0
    } else if mid {
        a - 1.0
    } else {
        a
    };
    let den = if far {
        a
    } else if mid {
        a + 1.0
    } else {
        1.0
    };
    let off = if far {
        FRAC_PI_2
    } else if mid {
        FRAC_PI_4
    } else {
        0.0
    };
    let u = num / den;
    let z = u * u;
    let series = u + u
        * z
        * horner(
            z,
            [
                -1.0 / 3.0,
                1.0 / 5.0,
                -1.0 / 7.0,
                1.0 / 9.0,
                -1.0 / 11.0,
                1.0 / 13.0,
                -1.0 / 15.0,
                1.0 / 17.0,
                -1.0 / 19.0,
                1.0 / 21.0,
                -1.0 / 23.0,
                1.0 / 25.0,
            ],
        );
    off + series
}

/// Arctangent.
#[inline(always)]
pub(crate) fn atan(x: f32) -> f32 {
    let v = flip(atan_pos(x.abs() as f64), x.is_sign_negative()) as f32;
    if x.is_nan() {
        x
    } else {
        v
    }
}

/// Arcsine: `atan(x/√(1 − x²))` (1 − x² is exact in float64 for float32 x).
#[inline(always)]
pub(crate) fn asin(x: f32) -> f32 {
    let a = x.abs() as f64;
    let v = flip(atan_pos(a / (1.0 - a * a).sqrt()), x.is_sign_negative()) as f32;
    if x.abs() > 1.0 || x.is_nan() {
        f32::NAN
    } else {
        v
    }
}

/// Arccosine: `2·atan(√((1 − x)/(1 + x)))`, accurate at both ends.
#[inline(always)]
pub(crate) fn acos(x: f32) -> f32 {
    let xd = x as f64;
    let v = (2.0 * atan_pos(((1.0 - xd) / (1.0 + xd)).sqrt())) as f32;
    if x.abs() > 1.0 || x.is_nan() {
        f32::NAN
    } else {
        v
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

/// Below this, `atanh x` rounds to `x` in float32, and `1 ± x` would round in float64.
const ATANH_TINY: f64 = 1.0 / 536_870_912.0; // 2⁻²⁹

/// Inverse hyperbolic tangent: `½·ln((1 + a)/(1 − a))` by [`log_ratio_parts`] (one
/// division; `1 ± a` are exact in float64 for float32 `a ≥ 2⁻²⁹`, and the atanh argument
/// comes out as `a` itself when the exponents match), sign restored.
#[inline(always)]
pub(crate) fn atanh(x: f32) -> f32 {
    let a = x.abs() as f64;
    let aa = if (ATANH_TINY..1.0).contains(&a) {
        a
    } else {
        0.5
    };
    let (e, p) = log_ratio_parts(1.0 + aa, 1.0 - aa);
    let r = 0.5 * (e * LN_2 + p);
    let v = flip(if a < ATANH_TINY { a } else { r }, x.is_sign_negative()) as f32;
    if x.abs() == 1.0 {
        flip(f64::INFINITY, x.is_sign_negative()) as f32
    } else if x.abs() > 1.0 || x.is_nan() {
        f32::NAN
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
