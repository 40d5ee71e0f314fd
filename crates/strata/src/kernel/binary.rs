//! The CPU dispatch of the binary ops: [`run_binary`], generated from the op table
//! (`ops/table.rs`). Each op matches the dtype once and runs [`binary_into`] with the
//! table's scalar function, monomorphised for that dtype; the op layer
//! (`ops/elementwise.rs`) has already applied the dtype rule, converted both operands to
//! the compute dtype and allocated `out`.

use std::sync::atomic::{AtomicBool, Ordering};

use super::elementwise_loops::{binary_half_into, binary_into, unary_into, ComplexParts};
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
            // `x ** 2` as `x * x`, NumPy's and PyTorch's fast path: the square rounded once,
            // in vector blocks, where the general `pow` calls libm element by element.
            if kind == Binary::Pow && is_two(b) {
                return run_binary(Binary::Mul, out, a, a);
            }
            match kind {
                $( Binary::$Kind => binary_kernel!(op, Cost::$cost, out, a, b; $($k)*), )*
            }
        }
    };
}

crate::for_each_binary_op!(define_run_binary);

/// Whether `b` is one value (a single element, or one element broadcast) equal to 2, of
/// an integer or real dtype.
fn is_two(b: &Tensor) -> bool {
    if b.shape()
        .iter()
        .zip(b.strides())
        .any(|(&n, &s)| n > 1 && s != 0)
    {
        return false;
    }
    match b.get_scalar(&vec![0; b.ndim()]) {
        Ok(Scalar::Float(v)) => v == 2.0,
        Ok(Scalar::Int(v)) => v == 2,
        _ => false,
    }
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
