//! The CPU dispatch of the ternary ops (`where`, `clamp` with both bounds): [`run_ternary`].
//! The op layer (`ops/elementwise.rs`) has applied the dtype rules and allocated `out`.

use super::elementwise_loops::ternary_into;
use super::math::{dispatch, maximum_real, minimum_real, not_implemented, Half, Int, Real};
use crate::dtype::DType;
use crate::error::Result;
use crate::ops::table::Ternary;
use crate::tensor::Tensor;
use crate::with_dtype;

/// `min(max(x, lo), hi)` for integers.
#[inline(always)]
fn clamp_int<I: Int>(x: I, lo: I, hi: I) -> I {
    x.max(lo).min(hi)
}

/// `min(max(x, lo), hi)` for floats, NaN if any of the three is NaN; `hi` wins when
/// `lo > hi` (PyTorch).
#[inline(always)]
fn clamp_real<R: Real>(x: R, lo: R, hi: R) -> R {
    minimum_real(maximum_real(x, lo), hi)
}

/// Runs ternary op `kind` into `out`: `where` with `a` the bool condition and `b`, `c` of
/// `out`'s dtype; `clamp` with `a` the input and `b`, `c` the bounds, all of `out`'s dtype.
///
/// # Errors
/// A dtype the op has no kernel for (bool for `clamp`), or the loop's own errors.
pub(crate) fn run_ternary(
    kind: Ternary,
    out: &Tensor,
    a: &Tensor,
    b: &Tensor,
    c: &Tensor,
) -> Result<()> {
    let (op, cost) = (kind.name(), kind.cost());
    match kind {
        Ternary::Where => with_dtype!(out.dtype(), T => ternary_into(op, cost, out, a, b, c,
            |m: bool, x: T, y: T| if m { x } else { y })),
        Ternary::Clamp => dispatch!(a.dtype();
            int I => ternary_into(op, cost, out, a, b, c, clamp_int::<I>);
            real R => ternary_into(op, cost, out, a, b, c, clamp_real::<R>);
            half H => ternary_into(op, cost, out, a, b, c, |x: H, l: H, h: H| {
                H::down(clamp_real(x.up(), l.up(), h.up()))
            });
            complex _C => Err(not_implemented(op, a.dtype()));
            bool => Err(not_implemented(op, DType::Bool))),
    }
}
