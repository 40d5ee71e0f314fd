//! float64 transcendental functions, branch-free (see `mod.rs`).
//!
//! The reductions and polynomials are fdlibm's (`e_exp.c`, `e_log.c`, `e_log10.c`: the
//! public-domain Sun library every C library's float64 math descends from), rewritten
//! with selects instead of branches: Cody–Waite reduction by ln2 split into a high part
//! with 32 trailing zero bits (so `k·ln2_hi` is exact without a fused multiply-add) and a
//! low part, then a rational form of the reduced function.

use super::{horner, pow2, round_int};
use crate::error::Result;
use crate::kernel::elementwise_loops::{unary_into, Fixup, Map1, Map2, VectorFn, RUN_BLOCK};
use crate::ops::table::{Cost, Unary};
use crate::Tensor;
use std::f64::consts::{FRAC_1_SQRT_2, LN_2, LOG2_E, SQRT_2};

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

/// The logistic function `1/(1 + e⁻ˣ)`, as `eˣ/(1 + eˣ)` for `x < 0` (so results that
/// are subnormals, below −708, still come out rather than 0).
#[inline(always)]
pub(crate) fn sigmoid(x: f64) -> f64 {
    let e = exp(-x.abs());
    let num = if x < 0.0 { e } else { 1.0 };
    num / (1.0 + e)
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
    const TAIL: [f64; 16] = super::inv_factorials(2);
    let tail = horner(r, TAIL);
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

/// `v` with its sign flipped when `neg`.
#[inline(always)]
fn flip(v: f64, neg: bool) -> f64 {
    f64::from_bits(v.to_bits() ^ (u64::from(neg) << 63))
}

/// `x` with its low 32 bits cleared (21 significant bits: products of two are exact).
#[inline(always)]
fn low_zero(x: f64) -> f64 {
    f64::from_bits(x.to_bits() & 0xffff_ffff_0000_0000)
}

/// `a + b` as the rounded sum and its exact rounding error (Knuth's two-sum).
#[inline(always)]
fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    (s, (a - (s - bb)) + (b - bb))
}

// ---- The circular functions: Cody–Waite by π/2 in four parts, fdlibm's kernels.

/// `2/π`.
const INV_PIO2: f64 = f64::from_bits(0x3fe4_5f30_6dc9_c883);
/// π/2 in parts of 33, 33, 33 and 53 significant bits (fdlibm's `pio2_1`, `pio2_2`,
/// `pio2_3`, `pio2_3t`): together about 152 bits.
const PIO2_1: f64 = f64::from_bits(0x3ff9_21fb_5440_0000);
const PIO2_2: f64 = f64::from_bits(0x3dd0_b461_1a60_0000);
const PIO2_3: f64 = f64::from_bits(0x3ba3_198a_2e00_0000);
const PIO2_3T: f64 = f64::from_bits(0x397b_839a_2520_49c1);

/// Up to this magnitude [`rem_pio2`] is exact enough; beyond it, and for ±inf and NaN,
/// the circular functions take the C library's form (one element at a time).
pub(crate) const TRIG_FAST_MAX: f64 = 1_048_576.0; // 2²⁰

/// `x = n·π/2 + (y0 + y1)` with `|y0 + y1| ≲ π/4`, `y1` below half an ulp of `y0`, for
/// `|x| ≤` [`TRIG_FAST_MAX`]. Then `|n| < 2²⁰`, so `n·PIO2_1`, `n·PIO2_2` and `n·PIO2_3`
/// are exact (33 + 20 bits), `x − n·PIO2_1` is exact (Sterbenz), the next two
/// subtractions keep their rounding errors (two-sum), and only `n·PIO2_3T` (below 2⁻⁸³)
/// rounds: the reduced argument carries about 150 bits of π/2, more than the ~60 that
/// cancel for the doubles closest to a multiple of π/2 below 2²⁰ (fdlibm's `medium` case,
/// with every round always done).
#[inline(always)]
fn rem_pio2(x: f64) -> (f64, f64, i64) {
    let (fnn, n) = round_int(x * INV_PIO2);
    let r1 = x - fnn * PIO2_1;
    let (r2, e2) = two_sum(r1, -(fnn * PIO2_2));
    let (r3, e3) = two_sum(r2, -(fnn * PIO2_3));
    let lo = (e2 + e3) - fnn * PIO2_3T;
    let y0 = r3 + lo;
    (y0, (r3 - y0) + lo, n)
}

/// fdlibm's `__kernel_sin` polynomial (`sin x ≈ x + x³·S(x²)` on `|x| ≤ π/4`).
pub(crate) const SIN_S: [f64; 6] = [
    f64::from_bits(0xbfc5_5555_5555_5549),
    f64::from_bits(0x3f81_1111_1110_f8a6),
    f64::from_bits(0xbf2a_01a0_19c1_61d5),
    f64::from_bits(0x3ec7_1de3_57b1_fe7d),
    f64::from_bits(0xbe5a_e5e6_8a2b_9ceb),
    f64::from_bits(0x3de5_d93a_5acf_d57c),
];

/// `sin(x + y)` for `|x| ≤ π/4`, `y` the tail of the reduced argument (fdlibm).
#[inline(always)]
fn k_sin(x: f64, y: f64) -> f64 {
    let z = x * x;
    let w = z * z;
    let r = SIN_S[1] + z * (SIN_S[2] + z * SIN_S[3]) + z * w * (SIN_S[4] + z * SIN_S[5]);
    let v = z * x;
    x - ((z * (0.5 * y - v * r) - y) - v * SIN_S[0])
}

/// fdlibm's `__kernel_cos` polynomial.
pub(crate) const COS_C: [f64; 6] = [
    f64::from_bits(0x3fa5_5555_5555_554c),
    f64::from_bits(0xbf56_c16c_16c1_5177),
    f64::from_bits(0x3efa_01a0_19cb_1590),
    f64::from_bits(0xbe92_7e4f_809c_52ad),
    f64::from_bits(0x3e21_ee9e_bdb4_b1c4),
    f64::from_bits(0xbda8_fae9_be88_38d4),
];

/// `cos(x + y)` for `|x| ≤ π/4` (fdlibm, as rewritten by musl without branches).
#[inline(always)]
fn k_cos(x: f64, y: f64) -> f64 {
    let z = x * x;
    let w = z * z;
    let r = z * (COS_C[0] + z * (COS_C[1] + z * COS_C[2]))
        + w * w * (COS_C[3] + z * (COS_C[4] + z * COS_C[5]));
    let hz = 0.5 * z;
    let w = 1.0 - hz;
    w + (((1.0 - w) - hz) + (z * r - x * y))
}

