//! AVX-512 kernels for the float32 exponentials and logarithms (`exp exp2 expm1 log
//! log2 log10 log1p`), the hyperbolic functions and their inverses (`tanh sinh cosh asinh
//! acosh atanh`), and the circular `sin cos tan atan asin acos` (the portable forms of `f32_math.rs`
//! with fused multiply-adds), sixteen lanes to a register: the forms of `avx512_f64.rs` in float32,
//! with sixteen-entry tables that one `vpermps` looks up; `tanh` alone is a table of
//! thirty-two polynomials (see [`tanh`]: the exponential's form cost 0.42 ms per 1M,
//! NumPy's takes 0.37).
//!
//! **exp, exp2, expm1.** `x = (16k + j)·ln2/16 + r`, `|r| ≤ ln2/32`: `2ᵏ·2^(j/16)·eʳ` with
//! `2^(j/16)` as a high and a low float32, `eʳ − 1 = r + r²·Q(r)` with `Q` of degree 2
//! (error 2⁻³⁶ after the factor r²), `vscalefps` for `2ᵏ` (one rounding, subnormal
//! results included); the clamp of `x` gives overflow, underflow, infinities and NaN.
//! `expm1` as `(2ᵏ·T_hi − 1) + (…)` with the subtraction's error carried (see [`expm1`]).
//!
//! **log, log2, log10.** `x = 2ᵉ·m` by `vgetexpps`/`vgetmantps`, `m` in `[0.75, 1.5)` in
//! one of sixteen intervals read off `m`'s bits (`c = 1` on the two next to 1), `r =
//! fma(m, 1/c, −1)` in `[−1/32, 1/16]`; `log_b c` as a high part on a 2⁻¹⁷ grid (exact with
//! `e·log_b 2`'s high part) and a low part; `log_b(1 + r) = a0·r + r²·Q(r)`, `Q` of degree
//! 3 (see [`log_fast`]); zero, negative, subnormal, infinite and NaN inputs come out right
//! of the same instructions. `log1p asinh acosh atanh` keep the integer decomposition of
//! [`log_normal`] (`z` in `[0.672, 1.344)`, `ln(1 + r) = r − r²/2 + r³·P(r)`, `P` of degree
//! 2), which takes an extra low word.
//!
//! **asin, acos.** `f32_math::asin`'s polynomial on `s = |x|` up to ½, on `s = √((1 −
//! |x|)/2)` beyond, the root from `vrsqrt14ps` and a Newton step with its residual carried
//! (no square root instruction: 378 µs per 1M where the portable form took 621).
//!
//! Accuracy (every 20011th float32 against the float64 C library, `accuracy_tests.rs`;
//! every 7th in development; the tests add every 11th float32 next to 1 and every 97th
//! next to 0, where the worst cases sit): `exp` 0.75 ulp, `exp2` 0.75, `expm1` 1.29 (`r`,
//! `p` and `s·p` round where `s − 1` and `s·p` nearly cancel, x ≈ −0.028; carrying `r`'s
//! error as float64 does cost 7% and left 1.23), `log` 1.00, `log2` 1.10, `log10` 1.18
//! (every float32; the worst next to 0.96875, the top of the interval below 1's own, where
//! `log_b c` and `log_b(1 + r)` partly cancel and both `a0·r + …` and the final sum round),
//! `log1p` 1.01 (next to the table intervals around 1, 0.984375 and 1.03125, where `r`'s
//! rounding, half an ulp of the result, adds to the final one; carrying `r` as an exact pair
//! gave 0.66 at 15–22% more time),
//! `tanh` 1.0 (next to 1/32, where the first interval's `1 + t·R` rounds), `sinh` 0.78,
//! `cosh` 0.88, `asinh` 1.02 (`r` rounded, as for `log10`), `acosh` 0.78, `atanh` 1.0,
//! `sin` 0.93, `cos` 0.88, `tan` 1.51, `atan` 0.90, `asin` 0.69, `acos` 0.67 (these two
//! and `expm1 sinh cosh`: every float32). Not bit-identical to the portable
//! level's results.

use std::arch::x86_64::*;

use super::f32_math;

/// `1.5·2²³`: adding it rounds a float32 below 2²² in magnitude to an integer, which its
/// low bits then hold.
const MAGIC: f32 = 12_582_912.0;

/// `1.5·2¹⁹`: adding it rounds a float32 below 2¹⁸ in magnitude to a multiple of 1/16,
/// whose sixteenths its low four bits then hold — the exponentials' `k/16 = j/16 + ⌊k/16⌋`
/// in one step: the table index in the bits, and the power of two for `vscalef` (which
/// takes the floor) without a multiplication.
const MAGIC16: f32 = 786_432.0;

/// `1/ln2` (the exponentials' `16/ln2` over 16, the same bits but the exponent).
const LOG2E: f32 = f32::from_bits(0x3fb8_aa3b);
/// `ln2` in two parts, the high part with trailing zeros, so that `k16·LN2_HI` is exact.
const LN2_HI: f32 = f32::from_bits(0x3f31_7218);
const LN2_LO: f32 = f32::from_bits(0xb102_e308);

const EXP_T_HI: [f32; 16] = [
    f32::from_bits(0x3f800000),
    f32::from_bits(0x3f85aac3),
    f32::from_bits(0x3f8b95c2),
    f32::from_bits(0x3f91c3d3),
    f32::from_bits(0x3f9837f0),
    f32::from_bits(0x3f9ef532),
    f32::from_bits(0x3fa5fed7),
    f32::from_bits(0x3fad583f),
    f32::from_bits(0x3fb504f3),
    f32::from_bits(0x3fbd08a4),
    f32::from_bits(0x3fc5672a),
    f32::from_bits(0x3fce248c),
    f32::from_bits(0x3fd744fd),
    f32::from_bits(0x3fe0ccdf),
    f32::from_bits(0x3feac0c7),
    f32::from_bits(0x3ff5257d),
];
const EXP_T_LO: [f32; 16] = [
    f32::from_bits(0x00000000),
    f32::from_bits(0x334f9891),
    f32::from_bits(0xb260aba1),
    f32::from_bits(0x33675624),
    f32::from_bits(0x33231b71),
    f32::from_bits(0x33412342),
    f32::from_bits(0xb32c9d5e),
    f32::from_bits(0xb22deaf6),
    f32::from_bits(0x32cfe77a),
    f32::from_bits(0xb3414fe8),
    f32::from_bits(0x320aa837),
    f32::from_bits(0x3228fc24),
    f32::from_bits(0xb2d4a58a),
    f32::from_bits(0xb21eab59),
    f32::from_bits(0xb24116de),
    f32::from_bits(0x32292436),
];
const EXP_Q: [f32; 3] = [
    f32::from_bits(0x3f000000),
    f32::from_bits(0x3e2aab6f),
    f32::from_bits(0x3d2aab2e),
];
const LOG_OFF: u32 = 0x3f2c0000;
const LOG_INVC: [f32; 16] = [
    f32::from_bits(0x3fba2e8c),
    f32::from_bits(0x3fb21643),
    f32::from_bits(0x3faaaaab),
    f32::from_bits(0x3fa3d70a),
    f32::from_bits(0x3f9d89d9),
    f32::from_bits(0x3f97b426),
    f32::from_bits(0x3f924925),
    f32::from_bits(0x3f8d3dcb),
    f32::from_bits(0x3f888889),
    f32::from_bits(0x3f842108),
    f32::from_bits(0x3f800000),
    f32::from_bits(0x3f70f0f1),
    f32::from_bits(0x3f638e39),
    f32::from_bits(0x3f579436),
    f32::from_bits(0x3f4ccccd),
    f32::from_bits(0x3f430c31),
];

const LN_C_HI: [f32; 16] = [
    f32::from_bits(0xbebfd800),
    f32::from_bits(0xbea91500),
    f32::from_bits(0xbe934b00),
    f32::from_bits(0xbe7cc800),
    f32::from_bits(0xbe54a000),
    f32::from_bits(0xbe2dfa00),
    f32::from_bits(0xbe08bc00),
    f32::from_bits(0xbdc99c00),
    f32::from_bits(0xbd842c00),
    f32::from_bits(0xbd020800),
    f32::from_bits(0x00000000),
    f32::from_bits(0x3d785000),
    f32::from_bits(0x3df13800),
    f32::from_bits(0x3e2ffa00),
    f32::from_bits(0x3e648000),
    f32::from_bits(0x3e8b3b00),
];

const LN_C_LO: [f32; 16] = [
    f32::from_bits(0x35b484fd),
    f32::from_bits(0xb661b38a),
    f32::from_bits(0xb50c4d37),
    f32::from_bits(0xb661e59e),
    f32::from_bits(0x36139ba9),
    f32::from_bits(0xb376a87b),
    f32::from_bits(0xb5ee227e),
    f32::from_bits(0x3606ca9b),
    f32::from_bits(0xb5ccacf2),
    f32::from_bits(0xb63913cf),
    f32::from_bits(0x00000000),
    f32::from_bits(0x35c28046),
    f32::from_bits(0x34e9c55e),
    f32::from_bits(0xb5f9f587),
    f32::from_bits(0xb5858656),
    f32::from_bits(0xb55a1516),
];

const LN_P: [f32; 4] = [
    f32::from_bits(0xbf000000),
    f32::from_bits(0x3eaaaaab),
    f32::from_bits(0xbe801002),
    f32::from_bits(0x3e4ce83f),
];

#[inline(always)]
fn splat(x: f32) -> __m512 {
    // SAFETY: AVX-512F, which every caller's target features (and the CPU) have; no
    // memory is touched.
    unsafe { _mm512_set1_ps(x) }
}

/// `t[idx & 15]` in each lane.
#[inline(always)]
fn look(t: &[f32; 16], idx: __m512i) -> __m512 {
    // SAFETY: called only under `run`, whose target features (and the CPU) have
    // AVX-512F; the intrinsics here touch no memory but the tables they load.
    // `t` holds sixteen float32 (an unaligned load).
    unsafe { _mm512_permutexvar_ps(idx, _mm512_loadu_ps(t.as_ptr())) }
}

/// The shared tail of `exp` and `exp2` (see `avx512_f64::exp_tail`).
/// The table entry `2^(j/16)` (high and low parts) and `eʳ − 1`, for `t` holding
/// `x/ln2` (or `x`) rounded to sixteenths plus [`MAGIC16`] and `r` the reduced argument
/// (`|r| ≤ ln2/32`, natural units).
#[inline(always)]
fn exp_parts(t: __m512, r: __m512) -> (__m512, __m512, __m512) {
    // SAFETY: called only under `run`, whose target features (and the CPU) have
    // AVX-512F and DQ; the intrinsics here touch no memory but the tables they load.
    unsafe {
        let idx = _mm512_castps_si512(t);
        let th = look(&EXP_T_HI, idx);
        let tl = look(&EXP_T_LO, idx);
        let q = _mm512_fmadd_ps(splat(EXP_Q[2]), r, splat(EXP_Q[1]));
        let q = _mm512_fmadd_ps(q, r, splat(EXP_Q[0]));
        (th, tl, _mm512_fmadd_ps(q, _mm512_mul_ps(r, r), r))
    }
}

