//! AVX-512 kernels for the float64 exponentials and logarithms (`exp exp2 expm1 log
//! log2 log10 log1p`), the hyperbolic functions and their inverses (`tanh sinh cosh asinh
//! acosh atanh`), `atan`, `asin`, `acos` and `tan`, written with `std::arch` intrinsics: table-driven forms with fused
//! multiply-adds, which the portable functions of `f64_math.rs` cannot use (see
//! `mod.rs`). The block loops run them at the AVX-512 level through
//! [`Map1::run_avx512`](crate::kernel::elementwise_loops::Map1::run_avx512).
//!
//! **exp, exp2, expm1.** `x = (16k + j)·ln2/16 + r` with `|r| ≤ ln2/32`: `eˣ = 2ᵏ·2^(j/16)·eʳ`.
//! The sixteen `2^(j/16)` are a high and a low float64 (the index is the low four bits of
//! the rounded `16x/ln2`, a `vpermt2pd` lookup from two registers), `eʳ − 1 = r + r²/2 +
//! r³·Q(r)` with `Q` of degree 4 (a Chebyshev fit, error 2⁻⁴⁷ on the interval, 2⁻⁶² after
//! the factor r³), and `vscalefpd` applies `2ᵏ` with one rounding, subnormal results
//! included. Overflow, underflow, infinities and NaN fall out of clamping `x` first.
//! `expm1` is `(2ᵏ·T_hi − 1) + (2ᵏ·T_hi·p + 2ᵏ·T_lo·(1 + p))` with the subtraction's
//! error carried into the second sum (see [`expm1`]).
//!
//! **log, log2, log10.** `x = 2ᵏ·z` with `z` in `[0.672, 1.344)` (the exponent is taken
//! after subtracting an offset from the bits, so 1 sits mid-interval), `z` in one of
//! sixteen intervals with centre `c` and `r = z/c − 1` (`|r| ≤ 2⁻⁵`; the interval around 1
//! has `c = 1`, so results near `x = 1` keep their relative precision): `log_b x =
//! k·log_b 2 + log_b c + log_b(1 + r)`. `r` is carried as an exact pair (`z·(1/c)` and its
//! rounding error from an fma, then minus 1, exact): next to the interval around 1,
//! `log c` and `log(1 + r)` nearly cancel and a rounded `r` cost up to 0.7 ulp (log2 and
//! log10 reached 1.16). `log_b c` is a high part on a 2⁻⁴³ grid (so `k·log_b 2`'s high
//! part plus it is exact) and a low part; `ln(1 + r) = r − r²/2 + r³·P(r)` with `P` of
//! degree 7 (error 2⁻⁵⁰, 2⁻⁶⁰ after r²). The sum is formed as a high word and a carried
//! error, then rounded once. Zero, negative, subnormal, infinite and NaN inputs (one
//! unsigned compare of the bits) are recomputed by the portable function.
//!
//! **log1p.** `ln u` of `u = 1 + x` rounded, with what the rounding lost added as `c/u` to
//! the low word before the one rounding; `|x|` below half an ulp of 1 is `x`.
//!
//! **tanh, sinh, cosh** from the exponential's pieces (`eᵃ = (s + sl)(1 + p)`, `s` exact;
//! [`exp_pieces`]): `tanh` as `(e − 1)/(e + 1)` of `e = e^(2|x|)` with numerator and
//! denominator as exact pairs and the quotient corrected by its residual, an odd
//! polynomial below 1/8; `sinh` and `cosh` as `eᵃ/4 ± e⁻ᵃ/4` doubled (the quarter keeps the
//! pieces finite up to the overflow), `sinh` an odd polynomial below 1.
//!
//! **asinh, acosh, atanh** as one logarithm of an argument carried as a pair: `a + √(a² ±
//! 1)` (the square with its fma error, the root with a Newton correction) and `(1 + a)/(1
//! − a)` (exact sums, the quotient's residual); the pair's low part enters the
//! logarithm's low word, so next to 0 (and `acosh` next to 1) the result keeps its
//! relative precision. Out-of-domain, infinite, NaN and huge (`a²` overflowing) inputs:
//! the portable function.
//!
//! **asin, acos** on `s = |x|` up to ½ and `s = √((1 − |x|)/2)` beyond (`asin|x| = π/2 −
//! 2·asin s`): one polynomial of degree 12 in `s²` (no division, where fdlibm has a
//! rational function), the root from `vrsqrt14pd` and Newton steps (no square root
//! instruction) with its residual carried, the first difference from π/2 (or π) exact.
//!
//! **tan** reduced by π/2 in three float64 parts with fused multiply-adds (exact first
//! step, a two-sum, about 150 bits), then Cephes' rational function `y + y·z·P(z)/Q(z)`
//! with the product's error carried and, in odd quadrants, `−1/tan` corrected by its
//! residual (1.31 ms per 1M where the portable fdlibm form took 3.47 and NumPy's 1.45).
//! `|x| > 2²⁰`, infinities and NaN: the portable function.
//!
//! Accuracy against mpmath (`python/tests/test_vector_math.py`): measured worst `exp` 0.54
//! ulp, `exp2` 0.53, `log` 0.51, `log2` 0.52, `log10` 0.52, `log1p` 0.53, `expm1` 0.98
//! (`r`'s rounding error carried; `s·p` still rounds where `s − 1` and it nearly cancel),
//! `tanh` 0.55, `sinh` 0.75, `cosh` 0.87 (`e⁻ᵃ/4` uncorrected next to 0), `asinh` 0.51,
//! `acosh` 0.51, `atanh` 0.51, `atan` 0.76 (fdlibm's form, fused) over 40k points, `asin` 0.63 and `acos` 0.60 over
//! 280k (dense next to ½ and 1), `tan` 1.54 over 340k (dense next to multiples of π/2; the
//! worst next to π/4, where the rational function's rounding errors, about three ulps of
//! `R`, weigh a fifth of the result; fdlibm reflects above 0.6744 for its 0.68, at the
//! cost of a second form). The AVX-512 results are not bit-identical
//! to the portable level's (both are within the bounds).

use std::arch::x86_64::*;

use super::f64_math;

/// `1.5·2⁵²`: adding it rounds a float64 below 2⁵¹ in magnitude to an integer, which its
/// low bits then hold.
const MAGIC: f64 = 6_755_399_441_055_744.0;

/// `1.5·2⁴⁸`: adding it rounds a float64 below 2⁴⁷ in magnitude to a multiple of 1/16,
/// whose sixteenths its low four bits then hold — the exponentials' `k/16 = j/16 + ⌊k/16⌋`
/// in one step: the table index in the bits, and the power of two for `vscalef` (which
/// takes the floor) without a multiplication.
const MAGIC16: f64 = 422_212_465_065_984.0;

/// `1/ln2` (the exponentials' `16/ln2` over 16: the same bits but the exponent).
const LOG2E: f64 = f64::from_bits(0x3ff7_1547_652b_82fe);
/// `ln2` in two parts (`16·` the exponentials' `ln2/16` parts: the same bits but the
/// exponent, so `k16·EXP_LN2_HI` is `kf·(ln2/16)_hi`, exact where that was).
const EXP_LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fefa_39ef);
const EXP_LN2_LO: f64 = f64::from_bits(0x3c7a_bc9e_3b39_803f);

const EXP_Q: [f64; 5] = [
    f64::from_bits(0x3fc5555555555555),
    f64::from_bits(0x3fa55555555194d2),
    f64::from_bits(0x3f811111110f662c),
    f64::from_bits(0x3f56c17bb51f236d),
    f64::from_bits(0x3f2a01adfc1b2d66),
];

const EXP_T_HI: [f64; 16] = [
    f64::from_bits(0x3ff0000000000000),
    f64::from_bits(0x3ff0b5586cf9890f),
    f64::from_bits(0x3ff172b83c7d517b),
    f64::from_bits(0x3ff2387a6e756238),
    f64::from_bits(0x3ff306fe0a31b715),
    f64::from_bits(0x3ff3dea64c123422),
    f64::from_bits(0x3ff4bfdad5362a27),
    f64::from_bits(0x3ff5ab07dd485429),
    f64::from_bits(0x3ff6a09e667f3bcd),
    f64::from_bits(0x3ff7a11473eb0187),
    f64::from_bits(0x3ff8ace5422aa0db),
    f64::from_bits(0x3ff9c49182a3f090),
    f64::from_bits(0x3ffae89f995ad3ad),
    f64::from_bits(0x3ffc199bdd85529c),
    f64::from_bits(0x3ffd5818dcfba487),
    f64::from_bits(0x3ffea4afa2a490da),
];

const EXP_T_LO: [f64; 16] = [
    f64::from_bits(0x0000000000000000),
    f64::from_bits(0x3c98a62e4adc610b),
    f64::from_bits(0xbc819041b9d78a76),
    f64::from_bits(0x3c99b07eb6c70573),
    f64::from_bits(0x3c86f46ad23182e4),
    f64::from_bits(0x3c8ada0911f09ebc),
    f64::from_bits(0x3c7d4397afec42e2),
    f64::from_bits(0x3c96324c054647ad),
    f64::from_bits(0xbc9bdd3413b26456),
    f64::from_bits(0xbc841577ee04992f),
    f64::from_bits(0x3c96e9f156864b27),
    f64::from_bits(0x3c7c7c46b071f2be),
    f64::from_bits(0x3c97a1cd345dcc81),
    f64::from_bits(0x3c811065895048dd),
    f64::from_bits(0x3c82ed02d75b3707),
    f64::from_bits(0xbc9e9c23179c2893),
];

