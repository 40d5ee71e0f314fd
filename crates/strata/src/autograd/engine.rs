//! The backward engine: runs the graph from the roots to the leaves.
//!
//! The graph reachable from the roots is found first, with each node's count of incoming
//! edges; a node runs when every node that sends it a gradient has run (its count reaches
//! zero), the latest-made first among those ready (PyTorch's order), so each node's
//! gradient is the sum over all its uses before its formula sees it. One thread, the
//! caller's; grad mode during the pass is `create_graph`.

use std::collections::{BinaryHeap, HashMap, HashSet};
use std::sync::Arc;

use super::node::{Edge, Node};
use super::{set_grad_enabled, AutogradMeta};
use crate::error::{Error, Result};
use crate::tensor::Tensor;

fn key(n: &Arc<Node>) -> usize {
    Arc::as_ptr(n) as usize
}

/// Sums `g` down to `shape` (the dims that broadcasting added or stretched), as a
/// gradient flowing back through a broadcast must be.
pub(crate) fn sum_to(g: &Tensor, shape: &[usize]) -> Result<Tensor> {
    if g.shape() == shape {
        return Ok(g.clone());
    }
    let lead = g.ndim().checked_sub(shape.len()).ok_or_else(|| {
        Error::autograd(format!(
            "cannot sum a gradient of shape {} to shape {}",
            crate::error::list(g.shape()),
            crate::error::list(shape)
        ))
    })?;
    let mut dims: Vec<i64> = (0..lead as i64).collect();
    for (i, &n) in shape.iter().enumerate() {
        let have = g.shape()[lead + i];
        if n == 1 && have != 1 {
            dims.push((lead + i) as i64);
        } else if n != have {
            return Err(Error::autograd(format!(
                "cannot sum a gradient of shape {} to shape {}",
                crate::error::list(g.shape()),
                crate::error::list(shape)
            )));
        }
    }
    let s = if dims.is_empty() {
        g.clone()
    } else {
        g.sum(&dims, true)?
    };
    let s = if lead > 0 {
        let shape_i: Vec<i64> = shape.iter().map(|&n| n as i64).collect();
        s.reshape(&shape_i)?
    } else {
        s
    };
    Ok(s)
}

/// Checks a root and its gradient; the gradient to start from.
fn root_grad(i: usize, root: &Tensor, grad: Option<&Tensor>) -> Result<Tensor> {
    if !root.requires_grad() {
        return Err(Error::autograd(format!(
            "element {i} of tensors does not require grad and does not have a grad_fn"
        )));
    }
    match grad {
        Some(g) => {
            if g.shape() != root.shape() {
                return Err(Error::autograd(format!(
                    "Mismatch in shape: grad_output[{i}] has a shape of {} and output[{i}] has a shape of {}.",
                    crate::error::list(g.shape()),
                    crate::error::list(root.shape())
                )));
            }
            if g.dtype() != root.dtype() {
                return g.to_dtype(root.dtype());
            }
            Ok(g.clone())
        }
        None => {
            if root.numel() != 1 {
                return Err(Error::autograd(
                    "grad can be implicitly created only for scalar outputs",
                ));
            }
            if root.is_complex() {
                return Err(Error::autograd(
                    "grad can be implicitly created only for real scalar outputs",
                ));
            }
            Tensor::full_on(root.shape(), 1.0, root.dtype(), root.device())
        }
    }
}

/// `Tensor::backward` of several roots at once.
pub(crate) fn backward(
    roots: &[Tensor],
    grads: &[Option<Tensor>],
    keep_graph: bool,
    create_graph: bool,
) -> Result<()> {
    let mut starts = Vec::with_capacity(roots.len());
    for (i, r) in roots.iter().enumerate() {
        let g = root_grad(i, r, grads.get(i).and_then(Option::as_ref))?;
        starts.push((r.grad_edge(), g));
    }
    run(starts, &[], keep_graph, create_graph).map(|_| ())
}