/// fdlibm's `__kernel_tan` polynomial.
const TAN_T: [f64; 13] = [
    f64::from_bits(0x3fd5_5555_5555_5563),
    f64::from_bits(0x3fc1_1111_1110_fe7a),
    f64::from_bits(0x3fab_a1ba_1bb3_41fe),
    f64::from_bits(0x3f96_64f4_8406_d637),
    f64::from_bits(0x3f82_26e3_e96e_8493),
    f64::from_bits(0x3f6d_6d22_c956_0328),
    f64::from_bits(0x3f57_dbc8_fee0_8315),
    f64::from_bits(0x3f43_44d8_f2f2_6501),
    f64::from_bits(0x3f30_26f7_1a8d_1068),
    f64::from_bits(0x3f14_7e88_a037_92a6),
    f64::from_bits(0x3f12_b80f_32f0_a7e9),
    f64::from_bits(0xbef3_75cb_db60_5373),
    f64::from_bits(0x3efb_2a70_74bf_7ad4),
];
/// π/4 and the rest.
const PIO4: f64 = f64::from_bits(0x3fe9_21fb_5444_2d18);
const PIO4_LO: f64 = f64::from_bits(0x3c81_a626_3314_5c07);

/// `tan(x + y)` (`odd` false) or `−1/tan(x + y)` (`odd` true) for `|x| ≤ π/4`: fdlibm's
/// `__kernel_tan` with its three exits computed and selected; the two divisions of the
/// exits that need one (`w²/(w ± 1)` above 0.6744, `−1/w` below) share one division.
#[inline(always)]
fn k_tan(x: f64, y: f64, odd: bool) -> f64 {
    let big = x.abs() >= f64::from_bits(0x3fe5_9428_0000_0000);
    let neg = x.is_sign_negative();
    let (xa, ya) = if neg { (-x, -y) } else { (x, y) };
    // Above 0.6744: tan(π/4 − x') from the reflected argument.
    let xb = (PIO4 - xa) + (PIO4_LO - ya);
    let x = if big { xb } else { x };
    let y = if big { 0.0 } else { y };
    let z = x * x;
    let w = z * z;
    let r = TAN_T[1]
        + w * (TAN_T[3] + w * (TAN_T[5] + w * (TAN_T[7] + w * (TAN_T[9] + w * TAN_T[11]))));
    let v = z
        * (TAN_T[2]
            + w * (TAN_T[4] + w * (TAN_T[6] + w * (TAN_T[8] + w * (TAN_T[10] + w * TAN_T[12])))));
    let s = z * x;
    let r = y + z * (s * (r + v) + y) + s * TAN_T[0];
    let w = x + r;
    let sg = if odd { -1.0 } else { 1.0 };
    let (num, den) = if big { (w * w, w + sg) } else { (-1.0, w) };
    let q = num / den;
    let v_big = flip(sg - 2.0 * (x + (r - q)), neg);
    // −1/(x + r) to within an ulp: the quotient corrected by its residual.
    let w0 = low_zero(w);
    let vv = r - (w0 - x);
    let a0 = low_zero(q);
    let v_odd = a0 + q * (1.0 + a0 * w0 + a0 * vv);
    if big {
        v_big
    } else if odd {
        v_odd
    } else {
        w
    }
}

/// The sine, cosine and tangent as vector functions (`kernel/elementwise_loops.rs`'s
/// [`VectorFn`]): the fast form reduces by [`rem_pio2`] up to [`TRIG_FAST_MAX`] and
/// evaluates fdlibm's kernels; beyond (and at ±inf, NaN) each element takes the C
/// library's function, whose reduction is exact at every magnitude.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Sin;
/// See [`Sin`].
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Cos;
/// See [`Sin`].
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Tan;

/// Whether a circular function takes its scalar form at `x` (beyond [`TRIG_FAST_MAX`],
/// ±inf, NaN).
#[inline(always)]
fn trig_rare(x: f64) -> bool {
    x.abs() > TRIG_FAST_MAX || x.is_nan()
}

impl VectorFn<f64> for Sin {
    #[inline(always)]
    fn fast(x: f64) -> f64 {
        let (y0, y1, n) = rem_pio2(x);
        let (s, c) = (k_sin(y0, y1), k_cos(y0, y1));
        let v = flip(if n & 1 == 1 { c } else { s }, n & 2 != 0);
        // ±0 keeps its sign.
        if x == 0.0 {
            x
        } else {
            v
        }
    }
    #[inline(always)]
    fn rare(x: f64) -> bool {
        trig_rare(x)
    }
    #[inline(always)]
    fn exact(x: f64) -> f64 {
        x.sin()
    }
}

impl VectorFn<f64> for Cos {
    #[inline(always)]
    fn fast(x: f64) -> f64 {
        let (y0, y1, n) = rem_pio2(x);
        let (s, c) = (k_sin(y0, y1), k_cos(y0, y1));
        // cos(θ + nπ/2) = sin(θ + (n + 1)π/2).
        let n = n + 1;
        flip(if n & 1 == 1 { c } else { s }, n & 2 != 0)
    }
    #[inline(always)]
    fn rare(x: f64) -> bool {
        trig_rare(x)
    }
    #[inline(always)]
    fn exact(x: f64) -> f64 {
        x.cos()
    }
}

impl VectorFn<f64> for Tan {
    #[inline(always)]
    fn fast(x: f64) -> f64 {
        let (y0, y1, n) = rem_pio2(x);
        let v = k_tan(y0, y1, n & 1 == 1);
        if x == 0.0 {
            x
        } else {
            v
        }
    }
    #[inline(always)]
    fn rare(x: f64) -> bool {
        trig_rare(x)
    }
    #[inline(always)]
    fn exact(x: f64) -> f64 {
        x.tan()
    }
}

/// Sine (one element; the block loops run [`Sin`] a block at a time).
#[inline(always)]
pub(crate) fn sin(x: f64) -> f64 {
    Fixup(Sin).one(x)
}

/// Cosine (one element; see [`sin`]).
#[inline(always)]
pub(crate) fn cos(x: f64) -> f64 {
    Fixup(Cos).one(x)
}

/// Tangent (one element; see [`sin`]).
#[inline(always)]
pub(crate) fn tan(x: f64) -> f64 {
    Fixup(Tan).one(x)
}

// ---- The inverse circular functions (fdlibm's, one division each).

