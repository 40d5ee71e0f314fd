//! THE elementwise op table: every unary, binary and ternary op declared once.
//!
//! An entry gives the op's enum variant and name, its in-place variant (if any), its dtype
//! rule (PyTorch's), its cost class, its CUDA expression, its scalar function(s) and its
//! doc text:
//!
//! ```text
//! /// Hyperbolic sine.                        ← the doc of Tensor::sinh (and the Python method)
//! Sinh sinh inplace(sinh_) rule(Float) cost(Math) cuda(real "m_sinh(x)";)
//!     kernel(same |x| real x.sinh(););
//! ```
//!
//! Everything else is generated from the table by macros that receive it through
//! [`for_each_unary_op!`](crate::for_each_unary_op) and
//! [`for_each_binary_op!`](crate::for_each_binary_op):
//! - here: the [`Unary`] and [`Binary`] enums, `name()`, `rule()`, `cost()`, the `Tensor`
//!   methods and in-place methods with their docs, and [`OP_TABLE`];
//! - in `kernel/unary.rs` and `kernel/binary.rs`: the CPU dispatch (`run_unary`,
//!   `run_binary`), one monomorphised closure per op and dtype (the dtype is matched once
//!   per call, never per element);
//! - in the Python binding (`strata-py/src/elementwise.rs`): one native method per name,
//!   and `_strata._op_table()`, from which `strata/__init__.py` builds its functions.
//!
//! `cuda(...)` gives the op's CUDA C++ expression per dtype class ([`CudaClass`]); the CUDA
//! backend (`backend/cuda/`) compiles its elementwise kernels from it at run time.
//!
//! **Adding an op** is one entry here (plus a scalar function in `kernel/math.rs` when the
//! body is more than an expression) and its lines in `python/strata/__init__.pyi` (a test
//! fails until they are there).
//!
//! # The kernel forms
//!
//! `kernel(FORM |x| ARMS)` (binary: `|a, b|`), each arm an expression followed by `;`;
//! a dtype class without an arm is refused with PyTorch's "not implemented" text:
//! - `same`: the result has the compute dtype. Arms `int` (`I`: the Rust integer type),
//!   `real` (`R`: `f32`/`f64`), `half` (`H`: `f16`/`bf16`; by default the `real` arm in
//!   `f32`, rounded back) and `bool`.
//! - `pred`: a bool result; arms as `same`.
//! - `any_dtype`: a bool result, one arm generic over every dtype (`T: Element`).
//!
//! The scalar functions are written with the traits of `kernel/math.rs` (`Int`, `Real`,
//! `Half`) and the helpers there.
//!
//! # Dtype rules
//!
//! [`UnaryRule`] and [`BinaryRule`]: which compute and result dtype an input gives, or
//! which error (applied by `ops/elementwise.rs` before anything is allocated).

#[allow(unused_imports)]
use super::elementwise_grad::{
    copysign_grad, fpick_grad, gelu_slope, one_minus, pick_grad, pow_grad_base, pow_grad_exponent,
    xlogy_grad,
};
use crate::dtype::DType;

/// How much work an op does per element: decides how soon a kernel goes parallel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cost {
    /// Memory-bound arithmetic (`add`, `neg`, comparisons): worth threads only for large
    /// tensors.
    Memory,
    /// A transcendental function (nanoseconds per element): worth a second thread sooner.
    Math,
}

/// What a unary op does with a bool input whose dtype it keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BoolIn {
    /// PyTorch's "not implemented for 'Bool'".
    Refuse,
    /// An error with this text.
    Error(&'static str),
    /// Keep bool (the kernel's `bool` arm).
    Keep,
    /// Compute in, and return, this dtype (`square` of bool is int64).
    As(DType),
}

/// The dtype rule of a unary op (PyTorch's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnaryRule {
    /// The input's dtype out; bool as given.
    Keep(BoolIn),
    /// Float-only math: integer and bool inputs compute in float32 (the default dtype).
    Float,
    /// A predicate of the value: bool out (a bool input computes as uint8).
    Pred,
    /// A predicate of any dtype (bool included): bool out.
    Logical,
    /// Integers and bool only; floats are refused.
    IntOnly,
}

/// What a binary op does with bool operands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BoolIn2 {
    /// A bool promoted dtype is refused ("not implemented for 'Bool'").
    Refuse,
    /// A bool promoted dtype runs the kernel's `bool` arm.
    Keep,
    /// Any bool operand is an error: the first text when both are bool, else the second.
    Error(&'static str, &'static str),
}

/// The dtype rule of a binary op (PyTorch's), applied to the promoted dtype of the
/// operands (scalars weak).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryRule {
    /// The promoted dtype out.
    Keep(BoolIn2),
    /// Integers and bool only; floats are refused.
    IntOnly(BoolIn2),
    /// Float math: integer and bool operands compute in float32.
    Float,
    /// Float dtypes only: integer and bool operands are refused (no promotion).
    FloatOnly,
    /// Comparisons and logical ops: computed in the promoted dtype, bool out.
    Compare,
}

/// A check a binary op makes on integer operands before anything is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// None.
    Nothing,
    /// An integer zero divisor is an error ("ZeroDivisionError").
    ZeroDivisor,
    /// A negative integer exponent is an error.
    NegativeExponent,
}

/// The dtype class a `cuda(...)` arm of the table serves.
///
/// The arms are C++ expressions over the operands `x` (unary) or `a`, `b` (binary) of the
/// kernel's compute type `T` (`float` for the half types, `bool` for bool), calling the
/// helpers of the CUDA prelude (`backend/cuda/source.rs`): `int` for the integer dtypes,
/// `real` for `f32`/`f64` (and the half types unless a `half` arm is given), `bool`, and
/// `any` for every dtype.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CudaClass {
    /// Signed and unsigned integers.
    Int,
    /// `f32` and `f64`.
    Real,
    /// `f16` and `bf16` (computed in `float`).
    Half,
    /// `bool`.
    Bool,
    /// `complex64`/`complex128`: no CUDA kernels yet, so every op is "not implemented".
    Complex,
}

impl CudaClass {
    /// The class of `dtype`.
    pub fn of(dtype: DType) -> CudaClass {
        match dtype {
            DType::Bool => CudaClass::Bool,
            DType::F16 | DType::BF16 => CudaClass::Half,
            DType::F32 | DType::F64 => CudaClass::Real,
            DType::C64 | DType::C128 => CudaClass::Complex,
            _ => CudaClass::Int,
        }
    }

