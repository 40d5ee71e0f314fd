//! The CPU dispatch of the unary ops: [`run_unary`], generated from the op table
//! (`ops/table.rs`). Each op matches the dtype once and runs [`unary_into`] with the
//! table's scalar function, monomorphised for that dtype; the op layer
//! (`ops/elementwise.rs`) has already applied the dtype rule and allocated `out`.

use super::elementwise_loops::{unary_half_into, unary_into};
#[allow(unused_imports)] // The table's scalar functions use some of these.
use super::math::{arm, dispatch, half_arm, not_implemented, sign_real, Complex, Half, Int, Real};
use crate::dtype::Element;
use crate::error::Result;
use crate::ops::table::{Cost, Unary};
use crate::tensor::Tensor;
use crate::with_dtype;

/// One op's kernel, by the table's form (see `ops/table.rs`). Each arm is a generic
/// function (so the traits' methods are the ones called, whatever `std` adds to `f32`),
/// instantiated for the dtype matched.
macro_rules! unary_kernel {
    ($op:ident, $cost:expr, $out:ident, $a:ident;
     same |$x:ident| $(int $int:expr;)? $(real $real:expr;)? $(half $half:expr;)? $(complex $cx:expr;)? $(bool $b:expr;)?) => {
        dispatch!($a.dtype();
            int _I => arm!([$({
                #[inline(always)]
                fn k<I: Int>($x: I) -> I { $int }
                unary_into::<_, _, _, { matches!($cost, Cost::Math) }>($op, $cost, $out, $a, k::<_I>)
            })?] $op, $a.dtype());
            real _R => arm!([$({
                #[inline(always)]
                fn k<R: Real>($x: R) -> R { $real }
                unary_into::<_, _, _, { matches!($cost, Cost::Math) }>($op, $cost, $out, $a, k::<_R>)
            })?] $op, $a.dtype());
            half _H => half_arm!(
                [$({
                    #[inline(always)]
                    fn k<H: Half>($x: H) -> H { $half }
                    unary_into::<_, _, _, { matches!($cost, Cost::Math) }>($op, $cost, $out, $a, k::<_H>)
                })?]
                [$({
                    #[inline(always)]
                    fn k<R: Real>($x: R) -> R { $real }
                    unary_half_into::<_H, _>($op, $cost, $out, $a, k::<f32>)
                })?]
                $op, $a.dtype());
            complex _C => arm!([$({
                #[inline(always)]
                fn k<C: Complex>($x: C) -> C { $cx }
                unary_into::<_, _, _, { matches!($cost, Cost::Math) }>($op, $cost, $out, $a, k::<_C>)
            })?] $op, $a.dtype());
            bool => arm!([$({
                fn k($x: bool) -> bool { $b }
                unary_into::<_, _, _, { matches!($cost, Cost::Math) }>($op, $cost, $out, $a, k)
            })?] $op, $a.dtype()))
    };
    ($op:ident, $cost:expr, $out:ident, $a:ident;
     pred |$x:ident| $(int $int:expr;)? $(real $real:expr;)? $(complex $cx:expr;)? $(bool $b:expr;)?) => {
        dispatch!($a.dtype();
            int _I => arm!([$({
                #[inline(always)]
                fn k<I: Int>($x: I) -> bool { $int }
                unary_into::<_, _, _, { matches!($cost, Cost::Math) }>($op, $cost, $out, $a, k::<_I>)
            })?] $op, $a.dtype());
            real _R => arm!([$({
                #[inline(always)]
                fn k<R: Real>($x: R) -> bool { $real }
                unary_into::<_, _, _, { matches!($cost, Cost::Math) }>($op, $cost, $out, $a, k::<_R>)
            })?] $op, $a.dtype());
            half _H => arm!([$({
                #[inline(always)]
                fn k<R: Real>($x: R) -> bool { $real }
                unary_into::<_, _, _, { matches!($cost, Cost::Math) }>($op, $cost, $out, $a, |v: _H| k::<f32>(v.up()))
            })?] $op, $a.dtype());
            complex _C => arm!([$({
                #[inline(always)]
                fn k<C: Complex>($x: C) -> bool { $cx }
                unary_into::<_, _, _, { matches!($cost, Cost::Math) }>($op, $cost, $out, $a, k::<_C>)
            })?] $op, $a.dtype());
            bool => arm!([$({
                fn k($x: bool) -> bool { $b }
                unary_into::<_, _, _, { matches!($cost, Cost::Math) }>($op, $cost, $out, $a, k)
            })?] $op, $a.dtype()))
    };
    ($op:ident, $cost:expr, $out:ident, $a:ident; any_dtype |$x:ident| $e:expr;) => {{
        fn k<T: Element>($x: T) -> bool { $e }
        with_dtype!($a.dtype(), T => unary_into::<_, _, _, { matches!($cost, Cost::Math) }>($op, $cost, $out, $a, k::<T>))
    }};
}

macro_rules! define_run_unary {
    ($( $(#[doc = $doc:tt])* $Kind:ident $name:ident inplace($($ip:ident)?) rule($($rule:tt)*)
        cost($cost:ident) cuda($($cu:tt)*) kernel($($k:tt)*) grad($($gr:tt)*); )*) => {
        /// Runs unary op `kind` on `a` (already of the op's compute dtype) into `out` (of
        /// its result dtype, `a`'s shape or broadcastable from it).
        ///
        /// # Errors
        /// A dtype the op has no kernel for, or the loop's own errors (a read-only or
        /// self-overlapping `out`, a borrow conflict).
        pub(crate) fn run_unary(kind: Unary, out: &Tensor, a: &Tensor) -> Result<()> {
            if let Some(done) = super::vector_math::run_with_fixup(kind, out, a) {
                return done;
            }
            let op = kind.name();
            match kind {
                $( Unary::$Kind => unary_kernel!(op, Cost::$cost, out, a; $($k)*), )*
            }
        }
    };
}

crate::for_each_unary_op!(define_run_unary);
