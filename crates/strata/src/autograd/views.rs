//! Views under autograd: a view of a tensor that requires grad records its op's backward
//! and its base; the gradients of views as scatters into their input's geometry.

use std::sync::Arc;

use super::node::{build, record1, Formula};
use super::{is_grad_enabled, needs_grad, no_grad, AutogradMeta, MetaState, ViewInfo};
use crate::dtype::DType;
use crate::error::Result;
use crate::layout::overlap::Overlap;
use crate::layout::Layout;
use crate::tensor::{Tensor, TensorIndex};

/// A view op applied again, to another tensor of the input's shape.
pub(crate) type Replay = Arc<dyn Fn(&Tensor) -> Result<Tensor> + Send + Sync>;

/// How a view's gradient goes back to its input.
pub(crate) enum ViewGrad {
    /// `g.reshape(input shape)`: view, reshape, flatten, squeeze, unsqueeze.
    Reshape,
    /// `g.permute(inverse)`: transpose, permute, movedim.
    Permute(Vec<i64>),
    /// Summed over the broadcast dims: expand.
    Expand,
    /// `g.flip(dims)`.
    Flip(Vec<i64>),
    /// The op replayed on zeros of the input's shape, `g` written (or, where the view
    /// repeats elements, accumulated) into it: narrow, select, slice, index, diagonal,
    /// unfold, split, unbind.
    Replay(Replay),
    /// By storage position, against the input's own layout: as_strided.
    Strided,
    /// The gradient mapped by a function of it alone: `view_as_real` (pairs back to
    /// complex numbers), `view_as_complex` (complex numbers to pairs).
    Map(Replay),
}

fn base_fn(base: &Tensor) -> Option<usize> {
    base.grad
        .get()
        .and_then(|m| m.lock().grad_fn.as_ref().map(|f| Arc::as_ptr(f) as usize))
}

/// The base of a view of `input`: `input`'s own base if it is a view, else `input`.
fn base_of(input: &Tensor) -> Tensor {
    input
        .grad
        .get()
        .and_then(|m| m.lock().view.as_ref().map(|v| v.base.clone()))
        .unwrap_or_else(|| input.clone())
}

/// Gives `out`, a view of `input` made by the op `name`, its autograd state: none when
/// `input` does not require grad; with grad mode off, only its base (so that an in-place
/// write through it later is refused); else a node whose formula is `grad`.
pub(crate) fn record_view(
    input: &Tensor,
    mut out: Tensor,
    name: &'static str,
    grad: ViewGrad,
) -> Result<Tensor> {
    out.grad.replace(None);
    if !input.requires_grad() {
        return Ok(out);
    }
    let base = base_of(input);
    let bf = base_fn(&base);
    if !is_grad_enabled() {
        out.grad.replace(Some(AutogradMeta::new(MetaState {
            view: Some(ViewInfo {
                base,
                base_fn: bf,
                made_without_grad: true,
            }),
            ..Default::default()
        })));
        return Ok(out);
    }
    let in_shape = input.shape().to_vec();
    let formula: Formula = match grad {
        ViewGrad::Strided => {
            let out_layout = out.layout().clone();
            let in_layout = input.layout().clone();
            Box::new(move |_saved, grads, _needs| {
                Ok(vec![Some(strided_scatter(
                    &grads[0],
                    &in_layout,
                    &out_layout,
                )?)])
            })
        }
        grad => Box::new(move |_saved, grads, _needs| {
            let g = &grads[0];
            let gi = match &grad {
                ViewGrad::Reshape => {
                    let s: Vec<i64> = in_shape.iter().map(|&n| n as i64).collect();
                    g.reshape(&s)?
                }
                ViewGrad::Permute(inv) => g.permute(inv)?,
                ViewGrad::Expand => super::sum_to(g, &in_shape)?,
                ViewGrad::Flip(dims) => g.flip(dims)?,
                ViewGrad::Replay(f) => replay_scatter(g, &in_shape, f)?,
                ViewGrad::Map(f) => f(g)?,
                ViewGrad::Strided => unreachable!("bound above"),
            };
            Ok(vec![Some(gi)])
        }),
    };
    let node = build(name, &[input], &[&out], &[], formula, None, None);
    out.grad.replace(Some(AutogradMeta::new(MetaState {
        grad_fn: Some(node),
        output_nr: 0,
        view: Some(ViewInfo {
            base,
            base_fn: bf,
            made_without_grad: false,
        }),
        ..Default::default()
    })));
    Ok(out)
}