/// `2^k16·eʳ` (see [`exp_parts`]; `k16` the multiple of 1/16 in `t`): the shared tail
/// of `exp` and `exp2`.
#[inline(always)]
fn exp_tail(t: __m512, k16: __m512, r: __m512) -> __m512 {
    let (th, tl, em1) = exp_parts(t, r);
    exp_join(th, tl, em1, k16)
}

/// `2^k16·(T_hi + T_lo)·(1 + em1)`, the table entry's parts and `eʳ − 1` joined.
#[inline(always)]
fn exp_join(th: __m512, tl: __m512, em1: __m512, k16: __m512) -> __m512 {
    // SAFETY: as for `exp_parts`.
    unsafe {
        let y = _mm512_add_ps(th, _mm512_fmadd_ps(th, em1, tl));
        // vscalef multiplies by 2^floor(k16), with one rounding.
        _mm512_scalef_ps(y, k16)
    }
}

/// `eˣ − 1` in each lane: `2ᵏ·T·(1 + p) − 1` with `T = 2^(j/16)` and `p = eʳ − 1` as in
/// `exp`, formed as `(s − 1) + (s·p + 2ᵏ·T_lo·(1 + p))` with `s = 2ᵏ·T_hi` (exact): `s − 1`
/// by two-sum, its error carried into the low sum, one rounding at the end. `x` clamped
/// at −18, where eˣ is under half an ulp of 1 (so −1 comes out); tiny `x` comes out as
/// itself (`s = 1`, `p = x`), −0 with its sign restored; above 83 (where `s` may
/// overflow before the result does) and +∞: the portable function; NaN passes.
#[inline(always)]
fn expm1(x: __m512) -> __m512 {
    // SAFETY: as for `exp_parts`.
    unsafe {
        let m1 = splat(-1.0);
        // (Above 83 the portable function; NaN passes the clamp.)
        let xc = _mm512_max_ps(splat(-18.0), x);
        let t = _mm512_fmadd_ps(xc, splat(LOG2E), splat(MAGIC16));
        let k16 = _mm512_sub_ps(t, splat(MAGIC16));
        let r = _mm512_fnmadd_ps(k16, splat(LN2_HI), xc);
        let r = _mm512_fnmadd_ps(k16, splat(LN2_LO), r);
        let (th, tl, p) = exp_parts(t, r);
        let s = _mm512_scalef_ps(th, k16);
        let sl = _mm512_scalef_ps(tl, k16);
        // hi + err = s − 1 exactly (two-sum).
        let hi = _mm512_add_ps(s, m1);
        let bb = _mm512_sub_ps(hi, s);
        let err = _mm512_add_ps(
            _mm512_sub_ps(s, _mm512_sub_ps(hi, bb)),
            _mm512_sub_ps(m1, bb),
        );
        let tail = _mm512_fmadd_ps(s, p, _mm512_add_ps(_mm512_fmadd_ps(sl, p, sl), err));
        let v = _mm512_add_ps(hi, tail);
        // (−0 keeps its sign: every other negative x gives a negative result already.)
        let v = _mm512_or_ps(v, _mm512_and_ps(x, splat(-0.0)));
        let rare = _mm512_cmp_ps_mask::<_CMP_GT_OQ>(x, splat(83.0));
        fix_rare(x, v, rare, f32_math::expm1)
    }
}

/// The pieces of `2^off·eᵃ` for `a` already clamped (NaN passes): `s = 2^(k+off)·T_hi`
/// (exact), `sl = 2^(k+off)·T_lo` and `p = eʳ − 1`, so that `2^off·eᵃ = (s + sl)·(1 + p)`.
#[inline(always)]
fn exp_pieces(a: __m512, off: f32) -> (__m512, __m512, __m512) {
    // SAFETY: as for `exp_parts`.
    unsafe {
        let t = _mm512_fmadd_ps(a, splat(LOG2E), splat(MAGIC16));
        let k16 = _mm512_sub_ps(t, splat(MAGIC16));
        let r = _mm512_fnmadd_ps(k16, splat(LN2_HI), a);
        let r = _mm512_fnmadd_ps(k16, splat(LN2_LO), r);
        let (th, tl, p) = exp_parts(t, r);
        let e = _mm512_add_ps(k16, splat(off));
        (_mm512_scalef_ps(th, e), _mm512_scalef_ps(tl, e), p)
    }
}

/// `|x|` and `x`'s sign bit.
#[inline(always)]
fn abs_sign(x: __m512) -> (__m512, __m512) {
    // SAFETY: AVX-512F and DQ (see `run`); no memory is touched.
    unsafe { (_mm512_abs_ps(x), _mm512_and_ps(x, splat(-0.0))) }
}

/// `a + a³·P(a²)` (an odd polynomial; `c` from the `a³` coefficient up).
#[inline(always)]
fn odd_poly<const N: usize>(a: __m512, c: [f32; N]) -> __m512 {
    // SAFETY: AVX-512F (see `run`); no memory is touched.
    unsafe {
        let z = _mm512_mul_ps(a, a);
        _mm512_fmadd_ps(_mm512_mul_ps(a, z), poly(z, c), a)
    }
}

/// `(sinh(a) − a)/a³` as a polynomial in `a²` on `a ≤ 1` (Chebyshev fit, error 2⁻³² of
/// `sinh`).
const SINH_P: [f32; 4] = [
    f32::from_bits(0x3e2a_aaab),
    f32::from_bits(0x3c08_888f),
    f32::from_bits(0x3950_0480),
    f32::from_bits(0x363c_5387),
];

/// The float32 `tanh` table (see [`tanh`]): per interval, the expansion point `s` and the
/// polynomial's coefficients `c0…c5` (in `t = |x| − s`), as bits. Interval 0 is `[0, 1/16)`
/// with `s = 0`; 1 to 28 are the quarter-binades from 1/16 to 8; 29 (and the unused 30,
/// 31) `[8, 9.5]`. `s` is a float32 near the interval's middle whose `tanh` is within
/// 2⁻⁸ ulp of a float32 (`c0`); the other coefficients are Chebyshev fits (error at most
/// 0.38 ulp on `[4, 5)`, 0.25 ulp elsewhere).
const TANH_TABLE: [[u32; 32]; 7] = [
    // s
    [
        0x0000_0000,
        0x3d8f_fa35,
        0x3daf_ff73,
        0x3dcf_fef3,
        0x3df0_021a,
        0x3e0f_fc3b,
        0x3e30_0350,
        0x3e50_04dc,
        0x3e70_043d,
        0x3e8f_fb29,
        0x3eb0_0034,
        0x3ed0_0226,
        0x3eef_fa63,
        0x3f0f_fe76,
        0x3f2f_fe3e,
        0x3f50_0278,
        0x3f6f_fcad,
        0x3f90_046f,
        0x3fb0_0320,
        0x3fcf_ff88,
        0x3ff0_003b,
        0x4010_049f,
        0x4030_057e,
        0x404f_fe96,
        0x4070_040e,
        0x4090_0269,
        0x40b0_02f9,
        0x40cf_fa24,
        0x40f0_05dc,
        0x410b_fa24,
        0x410b_fa24,
        0x410b_fa24,
    ],
    // c0
    [
        0x0000_0000,
        0x3d8f_bd9b,
        0x3daf_90dd,
        0x3dcf_48a1,
        0x3dee_ea5c,
        0x3e0f_0b36,
        0x3e2e_4cbb,
        0x3e4d_3438,
        0x3e6b_b732,
        0x3e8c_4d53,
        0x3ea9_6191,
        0x3ec5_45c5,
        0x3edf_d2ab,
        0x3f02_8314,
        0x3f18_aace,
        0x3f2b_c5db,
        0x3f3b_ea94,
        0x3f4f_316a,
        0x3f61_3dbc,
        0x3f6c_e35b,
        0x3f74_3c5a,
        0x3f7a_60b9,
        0x3f7d_eae0,
        0x3f7f_3b34,
        0x3f7f_b795,
        0x3f7f_efd6,
        0x3f7f_fdd0,
        0x3f7f_ffb4,
        0x3f7f_fff6,
        0x3f7f_ffff,
        0x3f7f_ffff,
        0x3f7f_ffff,
    ],
    // c1
    [
        0x3f80_0000,
        0x3f7e_bd2b,
        0x3f7e_1e62,
        0x3f7d_60a6,
        0x3f7c_841e,
        0x3f7b_0128,
        0x3f78_953a,
        0x3f75_b835,
        0x3f72_6f62,
        0x3f6c_c6d5,
        0x3f63_fb82,
        0x3f59_fee3,
        0x3f4f_13d3,
        0x3f3d_769d,
        0x3f24_f4b9,
        0x3f0c_be15,
        0x3eec_1eea,
        0x3eb0_9e1a,
        0x3e67_49b3,
        0x3e13_3019,
        0x3db7_e732,
        0x3d31_ef22,
        0x3c84_bd39,
        0x3bc4_805c,
        0x3b10_c185,
        0x3a01_4c27,
        0x388b_ffae,
        0x3717_e7bc,
        0x35a3_ff22,
        0x33d8_526b,
        0x33d8_526b,
        0x33d8_526b,
    ],
    // c2
    [
        0x3383_8a48,
        0xbd8f_0857,
        0xbdae_4692,
        0xbdcd_2909,
        0xbdeb_a9ff,
        0xbe0c_40a3,
        0xbe29_3fef,
        0xbe44_f6a2,
        0xbe5f_39bc,
        0xbe81_c440,
        0xbe96_d7eb,
        0xbea7_fc8d,
        0xbeb5_0cad,
        0xbec1_2e71,
        0xbec4_beb7,
        0xbebc_df7f,
        0xbead_52f6,
        0xbe8e_f244,
        0xbe4b_7ff1,
        0xbe08_3335,
        0xbdaf_73c2,
        0xbd2e_0517,
        0xbc83_a646,
        0xbbc3_e4d2,
        0xbb10_950c,
        0xba01_0f1a,
        0xb88b_c4cc,
        0xb717_a91d,
        0xb5a3_bb61,
        0xb3d6_8047,
        0xb3d6_8047,
        0xb3d6_8047,
    ],
    // c3
    [
        0xbeaa_ab30,
        0xbea7_50f5,
        0xbea5_ad70,
        0xbea3_ba26,
        0xbea1_7895,
        0xbe9d_8a52,
        0xbe97_514b,
        0xbe90_13ee,
        0xbe87_ee5f,
        0xbe74_9540,
        0xbe4c_2bfb,
        0xbe21_360e,
        0xbdeb_9ecd,
        0xbd5e_94b3,
        0x3c6b_801b,
        0x3d83_9cbf,
        0x3dc2_15b5,
        0x3de3_47b4,
        0x3dcb_e79e,
        0x3d99_f033,
        0x3d54_2d58,
        0x3cdd_c999,
        0x3c2c_adce,
        0x3b81_d17f,
        0x3ac0_5c15,
        0x39ac_2595,
        0x383a_82bb,
        0x36ca_69d1,
        0x355a_7e89,
        0x338f_bef4,
        0x338f_bef4,
        0x338f_bef4,
    ],
    // c4
    [
        0x38e6_8aa0,
        0x3d3d_4a8c,
        0x3d65_cb5a,
        0x3d86_aa3f,
        0x3d99_e4fa,
        0x3db5_7e55,
        0x3dd7_d11c,
        0x3df6_c067,
        0x3e08_f6a4,
        0x3e19_6d07,
        0x3e27_ffcc,
        0x3e2e_018b,
        0x3e2c_1dc6,
        0x3e1c_eec0,
        0x3df4_a1d1,
        0x3da3_9b7e,
        0x3d31_ab7e,
        0x3b71_1a88,
        0xbcac_d943,
        0xbccd_cb45,
        0xbcaa_cb01,
        0xbc4a_e97a,
        0xbba8_afe8,
        0xbb01_c004,
        0xba41_dbb2,
        0xb934_d29c,
        0xb7c4_225f,
        0xb654_dc19,
        0xb4e5_d192,
        0xb321_2b0c,
        0xb321_2b0c,
        0xb321_2b0c,
    ],
    // c5
    [
        0x3e07_52ab,
        0x3e02_dc0e,
        0x3e00_1c36,
        0x3df9_b52b,
        0x3df2_39f5,
        0x3de5_47d2,
        0x3dd1_30d9,
        0x3dba_532f,
        0x3da1_45fd,
        0x3d71_e647,
        0x3d02_e0f7,
        0x3bc2_1cfb,
        0xbc8c_9dd9,
        0xbd32_34e7,
        0xbd7c_4a35,
        0xbd80_60c2,
        0xbd59_5bc1,
        0xbd03_3059,
        0xbc1b_92af,
        0x3ab8_555d,
        0x3b96_eaf6,
        0x3b82_5e50,
        0x3afa_c37d,
        0x3a49_b997,
        0x3999_373f,
        0x388e_6962,
        0x371a_c614,
        0x35a7_a82c,
        0x3435_8824,
        0x3279_3963,
        0x3279_3963,
        0x3279_3963,
    ],
];

