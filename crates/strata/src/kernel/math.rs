//! Scalar arithmetic for the elementwise ops: the [`Int`] and [`Real`] element traits with
//! PyTorch's semantics (wrapping integers, Python-style floor division and remainder,
//! PyTorch's shifts), an accurate `erf` and `erfinv`, the scalar functions the op table
//! (`ops/table.rs`) names, and the dtype dispatch macro [`dispatch!`].
//!
//! The table's kernels are generic closures over these traits; `kernel/unary.rs` and
//! `kernel/binary.rs` dispatch on the dtype once and hand the monomorphised closure to
//! `elementwise_loops::{unary,binary,ternary}_into`, so the inner loops contain no
//! dynamic call. `f16`/`bf16` compute through `f32`: each element is loaded, widened,
//! computed in `f32` and rounded back. The transcendental functions beyond `std`'s come
//! from the `libm` crate (musl's C math library).

use std::f64::consts::FRAC_2_SQRT_PI;
use std::ops::{Add, Div, Mul, Neg, Rem, Sub};

use crate::dtype::{DType, Element};
use crate::error::Error;

/// An integer element type (not `bool`), with PyTorch's integer semantics. No method
/// panics or overflows: arithmetic wraps like PyTorch's two's-complement kernels.
pub(crate) trait Int: Element + Ord {
    /// `0`.
    const ZERO: Self;
    /// `1`.
    const ONE: Self;
    /// Width in bits.
    const BITS: u32;
    /// True for signed types.
    const SIGNED: bool;
    /// Wrapping `+`.
    fn w_add(self, b: Self) -> Self;
    /// Wrapping `-`.
    fn w_sub(self, b: Self) -> Self;
    /// Wrapping `*`.
    fn w_mul(self, b: Self) -> Self;
    /// Wrapping negation (`-i8::MIN == i8::MIN`, `-1u8 == 255`).
    fn w_neg(self) -> Self;
    /// Wrapping absolute value (`abs(i8::MIN) == i8::MIN`, as PyTorch).
    fn w_abs(self) -> Self;
    /// `-1`, `0` or `1`.
    fn sign(self) -> Self;
    /// `self < 0`.
    fn is_neg(self) -> bool;
    /// Truncating division, wrapping (`MIN / -1 == MIN`); `0` for a zero divisor (the op
    /// layer rejects zero divisors before any kernel runs).
    fn w_div(self, b: Self) -> Self;
    /// Truncating remainder, wrapping; `0` for a zero divisor.
    fn w_rem(self, b: Self) -> Self;
    /// Bitwise `&`.
    fn and(self, b: Self) -> Self;
    /// Bitwise `|`.
    fn or(self, b: Self) -> Self;
    /// Bitwise `^`.
    fn xor(self, b: Self) -> Self;
    /// Bitwise `!`.
    fn not(self) -> Self;
    /// `self << b` (bits shifted out are lost).
    fn shl(self, b: u32) -> Self;
    /// `self >> b`, arithmetic for signed types.
    fn shr(self, b: u32) -> Self;
    /// The shift count `self` as `u32` when it is in `0..BITS`, else `None`.
    fn shift_count(self) -> Option<u32>;
}

macro_rules! int_impl {
    ($($t:ty: signed $signed:literal, abs $abs:expr, sign $sign:expr, neg $neg:expr);* $(;)?) => {$(
        impl Int for $t {
            const ZERO: Self = 0;
            const ONE: Self = 1;
            const BITS: u32 = <$t>::BITS;
            const SIGNED: bool = $signed;
            #[inline(always)] fn w_add(self, b: Self) -> Self { self.wrapping_add(b) }
            #[inline(always)] fn w_sub(self, b: Self) -> Self { self.wrapping_sub(b) }
            #[inline(always)] fn w_mul(self, b: Self) -> Self { self.wrapping_mul(b) }
            #[inline(always)] fn w_neg(self) -> Self { self.wrapping_neg() }
            #[inline(always)] fn w_abs(self) -> Self { ($abs)(self) }
            #[inline(always)] fn sign(self) -> Self { ($sign)(self) }
            #[inline(always)] fn is_neg(self) -> bool { ($neg)(self) }
            #[inline(always)] fn w_div(self, b: Self) -> Self {
                if b == 0 { 0 } else { self.wrapping_div(b) }
            }
            #[inline(always)] fn w_rem(self, b: Self) -> Self {
                if b == 0 { 0 } else { self.wrapping_rem(b) }
            }
            #[inline(always)] fn and(self, b: Self) -> Self { self & b }
            #[inline(always)] fn or(self, b: Self) -> Self { self | b }
            #[inline(always)] fn xor(self, b: Self) -> Self { self ^ b }
            #[inline(always)] fn not(self) -> Self { !self }
            #[inline(always)] fn shl(self, b: u32) -> Self { self.wrapping_shl(b) }
            #[inline(always)] fn shr(self, b: u32) -> Self { self.wrapping_shr(b) }
            #[inline(always)] fn shift_count(self) -> Option<u32> {
                if self.is_neg() || self.to_u64() >= u64::from(<$t>::BITS) {
                    None
                } else {
                    Some(self.to_u64() as u32)
                }
            }
        }
    )*};
}

int_impl!(
    i8: signed true, abs i8::wrapping_abs, sign i8::signum, neg |v: i8| v < 0;
    i16: signed true, abs i16::wrapping_abs, sign i16::signum, neg |v: i16| v < 0;
    i32: signed true, abs i32::wrapping_abs, sign i32::signum, neg |v: i32| v < 0;
    i64: signed true, abs i64::wrapping_abs, sign i64::signum, neg |v: i64| v < 0;
    u8: signed false, abs |v: u8| v, sign |v: u8| u8::from(v != 0), neg |_: u8| false;
    u16: signed false, abs |v: u16| v, sign |v: u16| u16::from(v != 0), neg |_: u16| false;
    u32: signed false, abs |v: u32| v, sign |v: u32| u32::from(v != 0), neg |_: u32| false;
    u64: signed false, abs |v: u64| v, sign |v: u64| u64::from(v != 0), neg |_: u64| false;
);

/// Python's floor division on integers (PyTorch's `div_floor_integer`), wrapping.
#[inline(always)]
pub(crate) fn floor_div_int<I: Int>(a: I, b: I) -> I {
    let q = a.w_div(b);
    if a.is_neg() != b.is_neg() && a.w_rem(b) != I::ZERO {
        q.w_sub(I::ONE)
    } else {
        q
    }
}

/// Python's remainder on integers: the result has the sign of the divisor.
#[inline(always)]
pub(crate) fn remainder_int<I: Int>(a: I, b: I) -> I {
    let r = a.w_rem(b);
    if r != I::ZERO && r.is_neg() != b.is_neg() {
        r.w_add(b)
    } else {
        r
    }
}

