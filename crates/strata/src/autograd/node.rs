//! Graph nodes: what an op records for its backward, and how an op records it.

use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use super::{is_grad_enabled, AutogradMeta, MetaState};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::storage::Device;
use crate::tensor::Tensor;

/// Where a gradient goes: input `input_nr` of `node` (none: nowhere, the input does not
/// require grad).
#[derive(Clone, Debug)]
pub struct Edge {
    /// The node, if any.
    pub node: Option<Arc<Node>>,
    /// Which of the node's forward outputs the gradient is for.
    pub input_nr: usize,
}

impl Edge {
    pub(crate) fn new(node: Arc<Node>, input_nr: usize) -> Edge {
        Edge {
            node: Some(node),
            input_nr,
        }
    }

    pub(crate) fn none() -> Edge {
        Edge {
            node: None,
            input_nr: 0,
        }
    }
}

/// The shape, dtype and device of a tensor a node sends a gradient to or receives one for
/// (to check formulas' results and to make zero gradients).
#[derive(Clone, Debug)]
pub(crate) struct TensorInfo {
    pub shape: Vec<usize>,
    pub dtype: DType,
    pub device: Device,
}

impl TensorInfo {
    pub(crate) fn of(t: &Tensor) -> TensorInfo {
        TensorInfo {
            shape: t.shape().to_vec(),
            dtype: t.dtype(),
            device: t.device(),
        }
    }

    pub(crate) fn zeros(&self) -> Result<Tensor> {
        Tensor::zeros_on(&self.shape, self.dtype, self.device)
    }
}

/// A backward formula: from the saved tensors and the gradients of the op's outputs (one
/// per output, zeros where none arrived), the gradient of each input (`None`: not needed
/// or zero). `needs[i]` says whether input `i` wants one.
pub(crate) type Formula =
    Box<dyn Fn(&[Tensor], &[Tensor], &[bool]) -> Result<Vec<Option<Tensor>>> + Send + Sync>;

/// A tensor a node keeps for its formula, with the version it had.
pub(crate) struct SavedTensor {
    /// The data, without history (an output's history would be a cycle).
    data: Tensor,
    version: u64,
    /// An input's full handle (history included, for double backward), or an output's node
    /// and number.
    origin: Origin,
    /// `"output 0 of MulBackward0"` when the tensor had a `grad_fn` (for the message).
    made_by: Option<String>,
}

enum Origin {
    Input(Tensor),
    Output(Weak<Node>, usize),
}

enum Kind {
    /// An op's backward.
    Formula(Formula),
    /// A leaf's gradient accumulator.
    Accumulate(Arc<AutogradMeta>),
}

/// The saved tensors, until they are freed by a backward without `retain_graph`.
struct Saved {
    tensors: Vec<SavedTensor>,
    released: bool,
    /// Whether the node kept any tensor (its own or its wrapped in-place op's).
    had_saved: bool,
}

/// A node of the graph (PyTorch's `grad_fn`): an op's backward, or a leaf's accumulator.
pub struct Node {
    name: Cow<'static, str>,
    /// Creation order: the engine runs later nodes first when several are ready.
    pub(crate) seq: u64,
    /// One edge per differentiable input of the forward op.
    pub(crate) next: Vec<Edge>,
    /// The inputs' shapes and dtypes (a formula's results are checked against them).
    pub(crate) inputs: Vec<TensorInfo>,
    /// The forward outputs' shapes and dtypes (missing gradients are zeros of these).
    pub(crate) outputs: Vec<TensorInfo>,
    kind: Kind,
    saved: Mutex<Saved>,
    /// Tensors made by this node with hooks or `retain_grad` (weak: they may die first).
    watchers: Mutex<Vec<Weak<AutogradMeta>>>,
    /// The node of the in-place op a CopySlices node routes gradients through (freed with
    /// it).
    wrapped: Option<Arc<Node>>,
}

static SEQ: AtomicU64 = AtomicU64::new(0);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "<{} object>", self.name)
    }
}

impl Node {
    /// The node's name (`"MulBackward0"`, `"AccumulateGrad"`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The nodes the gradients go to, one per input of the forward op (PyTorch's
    /// `next_functions`).
    pub fn next_functions(&self) -> &[Edge] {
        &self.next
    }

    /// For an accumulator: the leaf tensor's metadata (PyTorch's `AccumulateGrad.variable`).
    pub(crate) fn leaf(&self) -> Option<&Arc<AutogradMeta>> {
        match &self.kind {
            Kind::Accumulate(m) => Some(m),
            Kind::Formula(_) => None,
        }
    }

