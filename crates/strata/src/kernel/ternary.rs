//! Three-operand elementwise ops: `where` (select by a bool mask) and `clamp`.

use super::binary::{maximum_real, minimum_real, run_op2, MaximumOp, MinimumOp};
use super::elementwise::ternary_into;
use super::ewise::{broadcast_operands, operand_as, Dest, Target};
use super::math::{dispatch, not_implemented, Half, Int, Real};
use super::plan::{result_type, Operand};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::{Scalar, Tensor};
use crate::with_dtype;

/// The tensors among some operands (they decide the output layout).
fn tensors<'a>(ops: &[&Operand<'a>]) -> Vec<&'a Tensor> {
    ops.iter()
        .filter_map(|o| match o {
            Operand::Tensor(t) => Some(*t),
            Operand::Scalar(_) => None,
        })
        .collect()
}

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

/// Clamps `x` into `[min, max]` (either bound optional) into `dest`.
fn clamp_impl(
    x: &Tensor,
    min: Option<Operand<'_>>,
    max: Option<Operand<'_>>,
    dest: Dest<'_>,
) -> Result<Tensor> {
    let op = "clamp";
    let no_bound = || {
        Error::value(
            op,
            "torch.clamp: At least one of 'min' or 'max' must not be None",
        )
    };
    if min.is_none() && max.is_none() {
        return Err(no_bound());
    }
    let me = Operand::Tensor(x);
    let mut all = vec![me.clone()];
    all.extend(min.iter().cloned());
    all.extend(max.iter().cloned());
    let cdt = result_type(&all)?;
    if cdt == DType::Bool {
        return Err(not_implemented(op, cdt));
    }
    let refs: Vec<&Operand<'_>> = all.iter().collect();
    let shape = broadcast_operands(op, &refs)?;
    let target = Target::new(op, dest, &shape, cdt, &tensors(&refs))?;
    let out = target.out();
    let a = operand_as(op, &me, cdt)?;
    match (&min, &max) {
        // Refused above; an error here too, since `out` is not zeroed (S5).
        (None, None) => return Err(no_bound()),
        (Some(lo), None) => run_op2::<MaximumOp>(op, out, &a, &operand_as(op, lo, cdt)?)?,
        (None, Some(hi)) => run_op2::<MinimumOp>(op, out, &a, &operand_as(op, hi, cdt)?)?,
        (Some(lo), Some(hi)) => {
            let (lo, hi) = (&operand_as(op, lo, cdt)?, &operand_as(op, hi, cdt)?);
            dispatch!(cdt;
                int I => ternary_into(op, out, &a, lo, hi, clamp_int::<I>);
                real R => ternary_into(op, out, &a, lo, hi, clamp_real::<R>);
                half H => ternary_into(op, out, &a, lo, hi, |x: H, l: H, h: H| {
                    H::down(clamp_real(x.up(), l.up(), h.up()))
                });
                bool => Err(not_implemented(op, DType::Bool)))?
        }
    }
    target.finish()
}

impl Tensor {
    /// `cond ? a : b` elementwise, broadcasting all three. `a` and `b` are tensors or
    /// scalars; the result dtype is their promoted dtype (PyTorch's `torch.where`).
    ///
    /// ```
    /// use strata::Tensor;
    /// let x = Tensor::from_vec(vec![-1.0f32, 2.0, -3.0], &[3])?;
    /// let y = Tensor::where_cond(&x.gt(0.0)?, &x, 0.0)?;
    /// assert_eq!(y.to_vec::<f32>()?, vec![0.0, 2.0, 0.0]);
    /// # Ok::<(), strata::Error>(())
    /// ```
    ///
    /// # Errors
    /// A `cond` that is not bool, shapes that do not broadcast, or a failed allocation.
    pub fn where_cond<'a, 'b>(
        cond: &Tensor,
        a: impl Into<Operand<'a>>,
        b: impl Into<Operand<'b>>,
    ) -> Result<Tensor> {
        let op = "where";
        if cond.dtype() != DType::Bool {
            return Err(Error::dtype(
                op,
                format!(
                    "where expected condition to be a boolean tensor, but got a tensor with dtype {}",
                    cond.dtype().legacy_name()
                ),
            ));
        }
        let (a, b) = (a.into(), b.into());
        let c = Operand::Tensor(cond);
        let dt = result_type(&[a.clone(), b.clone()])?;
        let shape = broadcast_operands(op, &[&c, &a, &b])?;
        let target = Target::new(op, Dest::New, &shape, dt, &tensors(&[&c, &a, &b]))?;
        let (ta, tb) = (&operand_as(op, &a, dt)?, &operand_as(op, &b, dt)?);
        let out = target.out();
        with_dtype!(dt, T => ternary_into(op, out, cond, ta, tb,
            |c: bool, x: T, y: T| if c { x } else { y }))?;
        target.finish()
    }

