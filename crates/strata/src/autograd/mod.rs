//! Reverse-mode automatic differentiation on the view model, with PyTorch's semantics.
//!
//! - A tensor that autograd has touched carries an [`AutogradMeta`] in its grad slot
//!   ([`GradSlot`], one pointer, empty for every other tensor): the leaf flag
//!   `requires_grad`, the accumulated `.grad`, the `grad_fn` node that made it (with the
//!   output number), tensor hooks, and, for a view of a tensor that requires grad, its base.
//! - An op whose inputs require grad (and grad mode is on: [`is_grad_enabled`]) records a
//!   [`Node`] (`node.rs`): edges to its inputs' nodes (a leaf's is its accumulator), the
//!   tensors its formula needs, saved with the storage's version counter, and the formula
//!   itself, written beside the op's declaration (the op table's `grad(...)` clauses in
//!   `ops/table.rs`, reductions in `ops/reduce.rs`, matmul in `kernel/matmul.rs`, views in
//!   `autograd/views.rs`).
//! - [`Tensor::backward`] and [`grad`] run the engine (`engine.rs`): the graph reachable
//!   from the roots, in dependency order, gradients summed per input, hooks, `retain_grad`,
//!   leaves' `.grad` accumulated; saved tensors are freed afterwards unless `retain_graph`.
//! - In-place ops (`inplace.rs`): a leaf that requires grad, or a view of one, refuses
//!   them; on a view of a tensor that requires grad the base's history is rewritten
//!   (PyTorch's CopySlices) and every view of the base regenerates its `grad_fn` from it.

pub(crate) mod complex;
mod engine;
mod inplace;
mod node;
pub(crate) mod views;

use std::cell::Cell;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

pub use engine::grad;
pub(crate) use engine::sum_to;
pub(crate) use inplace::{check_inplace, record_inplace};
pub(crate) use node::{needs_grad, record, record1, Formula, Save};
pub use node::{Edge, Node};

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

thread_local! {
    static GRAD_ENABLED: Cell<bool> = const { Cell::new(true) };
}

/// Whether ops on this thread record graphs (PyTorch's grad mode; on by default, per thread).
#[inline]
pub fn is_grad_enabled() -> bool {
    GRAD_ENABLED.with(Cell::get)
}

/// Restores the grad mode it was made from when dropped ([`no_grad`], [`enable_grad`],
/// [`set_grad_enabled`]).
#[must_use = "grad mode reverts when the guard is dropped"]
#[derive(Debug)]
pub struct GradModeGuard {
    prev: bool,
    // Grad mode is per thread: the guard must be dropped where it was made.
    _not_send: std::marker::PhantomData<*const ()>,
}

impl Drop for GradModeGuard {
    fn drop(&mut self) {
        GRAD_ENABLED.with(|g| g.set(self.prev));
    }
}

/// Sets this thread's grad mode until the guard is dropped.
pub fn set_grad_enabled(enabled: bool) -> GradModeGuard {
    let prev = GRAD_ENABLED.with(|g| g.replace(enabled));
    GradModeGuard {
        prev,
        _not_send: std::marker::PhantomData,
    }
}

/// No graph is recorded until the guard is dropped (PyTorch's `torch.no_grad()`).
pub fn no_grad() -> GradModeGuard {
    set_grad_enabled(false)
}

/// Graphs are recorded until the guard is dropped (PyTorch's `torch.enable_grad()`).
pub fn enable_grad() -> GradModeGuard {
    set_grad_enabled(true)
}

/// The backward of a custom op ([`record_custom`]): from the gradients of its outputs
/// (zeros where none arrived) and which inputs want one, a gradient per input.
pub type CustomFormula =
    Box<dyn Fn(&[Tensor], &[bool]) -> Result<Vec<Option<Tensor>>> + Send + Sync>;

/// Records a custom op (PyTorch's `autograd.Function`): `outputs`, computed from `inputs`
/// without a graph, become the outputs of a node named `name` whose backward is `formula`.
/// Returns them with their history (unchanged when grad mode is off or no input requires
/// grad).
///
/// # Errors
/// None today; the signature leaves room for checks on the outputs.
pub fn record_custom(
    name: impl Into<String>,
    inputs: &[Tensor],
    outputs: Vec<Tensor>,
    formula: CustomFormula,
) -> Result<Vec<Tensor>> {
    if !is_grad_enabled() || !inputs.iter().any(Tensor::requires_grad) {
        return Ok(outputs);
    }
    let refs: Vec<&Tensor> = inputs.iter().collect();
    // A custom formula is the user's, complex tensors included (as PyTorch's Function).
    node::record_ruled(
        name.into(),
        &refs,
        outputs,
        &[],
        Box::new(move |_saved, grads, needs| formula(grads, needs)),
        Some(complex::Rule::Own),
    )
}