/// `atan` of 0.5, 1, 1.5 and ∞, high and low parts (fdlibm).
pub(super) const ATAN_HI: [f64; 4] = [
    f64::from_bits(0x3fdd_ac67_0561_bb4f),
    f64::from_bits(0x3fe9_21fb_5444_2d18),
    f64::from_bits(0x3fef_730b_d281_f69b),
    f64::from_bits(0x3ff9_21fb_5444_2d18),
];
pub(super) const ATAN_LO: [f64; 4] = [
    f64::from_bits(0x3c7a_2b7f_222f_65e2),
    f64::from_bits(0x3c81_a626_3314_5c07),
    f64::from_bits(0x3c70_0788_7af0_cbbd),
    f64::from_bits(0x3c91_a626_3314_5c07),
];
/// fdlibm's `atan` polynomial on `|t| ≤ 7/16`.
pub(super) const ATAN_T: [f64; 11] = [
    f64::from_bits(0x3fd5_5555_5555_550d),
    f64::from_bits(0xbfc9_9999_9998_ebc4),
    f64::from_bits(0x3fc2_4924_9200_83ff),
    f64::from_bits(0xbfbc_71c6_fe23_1671),
    f64::from_bits(0x3fb7_45cd_c54c_206e),
    f64::from_bits(0xbfb3_b0f2_af74_9a6d),
    f64::from_bits(0x3fb1_0d66_a0d0_3d51),
    f64::from_bits(0xbfad_de2d_52de_fd9a),
    f64::from_bits(0x3fa9_7b4b_2476_0deb),
    f64::from_bits(0xbfa2_b444_2c6a_6c2f),
    f64::from_bits(0x3f90_ad3a_e322_da11),
];

/// Arctangent: fdlibm's five intervals (`|x|` below 7/16, 11/16, 19/16, 39/16, beyond),
/// each reducing to `|t| ≤ 7/16` by one quotient: its numerator and denominator are
/// selected, then divided once.
#[inline(always)]
pub(crate) fn atan(x: f64) -> f64 {
    let ax = x.abs();
    let (num, den, hi, lo) = if ax < 0.4375 {
        (ax, 1.0, 0.0, 0.0)
    } else if ax < 0.6875 {
        (2.0 * ax - 1.0, 2.0 + ax, ATAN_HI[0], ATAN_LO[0])
    } else if ax < 1.1875 {
        (ax - 1.0, ax + 1.0, ATAN_HI[1], ATAN_LO[1])
    } else if ax < 2.4375 {
        (ax - 1.5, 1.0 + 1.5 * ax, ATAN_HI[2], ATAN_LO[2])
    } else {
        (-1.0, ax, ATAN_HI[3], ATAN_LO[3])
    };
    let t = num / den;
    let z = t * t;
    let w = z * z;
    let s1 = z
        * (ATAN_T[0]
            + w * (ATAN_T[2]
                + w * (ATAN_T[4] + w * (ATAN_T[6] + w * (ATAN_T[8] + w * ATAN_T[10])))));
    let s2 = w * (ATAN_T[1] + w * (ATAN_T[3] + w * (ATAN_T[5] + w * (ATAN_T[7] + w * ATAN_T[9]))));
    // NaN passes through the last interval's quotient.
    flip(hi - ((t * (s1 + s2) - lo) - t), x.is_sign_negative())
}

/// π/2, high and low parts.
pub(super) const PIO2_HI: f64 = f64::from_bits(0x3ff9_21fb_5444_2d18);
pub(super) const PIO2_LO: f64 = f64::from_bits(0x3c91_a626_3314_5c07);
/// fdlibm's `asin`/`acos` rational function `R(z) = z·P(z)/Q(z)`.
const ASIN_P: [f64; 6] = [
    f64::from_bits(0x3fc5_5555_5555_5555),
    f64::from_bits(0xbfd4_d612_03eb_6f7d),
    f64::from_bits(0x3fc9_c155_0e88_4455),
    f64::from_bits(0xbfa4_8228_b568_8f3b),
    f64::from_bits(0x3f49_efe0_7501_b288),
    f64::from_bits(0x3f02_3de1_0dfd_f709),
];
const ASIN_Q: [f64; 5] = [
    1.0,
    f64::from_bits(0xc003_3a27_1c8a_2d4b),
    f64::from_bits(0x4000_2ae5_9c59_8ac8),
    f64::from_bits(0xbfe6_066c_1b8d_0159),
    f64::from_bits(0x3fb3_b8c5_b12e_9282),
];

/// The pieces of fdlibm's `asin`/`acos` at `z` (`x²` or `(1 − |x|)/2`): `(√z, its high
/// part f, R(z), (z − f²)/(√z + f))`. fdlibm divides twice (`P/Q`, and the correction);
/// here one reciprocal of the product of the denominators serves both (when `split`;
/// else the correction is not needed): each quotient then carries about 1.5 ulp instead
/// of 0.5, in terms that weigh below a tenth of the result.
#[inline(always)]
fn asin_parts(z: f64, split: bool) -> (f64, f64, f64, f64) {
    let s = z.sqrt();
    let f = low_zero(s);
    let p = z * horner(z, ASIN_P);
    let q = horner(z, ASIN_Q);
    let sf = if split { s + f } else { 1.0 };
    let inv = 1.0 / (q * sf);
    (s, f, p * sf * inv, (z - f * f) * q * inv)
}

/// Arcsine (fdlibm's three intervals: `|x| < 0.5`, below 0.975, above).
#[inline(always)]
pub(crate) fn asin(x: f64) -> f64 {
    let ax = x.abs();
    let small = ax < 0.5;
    let high = ax >= f64::from_bits(0x3fef_3333_0000_0000);
    let z = if small { ax * ax } else { (1.0 - ax) * 0.5 };
    let (s, f, r, c) = asin_parts(z, !(small || high));
    let v_small = ax + ax * r;
    let v_high = PIO2_HI - (2.0 * (s + s * r) - PIO2_LO);
    let v_mid = 0.5 * PIO2_HI - (2.0 * s * r - (PIO2_LO - 2.0 * c) - (0.5 * PIO2_HI - 2.0 * f));
    // |x| > 1 takes √ of a negative number: NaN, as does NaN.
    let v = if small {
        v_small
    } else if high {
        v_high
    } else {
        v_mid
    };
    // (NaN and |x| > 1: one NaN, whichever instructions ran.)
    if ax <= 1.0 {
        flip(v, x.is_sign_negative())
    } else {
        f64::NAN
    }
}

/// Arccosine (fdlibm's three intervals: `|x| < 0.5`, `x ≤ −0.5`, `x ≥ 0.5`).
#[inline(always)]
pub(crate) fn acos(x: f64) -> f64 {
    let ax = x.abs();
    let small = ax < 0.5;
    let pos = !small && x > 0.0;
    let z = if small { x * x } else { (1.0 - ax) * 0.5 };
    let (s, df, r, c) = asin_parts(z, pos);
    let v_small = PIO2_HI - (x - (PIO2_LO - x * r));
    let v_neg = 2.0 * (PIO2_HI - (s + (r * s - PIO2_LO)));
    let v_pos = 2.0 * (df + (r * s + c));
    if small {
        v_small
    } else if x == 1.0 {
        0.0 // (z = 0 there: the shared quotient is 0/0)
    } else if ax.is_nan() || ax > 1.0 {
        f64::NAN // (NaN and |x| > 1: one NaN, whichever instructions ran)
    } else if pos {
        v_pos
    } else {
        v_neg
    }
}