    /// The arm of `arms` for this class.
    fn pick(self, arms: &[(&'static str, &'static str)]) -> Option<&'static str> {
        let find = |name: &str| arms.iter().find(|(a, _)| *a == name).map(|(_, e)| *e);
        let own = match self {
            CudaClass::Int => find("int"),
            CudaClass::Real => find("real"),
            CudaClass::Half => find("half").or_else(|| find("real")),
            CudaClass::Bool => find("bool"),
            CudaClass::Complex => return None,
        };
        own.or_else(|| find("any"))
    }
}

/// PyTorch's text for `-bool_tensor`.
pub(crate) const NEG_BOOL: &str = "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.";
/// PyTorch's text for `bool - bool`.
pub(crate) const SUB_BOOLS: &str = "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` operator instead.";
/// PyTorch's text for `bool - x`.
pub(crate) const SUB_BOOL: &str = "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.";

/// The unary op table. Invokes `$cb! { entries }`; see the [module doc](self).
#[doc(hidden)]
#[macro_export]
macro_rules! for_each_unary_op {
    ($cb:ident) => {
        $cb! {
            /// `-x`. Integers wrap (`-i8::MIN == i8::MIN`, unsigned wrap modulo 2ⁿ); a bool
            /// tensor is an error with PyTorch's text.
            Neg neg inplace(neg_) rule(Keep(BoolIn::Error(NEG_BOOL))) cost(Memory)
                cuda(int "wneg(x)"; real "-x";)
                kernel(same |x| int x.w_neg(); real -x; complex -x;) grad(none |_s, g| g.neg());
            /// `+x`: a copy (PyTorch returns the input itself). A bool tensor is an error.
            Positive positive inplace() rule(Keep(BoolIn::Error("The `+` operator, on a bool tensor is not supported."))) cost(Memory)
                cuda(int "x"; real "x";)
                kernel(same |x| int x; real x; complex x;) grad(none |_s, g| Ok(g.clone()));
            /// `|x|`, keeping the dtype; `abs(i8::MIN) == i8::MIN` as in PyTorch. Not for bool.
            Abs abs inplace(abs_) rule(Keep(BoolIn::Refuse)) cost(Memory)
                cuda(int "wabs(x)"; real "m_fabs(x)";)
                kernel(same |x| int x.w_abs(); real x.abs();) grad(x |x, g| g.mul(&x.sign()?));
            /// `-1`, `0` or `1` in the input's dtype (bool: itself). NaN gives NaN (NumPy)
            /// rather than PyTorch's `0`; `sign(-0.0)` is `0.0`.
            Sign sign inplace(sign_) rule(Keep(BoolIn::Keep)) cost(Memory)
                cuda(int "isgn(x)"; real "rsgn(x)"; bool "x";)
                kernel(same |x| int x.sign(); real sign_real(x); bool x;) grad(zero);
            /// The sign generalised to complex numbers: `z / |z|` (0 at 0); for real
            /// dtypes the same as [`sign`](Self::sign).
            Sgn sgn inplace(sgn_) rule(Keep(BoolIn::Keep)) cost(Memory)
                cuda(int "isgn(x)"; real "rsgn(x)"; bool "x";)
                kernel(same |x| int x.sign(); real sign_real(x); complex x.sgn(); bool x;) grad(zero);
            /// `x·x`, keeping the dtype (integers wrap); bool gives int64, as PyTorch.
            Square square inplace(square_) rule(Keep(BoolIn::As(DType::I64))) cost(Memory)
                cuda(int "wmul(x, x)"; real "x * x";)
                kernel(same |x| int x.w_mul(x); real x * x; complex x * x;) grad(x |x, g| g.mul(&x.mul(2.0)?));
            /// `max(x, 0)`; NaN stays NaN. Not for bool.
            Relu relu inplace(relu_) rule(Keep(BoolIn::Error("Boolean inputs not supported for relu"))) cost(Memory)
                cuda(int "(isneg(x) ? (T)0 : x)"; real "(x < (T)0 ? (T)0 : x)";)
                kernel(same |x| int if x.is_neg() { I::ZERO } else { x }; real if x < R::ZERO { R::ZERO } else { x };) grad(y |y, g| g.mul(&y.gt(0.0)?));
            /// `√x`.
            Sqrt sqrt inplace(sqrt_) rule(Float) cost(Memory) cuda(real "m_sqrt(x)";) kernel(same |x| real x.sqrt(); complex x.sqrt();) grad(y |y, g| g.div(&y.mul(2.0)?));
            /// `1/√x`.
            Rsqrt rsqrt inplace(rsqrt_) rule(Float) cost(Memory) cuda(real "(T)1 / m_sqrt(x)";) kernel(same |x| real R::ONE / x.sqrt(); complex x.sqrt().recip();) grad(y |y, g| g.mul(&y.mul(y)?.mul(y)?.mul(-0.5)?));
            /// `eˣ`.
            Exp exp inplace(exp_) rule(Float) cost(Math) cuda(real "m_exp(x)";) kernel(same |x| real x.exp(); complex x.exp();) grad(y |y, g| g.mul(y));
            /// `2ˣ`.
            Exp2 exp2 inplace(exp2_) rule(Float) cost(Math) cuda(real "m_exp2(x)";) kernel(same |x| real x.exp2(); complex x.exp2();) grad(y |y, g| g.mul(&y.mul(std::f64::consts::LN_2)?));
            /// Natural logarithm.
            Log log inplace(log_) rule(Float) cost(Math) cuda(real "m_log(x)";) kernel(same |x| real x.ln(); complex x.ln();) grad(x |x, g| g.div(x));
            /// Base-2 logarithm.
            Log2 log2 inplace(log2_) rule(Float) cost(Math) cuda(real "m_log2(x)";) kernel(same |x| real x.log2(); complex x.log2();) grad(x |x, g| g.div(&x.mul(std::f64::consts::LN_2)?));
            /// Base-10 logarithm.
            Log10 log10 inplace(log10_) rule(Float) cost(Math) cuda(real "m_log10(x)";) kernel(same |x| real x.log10(); complex x.log10();) grad(x |x, g| g.div(&x.mul(std::f64::consts::LN_10)?));
            /// `ln(1 + x)`, accurate near 0.
            Log1p log1p inplace(log1p_) rule(Float) cost(Math) cuda(real "m_log1p(x)";) kernel(same |x| real x.ln_1p(); complex x.ln_1p();) grad(x |x, g| g.div(&x.add(1.0)?));
            /// `eˣ − 1`, accurate near 0.
            Expm1 expm1 inplace(expm1_) rule(Float) cost(Math) cuda(real "m_expm1(x)";) kernel(same |x| real x.exp_m1(); complex x.exp_m1();) grad(y |y, g| g.mul(&y.add(1.0)?));
            /// Sine.
            Sin sin inplace(sin_) rule(Float) cost(Math) cuda(real "m_sin(x)";) kernel(same |x| real x.sin(); complex x.sin();) grad(x |x, g| g.mul(&x.cos()?));
            /// Cosine.
            Cos cos inplace(cos_) rule(Float) cost(Math) cuda(real "m_cos(x)";) kernel(same |x| real x.cos(); complex x.cos();) grad(x |x, g| g.mul(&x.sin()?.neg()?));
            /// Tangent.
            Tan tan inplace(tan_) rule(Float) cost(Math) cuda(real "m_tan(x)";) kernel(same |x| real x.tan(); complex x.tan();) grad(y |y, g| g.mul(&y.mul(y)?.add(1.0)?));
            /// Arcsine, in `[-π/2, π/2]`; NaN outside `[-1, 1]`.
            Asin asin inplace(asin_) rule(Float) cost(Math) cuda(real "m_asin(x)";) kernel(same |x| real x.asin(); complex x.asin();) grad(x |x, g| g.mul(&one_minus(&x.mul(x)?)?.rsqrt()?));
            /// Arccosine, in `[0, π]`; NaN outside `[-1, 1]`.
            Acos acos inplace(acos_) rule(Float) cost(Math) cuda(real "m_acos(x)";) kernel(same |x| real x.acos(); complex x.acos();) grad(x |x, g| g.mul(&one_minus(&x.mul(x)?)?.rsqrt()?.neg()?));
            /// Arctangent, in `[-π/2, π/2]`.
            Atan atan inplace(atan_) rule(Float) cost(Math) cuda(real "m_atan(x)";) kernel(same |x| real x.atan(); complex x.atan();) grad(x |x, g| g.div(&x.mul(x)?.add(1.0)?));
            /// Hyperbolic sine.
            Sinh sinh inplace(sinh_) rule(Float) cost(Math) cuda(real "m_sinh(x)";) kernel(same |x| real x.sinh(); complex x.sinh();) grad(x |x, g| g.mul(&x.cosh()?));
            /// Hyperbolic cosine.
            Cosh cosh inplace(cosh_) rule(Float) cost(Math) cuda(real "m_cosh(x)";) kernel(same |x| real x.cosh(); complex x.cosh();) grad(x |x, g| g.mul(&x.sinh()?));
            /// Hyperbolic tangent.
            Tanh tanh inplace(tanh_) rule(Float) cost(Math) cuda(real "m_tanh(x)";) kernel(same |x| real x.tanh(); complex x.tanh();) grad(y |y, g| g.mul(&one_minus(&y.mul(y)?)?));
            /// Inverse hyperbolic sine.
            Asinh asinh inplace(asinh_) rule(Float) cost(Math) cuda(real "m_asinh(x)";) kernel(same |x| real x.asinh(); complex x.asinh();) grad(x |x, g| g.mul(&x.mul(x)?.add(1.0)?.rsqrt()?));
            /// Inverse hyperbolic cosine; NaN below 1.
            Acosh acosh inplace(acosh_) rule(Float) cost(Math) cuda(real "m_acosh(x)";) kernel(same |x| real x.acosh(); complex x.acosh();) grad(x |x, g| g.mul(&x.mul(x)?.sub(1.0)?.rsqrt()?));
            /// Inverse hyperbolic tangent; ±∞ at ±1, NaN outside `[-1, 1]`.
            Atanh atanh inplace(atanh_) rule(Float) cost(Math) cuda(real "m_atanh(x)";) kernel(same |x| real x.atanh(); complex x.atanh();) grad(x |x, g| g.div(&one_minus(&x.mul(x)?)?));
            /// The logistic function `1 / (1 + e⁻ˣ)`.
            Sigmoid sigmoid inplace(sigmoid_) rule(Float) cost(Math)
                cuda(real "rsigmoid(x)";)
                kernel(same |x| real x.sigmoid(); complex (C::make(<C::Part as Real>::ONE, <C::Part as Real>::ZERO) + (-x).exp()).recip();) grad(y |y, g| g.mul(&y.mul(&one_minus(y)?)?));
            /// GELU, PyTorch's default (erf) form: `x · ½ · (1 + erf(x/√2))`.
            Gelu gelu inplace(gelu_) rule(Float) cost(Math)
                cuda(real "x * (T)0.5 * ((T)1 + m_erf(x * (T)0.70710678118654752440))";)
                kernel(same |x| real x * R::HALF * (R::ONE + (x * R::SQRT1_2).erf());) grad(x |x, g| g.mul(&gelu_slope(x)?));
            /// The error function.
            Erf erf inplace(erf_) rule(Float) cost(Math) cuda(real "m_erf(x)";) kernel(same |x| real x.erf();) grad(x |x, g| g.mul(&x.mul(x)?.neg()?.exp()?.mul(std::f64::consts::FRAC_2_SQRT_PI)?));
            /// The complementary error function `1 − erf(x)`, accurate for large `x`.
            Erfc erfc inplace(erfc_) rule(Float) cost(Math) cuda(real "m_erfc(x)";) kernel(same |x| real x.erfc();) grad(x |x, g| g.mul(&x.mul(x)?.neg()?.exp()?.mul(-std::f64::consts::FRAC_2_SQRT_PI)?));
            /// The inverse error function: `erf(erfinv(y)) == y` on `[-1, 1]`, ±∞ at ±1,
            /// NaN outside.
            Erfinv erfinv inplace(erfinv_) rule(Float) cost(Math) cuda(real "m_erfinv(x)";) kernel(same |x| real x.erfinv();) grad(y |y, g| g.mul(&y.mul(y)?.exp()?.mul(std::f64::consts::PI.sqrt() / 2.0)?));
            /// `1/x`.
            Reciprocal reciprocal inplace(reciprocal_) rule(Float) cost(Memory)
                cuda(real "(T)1 / x";)
                kernel(same |x| real R::ONE / x; complex x.recip();) grad(y |y, g| g.mul(&y.mul(y)?.neg()?));
            /// Degrees to radians, `x · π/180`.
            Deg2rad deg2rad inplace(deg2rad_) rule(Float) cost(Memory)
                cuda(real "x * (T)(3.14159265358979323846 / 180.0)";)
                kernel(same |x| real x * R::from_f64(std::f64::consts::PI / 180.0);) grad(none |_s, g| g.mul(std::f64::consts::PI / 180.0));
            /// Radians to degrees, `x · 180/π`.
            Rad2deg rad2deg inplace(rad2deg_) rule(Float) cost(Memory)
                cuda(real "x * (T)(180.0 / 3.14159265358979323846)";)
                kernel(same |x| real x * R::from_f64(180.0 / std::f64::consts::PI);) grad(none |_s, g| g.mul(180.0 / std::f64::consts::PI));
            /// Round down; integers are returned unchanged (a copy). Not for bool.
            Floor floor inplace(floor_) rule(Keep(BoolIn::Refuse)) cost(Memory)
                cuda(int "x"; real "m_floor(x)";)
                kernel(same |x| int x; real x.floor();) grad(zero);
            /// Round up; integers are returned unchanged (a copy). Not for bool.
            Ceil ceil inplace(ceil_) rule(Keep(BoolIn::Refuse)) cost(Memory)
                cuda(int "x"; real "m_ceil(x)";)
                kernel(same |x| int x; real x.ceil();) grad(zero);
            /// Round to nearest, ties to even (`round(2.5) == 2`); integers unchanged. Not
            /// for bool.
            Round round inplace(round_) rule(Keep(BoolIn::Refuse)) cost(Memory)
                cuda(int "x"; real "m_rint(x)";)
                kernel(same |x| int x; real x.round_even();) grad(zero);
            /// Round toward zero; integers unchanged. Not for bool.
            Trunc trunc inplace(trunc_) rule(Keep(BoolIn::Refuse)) cost(Memory)
                cuda(int "x"; real "m_trunc(x)";)
                kernel(same |x| int x; real x.trunc();) grad(zero);
            /// The fractional part `x − trunc(x)`, with the sign of `x` (NaN for ±∞). Floats
            /// only, as PyTorch.
            Frac frac inplace(frac_) rule(Keep(BoolIn::Refuse)) cost(Memory)
                cuda(real "x - m_trunc(x)";)
                kernel(same |x| real x - x.trunc();) grad(none |_s, g| Ok(g.clone()));
            /// `x == 0`, as a bool tensor (any dtype). In place, the bool result is cast
            /// to the tensor's dtype.
            LogicalNot logical_not inplace(logical_not_) rule(Logical) cost(Memory)
                cuda(any "!nz(x)";)
                kernel(any_dtype |x| !x.is_nonzero();) grad(nondiff);
            /// `!x` for integers, logical not for bool; an error for floats.
            BitwiseNot bitwise_not inplace(bitwise_not_) rule(IntOnly) cost(Memory)
                cuda(int "(T)~x"; bool "!x";)
                kernel(same |x| int x.not(); bool !x;) grad(nondiff);
            /// True where the element is NaN (bool tensor; always false for integers).
            IsNan isnan inplace() rule(Pred) cost(Memory)
                cuda(int "false"; real "m_isnan(x)";)
                kernel(pred |_x| int false; real _x.is_nan(); complex _x.is_nan();) grad(nondiff);
            /// True where the element is ±∞.
            IsInf isinf inplace() rule(Pred) cost(Memory)
                cuda(int "false"; real "m_isinf(x)";)
                kernel(pred |_x| int false; real _x.is_infinite(); complex _x.is_infinite();) grad(nondiff);
            /// True where the element is neither NaN nor ±∞.
            IsFinite isfinite inplace() rule(Pred) cost(Memory)
                cuda(int "true"; real "m_isfinite(x)";)
                kernel(pred |_x| int true; real _x.is_finite(); complex _x.is_finite();) grad(nondiff);
            /// True where the sign bit is set: negative numbers, `-0.0` and NaNs with the
            /// sign bit (bool tensor; false for unsigned integers and bool).
            Signbit signbit inplace() rule(Pred) cost(Memory)
                cuda(int "isneg(x)"; real "m_signbit(x)";)
                kernel(pred |x| int x.is_neg(); real x.is_sign_negative();) grad(nondiff);
        }
    };
}

