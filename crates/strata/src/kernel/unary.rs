//! Unary elementwise ops: arithmetic (`neg`, `abs`, `sign`, `square`, `relu`), float math
//! (`sqrt` … `gelu`), rounding, logical/bitwise not and the float predicates, with
//! PyTorch's dtype rules, plus their in-place variants.
//!
//! Every op dispatches on the dtype once ([`dispatch!`]) and runs
//! [`unary_into`] with a monomorphised kernel; the output follows the input's layout.

use super::elementwise::unary_into;
use super::ewise::{float_of, Dest, Target};
use super::math::{dispatch, not_implemented, Half, Int, Op1, Pred1, Real};
use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use crate::with_dtype;

/// PyTorch's text for `-bool_tensor`.
const NEG_BOOL: &str = "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.";

/// The unary ops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unary {
    Neg,
    Abs,
    Sign,
    Square,
    Relu,
    Sqrt,
    Rsqrt,
    Exp,
    Exp2,
    Log,
    Log2,
    Log1p,
    Expm1,
    Sin,
    Cos,
    Tan,
    Tanh,
    Sigmoid,
    Gelu,
    Reciprocal,
    Floor,
    Ceil,
    Round,
    Trunc,
    LogicalNot,
    BitwiseNot,
    IsNan,
    IsInf,
    IsFinite,
}

impl Unary {
    fn name(self) -> &'static str {
        use Unary::*;
        match self {
            Neg => "neg",
            Abs => "abs",
            Sign => "sign",
            Square => "square",
            Relu => "relu",
            Sqrt => "sqrt",
            Rsqrt => "rsqrt",
            Exp => "exp",
            Exp2 => "exp2",
            Log => "log",
            Log2 => "log2",
            Log1p => "log1p",
            Expm1 => "expm1",
            Sin => "sin",
            Cos => "cos",
            Tan => "tan",
            Tanh => "tanh",
            Sigmoid => "sigmoid",
            Gelu => "gelu",
            Reciprocal => "reciprocal",
            Floor => "floor",
            Ceil => "ceil",
            Round => "round",
            Trunc => "trunc",
            LogicalNot => "logical_not",
            BitwiseNot => "bitwise_not",
            IsNan => "isnan",
            IsInf => "isinf",
            IsFinite => "isfinite",
        }
    }
}

/// A float-only unary op.
trait Real1 {
    fn real<R: Real>(x: R) -> R;
}

macro_rules! op1 {
    ($($name:ident: |$x:ident| int $int:expr, real $real:expr;)*) => {$(
        struct $name;
        impl Op1 for $name {
            #[inline(always)]
            fn int<I: Int>($x: I) -> I { $int }
            #[inline(always)]
            fn real<R: Real>($x: R) -> R { $real }
        }
    )*};
}

op1! {
    NegOp: |x| int x.w_neg(), real -x;
    AbsOp: |x| int x.w_abs(), real x.abs();
    SignOp: |x| int x.sign(), real sign_real(x);
    SquareOp: |x| int x.w_mul(x), real x * x;
    ReluOp: |x| int if x.is_neg() { I::ZERO } else { x }, real if x < R::ZERO { R::ZERO } else { x };
}

