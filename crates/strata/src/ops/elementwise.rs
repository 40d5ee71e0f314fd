//! The elementwise op layer: what `x.sinh()`, `a + b`, `where`, `clamp` mean before any
//! loop runs. Operands as tensors of the compute dtype, PyTorch's dtype rules (from the op
//! table, `ops/table.rs`) and `canCast`, the written tensor (fresh and following the
//! inputs' layout, or an in-place destination), then one call into the backend.
//!
//! The CPU loops live in `kernel/` (`run_unary`, `run_binary`, `run_ternary`); the op
//! layer reaches them through one call site per family, marked `// backend seam`.

use super::table::{Binary, BinaryRule, BoolIn, BoolIn2, Ternary, Unary, UnaryRule};
use crate::backend::backend_of;
use crate::dtype::{DType, DTypeKind};
use crate::error::{list, Error, Result};
use crate::kernel::math::not_implemented;
use crate::kernel::plan::{output_for, result_type, Operand};
use crate::layout::broadcast::broadcast_all;
use crate::layout::{DimVec, Shape};
use crate::tensor::{Scalar, Tensor};

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
    let shapes: DimVec<&[usize]> = ops.iter().map(|o| operand_shape(o)).collect();
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
        Bool | F16 | BF16 | F32 | F64 | C64 | C128 => return None,
    })
}