/// The binary op table. Invokes `$cb! { entries }`; see the [module doc](self).
/// `check(…)` names a [`Check`] made before anything is written.
#[doc(hidden)]
#[macro_export]
macro_rules! for_each_binary_op {
    ($cb:ident) => {
        $cb! {
            /// `self + other`. Integers wrap (`127i8 + 1 == -128`); bool + bool is "or".
            Add add inplace(add_) rule(Keep(BoolIn2::Keep)) cost(Memory) check(Nothing)
                cuda(int "wadd(a, b)"; real "a + b"; bool "(a | b)";)
                kernel(same |a, b| int a.w_add(b); real a + b; complex a + b; bool a | b;) grad(none |_a, _b, _y, g| Ok(g.clone()), Ok(g.clone()));
            /// `self - other`. Integers wrap; any bool operand is an error (PyTorch's text).
            Sub sub inplace(sub_) rule(Keep(BoolIn2::Error(SUB_BOOLS, SUB_BOOL))) cost(Memory) check(Nothing)
                cuda(int "wsub(a, b)"; real "a - b";)
                kernel(same |a, b| int a.w_sub(b); real a - b; complex a - b;) grad(none |_a, _b, _y, g| Ok(g.clone()), g.neg());
            /// `self * other`. Integers wrap; bool · bool is "and".
            Mul mul inplace(mul_) rule(Keep(BoolIn2::Keep)) cost(Memory) check(Nothing)
                cuda(int "wmul(a, b)"; real "a * b"; bool "(a & b)";)
                kernel(same |a, b| int a.w_mul(b); real a * b; complex a * b; bool a & b;) grad(a b |a, b, _y, g| g.mul(b), g.mul(a));
            /// True division: integer and bool inputs give float32; `x / 0` is ±∞ or NaN.
            Div div inplace(div_) rule(Float) cost(Memory) check(Nothing)
                cuda(real "a / b";)
                kernel(same |a, b| real a / b; complex a.div(b);) grad(a b |a, b, _y, g| g.div(b), g.mul(a)?.div(&b.mul(b)?)?.neg());
            /// Python's `//` (rounds toward −∞). An integer zero divisor is an error
            /// ("ZeroDivisionError") raised before anything is written.
            FloorDivide floor_divide inplace(floor_divide_) rule(Keep(BoolIn2::Refuse)) cost(Memory) check(ZeroDivisor)
                cuda(int "ifloordiv(a, b)"; real "rfloordiv(a, b)";)
                kernel(same |a, b| int floor_div_int(a, b); real floor_div_real(a, b);) grad(zero);
            /// Python's `%`: the result takes the divisor's sign, for floats and integers. An
            /// integer zero divisor is an error ("ZeroDivisionError").
            Remainder remainder inplace(remainder_) rule(Keep(BoolIn2::Refuse)) cost(Memory) check(ZeroDivisor)
                cuda(int "iremainder(a, b)"; real "rremainder(a, b)";)
                kernel(same |a, b| int remainder_int(a, b); real remainder_real(a, b);) grad(a b |a, b, _y, g| Ok(g.clone()), g.mul(&a.div(b)?.floor()?)?.neg());
            /// C's `fmod`: the remainder of truncating division, with the dividend's sign,
            /// keeping integer dtypes. An integer zero divisor is an error
            /// ("ZeroDivisionError"), as for [`remainder`](Self::remainder).
            Fmod fmod inplace(fmod_) rule(Keep(BoolIn2::Refuse)) cost(Memory) check(ZeroDivisor)
                cuda(int "wrem(a, b)"; real "m_fmod(a, b)";)
                kernel(same |a, b| int a.w_rem(b); real a % b;) grad(a b |a, b, _y, g| Ok(g.clone()), g.mul(&a.div(b)?.trunc()?)?.neg());
            /// `selfᵒᵗʰᵉʳ`. Integers wrap; a negative integer exponent with an integer base is
            /// an error ("Integers to negative integer powers are not allowed.").
            Pow pow inplace(pow_) rule(Keep(BoolIn2::Refuse)) cost(Math) check(NegativeExponent)
                cuda(int "ipow(a, b)"; real "m_pow(a, b)";)
                kernel(same |a, b| int pow_int(a, b); real a.powf(b); complex a.powc(b);) grad(a b y |a, b, y, g| pow_grad_base(a, b, g), pow_grad_exponent(a, b, y, g));
            /// The larger of the two; NaN if either is NaN (bool: "or").
            Maximum maximum inplace(maximum_) rule(Keep(BoolIn2::Keep)) cost(Memory) check(Nothing)
                cuda(int "(a < b ? b : a)"; real "rmaximum(a, b)"; bool "(a | b)";)
                kernel(same |a, b| int a.max(b); real maximum_real(a, b); bool a | b;) grad(a b |a, b, _y, g| pick_grad(g, a, b, Binary::Gt), pick_grad(g, b, a, Binary::Gt));
            /// The smaller of the two; NaN if either is NaN (bool: "and").
            Minimum minimum inplace(minimum_) rule(Keep(BoolIn2::Keep)) cost(Memory) check(Nothing)
                cuda(int "(a > b ? b : a)"; real "rminimum(a, b)"; bool "(a & b)";)
                kernel(same |a, b| int a.min(b); real minimum_real(a, b); bool a & b;) grad(a b |a, b, _y, g| pick_grad(g, a, b, Binary::Lt), pick_grad(g, b, a, Binary::Lt));
            /// The larger of the two, ignoring a NaN (NaN only when both are).
            Fmax fmax inplace() rule(Keep(BoolIn2::Keep)) cost(Memory) check(Nothing)
                cuda(int "(a < b ? b : a)"; real "rfmax(a, b)"; bool "(a | b)";)
                kernel(same |a, b| int a.max(b); real fmax_real(a, b); bool a | b;) grad(a b |a, b, _y, g| fpick_grad(g, a, b, Binary::Gt), fpick_grad(g, b, a, Binary::Gt));
            /// The smaller of the two, ignoring a NaN (NaN only when both are).
            Fmin fmin inplace() rule(Keep(BoolIn2::Keep)) cost(Memory) check(Nothing)
                cuda(int "(a > b ? b : a)"; real "rfmin(a, b)"; bool "(a & b)";)
                kernel(same |a, b| int a.min(b); real fmin_real(a, b); bool a & b;) grad(a b |a, b, _y, g| fpick_grad(g, a, b, Binary::Lt), fpick_grad(g, b, a, Binary::Lt));
            /// `atan2(self, other)`, the angle of the point `(other, self)`; integers give
            /// float32.
            Atan2 atan2 inplace(atan2_) rule(Float) cost(Math) check(Nothing)
                cuda(real "m_atan2(a, b)";)
                kernel(same |a, b| real a.atan2(b);) grad(a b |a, b, _y, g| g.mul(b)?.div(&a.mul(a)?.add(&b.mul(b)?)?), g.mul(a)?.div(&a.mul(a)?.add(&b.mul(b)?)?)?.neg());
            /// `√(self² + other²)` without undue overflow. Floats only, as PyTorch.
            Hypot hypot inplace(hypot_) rule(FloatOnly) cost(Math) check(Nothing)
                cuda(real "m_hypot(a, b)";)
                kernel(same |a, b| real a.hypot(b);) grad(a b y |a, b, y, g| g.mul(a)?.div(y), g.mul(b)?.div(y));
            /// The magnitude of `self` with the sign of `other` (`-0.0` counts as negative);
            /// integers give float32.
            Copysign copysign inplace(copysign_) rule(Float) cost(Memory) check(Nothing)
                cuda(real "m_copysign(a, b)";)
                kernel(same |a, b| real a.copysign(b);) grad(a y |a, _b, y, g| copysign_grad(a, y, g), g.mul(0.0));
            /// `ln(eˢᵉˡᶠ + eᵒᵗʰᵉʳ)` without overflow. Floats only, as PyTorch.
            Logaddexp logaddexp inplace() rule(FloatOnly) cost(Math) check(Nothing)
                cuda(real "rlogaddexp(a, b)";)
                kernel(same |a, b| real logaddexp_real(a, b);) grad(a b |a, b, _y, g| g.div(&b.sub(a)?.exp()?.add(1.0)?), g.div(&a.sub(b)?.exp()?.add(1.0)?));
            /// `log₂(2ˢᵉˡᶠ + 2ᵒᵗʰᵉʳ)` without overflow. Floats only, as PyTorch.
            Logaddexp2 logaddexp2 inplace() rule(FloatOnly) cost(Math) check(Nothing)
                cuda(real "rlogaddexp2(a, b)";)
                kernel(same |a, b| real logaddexp2_real(a, b);) grad(a b |a, b, _y, g| g.div(&b.sub(a)?.exp2()?.add(1.0)?), g.div(&a.sub(b)?.exp2()?.add(1.0)?));
            /// `self · ln(other)`, and 0 where `self == 0` (unless `other` is NaN); integers
            /// give float32.
            Xlogy xlogy inplace(xlogy_) rule(Float) cost(Math) check(Nothing)
                cuda(real "rxlogy(a, b)";)
                kernel(same |a, b| real xlogy_real(a, b);) grad(a b |a, b, _y, g| xlogy_grad(a, b, g), g.mul(a)?.div(b));
            /// The next representable value after `self` towards `other`, in the tensor's own
            /// precision (`float16`/`bfloat16` included). Floats only, as PyTorch.
            Nextafter nextafter inplace(nextafter_) rule(FloatOnly) cost(Memory) check(Nothing)
                cuda(real "m_nextafter(a, b)"; half "nextafter_bits(a, b, HALF_IS_BF16)";)
                kernel(same |a, b| real a.next_after(b); half nextafter_half(a, b);) grad(unimpl);
            /// The Heaviside step: `0` where `self < 0`, `other` where `self == 0`, `1` where
            /// `self > 0`; NaN stays NaN (NumPy; PyTorch gives 0).
            Heaviside heaviside inplace(heaviside_) rule(Keep(BoolIn2::Keep)) cost(Memory) check(Nothing)
                cuda(int "iheav(a, b)"; real "rheav(a, b)"; bool "(a | b)";)
                kernel(same |a, b| int heaviside_int(a, b); real heaviside_real(a, b); bool a | b;) grad(unimpl);
            /// `self == other`, as a bool tensor (compared in the promoted dtype).
            Eq eq inplace() rule(Compare) cost(Memory) check(Nothing)
                cuda(int "a == b"; real "a == b"; bool "a == b";)
                kernel(pred |a, b| int a == b; real a == b; complex a == b; bool a == b;) grad(nondiff);
            /// `self != other`, as a bool tensor.
            Ne ne inplace() rule(Compare) cost(Memory) check(Nothing)
                cuda(int "a != b"; real "a != b"; bool "a != b";)
                kernel(pred |a, b| int a != b; real a != b; complex a != b; bool a != b;) grad(nondiff);
            /// `self < other`, as a bool tensor.
            Lt lt inplace() rule(Compare) cost(Memory) check(Nothing)
                cuda(int "a < b"; real "a < b"; bool "(!a & b)";)
                kernel(pred |a, b| int a < b; real a < b; bool !a & b;) grad(nondiff);
            /// `self <= other`, as a bool tensor.
            Le le inplace() rule(Compare) cost(Memory) check(Nothing)
                cuda(int "a <= b"; real "a <= b"; bool "(!a | b)";)
                kernel(pred |a, b| int a <= b; real a <= b; bool !a | b;) grad(nondiff);
            /// `self > other`, as a bool tensor.
            Gt gt inplace() rule(Compare) cost(Memory) check(Nothing)
                cuda(int "a > b"; real "a > b"; bool "(a & !b)";)
                kernel(pred |a, b| int a > b; real a > b; bool a & !b;) grad(nondiff);
            /// `self >= other`, as a bool tensor.
            Ge ge inplace() rule(Compare) cost(Memory) check(Nothing)
                cuda(int "a >= b"; real "a >= b"; bool "(a | !b)";)
                kernel(pred |a, b| int a >= b; real a >= b; bool a | !b;) grad(nondiff);
            /// Both non-zero, as a bool tensor.
            LogicalAnd logical_and inplace() rule(Compare) cost(Memory) check(Nothing)
                cuda(any "(nz(a) & nz(b))";)
                kernel(any_dtype |a, b| a.is_nonzero() & b.is_nonzero();) grad(nondiff);
            /// Either non-zero, as a bool tensor.
            LogicalOr logical_or inplace() rule(Compare) cost(Memory) check(Nothing)
                cuda(any "(nz(a) | nz(b))";)
                kernel(any_dtype |a, b| a.is_nonzero() | b.is_nonzero();) grad(nondiff);
            /// Exactly one non-zero, as a bool tensor.
            LogicalXor logical_xor inplace() rule(Compare) cost(Memory) check(Nothing)
                cuda(any "(nz(a) ^ nz(b))";)
                kernel(any_dtype |a, b| a.is_nonzero() ^ b.is_nonzero();) grad(nondiff);
            /// Bitwise `&` of integers or bools; floats are an error.
            BitwiseAnd bitwise_and inplace(bitwise_and_) rule(IntOnly(BoolIn2::Keep)) cost(Memory) check(Nothing)
                cuda(int "(T)(a & b)"; bool "(a & b)";)
                kernel(same |a, b| int a.and(b); bool a & b;) grad(nondiff);
            /// Bitwise `|` of integers or bools; floats are an error.
            BitwiseOr bitwise_or inplace(bitwise_or_) rule(IntOnly(BoolIn2::Keep)) cost(Memory) check(Nothing)
                cuda(int "(T)(a | b)"; bool "(a | b)";)
                kernel(same |a, b| int a.or(b); bool a | b;) grad(nondiff);
            /// Bitwise `^` of integers or bools; floats are an error.
            BitwiseXor bitwise_xor inplace(bitwise_xor_) rule(IntOnly(BoolIn2::Keep)) cost(Memory) check(Nothing)
                cuda(int "(T)(a ^ b)"; bool "(a ^ b)";)
                kernel(same |a, b| int a.xor(b); bool a ^ b;) grad(nondiff);
            /// `self << other` on integers; a negative or too-large count gives 0 (PyTorch).
            LeftShift bitwise_left_shift inplace(bitwise_left_shift_) rule(IntOnly(BoolIn2::Refuse)) cost(Memory) check(Nothing)
                cuda(int "ishl(a, b)";)
                kernel(same |a, b| int shl_int(a, b);) grad(nondiff);
            /// `self >> other` on integers (arithmetic for signed types); a negative or
            /// too-large count gives the sign fill (PyTorch).
            RightShift bitwise_right_shift inplace(bitwise_right_shift_) rule(IntOnly(BoolIn2::Refuse)) cost(Memory) check(Nothing)
                cuda(int "ishr(a, b)";)
                kernel(same |a, b| int shr_int(a, b);) grad(nondiff);
        }
    };
}