    /// A leaf's accumulator.
    pub(crate) fn accumulator(meta: Arc<AutogradMeta>, leaf: &Tensor) -> Arc<Node> {
        Arc::new(Node {
            name: Cow::Borrowed("AccumulateGrad"),
            seq: SEQ.fetch_add(1, Ordering::Relaxed),
            next: Vec::new(),
            inputs: Vec::new(),
            outputs: vec![TensorInfo::of(leaf)],
            kind: Kind::Accumulate(meta),
            saved: Mutex::new(Saved {
                tensors: Vec::new(),
                released: false,
                had_saved: false,
            }),
            watchers: Mutex::new(Vec::new()),
            wrapped: None,
        })
    }

    /// Adds a tensor whose hooks or `retain_grad` the engine runs on this node's gradient.
    pub(crate) fn watch(&self, meta: Weak<AutogradMeta>) {
        let mut w = lock(&self.watchers);
        w.retain(|m| m.strong_count() > 0);
        if !w.iter().any(|m| m.ptr_eq(&meta)) {
            w.push(meta);
        }
    }

    /// The watched tensors still alive.
    pub(crate) fn watchers(&self) -> Vec<Arc<AutogradMeta>> {
        lock(&self.watchers)
            .iter()
            .filter_map(Weak::upgrade)
            .collect()
    }

    /// Frees the saved tensors (after a backward without `retain_graph`).
    pub(crate) fn release(&self) {
        let mut s = lock(&self.saved);
        s.tensors.clear();
        s.released = true;
        drop(s);
        if let Some(w) = &self.wrapped {
            w.release();
        }
    }

    /// Runs the formula on `grads` (one per output). With `keep_history` the saved tensors
    /// come back with their graph (for `create_graph`).
    pub(crate) fn apply(
        &self,
        grads: &[Tensor],
        needs: &[bool],
        keep_history: bool,
    ) -> Result<Vec<Option<Tensor>>> {
        let Kind::Formula(f) = &self.kind else {
            return Ok(Vec::new());
        };
        let saved = {
            let s = lock(&self.saved);
            // As PyTorch: only a node that kept tensors refuses a second pass (an add
            // kept nothing and can run again).
            if s.released && s.had_saved {
                return Err(Error::autograd(SECOND_BACKWARD));
            }
            s.tensors
                .iter()
                .map(|t| t.unpack(keep_history))
                .collect::<Result<Vec<_>>>()?
        };
        f(&saved, grads, needs)
    }
}

/// PyTorch's text for a backward through freed saved tensors.
pub(crate) const SECOND_BACKWARD: &str = "Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if you need to access saved tensors after calling backward.";

/// PyTorch's name of a tensor type in messages (`torch.FloatTensor`).
pub(crate) fn type_name(dtype: DType) -> &'static str {
    match dtype {
        DType::F32 => "strata.FloatTensor",
        DType::F64 => "strata.DoubleTensor",
        DType::F16 => "strata.HalfTensor",
        DType::BF16 => "strata.BFloat16Tensor",
        DType::I64 => "strata.LongTensor",
        DType::I32 => "strata.IntTensor",
        DType::I16 => "strata.ShortTensor",
        DType::I8 => "strata.CharTensor",
        DType::U8 => "strata.ByteTensor",
        DType::Bool => "strata.BoolTensor",
        _ => "strata.Tensor",
    }
}

impl SavedTensor {
    fn unpack(&self, keep_history: bool) -> Result<Tensor> {
        let now = self.data.version();
        if now != self.version {
            let which = match &self.made_by {
                Some(m) => format!(", which is {m},"),
                None => String::new(),
            };
            return Err(Error::autograd(format!(
                "one of the variables needed for gradient computation has been modified by an inplace operation: [{} {}]{} is at version {}; expected version {} instead. Hint: the backtrace further above shows the operation that failed to compute its gradient. The variable in question was changed in there or anywhere later. Good luck!",
                type_name(self.data.dtype()),
                crate::error::list(self.data.shape()),
                which,
                now,
                self.version
            )));
        }
        if !keep_history {
            return Ok(self.data.clone());
        }
        Ok(match &self.origin {
            Origin::Input(t) => t.clone(),
            Origin::Output(node, nr) => match node.upgrade() {
                Some(node) => {
                    let t = self.data.clone();
                    t.grad.get_or_init(|| {
                        AutogradMeta::new(MetaState {
                            grad_fn: Some(node),
                            output_nr: *nr,
                            ..Default::default()
                        })
                    });
                    t
                }
                None => self.data.clone(),
            },
        })
    }
}

/// What an op saves for its formula: one of its inputs (by reference) or one of its
/// outputs (by number).
pub(crate) enum Save<'a> {
    Input(&'a Tensor),
    Output(usize),
}

