//! AVX-512 kernels for the float32 exponentials and logarithms (`exp exp2 expm1 log
//! log2 log10 log1p`), sixteen lanes to a register: the forms of `avx512_f64.rs` in
//! float32, with sixteen-entry tables that one `vpermps` looks up.
//!
//! **exp, exp2, expm1.** `x = (16k + j)·ln2/16 + r`, `|r| ≤ ln2/32`: `2ᵏ·2^(j/16)·eʳ` with
//! `2^(j/16)` as a high and a low float32, `eʳ − 1 = r + r²·Q(r)` with `Q` of degree 2
//! (error 2⁻³⁶ after the factor r²), `vscalefps` for `2ᵏ` (one rounding, subnormal
//! results included); the clamp of `x` gives overflow, underflow, infinities and NaN.
//! `expm1` as `(2ᵏ·T_hi − 1) + (…)` with the subtraction's error carried (see [`expm1`]).
//!
//! **log, log2, log10.** `x = 2ᵏ·z`, `z` in `[0.672, 1.344)` in one of sixteen intervals
//! (1 mid-interval, with `c = 1`), `r = fma(z, 1/c, −1)`, `|r| ≤ 2⁻⁵`; `log_b c` as a
//! high part on a 2⁻¹⁷ grid (exact with `k·log_b 2`'s high part) and a low part; `ln(1 + r) = r − r²/2 + r³·P(r)`, `P` of
//! degree 2 (error 2⁻²⁹ after r²). Zero, negative, subnormal, infinite and NaN inputs are
//! recomputed by the portable function.
//!
//! Accuracy (every 20011th float32 against the float64 C library, `accuracy_tests.rs`):
//! `exp` 0.74 ulp, `exp2` 0.56, `expm1` 0.99 (`s·p` and the sum round apart where they
//! nearly cancel), `log` 0.56, `log2` 0.55, `log10` 0.91 (where `log c` and `log(1 + r)`
//! nearly cancel and `r`'s rounding counts twice), `log1p` 0.79. Not
//! bit-identical to the portable level's results.

use std::arch::x86_64::*;

use super::f32_math;

/// `1.5·2²³`: adding it rounds a float32 below 2²² in magnitude to an integer, which its
/// low bits then hold.
const MAGIC: f32 = 12_582_912.0;

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

const LOG2_C_HI: [f32; 16] = [
    f32::from_bits(0xbf0a6280),
    f32::from_bits(0xbef3f000),
    f32::from_bits(0xbed48000),
    f32::from_bits(0xbeb65800),
    f32::from_bits(0xbe996000),
    f32::from_bits(0xbe7afe00),
    f32::from_bits(0xbe454400),
    f32::from_bits(0xbe116e00),
    f32::from_bits(0xbdbeb000),
    f32::from_bits(0xbd3ba000),
    f32::from_bits(0x00000000),
    f32::from_bits(0x3db32000),
    f32::from_bits(0x3e2e0000),
    f32::from_bits(0x3e7de000),
    f32::from_bits(0x3ea4d400),
    f32::from_bits(0x3ec8de00),
];

const LOG2_C_LO: [f32; 16] = [
    f32::from_bits(0xb644df7a),
    f32::from_bits(0x361e4d1e),
    f32::from_bits(0x35cc0a8d),
    f32::from_bits(0xb6745c5e),
    f32::from_bits(0x3462d9df),
    f32::from_bits(0xb64600dc),
    f32::from_bits(0xb644a9fb),
    f32::from_bits(0x361246fb),
    f32::from_bits(0xb4bb3f34),
    f32::from_bits(0x36594ef6),
    f32::from_bits(0x00000000),
    f32::from_bits(0xb511c4c3),
    f32::from_bits(0x36511734),
    f32::from_bits(0x36350f69),
    f32::from_bits(0xb5f96905),
    f32::from_bits(0xb5b27770),
];

const LOG2_P: [f32; 4] = [
    f32::from_bits(0xbf38aa3b),
    f32::from_bits(0x3ef6384f),
    f32::from_bits(0xbeb8c154),
    f32::from_bits(0x3e93cf2f),
];