/// The ternary op table: name, in-place variant and cost. Their `Tensor` methods take
/// special arguments (`where_cond(cond, a, b)`, `clamp(min, max)`), so they are written in
/// `ops/elementwise.rs`; the CPU dispatch is `kernel/ternary.rs`.
#[doc(hidden)]
#[macro_export]
macro_rules! for_each_ternary_op {
    ($cb:ident) => {
        $cb! {
            /// `cond ? a : b` elementwise (PyTorch's `torch.where`).
            Where where inplace() cost(Memory);
            /// Clamps into `[min, max]`.
            Clamp clamp inplace(clamp_) cost(Memory);
        }
    };
}

/// One row of [`OP_TABLE`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpInfo {
    /// The method name (`"sinh"`).
    pub name: &'static str,
    /// Tensor operands: 1, 2 or 3.
    pub arity: u8,
    /// The in-place method (`"sinh_"`), if any.
    pub inplace: Option<&'static str>,
    /// The cost class.
    pub cost: Cost,
}

/// `Some("name_")` for an in-place method, else `None`.
macro_rules! opt_name {
    () => {
        None
    };
    ($ip:ident) => {
        Some(stringify!($ip))
    };
}

/// What an op's backward needs, from its `grad(...)` clause: `nondiff` (the result
/// carries no gradient: bool and integer results), `unimpl` (PyTorch has no derivative
/// either), `zero` (a zero gradient: floor, sign), or the tensors its formula reads (`x`:
/// the input, `a`/`b`: the operands, `y`: the result; `none`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GradKind {
    NotDifferentiable,
    NotImplemented,
    Zero,
    Formula(Saves),
}

