//! The elementwise ops under autograd: recording an op of the table with the formula of
//! its `grad(...)` clause (`ops/table.rs`), out of place and in place, and the helpers
//! those formulas call.

use std::borrow::Cow;

use super::elementwise::{binary_raw, unary_raw, Dest};
use super::table::{Binary, GradKind, Saves, Unary};
use crate::autograd::{
    check_inplace, differentiable, needs_grad, no_grad, record1, record_inplace, Formula, Save,
};
use crate::error::{Error, Result};
use crate::kernel::plan::Operand;
use crate::tensor::Tensor;

/// PyTorch's node name for an op: `log1p` → `Log1PBackward0`, `logical_and` →
/// `LogicalAndBackward0`.
pub(crate) fn node_name(op: &str) -> String {
    let mut s = String::with_capacity(op.len() + 9);
    let mut up = true;
    for c in op.chars() {
        if c == '_' {
            up = true;
            continue;
        }
        if up {
            s.extend(c.to_uppercase());
        } else {
            s.push(c);
        }
        up = c.is_ascii_digit();
    }
    s.push_str("Backward0");
    s
}

fn not_implemented(op: &str) -> Error {
    Error::autograd(format!("the derivative for '{op}' is not implemented."))
}

/// The formulas of the unary ops that are not holomorphic, for a complex input (their
/// table formulas are for real numbers; `autograd/complex.rs`): `abs`, `g·sgn(z)`; `sgn`,
/// `(g − conj(g)·s²) / (2|z|)` with `s = sgn(z)`, both 0 at 0 (PyTorch's).
fn complex_unary_formula(kind: Unary) -> Option<Formula> {
    match kind {
        Unary::Abs => Some(Box::new(|saved, grads, _needs| {
            Ok(vec![Some(grads[0].mul(&saved[0].sgn()?)?)])
        })),
        Unary::Sgn => Some(Box::new(|saved, grads, _needs| {
            let (z, s, g) = (&saved[0], &saved[1], &grads[0]);
            let r = z.abs()?;
            let v = g.sub(&g.conj()?.mul(&s.mul(s)?)?)?.div(&r.mul(2.0)?)?;
            Ok(vec![Some(Tensor::where_cond(&r.eq(0.0)?, 0.0, &v)?)])
        })),
        _ => None,
    }
}

fn unary_formula(kind: Unary, gk: GradKind) -> Formula {
    Box::new(move |saved, grads, _needs| {
        let g = &grads[0];
        let gi = match gk {
            GradKind::NotImplemented => return Err(not_implemented(kind.name())),
            GradKind::Zero => g.mul(0.0)?,
            _ => kind.grad_formula(saved.first().unwrap_or(g), g)?,
        };
        Ok(vec![Some(gi)])
    })
}

fn binary_formula(kind: Binary, gk: GradKind) -> Formula {
    Box::new(move |saved, grads, needs| {
        let g = &grads[0];
        let s = match gk {
            GradKind::NotImplemented => return Err(not_implemented(kind.name())),
            GradKind::Formula(s) => s,
            _ => Saves::default(),
        };
        let mut it = saved.iter();
        let a = if s.a { it.next() } else { None };
        let b = if s.b { it.next() } else { None };
        let y = if s.y { it.next() } else { None };
        let (ga, gb) = kind.grad_formula(
            a.unwrap_or(g),
            b.unwrap_or(g),
            y.unwrap_or(g),
            g,
            needs[0],
            needs[1],
        )?;
        Ok(vec![ga, gb])
    })
}

/// [`super::elementwise::unary`] for operands with autograd state.
pub(crate) fn unary(kind: Unary, x: &Tensor, dest: Dest<'_>) -> Result<Tensor> {
    let gk = kind.grad_kind();
    let saves_x = matches!(gk, GradKind::Formula(s) if s.x);
    let saves_y = matches!(gk, GradKind::Formula(s) if s.y);
    match dest {
        Dest::New => {
            if gk == GradKind::NotDifferentiable || !needs_grad(&[x]) {
                return unary_raw(kind, x, dest);
            }
            let out = {
                let _off = no_grad();
                unary_raw(kind, x, Dest::New)?
            };
            if !differentiable(out.dtype()) {
                return Ok(out);
            }
            if x.is_complex() {
                if let Some(f) = complex_unary_formula(kind) {
                    return record1(
                        node_name(kind.name()),
                        &[x],
                        out,
                        &[Save::Input(x), Save::Output(0)],
                        f,
                    );
                }
            }
            let mut saves = Vec::new();
            if saves_x {
                saves.push(Save::Input(x));
            }
            if saves_y {
                saves.push(Save::Output(0));
            }
            record1(
                node_name(kind.name()),
                &[x],
                out,
                &saves,
                unary_formula(kind, gk),
            )
        }
        Dest::Into(t) => {
            check_inplace(t)?;
            let record = gk != GradKind::NotDifferentiable && needs_grad(&[t, x]);
            let own = if x.is_complex() {
                complex_unary_formula(kind)
            } else {
                None
            };
            let (saves_x, saves_y) = (saves_x || own.is_some(), saves_y || own.is_some());
            // The input's value before the write, kept with its history (a recorded
            // clone), so a second derivative reaches what made it.
            let orig = if record && saves_x {
                Some(x.clone_data()?)
            } else {
                None
            };
            {
                let _off = no_grad();
                unary_raw(kind, x, dest)?;
            }
            if record {
                let mut saves = Vec::new();
                if let Some(o) = &orig {
                    saves.push(Save::Input(o));
                }
                if saves_y {
                    saves.push(Save::Output(0));
                }
                record_inplace(
                    t,
                    &[],
                    Cow::Owned(node_name(kind.name())),
                    &saves,
                    own.unwrap_or_else(|| unary_formula(kind, gk)),
                )?;
            }
            Ok(t.clone())
        }
    }
}