/// PyTorch's `powi`: square-and-multiply, wrapping; negative exponents (rejected by the op
/// layer) give PyTorch's `1`, `±1` or `0`.
#[inline(always)]
pub(crate) fn pow_int<I: Int>(mut a: I, b: I) -> I {
    if b.is_neg() {
        return if a == I::ONE {
            I::ONE
        } else if a == I::ONE.w_neg() {
            if b.and(I::ONE) == I::ZERO {
                I::ONE
            } else {
                a
            }
        } else {
            I::ZERO
        };
    }
    let (mut e, mut r) = (b.to_u64(), I::ONE);
    while e != 0 {
        if e & 1 == 1 {
            r = r.w_mul(a);
        }
        e >>= 1;
        a = a.w_mul(a);
    }
    r
}

/// PyTorch's `<<`: a negative or too-large shift count gives `0`.
#[inline(always)]
pub(crate) fn shl_int<I: Int>(a: I, b: I) -> I {
    match b.shift_count() {
        Some(n) => a.shl(n),
        None => I::ZERO,
    }
}

/// PyTorch's `>>`: a negative or too-large shift count gives `a >> (BITS - signed)` (the
/// sign fill, or `0`).
#[inline(always)]
pub(crate) fn shr_int<I: Int>(a: I, b: I) -> I {
    let max = I::BITS - u32::from(I::SIGNED);
    match b.shift_count() {
        Some(n) if n < max => a.shr(n),
        _ if I::SIGNED => a.shr(max),
        _ => I::ZERO,
    }
}

/// `f32` or `f64`: the types floating-point ops compute in.
pub(crate) trait Real:
    Element
    + PartialOrd
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Rem<Output = Self>
    + Neg<Output = Self>
{
    /// `0.0`.
    const ZERO: Self;
    /// `1.0`.
    const ONE: Self;
    /// `0.5`.
    const HALF: Self;
    /// `1/√2`.
    const SQRT1_2: Self;
    /// A quiet NaN.
    const NAN: Self;
    /// `√x`.
    fn sqrt(self) -> Self;
    /// `eˣ`.
    fn exp(self) -> Self;
    /// `2ˣ`.
    fn exp2(self) -> Self;
    /// `ln x`.
    fn ln(self) -> Self;
    /// `log₂ x`.
    fn log2(self) -> Self;
    /// `ln(1 + x)`, accurate near 0.
    fn ln_1p(self) -> Self;
    /// `eˣ − 1`, accurate near 0.
    fn exp_m1(self) -> Self;
    /// Sine.
    fn sin(self) -> Self;
    /// Cosine.
    fn cos(self) -> Self;
    /// Tangent.
    fn tan(self) -> Self;
    /// Hyperbolic tangent.
    fn tanh(self) -> Self;
    /// The logistic function `1 / (1 + e⁻ˣ)`.
    fn sigmoid(self) -> Self;
    /// Round down.
    fn floor(self) -> Self;
    /// Round up.
    fn ceil(self) -> Self;
    /// Round to nearest, ties to even.
    fn round_even(self) -> Self;
    /// Round toward zero.
    fn trunc(self) -> Self;
    /// `|x|`.
    fn abs(self) -> Self;
    /// `xʸ`.
    fn powf(self, y: Self) -> Self;
    /// `atan2(self, x)`.
    fn atan2(self, x: Self) -> Self;
    /// The magnitude of `self` with the sign of `s`.
    fn copysign(self, s: Self) -> Self;
    /// The error function.
    fn erf(self) -> Self;
    /// The complementary error function.
    fn erfc(self) -> Self;
    /// The inverse error function.
    fn erfinv(self) -> Self;
    /// `log₁₀ x`.
    fn log10(self) -> Self;
    /// Arcsine.
    fn asin(self) -> Self;
    /// Arccosine.
    fn acos(self) -> Self;
    /// Arctangent.
    fn atan(self) -> Self;
    /// Hyperbolic sine.
    fn sinh(self) -> Self;
    /// Hyperbolic cosine.
    fn cosh(self) -> Self;
    /// Inverse hyperbolic sine.
    fn asinh(self) -> Self;
    /// Inverse hyperbolic cosine.
    fn acosh(self) -> Self;
    /// Inverse hyperbolic tangent.
    fn atanh(self) -> Self;
    /// `√(self² + y²)` without undue overflow.
    fn hypot(self, y: Self) -> Self;
    /// The next representable value after `self` towards `y` (C's `nextafter`).
    fn next_after(self, y: Self) -> Self;
    /// True when the sign bit is set (`-0.0` and negative NaNs included).
    fn is_sign_negative(self) -> bool;
    /// NaN test.
    fn is_nan(self) -> bool;
    /// ±∞ test.
    fn is_infinite(self) -> bool;
    /// Neither NaN nor infinite.
    fn is_finite(self) -> bool;
}

macro_rules! real_impl {
    ($($t:ident, $vm:path, $erf:expr, $erfinv:expr, $m:ident: $erfc:ident $hypot:ident
       $nextafter:ident);*) => {$(
        impl Real for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            const HALF: Self = 0.5;
            const SQRT1_2: Self = std::$t::consts::FRAC_1_SQRT_2;
            const NAN: Self = $t::NAN;
            #[inline(always)] fn sqrt(self) -> Self { $t::sqrt(self) }
            #[inline(always)] fn exp(self) -> Self { { use $vm as vm; vm::exp(self) } }
            #[inline(always)] fn exp2(self) -> Self { { use $vm as vm; vm::exp2(self) } }
            #[inline(always)] fn ln(self) -> Self { { use $vm as vm; vm::ln(self) } }
            #[inline(always)] fn log2(self) -> Self { { use $vm as vm; vm::log2(self) } }
            #[inline(always)] fn ln_1p(self) -> Self { { use $vm as vm; vm::ln_1p(self) } }
            #[inline(always)] fn exp_m1(self) -> Self { { use $vm as vm; vm::expm1(self) } }
            #[inline(always)] fn sin(self) -> Self { { use $vm as vm; vm::sin(self) } }
            #[inline(always)] fn cos(self) -> Self { { use $vm as vm; vm::cos(self) } }
            #[inline(always)] fn tan(self) -> Self { { use $vm as vm; vm::tan(self) } }
            #[inline(always)] fn tanh(self) -> Self { { use $vm as vm; vm::tanh(self) } }
            #[inline(always)] fn sigmoid(self) -> Self { { use $vm as vm; vm::sigmoid(self) } }
            #[inline(always)] fn floor(self) -> Self { $t::floor(self) }
            #[inline(always)] fn ceil(self) -> Self { $t::ceil(self) }
            #[inline(always)] fn round_even(self) -> Self { $t::round_ties_even(self) }
            #[inline(always)] fn trunc(self) -> Self { $t::trunc(self) }
            #[inline(always)] fn abs(self) -> Self { $t::abs(self) }
            #[inline(always)] fn powf(self, y: Self) -> Self { $t::powf(self, y) }
            #[inline(always)] fn atan2(self, x: Self) -> Self { $t::atan2(self, x) }
            #[inline(always)] fn copysign(self, s: Self) -> Self { $t::copysign(self, s) }
            #[inline(always)] fn erf(self) -> Self { ($erf)(self) }
            #[inline(always)] fn erfc(self) -> Self { $m::$erfc(self) }
            #[inline(always)] fn erfinv(self) -> Self { ($erfinv)(self) }
            #[inline(always)] fn log10(self) -> Self { { use $vm as vm; vm::log10(self) } }
            #[inline(always)] fn asin(self) -> Self { { use $vm as vm; vm::asin(self) } }
            #[inline(always)] fn acos(self) -> Self { { use $vm as vm; vm::acos(self) } }
            #[inline(always)] fn atan(self) -> Self { { use $vm as vm; vm::atan(self) } }
            #[inline(always)] fn sinh(self) -> Self { { use $vm as vm; vm::sinh(self) } }
            #[inline(always)] fn cosh(self) -> Self { { use $vm as vm; vm::cosh(self) } }
            #[inline(always)] fn asinh(self) -> Self { { use $vm as vm; vm::asinh(self) } }
            #[inline(always)] fn acosh(self) -> Self { { use $vm as vm; vm::acosh(self) } }
            #[inline(always)] fn atanh(self) -> Self { { use $vm as vm; vm::atanh(self) } }
            #[inline(always)] fn hypot(self, y: Self) -> Self { $m::$hypot(self, y) }
            #[inline(always)] fn next_after(self, y: Self) -> Self { $m::$nextafter(self, y) }
            #[inline(always)] fn is_sign_negative(self) -> bool { $t::is_sign_negative(self) }
            #[inline(always)] fn is_nan(self) -> bool { $t::is_nan(self) }
            #[inline(always)] fn is_infinite(self) -> bool { $t::is_infinite(self) }
            #[inline(always)] fn is_finite(self) -> bool { $t::is_finite(self) }
        }
    )*};
}