/// The tensors a formula reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Saves {
    pub x: bool,
    pub a: bool,
    pub b: bool,
    pub y: bool,
    pub none: bool,
}

macro_rules! grad_kind {
    (nondiff) => { GradKind::NotDifferentiable };
    (unimpl) => { GradKind::NotImplemented };
    (zero) => { GradKind::Zero };
    ($($save:ident)* | $($rest:tt)*) => { GradKind::Formula(Saves { $( $save: true, )* ..Saves { x: false, a: false, b: false, y: false, none: false } }) };
}

macro_rules! unary_grad {
    ($s:ident, $g:ident; $($save:ident)* |$ps:ident, $pg:ident| $body:expr) => {
        (|$ps: &crate::Tensor, $pg: &crate::Tensor| -> crate::Result<crate::Tensor> { $body })(
            $s, $g,
        )
    };
    ($s:ident, $g:ident; zero) => {
        $g.mul(0.0)
    };
    ($s:ident, $g:ident; $other:ident) => {
        Err(crate::Error::autograd(
            "the derivative of this op is not implemented",
        ))
    };
}

macro_rules! binary_grad {
    ($a:ident, $b:ident, $y:ident, $g:ident, $na:ident, $nb:ident; $($save:ident)* |$pa:ident, $pb:ident, $py:ident, $pg:ident| $ea:expr, $eb:expr) => {{
        let ga = if $na {
            Some((|$pa: &crate::Tensor,
                   $pb: &crate::Tensor,
                   $py: &crate::Tensor,
                   $pg: &crate::Tensor|
             -> crate::Result<crate::Tensor> { $ea })(
                $a, $b, $y, $g
            )?)
        } else {
            None
        };
        let gb = if $nb {
            Some((|$pa: &crate::Tensor,
                   $pb: &crate::Tensor,
                   $py: &crate::Tensor,
                   $pg: &crate::Tensor|
             -> crate::Result<crate::Tensor> { $eb })(
                $a, $b, $y, $g
            )?)
        } else {
            None
        };
        Ok((ga, gb))
    }};
    ($a:ident, $b:ident, $y:ident, $g:ident, $na:ident, $nb:ident; zero) => {
        Ok((
            if $na { Some($g.mul(0.0)?) } else { None },
            if $nb { Some($g.mul(0.0)?) } else { None },
        ))
    };
    ($a:ident, $b:ident, $y:ident, $g:ident, $na:ident, $nb:ident; $other:ident) => {
        Err(crate::Error::autograd(
            "the derivative of this op is not implemented",
        ))
    };
}