/// The tensor of an operand, if it is one.
pub(crate) fn tensor_of<'a>(o: &'a Operand<'_>) -> Option<&'a Tensor> {
    match o {
        Operand::Tensor(t) => Some(*t),
        Operand::Scalar(_) => None,
    }
}

/// An operand as a tensor for the graph (a scalar as a 0-d tensor of `dtype`, which
/// carries no gradient).
fn operand_tensor(o: &Operand<'_>, dtype: crate::DType) -> Result<Tensor> {
    match o {
        Operand::Tensor(t) => Ok((*t).clone()),
        Operand::Scalar(s) => Tensor::scalar_of(*s, dtype),
    }
}

/// [`super::elementwise::binary`] for operands with autograd state.
pub(crate) fn binary(
    kind: Binary,
    a: &Operand<'_>,
    b: &Operand<'_>,
    dest: Dest<'_>,
) -> Result<Tensor> {
    let gk = kind.grad_kind();
    let s = match gk {
        GradKind::Formula(s) => s,
        _ => Saves::default(),
    };
    let mut inputs: Vec<&Tensor> = [a, b].into_iter().filter_map(tensor_of).collect();
    if let Dest::Into(t) = dest {
        check_inplace(t)?;
        inputs.push(t);
    }
    if gk == GradKind::NotDifferentiable || !needs_grad(&inputs) {
        return binary_raw(kind, a, b, dest);
    }
    match dest {
        Dest::New => {
            let out = {
                let _off = no_grad();
                binary_raw(kind, a, b, Dest::New)?
            };
            if !differentiable(out.dtype()) {
                return Ok(out);
            }
            let xa = operand_tensor(a, out.dtype())?;
            let xb = operand_tensor(b, out.dtype())?;
            let mut saves = Vec::new();
            if s.a {
                saves.push(Save::Input(&xa));
            }
            if s.b {
                saves.push(Save::Input(&xb));
            }
            if s.y {
                saves.push(Save::Output(0));
            }
            record1(
                node_name(kind.name()),
                &[&xa, &xb],
                out,
                &saves,
                binary_formula(kind, gk),
            )
        }
        Dest::Into(t) => {
            let xb = operand_tensor(b, t.dtype())?;
            // As for unary ops: the value before the write, with its history.
            let orig = if s.a { Some(t.clone_data()?) } else { None };
            {
                let _off = no_grad();
                binary_raw(kind, a, b, dest)?;
            }
            let mut saves = Vec::new();
            if let Some(o) = &orig {
                saves.push(Save::Input(o));
            }
            if s.b {
                saves.push(Save::Input(&xb));
            }
            if s.y {
                saves.push(Save::Output(0));
            }
            record_inplace(
                t,
                &[&xb],
                Cow::Owned(node_name(kind.name())),
                &saves,
                binary_formula(kind, gk),
            )?;
            Ok(t.clone())
        }
    }
}

