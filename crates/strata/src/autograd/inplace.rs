//! In-place ops under autograd: which are refused, and how one is recorded — on a tensor,
//! its `grad_fn` becomes the op's node; on a view of a tensor that requires grad, the
//! base's history is rewritten (PyTorch's CopySlices) and the views regenerate theirs.

use std::borrow::Cow;
use std::sync::Arc;

use super::node::{build, Formula, Save};
use super::views::{strided_gather, strided_replace};
use super::{is_grad_enabled, AutogradMeta, MetaState, ViewInfo};
use crate::error::{Error, Result};
use crate::tensor::Tensor;

const LEAF: &str = "a leaf Variable that requires grad is being used in an in-place operation.";
const VIEW_OF_LEAF: &str =
    "a view of a leaf Variable that requires grad is being used in an in-place operation.";
const NO_GRAD_VIEW: &str = "A view was created in no_grad mode and is being modified inplace with grad mode enabled. Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving both the view and the inplace either both inside the no_grad block (if you don't want the inplace to be tracked) or both outside (if you want the inplace to be tracked).";

/// An in-place write through a view that reinterprets its base's elements (the real pairs
/// of a complex tensor, or a complex view of real pairs): the base's history would have
/// to be rewritten across dtypes, which strata does not do.
const PARTS_VIEW: &str = "an in-place operation on a view of another dtype (view_as_real, view_as_complex, real, imag) of a tensor that requires grad is not supported; write through the tensor itself, or into a copy";

pub(crate) const UNTRACKED_VIEW: &str = "an in-place operation wrote a value that requires grad into a view of a tensor that does not require grad, so the gradient could not reach it through the viewed tensor; write through the viewed tensor itself instead (Python's item assignment `base[key] = value`, Rust's `Tensor::index_assign_`), or make it require grad first";

/// Whether `t` can be taken for its own base: it is all of its storage, or no other
/// tensor holds that storage (a tensor over part of a foreign buffer, say).
pub(crate) fn covers_storage(t: &Tensor) -> bool {
    t.storage().handle_count() == 1
        || (t.layout().is_non_overlapping_and_dense()
            && t.numel() * t.dtype().itemsize() == t.storage().nbytes())
}

/// PyTorch's refusals of an in-place write to `t` with grad mode on: a leaf that requires
/// grad, a view of one, a view made under `no_grad` of a tensor that requires grad.
pub(crate) fn check_inplace(t: &Tensor) -> Result<()> {
    if !is_grad_enabled() {
        return Ok(());
    }
    let Some(m) = t.grad.get() else {
        return Ok(());
    };
    let (view, leaf) = {
        let s = m.lock();
        (s.view.clone(), s.grad_fn.is_none() && s.requires_grad)
    };
    match view {
        Some(v) if v.made_without_grad => Err(Error::autograd(NO_GRAD_VIEW)),
        Some(v) if v.base.dtype() != t.dtype() => Err(Error::autograd(PARTS_VIEW)),
        Some(v) if v.base.is_leaf() && v.base.requires_grad() => Err(Error::autograd(VIEW_OF_LEAF)),
        Some(_) => Ok(()),
        None if leaf => Err(Error::autograd(LEAF)),
        None => Ok(()),
    }
}

/// Records the in-place op `name` that wrote `t` from its old value and `others`
/// (`formula`'s inputs: `t` first). Call after the write, when grad mode is on and `t`
/// or one of `others` requires grad.
pub(crate) fn record_inplace(
    t: &Tensor,
    others: &[&Tensor],
    name: impl Into<Cow<'static, str>>,
    saves: &[Save<'_>],
    formula: Formula,
) -> Result<()> {
    let view = t.grad.get().and_then(|m| m.lock().view.clone());
    if view.is_none() && !t.requires_grad() && !covers_storage(t) {
        // `t` is (maybe) a view of a base that does not track gradients: the base would
        // not learn of the write, and gradients through it would be silently lost.
        return Err(Error::autograd(UNTRACKED_VIEW));
    }
    let mut inputs: Vec<&Tensor> = Vec::with_capacity(1 + others.len());
    inputs.push(t);
    inputs.extend_from_slice(others);
    let node = build(name, &inputs, &[t], saves, formula, None, None);
    match view {
        Some(v) if !v.made_without_grad => copy_slices(t, &v, others, node),
        _ => {
            let meta = t
                .grad
                .get_or_init(|| AutogradMeta::new(MetaState::default()));
            let mut s = meta.lock();
            s.grad_fn = Some(node);
            s.output_nr = 0;
            Ok(())
        }
    }
}

/// The write through view `t` of `v.base` as a rewrite of the base: a CopySlices node whose
/// gradient for the base is the incoming one with the view's region replaced by the op's
/// gradient for its `self`, and whose other gradients are the op's for `others`.
fn copy_slices(t: &Tensor, v: &ViewInfo, others: &[&Tensor], op: Arc<super::Node>) -> Result<()> {
    let base = &v.base;
    let base_layout = base.layout().clone();
    let view_layout = t.layout().clone();
    let view_shape = t.shape().to_vec();
    let op2 = op.clone();
    let formula: Formula = Box::new(move |_saved, grads, needs| {
        let g = &grads[0];
        let gv = strided_gather(g, &base_layout, &view_layout)?;
        let mut op_needs = Vec::with_capacity(needs.len());
        op_needs.push(true);
        op_needs.extend_from_slice(&needs[1..]);
        let mut res = op2.apply(&[gv], &op_needs, is_grad_enabled())?.into_iter();
        let g_self = match res.next().flatten() {
            Some(gs) => super::sum_to(&gs, &view_shape)?,
            None => Tensor::zeros_on(&view_shape, g.dtype(), g.device())?,
        };
        let gb = strided_replace(g, &base_layout, &view_layout, &g_self)?;
        let mut out = Vec::with_capacity(needs.len());
        out.push(Some(gb));
        out.extend(res);
        Ok(out)
    });
    let mut inputs: Vec<&Tensor> = Vec::with_capacity(1 + others.len());
    inputs.push(base);
    inputs.extend_from_slice(others);
    let cs = build("CopySlices", &inputs, &[base], &[], formula, Some(op), None);
    let meta = base
        .grad
        .get_or_init(|| AutogradMeta::new(MetaState::default()));
    let mut s = meta.lock();
    s.grad_fn = Some(cs);
    s.output_nr = 0;
    Ok(())
}