// ---- The hyperbolic functions.

/// `eˣ/2`, finite up to where that overflows (`x` ≈ 710.4759, past `eˣ`'s own limit).
#[inline(always)]
fn exp_half(x: f64) -> f64 {
    let xc = x.clamp(-746.0, 711.0);
    let (kf, k) = round_int(xc * LOG2_E);
    let hi = xc - kf * LN2_HI;
    let lo = kf * LN2_LO;
    let v = scale(exp_reduced(hi, lo), k - 1);
    if x > 710.475_860_073_943_9 {
        f64::INFINITY
    } else {
        v
    }
}

/// `tanh x = x + x·Σ cₖ·x²ᵏ` (Taylor, to x³⁹: below 2⁻⁶⁰ relative for `|x| < 0.5494`).
const TANH_TAYLOR: [f64; 19] = [
    f64::from_bits(0xbfd5_5555_5555_5555),
    f64::from_bits(0x3fc1_1111_1111_1111),
    f64::from_bits(0xbfab_a1ba_1ba1_ba1c),
    f64::from_bits(0x3f96_64f4_882c_10fa),
    f64::from_bits(0xbf82_26e3_55e6_c23d),
    f64::from_bits(0x3f6d_6d3d_0e15_7de0),
    f64::from_bits(0xbf57_da36_452b_75e3),
    f64::from_bits(0x3f43_5582_4803_6744),
    f64::from_bits(0xbf2f_57d7_734d_1664),
    f64::from_bits(0x3f19_67e1_8afc_afad),
    f64::from_bits(0xbf04_97d8_eea2_5259),
    f64::from_bits(0x3ef0_b132_d39a_6050),
    f64::from_bits(0xbedb_0f72_d3ee_24e9),
    f64::from_bits(0x3ec5_ef2d_a474_e5b7),
    f64::from_bits(0xbeb1_c77d_f95c_1c0d),
    f64::from_bits(0x3e9c_d299_de4a_e6bb),
    f64::from_bits(0xbe87_5cde_6563_fed9),
    f64::from_bits(0x3e72_efe8_db3a_ff1f),
    f64::from_bits(0xbe5e_b322_9047_434c),
];

/// Hyperbolic tangent: the Taylor series below `ln3/2` (where fdlibm's `−t/(t + 2)` on
/// `expm1` doubled expm1's error: 3 ulp), `1 − 2/(t + 2)` with `t = expm1(2|x|) ≥ 2`
/// above (the quotient's error shrinks in the difference), 1 beyond 22.
#[inline(always)]
pub(crate) fn tanh(x: f64) -> f64 {
    let ax = x.abs();
    let z = ax * ax;
    let v_small = ax + ax * z * horner(z, TANH_TAYLOR);
    let t = expm1(2.0 * ax.min(22.0));
    let v_big = 1.0 - 2.0 / (t + 2.0);
    let small = ax < f64::from_bits(0x3fe1_93eb_0000_0000);
    let v = flip(if small { v_small } else { v_big }, x.is_sign_negative());
    if x.is_nan() {
        x
    } else {
        v
    }
}

/// `sinh x = x + x·Σ x²ᵏ/(2k+1)!` to x²⁵ (below 2⁻⁶⁰ relative for `|x| < 2`).
const SINH_TAYLOR: [f64; 12] = {
    let mut c = [0.0; 12];
    let (mut v, mut k) = (1.0, 0);
    while k < 12 {
        v /= ((2 * k + 2) * (2 * k + 3)) as f64;
        c[k] = v;
        k += 1;
    }
    c
};

/// `cosh x = 1 + Σ x²ᵏ/(2k)!` to x¹⁶ (below 2⁻⁶⁰ for `|x| < ln2/2`).
const COSH_TAYLOR: [f64; 8] = {
    let mut c = [0.0; 8];
    let (mut v, mut k) = (1.0, 0);
    while k < 8 {
        v /= ((2 * k + 1) * (2 * k + 2)) as f64;
        c[k] = v;
        k += 1;
    }
    c
};

/// Hyperbolic sine: Taylor below 2 (no cancellation), `eˣ/2 − e⁻ˣ/2` above (from one
/// `eˣ/2`, finite up to the overflow point of sinh itself).
#[inline(always)]
pub(crate) fn sinh(x: f64) -> f64 {
    let ax = x.abs();
    let z = ax * ax;
    let v_small = ax + ax * z * horner(z, SINH_TAYLOR);
    let e = exp_half(ax);
    let v_big = e - 0.25 / e;
    let v = flip(if ax < 2.0 { v_small } else { v_big }, x.is_sign_negative());
    if x.is_nan() {
        x
    } else {
        v
    }
}

/// Hyperbolic cosine: Taylor below ln2/2, `eˣ/2 + e⁻ˣ/2` above.
#[inline(always)]
pub(crate) fn cosh(x: f64) -> f64 {
    let ax = x.abs();
    let z = ax * ax;
    let v_small = 1.0 + z * horner(z, COSH_TAYLOR);
    let e = exp_half(ax);
    let v_big = e + 0.25 / e;
    let v = if ax < 0.346_573_590_279_972_6 {
        v_small
    } else {
        v_big
    };
    if x.is_nan() {
        x
    } else {
        v
    }
}

/// `ln u + c/u` for finite `u > 0`: the logarithm of `u` plus a correction `c` far below
/// `u`'s last bit (what rounding `u` lost), as [`ln_1p`] does.
#[inline(always)]
fn ln_corrected(u: f64, c: f64) -> f64 {
    let (k, f, hfsq, sr) = log_parts(u);
    k * LN2_HI - ((hfsq - (sr + k * LN2_LO)) - f) + c / u
}

/// 2²⁶: beyond it `asinh x = ln x + ln 2` and `acosh x` too, to within the last bit.
const HYP_BIG: f64 = 67_108_864.0;

/// Inverse hyperbolic sine (musl's forms, on one logarithm): `ln(1 + w)` with
/// `w = |x| + x²/(√(x² + 1) + 1)` below 2²⁶, `ln|x| + ln 2` above.
#[inline(always)]
pub(crate) fn asinh(x: f64) -> f64 {
    let ax = x.abs();
    let big = ax >= HYP_BIG;
    let axc = ax.min(HYP_BIG);
    let z = axc * axc;
    let w = axc + z / ((z + 1.0).sqrt() + 1.0);
    let u1 = 1.0 + w;
    let (u, c) = if big { (ax, 0.0) } else { (u1, w - (u1 - 1.0)) };
    let u = if ax < f64::INFINITY { u } else { 1.0 };
    let v = ln_corrected(u, c) + if big { LN_2 } else { 0.0 };
    // ±0, ±inf and NaN are their own asinh.
    let v = if ax < f64::INFINITY && ax != 0.0 {
        v
    } else {
        ax
    };
    flip(v, x.is_sign_negative())
}

