//! The CPU dispatch of the binary ops: [`run_binary`], generated from the op table
//! (`ops/table.rs`). Each op matches the dtype once and runs [`binary_into`] with the
//! table's scalar function, monomorphised for that dtype; the op layer
//! (`ops/elementwise.rs`) has already applied the dtype rule, converted both operands to
//! the compute dtype and allocated `out`.

use std::sync::atomic::{AtomicBool, Ordering};

use super::elementwise_loops::{
    binary_half_into, binary_into, unary_half_into, unary_into, ComplexParts,
};
#[allow(unused_imports)] // The table's scalar functions use some of these.
use super::math::{
    arm, dispatch, floor_div_int, floor_div_real, fmax_real, fmin_real, half_arm, heaviside_int,
    heaviside_real, logaddexp2_real, logaddexp_real, maximum_real, minimum_real, nextafter_half,
    not_implemented, pow_int, remainder_int, remainder_real, shl_int, shr_int, xlogy_real, Complex,
    Half, Int, Real,
};
use super::plan::output_for;
use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::ops::table::{Binary, Check, Cost};
use crate::tensor::{Scalar, Tensor};
use crate::with_dtype;

/// One op's kernel, by the table's form (see `ops/table.rs`). Each arm is a generic
/// function (so the traits' methods are the ones called, whatever `std` adds to `f32`),
/// instantiated for the dtype matched.
macro_rules! binary_kernel {
    ($op:ident, $cost:expr, $out:ident, $ta:ident, $tb:ident;
     same |$a:ident, $b:ident| $(int $int:expr;)? $(real $real:expr;)? $(half $half:expr;)? $(complex $cx:expr;)? $(bool $bl:expr;)?) => {
        dispatch!($ta.dtype();
            int _I => arm!([$({
                fn k<I: Int>($a: I, $b: I) -> I { $int }
                binary_into($op, $cost, $out, $ta, $tb, k::<_I>)
            })?] $op, $ta.dtype());
            real _R => arm!([$({
                fn k<R: Real>($a: R, $b: R) -> R { $real }
                binary_into($op, $cost, $out, $ta, $tb, k::<_R>)
            })?] $op, $ta.dtype());
            half _H => half_arm!(
                [$({
                    fn k<H: Half>($a: H, $b: H) -> H { $half }
                    binary_into($op, $cost, $out, $ta, $tb, k::<_H>)
                })?]
                [$({
                    fn k<R: Real>($a: R, $b: R) -> R { $real }
                    binary_half_into::<_H, _>($op, $cost, $out, $ta, $tb, k::<f32>)
                })?]
                $op, $ta.dtype());
            complex _C => arm!([$({
                fn k<C: Complex>($a: C, $b: C) -> C { $cx }
                binary_into($op, $cost, $out, $ta, $tb, ComplexParts(k::<_C>))
            })?] $op, $ta.dtype());
            bool => arm!([$({
                fn k($a: bool, $b: bool) -> bool { $bl }
                binary_into($op, $cost, $out, $ta, $tb, k)
            })?] $op, $ta.dtype()))
    };
    ($op:ident, $cost:expr, $out:ident, $ta:ident, $tb:ident;
     pred |$a:ident, $b:ident| $(int $int:expr;)? $(real $real:expr;)? $(complex $cx:expr;)? $(bool $bl:expr;)?) => {
        dispatch!($ta.dtype();
            int _I => arm!([$({
                fn k<I: Int>($a: I, $b: I) -> bool { $int }
                binary_into($op, $cost, $out, $ta, $tb, k::<_I>)
            })?] $op, $ta.dtype());
            real _R => arm!([$({
                fn k<R: Real>($a: R, $b: R) -> bool { $real }
                binary_into($op, $cost, $out, $ta, $tb, k::<_R>)
            })?] $op, $ta.dtype());
            half _H => arm!([$({
                fn k<R: Real>($a: R, $b: R) -> bool { $real }
                binary_into($op, $cost, $out, $ta, $tb, |v: _H, w: _H| k::<f32>(v.up(), w.up()))
            })?] $op, $ta.dtype());
            complex _C => arm!([$({
                fn k<C: Complex>($a: C, $b: C) -> bool { $cx }
                binary_into($op, $cost, $out, $ta, $tb, k::<_C>)
            })?] $op, $ta.dtype());
            bool => arm!([$({
                fn k($a: bool, $b: bool) -> bool { $bl }
                binary_into($op, $cost, $out, $ta, $tb, k)
            })?] $op, $ta.dtype()))
    };
    ($op:ident, $cost:expr, $out:ident, $ta:ident, $tb:ident; any_dtype |$a:ident, $b:ident| $e:expr;) => {{
        fn k<T: Element>($a: T, $b: T) -> bool { $e }
        with_dtype!($ta.dtype(), T => binary_into($op, $cost, $out, $ta, $tb, k::<T>))
    }};
}