/// A thirty-two-entry table (as bits) as two registers.
#[inline(always)]
fn table32(t: &[u32; 32]) -> (__m512, __m512) {
    // SAFETY: `t` holds thirty-two 32-bit words; unaligned loads.
    unsafe {
        (
            _mm512_castsi512_ps(_mm512_loadu_si512(t.as_ptr().cast())),
            _mm512_castsi512_ps(_mm512_loadu_si512(t.as_ptr().add(16).cast())),
        )
    }
}

/// `tanh x` in each lane: a polynomial of degree 5 in `t = a − s` for `a = |x|`, from
/// one of thirty-two intervals ([`TANH_TABLE`]; the index is the bits of `a` shifted to
/// its quarter-binade, one `vpermt2ps` per coefficient); `a` clamped to 9.5, where the
/// result rounds to 1. Interval 0 (`s = 0`, `c0 = 0`, `c1 = 1`) keeps the relative
/// precision next to 0 (±0 and subnormals come out as `x`). The sign is `x`'s; NaN
/// passes (`t` is NaN).
#[inline(always)]
fn tanh(x: __m512) -> __m512 {
    // SAFETY: as for `exp_parts`.
    unsafe {
        let (ax, sign) = abs_sign(x);
        // `vminps` returns its second operand when either is NaN.
        let a = _mm512_min_ps(splat(9.5), ax);
        // Quarter-binades from 1/16 (bits 0x3d80_0000 >> 21 = 492) are intervals 1 up.
        let q = _mm512_sub_epi32(
            _mm512_srli_epi32::<21>(_mm512_castps_si512(a)),
            _mm512_set1_epi32(491),
        );
        let idx = _mm512_max_epi32(q, _mm512_setzero_si512());
        let pick = |row: &[u32; 32]| {
            let (lo, hi) = table32(row);
            _mm512_permutex2var_ps(lo, idx, hi)
        };
        let t = _mm512_sub_ps(a, pick(&TANH_TABLE[0]));
        let mut v = pick(&TANH_TABLE[6]);
        for row in TANH_TABLE[1..6].iter().rev() {
            v = _mm512_fmadd_ps(v, t, pick(row));
        }
        _mm512_or_ps(v, sign)
    }
}

/// `eᵃ/4` as `s + hl` (`s` exact) and `g = e⁻ᵃ/2 = 1/(8·(s + hl))` rounded (within an ulp;
/// at most a sixth of the result where `sinh` uses it, so no correction), for `a = |x|`
/// clamped to 90: `sinh` and `cosh` overflow from 89.42, where the quarter keeps `s`
/// finite (`2^k·T_hi` may exceed `eᵃ` when `r < 0`) and the callers' `2s + …`, one fma,
/// overflows. The shared part of [`sinh`] and [`cosh`].
#[inline(always)]
fn quarter_exps(ax: __m512) -> (__m512, __m512, __m512) {
    // SAFETY: as for `exp_parts`.
    unsafe {
        let a = _mm512_min_ps(splat(90.0), ax);
        let (s, sl, p) = exp_pieces(a, -2.0);
        let hl = _mm512_fmadd_ps(s, p, _mm512_fmadd_ps(sl, p, sl));
        let g0 = _mm512_div_ps(splat(0.125), _mm512_add_ps(s, hl));
        (s, hl, g0)
    }
}

/// `sinh x` in each lane: `2s + (2hl − g)` (see [`quarter_exps`]) for `a = |x| ≥ 1`, an
/// odd polynomial below. The sign is `x`'s.
#[inline(always)]
fn sinh(x: __m512) -> __m512 {
    // SAFETY: as for `exp_parts`.
    unsafe {
        let (ax, sign) = abs_sign(x);
        let (s, hl, g) = quarter_exps(ax);
        let v = _mm512_fmadd_ps(s, splat(2.0), _mm512_fmsub_ps(hl, splat(2.0), g));
        let small = _mm512_cmp_ps_mask::<_CMP_LT_OQ>(ax, splat(1.0));
        let v = _mm512_mask_blend_ps(small, v, odd_poly(ax, SINH_P));
        _mm512_or_ps(v, sign)
    }
}

/// `cosh x` in each lane: `2s + (2hl + g)` (see [`quarter_exps`]; no cancellation).
#[inline(always)]
fn cosh(x: __m512) -> __m512 {
    // SAFETY: as for `exp_parts`.
    unsafe {
        let (s, hl, g) = quarter_exps(_mm512_abs_ps(x));
        _mm512_fmadd_ps(s, splat(2.0), _mm512_fmadd_ps(hl, splat(2.0), g))
    }
}

/// `eˣ` in each lane.
#[inline(always)]
fn exp(x: __m512) -> __m512 {
    // SAFETY: called only under `run`, whose target features (and the CPU) have
    // AVX-512F; the intrinsics here touch no memory but the tables they load.
    unsafe {
        // NaN passes both (`vminps`/`vmaxps` return the second operand when one is NaN).
        let xc = _mm512_max_ps(splat(-104.0), _mm512_min_ps(splat(90.0), x));
        let t = _mm512_fmadd_ps(xc, splat(LOG2E), splat(MAGIC16));
        let k16 = _mm512_sub_ps(t, splat(MAGIC16));
        let r = _mm512_fnmadd_ps(k16, splat(LN2_HI), xc);
        let r = _mm512_fnmadd_ps(k16, splat(LN2_LO), r);
        exp_tail(t, k16, r)
    }
}

/// The logistic function in each lane, as the portable `f32_math::sigmoid`: `e = e^−|x|`
/// (this file's `exp`), then `1/(1 + e)` for `x ≥ 0` and `e/(1 + e)` below, so a result
/// that is a subnormal still comes out. NaN passes.
#[inline(always)]
fn sigmoid(x: __m512) -> __m512 {
    // SAFETY: as for `exp`.
    unsafe {
        let e = exp(_mm512_or_ps(x, splat(-0.0)));
        let neg = _mm512_cmp_ps_mask::<_CMP_LT_OQ>(x, splat(0.0));
        let num = _mm512_mask_blend_ps(neg, splat(1.0), e);
        _mm512_div_ps(num, _mm512_add_ps(splat(1.0), e))
    }
}

/// `erf(a)/a − 1` as a polynomial in `a²` on `a ≤ 1` (a least-squares fit to the relative
/// error of `erf` at Chebyshev nodes, 1.6·10⁻⁹ with the coefficients rounded): `erf a =
/// a + a·P(a²)`, the correction under a seventh of the result, so its roundings count
/// for little.
const ERF_SMALL: [f32; 7] = [
    f32::from_bits(0x3e03_75d4),
    f32::from_bits(0xbec0_939f),
    f32::from_bits(0x3de7_167c),
    f32::from_bits(0xbcdb_fc8b),
    f32::from_bits(0x3baa_02f9),
    f32::from_bits(0xba51_fc4a),
    f32::from_bits(0x38a4_b707),
];

/// `erfc(a)·e^(a²)` on `1 ≤ a ≤ 10` as a polynomial in `t = (a − 2)/(a + 2)` (the
/// Möbius map makes the slow `1/(a√π)` tail polynomial-friendly: degree 8 fits to
/// 1.7·10⁻⁸ relative, with each coefficient rounded to float32 before the next is fitted).
const ERFC_LARGE: [f32; 9] = [
    f32::from_bits(0x3e82_c339),
    f32::from_bits(0xbeda_b81b),
    f32::from_bits(0x3e77_752f),
    f32::from_bits(0xbda1_bf72),
    f32::from_bits(0x3b74_cf06),
    f32::from_bits(0x3be5_8a8c),
    f32::from_bits(0xba66_139d),
    f32::from_bits(0xba88_36d2),
    f32::from_bits(0x3992_6706),
];

/// `erfc a` for `a ≥ 1` (NaN passes), given `a² = h + l` as an exact pair (`a` clamped
/// to 20 for it, so that `a = ∞` gives `l = 0`, not ∞ − ∞): `e^(−a²)·R(t)`
/// ([`ERFC_LARGE`], `t` taken at `min(a, 10)`), `e^(−a²) = e^(−h)·(1 − l)`. Rounding `a²`
/// alone would cost up to 64 ulp at `a = 10`. The exponential underflows to 0 past
/// `a ≈ 10.2`, where erfc does in float32. Returned as the factors `(e^(−a²), R)`: a
/// caller that scales the result multiplies `R` first, so the product is not a subnormal
/// before the result is.
#[inline(always)]
fn erfc_large(a: __m512, h: __m512, l: __m512) -> (__m512, __m512) {
    // SAFETY: as for `exp`.
    unsafe {
        let at = _mm512_min_ps(splat(10.0), a);
        let t = _mm512_div_ps(_mm512_sub_ps(at, splat(2.0)), _mm512_add_ps(at, splat(2.0)));
        let r = poly(t, ERFC_LARGE);
        let e = exp(_mm512_sub_ps(splat(0.0), h));
        (_mm512_fnmadd_ps(e, l, e), r)
    }
}