/// `a·b` as the rounded product and its exact rounding error (Dekker's product: both
/// factors split into 26 + 27 bits).
#[inline(always)]
fn two_prod(a: f64, b: f64) -> (f64, f64) {
    const SPLIT: f64 = 134_217_729.0; // 2²⁷ + 1
    let p = a * b;
    let sa = SPLIT * a;
    let (ah, sb) = (sa - (sa - a), SPLIT * b);
    let (al, bh) = (a - ah, sb - (sb - b));
    let bl = b - bh;
    (p, ((ah * bh - p) + ah * bl + al * bh) + al * bl)
}

/// Inverse hyperbolic cosine (musl's forms, on one logarithm): `ln(1 + w)` with
/// `w = d + √(2d + d²)`, `d = x − 1`, below 2; `ln(2x − 1/(x + √(x² − 1)))` below 2²⁶;
/// `ln x + ln 2` above; NaN below 1. Just above 1 the square root's argument and result
/// carry their rounding errors (exact products and sums) into the correction term, which
/// keeps the error at 1.2 ulp there (2.4 without).
#[inline(always)]
pub(crate) fn acosh(x: f64) -> f64 {
    let big = x >= HYP_BIG;
    let mid = x >= 2.0;
    let xc = x.clamp(1.0, HYP_BIG);
    let d = xc - 1.0;
    // 2d + d² = a + ae exactly; √a = s, and a + ae − s² = e exactly, so that
    // √(2d + d²) = s + e/(2s) far below s's last bit.
    let (dd, dde) = two_prod(d, d);
    let (a, ae) = two_sum(2.0 * d, dd);
    let s = a.sqrt();
    let (ss, sse) = two_prod(s, s);
    let e = ((a - ss) - sse) + (ae + dde);
    let w = d + s;
    let u1 = 1.0 + w;
    // What rounding 1 + w and d + s lost (s ≥ d), then e/(2s): over u, one division.
    let c = (w - (u1 - 1.0)) + ((d - w) + s);
    let u_mid = 2.0 * xc - 1.0 / (xc + (xc * xc - 1.0).sqrt());
    let u = if big {
        x
    } else if mid {
        u_mid
    } else {
        u1
    };
    let inside = x > 1.0 && x < f64::INFINITY;
    let u = if inside { u } else { 1.0 };
    let (num, den) = if mid || !inside {
        (0.0, 1.0)
    } else {
        (2.0 * s * c + e, 2.0 * s * u)
    };
    let (k, f, hfsq, sr) = log_parts(u);
    let v = k * LN2_HI - ((hfsq - (sr + k * LN2_LO)) - f) + num / den;
    let v = v + if big { LN_2 } else { 0.0 };
    if x == f64::INFINITY {
        x
    } else if x >= 1.0 {
        v // (0 at 1)
    } else {
        f64::NAN // below 1, and NaN
    }
}

/// Inverse hyperbolic tangent (musl's forms): `½·ln(1 + w)` with `w = 2|x| + 2x²/(1 − |x|)`
/// below ½, `2|x|/(1 − |x|)` above (one division shared).
#[inline(always)]
pub(crate) fn atanh(x: f64) -> f64 {
    let ax = x.abs();
    let q = 1.0 / (1.0 - ax);
    let w = if ax < 0.5 {
        2.0 * ax + 2.0 * ax * ax * q
    } else {
        2.0 * ax * q
    };
    let u1 = 1.0 + w;
    let u = if ax < 1.0 { u1 } else { 1.0 };
    let v = 0.5 * ln_corrected(u, w - (u1 - 1.0));
    let v = if ax == 0.0 {
        ax
    } else if ax < 1.0 {
        v
    } else if ax == 1.0 {
        f64::INFINITY
    } else {
        f64::NAN
    };
    let v = flip(v, x.is_sign_negative());
    if x.is_nan() {
        x
    } else {
        v
    }
}

// ---- The error function (fdlibm's `s_erf.c`, its four intervals blended).

/// erf(1)'s leading bits (fdlibm's `erx`).
pub(crate) const ERX: f64 = f64::from_bits(0x3feb_0ac1_6000_0000);
/// fdlibm's rational functions, one per interval: `|x| < 0.84375` (in `x²`), `< 1.25`
/// (in `|x| − 1`), `< 1/0.35` and `< 6` (in `s = 1/x²`: here multiplied through by the
/// denominator's top power of `x²`, so that they are rational in `t = x²` times `t`
/// and need no division for `s`). Numerators of degree 7 and denominators of degree 8,
/// coefficients ascending, zero-padded.
pub(crate) const ERF_NUM: [[f64; 8]; 4] = [
    [
        f64::from_bits(0x3fc0_6eba_8214_db68),
        f64::from_bits(0xbfd4_cd7d_691c_b913),
        f64::from_bits(0xbf9d_2a51_dbd7_194f),
        f64::from_bits(0xbf77_a291_2366_68e4),
        f64::from_bits(0xbef8_ead6_1200_16ac),
        0.0,
        0.0,
        0.0,
    ],
    [
        f64::from_bits(0xbf63_59b8_bef7_7538),
        f64::from_bits(0x3fda_8d00_ad92_b34d),
        f64::from_bits(0xbfd7_d240_fbb8_c3f1),
        f64::from_bits(0x3fd4_5fca_8051_20e4),
        f64::from_bits(0xbfbc_6398_3d3e_28ec),
        f64::from_bits(0x3fa2_2a36_5997_95eb),
        f64::from_bits(0xbf61_bf38_0a96_073f),
        0.0,
    ],
    [
        f64::from_bits(0xc023_a0ef_c69a_c25c),
        f64::from_bits(0xc054_5265_57e4_d2f2),
        f64::from_bits(0xc067_135c_ebcc_abb2),
        f64::from_bits(0xc064_4cb1_8428_2266),
        f64::from_bits(0xc04f_300a_e4cb_a38d),
        f64::from_bits(0xc025_1e04_41b0_e726),
        f64::from_bits(0xbfe6_3416_e4ba_7360),
        f64::from_bits(0xbf84_3412_600d_6435),
    ],
    [
        f64::from_bits(0xc07e_384e_9bdc_383f),
        f64::from_bits(0xc090_0461_6a2e_5992),
        f64::from_bits(0xc083_ec88_1375_f228),
        f64::from_bits(0xc064_145d_43c5_ed98),
        f64::from_bits(0xc031_c209_555f_995a),
        f64::from_bits(0xbfe9_93ba_70c2_85de),
        f64::from_bits(0xbf84_3412_39e8_6f4a),
        0.0,
    ],
];
pub(crate) const ERF_DEN: [[f64; 9]; 4] = [
    [
        1.0,
        f64::from_bits(0x3fd9_7779_cdda_dc09),
        f64::from_bits(0x3fb0_a54c_5536_ceba),
        f64::from_bits(0x3f74_d022_c4d3_6b0f),
        f64::from_bits(0x3f21_5dc9_221c_1a10),
        f64::from_bits(0xbed0_9c43_42a2_6120),
        0.0,
        0.0,
        0.0,
    ],
    [
        1.0,
        f64::from_bits(0x3fbb_3e66_18ee_e323),
        f64::from_bits(0x3fe1_4af0_92eb_6f33),
        f64::from_bits(0x3fb2_635c_d99f_e9a7),
        f64::from_bits(0x3fc0_2660_e763_351f),
        f64::from_bits(0x3f8b_edc2_6b51_dd1c),
        f64::from_bits(0x3f88_8b54_5735_151d),
        0.0,
        0.0,
    ],
    [
        f64::from_bits(0xbfae_eff2_ee74_9a62),
        f64::from_bits(0x401a_47ef_8e48_4a93),
        f64::from_bits(0x405b_28a3_ee48_ae2c),
        f64::from_bits(0x407a_d021_5770_0314),
        f64::from_bits(0x4084_2b19_21ec_2868),
        f64::from_bits(0x407b_290d_d58a_1a71),
        f64::from_bits(0x4061_350c_526a_e721),
        f64::from_bits(0x4033_a6b9_bd70_7687),
        1.0,
    ],
    [
        f64::from_bits(0xc036_70e2_4271_2d62),
        f64::from_bits(0x407d_a874_e79f_e763),
        f64::from_bits(0x40a3_f219_cedf_3be6),
        f64::from_bits(0x40a8_ffb7_688c_246a),
        f64::from_bits(0x4098_02eb_189d_5118),
        f64::from_bits(0x4074_5cae_221b_9f0a),
        f64::from_bits(0x403e_568b_261d_5190),
        1.0,
        0.0,
    ],
];

