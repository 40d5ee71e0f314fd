//! Binary elementwise ops with broadcasting and PyTorch's type promotion: arithmetic,
//! comparisons, logical and bitwise ops, plus their in-place variants.
//!
//! Operands are [`Operand`]s, so a Rust scalar works wherever a tensor does; it is weak in
//! promotion (`int32 + 1.5 → float32`) and becomes a 0-d tensor, which broadcasting gives
//! stride 0. Each op dispatches on the compute dtype once and runs [`binary_into`].

use super::elementwise::binary_into;
use super::ewise::{
    any_elem, broadcast_operands, float_of, operand_as, operand_dtype, Dest, Target,
};
use super::math::{
    dispatch, floor_div_int, not_implemented, pow_int, remainder_int, shl_int, shr_int, Cmp2, Half,
    Int, Op2, Real,
};
use super::plan::{result_type, Operand};
use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use crate::with_dtype;

/// The binary ops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Binary {
    Add,
    Sub,
    Mul,
    Div,
    FloorDivide,
    Remainder,
    Pow,
    Maximum,
    Minimum,
    Atan2,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    LogicalAnd,
    LogicalOr,
    LogicalXor,
    BitwiseAnd,
    BitwiseOr,
    BitwiseXor,
    LeftShift,
    RightShift,
}

impl Binary {
    fn name(self) -> &'static str {
        use Binary::*;
        match self {
            Add => "add",
            Sub => "sub",
            Mul => "mul",
            Div => "div",
            FloorDivide => "floor_divide",
            Remainder => "remainder",
            Pow => "pow",
            Maximum => "maximum",
            Minimum => "minimum",
            Atan2 => "atan2",
            Eq => "eq",
            Ne => "ne",
            Lt => "lt",
            Le => "le",
            Gt => "gt",
            Ge => "ge",
            LogicalAnd => "logical_and",
            LogicalOr => "logical_or",
            LogicalXor => "logical_xor",
            BitwiseAnd => "bitwise_and",
            BitwiseOr => "bitwise_or",
            BitwiseXor => "bitwise_xor",
            LeftShift => "bitwise_left_shift",
            RightShift => "bitwise_right_shift",
        }
    }
}

const ALL_BINARY: [Binary; 24] = {
    use Binary::*;
    [
        Add,
        Sub,
        Mul,
        Div,
        FloorDivide,
        Remainder,
        Pow,
        Maximum,
        Minimum,
        Atan2,
        Eq,
        Ne,
        Lt,
        Le,
        Gt,
        Ge,
        LogicalAnd,
        LogicalOr,
        LogicalXor,
        BitwiseAnd,
        BitwiseOr,
        BitwiseXor,
        LeftShift,
        RightShift,
    ]
};

/// `lhs OP rhs` with a scalar on the left (`2 - t`, `2 ** t`, `st.sub(2, t)`): the scalar
/// stays weak in promotion, exactly as on the right. `op` is the method name (`"sub"`,
/// `"pow"`, `"bitwise_left_shift"`, …).
///
/// # Errors
/// An unknown op name, and the op's own errors.
pub fn scalar_lhs(op: &str, lhs: crate::Scalar, rhs: &Tensor) -> Result<Tensor> {
    let kind = ALL_BINARY
        .into_iter()
        .find(|k| k.name() == op)
        .ok_or_else(|| Error::value("scalar_lhs", format!("{op:?} is not a binary op")))?;
    binary(
        kind,
        &Operand::Scalar(lhs),
        &Operand::Tensor(rhs),
        Dest::New,
    )
}

/// A float-only binary op.
trait Real2 {
    fn real<R: Real>(a: R, b: R) -> R;
}

/// An integer-only binary op.
trait Int2 {
    fn int<I: Int>(a: I, b: I) -> I;
}

macro_rules! op2 {
    ($($name:ident: |$a:ident, $b:ident| int $int:expr, real $real:expr;)*) => {$(
        pub(crate) struct $name;
        impl Op2 for $name {
            #[inline(always)]
            fn int<I: Int>($a: I, $b: I) -> I { $int }
            #[inline(always)]
            fn real<R: Real>($a: R, $b: R) -> R { $real }
        }
    )*};
}