// The transcendental functions come from `kernel/vector_math/`: branch-free code the
// elementwise loops compile to vector instructions (erfc, hypot, nextafter and powf still
// call the C library, as does atan2 here: the float32/float64 op runs `f64_math::atan2`
// from `kernel/binary.rs`).
real_impl!(
    f32, super::vector_math::f32_math, super::vector_math::f32_math::erf, erfinv_f32,
        libm: erfcf hypotf nextafterf;
    f64, super::vector_math::f64_math, super::vector_math::f64_math::erf, erfinv_f64,
        libm: erfc hypot nextafter
);

/// The inverse error function in `f64`: Giles' single-precision approximation ("Approximating
/// the erfinv function", GPU Computing Gems, 2011) refined by two Newton steps on
/// `erf(x) − y` (on `erfc(x) − (1 − y)` in the tails, where `1 − y` is exact and `erf`
/// has no digits left).
pub(crate) fn erfinv_f64(y: f64) -> f64 {
    if y.is_nan() || y.abs() > 1.0 {
        return f64::NAN;
    }
    if y.abs() == 1.0 {
        return f64::INFINITY.copysign(y);
    }
    if y == 0.0 {
        return y; // ±0
    }
    let w = -((1.0 - y) * (1.0 + y)).ln();
    let mut x = if w < 5.0 {
        let w = w - 2.5;
        let mut p = 2.810_226_36e-08;
        for c in [
            3.432_739_39e-07,
            -3.523_387_7e-06,
            -4.391_506_54e-06,
            0.000_218_580_87,
            -0.001_253_725_03,
            -0.004_177_681_64,
            0.246_640_727,
            1.501_409_41,
        ] {
            p = c + p * w;
        }
        p * y
    } else {
        let w = w.sqrt() - 3.0;
        let mut p = -0.000_200_214_257;
        for c in [
            0.000_100_950_558,
            0.001_349_343_22,
            -0.003_673_428_44,
            0.005_739_507_73,
            -0.007_622_461_3,
            0.009_438_870_47,
            1.001_674_06,
            2.832_976_82,
        ] {
            p = c + p * w;
        }
        p * y
    };
    let (ay, sign) = (y.abs(), y.signum());
    x = x.abs();
    for _ in 0..2 {
        // d/dx erf(x) = 2/√π · e^(−x²); both residuals are erf(x) − |y|.
        let r = if ay <= 0.5 {
            erf_f64(x) - ay
        } else {
            (1.0 - ay) - libm::erfc(x)
        };
        let d = FRAC_2_SQRT_PI * exp_neg_sq(x);
        if d == 0.0 || !r.is_finite() {
            break;
        }
        x -= r / d;
    }
    sign * x
}

/// The inverse error function in `f32`, computed in `f64`.
fn erfinv_f32(y: f32) -> f32 {
    erfinv_f64(f64::from(y)) as f32
}

/// `1`, `-1`, `0` (for ±0, as `+0`) or NaN for NaN (NumPy's choice; PyTorch returns 0 for
/// NaN, which hides it).
#[inline(always)]
pub(crate) fn sign_real<R: Real>(x: R) -> R {
    if x > R::ZERO {
        R::ONE
    } else if x < R::ZERO {
        -R::ONE
    } else if x == R::ZERO {
        R::ZERO
    } else {
        x
    }
}

/// PyTorch's `div_floor_floating`: Python's `//` on floats, IEEE results for a zero
/// divisor.
#[inline(always)]
pub(crate) fn floor_div_real<R: Real>(a: R, b: R) -> R {
    if b == R::ZERO {
        return a / b;
    }
    let m = a % b;
    let mut div = (a - m) / b;
    if m != R::ZERO && (b < R::ZERO) != (m < R::ZERO) {
        div = div - R::ONE;
    }
    if div != R::ZERO {
        let f = div.floor();
        if div - f > R::HALF {
            f + R::ONE
        } else {
            f
        }
    } else {
        R::ZERO.copysign(a / b)
    }
}

/// Python's `%` on floats: the result has the sign of the divisor.
#[inline(always)]
pub(crate) fn remainder_real<R: Real>(a: R, b: R) -> R {
    let m = a % b;
    if m != R::ZERO && (b < R::ZERO) != (m < R::ZERO) {
        m + b
    } else {
        m
    }
}

/// The larger, NaN if either is NaN.
#[inline(always)]
pub(crate) fn maximum_real<R: Real>(a: R, b: R) -> R {
    if a.is_nan() || b.is_nan() {
        R::NAN
    } else if a < b {
        b
    } else {
        a
    }
}

/// The smaller, NaN if either is NaN.
#[inline(always)]
pub(crate) fn minimum_real<R: Real>(a: R, b: R) -> R {
    if a.is_nan() || b.is_nan() {
        R::NAN
    } else if b < a {
        b
    } else {
        a
    }
}

/// NumPy's `fmax`: the larger, ignoring a NaN (of `-0.0` and `0.0`, the first).
#[inline(always)]
pub(crate) fn fmax_real<R: Real>(a: R, b: R) -> R {
    if a >= b || b.is_nan() {
        a
    } else {
        b
    }
}

/// NumPy's `fmin`: the smaller, ignoring a NaN.
#[inline(always)]
pub(crate) fn fmin_real<R: Real>(a: R, b: R) -> R {
    if a <= b || b.is_nan() {
        a
    } else {
        b
    }
}