/// The coefficients of interval `a`, `b`, `c` (the first that holds) or the fourth.
#[inline(always)]
fn pick<const N: usize>(table: &[[f64; N]; 4], a: bool, b: bool, c: bool) -> [f64; N] {
    // Bit masks, not selects between table entries: LLVM turned those into gathers from
    // the table (17 per vector at AVX-512; float64 erf 29 ms per 1M instead of 6).
    let m0 = 0u64.wrapping_sub(u64::from(a));
    let m1 = 0u64.wrapping_sub(u64::from(!a & b));
    let m2 = 0u64.wrapping_sub(u64::from(!a & !b & c));
    let m3 = !(m0 | m1 | m2);
    let mut out = [0.0; N];
    for i in 0..N {
        out[i] = f64::from_bits(
            (table[0][i].to_bits() & m0)
                | (table[1][i].to_bits() & m1)
                | (table[2][i].to_bits() & m2)
                | (table[3][i].to_bits() & m3),
        );
    }
    out
}

/// `e^(a + b)` for `|a + b| < 700`, `b`'s low bits kept (the reduced argument is formed
/// with a two-sum rather than after rounding `a + b`).
#[inline(always)]
fn exp_sum(a: f64, b: f64) -> f64 {
    let (kf, k) = round_int((a + b) * LOG2_E);
    let (h, e) = two_sum(a - kf * LN2_HI, b);
    scale(exp_reduced(h, kf * LN2_LO - e), k)
}

/// The error function: fdlibm's four rational approximations, the interval's
/// coefficients selected (no branch), one division for the rational function and the
/// tail's `1/x` together; in the tails `erfc x = e^(−z² − 0.5625 + (z − x)(z + x) + R/S)/x`
/// with `z` the high half of `x` (so `z²` is exact) and one exponential.
#[inline(always)]
pub(crate) fn erf(x: f64) -> f64 {
    let ax = x.abs().min(6.0);
    let (ra, rb) = (ax < 0.84375, ax < 1.25);
    let rc = ax < f64::from_bits(0x4006_db6d_0000_0000);
    let t = ax * ax;
    let v = if rb && !ra { ax - 1.0 } else { t };
    let num = horner(v, pick(&ERF_NUM, ra, rb, rc));
    let den = horner(v, pick(&ERF_DEN, ra, rb, rc));
    // The tails need num/den and 1/x: one reciprocal of den·x.
    let m = if rb { 1.0 } else { ax };
    let inv = 1.0 / (den * m);
    let q = num * m * inv;
    let zz = low_zero(ax);
    let erfc = exp_sum(-zz * zz - 0.5625, (zz - ax) * (zz + ax) + t * q) * (den * inv);
    let x8 = 8.0 * ax;
    let v = if ra {
        0.125 * (x8 + x8 * q) // x + x·q, without underflow for subnormal x
    } else if rb {
        ERX + q
    } else {
        1.0 - erfc
    };
    let v = if x.abs() >= 6.0 { 1.0 } else { v };
    let v = flip(v, x.is_sign_negative());
    if x.is_nan() {
        x
    } else {
        v
    }
}

/// GELU, PyTorch's default (erf) form: `x·½·(1 + erf(x/√2))` (the expression of the op
/// table's scalar kernel, so the block and element forms agree bit for bit).
#[inline(always)]
pub(crate) fn gelu(x: f64) -> f64 {
    x * 0.5 * (1.0 + erf(x * FRAC_1_SQRT_2))
}

/// Vector functions with no rare inputs: the block loops run them through [`Fixup`]
/// (whose rare-element pass then compiles away), which calls them through inlined trait
/// functions. Called from the op table's closures instead, functions this large were
/// left as a call per element in a standalone copy of the loops (tanh 31 ms per 1M
/// instead of 9).
macro_rules! plain_vector_fn {
    ($($T:ident $f:ident),*) => {$(
        #[doc = concat!("[`", stringify!($f), "`] as a [`VectorFn`] (see `plain_vector_fn!`).")]
        #[derive(Debug, Clone, Copy, Default)]
        pub(crate) struct $T;
        impl VectorFn<f64> for $T {
            #[inline(always)]
            fn fast(x: f64) -> f64 {
                $f(x)
            }
            #[inline(always)]
            fn rare(_: f64) -> bool {
                false
            }
            #[inline(always)]
            fn exact(x: f64) -> f64 {
                $f(x)
            }
        }
    )*};
}

plain_vector_fn!(Erf erf, Gelu gelu);

kernel_map!(
    /// `erf x` as a map.
    f64, ErfMap, Fixup(Erf), avx512_f64, Erf
);
kernel_map!(
    /// GELU as a map.
    f64, GeluMap, Fixup(Gelu), avx512_f64, Gelu
);