const LOG10_C_HI: [f32; 16] = [
    f32::from_bits(0xbe26a200),
    f32::from_bits(0xbe12de00),
    f32::from_bits(0xbdffe000),
    f32::from_bits(0xbddb9000),
    f32::from_bits(0xbdb8b000),
    f32::from_bits(0xbd971c00),
    f32::from_bits(0xbd6d8800),
    f32::from_bits(0xbd2f2000),
    f32::from_bits(0xbce5a000),
    f32::from_bits(0xbc61e000),
    f32::from_bits(0x00000000),
    f32::from_bits(0x3cd7b000),
    f32::from_bits(0x3d518800),
    f32::from_bits(0x3d98d800),
    f32::from_bits(0x3dc67800),
    f32::from_bits(0x3df1e000),
];

const LOG10_C_LO: [f32; 16] = [
    f32::from_bits(0x33437dc1),
    f32::from_bits(0x363e6a2f),
    f32::from_bits(0x34672b24),
    f32::from_bits(0xb5e53e01),
    f32::from_bits(0x363bb133),
    f32::from_bits(0xb61d3a75),
    f32::from_bits(0xb57bf15c),
    f32::from_bits(0x365344ce),
    f32::from_bits(0x35dd5c0d),
    f32::from_bits(0xb6033d60),
    f32::from_bits(0x00000000),
    f32::from_bits(0xb3de1953),
    f32::from_bits(0xb62c8b83),
    f32::from_bits(0x36411f7b),
    f32::from_bits(0x35c0e5d6),
    f32::from_bits(0xb679dec1),
];