/// The Heaviside step on integers: `0`, `b` or `1`.
#[inline(always)]
pub(crate) fn heaviside_int<I: Int>(a: I, b: I) -> I {
    if a == I::ZERO {
        b
    } else if a.is_neg() {
        I::ZERO
    } else {
        I::ONE
    }
}

/// NumPy's Heaviside step: `0`, `b` or `1`, NaN for NaN.
#[inline(always)]
pub(crate) fn heaviside_real<R: Real>(a: R, b: R) -> R {
    if a < R::ZERO {
        R::ZERO
    } else if a == R::ZERO {
        b
    } else if a > R::ZERO {
        R::ONE
    } else {
        a
    }
}

/// NumPy's `logaddexp`: `ln(eᵃ + eᵇ)` as `max + ln1p(e^−|a−b|)`; `a == b` (±∞ included)
/// gives `a + ln 2`.
#[inline(always)]
pub(crate) fn logaddexp_real<R: Real>(a: R, b: R) -> R {
    if a == b {
        return a + R::from_f64(std::f64::consts::LN_2);
    }
    let d = a - b;
    if d > R::ZERO {
        a + (-d).exp().ln_1p()
    } else if d <= R::ZERO {
        b + d.exp().ln_1p()
    } else {
        d // NaN
    }
}

/// NumPy's `logaddexp2`: `log₂(2ᵃ + 2ᵇ)`, as [`logaddexp_real`] in base 2.
#[inline(always)]
pub(crate) fn logaddexp2_real<R: Real>(a: R, b: R) -> R {
    if a == b {
        return a + R::ONE;
    }
    let log2e = R::from_f64(std::f64::consts::LOG2_E);
    let d = a - b;
    if d > R::ZERO {
        a + (-d).exp2().ln_1p() * log2e
    } else if d <= R::ZERO {
        b + d.exp2().ln_1p() * log2e
    } else {
        d // NaN
    }
}

/// PyTorch's `xlogy`: `a · ln b`, `0` where `a == 0` unless `b` is NaN.
#[inline(always)]
pub(crate) fn xlogy_real<R: Real>(a: R, b: R) -> R {
    if b.is_nan() {
        b
    } else if a == R::ZERO {
        R::ZERO
    } else {
        a * b.ln()
    }
}

/// `nextafter` in half precision (`f16`/`bf16`), stepping the 16-bit pattern.
#[inline(always)]
pub(crate) fn nextafter_half<H: Half>(a: H, b: H) -> H {
    let (x, y) = (a.up(), b.up());
    if x.is_nan() || y.is_nan() {
        return H::down(x + y);
    }
    if x == y {
        return b;
    }
    if x == 0.0 {
        // The smallest subnormal, with the sign of the direction.
        return H::from_bits(if y > 0.0 { 1 } else { 0x8001 });
    }
    let bits = a.to_bits();
    H::from_bits(if (x < y) == (x > 0.0) {
        bits + 1
    } else {
        bits - 1
    })
}

/// `1/(2n+1)!!`, the coefficients of the series of [`erf_with`].
const ERF_SERIES: [f64; 33] = {
    let mut c = [0.0; 33];
    let (mut v, mut n) = (1.0, 0);
    while n < 33 {
        c[n] = v;
        v /= (2 * n + 3) as f64;
        n += 1;
    }
    c
};

/// How many terms [`erf_with`] needs for a target accuracy (measured against the C
/// library's `erf`, with a margin of two terms).
struct ErfTerms {
    /// Series terms for `|x|` in `[0, .5)`, `[.5, 1)`, `[1, 1.5)`, `[1.5, 2)`.
    series: [u8; 4],
    /// Continued-fraction terms for `|x|` in consecutive buckets of `cf_step` from 2.
    cf: &'static [u8],
    cf_step: f64,
    /// Where `erf` rounds to 1.
    one_at: f64,
}

/// Within 4 ulp of `f64`.
const ERF_F64: ErfTerms = ErfTerms {
    series: [14, 19, 25, 32],
    cf: &[40, 31, 25, 21, 17, 14, 12, 10, 8, 7, 6, 5, 4, 3, 3, 3],
    cf_step: 0.25,
    one_at: 6.0,
};

/// `e^(−x²)` with the rounding error of `x²` compensated (Dekker's exact product).
fn exp_neg_sq(x: f64) -> f64 {
    let p = x * x;
    let c = 134_217_729.0 * x;
    let hi = c - (c - x);
    let lo = x - hi;
    let e = ((hi * hi - p) + 2.0 * hi * lo) + lo * lo;
    (-p).exp() * (1.0 - e)
}

/// The error function, in `f64` arithmetic, with the term counts of `t`.
///
/// For `|x| < 2`: `erf x = 2/√π · e^(−x²) · x · Σₙ (2x²)ⁿ / (2n+1)!!`, a series of positive
/// terms (no cancellation), evaluated as two interleaved Horner chains. For
/// `2 ≤ |x| < one_at`: `1 − erfc x`, with erfc from its continued fraction
/// `e^(−x²)/√π / (x + ½/(x + 1/(x + (3/2)/(x + …))))`, evaluated forward by the
/// three-term recurrence of its convergents (one division). Beyond, `erf x` rounds to ±1.
fn erf_with(x: f64, t: &ErfTerms) -> f64 {
    let ax = x.abs();
    let r = if ax < 2.0 {
        let n = usize::from(t.series[(ax * 2.0) as usize]);
        let z = 2.0 * ax * ax;
        let z2 = z * z;
        let (mut even, mut odd) = (0.0, 0.0);
        for j in (0..n.div_ceil(2)).rev() {
            even = even * z2 + ERF_SERIES[2 * j];
            odd = odd * z2
                + if 2 * j + 1 < n {
                    ERF_SERIES[2 * j + 1]
                } else {
                    0.0
                };
        }
        ax * (even + z * odd) * (FRAC_2_SQRT_PI * exp_neg_sq(ax))
    } else if ax < t.one_at {
        let n = t.cf[((ax - 2.0) / t.cf_step) as usize];
        let (mut a0, mut a1, mut b0, mut b1) = (1.0, ax, 0.0, 1.0);
        for k in 1..=n {
            let ak = f64::from(k) * 0.5;
            (a0, a1) = (a1, ax * a1 + ak * a0);
            (b0, b1) = (b1, ax * b1 + ak * b0);
        }
        1.0 - exp_neg_sq(ax) * (FRAC_2_SQRT_PI * 0.5) * (b1 / a1)
    } else if ax >= t.one_at {
        1.0
    } else {
        return x; // NaN
    };
    r.copysign(x)
}

/// The error function in `f64`, within 4 ulp (≈1e-15 relative) over the whole line.
pub(crate) fn erf_f64(x: f64) -> f64 {
    erf_with(x, &ERF_F64)
}

/// `f16`/`bf16`: stored in half precision, computed in `f32`.
pub(crate) trait Half: Element {
    /// Widen to `f32` (exact).
    fn up(self) -> f32;
    /// Round from `f32` to nearest.
    fn down(v: f32) -> Self;
    /// The bit pattern.
    fn to_bits(self) -> u16;
    /// From a bit pattern.
    fn from_bits(b: u16) -> Self;
}