kernel_map!(
    /// `sin x` as a map.
    f64, SinMap, Fixup(Sin), avx512_f64, Sin
);
kernel_map!(
    /// `cos x` as a map.
    f64, CosMap, Fixup(Cos), avx512_f64, Cos
);
kernel_map!(
    /// `eˣ` as a map.
    f64, ExpMap, exp, avx512_f64, Exp
);
kernel_map!(
    /// `2ˣ` as a map.
    f64, Exp2Map, exp2, avx512_f64, Exp2
);
kernel_map!(
    /// `ln x` as a map.
    f64, LnMap, ln, avx512_f64, Ln
);
kernel_map!(
    /// `log₂ x` as a map.
    f64, Log2Map, log2, avx512_f64, Log2
);
kernel_map!(
    /// `log₁₀ x` as a map.
    f64, Log10Map, log10, avx512_f64, Log10
);
kernel_map!(
    /// `ln(1 + x)` as a map.
    f64, Ln1pMap, ln_1p, avx512_f64, Ln1p
);
kernel_map!(
    /// `eˣ − 1` as a map.
    f64, Expm1Map, expm1, avx512_f64, Expm1
);

kernel_map!(
    /// `tanh x` as a map.
    f64, TanhMap, tanh, avx512_f64, Tanh
);
kernel_map!(
    /// The logistic function as a map.
    f64, SigmoidMap, sigmoid, avx512_f64, Sigmoid
);
kernel_map!(
    /// `sinh x` as a map.
    f64, SinhMap, sinh, avx512_f64, Sinh
);
kernel_map!(
    /// `cosh x` as a map.
    f64, CoshMap, cosh, avx512_f64, Cosh
);
kernel_map!(
    /// `asinh x` as a map.
    f64, AsinhMap, asinh, avx512_f64, Asinh
);
kernel_map!(
    /// `acosh x` as a map.
    f64, AcoshMap, acosh, avx512_f64, Acosh
);
kernel_map!(
    /// `atanh x` as a map.
    f64, AtanhMap, atanh, avx512_f64, Atanh
);

kernel_map!(
    /// `atan x` as a map.
    f64, AtanMap, atan, avx512_f64, Atan
);
kernel_map!(
    /// `tan x` as a map (the vector function [`Tan`] below AVX-512).
    f64, TanMap, Fixup(Tan), avx512_f64, Tan
);
kernel_map!(
    /// `asin x` as a map.
    f64, AsinMap, asin, avx512_f64, Asin
);
kernel_map!(
    /// `acos x` as a map.
    f64, AcosMap, acos, avx512_f64, Acos
);

/// Runs the float64 ops with a [`VectorFn`] (the circular functions with their per-block
/// fixup, and the functions above) a block at a time; `None` for the others, which the
/// op table's generated dispatch runs. `out` and `a` are float64.
pub(crate) fn run_vector(kind: Unary, out: &Tensor, a: &Tensor) -> Option<Result<()>> {
    let op = kind.name();
    macro_rules! map {
        ($M:expr) => {
            unary_into::<f64, f64, _, true>(op, Cost::Math, out, a, $M)
        };
    }
    Some(match kind {
        Unary::Exp => map!(ExpMap),
        Unary::Exp2 => map!(Exp2Map),
        Unary::Log => map!(LnMap),
        Unary::Log2 => map!(Log2Map),
        Unary::Log10 => map!(Log10Map),
        Unary::Log1p => map!(Ln1pMap),
        Unary::Expm1 => map!(Expm1Map),
        Unary::Sin => map!(SinMap),
        Unary::Cos => map!(CosMap),
        Unary::Tan => map!(TanMap),
        Unary::Tanh => map!(TanhMap),
        Unary::Sigmoid => map!(SigmoidMap),
        Unary::Atan => map!(AtanMap),
        Unary::Asin => map!(AsinMap),
        Unary::Acos => map!(AcosMap),
        Unary::Sinh => map!(SinhMap),
        Unary::Cosh => map!(CoshMap),
        Unary::Asinh => map!(AsinhMap),
        Unary::Acosh => map!(AcoshMap),
        Unary::Atanh => map!(AtanhMap),
        Unary::Erf => map!(ErfMap),
        Unary::Gelu => map!(GeluMap),
        _ => return None,
    })
}

// ---- atan2: one quotient of the smaller magnitude by the larger, then the octant.

/// `atan2(y, x)`, the angle of the point `(x, y)` (within 2 ulp of the C library,
/// tested), branch-free: `q = min(|x|, |y|)/max(|x|, |y|)` in `[0, 1]` (`0/0` taken as 0 and
/// `∞/∞` as 1), [`atan`] of it, then the octant's `r`, `π/2 ∓ r` or `π − r` (the base in
/// two parts, rounded once), and `y`'s sign: C99's special cases fall out (`±0`
/// against `±0` gives `±0` or `±π`, infinities `±π/4` or `±3π/4`), NaN gives NaN.
#[inline(always)]
pub(crate) fn atan2(y: f64, x: f64) -> f64 {
    let (ay, ax) = (y.abs(), x.abs());
    let swap = ay > ax;
    let (num, den) = if swap { (ax, ay) } else { (ay, ax) };
    let q = num / den;
    let q = if den == 0.0 {
        0.0
    } else if num == f64::INFINITY {
        1.0
    } else {
        q
    };
    let r = atan(q);
    // The octant: r, π/2 − r, π − r or π/2 + r, the base's two parts added around r so
    // that the result rounds once.
    let neg = x.is_sign_negative();
    let k = if swap {
        1.0
    } else if neg {
        2.0
    } else {
        0.0
    };
    let r = if swap != neg { -r } else { r };
    let r = (k * PIO2_HI + r) + k * PIO2_LO;
    // (NaN after the sign: the C library's positive quiet NaN.)
    let r = r.copysign(y);
    if x.is_nan() || y.is_nan() {
        f64::NAN
    } else {
        r
    }
}

plain_map2!(
    /// `atan2` as a map (see `plain_map2!`).
    f64, Atan2Map, |y, x| atan2(y, x)
);

// ---- pow: fdlibm's `e_pow.c`, its common path branch-free.

/// `(3/2)·(ln x − 2s − (2/3)s³)/s⁴` in `s²` (fdlibm's `L1`…`L6`).
const POW_L: [f64; 6] = [
    f64::from_bits(0x3fe3_3333_3333_3303),
    f64::from_bits(0x3fdb_6db6_db6f_abff),
    f64::from_bits(0x3fd5_5555_518f_264d),
    f64::from_bits(0x3fd1_7460_a91d_4101),
    f64::from_bits(0x3fcd_864a_93c9_db65),
    f64::from_bits(0x3fca_7e28_4a45_4eef),
];
/// `log₂ 1.5` in two parts (the high one with 29 trailing zero bits).
const POW_DP_H: f64 = f64::from_bits(0x3fe2_b803_4000_0000);
const POW_DP_L: f64 = f64::from_bits(0x3e4c_fdeb_43cf_d006);
/// `ln 2`, and in two parts (the high one with 32 trailing zero bits).
const POW_LG2: f64 = f64::from_bits(0x3fe6_2e42_fefa_39ef);
const POW_LG2_H: f64 = f64::from_bits(0x3fe6_2e43_0000_0000);
const POW_LG2_L: f64 = f64::from_bits(0xbe20_5c61_0ca8_6c39);
/// `2/(3 ln 2)`, and in two parts.
const POW_CP: f64 = f64::from_bits(0x3fee_c709_dc3a_03fd);
const POW_CP_H: f64 = f64::from_bits(0x3fee_c709_e000_0000);
const POW_CP_L: f64 = f64::from_bits(0xbe3e_2fe0_145b_01f5);

