//! Transcendental functions written for vector code: branch-free, call-free, inlined.
//!
//! The elementwise loops (`kernel/elementwise_loops.rs`) map an op's scalar function over
//! blocks of 64 elements, compiled once per CPU level (`kernel/cpu.rs`). A function the
//! compiler can turn into vector code there must not branch on the value or call out: the
//! C library's `expf`, `sinf`, … did both, so each element cost a call and the loops stayed
//! scalar. The functions here compute every case with arithmetic and selects (`if` between
//! two already computed values, which becomes a blend), so one element's path is every
//! element's path.
//!
//! **float32** (`f32_math.rs`). The exponentials and logarithms (`exp exp2 expm1 log
//! log2 log10 log1p`), the circular functions and their inverses (`sin cos tan asin acos
//! atan`) and `sigmoid`, `sinh`, `cosh`, `atanh` compute in float32 itself, sixteen lanes
//! to an AVX-512 register (computing them in float64, as they did first, halved the
//! lanes and cost the conversions: 1.5–7× NumPy's time at AVX-512). The reductions are
//! Cody–Waite with split constants, exact without a fused multiply-add (π/2 in four parts
//! for the circular functions, with an error-free low word); the polynomials are Cephes'
//! (`expf`, `exp2f`, `sinf`, `tanf`, `asinf`, `sinhf`, `atanhf`) and FreeBSD's (`k_logf.h`:
//! `ln(1 + f)` through `s = f/(2 + f)`; `log2` and `log10` keep a 12-bit head whose
//! products with split constants are exact; `s_atanf.c`). Measured worst cases (every
//! float32 in development; dense sweeps at every level in the tests): `exp` 0.93 ulp,
//! `exp2` 1.17, `expm1` 1.53, `log` 0.78, `log2` 0.83, `log10` 0.81, `log1p` 0.78, `sin`
//! 1.00, `cos` 1.03, `tan` 1.73, `asin` 0.70, `acos` 0.69, `atan` 0.91, `sinh` 1.51,
//! `cosh` 1.30, `atanh` 1.18, `sigmoid` 2.11 (the exponential's error, a sum and a
//! quotient). Some run as [`VectorFn`]s, a fast form over the common inputs and a
//! per-element fallback for the rest, recomputed after the block: the logarithms (fast:
//! positive normal inputs; the full form's subnormal scaling and special-case selects
//! cost about as much again as the logarithm) and `sin`, `cos`, `tan` (fast: `|x| ≤
//! 12867`, where the reduction is exact enough; beyond, the float64 form below, and the
//! C library's float64 function beyond 5·10⁸). `tanh`, `erf`, `asinh`, `acosh` compute
//! in float64, one rational function or one logarithm each, and round once (within
//! 0.502 ulp): the portable float32 forms of `asinh` and `acosh` that were written and
//! measured (a square root, a division and `log1p` in float32) were slower than these at
//! AVX-512 (the AVX-512 kernels below, on a table-driven logarithm, are faster).
//! The tests in `accuracy_tests.rs` sweep every function against the float64 C library,
//! a higher-precision reference for float32, and assert the bound.
//!
//! **float64** (`f64_math.rs`): every function, on fdlibm's reductions (Cody–Waite with
//! split constants, exact without a fused multiply-add) and polynomials, their branches
//! turned into selects and the divisions of alternative branches shared. `sin`, `cos`,
//! `tan` reduce by a four-part π/2 up to 2²⁰ and take the C library's function beyond
//! (its full-range reduction needs more than double precision), a block at a time as
//! float32 does; the other functions have no rare inputs and run through the same block
//! form ([`f64_math::run_vector`]). Bounds in ulps of the exact result (tested against
//! the C library in `accuracy_tests.rs` and against mpmath in
//! `python/tests/test_vector_math.py`): 1 for the exponentials, logarithms, circular
//! functions and their inverses and `erf`; 1.5 for `expm1`, `tanh`, `sinh`, `cosh`,
//! `acosh`; 2 for `asinh`; 2.5 for `atanh`.
//!
//! The functions above use no fused multiply-add: the portable build has none (it would
//! be a library call). So the portable and AVX2 levels compute bit-identical results.
//!
//! **AVX-512 kernels** (`avx512_f32.rs`, `avx512_f64.rs`): `exp exp2 expm1 log log2
//! log10 log1p tanh sinh cosh asinh acosh atanh atan asin acos tan sigmoid erf gelu`, in
//! float32 and float64, and float32 `sin cos`, have a second form for the AVX-512 level, written with
//! `std::arch` intrinsics (float16 and bfloat16 run the float32 kernels on their widened blocks,
//! [`run_half`]): sixteen-entry tables
//! looked up by one permute (`2^(j/16)`; the logarithms of sixteen interval centres around
//! 1; float32 `tanh`: thirty-two polynomials), fused multiply-adds, `vscalef` for the
//! power of two; the hyperbolic functions from the exponential's pieces, their inverses as
//! one logarithm of an argument carried as a pair. Without tables and fused multiply-adds
//! the portable forms (a division each) stayed 1.2–2.4× NumPy's time (whose AVX-512 loops
//! are Intel's SVML). Their results are within the same bounds but not bit-identical to
//! the other levels' (measured worst, every 7th float32, every float32 for `asin acos
//! expm1 sinh cosh`: `exp` 0.75 ulp, `exp2` 0.75,
//! `expm1` 1.29, `log` 0.97, `log2` 1.18, `log10` 1.35, `log1p` 1.01, `tanh` 1.0, `sinh` 0.78, `cosh`
//! 0.88, `asinh` 1.02, `acosh` 0.78, `atanh` 1.0, `atan` 0.90, `asin` 0.69, `acos` 0.67,
//! `sin` 0.93, `cos` 0.88, `tan` 1.51; float64 0.51–0.87 ulp of mpmath, `expm1` 0.98,
//! `atan` 0.76, `asin` 0.63, `acos` 0.60, `tan` 1.54; `sigmoid` 1.99 float32, 2.0
//! float64, the exponential's pieces and one division). Float32 `erf` (0.99 ulp) is `a +
//! a·P(a²)` below 1 and `1 − e^(−a²)·R((a − 2)/(a + 2))` above, `a²` carried as an exact
//! pair; `gelu` is one form for every lane, `x·Φ(−a) = (x·S(a))·e^(−a²/2)` with `a = |x|`
//! and `S` a polynomial in `(a − 2√2)/(a + 2√2)`, subtracted from `x` for x > 0: 4.1 ulp
//! for x ≥ 0 (the portable expression 1.52), 6.4 relative for x < 0 down to where the
//! result underflows, where the expression's cancelling `1 + erf` has `|x|·2⁻²⁴`
//! absolute. Float64 `erf` is the portable fdlibm form with each interval's coefficients
//! looked up by one permute and the polynomials fused (1.0 ulp, as the portable form);
//! float64 `gelu` the op table's expression on it. The portable function stays what single elements get at every level
//! ([`Map1::one`](crate::kernel::elementwise_loops::Map1::one): a broadcast input), and
//! the kernel takes a run's tail through masked loads, so within a run an element's result
//! does not depend on its position. The maps pairing the two are [`kernel_map!`]s.