const LOG_OFF: u64 = 0x3fe5800000000000;
const LOG_INVC: [f64; 16] = [
    f64::from_bits(0x3ff745d1745d1746),
    f64::from_bits(0x3ff642c8590b2164),
    f64::from_bits(0x3ff5555555555555),
    f64::from_bits(0x3ff47ae147ae147b),
    f64::from_bits(0x3ff3b13b13b13b14),
    f64::from_bits(0x3ff2f684bda12f68),
    f64::from_bits(0x3ff2492492492492),
    f64::from_bits(0x3ff1a7b9611a7b96),
    f64::from_bits(0x3ff1111111111111),
    f64::from_bits(0x3ff0842108421084),
    f64::from_bits(0x3ff0000000000000),
    f64::from_bits(0x3fee1e1e1e1e1e1e),
    f64::from_bits(0x3fec71c71c71c71c),
    f64::from_bits(0x3feaf286bca1af28),
    f64::from_bits(0x3fe999999999999a),
    f64::from_bits(0x3fe8618618618618),
];

const LN_C_HI: [f64; 16] = [
    f64::from_bits(0xbfd7fafa3bd81800),
    f64::from_bits(0xbfd522ae0738a000),
    f64::from_bits(0xbfd269621134d800),
    f64::from_bits(0xbfcf991c6cb3b000),
    f64::from_bits(0xbfca93ed3c8ae000),
    f64::from_bits(0xbfc5bf406b544000),
    f64::from_bits(0xbfc1178e8227e000),
    f64::from_bits(0xbfb9335e5d594000),
    f64::from_bits(0xbfb08598b59e4000),
    f64::from_bits(0xbfa0415d89e74000),
    f64::from_bits(0x0000000000000000),
    f64::from_bits(0x3faf0a30c0118000),
    f64::from_bits(0x3fbe27076e2b0000),
    f64::from_bits(0x3fc5ff3070a79000),
    f64::from_bits(0x3fcc8ff7c79aa000),
    f64::from_bits(0x3fd1675cababa800),
];

const LN_C_LO: [f64; 16] = [
    f64::from_bits(0x3d271c90c812566a),
    f64::from_bits(0xbd2eba708164c759),
    f64::from_bits(0xbd2c8bc1df5bb3b6),
    f64::from_bits(0xbd1bd1ecca0cdf30),
    f64::from_bits(0x3d286a4350562169),
    f64::from_bits(0x3d128023eb68981c),
    f64::from_bits(0xbd21e778ce2d07f2),
    f64::from_bits(0xbd230f5c3abd47da),
    f64::from_bits(0x3d17e9dd7009902c),
    f64::from_bits(0xbd0101c05cf1d753),
    f64::from_bits(0x0000000000000000),
    f64::from_bits(0xbd2d579e83368e91),
    f64::from_bits(0xbd2a2c2c2af0003c),
    f64::from_bits(0x3d1eae439f105039),
    f64::from_bits(0xbd27814f689f8434),
    f64::from_bits(0xbd1f0fc63382a8f0),
];

const LN_P: [f64; 9] = [
    f64::from_bits(0xbfe0000000000000),
    f64::from_bits(0x3fd555555555554a),
    f64::from_bits(0xbfcfffffffffffeb),
    f64::from_bits(0x3fc9999999a5415c),
    f64::from_bits(0xbfc5555555600481),
    f64::from_bits(0x3fc24923a9363f54),
    f64::from_bits(0xbfbffffe54b093e0),
    f64::from_bits(0x3fbc7d6d6880307c),
    f64::from_bits(0xbfb9a44769a6c003),
];

const LOG2_C_HI: [f64; 16] = [
    f64::from_bits(0xbfe14c560fe68c00),
    f64::from_bits(0xbfde7df5fe538800),
    f64::from_bits(0xbfda8ff971810800),
    f64::from_bits(0xbfd6cb0f6865c800),
    f64::from_bits(0xbfd32bfee370f000),
    f64::from_bits(0xbfcf5fd8a9064000),
    f64::from_bits(0xbfc8a8980abfc000),
    f64::from_bits(0xbfc22dadc2ab3000),
    f64::from_bits(0xbfb7d60496cfc000),
    f64::from_bits(0xbfa77394c9d94000),
    f64::from_bits(0x0000000000000000),
    f64::from_bits(0x3fb663f6fac92000),
    f64::from_bits(0x3fc5c01a39fbd000),
    f64::from_bits(0x3fcfbc16b9027000),
    f64::from_bits(0x3fd49a784bcd1800),
    f64::from_bits(0x3fd91bba891f1800),
];

const LOG2_C_LO: [f64; 16] = [
    f64::from_bits(0x3d20722ca41781a2),
    f64::from_bits(0xbd2594b288b18b69),
    f64::from_bits(0xbd22e5361c37462a),
    f64::from_bits(0xbd0d51bdaa8e20cf),
    f64::from_bits(0x3d1962909403469a),
    f64::from_bits(0x3d0ce5218fd407f7),
    f64::from_bits(0x3d1683e1f2893a13),
    f64::from_bits(0xbd2258689fff272c),
    f64::from_bits(0x3d12d42864c502fe),
    f64::from_bits(0xbd28cf9893ea361d),
    f64::from_bits(0x0000000000000000),
    f64::from_bits(0xbd29d023be6c55cd),
    f64::from_bits(0x3d2a2a0923deddea),
    f64::from_bits(0xbd2fcbe6b8e707a0),
    f64::from_bits(0x3d2c4c67a5ad2239),
    f64::from_bits(0xbd0ebb3f1a94fb89),
];

const LOG2_P: [f64; 9] = [
    f64::from_bits(0xbfe71547652b82fe),
    f64::from_bits(0x3fdec709dc3a03ed),
    f64::from_bits(0xbfd71547652b82ef),
    f64::from_bits(0x3fd2776c50f80453),
    f64::from_bits(0xbfcec709dc496e02),
    f64::from_bits(0x3fca6174da39bc7e),
    f64::from_bits(0xbfc7154630ee47c9),
    f64::from_bits(0x3fc48d1883461552),
    f64::from_bits(0xbfc27f20585d00f7),
];

const LOG10_C_HI: [f64; 16] = [
    f64::from_bits(0xbfc4d43f8275a000),
    f64::from_bits(0xbfc25ba8215af000),
    f64::from_bits(0xbfbffbfc2bbc8000),
    f64::from_bits(0xbfbb721cd1716000),
    f64::from_bits(0xbfb715d0ce368000),
    f64::from_bits(0xbfb2e3a740b78000),
    f64::from_bits(0xbfadb11ed766c000),
    f64::from_bits(0xbfa5e3966b7e8000),
    f64::from_bits(0xbf9cb38fccd88000),
    f64::from_bits(0xbf8c3d0837780000),
    f64::from_bits(0x0000000000000000),
    f64::from_bits(0x3f9af5f92b010000),
    f64::from_bits(0x3faa30a9d60a0000),
    f64::from_bits(0x3fb31b3055c48000),
    f64::from_bits(0x3fb8cf1838864000),
    f64::from_bits(0x3fbe3bc1ab0e2000),
];

const LOG10_C_LO: [f64; 16] = [
    f64::from_bits(0xbd220e665a6e1996),
    f64::from_bits(0xbd2feec4ed36cc9d),
    f64::from_bits(0x3d1ff91cd0d41d8b),
    f64::from_bits(0x3d20398689798e79),
    f64::from_bits(0x3d140a56a54960ab),
    f64::from_bits(0xbca9af15fdc3bc70),
    f64::from_bits(0x3d240f4693268929),
    f64::from_bits(0xbd22943d5df48680),
    f64::from_bits(0xbd2fecd659bbf9e4),
    f64::from_bits(0xbd230e6a783022c9),
    f64::from_bits(0x0000000000000000),
    f64::from_bits(0xbd19ee9c6a443fea),
    f64::from_bits(0xbd2012c40f052da5),
    f64::from_bits(0xbd2dcc83285be7bf),
    f64::from_bits(0x3d2015bce2014e1f),
    f64::from_bits(0xbd180017c8916685),
];

const LOG10_P: [f64; 9] = [
    f64::from_bits(0xbfcbcb7b1526e50e),
    f64::from_bits(0x3fc287a7636f4355),
    f64::from_bits(0xbfbbcb7b1526e4fc),
    f64::from_bits(0x3fb63c62775c7082),
    f64::from_bits(0xbfb287a763788b1c),
    f64::from_bits(0x3fafc3f8cc6d023d),
    f64::from_bits(0xbfabcb79a1feb66a),
    f64::from_bits(0x3fa8befd932c9076),
    f64::from_bits(0xbfa645a90690636b),
];

/// ln 2: the high part with 32 significant bits (`k·LN2_HI` exact for `|k| < 2²¹`), the
/// rest.
const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000);
const LN2_LO: f64 = f64::from_bits(0x3dea_39ef_3579_3c76);
/// log₁₀ 2 split the same way (40 significant bits in the high part).
const LOG10_2_HI: f64 = f64::from_bits(0x3fd3_4413_509f_6000);
const LOG10_2_LO: f64 = f64::from_bits(0x3d59_fef3_11f1_2b36);
/// 1/ln 2 and 1/ln 10 as a float64 and the rest.
const INV_LN2: (f64, f64) = (
    f64::from_bits(0x3ff7_1547_652b_82fe),
    f64::from_bits(0x3c77_77d0_ffda_0d24),
);
const INV_LN10: (f64, f64) = (
    f64::from_bits(0x3fdb_cb7b_1526_e50e),
    f64::from_bits(0x3c69_5355_baaa_fad3),
);

#[inline(always)]
fn splat(x: f64) -> __m512d {
    // SAFETY: the intrinsic only needs AVX-512F, which every caller's target features
    // (and the CPU) have; it touches no memory.
    unsafe { _mm512_set1_pd(x) }
}

/// A sixteen-entry table as two registers.
#[inline(always)]
fn table(t: &[f64; 16]) -> (__m512d, __m512d) {
    // SAFETY: `t` holds sixteen float64; unaligned loads.
    unsafe {
        (
            _mm512_loadu_pd(t.as_ptr()),
            _mm512_loadu_pd(t.as_ptr().add(8)),
        )
    }
}

/// `t[idx & 15]` in each lane.
#[inline(always)]
fn look(t: &[f64; 16], idx: __m512i) -> __m512d {
    // SAFETY: called only under `run`, whose target features (and the CPU) have
    // AVX-512F and DQ; the intrinsics here touch no memory but the tables they load.
    unsafe {
        let (a, b) = table(t);
        _mm512_permutex2var_pd(a, idx, b)
    }
}