/// `xʸ` for the common inputs, NaN for the others: `x` positive and
/// normal, `|y| ≤ 2³¹` (so finite), `y·log₂x` in `(−1021, 1022)` (a normal result).
/// fdlibm's `e_pow.c` (FreeBSD's `msun`): `log₂x` as `t1 + t2` to about 2⁻⁶⁴ relative
/// (`x = 2ⁿ·a` with `a` near 1 or 1.5, `s = (a − b)/(a + b)`, a polynomial in `s²`,
/// products split so the high parts are exact), `y·log₂x = p_h + p_l` by splitting `y`,
/// then `2^(p_h + p_l)` from fdlibm's exponential polynomial on the remainder after the
/// nearest integer. Within 1 ulp ("nearly rounded"; exact for integer powers of integers
/// that are representable). For the other inputs the caller takes the C library's `pow`
/// (a common input never gives NaN).
#[inline(always)]
pub(crate) fn pow_common(x: f64, y: f64) -> f64 {
    let xb = x.to_bits();
    let hx = (xb >> 32) as u32;
    let iy = ((y.to_bits() >> 32) as u32) & 0x7fff_ffff;
    let common_in = (0x0010_0000..0x7ff0_0000).contains(&hx) && iy <= 0x41e0_0000;
    // The interval of the mantissa: near 1 (k = 0) or 1.5 (k = 1); above √3 it is halved.
    let j = hx & 0x000f_ffff;
    let near_3_2 = j > 0x3_988e && j < 0xb_b67a;
    let halve = j >= 0xb_b67a;
    let n = ((hx >> 20) as i32 - 0x3ff) + i32::from(halve);
    let ixn = (j | 0x3ff0_0000) - if halve { 0x0010_0000 } else { 0 };
    let ax = f64::from_bits((u64::from(ixn) << 32) | (xb & 0xffff_ffff));
    let (bp, dp_h, dp_l) = if near_3_2 {
        (1.5, POW_DP_H, POW_DP_L)
    } else {
        (1.0, 0.0, 0.0)
    };
    // ss = s_h + s_l = (ax − bp)/(ax + bp).
    let u = ax - bp;
    let v = 1.0 / (ax + bp);
    let ss = u * v;
    let s_h = low_zero(ss);
    // t_h = ax + bp, its high part, from the bits.
    let t_h = f64::from_bits(
        u64::from(((ixn >> 1) | 0x2000_0000) + 0x0008_0000 + (u32::from(near_3_2) << 18)) << 32,
    );
    let t_l = ax - (t_h - bp);
    let s_l = v * ((u - s_h * t_h) - s_h * t_l);
    // log(ax).
    let s2 = ss * ss;
    let r = s2 * s2 * horner(s2, POW_L) + s_l * (s_h + ss);
    let s2 = s_h * s_h;
    let t_h = low_zero(3.0 + s2 + r);
    let t_l = r - ((t_h - 3.0) - s2);
    // u + v = ss·(1 + …).
    let u = s_h * t_h;
    let v = s_l * t_h + t_l * ss;
    // 2/(3 log 2)·(ss + …).
    let p_h = low_zero(u + v);
    let p_l = v - (p_h - u);
    let z_h = POW_CP_H * p_h;
    let z_l = POW_CP_L * p_h + p_l * POW_CP + dp_l;
    // log₂(ax) = n + dp_h + z_h + z_l = t1 + t2.
    let t = f64::from(n);
    let t1 = low_zero(((z_h + z_l) + dp_h) + t);
    let t2 = z_l - (((t1 - t) - dp_h) - z_h);
    // y·log₂x = p_h + p_l, with y split in two.
    let y1 = low_zero(y);
    let p_l = (y - y1) * t1 + y * t2;
    let p_h = y1 * t1;
    let z = p_l + p_h;
    let common = common_in && z > -1021.0 && z < 1022.0;
    // 2^(p_h + p_l) = 2^m · 2^(p_h − m + p_l), m the nearest integer (p_h − m is exact).
    let (mf, m) = round_int(if common { z } else { 0.0 });
    let p_h = p_h - mf;
    let t = low_zero(p_l + p_h);
    let u = t * POW_LG2_H;
    let v = (p_l - (t - p_h)) * POW_LG2 + t * POW_LG2_L;
    let z = u + v;
    let w = v - (z - u);
    let t = z * z;
    let t1 = z - t * horner(t, EXP_P);
    let r = (z * t1) / (t1 - 2.0) - (w + z * w);
    let v = pow2(m) * (1.0 - (r - z));
    if common {
        v
    } else {
        f64::NAN
    }
}

/// `xʸ` (C's `pow`): [`pow_common`], or the C library's `pow` for the other inputs.
#[inline(always)]
pub(crate) fn pow(x: f64, y: f64) -> f64 {
    let v = pow_common(x, y);
    if v.is_nan() {
        x.powf(y)
    } else {
        v
    }
}

/// `pow` as a binary map for the AVX-512 level: a block computes [`pow_common`] for every
/// pair in vector code, then the C library's `pow` for the pairs
/// outside its inputs (negative, zero,
/// subnormal, infinite or NaN bases, `|y| > 2³¹`, results near overflow or underflow).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct PowMap;

impl Map2<f64, f64, f64> for PowMap {
    #[inline(always)]
    fn one(&self, x: f64, y: f64) -> f64 {
        pow(x, y)
    }

    #[inline(always)]
    fn block(&self, x: &[f64; RUN_BLOCK], y: &[f64; RUN_BLOCK]) -> [f64; RUN_BLOCK] {
        // A plain loop: through `array::from_fn` the function, this large, stayed a call
        // per element.
        let mut r = [0.0; RUN_BLOCK];
        for i in 0..RUN_BLOCK {
            r[i] = pow_common(x[i], y[i]);
        }
        if r.iter().any(|v| v.is_nan()) {
            for i in 0..RUN_BLOCK {
                if r[i].is_nan() {
                    r[i] = x[i].powf(y[i]);
                }
            }
        }
        r
    }

    const AVX512: bool = true;
}