/// `where(cond, a, b)` for operands with autograd state (`WhereBackward0`): the output
/// gradient goes to `a` where `cond` holds and to `b` elsewhere.
pub(crate) fn where_cond(cond: &Tensor, a: &Operand<'_>, b: &Operand<'_>) -> Result<Tensor> {
    let inputs: Vec<&Tensor> = [a, b].into_iter().filter_map(tensor_of).collect();
    if !needs_grad(&inputs) {
        return Tensor::where_raw(cond, a.clone(), b.clone());
    }
    let out = {
        let _off = no_grad();
        Tensor::where_raw(cond, a.clone(), b.clone())?
    };
    if !differentiable(out.dtype()) {
        return Ok(out);
    }
    let xa = operand_tensor(a, out.dtype())?;
    let xb = operand_tensor(b, out.dtype())?;
    let c = cond.detach();
    record1(
        "WhereBackward0",
        &[&xa, &xb],
        out,
        &[],
        Box::new(move |_saved, grads, needs| {
            let g = &grads[0];
            let ga = if needs[0] {
                Some(Tensor::where_cond(&c, g, 0.0)?)
            } else {
                None
            };
            let gb = if needs[1] {
                Some(Tensor::where_cond(&c, 0.0, g)?)
            } else {
                None
            };
            Ok(vec![ga, gb])
        }),
    )
}

// ----- helpers of the table's formulas -----

/// `1 − t`.
pub(crate) fn one_minus(t: &Tensor) -> Result<Tensor> {
    t.neg()?.add(1.0)
}

/// The slope of GELU (erf form): `Φ(x) + x·φ(x)`.
pub(crate) fn gelu_slope(x: &Tensor) -> Result<Tensor> {
    let cdf = x
        .mul(std::f64::consts::FRAC_1_SQRT_2)?
        .erf()?
        .add(1.0)?
        .mul(0.5)?;
    let pdf = x
        .mul(x)?
        .mul(-0.5)?
        .exp()?
        .mul(1.0 / (2.0 * std::f64::consts::PI).sqrt())?;
    cdf.add(&x.mul(&pdf)?)
}

/// `∂(aᵇ)/∂a · g`: `g·b·aᵇ⁻¹`, and 0 where `b == 0` (PyTorch's).
pub(crate) fn pow_grad_base(a: &Tensor, b: &Tensor, g: &Tensor) -> Result<Tensor> {
    let v = g.mul(b)?.mul(&a.pow(&b.sub(1.0)?)?)?;
    Tensor::where_cond(&b.eq(0.0)?, 0.0, &v)
}

/// `∂(aᵇ)/∂b · g`: `g·aᵇ·ln a`, and 0 where `a == 0` and `b ≥ 0` (PyTorch's; a complex
/// `b` counts as `≥ 0` when it is real and not negative).
pub(crate) fn pow_grad_exponent(a: &Tensor, b: &Tensor, y: &Tensor, g: &Tensor) -> Result<Tensor> {
    let v = g.mul(&y.mul(&a.log()?)?)?;
    let nonneg = if b.is_complex() {
        b.real()?.ge(0.0)?.logical_and(&b.imag()?.eq(0.0)?)?
    } else {
        b.ge(0.0)?
    };
    let zero = a.eq(0.0)?.logical_and(&nonneg)?;
    Tensor::where_cond(&zero, 0.0, &v)
}

/// The gradient of `maximum`/`minimum` for `x` against `other`: all of `g` where `x` wins
/// (`cmp`), half where they tie, none where it loses (PyTorch's).
pub(crate) fn pick_grad(g: &Tensor, x: &Tensor, other: &Tensor, cmp: Binary) -> Result<Tensor> {
    let wins = x.binary_op(cmp, other)?;
    let ties = x.eq(other)?;
    let half = g.mul(0.5)?;
    let v = Tensor::where_cond(&ties, &half, 0.0)?;
    Tensor::where_cond(&wins, g, &v)
}

/// The gradient of `fmax`/`fmin` for `x`: `g` where `x` is chosen (wins or ties, or the
/// other is NaN), else 0 (PyTorch's).
pub(crate) fn fpick_grad(g: &Tensor, x: &Tensor, other: &Tensor, cmp: Binary) -> Result<Tensor> {
    let chosen = x
        .binary_op(cmp, other)?
        .logical_or(&x.eq(other)?)?
        .logical_or(&other.isnan()?)?;
    Tensor::where_cond(&chosen, g, 0.0)
}

/// The gradient of `copysign` for its magnitude: `g·sign(a)·sign(y)`, 0 where `a == 0`.
pub(crate) fn copysign_grad(a: &Tensor, y: &Tensor, g: &Tensor) -> Result<Tensor> {
    let v = g.mul(&a.sign()?.mul(&y.sign()?)?)?;
    Tensor::where_cond(&a.eq(0.0)?, 0.0, &v)
}

/// The gradient of `xlogy` for `a`: `g·ln b`, 0 where `a == 0` and `b ≤ 0` (PyTorch's).
pub(crate) fn xlogy_grad(a: &Tensor, b: &Tensor, g: &Tensor) -> Result<Tensor> {
    let v = g.xlogy(b)?;
    let zero = a.eq(0.0)?.logical_and(&b.le(0.0)?)?;
    Tensor::where_cond(&zero, 0.0, &v)
}
