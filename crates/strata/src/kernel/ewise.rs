//! Plumbing shared by the elementwise ops ([`super::unary`], [`super::binary`],
//! [`super::ternary`]): operands as tensors of the compute dtype, the written tensor (fresh
//! and following the inputs' layout, or an in-place destination), PyTorch's `canCast`, and
//! pre-passes over an input that must finish before anything is written.

use std::sync::atomic::{AtomicBool, Ordering};

use super::elementwise::unary_into;
use super::plan::{output_for, Operand};
use crate::dtype::{DType, DTypeKind, Element};
use crate::error::{list, Error, Result};
use crate::layout::broadcast::broadcast_all;
use crate::layout::Shape;
use crate::tensor::Tensor;

/// Where an op's result goes.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Dest<'a> {
    /// A fresh tensor whose dim order follows the inputs.
    New,
    /// In place, into this tensor (PyTorch's `x.op_(…)`).
    Into(&'a Tensor),
}

/// The shape of an operand (a scalar is 0-d).
pub(crate) fn operand_shape<'a>(o: &'a Operand<'_>) -> &'a [usize] {
    match o {
        Operand::Tensor(t) => t.shape(),
        Operand::Scalar(_) => &[],
    }
}

/// The dtype an operand would have on its own (a scalar's default dtype).
pub(crate) fn operand_dtype(o: &Operand<'_>) -> DType {
    match o {
        Operand::Tensor(t) => t.dtype(),
        Operand::Scalar(s) => s.default_dtype(),
    }
}

/// The broadcast shape of the operands.
pub(crate) fn broadcast_operands(op: &'static str, ops: &[&Operand<'_>]) -> Result<Shape> {
    let shapes: Vec<&[usize]> = ops.iter().map(|o| operand_shape(o)).collect();
    broadcast_all(op, &shapes)
}

/// The operand as a tensor of `dtype`: a tensor is converted when its dtype differs, a
/// scalar becomes a 0-d tensor (so broadcasting gives it stride 0). An integer scalar
/// outside the range of an integer `dtype` wraps (`uint8_tensor + 300` is `+ 44`), as
/// PyTorch's elementwise ops do; stores (`fill_`, `full`, `set`) refuse it instead.
pub(crate) fn operand_as(_op: &'static str, o: &Operand<'_>, dtype: DType) -> Result<Tensor> {
    match o {
        Operand::Tensor(t) => t.to_dtype(dtype),
        Operand::Scalar(s) => Tensor::scalar_of(*s, dtype),
    }
}

/// The range and C name of an integer dtype.
pub(crate) fn int_limits(dt: DType) -> Option<(i128, i128, &'static str)> {
    use DType::*;
    Some(match dt {
        U8 => (0, u8::MAX.into(), "uint8_t"),
        I8 => (i8::MIN.into(), i8::MAX.into(), "int8_t"),
        I16 => (i16::MIN.into(), i16::MAX.into(), "int16_t"),
        U16 => (0, u16::MAX.into(), "uint16_t"),
        I32 => (i32::MIN.into(), i32::MAX.into(), "int"),
        U32 => (0, u32::MAX.into(), "uint32_t"),
        I64 => (i64::MIN.into(), i64::MAX.into(), "int64_t"),
        U64 => (0, u64::MAX.into(), "uint64_t"),
        Bool | F16 | BF16 | F32 | F64 => return None,
    })
}

/// PyTorch's `canCast`: no float → integer and no non-bool → bool.
pub(crate) fn can_cast(from: DType, to: DType) -> bool {
    !((from.is_float() && !to.is_float()) || (from != DType::Bool && to == DType::Bool))
}

/// The tensor an op writes, and where its values end up.
#[derive(Debug)]
pub(crate) struct Target {
    out: Tensor,
    /// An in-place destination of another dtype: `out` is a temporary copied into it.
    copy_to: Option<Tensor>,
}

impl Target {
    /// Plans the written tensor of `shape` and `dtype`: a fresh one following the layout
    /// of `inputs`, or `dest` itself (after checking the shape and PyTorch's cast rule).
    pub(crate) fn new(
        op: &'static str,
        dest: Dest<'_>,
        shape: &[usize],
        dtype: DType,
        inputs: &[&Tensor],
    ) -> Result<Target> {
        let d = match dest {
            Dest::New => {
                return Ok(Target {
                    out: output_for(shape, dtype, inputs)?,
                    copy_to: None,
                })
            }
            Dest::Into(d) => d,
        };
        if d.shape() != shape {
            return Err(Error::shape(
                op,
                format!(
                    "output with shape {} doesn't match the broadcast shape {}",
                    list(d.shape()),
                    list(shape)
                ),
            ));
        }
        if !can_cast(dtype, d.dtype()) {
            return Err(Error::dtype(
                op,
                format!(
                    "result type {} can't be cast to the desired output type {}",
                    dtype.legacy_name(),
                    d.dtype().legacy_name()
                ),
            ));
        }
        if d.dtype() == dtype {
            return Ok(Target {
                out: d.clone(),
                copy_to: None,
            });
        }
        // Computed in another dtype, then cast into place: reject an unwritable
        // destination before computing anything.
        d.check_write(op)?;
        Ok(Target {
            out: output_for(shape, dtype, inputs)?,
            copy_to: Some(d.clone()),
        })
    }

    /// The tensor the kernel writes.
    pub(crate) fn out(&self) -> &Tensor {
        &self.out
    }

    /// Completes the op: casts a temporary into the destination, and returns the result.
    pub(crate) fn finish(self) -> Result<Tensor> {
        match self.copy_to {
            Some(d) => {
                d.copy_(&self.out)?;
                Ok(d)
            }
            None => Ok(self.out),
        }
    }
}

/// True when some element of `t` satisfies `pred`. Runs before an op writes anything
/// (zero divisors, negative integer exponents). Broadcast (stride-0) dims are read once.
pub(crate) fn any_elem<T: Element>(
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
    unary_into(op, &mask, &c, |x: T| {
        let p = pred(x);
        if p {
            hit.store(true, Ordering::Relaxed);
        }
        p
    })?;
    Ok(hit.load(Ordering::Relaxed))
}

/// The floating dtype a float-only op computes in: the input's, or float32 (PyTorch's
/// default dtype) for integers and bool.
pub(crate) fn float_of(dt: DType) -> DType {
    if dt.kind() == DTypeKind::Float {
        dt
    } else {
        DType::F32
    }
}