use crate::error::Result;
use crate::kernel::elementwise_loops::unary_into;
use crate::ops::table::{Cost, Unary};
use crate::{DType, Tensor};

#[cfg(target_arch = "x86_64")]
mod avx512_f32;
#[cfg(target_arch = "x86_64")]
mod avx512_f64;
/// A binary map over one float type whose block is a plain loop over the expression: a
/// function this large stays vector code that way (as a fn item, or through
/// `array::from_fn`, it stayed a call per element); with the binary block loops' AVX-512
/// copy (`Map2::AVX512`).
macro_rules! plain_map2 {
    ($(#[$doc:meta])* $t:ty, $name:ident, |$a:ident, $b:ident| $e:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, Default)]
        pub(crate) struct $name;

        impl $crate::kernel::elementwise_loops::Map2<$t, $t, $t> for $name {
            #[inline(always)]
            fn one(&self, $a: $t, $b: $t) -> $t {
                $e
            }

            #[inline(always)]
            fn block(
                &self,
                x: &[$t; $crate::kernel::elementwise_loops::RUN_BLOCK],
                y: &[$t; $crate::kernel::elementwise_loops::RUN_BLOCK],
            ) -> [$t; $crate::kernel::elementwise_loops::RUN_BLOCK] {
                let mut r = [0.0; $crate::kernel::elementwise_loops::RUN_BLOCK];
                for i in 0..$crate::kernel::elementwise_loops::RUN_BLOCK {
                    let ($a, $b) = (x[i], y[i]);
                    r[i] = $e;
                }
                r
            }

            const AVX512: bool = true;
        }
    };
}

/// A map (`$inner`: the portable function or vector function, which every level but
/// AVX-512 runs, and single elements everywhere) paired with an AVX-512 kernel
/// (`avx512_f32.rs`, `avx512_f64.rs`), which the AVX-512 copy of the block loops runs.
macro_rules! kernel_map {
    ($(#[$doc:meta])* $t:ty, $name:ident, $inner:expr, $file:ident, $func:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, Default)]
        pub(crate) struct $name;

        impl $crate::kernel::elementwise_loops::Map1<$t, $t> for $name {
            #[inline(always)]
            fn one(&self, a: $t) -> $t {
                $crate::kernel::elementwise_loops::Map1::one(&$inner, a)
            }

            #[inline(always)]
            fn block(
                &self,
                x: &[$t; $crate::kernel::elementwise_loops::RUN_BLOCK],
            ) -> [$t; $crate::kernel::elementwise_loops::RUN_BLOCK] {
                $crate::kernel::elementwise_loops::Map1::block(&$inner, x)
            }

            #[inline(always)]
            fn slices(&self, x: &[$t], o: &mut [$t]) {
                $crate::kernel::elementwise_loops::Map1::slices(&$inner, x, o)
            }

            #[cfg(target_arch = "x86_64")]
            const AVX512: bool = true;

            #[cfg(target_arch = "x86_64")]
            #[inline(always)]
            unsafe fn run_avx512(&self, o: *mut $t, x: *const $t, n: usize) {
                // SAFETY: the caller's contract (an AVX-512 CPU; the runs valid).
                unsafe {
                    $crate::kernel::vector_math::$file::run(
                        $crate::kernel::vector_math::$file::Func::$func,
                        o,
                        x,
                        n,
                    )
                }
            }
        }
    };
}

pub(crate) mod f32_math;
pub(crate) mod f64_math;

#[cfg(test)]
mod accuracy_tests;

/// Runs the float32 and float64 ops that have their own map: a per-block fixup
/// ([`VectorFn`]: float32 `sin`, `cos`, `tan` below AVX-512, whose float32 reduction holds
/// below 12867; the float64 ops of [`f64_math::run_vector`]) or an AVX-512 kernel
/// ([`kernel_map!`]: `exp exp2 expm1 log log2 log10 log1p tanh sinh cosh asinh acosh
/// atanh atan asin acos tan sigmoid erf gelu`, float32 `sin cos`); `None` for every other
/// op and dtype, which the
/// table's generated dispatch runs (`kernel/unary.rs`).
pub(crate) fn run_with_fixup(kind: Unary, out: &Tensor, a: &Tensor) -> Option<Result<()>> {
    if a.dtype() == DType::F64 && out.dtype() == DType::F64 {
        return f64_math::run_vector(kind, out, a);
    }
    if a.dtype() == out.dtype() && matches!(a.dtype(), DType::F16 | DType::BF16) {
        return run_half(kind, out, a);
    }
    if a.dtype() != DType::F32 || out.dtype() != DType::F32 {
        return None;
    }
    let op = kind.name();
    Some(match kind {
        Unary::Sin => unary_into::<f32, f32, _, true>(op, Cost::Math, out, a, f32_math::SinMap),
        Unary::Cos => unary_into::<f32, f32, _, true>(op, Cost::Math, out, a, f32_math::CosMap),
        Unary::Tan => unary_into::<f32, f32, _, true>(op, Cost::Math, out, a, f32_math::TanMap),
        Unary::Exp => unary_into::<f32, f32, _, true>(op, Cost::Math, out, a, f32_math::ExpMap),
        Unary::Exp2 => unary_into::<f32, f32, _, true>(op, Cost::Math, out, a, f32_math::Exp2Map),
        Unary::Log => unary_into::<f32, f32, _, true>(op, Cost::Math, out, a, f32_math::LnMap),
        Unary::Log2 => unary_into::<f32, f32, _, true>(op, Cost::Math, out, a, f32_math::Log2Map),
        Unary::Log10 => unary_into::<f32, f32, _, true>(op, Cost::Math, out, a, f32_math::Log10Map),
        Unary::Log1p => unary_into::<f32, f32, _, true>(op, Cost::Math, out, a, f32_math::Ln1pMap),
        Unary::Expm1 => unary_into::<f32, f32, _, true>(op, Cost::Math, out, a, f32_math::Expm1Map),
        Unary::Tanh => unary_into::<f32, f32, _, true>(op, Cost::Math, out, a, f32_math::TanhMap),
        Unary::Sinh => unary_into::<f32, f32, _, true>(op, Cost::Math, out, a, f32_math::SinhMap),
        Unary::Cosh => unary_into::<f32, f32, _, true>(op, Cost::Math, out, a, f32_math::CoshMap),
        Unary::Asinh => unary_into::<f32, f32, _, true>(op, Cost::Math, out, a, f32_math::AsinhMap),
        Unary::Acosh => unary_into::<f32, f32, _, true>(op, Cost::Math, out, a, f32_math::AcoshMap),
        Unary::Atanh => unary_into::<f32, f32, _, true>(op, Cost::Math, out, a, f32_math::AtanhMap),
        Unary::Atan => unary_into::<f32, f32, _, true>(op, Cost::Math, out, a, f32_math::AtanMap),
        Unary::Asin => unary_into::<f32, f32, _, true>(op, Cost::Math, out, a, f32_math::AsinMap),
        Unary::Acos => unary_into::<f32, f32, _, true>(op, Cost::Math, out, a, f32_math::AcosMap),
        Unary::Sigmoid => {
            unary_into::<f32, f32, _, true>(op, Cost::Math, out, a, f32_math::SigmoidMap)
        }
        Unary::Erf => unary_into::<f32, f32, _, true>(op, Cost::Math, out, a, f32_math::ErfMap),
        Unary::Gelu => unary_into::<f32, f32, _, true>(op, Cost::Math, out, a, f32_math::GeluMap),
        _ => return None,
    })
}

/// A float32 AVX-512 kernel (`avx512_f32.rs`), named so the half dtypes' block loops
/// (`elementwise_loops::unary_half_kernel_into`) can run it on their widened blocks.
#[cfg(target_arch = "x86_64")]
pub(crate) use avx512_f32::Func as F32Kernel;

/// No float32 kernels off x86-64 (an empty type: `Option<F32Kernel>` is always `None`).
#[cfg(not(target_arch = "x86_64"))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum F32Kernel {}

/// `o[k] = kernel(x[k])` for `n` float32.
///
/// # Safety
/// The CPU has AVX-512F and DQ; `x` readable and `o` writable for `n` float32, disjoint
/// or identical.
#[inline(always)]
pub(crate) unsafe fn run_f32_kernel(kernel: F32Kernel, o: *mut f32, x: *const f32, n: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the caller's contract.
    unsafe {
        avx512_f32::run(kernel, o, x, n)
    }
    #[cfg(not(target_arch = "x86_64"))]
    match kernel {}
}

/// The float16 and bfloat16 ops whose float32 form has an AVX-512 kernel: computed in
/// float32 a block at a time as the op table's half arms are, the kernel running on the
/// widened blocks at the AVX-512 level (the portable function elsewhere); `None` for the
/// other ops.
fn run_half(kind: Unary, out: &Tensor, a: &Tensor) -> Option<Result<()>> {
    use crate::kernel::elementwise_loops::{unary_half_kernel_into, Map1};
    #[cfg(target_arch = "x86_64")]
    use avx512_f32::Func;
    macro_rules! go {
        ($map:expr, $func:ident) => {{
            let m = $map;
            #[cfg(target_arch = "x86_64")]
            let kernel = Some(Func::$func);
            #[cfg(not(target_arch = "x86_64"))]
            let kernel = None;
            let op = kind.name();
            let f = move |x: f32| m.one(x);
            Some(if a.dtype() == DType::F16 {
                unary_half_kernel_into::<half::f16, _>(op, Cost::Math, out, a, f, kernel)
            } else {
                unary_half_kernel_into::<half::bf16, _>(op, Cost::Math, out, a, f, kernel)
            })
        }};
    }
    match kind {
        Unary::Exp => go!(f32_math::ExpMap, Exp),
        Unary::Exp2 => go!(f32_math::Exp2Map, Exp2),
        Unary::Expm1 => go!(f32_math::Expm1Map, Expm1),
        Unary::Log => go!(f32_math::LnMap, Ln),
        Unary::Log2 => go!(f32_math::Log2Map, Log2),
        Unary::Log10 => go!(f32_math::Log10Map, Log10),
        Unary::Log1p => go!(f32_math::Ln1pMap, Ln1p),
        Unary::Sin => go!(f32_math::SinMap, Sin),
        Unary::Cos => go!(f32_math::CosMap, Cos),
        Unary::Tan => go!(f32_math::TanMap, Tan),
        Unary::Tanh => go!(f32_math::TanhMap, Tanh),
        Unary::Sinh => go!(f32_math::SinhMap, Sinh),
        Unary::Cosh => go!(f32_math::CoshMap, Cosh),
        Unary::Asinh => go!(f32_math::AsinhMap, Asinh),
        Unary::Acosh => go!(f32_math::AcoshMap, Acosh),
        Unary::Atanh => go!(f32_math::AtanhMap, Atanh),
        Unary::Atan => go!(f32_math::AtanMap, Atan),
        Unary::Asin => go!(f32_math::AsinMap, Asin),
        Unary::Acos => go!(f32_math::AcosMap, Acos),
        Unary::Sigmoid => go!(f32_math::SigmoidMap, Sigmoid),
        Unary::Erf => go!(f32_math::ErfMap, Erf),
        Unary::Gelu => go!(f32_math::GeluMap, Gelu),
        _ => None,
    }
}

/// `1.5·2⁵²`: adding it rounds a float64 of magnitude below 2⁵¹ to an integer (ties to
/// even), which its low bits then hold.
const ROUND_MAGIC: f64 = 6_755_399_441_055_744.0;

/// `x` rounded to the nearest integer (ties to even), as a float and as an integer; for
/// `|x| < 2⁵¹` (other values give garbage that callers select away).
#[inline(always)]
fn round_int(x: f64) -> (f64, i64) {
    let t = x + ROUND_MAGIC;
    let k = (t.to_bits() as i64).wrapping_sub(ROUND_MAGIC.to_bits() as i64);
    (t - ROUND_MAGIC, k)
}

/// `2ᵏ` for `-1022 ≤ k ≤ 1023` (other values give garbage that callers select away).
#[inline(always)]
fn pow2(k: i64) -> f64 {
    f64::from_bits((k.wrapping_add(1023) as u64) << 52)
}

/// `[1/s!, 1/(s + 1)!, …]`, `N` of them: the Taylor coefficients of the exponential from
/// the `s`th. Each `k!` is exact in float64 up to 22!, so each entry is the correctly
/// rounded `1/k!`, as a literal `1.0 / k!` would be.
pub(super) const fn inv_factorials<const N: usize>(s: usize) -> [f64; N] {
    let mut out = [0.0; N];
    let mut f = 1.0;
    let mut k = 1;
    while k <= s {
        f *= k as f64;
        k += 1;
    }
    let mut i = 0;
    while i < N {
        out[i] = 1.0 / f;
        i += 1;
        f *= (s + i) as f64;
    }
    out
}

/// The polynomial `c[0] + x·(c[1] + x·(…))` (Horner).
#[inline(always)]
fn horner<const N: usize>(x: f64, c: [f64; N]) -> f64 {
    let mut acc = c[N - 1];
    for k in (0..N - 1).rev() {
        acc = acc * x + c[k];
    }
    acc
}