/// Regenerates the `grad_fn` of view `t` when its base was rewritten in place since it
/// was made (through it or through another view): an as_strided backward into the base.
pub(crate) fn refresh_view_fn(t: &Tensor, meta: &AutogradMeta) {
    let v = {
        let s = meta.lock();
        match &s.view {
            Some(v) if !v.made_without_grad => v.clone(),
            _ => return,
        }
    };
    let now = base_fn(&v.base);
    if now == v.base_fn {
        return;
    }
    let formula = match parts_layouts(&v.base, t) {
        Some((base_layout, view_layout)) => {
            let (base_complex, view_complex) = (v.base.is_complex(), t.is_complex());
            let f: Formula = Box::new(move |_saved, grads, _needs| {
                // Across dtypes (a view of a complex tensor's real pairs, or a complex
                // view of real pairs), both layouts count real parts.
                let g = if view_complex && !base_complex {
                    grads[0].view_as_real()?
                } else {
                    grads[0].clone()
                };
                let gi = strided_scatter(&g, &base_layout, &view_layout)?;
                Ok(vec![Some(if base_complex && !view_complex {
                    gi.contiguous()?.view_as_complex()?
                } else {
                    gi
                })])
            });
            f
        }
        None => Box::new(|_saved: &[Tensor], _grads: &[Tensor], _needs: &[bool]| {
            Err(crate::error::Error::autograd(
                "the gradient of a view could not be rebuilt after its base was modified in place",
            ))
        }),
    };
    let node = build(
        "AsStridedBackward0",
        &[&v.base],
        &[t],
        &[],
        formula,
        None,
        None,
    );
    let mut s = meta.lock();
    let watched = !s.hooks.is_empty() || s.retains_grad;
    s.grad_fn = Some(node.clone());
    s.output_nr = 0;
    if let Some(view) = s.view.as_mut() {
        view.base_fn = now;
    }
    drop(s);
    if watched {
        if let Some(arc) = t.grad.arc() {
            node.watch(Arc::downgrade(&arc));
        }
    }
}

/// The layouts of `base` and of its view `t` in one unit: their own for one dtype, else
/// counted in real parts (the complex one's as its `view_as_real` pairs).
fn parts_layouts(base: &Tensor, t: &Tensor) -> Option<(Layout, Layout)> {
    let pairs = |x: &Tensor| x.detach().view_as_real().ok().map(|p| p.layout().clone());
    match (base.is_complex(), t.is_complex()) {
        (b, v) if b == v => Some((base.layout().clone(), t.layout().clone())),
        (true, false) => Some((pairs(base)?, t.layout().clone())),
        _ => Some((base.layout().clone(), pairs(t)?)),
    }
}

/// `g` (the view's gradient) written into zeros of the input's shape through the replayed
/// view; accumulated where the view repeats input elements. Differentiable when `g`
/// requires grad (its backward is the view itself).
fn replay_scatter(g: &Tensor, in_shape: &[usize], f: &Replay) -> Result<Tensor> {
    let gi = {
        let _off = no_grad();
        let gi = Tensor::zeros_on(in_shape, g.dtype(), g.device())?;
        let v = f(&gi)?;
        if v.layout().internal_overlap() == Overlap::No {
            v.copy_(g)?;
        } else {
            let n = i64::try_from(gi.numel()).expect("a tensor's numel fits i64");
            let shape: Vec<i64> = in_shape.iter().map(|&n| n as i64).collect();
            let idx = Tensor::arange(0, n, 1, DType::I64)?.view(&shape)?;
            let iv = f(&idx)?.reshape(&[-1])?;
            gi.reshape(&[-1])?
                .index_put_accumulate_(&[TensorIndex::Tensor(Box::new(iv))], &g.reshape(&[-1])?)?;
        }
        gi
    };
    if needs_grad(&[g]) {
        let f = f.clone();
        return record1(
            "ViewScatterBackward0",
            &[g],
            gi,
            &[],
            Box::new(move |_s, grads, _n| Ok(vec![Some(f(&grads[0])?)])),
        );
    }
    Ok(gi)
}

/// The storage range two layouts span together, as `(low, length)`.
fn span(a: &Layout, b: &Layout) -> (usize, usize) {
    let ra = a.index_range();
    let rb = b.index_range();
    let (lo, hi) = match (ra, rb) {
        (Some((a0, a1)), Some((b0, b1))) => (a0.min(b0), a1.max(b1)),
        (Some(r), None) | (None, Some(r)) => r,
        (None, None) => (0, 0),
    };
    (lo, hi - lo + 1)
}

/// `buf` seen through `layout` moved down by `lo` elements.
fn through(buf: &Tensor, layout: &Layout, lo: usize) -> Result<Tensor> {
    buf.as_strided(layout.shape(), layout.strides(), Some(layout.offset() - lo))
}