/// PyTorch's `canCast`: no complex → real, no float → integer and no non-bool → bool.
pub(crate) fn can_cast(from: DType, to: DType) -> bool {
    !((from.is_complex() && !to.is_complex())
        || (from.is_float() && !to.is_float() && !to.is_complex())
        || (from != DType::Bool && to == DType::Bool))
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

/// The floating dtype a float-only op computes in: the input's (a complex one included),
/// or float32 (PyTorch's default dtype) for integers and bool.
pub(crate) fn float_of(dt: DType) -> DType {
    if matches!(dt.kind(), DTypeKind::Float | DTypeKind::Complex) {
        dt
    } else {
        DType::F32
    }
}

// ----- the backend seam: the one call site per family -----

/// Runs a unary op's loops on `out`'s device.
fn backend_unary(kind: Unary, out: &Tensor, a: &Tensor) -> Result<()> {
    // backend seam
    backend_of(kind.name(), &[out, a])?.unary(kind, out, a)
}

/// Runs a binary op's loops on `out`'s device.
fn backend_binary(kind: Binary, out: &Tensor, a: &Tensor, b: &Tensor) -> Result<()> {
    // backend seam
    backend_of(kind.name(), &[out, a, b])?.binary(kind, out, a, b)
}

/// Runs a ternary op's loops on `out`'s device.
fn backend_ternary(kind: Ternary, out: &Tensor, a: &Tensor, b: &Tensor, c: &Tensor) -> Result<()> {
    // backend seam
    backend_of(kind.name(), &[out, a, b, c])?.ternary(kind, out, a, b, c)
}

// ----- unary -----

/// The (compute, result) dtypes of unary op `kind` on an input of dtype `dt`, or
/// PyTorch's error.
fn unary_dtypes(kind: Unary, dt: DType) -> Result<(DType, DType)> {
    let op = kind.name();
    let is_bool = dt == DType::Bool;
    Ok(match kind.rule() {
        UnaryRule::Keep(b) if is_bool => match b {
            BoolIn::Refuse => return Err(not_implemented(op, dt)),
            BoolIn::Error(text) => return Err(Error::dtype(op, text)),
            BoolIn::Keep => (dt, dt),
            BoolIn::As(to) => (to, to),
        },
        UnaryRule::Keep(_) => (dt, dt),
        UnaryRule::Float => (float_of(dt), float_of(dt)),
        UnaryRule::Pred if is_bool => (DType::U8, DType::Bool),
        UnaryRule::Pred | UnaryRule::Logical => (dt, DType::Bool),
        UnaryRule::IntOnly if dt.is_float() || dt.is_complex() => {
            return Err(not_implemented(op, dt))
        }
        UnaryRule::IntOnly => (dt, dt),
    })
}

/// Runs unary op `kind` on `x` into `dest`, recording it for autograd when an operand
/// has autograd state (`ops/elementwise_grad.rs`).
#[inline]
pub(crate) fn unary(kind: Unary, x: &Tensor, dest: Dest<'_>) -> Result<Tensor> {
    let touched = x.grad.get().is_some() || matches!(dest, Dest::Into(t) if t.grad.get().is_some());
    if touched {
        return super::elementwise_grad::unary(kind, x, dest);
    }
    unary_raw(kind, x, dest)
}

/// [`unary`] without autograd.
pub(crate) fn unary_raw(kind: Unary, x: &Tensor, dest: Dest<'_>) -> Result<Tensor> {
    if x.dtype().is_complex() {
        if let Some(r) = super::complex::unary_special(kind, x, matches!(dest, Dest::Into(_))) {
            return r;
        }
    }
    let op = kind.name();
    let (cdt, odt) = unary_dtypes(kind, x.dtype())?;
    // Most ops compute in the input's dtype: then the input itself, not a new handle.
    let converted;
    let a = if cdt == x.dtype() {
        x
    } else {
        converted = x.to_dtype(cdt)?;
        &converted
    };
    let target = Target::new(op, dest, x.shape(), odt, &[x])?;
    backend_unary(kind, target.out(), a)?;
    target.finish()
}

// ----- binary -----

/// The compute and result dtypes of `kind` over operands whose promoted dtype is
/// `common`, or PyTorch's error for the combination.
fn binary_dtypes(
    kind: Binary,
    common: DType,
    a: &Operand<'_>,
    b: &Operand<'_>,
) -> Result<(DType, DType)> {
    let op = kind.name();
    let is_bool = common == DType::Bool;
    let bools = |rule: BoolIn2| -> Result<()> {
        match rule {
            BoolIn2::Refuse if is_bool => Err(not_implemented(op, common)),
            BoolIn2::Error(both, one) => {
                let (ba, bb) = (
                    operand_dtype(a) == DType::Bool,
                    operand_dtype(b) == DType::Bool,
                );
                match (ba, bb) {
                    (true, true) => Err(Error::dtype(op, both)),
                    (true, false) | (false, true) => Err(Error::dtype(op, one)),
                    (false, false) => Ok(()),
                }
            }
            BoolIn2::Refuse | BoolIn2::Keep => Ok(()),
        }
    };
    Ok(match kind.rule() {
        BinaryRule::Keep(rule) => {
            bools(rule)?;
            (common, common)
        }
        BinaryRule::IntOnly(rule) => {
            bools(rule)?;
            if common.is_float() || common.is_complex() {
                return Err(not_implemented(op, common));
            }
            (common, common)
        }
        BinaryRule::Float => (float_of(common), float_of(common)),
        BinaryRule::FloatOnly if !common.is_float() => return Err(not_implemented(op, common)),
        BinaryRule::FloatOnly => (common, common),
        BinaryRule::Compare => (compare_dtype(common, a, b), DType::Bool),
    })
}

/// The dtype a comparison of two tensors computes in: both dtypes promoted, so that the
/// values are compared exactly. PyTorch computes in the result dtype of its category rule,
/// where a 0-d tensor does not widen an N-d one of the same kind: `int32(-1) >= uint8[0]`
/// wrapped the -1 to 255 there, and a float64 0-d value was rounded to float32 first. The
/// result is bool either way; only those comparisons change (to NumPy's and the array API
/// standard's answers). A Python scalar stays weak, and a pair without a common dtype
/// (uint64 with a signed one) keeps PyTorch's.
fn compare_dtype(common: DType, a: &Operand<'_>, b: &Operand<'_>) -> DType {
    match (a, b) {
        (Operand::Tensor(x), Operand::Tensor(y)) if x.dtype() != y.dtype() => {
            crate::kernel::plan::promote_types(x.dtype(), y.dtype()).unwrap_or(common)
        }
        _ => common,
    }
}

/// Runs binary op `kind` on `a` and `b` into `dest`.
#[inline]
pub(crate) fn binary(
    kind: Binary,
    a: &Operand<'_>,
    b: &Operand<'_>,
    dest: Dest<'_>,
) -> Result<Tensor> {
    let touched = |o: &Operand<'_>| matches!(o, Operand::Tensor(t) if t.grad.get().is_some());
    if touched(a) || touched(b) || matches!(dest, Dest::Into(t) if t.grad.get().is_some()) {
        return super::elementwise_grad::binary(kind, a, b, dest);
    }
    binary_raw(kind, a, b, dest)
}

/// [`binary`] without autograd.
pub(crate) fn binary_raw(
    kind: Binary,
    a: &Operand<'_>,
    b: &Operand<'_>,
    dest: Dest<'_>,
) -> Result<Tensor> {
    if let (Operand::Tensor(x), Dest::New) = (a, dest) {
        if x.dtype().is_complex() {
            if let Some(r) = super::complex::add_sub_as_pairs(kind, x, b) {
                return r;
            }
        }
    }
    // Two tensors of one dtype and one shape into a fresh result (`a + b` on like
    // tensors): nothing to broadcast, promote or convert, so the general planning below
    // is skipped; the outcome is the same.
    if let (Operand::Tensor(x), Operand::Tensor(y), Dest::New) = (a, b, dest) {
        if x.dtype() == y.dtype() && x.same_shape(y) {
            let (cdt, odt) = binary_dtypes(kind, x.dtype(), a, b)?;
            if cdt == x.dtype() {
                let out = output_for(x.shape(), odt, &[x, y])?;
                backend_binary(kind, &out, x, y)?;
                return Ok(out);
            }
        }
    }
    // A tensor and a scalar into a fresh result (`t * 2.0`) whose compute dtype is the
    // tensor's: the result has the tensor's shape and the scalar is converted once.
    if let (Operand::Tensor(x), Operand::Scalar(v), Dest::New) = (a, b, dest) {
        let common = result_type(&[a.clone(), b.clone()])?;
        let (cdt, odt) = binary_dtypes(kind, common, a, b)?;
        if cdt == x.dtype() {
            let y = scalar_operand(*v, cdt, x.device().is_cpu())?;
            let out = output_for(x.shape(), odt, &[x])?;
            backend_binary(kind, &out, x, &y)?;
            return Ok(out);
        }
    }
    let op = kind.name();
    let shape = broadcast_operands(op, &[a, b])?;
    let common = result_type(&[a.clone(), b.clone()])?;
    let (cdt, odt) = binary_dtypes(kind, common, a, b)?;
    let (ta, tb) = (operand_as(op, a, cdt)?, operand_as(op, b, cdt)?);
    let target = Target::new(op, dest, &shape, odt, &tensors(&[a, b]))?;
    backend_binary(kind, target.out(), &ta, &tb)?;
    target.finish()
}

/// A 0-d CPU tensor of `dtype` holding `value`, for one op to read as a scalar operand
/// and drop: with `reuse` (the op runs on the CPU, so nothing reads the tensor after the
/// op returns), this thread's cached one of that dtype whenever nothing else holds it (a
/// fresh storage for the `2.0` of `t * 2.0` was about a quarter of the op's time), else
/// a new one.
fn scalar_operand(value: Scalar, dtype: DType, reuse: bool) -> Result<Tensor> {
    thread_local! {
        /// At most one 0-d tensor per dtype, held only here between ops.
        static SCALARS: std::cell::RefCell<Vec<Tensor>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    if !reuse {
        return Tensor::scalar_of(value, dtype);
    }
    let cached = SCALARS
        .try_with(|c| {
            let c = c.borrow();
            let t = c.iter().find(|t| t.dtype() == dtype)?;
            if !t.storage().is_unique() {
                return None;
            }
            // SAFETY: the cache holds the only handle to this storage (checked above; the
            // cache is this thread's and its tensors are lent only to ops that drop them
            // before returning), so nothing else can read or write the bytes; a 0-d
            // tensor made by `Tensor::scalar` has its one element, aligned, at the start.
            crate::with_dtype!(dtype, T => unsafe {
                t.storage().data_ptr().cast::<T>().write(value.to::<T>())
            });
            Some(t.clone())
        })
        .ok()
        .flatten();
    if let Some(t) = cached {
        return Ok(t);
    }
    let t = Tensor::scalar_of(value, dtype)?;
    let _ = SCALARS.try_with(|c| {
        let mut c = c.borrow_mut();
        if !c.iter().any(|u| u.dtype() == dtype) {
            c.push(t.clone());
        }
    });
    Ok(t)
}

/// `lhs OP rhs` with a scalar on the left (`2 - t`, `2 ** t`, `st.sub(2, t)`): the scalar
/// stays weak in promotion, exactly as on the right. `op` is a binary op's name in the op
/// table (`"sub"`, `"pow"`, `"bitwise_left_shift"`, …).
///
/// # Errors
/// An unknown op name, and the op's own errors.
pub fn scalar_lhs(op: &str, lhs: Scalar, rhs: &Tensor) -> Result<Tensor> {
    let kind = Binary::from_name(op)
        .ok_or_else(|| Error::value("scalar_lhs", format!("{op:?} is not a binary op")))?;
    binary(
        kind,
        &Operand::Scalar(lhs),
        &Operand::Tensor(rhs),
        Dest::New,
    )
}

// ----- ternary: where, clamp -----

/// The tensors among some operands (they decide the output layout); inline, as an op has
/// at most three.
fn tensors<'a>(ops: &[&Operand<'a>]) -> smallvec::SmallVec<[&'a Tensor; 4]> {
    ops.iter()
        .filter_map(|o| match o {
            Operand::Tensor(t) => Some(*t),
            Operand::Scalar(_) => None,
        })
        .collect()
}