/// Whether an op on `inputs` records a graph: grad mode is on and some input requires
/// grad. Costs one pointer load per input when none has autograd metadata.
#[inline]
pub(crate) fn needs_grad(inputs: &[&Tensor]) -> bool {
    inputs.iter().any(|t| t.grad.get().is_some())
        && is_grad_enabled()
        && inputs.iter().any(|t| t.requires_grad())
}

fn made_by(t: &Tensor) -> Option<String> {
    let m = t.grad.get()?;
    let s = m.lock();
    s.grad_fn
        .as_ref()
        .map(|f| format!("output {} of {}", s.output_nr, f.name()))
}

/// Builds the node of an op on `inputs` that made `outputs` (edges taken now, from the
/// inputs' current history), keeping the tensors of `saves`.
pub(crate) fn build(
    name: impl Into<Cow<'static, str>>,
    inputs: &[&Tensor],
    outputs: &[&Tensor],
    saves: &[Save<'_>],
    formula: Formula,
    wrapped: Option<Arc<Node>>,
    rule: Option<super::complex::Rule>,
) -> Arc<Node> {
    let name = name.into();
    let next: Vec<Edge> = inputs.iter().map(|t| t.grad_edge()).collect();
    let infos: Vec<TensorInfo> = inputs.iter().map(|t| TensorInfo::of(t)).collect();
    let out_infos: Vec<TensorInfo> = outputs.iter().map(|t| TensorInfo::of(t)).collect();
    let formula = super::complex::adapt(&name, &infos, &out_infos, rule, formula);
    let node = Arc::new_cyclic(|weak: &Weak<Node>| {
        let tensors = saves
            .iter()
            .map(|s| match s {
                Save::Input(t) => SavedTensor {
                    data: t.detach(),
                    version: t.version(),
                    made_by: made_by(t),
                    origin: Origin::Input((*t).clone()),
                },
                Save::Output(i) => SavedTensor {
                    data: outputs[*i].detach(),
                    version: outputs[*i].version(),
                    made_by: None,
                    origin: Origin::Output(weak.clone(), *i),
                },
            })
            .collect::<Vec<SavedTensor>>();
        let had_saved =
            !tensors.is_empty() || wrapped.as_ref().is_some_and(|w| lock(&w.saved).had_saved);
        Node {
            name,
            seq: SEQ.fetch_add(1, Ordering::Relaxed),
            next,
            inputs: infos,
            outputs: out_infos,
            kind: Kind::Formula(formula),
            saved: Mutex::new(Saved {
                tensors,
                released: false,
                had_saved,
            }),
            watchers: Mutex::new(Vec::new()),
            wrapped,
        }
    });
    // An output's "made by" names this node (known only now).
    {
        let mut s = lock(&node.saved);
        for t in &mut s.tensors {
            if let Origin::Output(_, i) = t.origin {
                t.made_by = Some(format!("output {i} of {}", node.name()));
            }
        }
    }
    node
}

/// Records the op that made `outputs` from `inputs` (call only when [`needs_grad`]): a
/// node named `name` with an edge per input, the tensors of `saves`, and `formula`. The
/// outputs that can carry gradients (float dtypes) become its outputs; returns them.
pub(crate) fn record(
    name: impl Into<Cow<'static, str>>,
    inputs: &[&Tensor],
    outputs: Vec<Tensor>,
    saves: &[Save<'_>],
    formula: Formula,
) -> Result<Vec<Tensor>> {
    record_ruled(name, inputs, outputs, saves, formula, None)
}

/// [`record`] with the node's complex rule given (`None`: the one of its name; see
/// `autograd/complex.rs`).
pub(crate) fn record_ruled(
    name: impl Into<Cow<'static, str>>,
    inputs: &[&Tensor],
    mut outputs: Vec<Tensor>,
    saves: &[Save<'_>],
    formula: Formula,
    rule: Option<super::complex::Rule>,
) -> Result<Vec<Tensor>> {
    for o in &mut outputs {
        o.grad.replace(None);
    }
    let node = {
        let outs: Vec<&Tensor> = outputs.iter().collect();
        build(name, inputs, &outs, saves, formula, None, rule)
    };
    for (i, o) in outputs.iter_mut().enumerate() {
        if super::differentiable(o.dtype()) {
            o.grad.replace(Some(AutogradMeta::new(MetaState {
                grad_fn: Some(node.clone()),
                output_nr: i,
                ..Default::default()
            })));
        }
    }
    Ok(outputs)
}

/// [`record`] for an op with one output.
pub(crate) fn record1(
    name: impl Into<Cow<'static, str>>,
    inputs: &[&Tensor],
    output: Tensor,
    saves: &[Save<'_>],
    formula: Formula,
) -> Result<Tensor> {
    let mut v = record(name, inputs, vec![output], saves, formula)?;
    Ok(v.pop().expect("one output"))
}
