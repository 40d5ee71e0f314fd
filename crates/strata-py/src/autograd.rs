//! Autograd for Python: the tensor's autograd attributes, graph nodes as `grad_fn`
//! objects, the engine's entry points, Python hooks and custom `Function` nodes. The
//! graph and the engine are the Rust core's (`strata::autograd`); `strata/autograd.py`
//! builds the Python API (context managers, `Function`, `gradcheck`) on these.

use std::cell::RefCell;
use std::sync::Arc;

use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use strata::autograd::{self, Edge, Hook, Node};
use strata::{Error, Tensor};

use crate::errors::IntoPy;
use crate::tensor::PyTensor;

thread_local! {
    /// The Python exception a hook or a custom backward raised during the current backward
    /// pass: re-raised as is when the pass fails because of it.
    static PENDING: RefCell<Option<PyErr>> = const { RefCell::new(None) };
}

/// A Python error inside the engine: kept aside, to be re-raised by [`engine_result`].
fn stash(e: PyErr) -> Error {
    let msg = Python::attach(|py| e.value(py).to_string());
    PENDING.with(|p| *p.borrow_mut() = Some(e));
    Error::Autograd { msg }
}

/// The result of an engine call, with a Python exception raised inside it re-raised.
fn engine_result<T>(r: strata::Result<T>) -> PyResult<T> {
    let pending = PENDING.with(|p| p.borrow_mut().take());
    match (r, pending) {
        (Err(_), Some(e)) => Err(e),
        (r, _) => r.py(),
    }
}

/// A graph node (a tensor's `grad_fn`).
#[pyclass(name = "Node", module = "strata.autograd", frozen)]
#[derive(Debug)]
pub struct PyNode {
    pub node: Arc<Node>,
}

fn node_obj(py: Python<'_>, n: Option<Arc<Node>>) -> PyResult<Py<PyAny>> {
    match n {
        Some(node) => Ok(Py::new(py, PyNode { node })?.into_any()),
        None => Ok(py.None()),
    }
}

#[pymethods]
impl PyNode {
    /// The node's name (`MulBackward0`, `AccumulateGrad`).
    fn name(&self) -> String {
        self.node.name().to_string()
    }

    /// `((node, input_nr), ...)`, one per input of the forward op (`None` where that input
    /// does not require grad).
    #[getter]
    fn next_functions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let items = self
            .node
            .next_functions()
            .iter()
            .map(|e: &Edge| -> PyResult<Bound<'py, PyTuple>> {
                PyTuple::new(
                    py,
                    [
                        node_obj(py, e.node.clone())?,
                        e.input_nr.into_pyobject(py)?.into_any().unbind(),
                    ],
                )
            })
            .collect::<PyResult<Vec<_>>>()?;
        PyTuple::new(py, items)
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<PyNode>()
            .is_ok_and(|o| Arc::ptr_eq(&o.get().node, &self.node))
    }

    fn __hash__(&self) -> isize {
        Arc::as_ptr(&self.node) as isize
    }

    fn __repr__(&self) -> String {
        format!(
            "<{} object at {:#x}>",
            self.node.name(),
            Arc::as_ptr(&self.node) as usize
        )
    }
}

/// A Python callable as a tensor hook.
fn py_hook(f: Py<PyAny>) -> Hook {
    Arc::new(move |g: &Tensor| {
        Python::attach(|py| {
            let r = f.call1(py, (PyTensor::wrap(g.clone()),)).map_err(stash)?;
            if r.is_none(py) {
                return Ok(None);
            }
            match r.bind(py).cast::<PyTensor>() {
                Ok(t) => Ok(Some(t.get().inner().clone())),
                Err(_) => Err(stash(PyTypeError::new_err(
                    "a tensor hook must return None or a Tensor",
                ))),
            }
        })
    })
}

/// The handle `register_hook` returns.
#[pyclass(name = "RemovableHandle", module = "strata.autograd")]
#[derive(Debug)]
pub struct PyHookHandle {
    tensor: Tensor,
    id: u64,
}

#[pymethods]
impl PyHookHandle {
    /// Removes the hook.
    fn remove(&self) {
        self.tensor.remove_hook(self.id);
    }
}