impl Half for half::f16 {
    #[inline(always)]
    fn up(self) -> f32 {
        self.to_f32()
    }
    #[inline(always)]
    fn down(v: f32) -> Self {
        half::f16::from_f32(v)
    }
    #[inline(always)]
    fn to_bits(self) -> u16 {
        half::f16::to_bits(self)
    }
    #[inline(always)]
    fn from_bits(b: u16) -> Self {
        half::f16::from_bits(b)
    }
}

impl Half for half::bf16 {
    #[inline(always)]
    fn up(self) -> f32 {
        self.to_f32()
    }
    #[inline(always)]
    fn down(v: f32) -> Self {
        half::bf16::from_f32(v)
    }
    #[inline(always)]
    fn to_bits(self) -> u16 {
        half::bf16::to_bits(self)
    }
    #[inline(always)]
    fn from_bits(b: u16) -> Self {
        half::bf16::from_bits(b)
    }
}

/// The complex element types ([`Complex32`](crate::Complex32),
/// [`Complex64`](crate::Complex64)): the scalar functions of the table's `complex` arms.
/// Arithmetic is `num_complex`'s except division (Smith's scaled algorithm, as NumPy and
/// PyTorch's CPU kernels: no overflow from squaring the divisor); the transcendental
/// functions are `num_complex`'s principal branches.
pub(crate) trait Complex:
    Element + Add<Output = Self> + Sub<Output = Self> + Mul<Output = Self> + Neg<Output = Self>
{
    /// The type of the real and imaginary parts.
    type Part: Real;
    /// The real part.
    fn re(self) -> Self::Part;
    /// The imaginary part.
    fn im(self) -> Self::Part;
    /// `re + im·i`.
    fn make(re: Self::Part, im: Self::Part) -> Self;
    /// `self / d` by Smith's algorithm.
    #[inline(always)]
    fn div(self, d: Self) -> Self {
        let (a, b, c, e) = (self.re(), self.im(), d.re(), d.im());
        if c.abs() >= e.abs() {
            if c == Self::Part::ZERO && e == Self::Part::ZERO {
                // Division by zero: each part divided by a zero, as the real division.
                return Self::make(a / c, b / c);
            }
            let r = e / c;
            let den = c + e * r;
            Self::make((a + b * r) / den, (b - a * r) / den)
        } else {
            let r = c / e;
            let den = c * r + e;
            Self::make((a * r + b) / den, (b * r - a) / den)
        }
    }
    /// True when either part is NaN.
    #[inline(always)]
    fn is_nan(self) -> bool {
        self.re().is_nan() || self.im().is_nan()
    }
    /// True when either part is infinite.
    #[inline(always)]
    fn is_infinite(self) -> bool {
        self.re().is_infinite() || self.im().is_infinite()
    }
    /// True when both parts are finite.
    #[inline(always)]
    fn is_finite(self) -> bool {
        self.re().is_finite() && self.im().is_finite()
    }
    /// `1 / self`.
    #[inline(always)]
    fn recip(self) -> Self {
        Self::make(Self::Part::ONE, Self::Part::ZERO).div(self)
    }
    /// `self / |self|`, and 0 at 0 (PyTorch's `sgn`).
    #[inline(always)]
    fn sgn(self) -> Self {
        let m = self.re().hypot(self.im());
        if m == Self::Part::ZERO {
            Self::make(Self::Part::ZERO, Self::Part::ZERO)
        } else {
            Self::make(self.re() / m, self.im() / m)
        }
    }
    /// `eᶻ`.
    fn exp(self) -> Self;
    /// `eᶻ − 1`, accurate near 0 (`2·e^(z/2)·sinh(z/2)`).
    fn exp_m1(self) -> Self;
    /// `2ᶻ`.
    fn exp2(self) -> Self;
    /// The principal natural logarithm.
    fn ln(self) -> Self;
    /// `ln(1 + z)`.
    fn ln_1p(self) -> Self;
    /// `log₂ z`.
    fn log2(self) -> Self;
    /// `log₁₀ z`.
    fn log10(self) -> Self;
    /// The principal square root.
    fn sqrt(self) -> Self;
    /// `self^e`, principal branch.
    fn powc(self, e: Self) -> Self;
    /// Sine.
    fn sin(self) -> Self;
    /// Cosine.
    fn cos(self) -> Self;
    /// Tangent.
    fn tan(self) -> Self;
    /// Hyperbolic sine.
    fn sinh(self) -> Self;
    /// Hyperbolic cosine.
    fn cosh(self) -> Self;
    /// Hyperbolic tangent.
    fn tanh(self) -> Self;
    /// Arcsine.
    fn asin(self) -> Self;
    /// Arccosine.
    fn acos(self) -> Self;
    /// Arctangent.
    fn atan(self) -> Self;
    /// Inverse hyperbolic sine.
    fn asinh(self) -> Self;
    /// Inverse hyperbolic cosine.
    fn acosh(self) -> Self;
    /// Inverse hyperbolic tangent.
    fn atanh(self) -> Self;
}