/// A tensor hook: sees the gradient flowing into a tensor and may replace it.
pub type Hook = Arc<dyn Fn(&Tensor) -> Result<Option<Tensor>> + Send + Sync>;

/// What a view of a tensor that requires grad remembers of its base (PyTorch's
/// `DifferentiableViewMeta`).
#[derive(Clone)]
pub(crate) struct ViewInfo {
    /// The base: the tensor the chain of views started from (never itself a view).
    pub base: Tensor,
    /// The base's `grad_fn` when this view's was made: a different one now means the base
    /// was rewritten in place (through this view or another), and this view's `grad_fn` is
    /// regenerated from the base's.
    pub base_fn: Option<usize>,
    /// Made under `no_grad`: an in-place write through it with grad mode on is an error.
    pub made_without_grad: bool,
}

/// The autograd state of one tensor (shared by the clones of its handle).
pub struct AutogradMeta {
    state: Mutex<MetaState>,
    /// This tensor's identity for hooks (`register_hook` handles).
    next_hook: AtomicU64,
}

/// The mutable part of [`AutogradMeta`].
#[derive(Default)]
pub(crate) struct MetaState {
    /// The leaf flag (a tensor with a `grad_fn` requires grad whatever this says).
    pub requires_grad: bool,
    pub grad_fn: Option<Arc<Node>>,
    pub output_nr: usize,
    pub grad: Option<Tensor>,
    pub retains_grad: bool,
    pub hooks: Vec<(u64, Hook)>,
    /// The leaf's accumulator, while any graph holds it.
    pub accumulator: Weak<Node>,
    pub view: Option<ViewInfo>,
}

impl std::fmt::Debug for AutogradMeta {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.lock();
        f.debug_struct("AutogradMeta")
            .field("requires_grad", &s.requires_grad)
            .field("grad_fn", &s.grad_fn)
            .field("output_nr", &s.output_nr)
            .field("has_grad", &s.grad.is_some())
            .finish()
    }
}

impl AutogradMeta {
    pub(crate) fn new(state: MetaState) -> Arc<AutogradMeta> {
        Arc::new(AutogradMeta {
            state: Mutex::new(state),
            next_hook: AtomicU64::new(0),
        })
    }

    /// The state, locked. A panic while it was held (none is expected: no user code runs
    /// under the lock) leaves data that is still consistent, so poisoning is ignored.
    pub(crate) fn lock(&self) -> MutexGuard<'_, MetaState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A tensor's autograd slot: a pointer to its [`AutogradMeta`], null until autograd first
/// touches the tensor; set at most once (later changes go through the metadata's lock), so
/// a reference to the metadata lives as long as the slot.
pub struct GradSlot(AtomicPtr<AutogradMeta>);

// The slot owns one strong count of an `Arc<AutogradMeta>`, which is `Send + Sync`.
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<AutogradMeta>();
};

impl Default for GradSlot {
    fn default() -> Self {
        GradSlot(AtomicPtr::new(std::ptr::null_mut()))
    }
}

impl GradSlot {
    /// The metadata, if any.
    #[inline]
    pub(crate) fn get(&self) -> Option<&AutogradMeta> {
        let p = self.0.load(Ordering::Acquire);
        // SAFETY: a non-null pointer came from `Arc::into_raw` and the slot holds that
        // count until it is dropped (never replaced while shared: `replace` takes `&mut`).
        unsafe { p.as_ref() }
    }

    /// Another counted handle to the metadata, if any.
    pub(crate) fn arc(&self) -> Option<Arc<AutogradMeta>> {
        let p = self.0.load(Ordering::Acquire);
        if p.is_null() {
            return None;
        }
        // SAFETY: as in `get`; the count taken here is the returned `Arc`'s.
        unsafe {
            Arc::increment_strong_count(p);
            Some(Arc::from_raw(p))
        }
    }