macro_rules! define_unary {
    ($( $(#[doc = $doc:tt])* $Kind:ident $name:ident inplace($($ip:ident)?) rule($($rule:tt)*)
        cost($cost:ident) cuda($($arm:ident $e:literal;)*) kernel($($k:tt)*) grad($($gr:tt)*); )*) => {
        /// The unary elementwise ops (one per entry of the table).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Unary { $( #[doc = concat!("`", stringify!($name), "`")] $Kind, )* }

        impl Unary {
            /// Every unary op, in table order.
            pub const ALL: &'static [Unary] = &[$(Unary::$Kind),*];

            /// The method name.
            pub fn name(self) -> &'static str {
                match self { $( Unary::$Kind => stringify!($name), )* }
            }

            /// The dtype rule.
            pub fn rule(self) -> UnaryRule {
                use UnaryRule::*;
                match self { $( Unary::$Kind => $($rule)*, )* }
            }

            /// The cost class.
            pub fn cost(self) -> Cost {
                match self { $( Unary::$Kind => Cost::$cost, )* }
            }

            /// The in-place method name, if any.
            pub fn inplace(self) -> Option<&'static str> {
                match self { $( Unary::$Kind => opt_name!($($ip)?), )* }
            }

            /// The op's CUDA C++ expression for operands of `class` (see [`CudaClass`]),
            /// `None` where the op refuses that class.
            pub fn cuda_expr(self, class: CudaClass) -> Option<&'static str> {
                let arms: &[(&str, &str)] = match self { $( Unary::$Kind => &[$((stringify!($arm), $e)),*], )* };
                class.pick(arms)
            }

            /// What the op's backward needs (its `grad(...)` clause).
            pub(crate) fn grad_kind(self) -> GradKind {
                match self { $( Unary::$Kind => grad_kind!($($gr)*), )* }
            }

            /// The op's backward: the input's gradient from the output's, `g`, and the
            /// saved tensor `s` (the input `x` or the result `y`, as the clause says).
            #[allow(unused_variables)]
            pub(crate) fn grad_formula(self, s: &crate::Tensor, g: &crate::Tensor) -> crate::Result<crate::Tensor> {
                match self { $( Unary::$Kind => unary_grad!(s, g; $($gr)*), )* }
            }
        }

        /// # Unary elementwise ops
        ///
        /// Each returns a new tensor with the input's shape whose dim order follows the
        /// input's (an op on a transposed tensor gives a transposed result). Float-only
        /// math on integer or bool tensors computes in float32, as PyTorch; `f16`/`bf16`
        /// compute through `f32`.
        impl crate::Tensor {$(
            $(#[doc = $doc])*
            ///
            /// # Errors
            /// An unsupported dtype (see above), or a failed allocation.
            pub fn $name(&self) -> crate::Result<crate::Tensor> {
                super::elementwise::unary(Unary::$Kind, self, super::elementwise::Dest::New)
            }
        )*}

        /// # In-place unary ops
        ///
        /// `x.op_()` writes `x.op()` into `x` itself and returns it. As in PyTorch, the
        /// result dtype must be castable to `x`'s (`int_tensor.sqrt_()` is an error:
        /// "result type Float can't be cast to the desired output type Long").
        impl crate::Tensor {$($(
            #[doc = concat!("In-place [`", stringify!($name), "`](Self::", stringify!($name), ").")]
            ///
            /// # Errors
            /// As the out-of-place op; also a dtype that cannot hold the result, a
            /// read-only tensor, or one whose elements alias each other.
            pub fn $ip(&self) -> crate::Result<&Self> {
                super::elementwise::unary(Unary::$Kind, self, super::elementwise::Dest::Into(self))?;
                Ok(self)
            }
        )?)*}

        const UNARY_INFO: &[OpInfo] = &[$(OpInfo {
            name: stringify!($name),
            arity: 1,
            inplace: opt_name!($($ip)?),
            cost: Cost::$cost,
        }),*];
    };
}