macro_rules! complex_impl {
    ($($t:ty => $p:ty),*) => {$(
        impl Complex for $t {
            type Part = $p;
            #[inline(always)]
            fn re(self) -> $p {
                self.re
            }
            #[inline(always)]
            fn im(self) -> $p {
                self.im
            }
            #[inline(always)]
            fn make(re: $p, im: $p) -> Self {
                <$t>::new(re, im)
            }
            fn exp(self) -> Self {
                <$t>::exp(self)
            }
            fn exp_m1(self) -> Self {
                if self.re.abs() < 0.5 && self.im.abs() < 0.5 {
                    // e^z − 1 = expm1(x)·cos y − 2 sin²(y/2) + i·eˣ sin y (no cancellation).
                    let (x, y) = (self.re, self.im);
                    let h = (y * 0.5).sin();
                    // (+ 0: e^x·cos y − 1 at z = −0 + 0i is +0, not the −0 of expm1(−0).)
                    <$t>::new(
                        x.exp_m1() * y.cos() - 2.0 * h * h + 0.0,
                        x.exp() * y.sin(),
                    )
                } else {
                    <$t>::exp(self) - <$t>::new(1.0, 0.0)
                }
            }
            fn exp2(self) -> Self {
                <$t>::exp(self * std::f64::consts::LN_2 as $p)
            }
            fn ln(self) -> Self {
                <$t>::ln(self)
            }
            fn ln_1p(self) -> Self {
                let (x, y) = (self.re, self.im);
                if x.abs() < 0.5 && y.abs() < 0.5 {
                    // |1 + z|² − 1 = 2x + x² + y², so ln|1 + z| = ½·log1p(2x + x² + y²).
                    <$t>::new(0.5 * (2.0 * x + x * x + y * y).ln_1p(), y.atan2(1.0 + x))
                } else {
                    <$t>::ln(self + <$t>::new(1.0, 0.0))
                }
            }
            fn log2(self) -> Self {
                <$t>::log2(self)
            }
            fn log10(self) -> Self {
                <$t>::log10(self)
            }
            fn sqrt(self) -> Self {
                // t = √((|x| + |z|)/2) carries the larger part; the other is y/(2t), with no
                // cancellation (the library's polar form loses the small part's digits).
                let (x, y) = (self.re, self.im);
                if y.is_infinite() {
                    return <$t>::new(<$p>::INFINITY, y);
                }
                if x == 0.0 && y == 0.0 {
                    return <$t>::new(0.0, y);
                }
                let (ax, r) = (x.abs(), x.hypot(y));
                let mut h = (ax + r) * 0.5;
                if h.is_infinite() {
                    h = ax * 0.5 + r * 0.5;
                }
                let t = h.sqrt();
                if x >= 0.0 {
                    <$t>::new(t, y / (2.0 * t))
                } else {
                    <$t>::new(y.abs() / (2.0 * t), t.copysign(y))
                }
            }
            fn powc(self, e: Self) -> Self {
                if e.im == 0.0 {
                    // Small real exponents exactly, as PyTorch's `pow(z, scalar)`.
                    match e.re {
                        0.0 => return <$t>::new(1.0, 0.0),
                        1.0 => return self,
                        2.0 => return self * self,
                        3.0 => return self * self * self,
                        0.5 => return <$t>::sqrt(self),
                        -1.0 => return Complex::recip(self),
                        -2.0 => return Complex::recip(self * self),
                        _ => {}
                    }
                }
                if self.re == 0.0 && self.im == 0.0 {
                    // 0ᵉ: 0 for Re e > 0 (with Im e = 0), else NaN (as C's cpow).
                    return if e.re > 0.0 && e.im == 0.0 {
                        <$t>::new(0.0, 0.0)
                    } else {
                        <$t>::new(<$p>::NAN, <$p>::NAN)
                    };
                }
                <$t>::powc(self, e)
            }
            fn sin(self) -> Self {
                <$t>::sin(self)
            }
            fn cos(self) -> Self {
                <$t>::cos(self)
            }
            fn tan(self) -> Self {
                // tan z = −i·tanh(i·z): the tanh below saturates instead of dividing two
                // overflowed hyperbolic functions (the library's tan gives NaN for large Im z).
                let t = Complex::tanh(<$t>::new(-self.im, self.re));
                <$t>::new(t.im, -t.re)
            }
            fn sinh(self) -> Self {
                // sinh x·cos y + i·cosh x·sin y, with C99's values where a zero or an
                // infinity would make a 0·∞ (the library's formula gives NaN there).
                let (x, y) = (self.re, self.im);
                if y == 0.0 {
                    return <$t>::new(x.sinh(), y);
                }
                if (x == 0.0 || x.is_infinite()) && !y.is_finite() {
                    return <$t>::new(x, <$p>::NAN);
                }
                if x.is_infinite() {
                    return <$t>::new(x * y.cos(), <$p>::INFINITY * y.sin());
                }
                <$t>::sinh(self)
            }
            fn cosh(self) -> Self {
                // cosh x·cos y + i·sinh x·sin y, with C99's values as for sinh.
                let (x, y) = (self.re, self.im);
                if y == 0.0 {
                    let im = if x.is_nan() {
                        y
                    } else if x.is_infinite() {
                        x.signum() * y
                    } else {
                        x.sinh() * y
                    };
                    return <$t>::new(x.cosh(), im);
                }
                if x == 0.0 && !y.is_finite() {
                    return <$t>::new(<$p>::NAN, 0.0);
                }
                if x.is_infinite() {
                    return if y.is_finite() {
                        <$t>::new(<$p>::INFINITY * y.cos(), x * y.sin())
                    } else {
                        <$t>::new(<$p>::INFINITY, <$p>::NAN)
                    };
                }
                <$t>::cosh(self)
            }
            fn tanh(self) -> Self {
                let (x, y) = (self.re, self.im);
                if y == 0.0 {
                    // The real line, NaN + 0i included.
                    return <$t>::new(x.tanh(), y);
                }
                if !y.is_finite() && !x.is_infinite() {
                    // C99 (with C23's +0 + i·NaN for a zero Re).
                    return <$t>::new(if x == 0.0 { x } else { <$p>::NAN }, <$p>::NAN);
                }
                // For large |Re z|, tanh → ±1 + 0i·sign (the library's formula overflows).
                if self.re.abs() > 20.0 {
                    let s = self.re.signum();
                    if x.is_infinite() {
                        // ±1 + i·0 with y's sign (the array API's value; C99 leaves the
                        // zero's sign as sin 2y's).
                        return <$t>::new(s, (0.0 as $p).copysign(y));
                    }
                    let im = 4.0 * (2.0 * self.im).sin() * (-2.0 * self.re.abs()).exp();
                    return <$t>::new(s, im);
                }
                if x.is_nan() {
                    return <$t>::new(<$p>::NAN, <$p>::NAN);
                }
                // Kahan's form: with t = tan y, β = 1 + t², s = sinh x, ρ = √(1 + s²),
                // tanh z = (β·ρ·s + i·t) / (1 + β·s²). No cancellation near the poles (the
                // library's (sinh 2x + i sin 2y)/(cosh 2x + cos 2y) subtracts two values
                // near 1 there).
                let t = y.tan();
                let beta = 1.0 + t * t;
                let sh = x.sinh();
                let rho = (1.0 + sh * sh).sqrt();
                let den = 1.0 + beta * sh * sh;
                <$t>::new(beta * rho * sh / den, t / den)
            }
            fn asin(self) -> Self {
                // asin z = −i·asinh(i·z) (C99's definition, branch cuts included).
                let a = Complex::asinh(<$t>::new(-self.im, self.re));
                <$t>::new(a.im, -a.re)
            }
            fn acos(self) -> Self {
                let (x, y) = (self.re, self.im);
                if !(x.is_finite() && y.is_finite()) {
                    // The infinities and NaNs: π/2 − asin z gives C99's special values.
                    let a = Complex::asin(self);
                    return <$t>::new(std::f64::consts::FRAC_PI_2 as $p - a.re, -a.im);
                }
                // Kahan's formulas (no cancellation near ±1, no overflow for large |z|):
                // Re = 2·atan2(Re √(1−z), Re √(1+z)), Im = asinh(Im(conj(√(1+z))·√(1−z))).
                let s1 = Complex::sqrt(<$t>::new(1.0 - x, -y));
                let s2 = Complex::sqrt(<$t>::new(1.0 + x, y));
                <$t>::new(
                    2.0 * s1.re.atan2(s2.re),
                    (s2.re * s1.im - s2.im * s1.re).asinh(),
                )
            }
            fn atan(self) -> Self {
                // atan z = −i·atanh(i·z) (C99's definition).
                let a = Complex::atanh(<$t>::new(-self.im, self.re));
                <$t>::new(a.im, -a.re)
            }
            fn asinh(self) -> Self {
                let (x, y) = (self.re, self.im);
                if y == 0.0 {
                    // The real line (and its signed zero), NaN + 0i included.
                    return <$t>::new(x.asinh(), y);
                }
                // In the first quadrant, then the signs back (asinh is odd and commutes with
                // conjugation, so Re takes x's sign and Im y's, on the cuts too).
                let (ax, ay) = (x.abs(), y.abs());
                let a = if ax.hypot(ay) > 1e8 {
                    // asinh z = ln 2z to within 1/(4|z|²), and z² would overflow.
                    let l = <$t>::ln(<$t>::new(ax, ay));
                    <$t>::new(l.re + std::f64::consts::LN_2 as $p, l.im)
                } else {
                    // ln(z + √(z² + 1)) = log1p(z + z²/(1 + √(z² + 1))): no cancellation for
                    // Re z ≥ 0, and accurate near 0.
                    let z2 = <$t>::new(ax * ax - ay * ay, 2.0 * ax * ay);
                    let s = Complex::sqrt(<$t>::new(z2.re + 1.0, z2.im));
                    let q = Complex::div(z2, <$t>::new(1.0 + s.re, s.im));
                    Complex::ln_1p(<$t>::new(ax + q.re, ay + q.im))
                };
                <$t>::new(a.re.copysign(x), a.im.copysign(y))
            }
            fn acosh(self) -> Self {
                let (x, y) = (self.re, self.im);
                if !(x.is_finite() && y.is_finite()) {
                    // ±i·acos z, the sign that makes the real part non-negative (C99).
                    let w = Complex::acos(self);
                    return if -w.im < 0.0 {
                        <$t>::new(w.im, -w.re)
                    } else {
                        <$t>::new(-w.im, w.re)
                    };
                }
                // Kahan's formulas: Re = asinh(Re(conj(√(z−1))·√(z+1))),
                // Im = 2·atan2(Im √(z−1), Re √(z+1)).
                let s1 = Complex::sqrt(<$t>::new(x - 1.0, y));
                let s2 = Complex::sqrt(<$t>::new(x + 1.0, y));
                <$t>::new(
                    (s1.re * s2.re + s1.im * s2.im).asinh(),
                    2.0 * s1.im.atan2(s2.re),
                )
            }
            fn atanh(self) -> Self {
                use std::f64::consts::FRAC_PI_2;
                let (x, y) = (self.re, self.im);
                let half_pi = FRAC_PI_2 as $p;
                if x.is_nan() || y.is_nan() {
                    // C99's values: ±0 + i·(±π/2) for an infinite Im, ±0 + i·NaN for an
                    // infinite or zero Re, NaN + i·NaN otherwise.
                    return if y.is_infinite() {
                        <$t>::new((0.0 as $p).copysign(x), half_pi.copysign(y))
                    } else if x.is_infinite() || x == 0.0 {
                        <$t>::new((0.0 as $p).copysign(x), <$p>::NAN)
                    } else {
                        <$t>::new(<$p>::NAN, <$p>::NAN)
                    };
                }
                // atanh is odd and commutes with conjugation: the first quadrant, then Re
                // takes x's sign and Im y's (so x > 1 on the real line gets ±π/2 from the
                // sign of its zero imaginary part).
                let (ax, ay) = (x.abs(), y.abs());
                let (re, im) = if ax.is_infinite() || ay.is_infinite() {
                    (0.0, half_pi)
                } else if ax.hypot(ay) > 1e8 {
                    // atanh z = 1/z ± iπ/2 + O(1/z³): Re x/|z|², Im π/2 − y/|z|² (|z|² by
                    // the larger part, so that it cannot overflow).
                    if ax >= ay {
                        let r = ay / ax;
                        let re = 1.0 / (ax + ay * r);
                        (re, half_pi - r * re)
                    } else {
                        let r = ax / ay;
                        let q = 1.0 / (ax * r + ay);
                        (r * q, half_pi - q)
                    }
                } else {
                    // Re = ¼·log1p(4x / ((1 − x)² + y²)), Im = ½·atan2(2y, (1 − x)(1 + x) − y²):
                    // accurate near 0 and near ±1 (the library's difference of logarithms
                    // loses a small z's digits).
                    let d = (1.0 - ax) * (1.0 - ax) + ay * ay;
                    (
                        0.25 * (4.0 * ax / d).ln_1p(),
                        0.5 * (2.0 * ay).atan2((1.0 - ax) * (1.0 + ax) - ay * ay),
                    )
                };
                <$t>::new(re.copysign(x), im.copysign(y))
            }
        }
    )*};
}
complex_impl!(crate::Complex32 => f32, crate::Complex64 => f64);