    /// The metadata, made with `init` if there is none yet (a concurrent maker's wins).
    pub(crate) fn get_or_init(&self, init: impl FnOnce() -> Arc<AutogradMeta>) -> &AutogradMeta {
        if let Some(m) = self.get() {
            return m;
        }
        let new = Arc::into_raw(init()).cast_mut();
        match self.0.compare_exchange(
            std::ptr::null_mut(),
            new,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            // SAFETY: the slot now owns `new`'s count.
            Ok(_) => unsafe { &*new },
            Err(cur) => {
                // SAFETY: `new` is ours and unshared; `cur` is owned by the slot.
                unsafe {
                    drop(Arc::from_raw(new));
                    &*cur
                }
            }
        }
    }

    /// Replaces the metadata (the slot is not shared: `&mut`).
    pub(crate) fn replace(&mut self, meta: Option<Arc<AutogradMeta>>) {
        let new = meta.map_or(std::ptr::null_mut(), |m| Arc::into_raw(m).cast_mut());
        let old = std::mem::replace(self.0.get_mut(), new);
        if !old.is_null() {
            // SAFETY: the slot owned `old`'s count.
            unsafe { drop(Arc::from_raw(old)) };
        }
    }
}

impl Clone for GradSlot {
    #[inline]
    fn clone(&self) -> Self {
        let p = self.0.load(Ordering::Acquire);
        if !p.is_null() {
            // SAFETY: `p` is a live `Arc` pointer owned by `self`; the new slot owns the
            // count taken here.
            unsafe { Arc::increment_strong_count(p) };
        }
        GradSlot(AtomicPtr::new(p))
    }
}

impl Drop for GradSlot {
    fn drop(&mut self) {
        self.replace(None);
    }
}

impl std::fmt::Debug for GradSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.get().is_some() {
            "GradSlot(set)"
        } else {
            "GradSlot(empty)"
        })
    }
}

/// Whether gradients can flow through a tensor of `dtype`: floating point or complex
/// (`autograd/complex.rs`).
pub(crate) fn differentiable(dtype: DType) -> bool {
    dtype.is_float() || dtype.is_complex()
}

/// PyTorch's text for `requires_grad` on a tensor of another dtype.
const ONLY_FLOAT: &str = "only Tensors of floating point and complex dtype can require gradients";

/// # Autograd
///
/// PyTorch's reverse-mode autograd: a float tensor that requires grad makes the ops on it
/// record a graph; [`backward`](Tensor::backward) sums gradients into the leaves'
/// [`grad`](Tensor::grad). Handles (clones) of one tensor share its autograd state once it
/// exists; an in-place op that first gives a tensor autograd state (`zeros.add_(&w)`)
/// gives it to the handle the op ran on.
///
/// ```
/// use strata::{DType, Tensor};
/// let x = Tensor::from_vec(vec![1.0f64, 2.0, 3.0], &[3])?;
/// x.requires_grad_(true)?;
/// let y = x.mul(&x)?.sum(&[], false)?; // Σ x²
/// y.backward(None, false, false)?;
/// assert_eq!(x.grad().unwrap().to_vec::<f64>()?, vec![2.0, 4.0, 6.0]);
/// # Ok::<(), strata::Error>(())
/// ```
impl Tensor {
    /// Whether gradients flow to this tensor: a leaf marked with
    /// [`requires_grad_`](Self::requires_grad_), or the result of an op on one (recorded
    /// with grad mode on).
    #[inline]
    pub fn requires_grad(&self) -> bool {
        match self.grad.get() {
            None => false,
            Some(m) => {
                let s = m.lock();
                s.requires_grad || s.grad_fn.is_some() || s.view.is_some()
            }
        }
    }

    /// Marks a leaf as requiring grad (or not) and returns it.
    ///
    /// # Errors
    /// PyTorch's: a dtype neither floating point nor complex ("only Tensors of floating
    /// point and complex dtype can require gradients"); turning it off on a non-leaf.
    pub fn requires_grad_(&self, requires_grad: bool) -> Result<&Self> {
        if requires_grad && !differentiable(self.dtype()) {
            return Err(Error::autograd(ONLY_FLOAT));
        }
        if !requires_grad && self.grad.get().is_none() {
            return Ok(self);
        }
        let meta = self
            .grad
            .get_or_init(|| AutogradMeta::new(MetaState::default()));
        let mut s = meta.lock();
        if s.grad_fn.is_some() || s.view.is_some() {
            if !requires_grad {
                return Err(Error::autograd("you can only change requires_grad flags of leaf variables. If you want to use a computed variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach()."));
            }
            return Ok(self);
        }
        s.requires_grad = requires_grad;
        Ok(self)
    }