macro_rules! define_binary {
    ($( $(#[doc = $doc:tt])* $Kind:ident $name:ident inplace($($ip:ident)?) rule($($rule:tt)*)
        cost($cost:ident) check($check:ident) cuda($($arm:ident $e:literal;)*) kernel($($k:tt)*) grad($($gr:tt)*); )*) => {
        /// The binary elementwise ops (one per entry of the table).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Binary { $( #[doc = concat!("`", stringify!($name), "`")] $Kind, )* }

        impl Binary {
            /// Every binary op, in table order.
            pub const ALL: &'static [Binary] = &[$(Binary::$Kind),*];

            /// The method name.
            pub fn name(self) -> &'static str {
                match self { $( Binary::$Kind => stringify!($name), )* }
            }

            /// The dtype rule.
            pub fn rule(self) -> BinaryRule {
                use BinaryRule::*;
                match self { $( Binary::$Kind => $($rule)*, )* }
            }

            /// The cost class.
            pub fn cost(self) -> Cost {
                match self { $( Binary::$Kind => Cost::$cost, )* }
            }

            /// The check on integer operands made before anything is written.
            pub fn check(self) -> Check {
                match self { $( Binary::$Kind => Check::$check, )* }
            }

            /// The in-place method name, if any.
            pub fn inplace(self) -> Option<&'static str> {
                match self { $( Binary::$Kind => opt_name!($($ip)?), )* }
            }

            /// The op's CUDA C++ expression for operands of `class` (see [`CudaClass`]),
            /// `None` where the op refuses that class.
            pub fn cuda_expr(self, class: CudaClass) -> Option<&'static str> {
                let arms: &[(&str, &str)] = match self { $( Binary::$Kind => &[$((stringify!($arm), $e)),*], )* };
                class.pick(arms)
            }

            /// The op named `name`.
            pub fn from_name(name: &str) -> Option<Binary> {
                match name { $( stringify!($name) => Some(Binary::$Kind), )* _ => None }
            }

            /// What the op's backward needs (its `grad(...)` clause).
            pub(crate) fn grad_kind(self) -> GradKind {
                match self { $( Binary::$Kind => grad_kind!($($gr)*), )* }
            }

            /// The op's backward: the operands' gradients (where `na`/`nb` ask for them)
            /// from the output's, `g`, the operands `a`, `b` and the result `y` (those the
            /// clause does not save are never read).
            #[allow(unused_variables, clippy::too_many_arguments)]
            pub(crate) fn grad_formula(
                self,
                a: &crate::Tensor,
                b: &crate::Tensor,
                y: &crate::Tensor,
                g: &crate::Tensor,
                na: bool,
                nb: bool,
            ) -> crate::Result<(Option<crate::Tensor>, Option<crate::Tensor>)> {
                match self { $( Binary::$Kind => binary_grad!(a, b, y, g, na, nb; $($gr)*), )* }
            }
        }

        /// # Binary elementwise ops
        ///
        /// `other` is a tensor (`&b`) or a Rust scalar (`2.0`, `3`, `true`); shapes
        /// broadcast as in PyTorch and the result dtype follows PyTorch's promotion, where
        /// scalars and 0-d tensors are weak (`int32 + 1.5 → float32`, `float16 + 0-d
        /// float64 → float16`). The result's dim order follows the inputs'.
        impl crate::Tensor {$(
            $(#[doc = $doc])*
            ///
            /// # Errors
            /// Shapes that do not broadcast (PyTorch's text), an unsupported dtype, or a
            /// failed allocation.
            pub fn $name<'a>(&self, other: impl Into<crate::kernel::plan::Operand<'a>>) -> crate::Result<crate::Tensor> {
                super::elementwise::binary(
                    Binary::$Kind,
                    &crate::kernel::plan::Operand::Tensor(self),
                    &other.into(),
                    super::elementwise::Dest::New,
                )
            }
        )*}

        /// # In-place binary ops
        ///
        /// `x.op_(other)` writes `x.op(other)` into `x` and returns it. `other` must
        /// broadcast to `x`'s shape, and the promoted result dtype must be castable to
        /// `x`'s, as in PyTorch (`int_tensor.div_(2)` is an error: "result type Float
        /// can't be cast to the desired output type Long"). An input that overlaps `x` in
        /// memory (`x.add_(&x.flip(&[0])?)`) is read completely before `x` is written.
        impl crate::Tensor {$($(
            #[doc = concat!("In-place [`", stringify!($name), "`](Self::", stringify!($name), ").")]
            ///
            /// # Errors
            /// As the out-of-place op; also a result that does not fit `self`'s shape or
            /// dtype, a read-only tensor, or one whose elements alias each other.
            pub fn $ip<'a>(&self, other: impl Into<crate::kernel::plan::Operand<'a>>) -> crate::Result<&Self> {
                super::elementwise::binary(
                    Binary::$Kind,
                    &crate::kernel::plan::Operand::Tensor(self),
                    &other.into(),
                    super::elementwise::Dest::Into(self),
                )?;
                Ok(self)
            }
        )?)*}

        const BINARY_INFO: &[OpInfo] = &[$(OpInfo {
            name: stringify!($name),
            arity: 2,
            inplace: opt_name!($($ip)?),
            cost: Cost::$cost,
        }),*];
    };
}