/// `v²` as the exact pair `(h, l)`, `v` clamped to ±20 (see [`erfc_large`]).
#[inline(always)]
fn square_pair(v: __m512) -> (__m512, __m512) {
    // SAFETY: as for `exp`.
    unsafe {
        let c = _mm512_max_ps(splat(-20.0), _mm512_min_ps(splat(20.0), v));
        let h = _mm512_mul_ps(c, c);
        (h, _mm512_fmsub_ps(c, c, h))
    }
}

/// `erf x` in each lane: `a + a·P(a²)` ([`ERF_SMALL`]) for `a = |x| < 1`, `1 − erfc a`
/// ([`erfc_large`]) above (which rounds to 1 past 3.92); `x`'s sign. NaN passes.
#[inline(always)]
fn erf(x: __m512) -> __m512 {
    // SAFETY: as for `exp`.
    unsafe {
        let (a, sign) = abs_sign(x);
        let small = _mm512_fmadd_ps(a, poly(_mm512_mul_ps(a, a), ERF_SMALL), a);
        let (h, l) = square_pair(a);
        let (e, r) = erfc_large(_mm512_max_ps(splat(1.0), a), h, l);
        let big = _mm512_fnmadd_ps(e, r, splat(1.0));
        let lt1 = _mm512_cmp_ps_mask::<_CMP_LT_OQ>(a, splat(1.0));
        let v = _mm512_or_ps(_mm512_mask_blend_ps(lt1, big, small), sign);
        let nan = _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(x, x);
        _mm512_mask_blend_ps(nan, v, x)
    }
}

/// `S(a) = ½·e^(a²/2)·erfc(a/√2)` on `0 ≤ a ≤ 14.6` as a polynomial in `t = (a − K)/(a +
/// K)`, `K` [`GELU_K`] (`2√2`): `Φ(−a) = e^(−a²/2)·S(a)`. Printed by
/// `scripts/fit_gelu_f32.py`, which also estimates the error as evaluated here (`t`
/// rounded from a float32 `a`, Horner): 2.8·2⁻²⁴ relative below `a = 1.4`, 2.4 up to 6,
/// 6.7 at the far end, most of it the rounding of `t`.
const GELU_S: [f32; 11] = [
    f32::from_bits(0x3e02_c339),
    f32::from_bits(0xbe5a_b81b),
    f32::from_bits(0x3df7_7540),
    f32::from_bits(0xbd21_bf44),
    f32::from_bits(0x3af4_9641),
    f32::from_bits(0x3b65_23f6),
    f32::from_bits(0xb9dc_bc21),
    f32::from_bits(0xb9fc_8107),
    f32::from_bits(0x378e_d54f),
    f32::from_bits(0x3891_3ee2),
    f32::from_bits(0x375b_33ea),
];

/// `2√2` rounded to float32: the centre of [`GELU_S`]'s variable.
const GELU_K: f32 = f32::from_bits(0x4035_04f3);

/// `e^(−(h + l)/2)` for `h + l ≥ 0` up to about 213 (NaN passes): `exp`'s reduction
/// done on `h` itself, `r₂ = h + k16·2ln2 + l = −2r` (`k16 = −h/(2ln2)` rounded to
/// sixteenths), so that neither `−h/2` nor `l/2` costs a multiplication; `eʳ − 1 =
/// r₂·(−½ + r₂·P(r₂))` with `P` [`EXP_Q`] scaled by powers of two (exactly).
#[inline(always)]
fn exp_neg_half(h: __m512, l: __m512) -> __m512 {
    // SAFETY: as for `exp_parts`.
    unsafe {
        let t = _mm512_fmadd_ps(h, splat(-0.5 * LOG2E), splat(MAGIC16));
        let k16 = _mm512_sub_ps(t, splat(MAGIC16));
        let r2 = _mm512_fmadd_ps(k16, splat(2.0 * LN2_HI), h);
        let r2 = _mm512_add_ps(_mm512_fmadd_ps(k16, splat(2.0 * LN2_LO), r2), l);
        let idx = _mm512_castps_si512(t);
        let th = look(&EXP_T_HI, idx);
        let tl = look(&EXP_T_LO, idx);
        let q = _mm512_fmadd_ps(splat(EXP_Q[2] / 16.0), r2, splat(EXP_Q[1] / -8.0));
        let q = _mm512_fmadd_ps(q, r2, splat(EXP_Q[0] / 4.0));
        let em1 = _mm512_mul_ps(r2, _mm512_fmadd_ps(q, r2, splat(-0.5)));
        exp_join(th, tl, em1, k16)
    }
}

/// GELU (PyTorch's default, erf form) in each lane: `x·Φ(x)`, one form for every lane.
/// With `a = min(|x|, 14.6)` (past 14.6 the result underflows for `x < 0` and is `x`
/// above): `m = x·Φ(−a) = (x·S(a))·e^(−a²/2)` ([`GELU_S`]; `a²` as an exact pair, the
/// low part folded into the exponential's reduced argument), then `x − m` for `x > 0`
/// and `m` otherwise — no cancellation for `x < 0`, which keeps its relative accuracy
/// out to where the result underflows. `x` enters `m` clamped above at 14.6, so `+∞`
/// gives `+∞`; `−∞` gives NaN (`−∞·0`) as the expression does; NaN passes.
#[inline(always)]
fn gelu(x: __m512) -> __m512 {
    // SAFETY: as for `exp`; `vrangeps` is AVX-512DQ, which `run` enables.
    unsafe {
        // min(|x|, 14.6) with the sign cleared (imm 0b10_10); NaN passes.
        let a = _mm512_range_ps::<0b1010>(x, splat(14.6));
        let h = _mm512_mul_ps(a, a);
        let l = _mm512_fmsub_ps(a, a, h);
        let k = splat(GELU_K);
        let s = poly(
            _mm512_div_ps(_mm512_sub_ps(a, k), _mm512_add_ps(a, k)),
            GELU_S,
        );
        let e = exp_neg_half(h, l);
        // (x·S) first: S is not small, so the product is not a subnormal before m is.
        let c = _mm512_min_ps(splat(14.6), x);
        let m = _mm512_mul_ps(_mm512_mul_ps(c, s), e);
        let pos = _mm512_cmp_ps_mask::<_CMP_GT_OQ>(x, splat(0.0));
        _mm512_mask_sub_ps(m, pos, x, m)
    }
}

/// `2ˣ` in each lane.
#[inline(always)]
fn exp2(x: __m512) -> __m512 {
    // SAFETY: called only under `run`, whose target features (and the CPU) have
    // AVX-512F; the intrinsics here touch no memory but the tables they load.
    unsafe {
        let xc = _mm512_max_ps(splat(-152.0), _mm512_min_ps(splat(130.0), x));
        let t = _mm512_add_ps(xc, splat(MAGIC16));
        let k16 = _mm512_sub_ps(t, splat(MAGIC16));
        // x − k16 is exact; its product with ln2 rounds once.
        let d = _mm512_sub_ps(xc, k16);
        exp_tail(t, k16, _mm512_mul_ps(d, splat(std::f32::consts::LN_2)))
    }
}