/// `1`, `-1`, `0` (for ±0, as `+0`) or NaN for NaN (NumPy's choice; PyTorch returns 0 for
/// NaN, which hides it).
#[inline(always)]
fn sign_real<R: Real>(x: R) -> R {
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

macro_rules! real1 {
    ($($name:ident: |$x:ident| $body:expr;)*) => {$(
        struct $name;
        impl Real1 for $name {
            #[inline(always)]
            fn real<R: Real>($x: R) -> R { $body }
        }
    )*};
}

real1! {
    SqrtOp: |x| x.sqrt();
    RsqrtOp: |x| R::ONE / x.sqrt();
    ExpOp: |x| x.exp();
    Exp2Op: |x| x.exp2();
    LogOp: |x| x.ln();
    Log2Op: |x| x.log2();
    Log1pOp: |x| x.ln_1p();
    Expm1Op: |x| x.exp_m1();
    SinOp: |x| x.sin();
    CosOp: |x| x.cos();
    TanOp: |x| x.tan();
    TanhOp: |x| x.tanh();
    SigmoidOp: |x| R::ONE / (R::ONE + (-x).exp());
    GeluOp: |x| x * R::HALF * (R::ONE + (x * R::SQRT1_2).erf());
    ReciprocalOp: |x| R::ONE / x;
    FloorOp: |x| x.floor();
    CeilOp: |x| x.ceil();
    RoundOp: |x| x.round_even();
    TruncOp: |x| x.trunc();
}

macro_rules! pred1 {
    ($($name:ident: |$x:ident| int $int:expr, real $real:expr;)*) => {$(
        struct $name;
        impl Pred1 for $name {
            #[inline(always)]
            fn int<I: Int>($x: I) -> bool { $int }
            #[inline(always)]
            fn real<R: Real>($x: R) -> bool { $real }
        }
    )*};
}

pred1! {
    IsNanOp: |_x| int false, real _x.is_nan();
    IsInfOp: |_x| int false, real _x.is_infinite();
    IsFiniteOp: |_x| int true, real _x.is_finite();
}

fn run_op1<F: Op1>(op: &'static str, out: &Tensor, a: &Tensor) -> Result<()> {
    dispatch!(a.dtype();
        int I => unary_into(op, out, a, F::int::<I>);
        real R => unary_into(op, out, a, F::real::<R>);
        half H => unary_into(op, out, a, |x: H| H::down(F::real(x.up())));
        bool => Err(not_implemented(op, DType::Bool)))
}

fn run_real1<F: Real1>(op: &'static str, out: &Tensor, a: &Tensor) -> Result<()> {
    dispatch!(a.dtype();
        int _I => Err(not_implemented(op, a.dtype()));
        real R => unary_into(op, out, a, F::real::<R>);
        half H => unary_into(op, out, a, |x: H| H::down(F::real(x.up())));
        bool => Err(not_implemented(op, DType::Bool)))
}

fn run_pred1<F: Pred1>(op: &'static str, out: &Tensor, a: &Tensor) -> Result<()> {
    dispatch!(a.dtype();
        int I => unary_into(op, out, a, F::int::<I>);
        real R => unary_into(op, out, a, F::real::<R>);
        half H => unary_into(op, out, a, |x: H| F::real(x.up()));
        bool => Err(not_implemented(op, DType::Bool)))
}

/// `out = a` elementwise (integer rounding, `sign` of bools).
fn run_identity(op: &'static str, out: &Tensor, a: &Tensor) -> Result<()> {
    with_dtype!(a.dtype(), T => unary_into(op, out, a, |x: T| x))
}

fn run_bitwise_not(op: &'static str, out: &Tensor, a: &Tensor) -> Result<()> {
    dispatch!(a.dtype();
        int I => unary_into(op, out, a, |x: I| x.not());
        real _R => Err(not_implemented(op, a.dtype()));
        half _H => Err(not_implemented(op, a.dtype()));
        bool => unary_into(op, out, a, |x: bool| !x))
}

/// Runs unary op `kind` on `x` into `dest`.
pub(crate) fn unary(kind: Unary, x: &Tensor, dest: Dest<'_>) -> Result<Tensor> {
    use Unary::*;
    let op = kind.name();
    let dt = x.dtype();
    let is_bool = dt == DType::Bool;
    // (compute dtype, output dtype), with PyTorch's rules.
    let (cdt, odt) = match kind {
        Neg if is_bool => return Err(Error::dtype(op, NEG_BOOL)),
        Relu if is_bool => return Err(Error::dtype(op, "Boolean inputs not supported for relu")),
        Abs | Floor | Ceil | Round | Trunc if is_bool => {
            return Err(not_implemented(op, DType::Bool))
        }
        BitwiseNot if dt.is_float() => return Err(not_implemented(op, dt)),
        // PyTorch's square is pow(x, 2): a bool tensor with an int scalar gives int64.
        Square if is_bool => (DType::I64, DType::I64),
        Neg | Abs | Sign | Square | Relu | Floor | Ceil | Round | Trunc | BitwiseNot => (dt, dt),
        Sqrt | Rsqrt | Exp | Exp2 | Log | Log2 | Log1p | Expm1 | Sin | Cos | Tan | Tanh
        | Sigmoid | Gelu | Reciprocal => (float_of(dt), float_of(dt)),
        LogicalNot => (dt, DType::Bool),
        IsNan | IsInf | IsFinite if is_bool => (DType::U8, DType::Bool),
        IsNan | IsInf | IsFinite => (dt, DType::Bool),
    };
    let a = x.to_dtype(cdt)?;
    let target = Target::new(op, dest, x.shape(), odt, &[x])?;
    let out = target.out();
    let a = &a;
    match kind {
        Neg => run_op1::<NegOp>(op, out, a),
        Abs => run_op1::<AbsOp>(op, out, a),
        Sign if is_bool => run_identity(op, out, a),
        Sign => run_op1::<SignOp>(op, out, a),
        Square => run_op1::<SquareOp>(op, out, a),
        Relu => run_op1::<ReluOp>(op, out, a),
        Sqrt => run_real1::<SqrtOp>(op, out, a),
        Rsqrt => run_real1::<RsqrtOp>(op, out, a),
        Exp => run_real1::<ExpOp>(op, out, a),
        Exp2 => run_real1::<Exp2Op>(op, out, a),
        Log => run_real1::<LogOp>(op, out, a),
        Log2 => run_real1::<Log2Op>(op, out, a),
        Log1p => run_real1::<Log1pOp>(op, out, a),
        Expm1 => run_real1::<Expm1Op>(op, out, a),
        Sin => run_real1::<SinOp>(op, out, a),
        Cos => run_real1::<CosOp>(op, out, a),
        Tan => run_real1::<TanOp>(op, out, a),
        Tanh => run_real1::<TanhOp>(op, out, a),
        Sigmoid => run_real1::<SigmoidOp>(op, out, a),
        Gelu => run_real1::<GeluOp>(op, out, a),
        Reciprocal => run_real1::<ReciprocalOp>(op, out, a),
        // Rounding an integer is the identity (a copy), as in PyTorch.
        Floor | Ceil | Round | Trunc if !cdt.is_float() => run_identity(op, out, a),
        Floor => run_real1::<FloorOp>(op, out, a),
        Ceil => run_real1::<CeilOp>(op, out, a),
        Round => run_real1::<RoundOp>(op, out, a),
        Trunc => run_real1::<TruncOp>(op, out, a),
        LogicalNot => with_dtype!(cdt, T => unary_into(op, out, a, |x: T| !x.is_nonzero())),
        BitwiseNot => run_bitwise_not(op, out, a),
        IsNan => run_pred1::<IsNanOp>(op, out, a),
        IsInf => run_pred1::<IsInfOp>(op, out, a),
        IsFinite => run_pred1::<IsFiniteOp>(op, out, a),
    }?;
    target.finish()
}

macro_rules! unary_methods {
    ($($(#[doc = $doc:literal])* $name:ident => $kind:ident;)*) => {
        /// # Unary elementwise ops
        ///
        /// Each returns a new tensor with the input's shape whose dim order follows the
        /// input's (an op on a transposed tensor gives a transposed result). Float-only
        /// math on integer or bool tensors computes in float32, as PyTorch; `f16`/`bf16`
        /// compute through `f32`.
        impl Tensor {$(
            $(#[doc = $doc])*
            ///
            /// # Errors
            /// An unsupported dtype (see above), or a failed allocation.
            pub fn $name(&self) -> Result<Tensor> {
                unary(Unary::$kind, self, Dest::New)
            }
        )*}
    };
}

unary_methods! {
    /// `-x`. Integers wrap (`-i8::MIN == i8::MIN`, unsigned wrap modulo 2ⁿ); a bool tensor
    /// is an error with PyTorch's text.
    neg => Neg;
    /// `|x|`, keeping the dtype; `abs(i8::MIN) == i8::MIN` as in PyTorch. Not for bool.
    abs => Abs;
    /// `-1`, `0` or `1` in the input's dtype (bool: itself). NaN gives NaN (NumPy) rather
    /// than PyTorch's `0`; `sign(-0.0)` is `0.0`.
    sign => Sign;
    /// `x·x`, keeping the dtype (integers wrap); bool gives int64, as PyTorch.
    square => Square;
    /// `max(x, 0)`; NaN stays NaN. Not for bool.
    relu => Relu;
    /// `√x`.
    sqrt => Sqrt;
    /// `1/√x`.
    rsqrt => Rsqrt;
    /// `eˣ`.
    exp => Exp;
    /// `2ˣ`.
    exp2 => Exp2;
    /// Natural logarithm.
    log => Log;
    /// Base-2 logarithm.
    log2 => Log2;
    /// `ln(1 + x)`, accurate near 0.
    log1p => Log1p;
    /// `eˣ − 1`, accurate near 0.
    expm1 => Expm1;
    /// Sine.
    sin => Sin;
    /// Cosine.
    cos => Cos;
    /// Tangent.
    tan => Tan;
    /// Hyperbolic tangent.
    tanh => Tanh;
    /// The logistic function `1 / (1 + e⁻ˣ)`.
    sigmoid => Sigmoid;
    /// GELU, PyTorch's default (erf) form: `x · ½ · (1 + erf(x/√2))`.
    gelu => Gelu;
    /// `1/x`.
    reciprocal => Reciprocal;
    /// Round down; integers are returned unchanged (a copy). Not for bool.
    floor => Floor;
    /// Round up; integers are returned unchanged (a copy). Not for bool.
    ceil => Ceil;
    /// Round to nearest, ties to even (`round(2.5) == 2`); integers unchanged. Not for bool.
    round => Round;
    /// Round toward zero; integers unchanged. Not for bool.
    trunc => Trunc;
    /// `x == 0`, as a bool tensor (any dtype).
    logical_not => LogicalNot;
    /// `!x` for integers, logical not for bool; an error for floats.
    bitwise_not => BitwiseNot;
    /// True where the element is NaN (bool tensor; always false for integers).
    isnan => IsNan;
    /// True where the element is ±∞.
    isinf => IsInf;
    /// True where the element is neither NaN nor ±∞.
    isfinite => IsFinite;
}

macro_rules! unary_inplace {
    ($($name:ident, $base:ident => $kind:ident;)*) => {
        /// # In-place unary ops
        ///
        /// `x.op_()` writes `x.op()` into `x` itself and returns it. As in PyTorch, the
        /// result dtype must be castable to `x`'s (`int_tensor.sqrt_()` is an error:
        /// "result type Float can't be cast to the desired output type Long").
        impl Tensor {$(
            #[doc = concat!("In-place [`", stringify!($base), "`](Self::", stringify!($base), ").")]
            ///
            /// # Errors
            /// As the out-of-place op; also a dtype that cannot hold the result, a
            /// read-only tensor, or one whose elements alias each other.
            pub fn $name(&self) -> Result<&Self> {
                unary(Unary::$kind, self, Dest::Into(self))?;
                Ok(self)
            }
        )*}
    };
}

unary_inplace! {
    neg_, neg => Neg;
    abs_, abs => Abs;
    sign_, sign => Sign;
    square_, square => Square;
    relu_, relu => Relu;
    sqrt_, sqrt => Sqrt;
    rsqrt_, rsqrt => Rsqrt;
    exp_, exp => Exp;
    exp2_, exp2 => Exp2;
    log_, log => Log;
    log2_, log2 => Log2;
    log1p_, log1p => Log1p;
    expm1_, expm1 => Expm1;
    sin_, sin => Sin;
    cos_, cos => Cos;
    tan_, tan => Tan;
    tanh_, tanh => Tanh;
    sigmoid_, sigmoid => Sigmoid;
    gelu_, gelu => Gelu;
    reciprocal_, reciprocal => Reciprocal;
    floor_, floor => Floor;
    ceil_, ceil => Ceil;
    round_, round => Round;
    trunc_, trunc => Trunc;
    bitwise_not_, bitwise_not => BitwiseNot;
}