macro_rules! define_run_binary {
    ($( $(#[doc = $doc:tt])* $Kind:ident $name:ident inplace($($ip:ident)?) rule($($rule:tt)*)
        cost($cost:ident) check($check:ident) cuda($($cu:tt)*) kernel($($k:tt)*) grad($($gr:tt)*); )*) => {
        /// Runs binary op `kind` on `a` and `b` (both of the op's compute dtype) into `out`
        /// (of its result dtype; the inputs broadcast to its shape). The op's
        /// [`Check`] on integer inputs runs first: an error leaves `out` unwritten.
        ///
        /// # Errors
        /// A failed check, a dtype the op has no kernel for, or the loop's own errors.
        pub(crate) fn run_binary(kind: Binary, out: &Tensor, a: &Tensor, b: &Tensor) -> Result<()> {
            let op = kind.name();
            check(kind, out, b)?;
            if kind == Binary::Pow {
                if let Some(done) = one_exponent(b).and_then(|e| pow_by(e, out, a)) {
                    return done;
                }
            }
            if let Some(done) = divide_by_one(kind, out, a, b) {
                return done;
            }
            if kind == Binary::Pow {
                if let Some(done) = pow_float(out, a, b) {
                    return done;
                }
            }
            if kind == Binary::Atan2 {
                if let Some(done) = atan2_float(out, a, b) {
                    return done;
                }
            }
            match kind {
                $( Binary::$Kind => binary_kernel!(op, Cost::$cost, out, a, b; $($k)*), )*
            }
        }
    };
}

crate::for_each_binary_op!(define_run_binary);

/// Whether every element of `b` is one element of its storage (a single element, or one
/// element broadcast).
fn is_one_value(b: &Tensor) -> bool {
    b.shape()
        .iter()
        .zip(b.strides())
        .all(|(&n, &s)| n <= 1 || s == 0)
}

/// The value of `b` when it is one value (a single element, or one element broadcast) of
/// an integer or real dtype.
fn one_exponent(b: &Tensor) -> Option<f64> {
    if !is_one_value(b) {
        return None;
    }
    match b.get_scalar(&vec![0; b.ndim()]) {
        Ok(Scalar::Float(v)) => Some(v),
        Ok(Scalar::Int(v)) => Some(v as f64),
        _ => None,
    }
}

/// `a ** e` for the exponents PyTorch's CPU kernel computes without `pow` (NumPy's `**`
/// does the same for 2, 0.5 and −1): `x·x`, `x·x·x`, `√x`, `1/x`, `1/√x`, `1/(x·x)`, in
/// vector blocks, far cheaper than the general `pow` (4–11 ns an element: `pow_float`,
/// or the C library below AVX-512). They round differently from `pow` (`x·x·x` twice; within 1 ulp), and at a
/// few special values take the expression's answer, as in PyTorch: `(−0) ** 0.5` is −0
/// and `(−∞) ** 0.5` NaN (the square root's), `(−0) ** −0.5` is −∞. `None` for the other
/// exponents and for complex tensors (their `pow` is its own formula).
fn pow_by(e: f64, out: &Tensor, a: &Tensor) -> Option<Result<()>> {
    let op = Binary::Pow.name();
    let float = a.dtype().is_float();
    Some(if e == 2.0 && !a.dtype().is_complex() {
        run_binary(Binary::Mul, out, a, a)
    } else if e == 3.0 {
        cube(op, out, a)?
    } else if e == 0.5 && float {
        super::unary::run_unary(crate::ops::table::Unary::Sqrt, out, a)
    } else if e == -1.0 && float {
        super::unary::run_unary(crate::ops::table::Unary::Reciprocal, out, a)
    } else if e == -0.5 && float {
        super::unary::run_unary(crate::ops::table::Unary::Rsqrt, out, a)
    } else if e == -2.0 && float {
        inverse_square(op, out, a)?
    } else {
        return None;
    })
}

/// Integer `floor_divide`, `remainder` and `fmod` by one divisor (a single element, or
/// one element broadcast) through its multiplier (`kernel/int_divide.rs`); `None` for
/// other ops, dtypes and divisors (and a zero divisor of an empty result, which
/// [`check`] lets through).
fn divide_by_one(kind: Binary, out: &Tensor, a: &Tensor, b: &Tensor) -> Option<Result<()>> {
    use super::int_divide::DivideInt;
    if !matches!(kind, Binary::FloorDivide | Binary::Remainder | Binary::Fmod)
        || !a.dtype().is_int()
        || b.dtype() != a.dtype()
        || !is_one_value(b)
    {
        return None;
    }
    let at = vec![0; b.ndim()];
    dispatch!(a.dtype();
        // A zero divisor reaches here only for an empty result ([`check`] reads none).
        int I => match b.get::<I>(&at).ok()? {
            d if d == I::ZERO => None,
            d => I::run_by(kind, out, a, d),
        };
        real _R => None;
        half _H => None;
        complex _C => None;
        bool => None)
}

/// The general `pow` of float32 and float64 in vector code at the AVX-512 level: float32
/// through `f32_math::PowMap` (float32-grade logarithm and exponential in float64,
/// rounded once), float64 through `f64_math::PowMap` (fdlibm's `pow`, branch-free for
/// the common inputs). 1M elements, one thread: float32 3.7 ms (the C library's `powf`
/// 4.5), float64 6.2 ms (`pow` 11.5). Below AVX-512 the same code measured slower than
/// the C library (float32 6.8 ms at AVX2, 21 ms portable; float64 11.3 and 20.5), so
/// there and for the other dtypes `None`: the op table's kernel, the C library per
/// element.
fn pow_float(out: &Tensor, a: &Tensor, b: &Tensor) -> Option<Result<()>> {
    use super::vector_math::{f32_math, f64_math};
    if super::cpu::level() < super::cpu::Level::Avx512 {
        return None;
    }
    let op = Binary::Pow.name();
    Some(match a.dtype() {
        DType::F32 => binary_into(op, Cost::Math, out, a, b, f32_math::PowMap),
        DType::F64 => binary_into(op, Cost::Math, out, a, b, f64_math::PowMap),
        _ => return None,
    })
}

/// `atan2` for float32 and float64 as vector code (`f64_math::atan2`, branch-free, at every
/// level; the C library's took 20–25 ns an element); `None` for the other dtypes (the op
/// table's kernel).
fn atan2_float(out: &Tensor, a: &Tensor, b: &Tensor) -> Option<Result<()>> {
    use super::vector_math::{f32_math, f64_math};
    let op = Binary::Atan2.name();
    Some(match a.dtype() {
        DType::F32 => binary_into(op, Cost::Math, out, a, b, f32_math::Atan2Map),
        DType::F64 => binary_into(op, Cost::Math, out, a, b, f64_math::Atan2Map),
        _ => return None,
    })
}

/// `x·x·x` (integers wrap, as `pow` does); `None` for complex and bool.
fn cube(op: &'static str, out: &Tensor, a: &Tensor) -> Option<Result<()>> {
    fn int<I: Int>(x: I) -> I {
        x.w_mul(x).w_mul(x)
    }
    fn real<R: Real>(x: R) -> R {
        x * x * x
    }
    Some(dispatch!(a.dtype();
        int I => unary_into::<I, I, _, false>(op, Cost::Memory, out, a, int::<I>);
        real R => unary_into::<R, R, _, false>(op, Cost::Memory, out, a, real::<R>);
        half H => unary_half_into::<H, _>(op, Cost::Memory, out, a, real::<f32>);
        complex _C => return None;
        bool => return None))
}

/// `1/(x·x)` for the real and half dtypes (`None` for the others).
fn inverse_square(op: &'static str, out: &Tensor, a: &Tensor) -> Option<Result<()>> {
    fn real<R: Real>(x: R) -> R {
        R::ONE / (x * x)
    }
    Some(dispatch!(a.dtype();
        int _I => return None;
        real R => unary_into::<R, R, _, false>(op, Cost::Memory, out, a, real::<R>);
        half H => unary_half_into::<H, _>(op, Cost::Memory, out, a, real::<f32>);
        complex _C => return None;
        bool => return None))
}

/// The op's [`Check`] on an integer divisor or exponent `b`, before anything is written.
/// An empty result reads no divisor, as in PyTorch.
fn check(kind: Binary, out: &Tensor, b: &Tensor) -> Result<()> {
    let op = kind.name();
    if !b.dtype().is_int() || out.numel() == 0 {
        return Ok(());
    }
    match kind.check() {
        Check::Nothing => Ok(()),
        Check::ZeroDivisor if has_zero(op, b)? => Err(Error::value(op, "ZeroDivisionError")),
        Check::NegativeExponent if has_negative(op, b)? => Err(Error::value(
            op,
            "Integers to negative integer powers are not allowed.",
        )),
        Check::ZeroDivisor | Check::NegativeExponent => Ok(()),
    }
}

/// True when some element of `t` satisfies `pred`. Broadcast (stride-0) dims are read
/// once.
fn any_elem<T: Element>(
    op: &'static str,
    t: &Tensor,
    pred: impl Fn(T) -> bool + Sync,
) -> Result<bool> {
    let mut c = t.clone();
    for d in 0..c.ndim() {
        if c.strides()[d] == 0 && c.shape()[d] > 1 {
            c = c.narrow(d as i64, 0, 1)?;
        }
    }
    let mask = output_for(c.shape(), DType::Bool, &[&c])?;
    let hit = AtomicBool::new(false);
    unary_into::<_, _, _, false>(op, Cost::Memory, &mask, &c, |x: T| {
        let p = pred(x);
        if p {
            hit.store(true, Ordering::Relaxed);
        }
        p
    })?;
    Ok(hit.load(Ordering::Relaxed))
}

/// True when an integer tensor holds a zero.
fn has_zero(op: &'static str, t: &Tensor) -> Result<bool> {
    dispatch!(t.dtype();
        int I => any_elem(op, t, |x: I| x == I::ZERO);
        real _R => Ok(false);
        half _H => Ok(false);
        complex _C => Ok(false);
        bool => any_elem(op, t, |x: bool| !x))
}

/// True when an integer tensor holds a negative value.
fn has_negative(op: &'static str, t: &Tensor) -> Result<bool> {
    dispatch!(t.dtype();
        int I => any_elem(op, t, |x: I| x.is_neg());
        real _R => Ok(false);
        half _H => Ok(false);
        complex _C => Ok(false);
        bool => Ok(false))
}