/// An error for an op that has no kernel for a dtype, in PyTorch's words
/// (`"abs_cpu" not implemented for 'Bool'`).
pub(crate) fn not_implemented(op: &'static str, dt: DType) -> Error {
    Error::dtype(
        op,
        format!("\"{op}_cpu\" not implemented for '{}'", dt.legacy_name()),
    )
}

/// Dispatches once on a dtype: the integer arm runs with `$I` bound to the Rust integer
/// type, the real arm with `$R` bound to `f32`/`f64`, the half arm with `$H` bound to
/// `f16`/`bf16` (computed through `f32` with [`Half`]), the complex arm with `$C` bound
/// to [`Complex32`](crate::Complex32)/[`Complex64`](crate::Complex64), the bool arm for
/// `bool`.
macro_rules! dispatch {
    ($dt:expr;
     int $I:ident => $int:expr;
     real $R:ident => $real:expr;
     half $H:ident => $half:expr;
     complex $C:ident => $complex:expr;
     bool => $boolean:expr $(;)?) => {
        match $dt {
            $crate::DType::U8 => {
                type $I = u8;
                $int
            }
            $crate::DType::I8 => {
                type $I = i8;
                $int
            }
            $crate::DType::I16 => {
                type $I = i16;
                $int
            }
            $crate::DType::U16 => {
                type $I = u16;
                $int
            }
            $crate::DType::I32 => {
                type $I = i32;
                $int
            }
            $crate::DType::U32 => {
                type $I = u32;
                $int
            }
            $crate::DType::I64 => {
                type $I = i64;
                $int
            }
            $crate::DType::U64 => {
                type $I = u64;
                $int
            }
            $crate::DType::F32 => {
                type $R = f32;
                $real
            }
            $crate::DType::F64 => {
                type $R = f64;
                $real
            }
            $crate::DType::F16 => {
                type $H = $crate::half::f16;
                $half
            }
            $crate::DType::BF16 => {
                type $H = $crate::half::bf16;
                $half
            }
            $crate::DType::C64 => {
                type $C = $crate::Complex32;
                $complex
            }
            $crate::DType::C128 => {
                type $C = $crate::Complex64;
                $complex
            }
            $crate::DType::Bool => $boolean,
        }
    };
}
pub(crate) use dispatch;

/// The arm of a dtype class: the kernel when the table gives one, else "not implemented".
macro_rules! arm {
    ([$($run:tt)+] $op:ident, $dt:expr) => {
        $($run)+
    };
    ([] $op:ident, $dt:expr) => {
        Err(not_implemented($op, $dt))
    };
}