// The logarithms `ln log2 log10` of [`log_fast`]: `m = getmant(x)` in `[0.75, 1.5)`, the
// table index the low four bits of `m`'s bits shifted by 19 (`[1, 1.5)` in eight intervals
// of 1/16, `[0.75, 1)` in eight of 1/32); `1/c` per interval (`c = 1` for the two next to
// 1, the midpoint elsewhere), `log_b c` (plus `log_b 2` for `m < 1`, whose exponent
// `getexp` counts one lower) as a high part on a 2⁻¹⁷ grid and a low part; `log_b(1 + r) =
// a0·r + r²·Q(r)`, `a0 = 1/ln b` as a high and a low float32, `Q` of degree 3 (relative
// error 2⁻²⁸ over `r` in `[−1/32, 1/16]`). Printed by `scripts/gen_log_f32_tables.py`
// (mpmath; weighted least squares on Chebyshev nodes, each coefficient rounded to float32
// before the next is fitted).
const LOGF_INVC: [f32; 16] = [
    f32::from_bits(0x3f800000),
    f32::from_bits(0x3f6a0ea1),
    f32::from_bits(0x3f5d67c9),
    f32::from_bits(0x3f520d21),
    f32::from_bits(0x3f47ce0c),
    f32::from_bits(0x3f3e82fa),
    f32::from_bits(0x3f360b61),
    f32::from_bits(0x3f2e4c41),
    f32::from_bits(0x3fa72f05),
    f32::from_bits(0x3fa0a0a1),
    f32::from_bits(0x3f9a90e8),
    f32::from_bits(0x3f94f209),
    f32::from_bits(0x3f8fb824),
    f32::from_bits(0x3f8ad8f3),
    f32::from_bits(0x3f864b8a),
    f32::from_bits(0x3f800000),
];
const LNF_T_HI: [f32; 16] = [
    f32::from_bits(0x00000000),
    f32::from_bits(0x3db78800),
    f32::from_bits(0x3e14aa00),
    f32::from_bits(0x3e4a9200),
    f32::from_bits(0x3e7dc800),
    f32::from_bits(0x3e974700),
    f32::from_bits(0x3eae8e00),
    f32::from_bits(0x3ec4d200),
    f32::from_bits(0x3eda2800),
    f32::from_bits(0x3eeea300),
    f32::from_bits(0x3f012a80),
    f32::from_bits(0x3f0aa600),
    f32::from_bits(0x3f13cb00),
    f32::from_bits(0x3f1c9f00),
    f32::from_bits(0x3f252780),
    f32::from_bits(0x3f317200),
];
const LNF_T_LO: [f32; 16] = [
    f32::from_bits(0x00000000),
    f32::from_bits(0xb636346a),
    f32::from_bits(0x36162100),
    f32::from_bits(0x365407a3),
    f32::from_bits(0x3645eaf2),
    f32::from_bits(0x352fb847),
    f32::from_bits(0xb516a9fe),
    f32::from_bits(0xb64573ec),
    f32::from_bits(0xb606e337),
    f32::from_bits(0x361dec1c),
    f32::from_bits(0x35a76974),
    f32::from_bits(0x35f8fd35),
    f32::from_bits(0xb578bb27),
    f32::from_bits(0x34d2562a),
    f32::from_bits(0x3687bb04),
    f32::from_bits(0x35bfbe8e),
];
const LNF_A0: (f32, f32) = (f32::from_bits(0x3f800000), f32::from_bits(0x00000000));
const LNF_Q: [f32; 4] = [
    f32::from_bits(0xbf000001),
    f32::from_bits(0x3eaaac3c),
    f32::from_bits(0xbe800213),
    f32::from_bits(0x3e402b88),
];
const LOG2F_T_HI: [f32; 16] = [
    f32::from_bits(0x00000000),
    f32::from_bits(0x3e046200),
    f32::from_bits(0x3e567a00),
    f32::from_bits(0x3e922000),
    f32::from_bits(0x3eb71100),
    f32::from_bits(0x3eda3f00),
    f32::from_bits(0x3efbd400),
    f32::from_bits(0x3f0df980),
    f32::from_bits(0x3f1d5d80),
    f32::from_bits(0x3f2c2400),
    f32::from_bits(0x3f3a5900),
    f32::from_bits(0x3f480700),
    f32::from_bits(0x3f553880),
    f32::from_bits(0x3f61f500),
    f32::from_bits(0x3f6e4500),
    f32::from_bits(0x3f800000),
];
const LOG2F_T_LO: [f32; 16] = [
    f32::from_bits(0x00000000),
    f32::from_bits(0x3643dc54),
    f32::from_bits(0x366f157e),
    f32::from_bits(0x35f2db6d),
    f32::from_bits(0x3501d490),
    f32::from_bits(0x363fcfdd),
    f32::from_bits(0x35a8690e),
    f32::from_bits(0x351b8e36),
    f32::from_bits(0x36014fd8),
    f32::from_bits(0x3582cbd6),
    f32::from_bits(0xb3d4f271),
    f32::from_bits(0x3645d0d4),
    f32::from_bits(0xb66208a8),
    f32::from_bits(0xb5d7a3ed),
    f32::from_bits(0xb6452f05),
    f32::from_bits(0x00000000),
];
const LOG2F_A0: (f32, f32) = (f32::from_bits(0x3fb8aa3b), f32::from_bits(0x32a57060));
const LOG2F_Q: [f32; 4] = [
    f32::from_bits(0xbf38aa3c),
    f32::from_bits(0x3ef63a8a),
    f32::from_bits(0xbeb8b1f2),
    f32::from_bits(0x3e8ae035),
];
const LOG10F_T_HI: [f32; 16] = [
    f32::from_bits(0x00000000),
    f32::from_bits(0x3d1f6800),
    f32::from_bits(0x3d812000),
    f32::from_bits(0x3daff400),
    f32::from_bits(0x3ddc7000),
    f32::from_bits(0x3e036600),
    f32::from_bits(0x3e179e00),
    f32::from_bits(0x3e2af400),
    f32::from_bits(0x3e3d7c00),
    f32::from_bits(0x3e4f4600),
    f32::from_bits(0x3e606200),
    f32::from_bits(0x3e70da00),
    f32::from_bits(0x3e805e00),
    f32::from_bits(0x3e880900),
    f32::from_bits(0x3e8f7300),
    f32::from_bits(0x3e9a2000),
];
const LOG10F_T_LO: [f32; 16] = [
    f32::from_bits(0x00000000),
    f32::from_bits(0x350c266a),
    f32::from_bits(0x36225317),
    f32::from_bits(0x3240e3a5),
    f32::from_bits(0xb5d736c0),
    f32::from_bits(0xb4a537f3),
    f32::from_bits(0xb5984cfb),
    f32::from_bits(0x35c6f134),
    f32::from_bits(0x363a453c),
    f32::from_bits(0x369e3efd),
    f32::from_bits(0x360933db),
    f32::from_bits(0x36cd6253),
    f32::from_bits(0x37015ea0),
    f32::from_bits(0x370c6420),
    f32::from_bits(0x36bcc36f),
    f32::from_bits(0x369a84fc),
];
const LOG10F_A0: (f32, f32) = (f32::from_bits(0x3ede5bd9), f32::from_bits(0xb22d91af));
const LOG10F_Q: [f32; 4] = [
    f32::from_bits(0xbe5e5bda),
    f32::from_bits(0x3e143e95),
    f32::from_bits(0xbdde6290),
    f32::from_bits(0x3da715df),
];

/// The constants of the natural logarithm in [`log_normal`] (see `avx512_f64::Base`).
struct Base {
    c_hi: &'static [f32; 16],
    c_lo: &'static [f32; 16],
    l2: (f32, f32),
    p: &'static [f32; 4],
}

const LN: Base = Base {
    c_hi: &LN_C_HI,
    c_lo: &LN_C_LO,
    l2: (f32::from_bits(0x3f31_7200), f32::from_bits(0x35bf_be8e)),
    p: &LN_P,
};

/// `ln x + extra` for positive normal finite `x`, rounded once (other lanes: garbage,
/// which callers replace). `extra` (none: 0) joins the low word: exact enough where it is
/// below 2⁻²¹ of the result, or where `x` is so near 1 that the high word is `r` itself
/// (`asinh`, `atanh` next to 0).
#[inline(always)]
fn log_normal(x: __m512, b: &Base, extra: Option<__m512>) -> __m512 {
    // SAFETY: called only under `run`, whose target features (and the CPU) have
    // AVX-512F; the intrinsics here touch no memory but the tables they load.
    unsafe {
        let ix = _mm512_castps_si512(x);
        let tmp = _mm512_sub_epi32(ix, _mm512_set1_epi32(LOG_OFF as i32));
        let i = _mm512_srli_epi32::<19>(tmp);
        let kf = _mm512_cvtepi32_ps(_mm512_srai_epi32::<23>(tmp));
        let top = _mm512_set1_epi32(0xff80_0000_u32 as i32);
        let z = _mm512_castsi512_ps(_mm512_sub_epi32(ix, _mm512_and_si512(tmp, top)));
        // r = z/c − 1 rounded once. (Carried as an exact pair, as `avx512_f64.rs` does, and
        // the polynomial fed `r + r_lo`, the worst cases drop to 0.53 ulp for 15–22% more
        // time; see the file's head.)
        let rp = _mm512_fmadd_ps(z, look(&LOG_INVC, i), splat(-1.0));
        let r = rp;
        let w = _mm512_fmadd_ps(kf, splat(b.l2.0), look(b.c_hi, i));
        let lo = _mm512_fmadd_ps(kf, splat(b.l2.1), look(b.c_lo, i));
        let t = r;
        let hi = _mm512_add_ps(w, t);
        let lo = match extra {
            Some(e) => _mm512_add_ps(lo, e),
            None => lo,
        };
        let lo = _mm512_add_ps(lo, _mm512_add_ps(_mm512_sub_ps(w, hi), t));
        let q = _mm512_fmadd_ps(splat(b.p[3]), rp, splat(b.p[2]));
        let q = _mm512_fmadd_ps(q, rp, splat(b.p[1]));
        let q = _mm512_fmadd_ps(q, rp, splat(b.p[0]));
        _mm512_add_ps(hi, _mm512_fmadd_ps(_mm512_mul_ps(rp, rp), q, lo))
    }
}

/// The constants of [`log_fast`] for one base: `log_b c` tables, `log_b 2` as a high part
/// (few bits: `k·hi` is exact) and a low part, `a0 = 1/ln b` as a high and a low part, `Q`.
struct FastBase {
    t_hi: &'static [f32; 16],
    t_lo: &'static [f32; 16],
    l2: (f32, f32),
    a0: (f32, f32),
    q: &'static [f32; 4],
}

const LN_FAST: FastBase = FastBase {
    t_hi: &LNF_T_HI,
    t_lo: &LNF_T_LO,
    l2: (f32::from_bits(0x3f31_7200), f32::from_bits(0x35bf_be8e)),
    a0: LNF_A0,
    q: &LNF_Q,
};
const LOG2_FAST: FastBase = FastBase {
    t_hi: &LOG2F_T_HI,
    t_lo: &LOG2F_T_LO,
    l2: (1.0, 0.0),
    a0: LOG2F_A0,
    q: &LOG2F_Q,
};
const LOG10_FAST: FastBase = FastBase {
    t_hi: &LOG10F_T_HI,
    t_lo: &LOG10F_T_LO,
    l2: (f32::from_bits(0x3e9a_2000), f32::from_bits(0x369a_84fc)),
    a0: LOG10F_A0,
    q: &LOG10F_Q,
};

/// `log_b x` in each lane: `x = 2ᵉ·m` by `vgetexpps`/`vgetmantps` (`m` in `[0.75, 1.5)`), `r = m/c − 1`
/// rounded once (exact where `c = 1`), `hi = e·log_b 2 + log_b c` exact, and `log_b x = hi +
/// (a0·r + (r²·Q(r) + (a0_lo·r + lo)))` with two roundings that matter: next to 1, where
/// `hi` and `lo` are 0, the result is one fused multiply-add of the exact `a0·r` (the form
/// of the generated tables above). The special inputs need no second pass: `vgetmantps`
/// gives NaN for a negative `x` (`−0` excepted) and NaN for NaN, `vgetexpps` −∞ for ±0 and
/// +∞ for +∞ (so `−∞`, `+∞` come out of the sums), subnormals are normalised by both.
/// Seventeen vector operations where the integer decomposition of [`log_normal`] and the
/// rare-lane check took twenty-nine.
#[inline(always)]
fn log_fast(x: __m512, b: &FastBase) -> __m512 {
    // SAFETY: called only under `run`, whose target features (and the CPU) have
    // AVX-512F; the intrinsics here touch no memory but the tables they load.
    unsafe {
        let m = _mm512_getmant_ps::<_MM_MANT_NORM_P75_1P5, _MM_MANT_SIGN_NAN>(x);
        let e = _mm512_getexp_ps(x);
        // `vpermps` reads the low four bits of each index lane.
        let i = _mm512_srli_epi32::<19>(_mm512_castps_si512(m));
        let r = _mm512_fmadd_ps(m, look(&LOGF_INVC, i), splat(-1.0));
        let hi = _mm512_fmadd_ps(e, splat(b.l2.0), look(b.t_hi, i));
        let lo = if b.l2.1 == 0.0 {
            look(b.t_lo, i)
        } else {
            _mm512_fmadd_ps(e, splat(b.l2.1), look(b.t_lo, i))
        };
        let r2 = _mm512_mul_ps(r, r);
        let q = _mm512_fmadd_ps(splat(b.q[3]), r, splat(b.q[2]));
        let q = _mm512_fmadd_ps(q, r, splat(b.q[1]));
        let q = _mm512_fmadd_ps(q, r, splat(b.q[0]));
        // (ln: `a0` is 1, no low part: `r` joins last, exactly.)
        let p = if b.a0.1 == 0.0 {
            _mm512_add_ps(r, _mm512_fmadd_ps(r2, q, lo))
        } else {
            let t = _mm512_fmadd_ps(r, splat(b.a0.1), lo);
            _mm512_fmadd_ps(r, splat(b.a0.0), _mm512_fmadd_ps(r2, q, t))
        };
        _mm512_add_ps(hi, p)
    }
}