/// The table entry `2^(j/16)` (high and low parts) and `eʳ − 1`, for `t` holding
/// `x/ln2` (or `x`) rounded to sixteenths plus [`MAGIC16`] and `r` the reduced argument
/// (`|r| ≤ ln2/32`, natural units).
#[inline(always)]
fn exp_parts(t: __m512d, r: __m512d) -> (__m512d, __m512d, __m512d) {
    // SAFETY: called only under `run`, whose target features (and the CPU) have
    // AVX-512F and DQ; the intrinsics here touch no memory but the tables they load.
    unsafe {
        let idx = _mm512_castpd_si512(t);
        let th = look(&EXP_T_HI, idx);
        let tl = look(&EXP_T_LO, idx);
        let mut q = splat(EXP_Q[4]);
        for c in [EXP_Q[3], EXP_Q[2], EXP_Q[1], EXP_Q[0], 0.5] {
            q = _mm512_fmadd_pd(q, r, splat(c));
        }
        (th, tl, _mm512_fmadd_pd(q, _mm512_mul_pd(r, r), r))
    }
}

/// `2^k16·eʳ` (see [`exp_parts`]; `k16` the multiple of 1/16 in `t`): the shared tail
/// of `exp` and `exp2`.
#[inline(always)]
fn exp_tail(t: __m512d, k16: __m512d, r: __m512d) -> __m512d {
    let (th, tl, em1) = exp_parts(t, r);
    exp_join(th, tl, em1, k16)
}

/// `2^k16·(T_hi + T_lo)·(1 + em1)`, the table entry's parts and `eʳ − 1` joined.
#[inline(always)]
fn exp_join(th: __m512d, tl: __m512d, em1: __m512d, k16: __m512d) -> __m512d {
    // SAFETY: as for `exp_parts`.
    unsafe {
        let y = _mm512_add_pd(th, _mm512_fmadd_pd(th, em1, tl));
        // vscalef multiplies by 2^floor(k16), with one rounding.
        _mm512_scalef_pd(y, k16)
    }
}

/// `a + b` as the rounded sum and its exact rounding error (Knuth's two-sum).
#[inline(always)]
fn two_sum(a: __m512d, b: __m512d) -> (__m512d, __m512d) {
    // SAFETY: AVX-512F (see `run`); no memory is touched.
    unsafe {
        let s = _mm512_add_pd(a, b);
        let bb = _mm512_sub_pd(s, a);
        let e = _mm512_add_pd(_mm512_sub_pd(a, _mm512_sub_pd(s, bb)), _mm512_sub_pd(b, bb));
        (s, e)
    }
}

/// `eˣ − 1` in each lane: `2ᵏ·T·(1 + p) − 1` with `T = 2^(j/16)` and `p = eʳ − 1` as in
/// `exp`, formed as `(s − 1) + (s·p + 2ᵏ·T_lo·(1 + p))` with `s = 2ᵏ·T_hi` (exact): `s − 1`
/// by Fast2Sum in whichever order has the larger operand first, its error carried into
/// the low sum, one rounding at the end. X above about 693 (2^k would overflow on its own: the product with the table is formed by the exp path), the exp form (the −1 is
/// below its last bit); below −40, eˣ is under half an ulp of 1, so −1; `|x|` below half an ulp of 1 is `x`
/// (±0 keep their sign); NaN passes the clamps.
#[inline(always)]
fn expm1(x: __m512d) -> __m512d {
    // SAFETY: as for `exp_parts`.
    unsafe {
        // ln2 with 16 trailing zero bits, so k16·L_HI is exact for |k16| < 2¹².
        const L_HI: f64 = f64::from_bits(0x3fe6_2e42_fefa_0000);
        const L_LO: f64 = f64::from_bits(0x3d7c_f79a_bc9e_3b3a);
        let one = splat(1.0);
        let xc = _mm512_max_pd(splat(-40.0), _mm512_min_pd(splat(710.0), x));
        let t = _mm512_fmadd_pd(xc, splat(LOG2E), splat(MAGIC16));
        let k16 = _mm512_sub_pd(t, splat(MAGIC16));
        // r = (xc − k16·L_HI) − k16·L_LO: the first difference exact (Sterbenz), the
        // second's rounding error r_err carried (p is off by it; unseen, it cost up to
        // 0.5 ulp where s − 1 and s·p nearly cancel).
        let r_hi = _mm512_fnmadd_pd(k16, splat(L_HI), xc);
        let r_lo = _mm512_mul_pd(k16, splat(L_LO));
        let r = _mm512_sub_pd(r_hi, r_lo);
        let r_err = _mm512_sub_pd(_mm512_sub_pd(r_hi, r), r_lo);
        let (th, tl, p) = exp_parts(t, r);
        let s = _mm512_scalef_pd(th, k16);
        let sl = _mm512_scalef_pd(tl, k16);
        let hi = _mm512_sub_pd(s, one);
        let ge1 = _mm512_cmp_pd_mask::<_CMP_GE_OQ>(s, one);
        let err_big = _mm512_sub_pd(_mm512_sub_pd(s, hi), one);
        let err_small = _mm512_sub_pd(s, _mm512_add_pd(hi, one));
        let err = _mm512_mask_blend_pd(ge1, err_small, err_big);
        let low = _mm512_add_pd(_mm512_fmadd_pd(sl, p, sl), err);
        let tail = _mm512_fmadd_pd(s, p, _mm512_fmadd_pd(s, r_err, low));
        let v = _mm512_add_pd(hi, tail);
        let y = _mm512_add_pd(th, _mm512_fmadd_pd(th, p, tl));
        let big = _mm512_cmp_pd_mask::<_CMP_GT_OQ>(k16, splat(1000.0));
        let v = _mm512_mask_blend_pd(big, v, _mm512_scalef_pd(y, k16));
        let low = _mm512_cmp_pd_mask::<_CMP_LT_OQ>(x, splat(-40.0));
        let v = _mm512_mask_blend_pd(low, v, _mm512_sub_pd(_mm512_setzero_pd(), one));
        let tiny =
            _mm512_cmp_pd_mask::<_CMP_LT_OQ>(_mm512_abs_pd(x), splat(5.551_115_123_125_783e-17));
        _mm512_mask_blend_pd(tiny, v, x)
    }
}

/// `eˣ` in each lane.
#[inline(always)]
fn exp(x: __m512d) -> __m512d {
    // SAFETY: called only under `run`, whose target features (and the CPU) have
    // AVX-512F and DQ; the intrinsics here touch no memory but the tables they load.
    unsafe {
        // NaN passes both (`vminpd`/`vmaxpd` return the second operand when one is NaN).
        let xc = _mm512_max_pd(splat(-746.0), _mm512_min_pd(splat(710.0), x));
        let t = _mm512_fmadd_pd(xc, splat(LOG2E), splat(MAGIC16));
        let k16 = _mm512_sub_pd(t, splat(MAGIC16));
        let r = _mm512_fnmadd_pd(k16, splat(EXP_LN2_HI), xc);
        let r = _mm512_fnmadd_pd(k16, splat(EXP_LN2_LO), r);
        exp_tail(t, k16, r)
    }
}

/// The logistic function in each lane, as the portable `f64_math::sigmoid`: `e = e^−|x|`,
/// then `1/(1 + e)` for `x ≥ 0` and `e/(1 + e)` below. NaN passes.
#[inline(always)]
fn sigmoid(x: __m512d) -> __m512d {
    // SAFETY: as for `exp`.
    unsafe {
        let e = exp(_mm512_or_pd(x, splat(-0.0)));
        let neg = _mm512_cmp_pd_mask::<_CMP_LT_OQ>(x, splat(0.0));
        let num = _mm512_mask_blend_pd(neg, splat(1.0), e);
        _mm512_div_pd(num, _mm512_add_pd(splat(1.0), e))
    }
}

/// The pieces of `2^off·eᵃ` for `a` already clamped (NaN passes): `s = 2^(k+off)·T_hi`
/// (exact), `sl = 2^(k+off)·T_lo` and `p = eʳ − 1`, so that `2^off·eᵃ = (s + sl)·(1 + p)`.
#[inline(always)]
fn exp_pieces(a: __m512d, off: f64) -> (__m512d, __m512d, __m512d) {
    // SAFETY: as for `exp_parts`.
    unsafe {
        let t = _mm512_fmadd_pd(a, splat(LOG2E), splat(MAGIC16));
        let k16 = _mm512_sub_pd(t, splat(MAGIC16));
        let r = _mm512_fnmadd_pd(k16, splat(EXP_LN2_HI), a);
        let r = _mm512_fnmadd_pd(k16, splat(EXP_LN2_LO), r);
        let (th, tl, p) = exp_parts(t, r);
        let e = _mm512_add_pd(k16, splat(off));
        (_mm512_scalef_pd(th, e), _mm512_scalef_pd(tl, e), p)
    }
}

/// `|x|` and `x`'s sign bit.
#[inline(always)]
fn abs_sign(x: __m512d) -> (__m512d, __m512d) {
    // SAFETY: AVX-512F and DQ (see `run`); no memory is touched.
    unsafe { (_mm512_abs_pd(x), _mm512_and_pd(x, splat(-0.0))) }
}

/// `a + a³·P(a²)` (an odd polynomial; `c` from the `a³` coefficient up).
#[inline(always)]
fn odd_poly<const N: usize>(a: __m512d, c: [f64; N]) -> __m512d {
    // SAFETY: AVX-512F (see `run`); no memory is touched.
    unsafe {
        let z = _mm512_mul_pd(a, a);
        let mut q = splat(c[N - 1]);
        for &ck in c[..N - 1].iter().rev() {
            q = _mm512_fmadd_pd(q, z, splat(ck));
        }
        _mm512_fmadd_pd(_mm512_mul_pd(a, z), q, a)
    }
}