const LOG10_P: [f32; 4] = [
    f32::from_bits(0xbe5e5bd9),
    f32::from_bits(0x3e143d3b),
    f32::from_bits(0xbdde77a8),
    f32::from_bits(0x3db1faea),
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
/// The table entry `2^(j/16)` (high and low parts) and `eʳ − 1`, for `t` holding the
/// rounded `16·x/ln2` (or `16·x`) plus [`MAGIC`] and `r` the reduced argument (`|r| ≤
/// ln2/32`, natural units).
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

/// `2^(kf/16)·eʳ` (see [`exp_parts`]): the shared tail of `exp` and `exp2`.
#[inline(always)]
fn exp_tail(t: __m512, kf: __m512, r: __m512) -> __m512 {
    let (th, tl, em1) = exp_parts(t, r);
    // SAFETY: as for `exp_parts`.
    unsafe {
        let y = _mm512_add_ps(th, _mm512_fmadd_ps(th, em1, tl));
        // vscalef multiplies by 2^floor(kf/16), with one rounding.
        _mm512_scalef_ps(y, _mm512_mul_ps(kf, splat(0.0625)))
    }
}

/// `eˣ − 1` in each lane: `2ᵏ·T·(1 + p) − 1` with `T = 2^(j/16)` and `p = eʳ − 1` as in
/// `exp`, formed as `(s − 1) + (s·p + 2ᵏ·T_lo·(1 + p))` with `s = 2ᵏ·T_hi` (exact): `s − 1`
/// by Fast2Sum in whichever order has the larger operand first, its error carried into
/// the low sum, one rounding at the end. X above about 83, the exp form (the −1 is
/// below its last bit); below −18, eˣ is under half an ulp of 1, so −1; `|x|` below half an ulp of 1 is `x`
/// (±0 keep their sign); NaN passes the clamps.
#[inline(always)]
fn expm1(x: __m512) -> __m512 {
    // SAFETY: as for `exp_parts`.
    unsafe {
        const K: f32 = 23.083_12; // 16/ln2
        const L_HI: f32 = f32::from_bits(0x3d31_7218); // ln2/16
        const L_LO: f32 = f32::from_bits(0xaf02_e308);
        let one = splat(1.0);
        let xc = _mm512_max_ps(splat(-18.0), _mm512_min_ps(splat(90.0), x));
        let t = _mm512_fmadd_ps(xc, splat(K), splat(MAGIC));
        let kf = _mm512_sub_ps(t, splat(MAGIC));
        let r = _mm512_fnmadd_ps(kf, splat(L_HI), xc);
        let r = _mm512_fnmadd_ps(kf, splat(L_LO), r);
        let (th, tl, p) = exp_parts(t, r);
        let e = _mm512_mul_ps(kf, splat(0.0625));
        let s = _mm512_scalef_ps(th, e);
        let sl = _mm512_scalef_ps(tl, e);
        let hi = _mm512_sub_ps(s, one);
        let ge1 = _mm512_cmp_ps_mask::<_CMP_GE_OQ>(s, one);
        let err_big = _mm512_sub_ps(_mm512_sub_ps(s, hi), one);
        let err_small = _mm512_sub_ps(s, _mm512_add_ps(hi, one));
        let err = _mm512_mask_blend_ps(ge1, err_small, err_big);
        let tail = _mm512_fmadd_ps(s, p, _mm512_add_ps(_mm512_fmadd_ps(sl, p, sl), err));
        let v = _mm512_add_ps(hi, tail);
        let y = _mm512_add_ps(th, _mm512_fmadd_ps(th, p, tl));
        let big = _mm512_cmp_ps_mask::<_CMP_GT_OQ>(kf, splat(1920.0));
        let v = _mm512_mask_blend_ps(big, v, _mm512_scalef_ps(y, e));
        let low = _mm512_cmp_ps_mask::<_CMP_LT_OQ>(x, splat(-18.0));
        let v = _mm512_mask_blend_ps(low, v, _mm512_sub_ps(_mm512_setzero_ps(), one));
        let tiny = _mm512_cmp_ps_mask::<_CMP_LT_OQ>(_mm512_abs_ps(x), splat(2.980_232_2e-8));
        _mm512_mask_blend_ps(tiny, v, x)
    }
}

/// `eˣ` in each lane.
#[inline(always)]
fn exp(x: __m512) -> __m512 {
    // SAFETY: called only under `run`, whose target features (and the CPU) have
    // AVX-512F; the intrinsics here touch no memory but the tables they load.
    unsafe {
        const K: f32 = 23.083_12; // 16/ln2
        const L_HI: f32 = f32::from_bits(0x3d31_7218); // ln2/16
        const L_LO: f32 = f32::from_bits(0xaf02_e308);
        // NaN passes both (`vminps`/`vmaxps` return the second operand when one is NaN).
        let xc = _mm512_max_ps(splat(-104.0), _mm512_min_ps(splat(90.0), x));
        let t = _mm512_fmadd_ps(xc, splat(K), splat(MAGIC));
        let kf = _mm512_sub_ps(t, splat(MAGIC));
        let r = _mm512_fnmadd_ps(kf, splat(L_HI), xc);
        let r = _mm512_fnmadd_ps(kf, splat(L_LO), r);
        exp_tail(t, kf, r)
    }
}

/// `2ˣ` in each lane.
#[inline(always)]
fn exp2(x: __m512) -> __m512 {
    // SAFETY: called only under `run`, whose target features (and the CPU) have
    // AVX-512F; the intrinsics here touch no memory but the tables they load.
    unsafe {
        let xc = _mm512_max_ps(splat(-152.0), _mm512_min_ps(splat(130.0), x));
        let t = _mm512_fmadd_ps(xc, splat(16.0), splat(MAGIC));
        let kf = _mm512_sub_ps(t, splat(MAGIC));
        // x − kf/16 is exact; its product with ln2 rounds once.
        let d = _mm512_fnmadd_ps(kf, splat(0.0625), xc);
        exp_tail(t, kf, _mm512_mul_ps(d, splat(std::f32::consts::LN_2)))
    }
}

/// The constants of one logarithm's base (see `avx512_f64::Base`).
struct Base {
    c_hi: &'static [f32; 16],
    c_lo: &'static [f32; 16],
    l2: (f32, f32),
    inv: Option<(f32, f32)>,
    p: &'static [f32; 4],
}

const LN: Base = Base {
    c_hi: &LN_C_HI,
    c_lo: &LN_C_LO,
    l2: (f32::from_bits(0x3f31_7200), f32::from_bits(0x35bf_be8e)),
    inv: None,
    p: &LN_P,
};
const LOG2: Base = Base {
    c_hi: &LOG2_C_HI,
    c_lo: &LOG2_C_LO,
    l2: (1.0, 0.0),
    inv: Some((f32::from_bits(0x3fb8_aa3b), f32::from_bits(0x32a5_7060))),
    p: &LOG2_P,
};
const LOG10: Base = Base {
    c_hi: &LOG10_C_HI,
    c_lo: &LOG10_C_LO,
    l2: (f32::from_bits(0x3e9a_2000), f32::from_bits(0x369a_84fc)),
    inv: Some((f32::from_bits(0x3ede_5bd9), f32::from_bits(0xb22d_91af))),
    p: &LOG10_P,
};

/// `log_b x + extra` for positive normal finite `x` and `extra` below 2⁻²¹ of the result,
/// rounded once (other lanes: garbage, replaced by callers).
#[inline(always)]
fn log_normal(x: __m512, b: &Base, extra: __m512) -> __m512 {
    // SAFETY: called only under `run`, whose target features (and the CPU) have
    // AVX-512F; the intrinsics here touch no memory but the tables they load.
    unsafe {
        let ix = _mm512_castps_si512(x);
        let tmp = _mm512_sub_epi32(ix, _mm512_set1_epi32(LOG_OFF as i32));
        let i = _mm512_srli_epi32::<19>(tmp);
        let kf = _mm512_cvtepi32_ps(_mm512_srai_epi32::<23>(tmp));
        let top = _mm512_set1_epi32(0xff80_0000_u32 as i32);
        let z = _mm512_castsi512_ps(_mm512_sub_epi32(ix, _mm512_and_si512(tmp, top)));
        // r = z/c − 1 rounded once. (Carried as an exact pair, as `avx512_f64.rs` does, it
        // brought log10's worst case from 0.91 to 0.50 ulp, and cost 15% more time.)
        let rp = _mm512_fmadd_ps(z, look(&LOG_INVC, i), splat(-1.0));
        let r = rp;
        let w = _mm512_fmadd_ps(kf, splat(b.l2.0), look(b.c_hi, i));
        let lo = _mm512_fmadd_ps(kf, splat(b.l2.1), look(b.c_lo, i));
        let (t, lo) = match b.inv {
            None => (r, lo),
            Some((hi, low)) => {
                let t = _mm512_mul_ps(r, splat(hi));
                let te = _mm512_fmsub_ps(r, splat(hi), t);
                (t, _mm512_add_ps(lo, _mm512_fmadd_ps(r, splat(low), te)))
            }
        };
        let hi = _mm512_add_ps(w, t);
        let lo = _mm512_add_ps(
            _mm512_add_ps(lo, extra),
            _mm512_add_ps(_mm512_sub_ps(w, hi), t),
        );
        let q = _mm512_fmadd_ps(splat(b.p[3]), rp, splat(b.p[2]));
        let q = _mm512_fmadd_ps(q, rp, splat(b.p[1]));
        let q = _mm512_fmadd_ps(q, rp, splat(b.p[0]));
        _mm512_add_ps(hi, _mm512_fmadd_ps(_mm512_mul_ps(rp, rp), q, lo))
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
}

/// `log_b x` in each lane, the rare lanes (zero, negative, subnormal, infinite, NaN: one
/// unsigned compare of the bits) by the portable `scalar`.
#[inline(always)]
fn log_checked(x: __m512, b: &Base, scalar: fn(f32) -> f32) -> __m512 {
    let v = log_normal(x, b, splat(0.0));
    // SAFETY: AVX-512F (see `run`); no memory is touched.
    let rare = unsafe {
        let off = _mm512_sub_epi32(_mm512_castps_si512(x), _mm512_set1_epi32(0x0080_0000));
        _mm512_cmpge_epu32_mask(off, _mm512_set1_epi32(0x7f00_0000))
    };
    fix_rare(x, v, rare, scalar)
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
        let v = log_normal(u, &LN, _mm512_div_ps(c, u));
        let tiny = _mm512_cmp_ps_mask::<_CMP_LT_OQ>(ax, splat(5.960_464_5e-8));
        let v = _mm512_mask_blend_ps(tiny, v, x);
        let rare: __mmask16 = _mm512_cmpge_epu32_mask(
            _mm512_sub_epi32(_mm512_castps_si512(u), _mm512_set1_epi32(0x0080_0000)),
            _mm512_set1_epi32(0x7f00_0000),
        ) & !tiny;
        fix_rare(x, v, rare, f32_math::ln_1p)
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
        Func::Ln => run_with!(o, x, n, |v| log_checked(v, &LN, f32_math::ln)),
        Func::Log2 => run_with!(o, x, n, |v| log_checked(v, &LOG2, f32_math::log2)),
        Func::Log10 => run_with!(o, x, n, |v| log_checked(v, &LOG10, f32_math::log10)),
        Func::Ln1p => run_with!(o, x, n, |v| ln_1p(v)),
        Func::Expm1 => run_with!(o, x, n, |v| expm1(v)),
    }
}