/// Which function a run computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Func {
    Exp,
    Exp2,
    Ln,
    Log2,
    Log10,
    Ln1p,
    Expm1,
    Tanh,
    Sinh,
    Cosh,
    Asinh,
    Acosh,
    Atanh,
    Sin,
    Cos,
    Tan,
    Atan,
    Asin,
    Acos,
    Sigmoid,
    Erf,
    Gelu,
}

/// `v` with the lanes in `rare` replaced by `scalar` of `x`'s lanes (the portable
/// function, for the inputs a kernel's fast form does not cover).
#[inline(always)]
fn fix_rare(x: __m512, v: __m512, rare: __mmask16, scalar: fn(f32) -> f32) -> __m512 {
    if rare == 0 {
        return v;
    }
    let (mut xs, mut vs) = ([0.0f32; 16], [0.0f32; 16]);
    // SAFETY: AVX-512F (see `run`); the stores and the load use local arrays of 16.
    unsafe {
        _mm512_storeu_ps(xs.as_mut_ptr(), x);
        _mm512_storeu_ps(vs.as_mut_ptr(), v);
    }
    for (k, (o, &xk)) in vs.iter_mut().zip(&xs).enumerate() {
        if rare & (1 << k) != 0 {
            *o = scalar(xk);
        }
    }
    // SAFETY: as above.
    unsafe { _mm512_loadu_ps(vs.as_ptr()) }
}

/// `ln(1 + x)` in each lane: `u = 1 + x` rounded, what the rounding lost (`c`, exact by
/// the two orders of Fast2Sum, chosen by `|x| ≤ 1`) entering as `c/u` in the logarithm's low
/// word, so it is rounded once with the rest. `|x|` below half an ulp of 1 is `x` itself
/// (±0 keeps its sign); `u` not positive, normal and finite (`x ≤ −1`, infinite, NaN) by
/// the portable function.
#[inline(always)]
fn ln_1p(x: __m512) -> __m512 {
    // SAFETY: called only under `run`, whose target features (and the CPU) have AVX-512F
    // and DQ; no memory is touched.
    unsafe {
        let one = splat(1.0);
        let u = _mm512_add_ps(one, x);
        let ax = _mm512_abs_ps(x);
        let small = _mm512_cmp_ps_mask::<_CMP_LE_OQ>(ax, one);
        let c_small = _mm512_add_ps(_mm512_sub_ps(one, u), x);
        let c_big = _mm512_add_ps(_mm512_sub_ps(x, u), one);
        let c = _mm512_mask_blend_ps(small, c_big, c_small);
        let v = log_normal(u, &LN, Some(_mm512_div_ps(c, u)));
        let tiny = _mm512_cmp_ps_mask::<_CMP_LT_OQ>(ax, splat(5.960_464_5e-8));
        let v = _mm512_mask_blend_ps(tiny, v, x);
        let rare: __mmask16 = _mm512_cmpge_epu32_mask(
            _mm512_sub_epi32(_mm512_castps_si512(u), _mm512_set1_epi32(0x0080_0000)),
            _mm512_set1_epi32(0x7f00_0000),
        ) & !tiny;
        fix_rare(x, v, rare, f32_math::ln_1p)
    }
}

/// `√(mh + ml)` as a rounded root and its correction (one Newton step on the pair).
#[inline(always)]
fn sqrt_pair(mh: __m512, ml: __m512) -> (__m512, __m512) {
    // SAFETY: AVX-512F (see `run`); no memory is touched.
    unsafe {
        let sh = _mm512_sqrt_ps(mh);
        let res = _mm512_add_ps(_mm512_fnmadd_ps(sh, sh, mh), ml);
        // (At mh = 0 the correction is 0/MIN_POSITIVE, not 0/0.)
        let den = _mm512_max_ps(_mm512_add_ps(sh, sh), splat(f32::MIN_POSITIVE));
        (sh, _mm512_div_ps(res, den))
    }
}

/// `ln(uh + ul)` for `uh ≥ ul`'s magnitude, positive normal `uh`: `ul/uh` enters the
/// logarithm's low word, so the pair is rounded once.
#[inline(always)]
fn ln_pair(uh: __m512, ul: __m512) -> __m512 {
    // SAFETY: AVX-512F (see `run`); no memory is touched.
    log_normal(uh, &LN, Some(unsafe { _mm512_div_ps(ul, uh) }))
}

/// `asinh x` in each lane: `ln(a + √(a² + 1))` for `a = |x|`, every step carried as a
/// pair (`a² + 1` and its error by fma, the root with its Newton correction, the sum by
/// Fast2Sum), so next to 0 (where the argument is `1 + a`) the logarithm sees the exact
/// argument and the result keeps its relative precision (±0 and subnormals come out as
/// `x`). Beyond `a = 2⁶⁰` (where `a²` would overflow), infinities and NaN: the portable
/// function. The sign is `x`'s.
#[inline(always)]
fn asinh(x: __m512) -> __m512 {
    // SAFETY: AVX-512F and DQ (see `run`); no memory is touched.
    unsafe {
        let one = splat(1.0);
        let (a, sign) = abs_sign(x);
        // a² + 1 = mh + ml: mh rounded once by fma, 1 − mh exact (mh ≥ 1), so ml is the
        // rounding error, itself rounded once.
        let mh = _mm512_fmadd_ps(a, a, one);
        let ml = _mm512_fmadd_ps(a, a, _mm512_sub_ps(one, mh));
        let (sh, sl) = sqrt_pair(mh, ml);
        let uh = _mm512_add_ps(a, sh);
        let ul = _mm512_add_ps(_mm512_add_ps(_mm512_sub_ps(sh, uh), a), sl);
        let v = _mm512_or_ps(ln_pair(uh, ul), sign);
        let rare = !_mm512_cmp_ps_mask::<_CMP_LE_OQ>(a, splat(BIG));
        fix_rare(x, v, rare, f32_math::asinh)
    }
}

/// `2⁶⁰`: below it `x²` does not overflow.
const BIG: f32 = f32::from_bits(0x5d80_0000);

/// `acosh x` in each lane: `ln(x + √(x² − 1))` with the same pairs as [`asinh`] (`x² − 1`
/// by fma is the exact `(x − 1)(x + 1)` rounded once, so next to 1 the root keeps its
/// precision). `x` below 1 or beyond `2⁶⁰`, infinities and NaN: the portable function.
#[inline(always)]
fn acosh(x: __m512) -> __m512 {
    // SAFETY: AVX-512F and DQ (see `run`); no memory is touched.
    unsafe {
        let one = splat(1.0);
        // x² − 1 = mh + ml: mh rounded once by fma; ml from x² = p + pe (exact), where
        // p − 1 and then that minus mh are exact (Sterbenz; for p beyond 2²⁴ the 1 is
        // below mh's last bit anyway).
        let mh = _mm512_fmsub_ps(x, x, one);
        let p = _mm512_mul_ps(x, x);
        let pe = _mm512_fmsub_ps(x, x, p);
        let ml = _mm512_add_ps(_mm512_sub_ps(_mm512_sub_ps(p, one), mh), pe);
        let (sh, sl) = sqrt_pair(mh, ml);
        let uh = _mm512_add_ps(x, sh);
        let ul = _mm512_add_ps(_mm512_add_ps(_mm512_sub_ps(x, uh), sh), sl);
        let v = ln_pair(uh, ul);
        let ok = _mm512_cmp_ps_mask::<_CMP_GE_OQ>(x, one)
            & _mm512_cmp_ps_mask::<_CMP_LE_OQ>(x, splat(BIG));
        fix_rare(x, v, !ok, f32_math::acosh)
    }
}

/// `atanh x` in each lane: `ln((1 + a)/(1 − a))/2` for `a = |x|`, numerator and
/// denominator as exact pairs (Fast2Sum), the quotient rounded and its residual (fma)
/// carried into the logarithm's low word; next to 0 the argument is `1 + 2a` and the
/// result keeps its relative precision. `a ≥ 1` and NaN: the portable function. The sign
/// is `x`'s.
#[inline(always)]
fn atanh(x: __m512) -> __m512 {
    // SAFETY: AVX-512F and DQ (see `run`); no memory is touched.
    unsafe {
        let one = splat(1.0);
        let (a, sign) = abs_sign(x);
        let nh = _mm512_add_ps(one, a);
        let nl = _mm512_add_ps(_mm512_sub_ps(one, nh), a);
        let dh = _mm512_sub_ps(one, a);
        let dl = _mm512_sub_ps(_mm512_sub_ps(one, dh), a);
        let qh = _mm512_div_ps(nh, dh);
        let res = _mm512_add_ps(_mm512_fnmadd_ps(qh, dh, nh), nl);
        let res = _mm512_fnmadd_ps(qh, dl, res);
        let ql = _mm512_div_ps(res, dh);
        let v = _mm512_mul_ps(ln_pair(qh, ql), splat(0.5));
        let v = _mm512_or_ps(v, sign);
        let rare = !_mm512_cmp_ps_mask::<_CMP_LT_OQ>(a, one);
        fix_rare(x, v, rare, f32_math::atanh)
    }
}

/// `a = (hi + lo) + k·π/2` for `0 ≤ a ≤ 12867` (`f32_math::reduce_f32`'s four parts of
/// π/2, whose products and first differences are exact, so fusing them changes nothing),
/// with `k`'s low bits in an integer register; `k` rounded once by an fma (it may differ
/// from the portable form's at a tie, where either remainder is within `π/4` and a
/// rounding).
#[inline(always)]
fn reduce_pio2(a: __m512) -> (__m512, __m512, __m512i) {
    // SAFETY: AVX-512F (see `run`); no memory is touched.
    unsafe {
        let t = _mm512_fmadd_ps(a, splat(std::f32::consts::FRAC_2_PI), splat(MAGIC));
        let kf = _mm512_sub_ps(t, splat(MAGIC));
        let r = _mm512_fnmadd_ps(kf, splat(f32_math::PIO2_F1), a);
        let r = _mm512_fnmadd_ps(kf, splat(f32_math::PIO2_F2), r);
        let e = _mm512_mul_ps(kf, splat(f32_math::PIO2_F3));
        let hi = _mm512_sub_ps(r, e);
        let lo = _mm512_fnmadd_ps(
            kf,
            splat(f32_math::PIO2_F4),
            _mm512_sub_ps(_mm512_sub_ps(r, hi), e),
        );
        (hi, lo, _mm512_castps_si512(t))
    }
}

/// `c[0] + z·(c[1] + z·(…))` (Horner, fused).
#[inline(always)]
fn poly<const N: usize>(z: __m512, c: [f32; N]) -> __m512 {
    // SAFETY: AVX-512F (see `run`); no memory is touched.
    unsafe {
        let mut q = splat(c[N - 1]);
        for &ck in c[..N - 1].iter().rev() {
            q = _mm512_fmadd_ps(q, z, splat(ck));
        }
        q
    }
}