/// Clamps `x` into `[min, max]` (either bound optional) into `dest`, recorded for
/// autograd when `x` has autograd state (`ClampBackward1`: the gradient passes where `x`
/// is inside the bounds; bounds given as tensors get none).
fn clamp_impl(
    x: &Tensor,
    min: Option<Operand<'_>>,
    max: Option<Operand<'_>>,
    dest: Dest<'_>,
) -> Result<Tensor> {
    let tracked =
        |o: &Option<Operand<'_>>| matches!(o, Some(Operand::Tensor(t)) if t.grad.get().is_some());
    let touched = x.grad.get().is_some()
        || tracked(&min)
        || tracked(&max)
        || matches!(dest, Dest::Into(t) if t.grad.get().is_some());
    if !touched {
        return clamp_raw(x, min, max, dest);
    }
    if let Dest::Into(t) = dest {
        crate::autograd::check_inplace(t)?;
    }
    use super::elementwise_grad::tensor_of;
    let (tmin, tmax) = (
        min.as_ref().and_then(tensor_of).cloned(),
        max.as_ref().and_then(tensor_of).cloned(),
    );
    let mut inputs: Vec<&Tensor> = vec![x];
    inputs.extend(tmin.iter());
    inputs.extend(tmax.iter());
    if !crate::autograd::needs_grad(&inputs) {
        return clamp_raw(x, min, max, dest);
    }
    // Which of x, min, max each element of the result is (clamp is min(max(x, lo), hi):
    // where lo > hi the result is hi), from the input before any write.
    let (to_min, to_max) = {
        let _off = crate::autograd::no_grad();
        let to_max = match &max {
            Some(hi) => {
                let mut m = x.binary_op(Binary::Gt, hi.clone())?;
                // Where lo > hi every element is hi.
                let crossed = match (&min, hi) {
                    (Some(Operand::Tensor(l)), _) => Some(l.binary_op(Binary::Gt, hi.clone())?),
                    (Some(Operand::Scalar(v)), Operand::Tensor(h)) => {
                        Some(h.binary_op(Binary::Lt, *v)?)
                    }
                    (Some(Operand::Scalar(a)), Operand::Scalar(b)) if a.to_f64() > b.to_f64() => {
                        Some(x.eq(x)?.logical_or(&x.ne(x)?)?)
                    }
                    _ => None,
                };
                if let Some(c) = crossed {
                    m = m.logical_or(&c)?;
                }
                Some(m)
            }
            None => None,
        };
        let to_min = match &min {
            Some(lo) => {
                let m = x.binary_op(Binary::Lt, lo.clone())?;
                Some(match &to_max {
                    Some(tm) => m.logical_and(&tm.logical_not()?)?,
                    None => m,
                })
            }
            None => None,
        };
        (to_min, to_max)
    };
    let out = {
        let _off = crate::autograd::no_grad();
        clamp_raw(x, min, max, dest)?
    };
    let consts: Vec<Tensor> = [&tmin, &tmax]
        .iter()
        .map(|t| match t {
            Some(t) => Ok(t.clone()),
            None => Tensor::zeros_on(&[], x.dtype(), x.device()),
        })
        .collect::<Result<_>>()?;
    let formula: crate::autograd::Formula = Box::new(move |_saved, grads, needs| {
        let g = &grads[0];
        let pick = |m: &Option<Tensor>| -> Result<Option<Tensor>> {
            m.as_ref()
                .map(|m| Tensor::where_cond(m, g, 0.0))
                .transpose()
        };
        let gx = if needs[0] {
            let elsewhere = match (&to_min, &to_max) {
                (Some(a), Some(b)) => Some(a.logical_or(b)?),
                (Some(a), None) => Some(a.clone()),
                (None, Some(b)) => Some(b.clone()),
                (None, None) => None,
            };
            Some(match elsewhere {
                Some(e) => Tensor::where_cond(&e, 0.0, g)?,
                None => g.clone(),
            })
        } else {
            None
        };
        let gmin = if needs[1] { pick(&to_min)? } else { None };
        let gmax = if needs[2] { pick(&to_max)? } else { None };
        Ok(vec![gx, gmin, gmax])
    });
    let ins = [x, &consts[0], &consts[1]];
    match dest {
        Dest::New => crate::autograd::record1("ClampBackward1", &ins, out, &[], formula),
        Dest::Into(t) => {
            crate::autograd::record_inplace(t, &ins[1..], "ClampBackward1", &[], formula)?;
            Ok(t.clone())
        }
    }
}