/// `(tanh(a) − a)/a³` as a polynomial in `a²` on `a ≤ 1/8` (Chebyshev fit, error 2⁻⁶² of
/// `tanh`).
const TANH_P: [f64; 6] = [
    f64::from_bits(0xbfd5_5555_5555_5555),
    f64::from_bits(0x3fc1_1111_1111_0a7c),
    f64::from_bits(0xbfab_a1ba_1b54_e397),
    f64::from_bits(0x3f96_64f3_e418_c74a),
    f64::from_bits(0xbf82_2644_d5cb_6df3),
    f64::from_bits(0x3f6c_dfce_abb1_3934),
];

/// `(sinh(a) − a)/a³` as a polynomial in `a²` on `a ≤ 1` (Chebyshev fit, error 2⁻⁶¹ of
/// `sinh`).
const SINH_P: [f64; 7] = [
    f64::from_bits(0x3fc5_5555_5555_5555),
    f64::from_bits(0x3f81_1111_1111_10fd),
    f64::from_bits(0x3f2a_01a0_1a01_ee70),
    f64::from_bits(0x3ec7_1de3_a4e1_4f40),
    f64::from_bits(0x3e5a_e646_0fae_3728),
    f64::from_bits(0x3de6_11cb_330c_1fe8),
    f64::from_bits(0x3d6b_4123_2cf9_950f),
];

/// `tanh x` in each lane: `(e − 1)/(e + 1)` with `e = e^(2|x|) = (s + sl)(1 + p)` in
/// pieces: numerator and denominator each as `s ± 1` (Fast2Sum, `s ≥ 1`) plus a common
/// low word, the quotient rounded and corrected by its residual (fma), so the result is
/// rounded about once. Below `|x| = 1/8` (where `s − 1` and `s·p` would nearly cancel) an
/// odd polynomial. `2|x|` is clamped to 44, where the quotient rounds to 1; the sign is
/// `x`'s (±0 keep theirs); NaN passes.
#[inline(always)]
fn tanh(x: __m512d) -> __m512d {
    // SAFETY: as for `exp_parts`.
    unsafe {
        let one = splat(1.0);
        let (ax, sign) = abs_sign(x);
        // `vminpd` returns its second operand when either is NaN.
        let y = _mm512_min_pd(splat(44.0), _mm512_add_pd(ax, ax));
        let (s, sl, p) = exp_pieces(y, 0.0);
        let tail = _mm512_fmadd_pd(s, p, _mm512_fmadd_pd(sl, p, sl));
        let nh = _mm512_sub_pd(s, one);
        let nl = _mm512_add_pd(tail, _mm512_sub_pd(_mm512_sub_pd(s, nh), one));
        let dh = _mm512_add_pd(s, one);
        let dl = _mm512_add_pd(tail, _mm512_add_pd(_mm512_sub_pd(s, dh), one));
        let inv = _mm512_div_pd(one, _mm512_add_pd(dh, dl));
        let q0 = _mm512_mul_pd(_mm512_add_pd(nh, nl), inv);
        let res = _mm512_add_pd(_mm512_fnmadd_pd(q0, dh, nh), nl);
        let res = _mm512_fnmadd_pd(q0, dl, res);
        let q = _mm512_fmadd_pd(res, inv, q0);
        let small = _mm512_cmp_pd_mask::<_CMP_LT_OQ>(ax, splat(0.125));
        let v = _mm512_mask_blend_pd(small, q, odd_poly(ax, TANH_P));
        _mm512_or_pd(v, sign)
    }
}

/// `eᵃ/4` as `s + hl` (`s` exact) and `g = e⁻ᵃ/2 = 1/(8·(s + hl))` rounded (within an
/// ulp; at most a sixth of the result where `sinh` uses it, so no correction), for `a =
/// |x|` clamped to 711: `sinh` and `cosh` overflow from 710.48, where the quarter keeps
/// `s` finite and the callers' `2s + …`, one fma, overflows (at 711, `r > 0`, so no `∞ −
/// ∞` either). The shared part of [`sinh`] and [`cosh`].
#[inline(always)]
fn quarter_exps(ax: __m512d) -> (__m512d, __m512d, __m512d) {
    // SAFETY: as for `exp_parts`.
    unsafe {
        let a = _mm512_min_pd(splat(711.0), ax);
        let (s, sl, p) = exp_pieces(a, -2.0);
        let hl = _mm512_fmadd_pd(s, p, _mm512_fmadd_pd(sl, p, sl));
        (s, hl, _mm512_div_pd(splat(0.125), _mm512_add_pd(s, hl)))
    }
}

/// `sinh x` in each lane: `2s + (2hl − g)` (see [`quarter_exps`]) for `a = |x| ≥ 1`, an
/// odd polynomial below. The sign is `x`'s.
#[inline(always)]
fn sinh(x: __m512d) -> __m512d {
    // SAFETY: as for `exp_parts`.
    unsafe {
        let (ax, sign) = abs_sign(x);
        let (s, hl, g) = quarter_exps(ax);
        let v = _mm512_fmadd_pd(s, splat(2.0), _mm512_fmsub_pd(hl, splat(2.0), g));
        let small = _mm512_cmp_pd_mask::<_CMP_LT_OQ>(ax, splat(1.0));
        let v = _mm512_mask_blend_pd(small, v, odd_poly(ax, SINH_P));
        _mm512_or_pd(v, sign)
    }
}

/// `cosh x` in each lane: `2s + (2hl + g)` (see [`quarter_exps`]; no cancellation).
#[inline(always)]
fn cosh(x: __m512d) -> __m512d {
    // SAFETY: as for `exp_parts`.
    unsafe {
        let (s, hl, g) = quarter_exps(_mm512_abs_pd(x));
        _mm512_fmadd_pd(s, splat(2.0), _mm512_fmadd_pd(hl, splat(2.0), g))
    }
}

/// `2ˣ` in each lane.
#[inline(always)]
fn exp2(x: __m512d) -> __m512d {
    // SAFETY: called only under `run`, whose target features (and the CPU) have
    // AVX-512F and DQ; the intrinsics here touch no memory but the tables they load.
    unsafe {
        let xc = _mm512_max_pd(splat(-1080.0), _mm512_min_pd(splat(1025.0), x));
        let t = _mm512_add_pd(xc, splat(MAGIC16));
        let k16 = _mm512_sub_pd(t, splat(MAGIC16));
        // x − k16 is exact; its product with ln2 rounds once (2⁻⁵³ of r, 2⁻⁵⁸ of the result).
        let d = _mm512_sub_pd(xc, k16);
        let r = _mm512_mul_pd(d, splat(std::f64::consts::LN_2));
        exp_tail(t, k16, r)
    }
}

/// The constants of one logarithm's base `b`.
struct Base {
    /// `log_b c` for each interval's centre `c`: high part (2⁻⁴³ grid) and low part.
    c_hi: &'static [f64; 16],
    c_lo: &'static [f64; 16],
    /// `log_b 2`: high part (`k·hi` exact) and low part.
    l2: (f64, f64),
    /// `1/ln b` as two float64 (`None` for the natural logarithm, where it is 1).
    inv: Option<(f64, f64)>,
    /// `(−1/2, P…)·(1/ln b)`: the polynomial after the linear term.
    p: &'static [f64; 9],
}

const LN: Base = Base {
    c_hi: &LN_C_HI,
    c_lo: &LN_C_LO,
    l2: (LN2_HI, LN2_LO),
    inv: None,
    p: &LN_P,
};
const LOG2: Base = Base {
    c_hi: &LOG2_C_HI,
    c_lo: &LOG2_C_LO,
    l2: (1.0, 0.0),
    inv: Some(INV_LN2),
    p: &LOG2_P,
};
const LOG10: Base = Base {
    c_hi: &LOG10_C_HI,
    c_lo: &LOG10_C_LO,
    l2: (LOG10_2_HI, LOG10_2_LO),
    inv: Some(INV_LN10),
    p: &LOG10_P,
};

/// `log_b x + extra` for positive normal finite `x`, rounded once (other lanes: garbage,
/// which callers replace). `extra` (none: 0) joins the low word: exact enough where it is
/// below 2⁻⁵⁰ of the result, or where `x` is so near 1 that the high word is `r` itself
/// (`asinh`, `atanh` next to 0).
#[inline(always)]
fn log_normal(x: __m512d, b: &Base, extra: Option<__m512d>) -> __m512d {
    // SAFETY: called only under `run`, whose target features (and the CPU) have
    // AVX-512F and DQ; the intrinsics here touch no memory but the tables they load.
    unsafe {
        let ix = _mm512_castpd_si512(x);
        let tmp = _mm512_sub_epi64(ix, _mm512_set1_epi64(LOG_OFF as i64));
        let i = _mm512_srli_epi64::<48>(tmp);
        let kd = _mm512_cvtepi64_pd(_mm512_srai_epi64::<52>(tmp));
        let top = _mm512_set1_epi64(0xfff0_0000_0000_0000_u64 as i64);
        let z = _mm512_castsi512_pd(_mm512_sub_epi64(ix, _mm512_and_si512(tmp, top)));
        // r = z/c − 1 as r + r_lo, exactly: z·(1/c) with its rounding error (an fma), then
        // the subtraction, exact since z·(1/c) is within 2⁻⁵ of 1. (Rounded to one word, r
        // cost up to 0.7 ulp where log c and log(1 + r) nearly cancel.)
        let ic = look(&LOG_INVC, i);
        let zc = _mm512_mul_pd(z, ic);
        let r_lo = _mm512_fmsub_pd(z, ic, zc);
        let r = _mm512_sub_pd(zc, splat(1.0));
        // The polynomial takes r + r_lo in one word (r alone is off by up to half an ulp of
        // 1, which the r² term would carry).
        let rp = _mm512_add_pd(r, r_lo);
        // k·log_b 2 + log_b c: the high parts sum exactly, the low parts apart.
        let w = _mm512_fmadd_pd(kd, splat(b.l2.0), look(b.c_hi, i));
        // (log2's k·log₂2 has no low part: no multiply-add of a zero.)
        let lo = if b.l2.1 == 0.0 {
            look(b.c_lo, i)
        } else {
            _mm512_fmadd_pd(kd, splat(b.l2.1), look(b.c_lo, i))
        };
        // The linear term r/ln b, with its rounding error.
        let (t, lo) = match b.inv {
            None => (r, _mm512_add_pd(lo, r_lo)),
            Some((hi, low)) => {
                let t = _mm512_mul_pd(r, splat(hi));
                let te = _mm512_fmsub_pd(r, splat(hi), t);
                let tail = _mm512_fmadd_pd(r_lo, splat(hi), _mm512_fmadd_pd(r, splat(low), te));
                (t, _mm512_add_pd(lo, tail))
            }
        };
        let hi = _mm512_add_pd(w, t);
        let lo = match extra {
            Some(e) => _mm512_add_pd(lo, e),
            None => lo,
        };
        let lo = _mm512_add_pd(lo, _mm512_add_pd(_mm512_sub_pd(w, hi), t));
        let mut q = splat(b.p[8]);
        for k in (0..8).rev() {
            q = _mm512_fmadd_pd(q, rp, splat(b.p[k]));
        }
        _mm512_add_pd(hi, _mm512_fmadd_pd(_mm512_mul_pd(rp, rp), q, lo))
    }
}