/// `(sin t, cos t)` for `t = hi + lo`, `|t| ≤ π/4` (`f32_math::sincos_f32`, fused).
#[inline(always)]
fn sincos(hi: __m512, lo: __m512) -> (__m512, __m512) {
    // SAFETY: AVX-512F (see `run`); no memory is touched.
    unsafe {
        let one = splat(1.0);
        let z = _mm512_mul_ps(hi, hi);
        let s = _mm512_add_ps(
            hi,
            _mm512_fmadd_ps(_mm512_mul_ps(hi, z), poly(z, f32_math::SIN_S), lo),
        );
        let w = _mm512_mul_ps(z, splat(0.5));
        let h = _mm512_sub_ps(one, w);
        let cl = _mm512_fnmadd_ps(
            hi,
            lo,
            _mm512_mul_ps(_mm512_mul_ps(z, z), poly(z, f32_math::COS_C)),
        );
        let c = _mm512_add_ps(
            h,
            _mm512_add_ps(_mm512_sub_ps(_mm512_sub_ps(one, h), w), cl),
        );
        (s, c)
    }
}

/// Lanes where the circular functions take the portable form: `|x|` beyond
/// `f32_math::TRIG_F32_MAX`, infinities and NaN.
#[inline(always)]
fn trig_rare(ax: __m512) -> __mmask16 {
    // SAFETY: AVX-512F (see `run`); no memory is touched.
    unsafe { !_mm512_cmp_ps_mask::<_CMP_LE_OQ>(ax, splat(f32_math::TRIG_F32_MAX)) }
}

/// `v` with the sign bit flipped where `bits` (bit 1 of each lane) is set, and the sign
/// bits `sign` xored in.
#[inline(always)]
fn flip_quadrant(v: __m512, bits: __m512i, sign: __m512) -> __m512 {
    // SAFETY: AVX-512F (see `run`); no memory is touched.
    unsafe {
        let q = _mm512_slli_epi32::<30>(_mm512_and_si512(bits, _mm512_set1_epi32(2)));
        _mm512_xor_ps(_mm512_xor_ps(v, _mm512_castsi512_ps(q)), sign)
    }
}

/// The shared part of [`sin`] and [`cos`]: `|x|`, `x`'s sign, `(sin t, cos t)` of the
/// reduced argument, the quadrant `k` and its odd lanes.
#[inline(always)]
fn sin_cos_parts(x: __m512) -> (__m512, __m512, __m512, __m512, __m512i, __mmask16) {
    let (ax, sign) = abs_sign(x);
    let (hi, lo, k) = reduce_pio2(ax);
    let (s, c) = sincos(hi, lo);
    // SAFETY: AVX-512F (see `run`); no memory is touched.
    let odd = unsafe { _mm512_test_epi32_mask(k, _mm512_set1_epi32(1)) };
    (ax, sign, s, c, k, odd)
}

/// `sin x` in each lane: the reduction by π/2, the sine or cosine polynomial by the
/// quadrant, the sign by the quadrant and `x`'s (±0 keep theirs); `|x|` beyond 12867,
/// infinities and NaN by the portable function.
#[inline(always)]
fn sin(x: __m512) -> __m512 {
    let (ax, sign, s, c, k, odd) = sin_cos_parts(x);
    // SAFETY: AVX-512F (see `run`); no memory is touched.
    let v = flip_quadrant(unsafe { _mm512_mask_blend_ps(odd, s, c) }, k, sign);
    fix_rare(x, v, trig_rare(ax), f32_math::sin)
}

/// `cos x` in each lane (see [`sin`]; an even function, the quadrant alone signs it).
#[inline(always)]
fn cos(x: __m512) -> __m512 {
    let (ax, _, s, c, k, odd) = sin_cos_parts(x);
    // SAFETY: AVX-512F (see `run`); no memory is touched.
    let v = unsafe {
        let k1 = _mm512_add_epi32(k, _mm512_set1_epi32(1));
        flip_quadrant(_mm512_mask_blend_ps(odd, c, s), k1, _mm512_setzero_ps())
    };
    fix_rare(x, v, trig_rare(ax), f32_math::cos)
}

/// `tan x` in each lane (`f32_math::tan`'s fast form, fused): `tan(hi + lo) = y + yl`
/// from Cephes' polynomial, in odd quadrants `−1/y` corrected for `y`'s rounding.
#[inline(always)]
fn tan(x: __m512) -> __m512 {
    // SAFETY: AVX-512F (see `run`); no memory is touched.
    unsafe {
        let (ax, sign) = abs_sign(x);
        let (hi, lo, k) = reduce_pio2(ax);
        let z = _mm512_mul_ps(hi, hi);
        let yl = _mm512_fmadd_ps(z, _mm512_fmadd_ps(hi, poly(z, f32_math::TAN_P), lo), lo);
        let y = _mm512_add_ps(hi, yl);
        let e = _mm512_sub_ps(yl, _mm512_sub_ps(y, hi));
        let q = _mm512_div_ps(splat(-1.0), y);
        let cot = _mm512_fmadd_ps(_mm512_mul_ps(q, q), e, q);
        let odd = _mm512_test_epi32_mask(k, _mm512_set1_epi32(1));
        let v = _mm512_xor_ps(_mm512_mask_blend_ps(odd, y, cot), sign);
        fix_rare(x, v, trig_rare(ax), f32_math::tan)
    }
}

/// A table of up to sixteen entries (the rest zero) as one register, looked up by `idx`.
#[inline(always)]
fn look16<const N: usize>(t: [f32; N], idx: __m512i) -> __m512 {
    let mut full = [0.0f32; 16];
    full[..N].copy_from_slice(&t);
    // SAFETY: AVX-512F (see `run`); `full` is a local array of sixteen float32.
    unsafe { _mm512_permutexvar_ps(idx, _mm512_loadu_ps(full.as_ptr())) }
}

/// `atan x` in each lane: `f32_math::atan`'s four intervals (`|x|` below 7/16, 11/16,
/// 39/16, beyond), the interval's index from three compares, its numerator `a·A + B` and
/// denominator `a·C + D` (one fma each; exact where the portable form's are) and `atan c`
/// (high, low) from sixteen-entry tables, one division, the polynomial fused. NaN passes.
#[inline(always)]
fn atan(x: __m512) -> __m512 {
    // SAFETY: AVX-512F and DQ (see `run`); no memory is touched but local tables.
    unsafe {
        let (a, sign) = abs_sign(x);
        let mut idx = _mm512_setzero_si512();
        for edge in [0.4375, 0.6875, 2.4375] {
            let m = _mm512_cmp_ps_mask::<_CMP_GE_OQ>(a, splat(edge));
            idx = _mm512_mask_add_epi32(idx, m, idx, _mm512_set1_epi32(1));
        }
        let (h, o, i) = (f32_math::ATAN_HALF, f32_math::ATAN_ONE, f32_math::ATAN_INF);
        // (The last interval's numerator is −1: `a` capped so that ∞·0 is not NaN.)
        let num = _mm512_fmadd_ps(
            _mm512_min_ps(splat(1e30), a),
            look16([1.0, 1.0, 1.0, 0.0], idx),
            look16([0.0, -0.5, -1.0, -1.0], idx),
        );
        let den = _mm512_fmadd_ps(
            a,
            look16([0.0, 0.5, 1.0, 1.0], idx),
            look16([1.0, 1.0, 1.0, 0.0], idx),
        );
        let yh = look16([0.0, h.0, o.0, i.0], idx);
        let yl = look16([0.0, h.1, o.1, i.1], idx);
        let u = _mm512_div_ps(num, den);
        let z = _mm512_mul_ps(u, u);
        let p = _mm512_fmadd_ps(_mm512_mul_ps(u, z), poly(z, f32_math::ATAN_P), yl);
        let v = _mm512_add_ps(yh, _mm512_add_ps(u, p));
        _mm512_xor_ps(v, sign)
    }
}

/// The shared part of [`asin`] and [`acos`], for `a = |x|`: `(s, q, big)` with
/// `asin a = s + q` where `a ≤ ½` (`s = a`, `q = s·z·P(z)`, `z = a²`) and `asin a =
/// π/2 − 2·(s + q)` beyond (`big`), where `s` is `√z` for `z = (1 − a)/2` (exact) to within
/// about an ulp, from `vrsqrt14ps` and one Newton step (no square root instruction), and
/// `q` carries the root's residual `(z − s²)/(2s)` (an fma, and the reciprocal estimate:
/// the residual is below 2⁻²³ of `s`) as well as `s·z·P(z)` (`f32_math::asin`'s
/// polynomial). `a > 1` gives NaN (the root of a negative number), as does NaN.
#[inline(always)]
fn asin_parts(a: __m512) -> (__m512, __m512, __mmask16) {
    // SAFETY: AVX-512F (see `run`); no memory is touched.
    unsafe {
        let half = splat(0.5);
        let big = _mm512_cmp_ps_mask::<_CMP_GT_OQ>(a, half);
        let z = _mm512_mask_mul_ps(_mm512_fnmadd_ps(a, half, half), !big, a, a);
        // (The tiny addend keeps z = 0, at |x| = 1, from giving 0·∞; every nonzero z of
        // a big lane is at least 2⁻²⁵, which it leaves unchanged.)
        let y = _mm512_rsqrt14_ps(_mm512_add_ps(z, splat(1e-30)));
        let g = _mm512_mul_ps(z, y);
        let h = _mm512_mul_ps(y, half);
        let root = _mm512_fmadd_ps(g, _mm512_fnmadd_ps(g, h, half), g);
        let s = _mm512_mask_blend_ps(big, a, root);
        let corr = _mm512_maskz_mul_ps(big, _mm512_fnmadd_ps(s, s, z), h);
        let q = _mm512_fmadd_ps(_mm512_mul_ps(s, z), poly(z, f32_math::ASIN_P), corr);
        (s, q, big)
    }
}

/// `bh + (m·s + (m·q + bl))` with the first sum error-free (Fast2Sum: `|bh| ≥ |m·s|` or
/// `bh = 0`), rounded once at the end.
#[inline(always)]
fn asin_sum(bh: __m512, ms: __m512, mq_bl: __m512) -> __m512 {
    // SAFETY: AVX-512F (see `run`); no memory is touched.
    unsafe {
        let h = _mm512_add_ps(bh, ms);
        let err = _mm512_add_ps(_mm512_sub_ps(bh, h), ms);
        _mm512_add_ps(h, _mm512_add_ps(err, mq_bl))
    }
}

/// `asin x` in each lane (see [`asin_parts`]): `s + q`, or `π/2 − 2s − 2q` with `π/2`
/// as a high and a low part and the first difference exact. The sign is `x`'s.
#[inline(always)]
fn asin(x: __m512) -> __m512 {
    // SAFETY: AVX-512F (see `run`); no memory is touched.
    unsafe {
        let (a, sign) = abs_sign(x);
        let (s, q, big) = asin_parts(a);
        let (ph, pl) = f32_math::ATAN_INF;
        let ms = _mm512_mask_mul_ps(s, big, s, splat(-2.0));
        let mq = _mm512_mask_fmadd_ps(q, big, splat(-2.0), splat(pl));
        let v = asin_sum(_mm512_maskz_mov_ps(big, splat(ph)), ms, mq);
        _mm512_or_ps(v, sign)
    }
}

