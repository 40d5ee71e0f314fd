//! Gradients through complex tensors, with PyTorch's convention: the gradient of a real
//! loss `L` with respect to `z = x + iy` is `∂L/∂x + i·∂L/∂y` (twice the conjugate
//! Wirtinger derivative `∂L/∂z̄`), so that gradient descent `z -= lr·z.grad` descends.
//!
//! Through an op `w = f(z)` with upstream gradient `G`, the chain rule is
//! `grad_z = G·conj(∂w/∂z) + conj(G)·∂w/∂z̄`. For a holomorphic op (`∂w/∂z̄ = 0`: the
//! arithmetic, `exp`, `log`, the trigonometric functions, matmul, products, sums) that is
//! `G·conj(f′(z))`; and since every formula of the op table, the reductions and matmul is
//! linear in `G` with coefficients made of the op's inputs and outputs (`G·f′(z)`),
//! `conj(formula(conj(G)))` is exactly `G·conj(f′(z))`. So a holomorphic op's real formula
//! serves complex tensors unchanged, wrapped in two conjugations ([`Rule::Holomorphic`]).
//! An op that is linear with real coefficients (views, copies, sums, gathers and scatters)
//! commutes with conjugation and needs neither ([`Rule::Linear`]). The ops that are not
//! holomorphic (`abs`, `angle`, `sgn`, `real`, `imag`, `conj`, `view_as_real`,
//! `view_as_complex`, `var`/`std`) carry formulas written for complex inputs
//! ([`Rule::Own`]). A real input of an op with a complex gradient receives its real part
//! (the engine casts each gradient to its input's dtype: PyTorch's `handle_r_to_c`).
//!
//! Every other node touching a complex tensor backpropagates an error naming the op: a
//! formula written for real numbers would otherwise give a silently wrong gradient.

use super::node::{Formula, TensorInfo};
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// How a node's formula treats complex tensors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Rule {
    /// Holomorphic: the real formula between two conjugations.
    Holomorphic,
    /// Linear with real coefficients: the real formula as it is.
    Linear,
    /// The formula handles complex tensors itself.
    Own,
}

/// The nodes of holomorphic ops: the op table's entries with complex kernels (but `abs`
/// and `sgn`, whose complex formulas are their own), matmul, products.
const HOLOMORPHIC: &[&str] = &[
    "NegBackward0",
    "PositiveBackward0",
    "SquareBackward0",
    "SqrtBackward0",
    "RsqrtBackward0",
    "ExpBackward0",
    "Exp2Backward0",
    "LogBackward0",
    "Log2Backward0",
    "Log10Backward0",
    "Log1PBackward0",
    "Expm1Backward0",
    "SinBackward0",
    "CosBackward0",
    "TanBackward0",
    "AsinBackward0",
    "AcosBackward0",
    "AtanBackward0",
    "SinhBackward0",
    "CoshBackward0",
    "TanhBackward0",
    "AsinhBackward0",
    "AcoshBackward0",
    "AtanhBackward0",
    "SigmoidBackward0",
    "ReciprocalBackward0",
    "AddBackward0",
    "SubBackward0",
    "MulBackward0",
    "DivBackward0",
    "PowBackward0",
    "MmBackward0",
    "MvBackward0",
    "BmmBackward0",
    "DotBackward0",
    "ProdBackward1",
    "CumprodBackward0",
];

/// The nodes of ops linear with real coefficients: views, copies, sums and means,
/// joins, gathers and scatters, `where`, fills.
const LINEAR: &[&str] = &[
    "ViewBackward0",
    "AsStridedBackward0",
    "AsStridedScatterBackward0",
    "ViewScatterBackward0",
    "CopySlices",
    "DiagonalBackward0",
    "ExpandBackward0",
    "FlipBackward0",
    "PermuteBackward0",
    "SelectBackward0",
    "SliceBackward0",
    "SplitBackward0",
    "SplitWithSizesBackward0",
    "SqueezeBackward0",
    "SqueezeBackward1",
    "TBackward0",
    "TransposeBackward0",
    "UnbindBackward0",
    "UnfoldBackward0",
    "UnsqueezeBackward0",
    "CloneBackward0",
    "ToCopyBackward0",
    "CopyBackwards",
    "FillBackward0",
    "SumBackward0",
    "SumBackward1",
    "MeanBackward0",
    "MeanBackward1",
    "CumsumBackward0",
    "CatBackward0",
    "StackBackward0",
    "RepeatBackward0",
    "RollBackward0",
    "IndexBackward0",
    "IndexPutBackward0",
    "GatherBackward0",
    "ScatterBackward0",
    "ScatterAddBackward0",
    "WhereBackward0",
];

/// The nodes whose formulas were written for complex tensors.
const OWN: &[&str] = &[
    "AbsBackward0",
    "SgnBackward0",
    "AngleBackward0",
    "RealBackward0",
    "ImagBackward0",
    "ConjBackward0",
    "ConjPhysicalBackward0",
    "ViewAsRealBackward0",
    "ViewAsComplexBackward0",
    "ComplexBackward0",
    "PolarBackward0",
    "VarBackward0",
    "StdBackward0",
    "FftC2CBackward0",
    "FftR2CBackward0",
    "FftC2RBackward0",
    "LinalgInvExBackward0",
    "LinalgDetBackward0",
    "LinalgSlogdetBackward0",
    "LinalgSolveExBackward0",
    "LinalgCholeskyExBackward0",
    "LinalgEighBackward0",
    "LinalgSvdBackward0",
    "LinalgQrBackward0",
];