/// [`clamp_impl`] without autograd.
fn clamp_raw(
    x: &Tensor,
    min: Option<Operand<'_>>,
    max: Option<Operand<'_>>,
    dest: Dest<'_>,
) -> Result<Tensor> {
    let op = Ternary::Clamp.name();
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
        (Some(lo), None) => backend_binary(Binary::Maximum, out, &a, &operand_as(op, lo, cdt)?)?,
        (None, Some(hi)) => backend_binary(Binary::Minimum, out, &a, &operand_as(op, hi, cdt)?)?,
        (Some(lo), Some(hi)) => {
            let (lo, hi) = (&operand_as(op, lo, cdt)?, &operand_as(op, hi, cdt)?);
            backend_ternary(Ternary::Clamp, out, &a, lo, hi)?
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
        let op = Ternary::Where.name();
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
        let tracked = |o: &Operand<'_>| matches!(o, Operand::Tensor(t) if t.grad.get().is_some());
        if tracked(&a) || tracked(&b) {
            return super::elementwise_grad::where_cond(cond, &a, &b);
        }
        Self::where_raw(cond, a, b)
    }

    /// [`where_cond`](Self::where_cond) without autograd.
    pub(crate) fn where_raw(cond: &Tensor, a: Operand<'_>, b: Operand<'_>) -> Result<Tensor> {
        let op = Ternary::Where.name();
        let c = Operand::Tensor(cond);
        let dt = result_type(&[a.clone(), b.clone()])?;
        let shape = broadcast_operands(op, &[&c, &a, &b])?;
        let target = Target::new(op, Dest::New, &shape, dt, &tensors(&[&c, &a, &b]))?;
        let (ta, tb) = (&operand_as(op, &a, dt)?, &operand_as(op, &b, dt)?);
        backend_ternary(Ternary::Where, target.out(), cond, ta, tb)?;
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

impl Tensor {
    /// The unary op `op` of the op table, chosen at run time (what the method named
    /// `op.name()` does).
    ///
    /// # Errors
    /// As the op's method.
    pub fn unary_op(&self, op: Unary) -> Result<Tensor> {
        unary(op, self, Dest::New)
    }

    /// The binary op `op` of the op table with `other`, chosen at run time.
    ///
    /// # Errors
    /// As the op's method.
    pub fn binary_op<'a>(&self, op: Binary, other: impl Into<Operand<'a>>) -> Result<Tensor> {
        binary(op, &Operand::Tensor(self), &other.into(), Dest::New)
    }
}