    /// Clamps every element into `[min, max]`; either bound may be `None` (not both).
    /// The dtype is PyTorch's: an integer tensor with a float bound gives float32. NaN
    /// elements or bounds give NaN; when `min > max` every element becomes `max`.
    ///
    /// # Errors
    /// Both bounds `None`, a bool tensor, or a failed allocation.
    pub fn clamp(&self, min: Option<Scalar>, max: Option<Scalar>) -> Result<Tensor> {
        clamp_impl(
            self,
            min.map(Operand::Scalar),
            max.map(Operand::Scalar),
            Dest::New,
        )
    }

    /// [`clamp`](Self::clamp) with tensor bounds, broadcast against `self`.
    ///
    /// # Errors
    /// As [`clamp`](Self::clamp), and shapes that do not broadcast.
    pub fn clamp_tensor(&self, min: Option<&Tensor>, max: Option<&Tensor>) -> Result<Tensor> {
        clamp_impl(
            self,
            min.map(Operand::Tensor),
            max.map(Operand::Tensor),
            Dest::New,
        )
    }

    /// In-place [`clamp`](Self::clamp).
    ///
    /// # Errors
    /// As [`clamp`](Self::clamp); also a result dtype that `self` cannot hold
    /// (`int_tensor.clamp_(Some(0.5.into()), None)`), a read-only or self-aliasing tensor.
    pub fn clamp_(&self, min: Option<Scalar>, max: Option<Scalar>) -> Result<&Self> {
        clamp_impl(
            self,
            min.map(Operand::Scalar),
            max.map(Operand::Scalar),
            Dest::Into(self),
        )?;
        Ok(self)
    }

    /// [`clamp`](Self::clamp) with each bound a scalar or a tensor (`clamp(-1.5, t)`):
    /// scalars stay weak, so the result dtype promotes over every operand.
    ///
    /// # Errors
    /// As [`clamp_tensor`](Self::clamp_tensor).
    pub fn clamp_operands(
        &self,
        min: Option<Operand<'_>>,
        max: Option<Operand<'_>>,
    ) -> Result<Tensor> {
        clamp_impl(self, min, max, Dest::New)
    }

    /// In-place [`clamp_operands`](Self::clamp_operands).
    ///
    /// # Errors
    /// As [`clamp_`](Self::clamp_).
    pub fn clamp_operands_(
        &self,
        min: Option<Operand<'_>>,
        max: Option<Operand<'_>>,
    ) -> Result<&Self> {
        clamp_impl(self, min, max, Dest::Into(self))?;
        Ok(self)
    }

    /// In-place [`clamp_tensor`](Self::clamp_tensor).
    ///
    /// # Errors
    /// As [`clamp_`](Self::clamp_), and bounds that do not broadcast to `self`'s shape.
    pub fn clamp_tensor_(&self, min: Option<&Tensor>, max: Option<&Tensor>) -> Result<&Self> {
        clamp_impl(
            self,
            min.map(Operand::Tensor),
            max.map(Operand::Tensor),
            Dest::Into(self),
        )?;
        Ok(self)
    }
}