/// The rule of the node named `name`, if it has one.
pub(crate) fn rule_of(name: &str) -> Option<Rule> {
    if HOLOMORPHIC.contains(&name) {
        Some(Rule::Holomorphic)
    } else if LINEAR.contains(&name) {
        Some(Rule::Linear)
    } else if OWN.contains(&name) {
        Some(Rule::Own)
    } else {
        None
    }
}

/// The conjugate of a complex tensor (a real one as it is).
fn conj(t: &Tensor) -> Result<Tensor> {
    if t.is_complex() {
        t.conj_physical()
    } else {
        Ok(t.clone())
    }
}

/// `formula` as the node named `name` runs it, given its inputs and outputs: unchanged
/// when none is complex; else per [`Rule`], `rule` (when given) or the name's.
pub(crate) fn adapt(
    name: &str,
    inputs: &[TensorInfo],
    outputs: &[TensorInfo],
    rule: Option<Rule>,
    formula: Formula,
) -> Formula {
    let complex = inputs.iter().chain(outputs).any(|i| i.dtype.is_complex());
    if !complex {
        return formula;
    }
    match rule.or_else(|| rule_of(name)) {
        Some(Rule::Linear | Rule::Own) => formula,
        Some(Rule::Holomorphic) => Box::new(move |saved, grads, needs| {
            let g: Vec<Tensor> = grads.iter().map(conj).collect::<Result<_>>()?;
            formula(saved, &g, needs)?
                .into_iter()
                .map(|r| r.map(|t| conj(&t)).transpose())
                .collect()
        }),
        None => {
            let msg = format!(
                "the derivative of {name} is not implemented for complex tensors (strata differentiates complex numbers through the arithmetic, the elementwise functions with complex forms, matmul, reductions, views and the complex ops abs/angle/real/imag/conj/view_as_real; differentiate the real pairs of view_as_real through this op instead)"
            );
            Box::new(move |_saved, _grads, _needs| Err(Error::autograd(msg.clone())))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::table::{Binary, Unary};

    /// Every elementwise op with a complex kernel is classified, so that a new table entry
    /// with a complex arm cannot silently take a real formula.
    #[test]
    fn every_complex_elementwise_op_has_a_rule() {
        use crate::ops::elementwise_grad::node_name;
        let z = Tensor::from_vec(vec![0.5f64, 0.25], &[1, 2])
            .and_then(|t| t.view_as_complex())
            .unwrap();
        for &u in Unary::ALL {
            if u.grad_kind() == crate::ops::table::GradKind::NotDifferentiable {
                continue;
            }
            if crate::ops::elementwise::unary_raw(u, &z, crate::ops::elementwise::Dest::New)
                .is_ok_and(|r| r.dtype().is_complex() || u == Unary::Abs)
            {
                assert!(
                    rule_of(&node_name(u.name())).is_some(),
                    "{} has a complex kernel but no complex autograd rule",
                    u.name()
                );
            }
        }
        for &b in Binary::ALL {
            if b.grad_kind() == crate::ops::table::GradKind::NotDifferentiable {
                continue;
            }
            let r = crate::ops::elementwise::binary_raw(
                b,
                &(&z).into(),
                &(&z).into(),
                crate::ops::elementwise::Dest::New,
            );
            if r.is_ok_and(|r| r.dtype().is_complex()) {
                assert!(
                    rule_of(&node_name(b.name())).is_some(),
                    "{} has a complex kernel but no complex autograd rule",
                    b.name()
                );
            }
        }
    }

    #[test]
    fn an_unclassified_node_refuses_complex_gradients_and_passes_real_ones() {
        let z = Tensor::from_vec(vec![1.0f64, 2.0], &[1, 2])
            .and_then(|t| t.view_as_complex())
            .unwrap();
        let x = Tensor::from_vec(vec![1.0f64], &[1]).unwrap();
        let pass: fn() -> Formula =
            || Box::new(|_s: &[Tensor], g: &[Tensor], _n: &[bool]| Ok(vec![Some(g[0].clone())]));
        let f = adapt(
            "SortBackward0",
            &[TensorInfo::of(&z)],
            &[TensorInfo::of(&z)],
            None,
            pass(),
        );
        let e = f(&[], std::slice::from_ref(&z), &[true]).unwrap_err();
        assert!(
            e.to_string()
                .contains("derivative of SortBackward0 is not implemented for complex"),
            "{e}"
        );
        // Real tensors: the formula itself.
        let f = adapt(
            "SortBackward0",
            &[TensorInfo::of(&x)],
            &[TensorInfo::of(&x)],
            None,
            pass(),
        );
        assert!(f(&[], std::slice::from_ref(&x), &[true]).is_ok());
        // A holomorphic node conjugates around the formula: an identity formula stays
        // the identity.
        let f = adapt(
            "MulBackward0",
            &[TensorInfo::of(&z)],
            &[TensorInfo::of(&z)],
            None,
            pass(),
        );
        let out = f(&[], std::slice::from_ref(&z), &[true]).unwrap()[0]
            .clone()
            .unwrap();
        assert_eq!(
            out.view_as_real().unwrap().to_vec::<f64>().unwrap(),
            vec![1.0, 2.0]
        );
    }

    #[test]
    fn rules_are_disjoint() {
        for n in HOLOMORPHIC.iter().chain(LINEAR).chain(OWN) {
            let count = [HOLOMORPHIC, LINEAR, OWN]
                .iter()
                .filter(|l| l.contains(n))
                .count();
            assert_eq!(count, 1, "{n} is in {count} lists");
        }
    }
}