/// The gradients of `outputs` with respect to `inputs` (PyTorch's `torch.autograd.grad`),
/// without touching any tensor's `.grad`. `grad_outputs` as `gradient` of
/// [`Tensor::backward`] per output (`None`: ones for a one-element output);
/// `retain_graph` defaults to `create_graph`; with `allow_unused` an input the outputs do
/// not depend on gets `None` rather than an error.
///
/// # Errors
/// PyTorch's: an output or input that does not require grad, an unused input without
/// `allow_unused`, and those of [`Tensor::backward`].
pub fn grad(
    outputs: &[Tensor],
    inputs: &[Tensor],
    grad_outputs: &[Option<Tensor>],
    retain_graph: Option<bool>,
    create_graph: bool,
    allow_unused: bool,
) -> Result<Vec<Option<Tensor>>> {
    if grad_outputs.len() > outputs.len() {
        return Err(Error::autograd(format!(
            "grad requires one grad_output per output: got {} grad_outputs for {} outputs",
            grad_outputs.len(),
            outputs.len()
        )));
    }
    let mut starts = Vec::with_capacity(outputs.len());
    for (i, r) in outputs.iter().enumerate() {
        let g = root_grad(i, r, grad_outputs.get(i).and_then(Option::as_ref))?;
        starts.push((r.grad_edge(), g));
    }
    let mut captures = Vec::with_capacity(inputs.len());
    for t in inputs {
        if !t.requires_grad() {
            return Err(Error::autograd(
                "One of the differentiated Tensors does not require grad",
            ));
        }
        captures.push(t.grad_edge());
    }
    let got = run(
        starts,
        &captures,
        retain_graph.unwrap_or(create_graph),
        create_graph,
    )?;
    if !allow_unused && got.iter().any(Option::is_none) {
        return Err(Error::autograd("One of the differentiated Tensors appears to not have been used in the graph. Set allow_unused=True if this is the desired behavior."));
    }
    Ok(got)
}

/// A ready node, ordered by creation (latest first).
struct Ready(Arc<Node>);

impl PartialEq for Ready {
    fn eq(&self, o: &Self) -> bool {
        self.0.seq == o.0.seq
    }
}
impl Eq for Ready {}
impl PartialOrd for Ready {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Ready {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.0.seq.cmp(&o.0.seq)
    }
}

/// Adds `g` into slot `nr` of a node's input buffer.
fn accumulate_into(slot: &mut Option<Tensor>, g: Tensor) -> Result<()> {
    *slot = Some(match slot.take() {
        None => g,
        Some(old) => old.add(&g)?,
    });
    Ok(())
}

/// Runs the hooks of `meta` on `g`, each seeing the previous one's result.
fn run_hooks(meta: &AutogradMeta, mut g: Tensor) -> Result<Tensor> {
    let hooks: Vec<_> = meta.lock().hooks.iter().map(|(_, h)| h.clone()).collect();
    for h in hooks {
        if let Some(new) = h(&g)? {
            if new.shape() != g.shape() {
                return Err(Error::autograd(format!(
                    "hook 'hook' has changed the size of value: expected {} but got {}",
                    crate::error::list(g.shape()),
                    crate::error::list(new.shape())
                )));
            }
            g = new;
        }
    }
    Ok(g)
}

/// A gradient to keep in `.grad`: a tensor of its own (not a view of, or an alias of, a
/// tensor something else holds), so that accumulating into it later changes nothing else.
fn owned(g: Tensor) -> Result<Tensor> {
    let own = g.storage().is_unique()
        && g.is_contiguous()
        && g.offset() == 0
        && g.numel() * g.dtype().itemsize() == g.storage().nbytes();
    if own {
        Ok(g.detach())
    } else {
        g.detach().contiguous_copy()
    }
}