/// `acos x` in each lane (see [`asin_parts`]): `π/2 − asin x` below ½ in magnitude,
/// `2·asin √((1 − x)/2)` above ½, `π − 2·asin √((1 + x)/2)` below −½; per lane a base
/// (high and low part) and a factor from four-entry tables.
#[inline(always)]
fn acos(x: __m512) -> __m512 {
    // SAFETY: AVX-512F (see `run`); no memory is touched but local tables.
    unsafe {
        let a = _mm512_abs_ps(x);
        let (s, q, big) = asin_parts(a);
        let neg = _mm512_cmp_ps_mask::<_CMP_LT_OQ>(x, splat(0.0));
        // 0: |x| ≤ ½, x ≥ 0; 1: |x| ≤ ½, x < 0; 2: x > ½; 3: x < −½.
        let one = _mm512_set1_epi32(1);
        let idx = _mm512_maskz_mov_epi32(neg, one);
        let idx = _mm512_mask_add_epi32(idx, big, idx, _mm512_set1_epi32(2));
        let (ph, pl) = f32_math::ATAN_INF;
        let (pih, pil) = f32_math::PI_PAIR;
        let m = look16([-1.0, 1.0, 2.0, -2.0], idx);
        let bh = look16([ph, ph, 0.0, pih], idx);
        let bl = look16([pl, pl, 0.0, pil], idx);
        asin_sum(bh, _mm512_mul_ps(m, s), _mm512_fmadd_ps(m, q, bl))
    }
}

/// `o[k] = g(x[k])` for the `n` elements of `run`, 16 lanes at a time, the tail through
/// masked loads and stores (so every element goes through the same vector code). A macro,
/// so that `g` is inlined into the loop (a function passed as a value was called, not
/// inlined, and compiled without `run`'s target features).
macro_rules! run_with {
    ($o:expr, $x:expr, $n:expr, |$v:ident| $g:expr) => {{
        let (o, x, n) = ($o, $x, $n);
        let mut k = 0;
        while k + 16 <= n {
            // SAFETY: elements `k..k + 16` are inside both runs (`run`'s caller); each
            // group is read before it is written, so identical runs are fine.
            unsafe {
                let $v = _mm512_loadu_ps(x.add(k));
                _mm512_storeu_ps(o.add(k), $g);
            }
            k += 16;
        }
        if k < n {
            let m: __mmask16 = ((1u32 << (n - k)) - 1) as u16;
            // SAFETY: masked lanes are neither read nor written; the rest are inside the runs.
            unsafe {
                let $v = _mm512_maskz_loadu_ps(m, x.add(k));
                _mm512_mask_storeu_ps(o.add(k), m, $g);
            }
        }
    }};
}

/// `o[k] = f(x[k])` for `n` elements (one loop per function, each inlined).
///
/// # Safety
/// The CPU has AVX-512F; `x` is readable and `o` writable for `n` float32 (unaligned
/// allowed), disjoint or identical.
#[target_feature(enable = "avx512f,avx512dq")]
pub(crate) unsafe fn run(f: Func, o: *mut f32, x: *const f32, n: usize) {
    match f {
        Func::Exp => run_with!(o, x, n, |v| exp(v)),
        Func::Exp2 => run_with!(o, x, n, |v| exp2(v)),
        Func::Ln => run_with!(o, x, n, |v| log_fast(v, &LN_FAST)),
        Func::Log2 => run_with!(o, x, n, |v| log_fast(v, &LOG2_FAST)),
        Func::Log10 => run_with!(o, x, n, |v| log_fast(v, &LOG10_FAST)),
        Func::Ln1p => run_with!(o, x, n, |v| ln_1p(v)),
        Func::Expm1 => run_with!(o, x, n, |v| expm1(v)),
        Func::Tanh => run_with!(o, x, n, |v| tanh(v)),
        Func::Sinh => run_with!(o, x, n, |v| sinh(v)),
        Func::Cosh => run_with!(o, x, n, |v| cosh(v)),
        Func::Asinh => run_with!(o, x, n, |v| asinh(v)),
        Func::Acosh => run_with!(o, x, n, |v| acosh(v)),
        Func::Atanh => run_with!(o, x, n, |v| atanh(v)),
        Func::Sin => run_with!(o, x, n, |v| sin(v)),
        Func::Cos => run_with!(o, x, n, |v| cos(v)),
        Func::Tan => run_with!(o, x, n, |v| tan(v)),
        Func::Atan => run_with!(o, x, n, |v| atan(v)),
        Func::Asin => run_with!(o, x, n, |v| asin(v)),
        Func::Acos => run_with!(o, x, n, |v| acos(v)),
        Func::Sigmoid => run_with!(o, x, n, |v| sigmoid(v)),
        Func::Erf => run_with!(o, x, n, |v| erf(v)),
        Func::Gelu => run_with!(o, x, n, |v| gelu(v)),
    }
}

/// `o[k] = atan2(y[k], x[k])` for `n` elements: `f32_math::atan2`'s operations in
/// sixteen lanes (the same bits), the octant's base by one permute from its table.
///
/// # Safety
/// The CPU has AVX-512F and DQ; `y`, `x` are readable and `o` writable for `n` float32.
#[target_feature(enable = "avx512f,avx512dq")]
pub(crate) unsafe fn atan2_run(o: *mut f32, y: *const f32, x: *const f32, n: usize) {
    let (hi, lo) = f32_math::ATAN2_BASE;
    // SAFETY: AVX-512F and DQ (this function's features); the tables are local arrays of
    // sixteen float32.
    let (hi, lo) = unsafe { (_mm512_loadu_ps(hi.as_ptr()), _mm512_loadu_ps(lo.as_ptr())) };
    let f = |yv: __m512, xv: __m512| -> __m512 {
        {
            let inf = splat(f32::INFINITY);
            let (mut ay, mut ax) = (_mm512_abs_ps(yv), _mm512_abs_ps(xv));
            let both = _mm512_cmp_ps_mask::<_CMP_EQ_OQ>(ay, inf)
                & _mm512_cmp_ps_mask::<_CMP_EQ_OQ>(ax, inf);
            ay = _mm512_mask_blend_ps(both, ay, splat(1.0));
            ax = _mm512_mask_blend_ps(both, ax, splat(1.0));
            let swap = _mm512_cmp_ps_mask::<_CMP_GT_OQ>(ay, ax);
            let num = _mm512_mask_blend_ps(swap, ay, ax);
            let den = _mm512_mask_blend_ps(swap, ax, ay);
            let big = _mm512_cmp_ps_mask::<_CMP_GE_OQ>(den, splat(f32_math::ATAN2_BIG));
            let small = _mm512_cmp_ps_mask::<_CMP_LT_OQ>(den, splat(f32_math::ATAN2_SMALL));
            let scale = _mm512_mask_blend_ps(big, splat(1.0), splat(0.5));
            let scale = _mm512_mask_blend_ps(small, scale, splat(f32_math::ATAN2_UP));
            let (num, den) = (_mm512_mul_ps(num, scale), _mm512_mul_ps(den, scale));
            let m1 = _mm512_cmp_ps_mask::<_CMP_GT_OQ>(num, _mm512_mul_ps(splat(0.4375), den));
            let m2 = _mm512_cmp_ps_mask::<_CMP_GT_OQ>(num, _mm512_mul_ps(splat(0.6875), den));
            let one = _mm512_set1_epi32(1);
            let i = _mm512_add_epi32(
                _mm512_maskz_mov_epi32(m1, one),
                _mm512_maskz_mov_epi32(m2, one),
            );
            let c = _mm512_mul_ps(splat(0.5), _mm512_cvtepi32_ps(i));
            // (Exact, as the portable form's products and differences: fusing changes
            // nothing.)
            let nn = _mm512_fnmadd_ps(c, den, num);
            let cn = _mm512_mul_ps(c, num);
            let d = _mm512_add_ps(den, cn);
            let e = _mm512_add_ps(_mm512_sub_ps(den, d), cn);
            let u = _mm512_div_ps(nn, d);
            let r = _mm512_fnmadd_ps(u, d, nn);
            let ul = _mm512_div_ps(_mm512_fnmadd_ps(u, e, r), d);
            let none = _mm512_cmp_ps_mask::<_CMP_EQ_OQ>(num, splat(0.0))
                | _mm512_cmp_ps_mask::<_CMP_EQ_OQ>(den, inf);
            let u = _mm512_mask_blend_ps(none, u, splat(0.0));
            let ul = _mm512_mask_blend_ps(none, ul, splat(0.0));
            let z = _mm512_mul_ps(u, u);
            let q = _mm512_fmadd_ps(_mm512_mul_ps(u, z), poly(z, f32_math::ATAN_P), ul);
            let neg = _mm512_movepi32_mask(_mm512_castps_si512(xv));
            let oct = _mm512_add_epi32(
                _mm512_maskz_mov_epi32(swap, one),
                _mm512_maskz_mov_epi32(neg, _mm512_set1_epi32(2)),
            );
            let k = _mm512_add_epi32(_mm512_slli_epi32::<2>(oct), i);
            let flip = _mm512_maskz_mov_ps(swap ^ neg, splat(-0.0));
            let (u, q) = (_mm512_xor_ps(u, flip), _mm512_xor_ps(q, flip));
            let bh = _mm512_permutexvar_ps(k, hi);
            let bl = _mm512_permutexvar_ps(k, lo);
            let sh = _mm512_add_ps(bh, u);
            let sl = _mm512_add_ps(_mm512_sub_ps(bh, sh), u);
            let v = _mm512_add_ps(sh, _mm512_add_ps(sl, _mm512_add_ps(bl, q)));
            let sign = _mm512_and_ps(yv, splat(-0.0));
            let v = _mm512_or_ps(_mm512_abs_ps(v), sign);
            let nan = _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(xv, yv);
            _mm512_mask_blend_ps(nan, v, splat(f32::NAN))
        }
    };
    let mut k = 0;
    while k + 16 <= n {
        // SAFETY: elements `k..k + 16` are inside the three runs (caller's contract).
        unsafe {
            let v = f(_mm512_loadu_ps(y.add(k)), _mm512_loadu_ps(x.add(k)));
            _mm512_storeu_ps(o.add(k), v);
        }
        k += 16;
    }
    if k < n {
        let m: __mmask16 = ((1u32 << (n - k)) - 1) as u16;
        // SAFETY: masked lanes are neither read nor written; the rest are inside the runs.
        unsafe {
            let v = f(
                _mm512_maskz_loadu_ps(m, y.add(k)),
                _mm512_maskz_loadu_ps(m, x.add(k)),
            );
            _mm512_mask_storeu_ps(o.add(k), m, v);
        }
    }
}