    /// Whether this is a leaf of the graph: made by the user rather than by an op on a
    /// tensor that requires grad (every tensor that does not require grad is a leaf).
    pub fn is_leaf(&self) -> bool {
        self.grad_fn().is_none()
    }

    /// The node that made this tensor (PyTorch's `grad_fn`), `None` for a leaf. For a view
    /// whose base was since written in place, the node is regenerated from the base's.
    pub fn grad_fn(&self) -> Option<Arc<Node>> {
        let meta = self.grad.get()?;
        views::refresh_view_fn(self, meta);
        meta.lock().grad_fn.clone()
    }

    /// Which output of [`grad_fn`](Self::grad_fn) this tensor is.
    pub fn output_nr(&self) -> usize {
        self.grad.get().map_or(0, |m| m.lock().output_nr)
    }

    /// The gradient accumulated by backward passes (leaves, and tensors marked with
    /// [`retain_grad`](Self::retain_grad)).
    pub fn grad(&self) -> Option<Tensor> {
        self.grad.get()?.lock().grad.clone()
    }

    /// Sets (or clears) the accumulated gradient.
    ///
    /// # Errors
    /// A gradient of another shape or dtype (PyTorch's "assigned grad has data of a
    /// different size/type").
    pub fn set_grad(&self, grad: Option<Tensor>) -> Result<()> {
        if let Some(g) = &grad {
            if g.shape() != self.shape() {
                return Err(Error::autograd(
                    "assigned grad has data of a different size",
                ));
            }
            if g.dtype() != self.dtype() {
                return Err(Error::autograd(
                    "assigned grad has data of a different type",
                ));
            }
            if g.device() != self.device() {
                return Err(Error::autograd(
                    "assigned grad has data located on a different device",
                ));
            }
        }
        if grad.is_none() && self.grad.get().is_none() {
            return Ok(());
        }
        let meta = self
            .grad
            .get_or_init(|| AutogradMeta::new(MetaState::default()));
        meta.lock().grad = grad;
        Ok(())
    }

    /// Keeps the gradient of a non-leaf in [`grad`](Self::grad) during backward (leaves
    /// keep theirs anyway).
    ///
    /// # Errors
    /// A tensor that does not require grad (PyTorch's text).
    pub fn retain_grad(&self) -> Result<()> {
        if !self.requires_grad() {
            return Err(Error::autograd(
                "can't retain_grad on Tensor that has requires_grad=False",
            ));
        }
        let Some(node) = self.grad_fn() else {
            return Ok(());
        };
        let meta = self.grad.arc().expect("requires_grad implies metadata");
        let mut s = meta.lock();
        if !s.retains_grad {
            s.retains_grad = true;
            drop(s);
            node.watch(Arc::downgrade(&meta));
        }
        Ok(())
    }

    /// Whether [`retain_grad`](Self::retain_grad) was called on this non-leaf.
    pub fn retains_grad(&self) -> bool {
        self.grad.get().is_some_and(|m| m.lock().retains_grad)
    }

    /// The same view with no autograd history: it does not require grad, and shares the
    /// storage (and so the version counter) with this tensor.
    pub fn detach(&self) -> Tensor {
        let mut t = self.clone();
        t.grad.replace(None);
        t
    }

    /// Detaches this tensor in place: it becomes a leaf that does not require grad.
    ///
    /// # Errors
    /// A view of a tensor that requires grad (PyTorch's: "Can't detach views in-place.
    /// Use detach() instead.").
    pub fn detach_(&self) -> Result<&Self> {
        if let Some(m) = self.grad.get() {
            let mut s = m.lock();
            if s.view.is_some() {
                return Err(Error::autograd("Can't detach views in-place. Use detach() instead. If you are using DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set as True, gradients are views of DDP buckets, and hence detach_() cannot be called on these gradients. To fix this error, please refer to the Optimizer.zero_grad() function in torch/optim/optimizer.py as the solution."));
            }
            s.grad_fn = None;
            s.output_nr = 0;
            s.requires_grad = false;
        }
        Ok(self)
    }

    /// Registers a hook run with the gradient flowing into this tensor during backward; it
    /// may return a replacement. Returns the handle's id for
    /// [`remove_hook`](Self::remove_hook).
    ///
    /// # Errors
    /// A tensor that does not require grad (PyTorch's text).
    pub fn register_hook(&self, hook: Hook) -> Result<u64> {
        if !self.requires_grad() {
            return Err(Error::autograd(
                "cannot register a hook on a tensor that doesn't require gradient",
            ));
        }
        let node = self.grad_fn();
        let meta = self.grad.arc().expect("requires_grad implies metadata");
        let id = meta.next_hook.fetch_add(1, Ordering::Relaxed);
        meta.lock().hooks.push((id, hook));
        if let Some(node) = node {
            node.watch(Arc::downgrade(&meta));
        }
        Ok(id)
    }