/// The gradient of the elements under `view` (storage positions) taken from `g`, the
/// gradient of a tensor with layout `base`: a tensor of the view's shape. Differentiable
/// in `g` (its adjoint is [`strided_scatter`]), for double backward.
pub(crate) fn strided_gather(g: &Tensor, base: &Layout, view: &Layout) -> Result<Tensor> {
    let out = {
        let _off = no_grad();
        let (lo, len) = span(base, view);
        let buf = Tensor::zeros_on(&[len], g.dtype(), g.device())?;
        through(&buf, base, lo)?.copy_(g)?;
        through(&buf, view, lo)?.contiguous_copy()?
    };
    if !needs_grad(&[g]) {
        return Ok(out);
    }
    let (b, v) = (base.clone(), view.clone());
    record1(
        "AsStridedBackward0",
        &[g],
        out,
        &[],
        Box::new(move |_s, grads, _n| Ok(vec![Some(strided_scatter(&grads[0], &b, &v)?)])),
    )
}

/// `g` (the gradient of a tensor with layout `base`) with the elements under `view`
/// replaced by `part`. Differentiable in both (for double backward through CopySlices).
pub(crate) fn strided_replace(
    g: &Tensor,
    base: &Layout,
    view: &Layout,
    part: &Tensor,
) -> Result<Tensor> {
    let out = {
        let _off = no_grad();
        let (lo, len) = span(base, view);
        let buf = Tensor::zeros_on(&[len], g.dtype(), g.device())?;
        let b = through(&buf, base, lo)?;
        b.copy_(g)?;
        through(&buf, view, lo)?.copy_(part)?;
        b
    };
    if !needs_grad(&[g, part]) {
        return Ok(out);
    }
    let (b, v) = (base.clone(), view.clone());
    let part_shape = part.shape().to_vec();
    record1(
        "CopySlices",
        &[g, part],
        out,
        &[],
        Box::new(move |_s, grads, needs| {
            let gg = &grads[0];
            let ga = if needs[0] {
                let zeros = Tensor::zeros_on(&part_shape, gg.dtype(), gg.device())?;
                Some(strided_replace(gg, &b, &v, &zeros)?)
            } else {
                None
            };
            let gp = if needs[1] {
                Some(strided_gather(gg, &b, &v)?)
            } else {
                None
            };
            Ok(vec![ga, gp])
        }),
    )
}

/// `g`, the gradient of the view `view`, sent back by storage position to a tensor with
/// layout `input` (summed where the view repeats a position). Differentiable in `g` (its
/// adjoint is [`strided_gather`]).
pub(crate) fn strided_scatter(g: &Tensor, input: &Layout, view: &Layout) -> Result<Tensor> {
    let out = {
        let _off = no_grad();
        let (lo, len) = span(input, view);
        let buf = Tensor::zeros_on(&[len], g.dtype(), g.device())?;
        let v = through(&buf, view, lo)?;
        if view.internal_overlap() == Overlap::No {
            v.copy_(g)?;
        } else {
            let n = i64::try_from(len).expect("a storage range fits i64");
            let pos = Tensor::arange(0, n, 1, DType::I64)?;
            let iv = through(&pos, view, lo)?.reshape(&[-1])?;
            buf.index_put_accumulate_(&[TensorIndex::Tensor(Box::new(iv))], &g.reshape(&[-1])?)?;
        }
        let gi = through(&buf, input, lo)?;
        if input.internal_overlap() == Overlap::No {
            gi
        } else {
            // Input elements that share a storage position share its gradient evenly
            // (PyTorch's as_strided backward for an input whose elements overlap).
            let n = i64::try_from(len).expect("a storage range fits i64");
            let pos = Tensor::arange(0, n, 1, DType::I64)?;
            let ip = through(&pos, input, lo)?.reshape(&[-1])?;
            let count = Tensor::zeros_on(&[len], g.dtype(), g.device())?;
            let ones = Tensor::ones(&[ip.numel()], g.dtype())?;
            count.index_put_accumulate_(&[TensorIndex::Tensor(Box::new(ip))], &ones)?;
            gi.div(&through(&count, input, lo)?)?
        }
    };
    if !needs_grad(&[g]) {
        return Ok(out);
    }
    let (i, v) = (input.clone(), view.clone());
    record1(
        "AsStridedScatterBackward0",
        &[g],
        out,
        &[],
        Box::new(move |_s, grads, _n| Ok(vec![Some(strided_gather(&grads[0], &i, &v)?)])),
    )
}