op2! {
    AddOp: |a, b| int a.w_add(b), real a + b;
    SubOp: |a, b| int a.w_sub(b), real a - b;
    MulOp: |a, b| int a.w_mul(b), real a * b;
    FloorDivOp: |a, b| int floor_div_int(a, b), real floor_div_real(a, b);
    RemainderOp: |a, b| int remainder_int(a, b), real remainder_real(a, b);
    PowOp: |a, b| int pow_int(a, b), real a.powf(b);
    MaximumOp: |a, b| int a.max(b), real maximum_real(a, b);
    MinimumOp: |a, b| int a.min(b), real minimum_real(a, b);
}

/// PyTorch's `div_floor_floating`: Python's `//` on floats, IEEE results for a zero
/// divisor.
#[inline(always)]
fn floor_div_real<R: Real>(a: R, b: R) -> R {
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
fn remainder_real<R: Real>(a: R, b: R) -> R {
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

macro_rules! real2 {
    ($($name:ident: |$a:ident, $b:ident| $body:expr;)*) => {$(
        struct $name;
        impl Real2 for $name {
            #[inline(always)]
            fn real<R: Real>($a: R, $b: R) -> R { $body }
        }
    )*};
}

real2! {
    DivOp: |a, b| a / b;
    Atan2Op: |a, b| a.atan2(b);
}

macro_rules! int2 {
    ($($name:ident: |$a:ident, $b:ident| $body:expr;)*) => {$(
        struct $name;
        impl Int2 for $name {
            #[inline(always)]
            fn int<I: Int>($a: I, $b: I) -> I { $body }
        }
    )*};
}

int2! {
    AndOp: |a, b| a.and(b);
    OrOp: |a, b| a.or(b);
    XorOp: |a, b| a.xor(b);
    ShlOp: |a, b| shl_int(a, b);
    ShrOp: |a, b| shr_int(a, b);
}

macro_rules! cmp2 {
    ($($name:ident: |$a:ident, $b:ident| $body:expr;)*) => {$(
        struct $name;
        impl Cmp2 for $name {
            #[inline(always)]
            fn cmp<T: PartialOrd>($a: T, $b: T) -> bool { $body }
        }
    )*};
}

cmp2! {
    EqOp: |a, b| a == b;
    NeOp: |a, b| a != b;
    LtOp: |a, b| a < b;
    LeOp: |a, b| a <= b;
    GtOp: |a, b| a > b;
    GeOp: |a, b| a >= b;
}

/// Runs an [`Op2`] on integer or float inputs of one dtype.
pub(crate) fn run_op2<F: Op2>(
    op: &'static str,
    out: &Tensor,
    a: &Tensor,
    b: &Tensor,
) -> Result<()> {
    dispatch!(a.dtype();
        int I => binary_into(op, out, a, b, F::int::<I>);
        real R => binary_into(op, out, a, b, F::real::<R>);
        half H => binary_into(op, out, a, b, |x: H, y: H| H::down(F::real(x.up(), y.up())));
        bool => Err(not_implemented(op, DType::Bool)))
}

fn run_real2<F: Real2>(op: &'static str, out: &Tensor, a: &Tensor, b: &Tensor) -> Result<()> {
    dispatch!(a.dtype();
        int _I => Err(not_implemented(op, a.dtype()));
        real R => binary_into(op, out, a, b, F::real::<R>);
        half H => binary_into(op, out, a, b, |x: H, y: H| H::down(F::real(x.up(), y.up())));
        bool => Err(not_implemented(op, DType::Bool)))
}

fn run_int2<F: Int2>(op: &'static str, out: &Tensor, a: &Tensor, b: &Tensor) -> Result<()> {
    dispatch!(a.dtype();
        int I => binary_into(op, out, a, b, F::int::<I>);
        real _R => Err(not_implemented(op, a.dtype()));
        half _H => Err(not_implemented(op, a.dtype()));
        bool => Err(not_implemented(op, DType::Bool)))
}

fn run_cmp<F: Cmp2>(op: &'static str, out: &Tensor, a: &Tensor, b: &Tensor) -> Result<()> {
    dispatch!(a.dtype();
        int I => binary_into(op, out, a, b, F::cmp::<I>);
        real R => binary_into(op, out, a, b, F::cmp::<R>);
        half H => binary_into(op, out, a, b, |x: H, y: H| F::cmp(x.up(), y.up()));
        bool => binary_into(op, out, a, b, F::cmp::<bool>))
}

/// Arithmetic and bitwise ops on bool tensors: `+`, `maximum` and `|` are "or"; `*`,
/// `minimum` and `&` are "and" (PyTorch: `True + True == True`).
fn run_bool(kind: Binary, out: &Tensor, a: &Tensor, b: &Tensor) -> Result<()> {
    use Binary::*;
    let op = kind.name();
    match kind {
        Add | Maximum | BitwiseOr => binary_into(op, out, a, b, |x: bool, y: bool| x | y),
        Mul | Minimum | BitwiseAnd => binary_into(op, out, a, b, |x: bool, y: bool| x & y),
        BitwiseXor => binary_into(op, out, a, b, |x: bool, y: bool| x ^ y),
        _ => Err(not_implemented(op, DType::Bool)),
    }
}

/// True when an integer tensor holds a zero.
fn has_zero(op: &'static str, t: &Tensor) -> Result<bool> {
    dispatch!(t.dtype();
        int I => any_elem(op, t, |x: I| x == I::ZERO);
        real _R => Ok(false);
        half _H => Ok(false);
        bool => any_elem(op, t, |x: bool| !x))
}

/// True when an integer tensor holds a negative value.
fn has_negative(op: &'static str, t: &Tensor) -> Result<bool> {
    dispatch!(t.dtype();
        int I => any_elem(op, t, |x: I| x.is_neg());
        real _R => Ok(false);
        half _H => Ok(false);
        bool => Ok(false))
}

/// The compute and output dtypes of `kind` over operands whose promoted dtype is
/// `common`, or PyTorch's error for the combination.
fn dtypes(kind: Binary, common: DType, a: &Operand<'_>, b: &Operand<'_>) -> Result<(DType, DType)> {
    use Binary::*;
    let op = kind.name();
    let (ba, bb) = (
        operand_dtype(a) == DType::Bool,
        operand_dtype(b) == DType::Bool,
    );
    Ok(match kind {
        Sub if ba && bb => return Err(Error::dtype(op, "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` operator instead.")),
        Sub if ba || bb => return Err(Error::dtype(op, "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.")),
        FloorDivide | Remainder | Pow | LeftShift | RightShift if common == DType::Bool => {
            return Err(not_implemented(op, common))
        }
        BitwiseAnd | BitwiseOr | BitwiseXor | LeftShift | RightShift if common.is_float() => {
            return Err(not_implemented(op, common))
        }
        Add | Sub | Mul | FloorDivide | Remainder | Pow | Maximum | Minimum | BitwiseAnd
        | BitwiseOr | BitwiseXor | LeftShift | RightShift => (common, common),
        // True division and atan2 are float ops: integers compute in float32.
        Div | Atan2 => (float_of(common), float_of(common)),
        Eq | Ne | Lt | Le | Gt | Ge | LogicalAnd | LogicalOr | LogicalXor => (common, DType::Bool),
    })
}

/// Runs binary op `kind` on `a` and `b` into `dest`.
pub(crate) fn binary(
    kind: Binary,
    a: &Operand<'_>,
    b: &Operand<'_>,
    dest: Dest<'_>,
) -> Result<Tensor> {
    use Binary::*;
    let op = kind.name();
    let shape = broadcast_operands(op, &[a, b])?;
    let common = result_type(&[a.clone(), b.clone()])?;
    let (cdt, odt) = dtypes(kind, common, a, b)?;
    let (ta, tb) = (operand_as(op, a, cdt)?, operand_as(op, b, cdt)?);
    if cdt.is_int() && crate::layout::numel_of(&shape) > 0 {
        // Checked before anything is written (an in-place op never half-completes); an
        // empty result reads no divisor, as in PyTorch.
        if matches!(kind, FloorDivide | Remainder) && has_zero(op, &tb)? {
            return Err(Error::value(op, "ZeroDivisionError"));
        }
        if kind == Pow && has_negative(op, &tb)? {
            return Err(Error::value(
                op,
                "Integers to negative integer powers are not allowed.",
            ));
        }
    }
    let inputs: Vec<&Tensor> = [a, b]
        .into_iter()
        .filter_map(|o| match o {
            Operand::Tensor(t) => Some(*t),
            Operand::Scalar(_) => None,
        })
        .collect();
    let target = Target::new(op, dest, &shape, odt, &inputs)?;
    let (out, a, b) = (target.out(), &ta, &tb);
    match kind {
        _ if cdt == DType::Bool && odt == DType::Bool && !is_predicate(kind) => {
            run_bool(kind, out, a, b)
        }
        Add => run_op2::<AddOp>(op, out, a, b),
        Sub => run_op2::<SubOp>(op, out, a, b),
        Mul => run_op2::<MulOp>(op, out, a, b),
        FloorDivide => run_op2::<FloorDivOp>(op, out, a, b),
        Remainder => run_op2::<RemainderOp>(op, out, a, b),
        Pow => run_op2::<PowOp>(op, out, a, b),
        Maximum => run_op2::<MaximumOp>(op, out, a, b),
        Minimum => run_op2::<MinimumOp>(op, out, a, b),
        Div => run_real2::<DivOp>(op, out, a, b),
        Atan2 => run_real2::<Atan2Op>(op, out, a, b),
        Eq => run_cmp::<EqOp>(op, out, a, b),
        Ne => run_cmp::<NeOp>(op, out, a, b),
        Lt => run_cmp::<LtOp>(op, out, a, b),
        Le => run_cmp::<LeOp>(op, out, a, b),
        Gt => run_cmp::<GtOp>(op, out, a, b),
        Ge => run_cmp::<GeOp>(op, out, a, b),
        LogicalAnd => with_dtype!(cdt, T => binary_into(op, out, a, b,
            |x: T, y: T| x.is_nonzero() & y.is_nonzero())),
        LogicalOr => with_dtype!(cdt, T => binary_into(op, out, a, b,
            |x: T, y: T| x.is_nonzero() | y.is_nonzero())),
        LogicalXor => with_dtype!(cdt, T => binary_into(op, out, a, b,
            |x: T, y: T| x.is_nonzero() ^ y.is_nonzero())),
        BitwiseAnd => run_int2::<AndOp>(op, out, a, b),
        BitwiseOr => run_int2::<OrOp>(op, out, a, b),
        BitwiseXor => run_int2::<XorOp>(op, out, a, b),
        LeftShift => run_int2::<ShlOp>(op, out, a, b),
        RightShift => run_int2::<ShrOp>(op, out, a, b),
    }?;
    target.finish()
}

/// Comparisons and logical ops: bool out whatever the inputs.
fn is_predicate(kind: Binary) -> bool {
    use Binary::*;
    matches!(
        kind,
        Eq | Ne | Lt | Le | Gt | Ge | LogicalAnd | LogicalOr | LogicalXor
    )
}

macro_rules! binary_methods {
    ($($(#[doc = $doc:literal])* $name:ident => $kind:ident;)*) => {
        /// # Binary elementwise ops
        ///
        /// `other` is a tensor (`&b`) or a Rust scalar (`2.0`, `3`, `true`); shapes
        /// broadcast as in PyTorch and the result dtype follows PyTorch's promotion, where
        /// scalars and 0-d tensors are weak (`int32 + 1.5 → float32`, `float16 + 0-d
        /// float64 → float16`). The result's dim order follows the inputs'.
        impl Tensor {$(
            $(#[doc = $doc])*
            ///
            /// # Errors
            /// Shapes that do not broadcast (PyTorch's text), an unsupported dtype, or a
            /// failed allocation.
            pub fn $name<'a>(&self, other: impl Into<Operand<'a>>) -> Result<Tensor> {
                binary(Binary::$kind, &Operand::Tensor(self), &other.into(), Dest::New)
            }
        )*}
    };
}

binary_methods! {
    /// `self + other`. Integers wrap (`127i8 + 1 == -128`); bool + bool is "or".
    add => Add;
    /// `self - other`. Integers wrap; any bool operand is an error (PyTorch's text).
    sub => Sub;
    /// `self * other`. Integers wrap; bool · bool is "and".
    mul => Mul;
    /// True division: integer and bool inputs give float32; `x / 0` is ±∞ or NaN.
    div => Div;
    /// Python's `//` (rounds toward −∞). An integer zero divisor is an error
    /// ("ZeroDivisionError") raised before anything is written.
    floor_divide => FloorDivide;
    /// Python's `%`: the result takes the divisor's sign, for floats and integers. An
    /// integer zero divisor is an error ("ZeroDivisionError").
    remainder => Remainder;
    /// `selfᵒᵗʰᵉʳ`. Integers wrap; a negative integer exponent with an integer base is an
    /// error ("Integers to negative integer powers are not allowed.").
    pow => Pow;
    /// The larger of the two; NaN if either is NaN (bool: "or").
    maximum => Maximum;
    /// The smaller of the two; NaN if either is NaN (bool: "and").
    minimum => Minimum;
    /// `atan2(self, other)`, the angle of the point `(other, self)`; integers give float32.
    atan2 => Atan2;
    /// `self == other`, as a bool tensor (compared in the promoted dtype).
    eq => Eq;
    /// `self != other`, as a bool tensor.
    ne => Ne;
    /// `self < other`, as a bool tensor.
    lt => Lt;
    /// `self <= other`, as a bool tensor.
    le => Le;
    /// `self > other`, as a bool tensor.
    gt => Gt;
    /// `self >= other`, as a bool tensor.
    ge => Ge;
    /// Both non-zero, as a bool tensor.
    logical_and => LogicalAnd;
    /// Either non-zero, as a bool tensor.
    logical_or => LogicalOr;
    /// Exactly one non-zero, as a bool tensor.
    logical_xor => LogicalXor;
    /// Bitwise `&` of integers or bools; floats are an error.
    bitwise_and => BitwiseAnd;
    /// Bitwise `|` of integers or bools; floats are an error.
    bitwise_or => BitwiseOr;
    /// Bitwise `^` of integers or bools; floats are an error.
    bitwise_xor => BitwiseXor;
    /// `self << other` on integers; a negative or too-large count gives 0 (PyTorch).
    bitwise_left_shift => LeftShift;
    /// `self >> other` on integers (arithmetic for signed types); a negative or too-large
    /// count gives the sign fill (PyTorch).
    bitwise_right_shift => RightShift;
}

macro_rules! binary_inplace {
    ($($name:ident, $base:ident => $kind:ident;)*) => {
        /// # In-place binary ops
        ///
        /// `x.op_(other)` writes `x.op(other)` into `x` and returns it. `other` must
        /// broadcast to `x`'s shape, and the promoted result dtype must be castable to
        /// `x`'s, as in PyTorch (`int_tensor.div_(2)` is an error: "result type Float
        /// can't be cast to the desired output type Long"). An input that overlaps `x` in
        /// memory (`x.add_(&x.flip(&[0])?)`) is read completely before `x` is written.
        impl Tensor {$(
            #[doc = concat!("In-place [`", stringify!($base), "`](Self::", stringify!($base), ").")]
            ///
            /// # Errors
            /// As the out-of-place op; also a result that does not fit `self`'s shape or
            /// dtype, a read-only tensor, or one whose elements alias each other.
            pub fn $name<'a>(&self, other: impl Into<Operand<'a>>) -> Result<&Self> {
                binary(Binary::$kind, &Operand::Tensor(self), &other.into(), Dest::Into(self))?;
                Ok(self)
            }
        )*}
    };
}

binary_inplace! {
    add_, add => Add;
    sub_, sub => Sub;
    mul_, mul => Mul;
    div_, div => Div;
    floor_divide_, floor_divide => FloorDivide;
    remainder_, remainder => Remainder;
    pow_, pow => Pow;
    maximum_, maximum => Maximum;
    minimum_, minimum => Minimum;
    atan2_, atan2 => Atan2;
    bitwise_and_, bitwise_and => BitwiseAnd;
    bitwise_or_, bitwise_or => BitwiseOr;
    bitwise_xor_, bitwise_xor => BitwiseXor;
    bitwise_left_shift_, bitwise_left_shift => LeftShift;
    bitwise_right_shift_, bitwise_right_shift => RightShift;
}