    /// Removes the hook `id` ([`register_hook`](Self::register_hook)); true if it was there.
    pub fn remove_hook(&self, id: u64) -> bool {
        let Some(m) = self.grad.get() else {
            return false;
        };
        let mut s = m.lock();
        let before = s.hooks.len();
        s.hooks.retain(|(i, _)| *i != id);
        s.hooks.len() != before
    }

    /// Computes the gradient of this tensor with respect to the graph's leaves and adds it
    /// to their [`grad`](Self::grad). `gradient` is the gradient of some scalar with respect
    /// to this tensor (it may be omitted for a one-element tensor: ones).
    ///
    /// With `retain_graph` the saved tensors are kept for another backward; with
    /// `create_graph` the backward pass itself is recorded (higher-order derivatives).
    ///
    /// # Errors
    /// PyTorch's: a tensor that does not require grad, a non-scalar without `gradient`, a
    /// second backward through freed saved tensors, a saved tensor written in place since.
    pub fn backward(
        &self,
        gradient: Option<&Tensor>,
        retain_graph: bool,
        create_graph: bool,
    ) -> Result<()> {
        engine::backward(
            std::slice::from_ref(self),
            &[gradient.cloned()],
            retain_graph || create_graph,
            create_graph,
        )
    }

    /// Gives this handle the autograd state that an in-place op gave `clone`, another
    /// handle to the same view, when this one had none (a binding that ran the op on a
    /// clone of its tensor calls this; handles share autograd state only once it exists).
    #[doc(hidden)]
    pub fn adopt_autograd(&self, clone: &Tensor) {
        if self.grad.get().is_none() {
            if let Some(m) = clone.grad.arc() {
                self.grad.get_or_init(|| m);
            }
        }
    }

    /// Gives this tensor — an input that a custom function wrote in place (PyTorch's
    /// `mark_dirty`) — the history of `recorded`, the function's output over the same
    /// data: its `grad_fn` becomes the function's node, as an in-place op's would. A view
    /// of a tensor that tracks gradients is refused (the base's history would need
    /// rewriting too), and so is a view of one that does not (as for in-place ops).
    ///
    /// # Errors
    /// The two refusals above.
    #[doc(hidden)]
    pub fn take_history_of(&self, recorded: &Tensor) -> Result<()> {
        let Some(src) = recorded.grad.get() else {
            return Ok(());
        };
        let (grad_fn, output_nr) = {
            let s = src.lock();
            (s.grad_fn.clone(), s.output_nr)
        };
        match self.grad.get() {
            Some(m) => {
                let mut s = m.lock();
                if s.view.as_ref().is_some_and(|v| !v.made_without_grad) {
                    return Err(Error::autograd(
                        "a custom Function marked dirty a view of a tensor that requires grad; this is not supported: write the base in place, or pass a clone of the view",
                    ));
                }
                s.grad_fn = grad_fn;
                s.output_nr = output_nr;
            }
            None if !inplace::covers_storage(self) => {
                return Err(Error::autograd(inplace::UNTRACKED_VIEW));
            }
            None => {
                self.grad.get_or_init(|| {
                    AutogradMeta::new(MetaState {
                        grad_fn,
                        output_nr,
                        ..Default::default()
                    })
                });
            }
        }
        Ok(())
    }

    /// The edge a gradient for this tensor flows along: its `grad_fn` and output number, a
    /// leaf's accumulator, or none when it does not require grad.
    pub(crate) fn grad_edge(&self) -> Edge {
        let Some(meta) = self.grad.get() else {
            return Edge::none();
        };
        views::refresh_view_fn(self, meta);
        let mut s = meta.lock();
        if let Some(f) = &s.grad_fn {
            return Edge::new(f.clone(), s.output_nr);
        }
        if !s.requires_grad {
            return Edge::none();
        }
        if let Some(acc) = s.accumulator.upgrade() {
            return Edge::new(acc, 0);
        }
        let acc = Node::accumulator(self.grad.arc().expect("metadata present"), self);
        s.accumulator = Arc::downgrade(&acc);
        Edge::new(acc, 0)
    }
}