/// A leaf's accumulator: hooks, then `.grad += g`.
fn accumulate_leaf(meta: &AutogradMeta, g: Tensor, create_graph: bool) -> Result<()> {
    let g = run_hooks(meta, g)?;
    let mut s = meta.lock();
    let new = match s.grad.take() {
        None if create_graph => g,
        None => owned(g)?,
        Some(old) if create_graph || old.requires_grad() => old.add(&g)?,
        Some(old) => {
            // In place, as PyTorch (the old gradient is the leaf's own).
            match old.add_(&g) {
                Ok(_) => old,
                Err(_) => old.add(&g)?,
            }
        }
    };
    s.grad = Some(new);
    Ok(())
}

/// The engine. `starts`: (edge, gradient) per root. `captures`: the edges whose incoming
/// gradients are returned (then leaves are not accumulated: `autograd.grad`).
fn run(
    starts: Vec<(Edge, Tensor)>,
    captures: &[Edge],
    keep_graph: bool,
    create_graph: bool,
) -> Result<Vec<Option<Tensor>>> {
    let _mode = set_grad_enabled(create_graph);
    let capturing = !captures.is_empty();

    // The graph: every node reachable from the roots, and its children.
    let mut nodes: HashMap<usize, Arc<Node>> = HashMap::new();
    let mut order: Vec<Arc<Node>> = Vec::new();
    let mut stack: Vec<Arc<Node>> = Vec::new();
    for (e, _) in &starts {
        if let Some(n) = &e.node {
            if nodes.insert(key(n), n.clone()).is_none() {
                stack.push(n.clone());
            }
        }
    }
    while let Some(n) = stack.pop() {
        order.push(n.clone());
        for e in &n.next {
            if let Some(c) = &e.node {
                if nodes.insert(key(c), c.clone()).is_none() {
                    stack.push(c.clone());
                }
            }
        }
    }

    // Which nodes must run: all of them for backward; for grad, those with a captured
    // edge below them.
    let capture_nodes: HashSet<usize> = captures
        .iter()
        .filter_map(|e| e.node.as_ref().map(key))
        .collect();
    let needed: HashSet<usize> = if capturing {
        // Fixed point over the reachable nodes (a DAG: at most its depth of rounds,
        // normally one or two because `order` is roughly parents first).
        let mut needed: HashSet<usize> = HashSet::new();
        loop {
            let mut changed = false;
            for n in order.iter().rev() {
                let k = key(n);
                if needed.contains(&k) {
                    continue;
                }
                let leads = capture_nodes.contains(&k)
                    || n.next
                        .iter()
                        .any(|e| e.node.as_ref().is_some_and(|c| needed.contains(&key(c))));
                if leads {
                    needed.insert(k);
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        needed
    } else {
        nodes.keys().copied().collect()
    };

    // Dependencies: edges from needed nodes into needed nodes.
    let mut deps: HashMap<usize, usize> = HashMap::new();
    for n in &order {
        if !needed.contains(&key(n)) {
            continue;
        }
        for e in &n.next {
            if let Some(c) = &e.node {
                if needed.contains(&key(c)) {
                    *deps.entry(key(c)).or_insert(0) += 1;
                }
            }
        }
    }

    let mut buffers: HashMap<usize, Vec<Option<Tensor>>> = HashMap::new();
    for (e, g) in starts {
        if let Some(n) = &e.node {
            let buf = buffers
                .entry(key(n))
                .or_insert_with(|| vec![None; n.outputs.len().max(1)]);
            if e.input_nr < buf.len() {
                accumulate_into(&mut buf[e.input_nr], g)?;
            }
        }
    }
    let mut ready: BinaryHeap<Ready> = BinaryHeap::new();
    let mut queued: HashSet<usize> = HashSet::new();
    for n in nodes.values() {
        let k = key(n);
        if needed.contains(&k) && deps.get(&k).copied().unwrap_or(0) == 0 {
            queued.insert(k);
            ready.push(Ready(n.clone()));
        }
    }

    let mut results: Vec<Option<Tensor>> = vec![None; captures.len()];
    while let Some(Ready(n)) = ready.pop() {
        let k = key(&n);
        let Some(mut grads) = buffers.remove(&k).filter(|b| b.iter().any(Option::is_some)) else {
            // No gradient reached this node: nothing flows on, but its children may be
            // waiting on it.
            for e in &n.next {
                if let Some(c) = &e.node {
                    let ck = key(c);
                    if let Some(d) = deps.get_mut(&ck) {
                        *d -= 1;
                        if *d == 0 && queued.insert(ck) {
                            ready.push(Ready(c.clone()));
                        }
                    }
                }
            }
            if !keep_graph {
                n.release();
            }
            continue;
        };

        // Hooks and retain_grad of the tensors this node made.
        for meta in n.watchers() {
            let (nr, current) = {
                let s = meta.lock();
                (
                    s.output_nr,
                    s.grad_fn.as_ref().is_some_and(|f| Arc::ptr_eq(f, &n)),
                )
            };
            if !current || nr >= grads.len() {
                continue;
            }
            if let Some(g) = grads[nr].take() {
                let g = run_hooks(&meta, g)?;
                let mut s = meta.lock();
                if s.retains_grad {
                    let keep = if create_graph { g.clone() } else { g.detach() };
                    s.grad = Some(match s.grad.take() {
                        None => keep.contiguous_copy()?,
                        Some(old) => old.add(&keep)?,
                    });
                }
                drop(s);
                grads[nr] = Some(g);
            }
        }

        for (i, e) in captures.iter().enumerate() {
            if e.node.as_ref().is_some_and(|c| Arc::ptr_eq(c, &n)) {
                if let Some(g) = grads.get(e.input_nr).and_then(Option::as_ref) {
                    results[i] = Some(g.clone());
                }
            }
        }

        if let Some(meta) = n.leaf() {
            if !capturing {
                if let Some(g) = grads.into_iter().next().flatten() {
                    accumulate_leaf(meta, g, create_graph)?;
                }
            }
            continue;
        }

        // The formula, with zeros for outputs that received no gradient.
        let mut full = Vec::with_capacity(grads.len());
        for (i, g) in grads.into_iter().enumerate() {
            full.push(match g {
                Some(g) => g,
                None => n.outputs[i].zeros()?,
            });
        }
        let needs: Vec<bool> = n
            .next
            .iter()
            .map(|e| e.node.as_ref().is_some_and(|c| needed.contains(&key(c))))
            .collect();
        let outs = n.apply(&full, &needs, create_graph)?;
        drop(full);
        if !keep_graph {
            n.release();
        }
        if outs.len() != n.next.len() {
            return Err(Error::autograd(format!(
                "function {} returned an incorrect number of gradients (expected {}, got {})",
                n.name(),
                n.next.len(),
                outs.len()
            )));
        }
        for (i, (e, g)) in n.next.iter().zip(outs).enumerate() {
            let Some(c) = &e.node else { continue };
            let ck = key(c);
            if !needed.contains(&ck) {
                continue;
            }
            if let Some(mut g) = g {
                let want = &n.inputs[i];
                if g.shape() != want.shape.as_slice() {
                    g = sum_to(&g, &want.shape).map_err(|_| {
                        Error::autograd(format!(
                            "Function {} returned an invalid gradient at index {i} - got {} but expected shape compatible with {}",
                            n.name(),
                            crate::error::list(g.shape()),
                            crate::error::list(&want.shape)
                        ))
                    })?;
                }
                if g.dtype() != want.dtype {
                    g = g.to_dtype(want.dtype)?;
                }
                let buf = buffers
                    .entry(ck)
                    .or_insert_with(|| vec![None; c.outputs.len().max(1)]);
                if e.input_nr < buf.len() {
                    accumulate_into(&mut buf[e.input_nr], g)?;
                }
            }
            let d = deps.get_mut(&ck).expect("counted above");
            *d -= 1;
            if *d == 0 && queued.insert(ck) {
                ready.push(Ready(c.clone()));
            }
        }
    }
    Ok(results)
}