/// Lanes where `x` is not a positive normal finite float64 (zero, negative, subnormal,
/// infinite, NaN): one unsigned compare of the bits.
#[inline(always)]
fn log_rare(x: __m512d) -> __mmask8 {
    // SAFETY: called only under `run`, whose target features (and the CPU) have
    // AVX-512F and DQ; the intrinsics here touch no memory but the tables they load.
    unsafe {
        let ix = _mm512_castpd_si512(x);
        let off = _mm512_sub_epi64(ix, _mm512_set1_epi64(0x0010_0000_0000_0000));
        _mm512_cmpge_epu64_mask(off, _mm512_set1_epi64(0x7fe0_0000_0000_0000))
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
    Atan,
    Asin,
    Acos,
    Tan,
    Sin,
    Cos,
    Sigmoid,
    Erf,
    Gelu,
}

/// `log_b x` in each lane, the rare lanes (see [`log_rare`]) by the portable `scalar`.
#[inline(always)]
fn log_checked(x: __m512d, b: &Base, scalar: fn(f64) -> f64) -> __m512d {
    let v = log_normal(x, b, None);
    let rare = log_rare(x);
    fix_rare(x, v, rare, scalar)
}

/// `v` with the lanes in `rare` replaced by `scalar` of `x`'s lanes (the portable
/// function, for the inputs a kernel's fast form does not cover).
#[inline(always)]
fn fix_rare(x: __m512d, v: __m512d, rare: __mmask8, scalar: fn(f64) -> f64) -> __m512d {
    if rare == 0 {
        return v;
    }
    let (mut xs, mut vs) = ([0.0f64; 8], [0.0f64; 8]);
    // SAFETY: AVX-512F (see `run`); the stores and the load use local arrays of 8.
    unsafe {
        _mm512_storeu_pd(xs.as_mut_ptr(), x);
        _mm512_storeu_pd(vs.as_mut_ptr(), v);
    }
    for (k, (o, &xk)) in vs.iter_mut().zip(&xs).enumerate() {
        if rare & (1 << k) != 0 {
            *o = scalar(xk);
        }
    }
    // SAFETY: as above.
    unsafe { _mm512_loadu_pd(vs.as_ptr()) }
}

/// `ln(1 + x)` in each lane: `u = 1 + x` rounded, what the rounding lost (`c`, exact by
/// the two orders of Fast2Sum, chosen by `|x| ≤ 1`) entering as `c/u` in the logarithm's low
/// word, so it is rounded once with the rest. `|x|` below half an ulp of 1 is `x` itself
/// (±0 keeps its sign); `u` not positive, normal and finite (`x ≤ −1`, infinite, NaN) by
/// the portable function.
#[inline(always)]
fn ln_1p(x: __m512d) -> __m512d {
    // SAFETY: called only under `run`, whose target features (and the CPU) have AVX-512F
    // and DQ; no memory is touched.
    unsafe {
        let one = splat(1.0);
        let u = _mm512_add_pd(one, x);
        let ax = _mm512_abs_pd(x);
        let small = _mm512_cmp_pd_mask::<_CMP_LE_OQ>(ax, one);
        let c_small = _mm512_add_pd(_mm512_sub_pd(one, u), x);
        let c_big = _mm512_add_pd(_mm512_sub_pd(x, u), one);
        let c = _mm512_mask_blend_pd(small, c_big, c_small);
        let v = log_normal(u, &LN, Some(_mm512_div_pd(c, u)));
        let tiny = _mm512_cmp_pd_mask::<_CMP_LT_OQ>(ax, splat(1.1102230246251565e-16));
        let v = _mm512_mask_blend_pd(tiny, v, x);
        let rare: __mmask8 = _mm512_cmpge_epu64_mask(
            _mm512_sub_epi64(
                _mm512_castpd_si512(u),
                _mm512_set1_epi64(0x0010_0000_0000_0000),
            ),
            _mm512_set1_epi64(0x7fe0_0000_0000_0000),
        ) & !tiny;
        fix_rare(x, v, rare, f64_math::ln_1p)
    }
}

/// `√(mh + ml)` as a rounded root and its correction (one Newton step on the pair).
#[inline(always)]
fn sqrt_pair(mh: __m512d, ml: __m512d) -> (__m512d, __m512d) {
    // SAFETY: AVX-512F (see `run`); no memory is touched.
    unsafe {
        let sh = _mm512_sqrt_pd(mh);
        let res = _mm512_add_pd(_mm512_fnmadd_pd(sh, sh, mh), ml);
        // (At mh = 0 the correction is 0/MIN_POSITIVE, not 0/0.)
        let den = _mm512_max_pd(_mm512_add_pd(sh, sh), splat(f64::MIN_POSITIVE));
        (sh, _mm512_div_pd(res, den))
    }
}

/// `ln(uh + ul)` for `uh ≥ ul`'s magnitude, positive normal `uh`: `ul/uh` enters the
/// logarithm's low word, so the pair is rounded once.
#[inline(always)]
fn ln_pair(uh: __m512d, ul: __m512d) -> __m512d {
    // SAFETY: AVX-512F (see `run`); no memory is touched.
    log_normal(uh, &LN, Some(unsafe { _mm512_div_pd(ul, uh) }))
}

/// `asinh x` in each lane: `ln(a + √(a² + 1))` for `a = |x|`, every step carried as a
/// pair (`a² + 1` and its error by fma, the root with its Newton correction, the sum by
/// Fast2Sum), so next to 0 (where the argument is `1 + a`) the logarithm sees the exact
/// argument and the result keeps its relative precision (±0 and subnormals come out as
/// `x`). Beyond `a = 2⁵⁰⁰` (where `a²` would overflow), infinities and NaN: the portable
/// function. The sign is `x`'s.
#[inline(always)]
fn asinh(x: __m512d) -> __m512d {
    // SAFETY: AVX-512F and DQ (see `run`); no memory is touched.
    unsafe {
        let one = splat(1.0);
        let (a, sign) = abs_sign(x);
        // a² + 1 = mh + ml: mh rounded once by fma, 1 − mh exact (mh ≥ 1), so ml is the
        // rounding error, itself rounded once.
        let mh = _mm512_fmadd_pd(a, a, one);
        let ml = _mm512_fmadd_pd(a, a, _mm512_sub_pd(one, mh));
        let (sh, sl) = sqrt_pair(mh, ml);
        let uh = _mm512_add_pd(a, sh);
        let ul = _mm512_add_pd(_mm512_add_pd(_mm512_sub_pd(sh, uh), a), sl);
        let v = _mm512_or_pd(ln_pair(uh, ul), sign);
        let rare = !_mm512_cmp_pd_mask::<_CMP_LE_OQ>(a, splat(BIG));
        fix_rare(x, v, rare, f64_math::asinh)
    }
}

/// `2⁵⁰⁰`: below it `x²` neither overflows nor loses the `± 1`.
const BIG: f64 = f64::from_bits(0x5f30_0000_0000_0000);

/// `acosh x` in each lane: `ln(x + √(x² − 1))` with the same pairs as [`asinh`] (`x² − 1`
/// by fma is the exact `(x − 1)(x + 1)` rounded once, so next to 1 the root keeps its
/// precision). `x` below 1 or beyond `2⁵⁰⁰`, infinities and NaN: the portable function.
#[inline(always)]
fn acosh(x: __m512d) -> __m512d {
    // SAFETY: AVX-512F and DQ (see `run`); no memory is touched.
    unsafe {
        let one = splat(1.0);
        // x² − 1 = mh + ml: mh rounded once by fma; ml from x² = p + pe (exact), where
        // p − 1 and then that minus mh are exact (Sterbenz; for p beyond 2⁵³ the 1 is
        // below mh's last bit anyway).
        let mh = _mm512_fmsub_pd(x, x, one);
        let p = _mm512_mul_pd(x, x);
        let pe = _mm512_fmsub_pd(x, x, p);
        let ml = _mm512_add_pd(_mm512_sub_pd(_mm512_sub_pd(p, one), mh), pe);
        let (sh, sl) = sqrt_pair(mh, ml);
        let uh = _mm512_add_pd(x, sh);
        let ul = _mm512_add_pd(_mm512_add_pd(_mm512_sub_pd(x, uh), sh), sl);
        let v = ln_pair(uh, ul);
        let ok = _mm512_cmp_pd_mask::<_CMP_GE_OQ>(x, one)
            & _mm512_cmp_pd_mask::<_CMP_LE_OQ>(x, splat(BIG));
        fix_rare(x, v, !ok, f64_math::acosh)
    }
}

/// `atanh x` in each lane: `ln((1 + a)/(1 − a))/2` for `a = |x|`, numerator and
/// denominator as exact pairs (Fast2Sum), the quotient rounded and its residual (fma)
/// carried into the logarithm's low word; next to 0 the argument is `1 + 2a` and the
/// result keeps its relative precision. `a ≥ 1` and NaN: the portable function. The sign
/// is `x`'s.
#[inline(always)]
fn atanh(x: __m512d) -> __m512d {
    // SAFETY: AVX-512F and DQ (see `run`); no memory is touched.
    unsafe {
        let one = splat(1.0);
        let (a, sign) = abs_sign(x);
        let nh = _mm512_add_pd(one, a);
        let nl = _mm512_add_pd(_mm512_sub_pd(one, nh), a);
        let dh = _mm512_sub_pd(one, a);
        let dl = _mm512_sub_pd(_mm512_sub_pd(one, dh), a);
        let qh = _mm512_div_pd(nh, dh);
        let res = _mm512_add_pd(_mm512_fnmadd_pd(qh, dh, nh), nl);
        let res = _mm512_fnmadd_pd(qh, dl, res);
        let ql = _mm512_div_pd(res, dh);
        let v = _mm512_mul_pd(ln_pair(qh, ql), splat(0.5));
        let v = _mm512_or_pd(v, sign);
        let rare = !_mm512_cmp_pd_mask::<_CMP_LT_OQ>(a, one);
        fix_rare(x, v, rare, f64_math::atanh)
    }
}

/// An eight-entry table as one register, looked up by `idx` (low three bits).
#[inline(always)]
fn look8(t: [f64; 8], idx: __m512i) -> __m512d {
    // SAFETY: AVX-512F (see `run`); `t` is a local array of eight float64.
    unsafe { _mm512_permutexvar_pd(idx, _mm512_loadu_pd(t.as_ptr())) }
}

/// `atan x` in each lane: fdlibm's five intervals (`f64_math::atan`), the interval's
/// index from four compares, its numerator and denominator `a·A + B` and `a·C + D` (one
/// fma each, exact where fdlibm's are) and `atan c` (high, low) from eight-entry tables,
/// one division, fdlibm's polynomial fused. NaN passes (the last interval's quotient).
#[inline(always)]
fn atan(x: __m512d) -> __m512d {
    // SAFETY: AVX-512F and DQ (see `run`); no memory is touched but local tables.
    unsafe {
        let (a, sign) = abs_sign(x);
        let mut idx = _mm512_setzero_si512();
        for edge in [0.4375, 0.6875, 1.1875, 2.4375] {
            let m = _mm512_cmp_pd_mask::<_CMP_GE_OQ>(a, splat(edge));
            idx = _mm512_mask_add_epi64(idx, m, idx, _mm512_set1_epi64(1));
        }
        // NaN compares false everywhere: interval 0, t = NaN.
        let (h, l) = (f64_math::ATAN_HI, f64_math::ATAN_LO);
        // (The last interval's numerator is −1: `a` capped so that ∞·0 does not make it
        // NaN; `vminpd` passes a NaN second operand.)
        let num = _mm512_fmadd_pd(
            _mm512_min_pd(splat(1e300), a),
            look8([1.0, 2.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0], idx),
            look8([0.0, -1.0, -1.0, -1.5, -1.0, 0.0, 0.0, 0.0], idx),
        );
        let den = _mm512_fmadd_pd(
            a,
            look8([0.0, 1.0, 1.0, 1.5, 1.0, 0.0, 0.0, 0.0], idx),
            look8([1.0, 2.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0], idx),
        );
        let hi = look8([0.0, h[0], h[1], h[2], h[3], 0.0, 0.0, 0.0], idx);
        let lo = look8([0.0, l[0], l[1], l[2], l[3], 0.0, 0.0, 0.0], idx);
        let t = _mm512_div_pd(num, den);
        let z = _mm512_mul_pd(t, t);
        let w = _mm512_mul_pd(z, z);
        let c = f64_math::ATAN_T;
        let mut s1 = splat(c[10]);
        for k in [8, 6, 4, 2, 0] {
            s1 = _mm512_fmadd_pd(s1, w, splat(c[k]));
        }
        let mut s2 = splat(c[9]);
        for k in [7, 5, 3, 1] {
            s2 = _mm512_fmadd_pd(s2, w, splat(c[k]));
        }
        let s = _mm512_fmadd_pd(s2, w, _mm512_mul_pd(s1, z));
        // hi − ((t·s − lo) − t)
        let v = _mm512_sub_pd(hi, _mm512_sub_pd(_mm512_fmsub_pd(t, s, lo), t));
        _mm512_xor_pd(v, sign)
    }
}

/// Coefficient `i` of fdlibm's four erf intervals in lanes 0–3 (`f64_math::ERF_NUM`,
/// `ERF_DEN` by columns), for [`look8`] by the interval's index.
const fn erf_columns<const N: usize>(t: &[[f64; N]; 4]) -> [[f64; 8]; N] {
    let mut out = [[0.0; 8]; N];
    let mut i = 0;
    while i < N {
        out[i] = [t[0][i], t[1][i], t[2][i], t[3][i], 0.0, 0.0, 0.0, 0.0];
        i += 1;
    }
    out
}
const ERF_NUM_COLS: [[f64; 8]; 8] = erf_columns(&f64_math::ERF_NUM);
const ERF_DEN_COLS: [[f64; 8]; 9] = erf_columns(&f64_math::ERF_DEN);

/// `e^(a + b)` for `a + b` in about `[−40, 0]`, `b`'s low bits kept (as
/// `f64_math::exp_sum`): reduced by `k/16` from the rounded sum, `a − k·ln2/16` fused,
/// then `b` added by two-sum and the error carried as a first-order correction.
#[inline(always)]
fn exp_sum(a: __m512d, b: __m512d) -> __m512d {
    // SAFETY: as for `exp_parts`.
    unsafe {
        let t = _mm512_fmadd_pd(_mm512_add_pd(a, b), splat(LOG2E), splat(MAGIC16));
        let k16 = _mm512_sub_pd(t, splat(MAGIC16));
        let r = _mm512_fnmadd_pd(k16, splat(EXP_LN2_HI), a);
        let (h, e) = two_sum(r, b);
        let lo = _mm512_fnmadd_pd(k16, splat(EXP_LN2_LO), e);
        let (th, tl, p) = exp_parts(t, h);
        exp_join(th, tl, _mm512_add_pd(p, lo), k16)
    }
}

/// `erf x` in each lane: `f64_math::erf`'s form (fdlibm's four rational functions, one
/// division for the quotient and the tail's `1/x`, and in the tails `erfc x =
/// e^(−z² − 0.5625 + (z − x)·(z + x) + R/S)/x` with `z` the high half of `x`), the
/// interval's coefficients looked up by its index (one permute each, where the portable
/// form masks all four), the polynomials and the exponential fused. NaN passes.
#[inline(always)]
fn erf(x: __m512d) -> __m512d {
    // SAFETY: AVX-512F and DQ (see `run`); no memory is touched but local tables.
    unsafe {
        let (a, sign) = abs_sign(x);
        let ax = _mm512_min_pd(splat(6.0), a);
        let ra = _mm512_cmp_pd_mask::<_CMP_LT_OQ>(ax, splat(0.84375));
        let rb = _mm512_cmp_pd_mask::<_CMP_LT_OQ>(ax, splat(1.25));
        let mut idx = _mm512_setzero_si512();
        for edge in [0.84375, 1.25, f64::from_bits(0x4006_db6d_0000_0000)] {
            let m = _mm512_cmp_pd_mask::<_CMP_GE_OQ>(ax, splat(edge));
            idx = _mm512_mask_add_epi64(idx, m, idx, _mm512_set1_epi64(1));
        }
        let t = _mm512_mul_pd(ax, ax);
        let v = _mm512_mask_blend_pd(rb & !ra, t, _mm512_sub_pd(ax, splat(1.0)));
        let mut num = look8(ERF_NUM_COLS[7], idx);
        for c in ERF_NUM_COLS[..7].iter().rev() {
            num = _mm512_fmadd_pd(num, v, look8(*c, idx));
        }
        let mut den = look8(ERF_DEN_COLS[8], idx);
        for c in ERF_DEN_COLS[..8].iter().rev() {
            den = _mm512_fmadd_pd(den, v, look8(*c, idx));
        }
        let m = _mm512_mask_blend_pd(rb, ax, splat(1.0));
        let inv = _mm512_div_pd(splat(1.0), _mm512_mul_pd(den, m));
        let q = _mm512_mul_pd(_mm512_mul_pd(num, m), inv);
        let zz = _mm512_castsi512_pd(_mm512_and_si512(
            _mm512_castpd_si512(ax),
            _mm512_set1_epi64(0xffff_ffff_0000_0000_u64 as i64),
        ));
        let ea = _mm512_fnmadd_pd(zz, zz, splat(-0.5625));
        let eb = _mm512_fmadd_pd(
            t,
            q,
            _mm512_mul_pd(_mm512_sub_pd(zz, ax), _mm512_add_pd(zz, ax)),
        );
        let erfc = _mm512_mul_pd(exp_sum(ea, eb), _mm512_mul_pd(den, inv));
        let x8 = _mm512_mul_pd(ax, splat(8.0));
        let small = _mm512_mul_pd(splat(0.125), _mm512_fmadd_pd(x8, q, x8));
        let mid = _mm512_add_pd(splat(f64_math::ERX), q);
        let big = _mm512_sub_pd(splat(1.0), erfc);
        let v = _mm512_mask_blend_pd(ra, _mm512_mask_blend_pd(rb, big, mid), small);
        let past6 = _mm512_cmp_pd_mask::<_CMP_GE_OQ>(a, splat(6.0));
        let v = _mm512_xor_pd(_mm512_mask_blend_pd(past6, v, splat(1.0)), sign);
        let nan = _mm512_cmp_pd_mask::<_CMP_UNORD_Q>(x, x);
        _mm512_mask_blend_pd(nan, v, x)
    }
}

/// GELU in each lane: the op table's expression `x·½·(1 + erf(x/√2))` on [`erf`].
#[inline(always)]
fn gelu(x: __m512d) -> __m512d {
    // SAFETY: AVX-512F (see `run`); no memory is touched.
    unsafe {
        let e = erf(_mm512_mul_pd(x, splat(std::f64::consts::FRAC_1_SQRT_2)));
        _mm512_mul_pd(_mm512_mul_pd(x, splat(0.5)), _mm512_add_pd(splat(1.0), e))
    }
}

/// `(asin s − s)/s³` as a polynomial in `z = s²` on `[0, ¼]` (Chebyshev fit: within
/// 2⁻⁵⁷ of `asin s` with the coefficients rounded).
const ASIN_P: [f64; 13] = [
    f64::from_bits(0x3fc5_5555_5555_5556),
    f64::from_bits(0x3fb3_3333_3333_2eca),
    f64::from_bits(0x3fa6_db6d_b6e3_1f13),
    f64::from_bits(0x3f9f_1c71_c1db_0623),
    f64::from_bits(0x3f96_e8bb_1c82_09a2),
    f64::from_bits(0x3f91_c4d3_5cf9_5421),
    f64::from_bits(0x3f8c_9cf0_7674_736a),
    f64::from_bits(0x3f87_8265_1caa_6547),
    f64::from_bits(0x3f85_2420_b04b_37be),
    f64::from_bits(0x3f76_5a9c_4dfc_f8b2),
    f64::from_bits(0x3f91_d189_4083_14ee),
    f64::from_bits(0xbf8e_6aaa_8a0a_04cc),
    f64::from_bits(0x3f9d_72b2_bc81_55f8),
];

/// The shared part of [`asin`] and [`acos`], for `a = |x|` (`avx512_f32::asin_parts` in
/// float64): `(s, q, big)` with `asin a = s + q` where `a ≤ ½` (`s = a`, `q = s·z·P(z)`,
/// `z = a²`) and `asin a = π/2 − 2·(s + q)` beyond (`big`), `s = √z` for `z = (1 − a)/2`
/// (exact) from `vrsqrt14pd` and two coupled Newton steps (within about an ulp; no square
/// root instruction), `q` carrying the root's residual `(z − s²)/(2s)` as well as
/// `s·z·P(z)`. `a > 1` gives NaN, as does NaN.
#[inline(always)]
fn asin_parts(a: __m512d) -> (__m512d, __m512d, __mmask8) {
    // SAFETY: AVX-512F (see `run`); no memory is touched.
    unsafe {
        let half = splat(0.5);
        let big = _mm512_cmp_pd_mask::<_CMP_GT_OQ>(a, half);
        let z = _mm512_mask_mul_pd(_mm512_fnmadd_pd(a, half, half), !big, a, a);
        // (The tiny addend keeps z = 0, at |x| = 1, from giving 0·∞; every nonzero z of
        // a big lane is at least 2⁻⁵⁴, which it leaves unchanged.)
        let y = _mm512_rsqrt14_pd(_mm512_add_pd(z, splat(1e-300)));
        let g = _mm512_mul_pd(z, y);
        let h = _mm512_mul_pd(y, half);
        let e = _mm512_fnmadd_pd(g, h, half);
        let g = _mm512_fmadd_pd(g, e, g);
        let h = _mm512_fmadd_pd(h, e, h);
        let root = _mm512_fmadd_pd(g, _mm512_fnmadd_pd(g, h, half), g);
        let s = _mm512_mask_blend_pd(big, a, root);
        let corr = _mm512_maskz_mul_pd(big, _mm512_fnmadd_pd(s, s, z), h);
        let mut p = splat(ASIN_P[12]);
        for &c in ASIN_P[..12].iter().rev() {
            p = _mm512_fmadd_pd(p, z, splat(c));
        }
        let q = _mm512_fmadd_pd(_mm512_mul_pd(s, z), p, corr);
        (s, q, big)
    }
}

/// `bh + (ms + mq_bl)` with the first sum error-free (Fast2Sum: `|bh| ≥ |ms|` or `bh =
/// 0`), rounded once at the end.
#[inline(always)]
fn asin_sum(bh: __m512d, ms: __m512d, mq_bl: __m512d) -> __m512d {
    // SAFETY: AVX-512F (see `run`); no memory is touched.
    unsafe {
        let h = _mm512_add_pd(bh, ms);
        let err = _mm512_add_pd(_mm512_sub_pd(bh, h), ms);
        _mm512_add_pd(h, _mm512_add_pd(err, mq_bl))
    }
}

/// `asin x` in each lane (see [`asin_parts`]): `s + q`, or `π/2 − 2s − 2q` with `π/2`
/// as a high and a low part and the first difference exact. The sign is `x`'s.
#[inline(always)]
fn asin(x: __m512d) -> __m512d {
    // SAFETY: AVX-512F and DQ (see `run`); no memory is touched.
    unsafe {
        let (a, sign) = abs_sign(x);
        let (s, q, big) = asin_parts(a);
        let (ph, pl) = (f64_math::PIO2_HI, f64_math::PIO2_LO);
        let ms = _mm512_mask_mul_pd(s, big, s, splat(-2.0));
        let mq = _mm512_mask_fmadd_pd(q, big, splat(-2.0), splat(pl));
        let v = asin_sum(_mm512_maskz_mov_pd(big, splat(ph)), ms, mq);
        _mm512_or_pd(v, sign)
    }
}

/// `acos x` in each lane (see [`asin_parts`]): `π/2 − asin x` below ½ in magnitude,
/// `2·asin √((1 − x)/2)` above ½, `π − 2·asin √((1 + x)/2)` below −½; per lane a base
/// (high and low part) and a factor from four-entry tables.
#[inline(always)]
fn acos(x: __m512d) -> __m512d {
    // SAFETY: AVX-512F and DQ (see `run`); no memory is touched but local tables.
    unsafe {
        let a = _mm512_abs_pd(x);
        let (s, q, big) = asin_parts(a);
        let neg = _mm512_cmp_pd_mask::<_CMP_LT_OQ>(x, splat(0.0));
        // 0: |x| ≤ ½, x ≥ 0; 1: |x| ≤ ½, x < 0; 2: x > ½; 3: x < −½.
        let idx = _mm512_maskz_mov_epi64(neg, _mm512_set1_epi64(1));
        let idx = _mm512_mask_add_epi64(idx, big, idx, _mm512_set1_epi64(2));
        let (ph, pl) = (f64_math::PIO2_HI, f64_math::PIO2_LO);
        let (pih, pil) = (2.0 * ph, 2.0 * pl);
        let m = look8([-1.0, 1.0, 2.0, -2.0, 0.0, 0.0, 0.0, 0.0], idx);
        let bh = look8([ph, ph, 0.0, pih, 0.0, 0.0, 0.0, 0.0], idx);
        let bl = look8([pl, pl, 0.0, pil, 0.0, 0.0, 0.0, 0.0], idx);
        asin_sum(bh, _mm512_mul_pd(m, s), _mm512_fmadd_pd(m, q, bl))
    }
}

/// π/2 as three float64 (each the rounded rest of the ones before; the first two are
/// `f64_math`'s `PIO2_HI`, `PIO2_LO`).
const PIO2_C: [f64; 3] = [
    f64_math::PIO2_HI,
    f64_math::PIO2_LO,
    f64::from_bits(0xb91f_1976_b7ed_8fbc),
];

/// `a = k·π/2 + (y0 + y1)` for `0 ≤ a ≤ 2²⁰` (`f64_math::TRIG_FAST_MAX`), `|y0 + y1| ≲
/// π/4`, `y1` below half an ulp of `y0`; `k`'s low bits in an integer register. `k` comes
/// from one fma; `a − k·C₁` by an fma is exact (a multiple of 2⁻⁵³ below 1); `k·C₂` as an
/// exact pair (fma), its subtraction by two-sum, `k·C₃` rounded (below 2⁻⁸⁵): about 150
/// bits of π/2, as `f64_math::rem_pio2` carries.
#[inline(always)]
fn reduce_pio2(a: __m512d) -> (__m512d, __m512d, __m512i) {
    // SAFETY: AVX-512F (see `run`); no memory is touched.
    unsafe {
        let t = _mm512_fmadd_pd(a, splat(std::f64::consts::FRAC_2_PI), splat(MAGIC));
        let kf = _mm512_sub_pd(t, splat(MAGIC));
        let r1 = _mm512_fnmadd_pd(kf, splat(PIO2_C[0]), a);
        let p = _mm512_mul_pd(kf, splat(PIO2_C[1]));
        let pe = _mm512_fmsub_pd(kf, splat(PIO2_C[1]), p);
        // y + e = r1 − p exactly (two-sum).
        let y = _mm512_sub_pd(r1, p);
        let bb = _mm512_sub_pd(y, r1);
        let e = _mm512_sub_pd(
            _mm512_sub_pd(r1, _mm512_sub_pd(y, bb)),
            _mm512_add_pd(p, bb),
        );
        let lo = _mm512_fnmadd_pd(kf, splat(PIO2_C[2]), _mm512_sub_pd(e, pe));
        let y0 = _mm512_add_pd(y, lo);
        let y1 = _mm512_add_pd(_mm512_sub_pd(y, y0), lo);
        (y0, y1, _mm512_castpd_si512(t))
    }
}

/// fdlibm's `__kernel_sin` and `__kernel_cos` (`f64_math`'s `k_sin`, `k_cos`) on the
/// reduced argument `y0 + y1`, with fused multiply-adds: `(sin, cos)` of it.
#[inline(always)]
fn sin_cos_kernels(y0: __m512d, y1: __m512d) -> (__m512d, __m512d) {
    let (s, c) = (f64_math::SIN_S, f64_math::COS_C);
    // SAFETY: AVX-512F (see `run`); no memory is touched.
    unsafe {
        let one = splat(1.0);
        let z = _mm512_mul_pd(y0, y0);
        let w = _mm512_mul_pd(z, z);
        // sin: y0 − ((z·(y1/2 − v·r) − y1) − v·S₁), v = z·y0.
        let rs = _mm512_fmadd_pd(
            _mm512_mul_pd(z, w),
            _mm512_fmadd_pd(z, splat(s[5]), splat(s[4])),
            _mm512_fmadd_pd(z, _mm512_fmadd_pd(z, splat(s[3]), splat(s[2])), splat(s[1])),
        );
        let v = _mm512_mul_pd(z, y0);
        let inner = _mm512_fmsub_pd(
            z,
            _mm512_fnmadd_pd(v, rs, _mm512_mul_pd(splat(0.5), y1)),
            y1,
        );
        let sin = _mm512_sub_pd(y0, _mm512_fnmadd_pd(v, splat(s[0]), inner));
        // cos: (1 − z/2) + (((1 − (1 − z/2)) − z/2) + (z·r − y0·y1)).
        let rc = _mm512_fmadd_pd(
            _mm512_mul_pd(w, w),
            _mm512_fmadd_pd(z, _mm512_fmadd_pd(z, splat(c[5]), splat(c[4])), splat(c[3])),
            _mm512_mul_pd(
                z,
                _mm512_fmadd_pd(z, _mm512_fmadd_pd(z, splat(c[2]), splat(c[1])), splat(c[0])),
            ),
        );
        let hz = _mm512_mul_pd(splat(0.5), z);
        let w1 = _mm512_sub_pd(one, hz);
        let tail = _mm512_add_pd(
            _mm512_sub_pd(_mm512_sub_pd(one, w1), hz),
            _mm512_fmsub_pd(z, rc, _mm512_mul_pd(y0, y1)),
        );
        (sin, _mm512_add_pd(w1, tail))
    }
}

/// `sin(k·π/2 + θ)` from `(sin θ, cos θ)`: quadrant `k mod 4` picks one and its sign.
#[inline(always)]
fn quadrant(s: __m512d, c: __m512d, k: __m512i) -> __m512d {
    // SAFETY: AVX-512F (see `run`); no memory is touched.
    unsafe {
        let odd = _mm512_test_epi64_mask(k, _mm512_set1_epi64(1));
        // Bit 1 of k to the sign bit.
        let neg = _mm512_and_si512(_mm512_slli_epi64::<62>(k), _mm512_set1_epi64(i64::MIN));
        let v = _mm512_mask_blend_pd(odd, s, c);
        _mm512_castsi512_pd(_mm512_xor_si512(_mm512_castpd_si512(v), neg))
    }
}

/// `sin x` in each lane: `|x|` reduced by π/2 ([`reduce_pio2`]), fdlibm's kernels fused
/// ([`sin_cos_kernels`]), the quadrant's choice, `x`'s sign (±0 stays ±0). `|x| > 2²⁰`,
/// ±inf and NaN: the portable function (the C library's reduction).
#[inline(always)]
fn sin(x: __m512d) -> __m512d {
    // SAFETY: AVX-512F and DQ (see `run`); no memory is touched.
    unsafe {
        let (a, sign) = abs_sign(x);
        let (y0, y1, k) = reduce_pio2(a);
        let (s, c) = sin_cos_kernels(y0, y1);
        let v = _mm512_xor_pd(quadrant(s, c, k), sign);
        let rare = !_mm512_cmp_pd_mask::<_CMP_LE_OQ>(a, splat(f64_math::TRIG_FAST_MAX));
        fix_rare(x, v, rare, f64_math::sin)
    }
}

/// `cos x` in each lane: as [`sin`], a quadrant further (`cos θ = sin(θ + π/2)`).
#[inline(always)]
fn cos(x: __m512d) -> __m512d {
    // SAFETY: AVX-512F and DQ (see `run`); no memory is touched.
    unsafe {
        let a = _mm512_abs_pd(x);
        let (y0, y1, k) = reduce_pio2(a);
        let (s, c) = sin_cos_kernels(y0, y1);
        let v = quadrant(s, c, _mm512_add_epi64(k, _mm512_set1_epi64(1)));
        let rare = !_mm512_cmp_pd_mask::<_CMP_LE_OQ>(a, splat(f64_math::TRIG_FAST_MAX));
        fix_rare(x, v, rare, f64_math::cos)
    }
}

/// Cephes' `tan` rational function: `tan y ≈ y + y·z·P(z)/Q(z)`, `z = y²`, `|y| ≤ π/4`
/// (within 2⁻⁵⁶ relative).
const TAN_P: [f64; 3] = [
    -1.309_369_391_813_837_8e4,
    1.153_516_648_385_874_2e6,
    -1.795_652_519_764_848_8e7,
];
/// `Q`'s coefficients after its leading 1.
const TAN_Q: [f64; 4] = [
    1.368_129_634_706_929_6e4,
    -1.320_892_344_402_109_7e6,
    2.500_838_018_233_579_3e7,
    -5.386_957_559_294_546e7,
];

/// `tan x` in each lane: `x` reduced by π/2 ([`reduce_pio2`]), Cephes' rational
/// function giving `tan y0 = th + tl` (`y0 + y0·R` with its rounding error by fma, `y1`
/// entering as `y1·(1 + th²)`), in odd quadrants `−1/(th + tl)` (the quotient corrected
/// by its residual). `|x| > 2²⁰`, ±inf and NaN: the portable function. The sign is `x`'s.
#[inline(always)]
fn tan(x: __m512d) -> __m512d {
    // SAFETY: AVX-512F and DQ (see `run`); no memory is touched.
    unsafe {
        let one = splat(1.0);
        let (a, sign) = abs_sign(x);
        let (y0, y1, k) = reduce_pio2(a);
        let z = _mm512_mul_pd(y0, y0);
        let p = _mm512_fmadd_pd(
            _mm512_fmadd_pd(splat(TAN_P[0]), z, splat(TAN_P[1])),
            z,
            splat(TAN_P[2]),
        );
        let mut q = _mm512_add_pd(z, splat(TAN_Q[0]));
        for &c in &TAN_Q[1..] {
            q = _mm512_fmadd_pd(q, z, splat(c));
        }
        let r = _mm512_div_pd(_mm512_mul_pd(z, p), q);
        let th = _mm512_fmadd_pd(y0, r, y0);
        let tl = _mm512_fmadd_pd(y0, r, _mm512_sub_pd(y0, th));
        let tl = _mm512_fmadd_pd(y1, _mm512_fmadd_pd(th, th, one), tl);
        let even = _mm512_add_pd(th, tl);
        // −1/(th + tl) = q·(1 + δ) to first order, δ = (1 + q·th) + q·tl, q ≈ −1/th.
        let qo = _mm512_div_pd(splat(-1.0), th);
        let delta = _mm512_fmadd_pd(qo, tl, _mm512_fmadd_pd(qo, th, one));
        let odd_v = _mm512_fmadd_pd(qo, delta, qo);
        let odd = _mm512_test_epi64_mask(k, _mm512_set1_epi64(1));
        let v = _mm512_xor_pd(_mm512_mask_blend_pd(odd, even, odd_v), sign);
        let rare = !_mm512_cmp_pd_mask::<_CMP_LE_OQ>(a, splat(f64_math::TRIG_FAST_MAX));
        fix_rare(x, v, rare, f64_math::tan)
    }
}

/// `o[k] = g(x[k])` for the `n` elements of `run`, 8 lanes at a time, the tail through
/// masked loads and stores (so every element goes through the same vector code). A macro,
/// so that `g` is inlined into the loop (a function passed as a value was called, not
/// inlined, and compiled without `run`'s target features).
macro_rules! run_with {
    ($o:expr, $x:expr, $n:expr, |$v:ident| $g:expr) => {{
        let (o, x, n) = ($o, $x, $n);
        let mut k = 0;
        while k + 8 <= n {
            // SAFETY: elements `k..k + 8` are inside both runs (`run`'s caller); each
            // group is read before it is written, so identical runs are fine.
            unsafe {
                let $v = _mm512_loadu_pd(x.add(k));
                _mm512_storeu_pd(o.add(k), $g);
            }
            k += 8;
        }
        if k < n {
            let m: __mmask8 = ((1u16 << (n - k)) - 1) as u8;
            // SAFETY: masked lanes are neither read nor written; the rest are inside the runs.
            unsafe {
                let $v = _mm512_maskz_loadu_pd(m, x.add(k));
                _mm512_mask_storeu_pd(o.add(k), m, $g);
            }
        }
    }};
}

/// `o[k] = f(x[k])` for `n` elements (one loop per function, each inlined).
///
/// # Safety
/// The CPU has AVX-512F and DQ; `x` is readable and `o` writable for `n` float64
/// (unaligned allowed), disjoint or identical.
#[target_feature(enable = "avx512f,avx512dq")]
pub(crate) unsafe fn run(f: Func, o: *mut f64, x: *const f64, n: usize) {
    match f {
        Func::Exp => run_with!(o, x, n, |v| exp(v)),
        Func::Exp2 => run_with!(o, x, n, |v| exp2(v)),
        Func::Ln => run_with!(o, x, n, |v| log_checked(v, &LN, f64_math::ln)),
        Func::Log2 => run_with!(o, x, n, |v| log_checked(v, &LOG2, f64_math::log2)),
        Func::Log10 => run_with!(o, x, n, |v| log_checked(v, &LOG10, f64_math::log10)),
        Func::Ln1p => run_with!(o, x, n, |v| ln_1p(v)),
        Func::Expm1 => run_with!(o, x, n, |v| expm1(v)),
        Func::Tanh => run_with!(o, x, n, |v| tanh(v)),
        Func::Sinh => run_with!(o, x, n, |v| sinh(v)),
        Func::Cosh => run_with!(o, x, n, |v| cosh(v)),
        Func::Asinh => run_with!(o, x, n, |v| asinh(v)),
        Func::Acosh => run_with!(o, x, n, |v| acosh(v)),
        Func::Atanh => run_with!(o, x, n, |v| atanh(v)),
        Func::Atan => run_with!(o, x, n, |v| atan(v)),
        Func::Asin => run_with!(o, x, n, |v| asin(v)),
        Func::Acos => run_with!(o, x, n, |v| acos(v)),
        Func::Tan => run_with!(o, x, n, |v| tan(v)),
        Func::Sin => run_with!(o, x, n, |v| sin(v)),
        Func::Cos => run_with!(o, x, n, |v| cos(v)),
        Func::Sigmoid => run_with!(o, x, n, |v| sigmoid(v)),
        Func::Erf => run_with!(o, x, n, |v| erf(v)),
        Func::Gelu => run_with!(o, x, n, |v| gelu(v)),
    }
}