macro_rules! define_ternary {
    ($( $(#[doc = $doc:tt])* $Kind:ident $name:ident inplace($($ip:ident)?) cost($cost:ident); )*) => {
        /// The ternary elementwise ops.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Ternary { $( $(#[doc = $doc])* $Kind, )* }

        impl Ternary {
            /// Every ternary op, in table order.
            pub const ALL: &'static [Ternary] = &[$(Ternary::$Kind),*];

            /// The op's name.
            pub fn name(self) -> &'static str {
                match self { $( Ternary::$Kind => stringify!($name), )* }
            }

            /// The cost class.
            pub fn cost(self) -> Cost {
                match self { $( Ternary::$Kind => Cost::$cost, )* }
            }
        }

        const TERNARY_INFO: &[OpInfo] = &[$(OpInfo {
            name: stringify!($name),
            arity: 3,
            inplace: opt_name!($($ip)?),
            cost: Cost::$cost,
        }),*];
    };
}

crate::for_each_unary_op!(define_unary);
crate::for_each_binary_op!(define_binary);
crate::for_each_ternary_op!(define_ternary);

/// Every elementwise op: unary, then binary, then ternary, each in table order.
pub fn op_table() -> impl Iterator<Item = OpInfo> {
    UNARY_INFO
        .iter()
        .chain(BINARY_INFO)
        .chain(TERNARY_INFO)
        .copied()
}