fn opt_tensor(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Tensor>> {
    match obj {
        None => Ok(None),
        Some(o) if o.is_none() => Ok(None),
        Some(o) => crate::tensor::tensor_arg(o).map(Some),
    }
}

fn tensors(obj: &Bound<'_, PyAny>) -> PyResult<Vec<Tensor>> {
    if let Ok(t) = obj.cast::<PyTensor>() {
        return Ok(vec![t.get().inner().clone()]);
    }
    obj.try_iter()?
        .map(|o| crate::tensor::tensor_arg(&o?))
        .collect()
}

#[pymethods]
impl PyTensor {
    /// Whether gradients flow to this tensor.
    #[getter]
    fn get_requires_grad(&self) -> bool {
        self.inner().requires_grad()
    }

    #[setter]
    fn set_requires_grad(&self, value: bool) -> PyResult<()> {
        self.inner().requires_grad_(value).py().map(|_| ())
    }

    /// Marks this leaf as requiring grad (or not); returns it.
    #[pyo3(signature = (requires_grad=true))]
    fn requires_grad_(slf: PyRef<'_, Self>, requires_grad: bool) -> PyResult<PyRef<'_, Self>> {
        slf.inner().requires_grad_(requires_grad).py()?;
        Ok(slf)
    }

    /// The gradient accumulated by backward passes.
    #[getter]
    fn get_grad(&self) -> Option<PyTensor> {
        self.inner().grad().map(PyTensor::wrap)
    }

    #[setter]
    fn set_grad(&self, value: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let g = opt_tensor(value)?;
        self.inner().set_grad(g).py()
    }

    /// The node that made this tensor (`None` for a leaf).
    #[getter]
    fn grad_fn(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        node_obj(py, self.inner().grad_fn())
    }

    /// Whether this tensor is a leaf of the graph.
    #[getter]
    fn is_leaf(&self) -> bool {
        self.inner().is_leaf()
    }

    /// Which output of `grad_fn` this tensor is.
    #[getter]
    fn output_nr(&self) -> usize {
        self.inner().output_nr()
    }

    /// Whether `retain_grad()` was called on this non-leaf.
    #[getter]
    fn retains_grad(&self) -> bool {
        self.inner().retains_grad()
    }

    /// Keeps this non-leaf's gradient in `.grad` during backward.
    fn retain_grad(&self) -> PyResult<()> {
        self.inner().retain_grad().py()
    }

    /// The same view without history (shares the storage and the version counter).
    fn detach(&self) -> PyTensor {
        PyTensor::wrap(self.inner().detach())
    }

    /// Detaches in place: a leaf that does not require grad.
    fn detach_(slf: PyRef<'_, Self>) -> PyResult<PyRef<'_, Self>> {
        slf.inner().detach_().py()?;
        Ok(slf)
    }

    /// Registers `hook(grad)`, run with this tensor's gradient during backward; it may
    /// return a replacement. Returns a handle with `remove()`.
    fn register_hook(&self, hook: Py<PyAny>) -> PyResult<PyHookHandle> {
        let id = self.inner().register_hook(py_hook(hook)).py()?;
        Ok(PyHookHandle {
            tensor: self.inner().clone(),
            id,
        })
    }

    /// Computes the gradient of this tensor with respect to the graph's leaves and adds it
    /// to their `.grad`.
    #[pyo3(signature = (gradient=None, retain_graph=None, create_graph=false, inputs=None))]
    fn backward(
        &self,
        gradient: Option<&Bound<'_, PyAny>>,
        retain_graph: Option<bool>,
        create_graph: bool,
        inputs: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let g = opt_tensor(gradient)?;
        let retain = retain_graph.unwrap_or(create_graph);
        if let Some(inputs) = inputs {
            // Accumulate only into `inputs`: their gradients, added to `.grad`.
            let ins = tensors(inputs)?;
            let got = engine_result(autograd::grad(
                std::slice::from_ref(self.inner()),
                &ins,
                &[g],
                Some(retain),
                create_graph,
                true,
            ))?;
            for (t, g) in ins.iter().zip(got) {
                if let Some(g) = g {
                    let new = match t.grad() {
                        Some(old) => old.add(&g).py()?,
                        None => g.detach().contiguous_copy().py()?,
                    };
                    t.set_grad(Some(new)).py()?;
                }
            }
            return Ok(());
        }
        engine_result(self.inner().backward(g.as_ref(), retain, create_graph))
    }
}

/// `torch.autograd.grad`.
#[pyfunction]
#[pyo3(name = "_grad", signature = (outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=false, allow_unused=false))]
fn grad(
    py: Python<'_>,
    outputs: &Bound<'_, PyAny>,
    inputs: &Bound<'_, PyAny>,
    grad_outputs: Option<&Bound<'_, PyAny>>,
    retain_graph: Option<bool>,
    create_graph: bool,
    allow_unused: bool,
) -> PyResult<Py<PyTuple>> {
    let outs = tensors(outputs)?;
    let ins = tensors(inputs)?;
    let gos: Vec<Option<Tensor>> = match grad_outputs {
        None => Vec::new(),
        Some(g) if g.is_none() => Vec::new(),
        Some(g) => {
            if let Ok(t) = g.cast::<PyTensor>() {
                vec![Some(t.get().inner().clone())]
            } else {
                g.try_iter()?
                    .map(|o| opt_tensor(Some(&o?)))
                    .collect::<PyResult<_>>()?
            }
        }
    };
    let got = engine_result(autograd::grad(
        &outs,
        &ins,
        &gos,
        retain_graph,
        create_graph,
        allow_unused,
    ))?;
    let items = got
        .into_iter()
        .map(|g| match g {
            Some(t) => Ok(Py::new(py, PyTensor::wrap(t))?.into_any()),
            None => Ok(py.None()),
        })
        .collect::<PyResult<Vec<_>>>()?;
    Ok(PyTuple::new(py, items)?.unbind())
}

/// Sets this thread's grad mode; returns the previous one.
#[pyfunction]
#[pyo3(name = "_set_grad_enabled")]
fn set_grad_enabled(enabled: bool) -> bool {
    let prev = autograd::is_grad_enabled();
    // The guard restores on drop; keep the new mode by forgetting it (the Python context
    // managers restore the previous mode themselves).
    std::mem::forget(autograd::set_grad_enabled(enabled));
    prev
}

/// This thread's grad mode.
#[pyfunction]
#[pyo3(name = "is_grad_enabled")]
fn is_grad_enabled() -> bool {
    autograd::is_grad_enabled()
}

/// Records a custom `Function`'s application: `outputs` (made from `inputs` by its
/// forward, under no_grad) become the outputs of a node named `name` whose formula is the
/// Python callable `backward(*grads) -> tuple`. Returns the outputs with their history.
#[pyfunction]
#[pyo3(name = "_record_function")]
fn record_function(
    py: Python<'_>,
    name: String,
    inputs: &Bound<'_, PyList>,
    outputs: &Bound<'_, PyList>,
    backward: Py<PyAny>,
) -> PyResult<Py<PyList>> {
    let ins = tensors(inputs)?;
    let outs = tensors(outputs)?;
    let n_in = ins.len();
    let formula: strata::autograd::CustomFormula = Box::new(
        move |grads: &[Tensor], needs: &[bool]| {
            Python::attach(|py| {
                let gs = grads
                    .iter()
                    .map(|g| Py::new(py, PyTensor::wrap(g.clone())))
                    .collect::<PyResult<Vec<_>>>()
                    .map_err(stash)?;
                let needs_t = PyTuple::new(py, needs).map_err(stash)?;
                let r = backward
                    .call1(py, (PyTuple::new(py, gs).map_err(stash)?, needs_t))
                    .map_err(stash)?;
                let r = r.bind(py);
                let items: Vec<Bound<'_, PyAny>> = match r.cast::<PyTuple>() {
                    Ok(t) => t.iter().collect(),
                    Err(_) => vec![r.clone()],
                };
                if items.len() < n_in {
                    return Err(stash(PyRuntimeError::new_err(format!(
                    "function backward returned an incorrect number of gradients (expected {n_in}, got {})",
                    items.len()
                ))));
                }
                items
                    .iter()
                    .take(n_in)
                    .map(|o| opt_tensor(Some(o)).map_err(stash))
                    .collect()
            })
        },
    );
    let outs = strata::autograd::record_custom(name, &ins, outs, formula).py()?;
    let list = PyList::empty(py);
    for t in outs {
        list.append(Py::new(py, PyTensor::wrap(t))?)?;
    }
    Ok(list.unbind())
}

/// `_take_history(dirty, recorded)`: the input `dirty`, written in place by a custom
/// `Function` (`mark_dirty`), takes the history of `recorded`, the function's output over
/// the same data, so `apply` can return the input object itself (PyTorch's rule).
#[pyfunction]
#[pyo3(name = "_take_history")]
fn take_history(dirty: &PyTensor, recorded: &PyTensor) -> PyResult<()> {
    dirty.inner().take_history_of(recorded.inner()).py()
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(take_history, m)?)?;
    m.add_class::<PyNode>()?;
    m.add_class::<PyHookHandle>()?;
    m.add_function(wrap_pyfunction!(grad, m)?)?;
    m.add_function(wrap_pyfunction!(set_grad_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(is_grad_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(record_function, m)?)?;
    Ok(())
}