/// The `half` arm: the table's own, else its `real` arm in `f32`, else "not implemented".
macro_rules! half_arm {
    ([$($run:tt)+] [$($via:tt)*] $op:ident, $dt:expr) => {
        $($run)+
    };
    ([] [$($via:tt)+] $op:ident, $dt:expr) => {
        $($via)+
    };
    ([] [] $op:ident, $dt:expr) => {
        Err(not_implemented($op, $dt))
    };
}

pub(crate) use {arm, half_arm};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::vector_math::f32_math;

    #[test]
    fn erf_matches_known_values() {
        // Values from the C library's erf (correctly rounded to the digits shown).
        let cases = [
            (0.0, 0.0),
            (1e-10, 1.1283791670955126e-10),
            (0.5, 0.5204998778130465),
            (1.0, 0.8427007929497149),
            (1.5, 0.9661051464753108),
            (2.0, 0.9953222650189527),
            (2.5, 0.999593047982555),
            (3.0, 0.9999779095030014),
            (4.0, 0.9999999845827421),
            (7.0, 1.0),
        ];
        for (x, want) in cases {
            for s in [1.0, -1.0] {
                let got = erf_f64(s * x);
                assert!(
                    (got - s * want).abs() <= 2e-16 * want.max(1e-300) * 8.0,
                    "{x}: {got}"
                );
            }
        }
        assert!(erf_f64(f64::NAN).is_nan());
        assert!(f32_math::erf(f32::NAN).is_nan());
        assert_eq!(f32_math::erf(0.5), 0.5204998778130465f64 as f32);
        assert_eq!(f32_math::erf(-3.0), -0.9999779095030014f64 as f32);
        assert_eq!((f32_math::erf(4.5), erf_f64(f64::INFINITY)), (1.0, 1.0));
        assert!(erf_f64(-0.0).is_sign_negative());
    }

    #[test]
    fn complex_division_is_scaled() {
        use crate::Complex64 as C;
        let q = Complex::div(C::new(1e300, 1e300), C::new(2e300, 1e300));
        assert!(
            (q.re - 0.6).abs() < 1e-15 && (q.im - 0.2).abs() < 1e-15,
            "{q}"
        );
        let q = Complex::div(C::new(1e-300, 1e-300), C::new(1e-300, -1e-300));
        assert!(q.re.abs() < 1e-15 && (q.im - 1.0).abs() < 1e-15, "{q}");
        let q = Complex::div(C::new(3.0, 4.0), C::new(0.0, 2.0));
        assert_eq!(q, C::new(2.0, -1.5));
        let q = Complex::div(C::new(1.0, 1.0), C::new(0.0, 0.0));
        assert!(q.re.is_infinite() && q.im.is_infinite());
        assert!(Complex::div(C::new(0.0, 0.0), C::new(0.0, 0.0)).is_nan());
    }

    #[test]
    fn complex_inverse_functions_invert_their_functions() {
        use crate::Complex64 as C;
        // f(f⁻¹(z)) = z over moduli 1e-6..1e6 and every quadrant (a dense grid).
        for i in 0..40 {
            for j in 0..40 {
                let r = 10f64.powf(-6.0 + 12.0 * f64::from(i) / 39.0);
                let t = std::f64::consts::TAU * (f64::from(j) + 0.5) / 40.0;
                let z = C::new(r * t.cos(), r * t.sin());
                let pairs = [
                    Complex::sin(Complex::asin(z)),
                    Complex::cos(Complex::acos(z)),
                    Complex::tan(Complex::atan(z)),
                    Complex::sinh(Complex::asinh(z)),
                    Complex::cosh(Complex::acosh(z)),
                    Complex::tanh(Complex::atanh(z)),
                    Complex::sqrt(z) * Complex::sqrt(z),
                ];
                for (k, w) in pairs.into_iter().enumerate() {
                    // cos(acos z) and cosh(acosh z) of a small z evaluate cos near π/2,
                    // whose rounding is absolute: measured against max(|z|, 1). tan/tanh
                    // near their poles amplify the rounding of atan/atanh by up to |z|.
                    let e = (w - z).norm() / if k == 1 || k == 4 { r.max(1.0) } else { r };
                    let bound = if k == 2 || k == 5 {
                        1e-16 * r.max(1.0) * 100.0
                    } else {
                        1e-13
                    };
                    assert!(e < bound, "{k}: {z} -> {w}");
                }
            }
        }
        // The sign of a zero part picks the side of a branch cut.
        assert_eq!(Complex::sqrt(C::new(-4.0, -0.0)), C::new(0.0, -2.0));
        assert!(Complex::atanh(C::new(3.0, 0.0)).im > 1.57);
        assert!(Complex::atanh(C::new(3.0, -0.0)).im < -1.57);
        assert!(Complex::asinh(C::new(-0.0, 2.0)).re < 0.0);
        assert!(!Complex::tan(C::new(1.0, 45.0)).is_nan());
    }

    #[test]
    fn complex_pow_small_exponents_are_exact() {
        use crate::Complex64 as C;
        let z = C::new(1.0, 2.0);
        assert_eq!(Complex::powc(z, C::new(2.0, 0.0)), C::new(-3.0, 4.0));
        assert_eq!(Complex::powc(z, C::new(3.0, 0.0)), z * z * z);
        assert_eq!(Complex::powc(z, C::new(0.0, 0.0)), C::new(1.0, 0.0));
        assert_eq!(
            Complex::powc(C::new(0.0, 0.0), C::new(2.5, 0.0)),
            C::new(0.0, 0.0)
        );
        assert!(Complex::powc(C::new(0.0, 0.0), C::new(-1.5, 0.0)).is_nan());
        let w = Complex::powc(z, C::new(0.5, 1.0));
        let want = (C::new(0.5, 1.0) * z.ln()).exp();
        assert!((w - want).norm() < 1e-15);
    }

    #[test]
    fn integer_semantics() {
        assert_eq!(floor_div_int(-7i32, 2), -4);
        assert_eq!(floor_div_int(7i32, -2), -4);
        assert_eq!(floor_div_int(i8::MIN, -1), i8::MIN);
        assert_eq!(remainder_int(-7i32, 2), 1);
        assert_eq!(remainder_int(7i32, -2), -1);
        assert_eq!(remainder_int(i64::MIN, -1), 0);
        assert_eq!(pow_int(3i64, 4), 81);
        assert_eq!(pow_int(-1i8, -3), -1);
        assert_eq!(pow_int(2u8, 9), 0);
        assert_eq!(shl_int(1i8, 7), i8::MIN);
        assert_eq!(shl_int(1i8, 8), 0);
        assert_eq!(shl_int(1i8, -1), 0);
        assert_eq!(shr_int(-128i8, 9), -1);
        assert_eq!(shr_int(200u8, 8), 0);
        assert_eq!(shr_int(-8i32, 1), -4);
        assert_eq!(i8::MIN.w_abs(), i8::MIN);
    }
}
