//! `strata.Tensor`: the Python face of [`strata::Tensor`] — metadata, views, indexing and
//! conversions. Engine ops are in `ops.rs`, NumPy exchange in `buffer.rs`.

use std::sync::atomic::{AtomicPtr, Ordering};

use pyo3::ffi;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyAny, PyEllipsis, PyInt, PyList, PySlice, PyTuple};
use pyo3::{PyTraverseError, PyVisit};
use strata::{DType, ErrorKind, Scalar, Tensor, TensorIndex, ViewOp};

use crate::convert::{
    as_scalar, elements, index_arg, int_args, int_list, nest, scalar_to_py, sizes, Ints,
};
use crate::dtype::{parse_dtype, PyDType};
use crate::errors::{err, IntoPy};

/// A strided view over shared storage, with PyTorch's API.
///
/// The object is frozen (its methods borrow the view, `&Tensor`, without a borrow flag to
/// count: a good part of a small op's per-call cost), yet `set_` must change the view every
/// Python reference to the object sees. So the view the object was made with is `made`,
/// and each `set_` pushes a new view onto `set`, a list that only grows while the object
/// lives: a `&Tensor` some frame took before (one suspended in a Python callback, or
/// running with the GIL released) stays valid, and reads the view it started with. The
/// views a `set_` replaced, and their storages, are freed with the object.
#[pyclass(name = "Tensor", module = "strata", frozen, weakref, subclass)]
pub struct PyTensor {
    made: Tensor,
    set: AtomicPtr<SetView>,
}

/// A view `set_` gave a `Tensor` object, and the one before it (null: `made`).
struct SetView {
    view: Tensor,
    prev: *mut SetView,
}

/// The view of a `set_` list entry: out of line, so the common case (never `set_`) is a
/// load and a branch the compiler lays out straight.
#[cold]
#[inline(never)]
fn set_view_of(_owner: &PyTensor, p: *mut SetView) -> &Tensor {
    // SAFETY: `p` is a non-null entry of `_owner`'s list, which the object owns and frees
    // only when dropped, which cannot happen while `_owner` is borrowed.
    unsafe { &(*p).view }
}

impl std::fmt::Debug for PyTensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("PyTensor").field(self.inner()).finish()
    }
}

impl Drop for PyTensor {
    fn drop(&mut self) {
        let mut p = *self.set.get_mut();
        while !p.is_null() {
            // SAFETY: every pointer in the list came from `Box::into_raw` in `set_view` and
            // is owned by this object alone; `&mut self` means no borrow of it is left.
            let b = unsafe { Box::from_raw(p) };
            p = b.prev;
        }
    }
}

impl PyTensor {
    pub fn wrap(t: Tensor) -> PyTensor {
        PyTensor {
            made: t,
            set: AtomicPtr::new(std::ptr::null_mut()),
        }
    }

    /// The view this object shows: the last `set_` gave, else the one it was made with.
    #[inline(always)]
    pub fn inner(&self) -> &Tensor {
        let p = self.set.load(Ordering::Acquire);
        if p.is_null() {
            &self.made
        } else {
            set_view_of(self, p)
        }
    }

    /// Makes `view` the one this object shows (`set_`), keeping the one it replaces
    /// alive until the object goes (see [`PyTensor`]).
    pub(crate) fn set_view(&self, view: Tensor) {
        let new = Box::into_raw(Box::new(SetView {
            view,
            prev: std::ptr::null_mut(),
        }));
        let mut cur = self.set.load(Ordering::Acquire);
        loop {
            // SAFETY: `new` is ours until the exchange publishes it.
            unsafe { (*new).prev = cur };
            match self
                .set
                .compare_exchange(cur, new, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return,
                Err(now) => cur = now,
            }
        }
    }

    /// Whether `self[key] = value` must go through autograd: this tensor or a tensor
    /// `value` requires grad.
    fn tracks_grad(&self, value: &Bound<'_, PyAny>) -> bool {
        self.inner().requires_grad()
            || value
                .cast::<PyTensor>()
                .is_ok_and(|v| v.get().inner().requires_grad())
    }
}

/// Where pyo3 keeps the `PyTensor` inside a `Tensor` object, if building one by hand is
/// exactly what pyo3 does: the type's allocator is `PyType_GenericAlloc` (which
/// zero-fills) or the free list's (which zero-fills all but the value, installed only
/// once this has found where the value is) and, in an object pyo3 built, every byte
/// after the object header that is not the value is zero. Checked once, on such an
/// object, at import; `None` sends [`new_view`] the pyo3 way.
pub fn direct_offset(py: Python<'_>) -> Option<usize> {
    static OFFSET: std::sync::OnceLock<Option<usize>> = std::sync::OnceLock::new();
    *OFFSET.get_or_init(|| {
        use pyo3::PyTypeInfo;
        let tp = PyTensor::type_object_raw(py);
        // SAFETY: `tp` is the live, ready type object of `PyTensor`.
        let (alloc, size) = unsafe { ((*tp).tp_alloc, (*tp).tp_basicsize) };
        if !alloc.is_some_and(crate::freelist::is_generic_alloc) {
            return None;
        }
        let sample = Bound::new(py, PyTensor::wrap(Tensor::scalar(1i64))).ok()?;
        let base = sample.as_ptr() as usize;
        let off = (sample.get() as *const PyTensor as usize).checked_sub(base)?;
        let end = off + std::mem::size_of::<PyTensor>();
        let header = std::mem::size_of::<ffi::PyObject>();
        let size = usize::try_from(size).ok()?;
        if off < header || end > size {
            return None;
        }
        // SAFETY: the object is alive (held by `sample`) and `size` bytes long.
        let bytes = unsafe { std::slice::from_raw_parts(base as *const u8, size) };
        let rest_zero = bytes[header..off]
            .iter()
            .chain(&bytes[end..])
            .all(|&b| b == 0);
        rest_zero.then_some(off)
    })
}

/// Whether [`new_view`] builds views in their objects (`False`: the pyo3 way, slower),
/// for the tests: a pyo3 upgrade that changes its object layout shows here.
#[pyfunction]
#[pyo3(name = "_views_built_in_place")]
pub fn views_built_in_place(py: Python<'_>) -> bool {
    direct_offset(py).is_some()
}

/// How many freed `Tensor` objects the free list holds for reuse, for the tests.
#[pyfunction]
#[pyo3(name = "_tensors_kept")]
pub fn tensors_kept() -> usize {
    crate::freelist::kept()
}

/// A new `Tensor` object holding the view `op` gives of `src`.
///
/// A copy of `src` is written straight into a freshly allocated object and edited where
/// it lies ([`Tensor::view_in_place`]), rather than built, moved into a `Result`, then
/// into pyo3's initializer and into the object: those moves read back, in wide loads,
/// the words the edit had just stored one by one, which the CPU cannot forward from its
/// store buffer; they were a large part of a view op's time from Python.
pub fn new_view<'py>(py: Python<'py>, src: &Tensor, op: ViewOp<'_>) -> PyResult<Bound<'py, PyAny>> {
    let Some(off) = direct_offset(py) else {
        let mut t = src.clone();
        t.view_in_place(op).py()?;
        return Ok(Bound::new(py, PyTensor::wrap(t))?.into_any());
    };
    use pyo3::PyTypeInfo;
    let tp = PyTensor::type_object_raw(py);
    // SAFETY: `direct_offset` checked that an object from the type's allocator, zero
    // outside the value (`PyType_GenericAlloc`, or the free list's), with a `PyTensor`
    // written at `off` is what pyo3 builds. The value is written whole before anything
    // can see the object (no Python code runs between the allocation and the
    // write, so the garbage collector cannot traverse it half-built); the edit goes
    // through the only pointer to a value nobody else holds yet; on error, dropping
    // `obj` frees a complete object (an unchanged copy of `src`).
    unsafe {
        let raw = match (*tp).tp_alloc {
            Some(alloc) => alloc(tp, 0),
            None => ffi::PyType_GenericAlloc(tp, 0),
        };
        if raw.is_null() {
            return Err(PyErr::fetch(py));
        }
        let slot = raw.cast::<u8>().add(off).cast::<PyTensor>();
        // The clone is built in the object, not beside it; the free list does not clear
        // the value's bytes, so the `set_` list is written too.
        std::ptr::addr_of_mut!((*slot).made).write(src.clone());
        std::ptr::addr_of_mut!((*slot).set).write(AtomicPtr::new(std::ptr::null_mut()));
        let obj = Bound::from_owned_ptr(py, raw);
        (*slot).made.view_in_place(op).py()?;
        Ok(obj)
    }
}

/// `_share_as(cls, t)`: a new object of `cls`, a Python subclass of `Tensor` that adds no
/// slots (`strata.array_api.Array`), over the same tensor as `t` (view, storage and
/// autograd state shared) — what `Tensor.__new__(cls, t, _share=True)` gives, without
/// parsing arguments: the object is built as [`new_view`] builds one.
#[pyfunction]
#[pyo3(name = "_share_as")]
pub fn share_as<'py>(
    cls: &Bound<'py, pyo3::types::PyType>,
    t: &Bound<'py, PyTensor>,
) -> PyResult<Bound<'py, PyAny>> {
    use pyo3::PyTypeInfo;
    let py = cls.py();
    if !cls.is_subclass_of::<PyTensor>()? {
        return Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "_share_as: {} is not a subclass of strata.Tensor",
            cls.name()?
        )));
    }
    let base = PyTensor::type_object_raw(py);
    let sub = cls.as_type_ptr();
    // SAFETY: both are live, ready type objects.
    let same_layout =
        unsafe { (*sub).tp_basicsize == (*base).tp_basicsize && (*sub).tp_itemsize == 0 };
    let (Some(off), true) = (direct_offset(py), same_layout) else {
        let kw = pyo3::types::PyDict::new(py);
        kw.set_item("_share", true)?;
        return cls.call((t,), Some(&kw));
    };
    let value = PyTensor::wrap(t.get().inner().clone());
    // SAFETY: `cls` is a subtype of `Tensor` of the same size, so its objects are laid
    // out as `Tensor`'s with the value at `off` (`direct_offset` checked that an object
    // pyo3 builds is its allocator's zeroed memory with the value written there, which is
    // also how pyo3 builds an object of a subtype); no Python code runs between the
    // allocation and the write, so nothing sees the object half-built.
    unsafe {
        // No allocator slot means the generic one (as pyo3 and CPython read it).
        let alloc = (*sub).tp_alloc.unwrap_or(ffi::PyType_GenericAlloc);
        let raw = alloc(sub, 0);
        if raw.is_null() {
            return Err(PyErr::fetch(py));
        }
        raw.cast::<u8>().add(off).cast::<PyTensor>().write(value);
        Ok(Bound::from_owned_ptr(py, raw))
    }
}

/// Nested lists of a tensor's values.
pub fn to_list(py: Python<'_>, t: &Tensor) -> PyResult<Py<PyAny>> {
    if !t.device().is_cpu() {
        let host = t.host_copy("tolist").py()?;
        return to_list(py, &host);
    }
    t.check_host("tolist").py()?;
    check_list_size(t.shape())?;
    let flat = elements(py, t)?;
    nest(py, t.shape(), &flat)
}

/// Refuses a `tolist()` whose Python objects could not fit in this machine's memory,
/// before building any: a `(2**20, 2**20, 0)` tensor has no elements but would make 2^40
/// empty lists. Counted: one list per index of each dim but the last (its slots included)
/// and one object per element, at CPython's smallest sizes (a list 56 bytes + 8 per slot,
/// a float 24); over the physical memory is a `ResourceError` naming the counts.
fn check_list_size(shape: &[usize]) -> PyResult<()> {
    const LIST: u128 = 56;
    const SLOT: u128 = 8;
    const ELEMENT: u128 = 24;
    let mut lists: u128 = 0;
    let mut slots: u128 = 0;
    let mut at_depth: u128 = 1; // lists at this depth
    for &n in shape {
        lists = lists.saturating_add(at_depth);
        at_depth = at_depth.saturating_mul(n as u128);
        slots = slots.saturating_add(at_depth);
        if at_depth == 0 {
            break;
        }
    }
    // `at_depth` ends as the element count (0 when a dim is 0).
    let elements = if shape.is_empty() { 1 } else { at_depth };
    let bytes = lists
        .saturating_mul(LIST)
        .saturating_add(slots.saturating_mul(SLOT))
        .saturating_add(elements.saturating_mul(ELEMENT));
    let Some(limit) = strata::storage::physical_memory() else {
        return Ok(());
    };
    if bytes > limit as u128 {
        return Err(err(
            ErrorKind::Resource,
            "tolist",
            format!(
                "out of memory: the lists of shape {shape:?} are {lists} lists of \
                 {elements} elements in all, at least {bytes} bytes of Python objects, \
                 more than this machine's {limit} bytes"
            ),
        ));
    }
    Ok(())
}

/// A tensor argument, or a number / nested list turned into one.
pub fn tensor_arg(obj: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    if let Ok(t) = obj.cast::<PyTensor>() {
        return Ok(t.get().inner().clone());
    }
    crate::convert::from_nested(obj, None)
}

fn dim_arg(d: Option<i64>) -> i64 {
    d.unwrap_or(0)
}

/// One entry of a key, as the core's [`TensorIndex`]: ints, slices, `None`, `...`,
/// tensors, and lists, tuples and NumPy arrays as index tensors.
fn parse_entry(obj: &Bound<'_, PyAny>) -> PyResult<TensorIndex> {
    if obj.is_none() {
        return Ok(TensorIndex::NewAxis);
    }
    if obj.is_instance_of::<PyEllipsis>() {
        return Ok(TensorIndex::Ellipsis);
    }
    if let Ok(s) = obj.cast::<PySlice>() {
        return slice_index(s);
    }
    if let Ok(b) = obj.cast::<pyo3::types::PyBool>() {
        // A 0-d mask, as NumPy and PyTorch read it: a new dim of size 1 (True) or 0.
        return Ok(TensorIndex::tensor(Tensor::scalar(b.is_true())));
    }
    if let Ok(t) = obj.cast::<PyTensor>() {
        // The core checks the dtype and reads a 0-d integer tensor as an int.
        return Ok(TensorIndex::tensor(t.get().inner().clone()));
    }
    if let Some(t) = plain_int_index(obj) {
        return Ok(TensorIndex::tensor(t?));
    }
    if let Ok(i) = index_arg(obj) {
        return Ok(TensorIndex::Int(i));
    }
    if obj.is_instance_of::<PyList>()
        || obj.is_instance_of::<PyTuple>()
        || obj.hasattr("__array_interface__")?
    {
        let t = crate::module::tensor_from(obj, None)?;
        return match t.dtype() {
            DType::Bool => Ok(TensorIndex::tensor(t)),
            dt if dt.is_int() => Ok(TensorIndex::tensor(t)),
            // `[]` makes an empty float tensor: no positions.
            DType::F32 if t.numel() == 0 => Ok(TensorIndex::tensor(t.to_dtype(DType::I64).py()?)),
            dt => Err(err(
                ErrorKind::Index,
                "index",
                format!("index arrays must be integer or boolean, got {dt}"),
            )),
        };
    }
    Err(err(
        ErrorKind::Index,
        "index",
        format!(
            "only integers, slices (`:`), ellipsis (`...`), None and long or byte tensors are valid indices (got {})",
            obj.get_type().name()?
        ),
    ))
}

/// A non-empty list or tuple of plain ints (`t[[0, 2]]`) as an int64 tensor, read item by
/// item; `None` for anything else (bools, other objects, ints past int64, `[]`), which
/// takes the general conversion and its errors. That conversion asks each item for the
/// scalar protocols (an attribute miss, so an exception made and cleared, per item): it
/// was most of a small gather's per-call cost.
fn plain_int_index(obj: &Bound<'_, PyAny>) -> Option<PyResult<Tensor>> {
    fn read<'py>(items: impl Iterator<Item = Bound<'py, PyAny>>) -> Option<Vec<i64>> {
        items
            .map(|x| {
                x.is_exact_instance_of::<PyInt>()
                    .then(|| crate::convert::exact_int(&x).ok())
                    .flatten()
            })
            .collect()
    }
    let v = if let Ok(l) = obj.cast_exact::<PyList>() {
        read(l.iter())
    } else if let Ok(t) = obj.cast_exact::<PyTuple>() {
        read(t.iter())
    } else {
        None
    }
    .filter(|v| !v.is_empty())?;
    let n = v.len();
    Some(Tensor::from_vec(v, &[n]).py())
}

/// `PySlice_Unpack` of `s` into `slot` (written where it lies, see [`fast_entry`]):
/// `false`, with the Python error set, when the rule refuses a bound.
fn unpack_slice(s: &Bound<'_, PySlice>, slot: &mut TensorIndex) -> bool {
    let (mut start, mut stop, mut step): (ffi::Py_ssize_t, ffi::Py_ssize_t, ffi::Py_ssize_t) =
        (0, 0, 0);
    // SAFETY: `s` is a live slice object (checked by the caller's cast, borrowed for the
    // call, with the thread attached to the interpreter); the out-pointers are locals.
    let rc = unsafe { ffi::PySlice_Unpack(s.as_ptr(), &mut start, &mut stop, &mut step) };
    if rc != 0 {
        return false;
    }
    *slot = TensorIndex::slice(Some(start as i64), Some(stop as i64), step as i64);
    true
}

/// A slice entry of a key, by Python's rule for slice bounds: `None` or anything with
/// `__index__` (so a bool is the int it subclasses: `[10, 20][True:]` is `[20]`, as in
/// Python and NumPy), ints beyond `isize` clamped. CPython's `PySlice_Unpack` applies the
/// rule; it reads a `None` bound as the default for the step's sign (start `0` or
/// `isize::MAX`, stop `isize::MAX` or `isize::MIN`), which `Tensor::index` clamps to the
/// dim exactly as it would `None`.
fn slice_index(s: &Bound<'_, PySlice>) -> PyResult<TensorIndex> {
    let py = s.py();
    let mut slot = TensorIndex::NewAxis;
    if unpack_slice(s, &mut slot) {
        return Ok(slot);
    }
    let raised = PyErr::fetch(py);
    // Our texts for the rule's two errors; anything else (an `__index__` that raised) as
    // it was raised.
    for name in [
        intern!(py, "start"),
        intern!(py, "stop"),
        intern!(py, "step"),
    ] {
        let v = s.getattr(name)?;
        if !v.is_none() && !v.hasattr(intern!(py, "__index__"))? {
            return Err(err(
                ErrorKind::DType,
                "index",
                format!(
                    "slice indices must be integers or None or have an __index__ method, got {}",
                    v.repr()?
                ),
            ));
        }
    }
    let step = s.getattr(intern!(py, "step"))?;
    if !step.is_none() && step.call_method0(intern!(py, "__index__"))?.eq(0)? {
        // `Tensor::index` refuses a zero step, with its text.
        return Ok(TensorIndex::slice(None, None, 0));
    }
    Err(raised)
}

/// The most entries a key may have to take [`fast_key`].
const FAST_KEY: usize = 8;

/// The buffer [`fast_key`] parses into. It only ever holds basic entries (no tensor),
/// which own nothing: `ManuallyDrop` spares the per-call drop of its slots.
#[inline(always)]
fn fast_buf() -> std::mem::ManuallyDrop<[TensorIndex; FAST_KEY]> {
    std::mem::ManuallyDrop::new([const { TensorIndex::NewAxis }; FAST_KEY])
}

/// A key made only of plain ints, slices that [`slice_index`] accepts, `None` and `...`,
/// parsed into `buf` without touching the heap: the number of entries, or `None` when any
/// entry needs [`parse_entry`] (which also owns every error text, so a fast key can only
/// fail in [`Tensor::index`], as the general path would).
fn fast_key(key: &Bound<'_, PyAny>, buf: &mut [TensorIndex; FAST_KEY]) -> Option<usize> {
    if let Ok(t) = key.cast::<PyTuple>() {
        let n = t.len();
        if n > FAST_KEY {
            return None;
        }
        for (slot, item) in buf.iter_mut().zip(t.iter()) {
            fast_entry(&item, slot)?;
        }
        return Some(n);
    }
    fast_entry(key, &mut buf[0])?;
    Some(1)
}

/// Parses one entry of a fast key into `slot` (written where it lies: a `TensorIndex`
/// returned by value and then moved into the key stalls the wide loads of the move).
fn fast_entry(obj: &Bound<'_, PyAny>, slot: &mut TensorIndex) -> Option<()> {
    if obj.is_exact_instance_of::<PyInt>() {
        *slot = TensorIndex::Int(crate::convert::exact_int(obj).ok()?);
    } else if let Ok(s) = obj.cast::<PySlice>() {
        if !unpack_slice(s, slot) {
            // The general path raises it again, with its text.
            drop(PyErr::fetch(obj.py()));
            return None;
        }
    } else if obj.is_none() {
        *slot = TensorIndex::NewAxis;
    } else if obj.is_instance_of::<PyEllipsis>() {
        *slot = TensorIndex::Ellipsis;
    } else {
        return None;
    }
    Some(())
}

fn parse_key(key: &Bound<'_, PyAny>) -> PyResult<Vec<TensorIndex>> {
    if let Ok(t) = key.cast::<PyTuple>() {
        t.iter().map(|k| parse_entry(&k)).collect()
    } else {
        Ok(vec![parse_entry(key)?])
    }
}

/// `t[key] = value` for a key that [`fast_key`] did not take.
fn setitem(t: &Tensor, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
    let key = parse_key(key)?;
    if !key.iter().any(TensorIndex::is_tensor) {
        let v = as_scalar(value)?;
        if v.is_none() {
            let src = tensor_arg(value)?;
            if src.requires_grad() || t.requires_grad() {
                return t.index_assign_(&key, &src).py().map(|_| ());
            }
            return t.index(&key).py()?.copy_(&src).py().map(|_| ());
        }
        let view = t.index(&key).py()?;
        return assign(&view, v, value);
    }
    let src = match as_scalar(value)? {
        Some(s) => Tensor::full(&[], s, t.dtype()).py()?,
        None => tensor_arg(value)?,
    };
    t.index_put_(&key, &src).py().map(|_| ())
}

/// Writes `value` (the number `v`, when it is one) into the view `view`.
fn assign(view: &Tensor, v: Option<Scalar>, value: &Bound<'_, PyAny>) -> PyResult<()> {
    match v {
        Some(s) => view.fill_(s).map(|_| ()).py(),
        None => view.copy_(&tensor_arg(value)?).map(|_| ()).py(),
    }
}

#[pymethods]
impl PyTensor {
    /// Garbage-collector support: the Python object this tensor's storage keeps alive
    /// (a wrapped buffer's exporter) is visited when this tensor holds the storage's only
    /// handle, which is exactly when that reference belongs to it (PyTorch's rule for
    /// tensors with Python state). Shared storages are not visited, so a cycle through
    /// them is kept rather than ever freed while reachable.
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        let s = self.inner().storage();
        if s.handle_count() == 1 {
            if let Some(r) = s.try_with_owner(|o| crate::buffer::traverse_owner(o, &visit)) {
                r?;
            }
        }
        Ok(())
    }

    /// `Tensor(data, dtype=None)`: a copy of `data`. With `_alias=True` and a tensor
    /// `data`, the new object (of a subclass, `nn.Parameter`) is a detached handle to the
    /// same view instead; with `_share=True`, a handle to the same view and the same
    /// autograd state (of a subclass, `strata.array_api.Array`: one tensor, two objects).
    #[new]
    #[pyo3(signature = (*args, dtype=None, _alias=false, _share=false))]
    fn py_new(
        args: &Bound<'_, PyTuple>,
        dtype: Option<&Bound<'_, PyAny>>,
        _alias: bool,
        _share: bool,
    ) -> PyResult<Self> {
        if _share {
            let t = match (args.len(), dtype) {
                (1, None) => args.get_item(0)?,
                _ => {
                    return Err(pyo3::exceptions::PyTypeError::new_err(
                        "Tensor(_share=True) takes one tensor and no dtype",
                    ))
                }
            };
            let t = t.cast::<PyTensor>().map_err(|_| {
                pyo3::exceptions::PyTypeError::new_err(format!(
                    "Tensor(_share=True) takes a tensor, got {}",
                    t.get_type()
                        .name()
                        .map_or_else(|_| "?".into(), |n| n.to_string())
                ))
            })?;
            return Ok(PyTensor::wrap(t.get().inner().clone()));
        }
        // `Tensor()`, `Tensor(data)`, `Tensor(data, dtype)`.
        let (data, dtype) = match (args.len(), dtype) {
            (0, None) => return Tensor::zeros(&[0], DType::F32).py().map(PyTensor::wrap),
            (1, d) => (args.get_item(0)?, d.cloned()),
            (2, None) => (args.get_item(0)?, Some(args.get_item(1)?)),
            _ => {
                return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                    "Tensor() takes (data, dtype=None), got {} positional arguments{}",
                    args.len(),
                    if dtype.is_some() { " and dtype=" } else { "" }
                )))
            }
        };
        if _alias {
            if let Ok(t) = data.cast::<PyTensor>() {
                return Ok(PyTensor::wrap(t.get().inner().detach()));
            }
        }
        let dt = crate::dtype::opt_dtype(dtype.as_ref())?;
        // `Tensor(storage)`: a 1-D tensor over the whole storage, sharing it (float32 for
        // an untyped storage, as PyTorch's; a typed storage's own dtype).
        if let Some(t) = crate::storage::tensor_over(&data, dt)? {
            return Ok(PyTensor::wrap(t));
        }
        crate::module::tensor_from(&data, dt).map(PyTensor::wrap)
    }

    // ----- metadata -----

    /// The shape as a tuple.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.inner().shape())
    }

    /// `size()` → shape; `size(d)` → one size.
    #[pyo3(signature = (dim=None))]
    fn size(&self, py: Python<'_>, dim: Option<i64>) -> PyResult<Py<PyAny>> {
        match dim {
            None => Ok(PyTuple::new(py, self.inner().shape())?.into_any().unbind()),
            Some(d) => Ok(self
                .inner()
                .size(d)
                .py()?
                .into_pyobject(py)?
                .into_any()
                .unbind()),
        }
    }

    /// `stride()` → strides in elements; `stride(d)` → one stride.
    #[pyo3(signature = (dim=None))]
    fn stride(&self, py: Python<'_>, dim: Option<i64>) -> PyResult<Py<PyAny>> {
        match dim {
            None => Ok(PyTuple::new(py, self.inner().strides())?
                .into_any()
                .unbind()),
            Some(d) => {
                let k = strata::layout::wrap_dim("stride", d, self.inner().ndim()).py()?;
                let s = self.inner().strides().get(k).copied().unwrap_or(1);
                Ok(s.into_pyobject(py)?.into_any().unbind())
            }
        }
    }

    #[getter]
    fn dtype<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDType>> {
        crate::dtype::canonical(py, self.inner().dtype())
    }

    #[getter]
    fn device(&self) -> String {
        self.inner().device().to_string()
    }

    #[getter]
    fn ndim(&self) -> usize {
        self.inner().ndim()
    }

    fn dim(&self) -> usize {
        self.inner().ndim()
    }

    fn numel(&self) -> usize {
        self.inner().numel()
    }

    fn element_size(&self) -> usize {
        self.inner().dtype().itemsize()
    }

    #[getter]
    fn itemsize(&self) -> usize {
        self.inner().dtype().itemsize()
    }

    #[getter]
    fn nbytes(&self) -> usize {
        self.inner().numel() * self.inner().dtype().itemsize()
    }

    fn storage_offset(&self) -> usize {
        self.inner().offset()
    }

    fn data_ptr(&self) -> usize {
        self.inner().data_ptr()
    }

    /// PyTorch's `tensor.layout`: `strata.strided`, the one layout a strata tensor has (a
    /// strided view of a storage); see `python/strata/_layout.py`.
    #[getter]
    fn layout(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        static STRIDED: pyo3::sync::PyOnceLock<Py<PyAny>> = pyo3::sync::PyOnceLock::new();
        STRIDED
            .get_or_try_init(py, || {
                Ok::<_, PyErr>(py.import("strata._layout")?.getattr("strided")?.unbind())
            })
            .map(|s| s.clone_ref(py))
    }

    fn untyped_storage(&self) -> crate::storage::PyUntypedStorage {
        crate::storage::PyUntypedStorage::wrap(self.inner().storage().clone())
    }

    fn is_contiguous(&self) -> bool {
        self.inner().is_contiguous()
    }

    fn is_read_only(&self) -> bool {
        self.inner().is_read_only()
    }

    #[getter]
    fn _version(&self) -> u64 {
        self.inner().version()
    }

    fn contiguous(&self, py: Python<'_>) -> PyResult<PyTensor> {
        // By reference, as the elementwise methods (see `elementwise.rs`).
        let t = self.inner();
        crate::compute::nogil(py, t.numel(), || t.contiguous())
            .py()
            .map(PyTensor::wrap)
    }

    /// A picture of this view over its storage.
    fn explain(&self) -> PyResult<String> {
        self.inner().explain().py()
    }

    fn __repr__(&self) -> PyResult<String> {
        self.inner().format_values("tensor(", "strata.").py()
    }

    fn __str__(&self) -> PyResult<String> {
        self.__repr__()
    }

    // ----- views -----

    /// `view(*shape)` or `view(dtype)`.
    #[pyo3(signature = (*args))]
    fn view<'py>(&self, args: &Bound<'py, PyTuple>) -> PyResult<Bound<'py, PyAny>> {
        if args.len() == 1 {
            let a = args.get_item(0)?;
            // A plain int is a shape: skip the two failed extractions (they build errors).
            if !a.is_exact_instance_of::<PyInt>() && crate::dtype::is_dtype_like(&a) {
                let t = self.inner().view_dtype(parse_dtype(&a)?).py()?;
                return Ok(Bound::new(args.py(), PyTensor::wrap(t))?.into_any());
            }
        }
        let mut shape = Ints::new();
        int_args(args, &mut shape)?;
        new_view(args.py(), self.inner(), ViewOp::View(&shape))
    }

    #[pyo3(signature = (*shape))]
    fn reshape<'py>(&self, shape: &Bound<'py, PyTuple>) -> PyResult<Bound<'py, PyAny>> {
        let py = shape.py();
        let mut s = Ints::new();
        int_args(shape, &mut s)?;
        if self.inner().is_contiguous() {
            // Always a view (or reshape's own error): built in its object.
            return new_view(py, self.inner(), ViewOp::Reshape(&s));
        }
        let t = self.inner().reshape(&s).py()?;
        Ok(Bound::new(py, PyTensor::wrap(t))?.into_any())
    }

    fn view_as(&self, other: &PyTensor) -> PyResult<PyTensor> {
        let s: Vec<i64> = other.inner().shape().iter().map(|&n| n as i64).collect();
        self.inner().view(&s).py().map(PyTensor::wrap)
    }

    fn reshape_as(&self, other: &PyTensor) -> PyResult<PyTensor> {
        let s: Vec<i64> = other.inner().shape().iter().map(|&n| n as i64).collect();
        self.inner().reshape(&s).py().map(PyTensor::wrap)
    }

    #[pyo3(signature = (start_dim=0, end_dim=-1))]
    fn flatten(&self, start_dim: i64, end_dim: i64) -> PyResult<PyTensor> {
        self.inner()
            .flatten(start_dim, end_dim)
            .py()
            .map(PyTensor::wrap)
    }

    fn unflatten(&self, dim: i64, sizes: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        self.inner()
            .unflatten(dim, &int_list(sizes)?)
            .py()
            .map(PyTensor::wrap)
    }

    fn transpose<'py>(&self, py: Python<'py>, dim0: i64, dim1: i64) -> PyResult<Bound<'py, PyAny>> {
        new_view(py, self.inner(), ViewOp::Transpose(dim0, dim1))
    }

    fn swapaxes<'py>(
        &self,
        py: Python<'py>,
        axis0: i64,
        axis1: i64,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.transpose(py, axis0, axis1)
    }

    fn swapdims<'py>(&self, py: Python<'py>, dim0: i64, dim1: i64) -> PyResult<Bound<'py, PyAny>> {
        self.transpose(py, dim0, dim1)
    }

    #[pyo3(signature = (*dims))]
    fn permute<'py>(
        &self,
        py: Python<'py>,
        dims: &Bound<'py, PyTuple>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let mut order = Ints::new();
        int_args(dims, &mut order)?;
        new_view(py, self.inner(), ViewOp::Permute(&order))
    }

    fn movedim(
        &self,
        source: &Bound<'_, PyAny>,
        destination: &Bound<'_, PyAny>,
    ) -> PyResult<PyTensor> {
        self.inner()
            .movedim(&int_list(source)?, &int_list(destination)?)
            .py()
            .map(PyTensor::wrap)
    }

    fn moveaxis(
        &self,
        source: &Bound<'_, PyAny>,
        destination: &Bound<'_, PyAny>,
    ) -> PyResult<PyTensor> {
        self.movedim(source, destination)
    }

    fn t<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        new_view(py, self.inner(), ViewOp::T)
    }

    /// All dims reversed (PyTorch's `T`).
    #[getter(T)]
    fn big_t<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let n = self.inner().ndim() as i64;
        // The 2-D case is one swap; `permute` would check a whole dim list.
        if n == 2 {
            return new_view(py, self.inner(), ViewOp::Transpose(0, 1));
        }
        let rev: Ints = (0..n).rev().collect();
        new_view(py, self.inner(), ViewOp::Permute(&rev))
    }

    #[getter(mT)]
    fn m_t<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        new_view(py, self.inner(), ViewOp::MT)
    }

    fn narrow<'py>(
        &self,
        py: Python<'py>,
        dim: i64,
        start: i64,
        length: i64,
    ) -> PyResult<Bound<'py, PyAny>> {
        new_view(py, self.inner(), ViewOp::Narrow(dim, start, length))
    }

    fn select<'py>(&self, py: Python<'py>, dim: i64, index: i64) -> PyResult<Bound<'py, PyAny>> {
        new_view(py, self.inner(), ViewOp::Select(dim, index))
    }

    #[pyo3(signature = (*dims))]
    fn flip<'py>(
        &self,
        py: Python<'py>,
        dims: &Bound<'py, PyTuple>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let mut which = Ints::new();
        int_args(dims, &mut which)?;
        new_view(py, self.inner(), ViewOp::Flip(&which))
    }

    #[pyo3(signature = (*sizes))]
    fn expand(&self, sizes: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        self.inner()
            .expand(&{
                let mut s = Ints::new();
                int_args(sizes, &mut s)?;
                s
            })
            .py()
            .map(PyTensor::wrap)
    }

    fn expand_as(&self, other: &PyTensor) -> PyResult<PyTensor> {
        self.inner()
            .expand_as(other.inner())
            .py()
            .map(PyTensor::wrap)
    }

    fn broadcast_to(&self, shape: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let s = sizes("broadcast_to", &int_list(shape)?)?;
        self.inner().broadcast_to(&s).py().map(PyTensor::wrap)
    }

    #[pyo3(signature = (dim=None))]
    fn squeeze(&self, dim: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
        match dim {
            None => self.inner().squeeze(),
            Some(d) => self.inner().squeeze_dims(&int_list(d)?),
        }
        .py()
        .map(PyTensor::wrap)
    }

    fn unsqueeze<'py>(&self, py: Python<'py>, dim: i64) -> PyResult<Bound<'py, PyAny>> {
        new_view(py, self.inner(), ViewOp::Unsqueeze(dim))
    }

    #[pyo3(signature = (size, stride, storage_offset=None))]
    fn as_strided(
        &self,
        size: &Bound<'_, PyAny>,
        stride: &Bound<'_, PyAny>,
        storage_offset: Option<i64>,
    ) -> PyResult<PyTensor> {
        let shape = sizes("as_strided", &int_list(size)?)?;
        let strides: Vec<isize> = int_list(stride)?.into_iter().map(|s| s as isize).collect();
        let off = match storage_offset {
            None => None,
            Some(o) if o >= 0 => Some(o as usize),
            Some(o) => {
                return Err(err(
                    ErrorKind::Value,
                    "as_strided",
                    format!("Tensor: invalid storage offset {o}"),
                ))
            }
        };
        self.inner()
            .as_strided(&shape, &strides, off)
            .py()
            .map(PyTensor::wrap)
    }

    fn unfold(&self, dimension: i64, size: i64, step: i64) -> PyResult<PyTensor> {
        let (size, step) = (sizes("unfold", &[size])?[0], sizes("unfold", &[step])?[0]);
        self.inner()
            .unfold(dimension, size, step)
            .py()
            .map(PyTensor::wrap)
    }

    #[pyo3(signature = (offset=0, dim1=0, dim2=1))]
    fn diagonal(&self, offset: i64, dim1: i64, dim2: i64) -> PyResult<PyTensor> {
        self.inner()
            .diagonal(offset, dim1, dim2)
            .py()
            .map(PyTensor::wrap)
    }

    #[pyo3(signature = (split_size_or_sections, dim=0))]
    fn split(
        &self,
        split_size_or_sections: &Bound<'_, PyAny>,
        dim: i64,
    ) -> PyResult<Vec<PyTensor>> {
        let parts = if let Ok(n) = split_size_or_sections.extract::<i64>() {
            let n = sizes("split", &[n])?[0];
            self.inner().split(n, dim)
        } else {
            let s = sizes("split", &int_list(split_size_or_sections)?)?;
            self.inner().split_with_sizes(&s, dim)
        };
        Ok(parts.py()?.into_iter().map(PyTensor::wrap).collect())
    }

    #[pyo3(signature = (chunks, dim=0))]
    fn chunk(&self, chunks: i64, dim: i64) -> PyResult<Vec<PyTensor>> {
        if chunks <= 0 {
            return Err(err(
                ErrorKind::Value,
                "chunk",
                format!("chunk expects `chunks` to be greater than 0, got: {chunks}"),
            ));
        }
        Ok(self
            .inner()
            .chunk(chunks as usize, dim)
            .py()?
            .into_iter()
            .map(PyTensor::wrap)
            .collect())
    }

    #[pyo3(signature = (dim=None))]
    fn unbind(&self, dim: Option<i64>) -> PyResult<Vec<PyTensor>> {
        Ok(self
            .inner()
            .unbind(dim_arg(dim))
            .py()?
            .into_iter()
            .map(PyTensor::wrap)
            .collect())
    }

    // ----- indexing -----

    /// Basic indexing gives a view, advanced indexing a copy. Where advanced indices are
    /// separated by a slice, the result follows PyTorch, not NumPy: an int is a basic
    /// index, so `t[0, :, [0, 1]]` on shape (2, 3, 4) is (3, 2) (NumPy: (2, 3)).
    fn __getitem__<'py>(&self, key: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let py = key.py();
        let mut buf = fast_buf();
        if let Some(n) = fast_key(key, &mut buf) {
            return new_view(py, self.inner(), ViewOp::Index(&buf[..n]));
        }
        let key = parse_key(key)?;
        Ok(Bound::new(py, PyTensor::wrap(self.inner().index(&key).py()?))?.into_any())
    }

    fn __setitem__(&self, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let mut buf = fast_buf();
        if let Some(n) = fast_key(key, &mut buf) {
            let v = as_scalar(value)?;
            if v.is_none() && self.tracks_grad(value) {
                // Under autograd the write is recorded on this tensor (see
                // `Tensor::index_assign_`).
                let src = tensor_arg(value)?;
                return self.inner().index_assign_(&buf[..n], &src).py().map(|_| ());
            }
            let view = self.inner().index(&buf[..n]).py()?;
            return assign(&view, v, value);
        }
        setitem(self.inner(), key, value)
    }

    fn __len__(&self) -> PyResult<usize> {
        if self.inner().ndim() == 0 {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "len() of a 0-d tensor",
            ));
        }
        Ok(self.inner().shape()[0])
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        if slf.inner().ndim() == 0 {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "iteration over a 0-d tensor",
            ));
        }
        let items: Vec<PyTensor> = slf
            .inner()
            .unbind(0)
            .py()?
            .into_iter()
            .map(PyTensor::wrap)
            .collect();
        Ok(PyList::new(py, items)?.call_method0("__iter__")?.unbind())
    }

    // ----- conversions -----

    fn tolist(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        to_list(py, self.inner())
    }

    fn item(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let s = self.inner().item().py()?;
        if self.inner().dtype() == DType::U64 {
            let v = self.inner().reshape(&[1]).py()?.to_vec::<u64>().py()?[0];
            return Ok(v.into_pyobject(py)?.into_any().unbind());
        }
        scalar_to_py(py, s)
    }

    fn __bool__(&self) -> PyResult<bool> {
        if self.inner().numel() != 1 {
            return Err(err(
                ErrorKind::Value,
                "bool",
                format!(
                    "Boolean value of Tensor with {} values is ambiguous",
                    self.inner().numel()
                ),
            ));
        }
        Ok(self.inner().item().py()?.to::<bool>())
    }

    fn __float__(&self) -> PyResult<f64> {
        match self.inner().item().py()? {
            strata::Scalar::Complex(_, im) if im != 0.0 => Err(
                pyo3::exceptions::PyTypeError::new_err("can't convert complex to float"),
            ),
            s => Ok(s.to_f64()),
        }
    }

    /// Python's `int()`: a float truncates to its exact integer (`int(st.tensor(1e30))
    /// == int(1e30)`), NaN raises `ValueError` and an infinity `OverflowError`, as for a
    /// Python float, NumPy and PyTorch.
    fn __int__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        match self.inner().item().py()? {
            strata::Scalar::Complex(..) => Err(pyo3::exceptions::PyTypeError::new_err(
                "can't convert complex to int",
            )),
            s @ strata::Scalar::UInt(_) => scalar_to_py(py, s),
            strata::Scalar::Float(f) => Ok(pyo3::types::PyFloat::new(py, f)
                .call_method0(pyo3::intern!(py, "__int__"))?
                .unbind()),
            s => Ok(s.to::<i64>().into_pyobject(py)?.into_any().unbind()),
        }
    }

    fn __index__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        if !(self.inner().dtype().is_int() || self.inner().dtype() == DType::Bool) {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "only integer tensors of a single element can be converted to an index",
            ));
        }
        self.__int__(py)
    }

    // ----- data -----

    fn fill_<'py>(slf: PyRef<'py, Self>, value: &Bound<'py, PyAny>) -> PyResult<PyRef<'py, Self>> {
        let s = match as_scalar(value)? {
            Some(s) => s,
            None => tensor_arg(value)?.item().py()?,
        };
        slf.inner().fill_(s).py()?;
        Ok(slf)
    }

    fn zero_(slf: PyRef<'_, Self>) -> PyResult<PyRef<'_, Self>> {
        slf.inner().zero_().py()?;
        Ok(slf)
    }

    #[pyo3(signature = (src, non_blocking=false))]
    fn copy_<'py>(
        slf: PyRef<'py, Self>,
        src: &Bound<'py, PyAny>,
        non_blocking: bool,
    ) -> PyResult<PyRef<'py, Self>> {
        let s = tensor_arg(src)?;
        let t = slf.inner().clone();
        let r = crate::compute::nogil(slf.py(), s.numel().max(t.numel()), || {
            t.copy_with(&s, non_blocking).map(|_| ())
        });
        slf.inner().adopt_autograd(&t);
        r.py()?;
        Ok(slf)
    }

    /// A copy; `memory_format="preserve"` (default) keeps a dense layout's dim order.
    fn clone(&self, py: Python<'_>) -> PyResult<PyTensor> {
        // By reference, as `contiguous` (a per-call cost on small tensors).
        let t = self.inner();
        crate::compute::nogil(py, t.numel(), || t.clone_data())
            .py()
            .map(PyTensor::wrap)
    }

    /// `to(dtype)`, `to(device)`, `to(device, dtype)`: a device is a string ("cpu",
    /// "cuda", "cuda:N"); a device this build has no backend for is a `DeviceError`.
    #[pyo3(signature = (*args, dtype=None, device=None, copy=false, non_blocking=false))]
    fn to(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        dtype: Option<&Bound<'_, PyAny>>,
        device: Option<&Bound<'_, PyAny>>,
        copy: bool,
        non_blocking: bool,
    ) -> PyResult<PyTensor> {
        let mut target = crate::dtype::opt_dtype(dtype)?;
        let mut dev = match device {
            Some(d) if !d.is_none() => crate::device::opt_device("to", Some(d))?,
            _ => self.inner().device(),
        };
        for a in args.iter() {
            if let Ok(s) = a.extract::<String>() {
                if s == "cpu" || s.starts_with("cuda") {
                    dev = crate::device::opt_device("to", Some(&a))?;
                    continue;
                }
            }
            if let Ok(other) = a.cast::<PyTensor>() {
                // `to(other)`: other's device and dtype.
                dev = other.get().inner().device();
                target = Some(other.get().inner().dtype());
                continue;
            }
            target = Some(parse_dtype(&a)?);
        }
        if dev != self.inner().device() {
            let t = self.inner().clone();
            let moved = py.detach(|| t.to_device_with(dev, non_blocking)).py()?;
            let dt = target.unwrap_or(moved.dtype());
            return moved.to_dtype(dt).py().map(PyTensor::wrap);
        }
        let dt = target.unwrap_or(self.inner().dtype());
        if dt == self.inner().dtype() {
            return if copy {
                self.inner().contiguous_copy().py().map(PyTensor::wrap)
            } else {
                Ok(PyTensor::wrap(self.inner().clone()))
            };
        }
        self.inner().to_dtype(dt).py().map(PyTensor::wrap)
    }

    fn type_as(&self, other: &PyTensor) -> PyResult<PyTensor> {
        self.inner()
            .to_dtype(other.inner().dtype())
            .py()
            .map(PyTensor::wrap)
    }

    fn float(&self) -> PyResult<PyTensor> {
        self.inner().to_dtype(DType::F32).py().map(PyTensor::wrap)
    }

    fn double(&self) -> PyResult<PyTensor> {
        self.inner().to_dtype(DType::F64).py().map(PyTensor::wrap)
    }

    fn half(&self) -> PyResult<PyTensor> {
        self.inner().to_dtype(DType::F16).py().map(PyTensor::wrap)
    }

    fn bfloat16(&self) -> PyResult<PyTensor> {
        self.inner().to_dtype(DType::BF16).py().map(PyTensor::wrap)
    }

    fn int(&self) -> PyResult<PyTensor> {
        self.inner().to_dtype(DType::I32).py().map(PyTensor::wrap)
    }

    fn long(&self) -> PyResult<PyTensor> {
        self.inner().to_dtype(DType::I64).py().map(PyTensor::wrap)
    }

    fn bool(&self) -> PyResult<PyTensor> {
        self.inner().to_dtype(DType::Bool).py().map(PyTensor::wrap)
    }

    /// A host copy of a CUDA tensor; a host tensor itself (the same object, as
    /// PyTorch's `cpu()`).
    fn cpu(slf: PyRef<'_, Self>) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        if slf.inner().device().is_cpu() {
            return Ok(slf.into_pyobject(py)?.into_any().unbind());
        }
        let t = slf.inner().clone();
        let host = py
            .detach(|| t.to_device(strata::Device::Cpu))
            .py()
            .map(PyTensor::wrap)?;
        Ok(host.into_pyobject(py)?.into_any().unbind())
    }

    /// The array API's `__array_namespace__`: the `strata.array_api` module, which
    /// implements the standard's versions 2023.12 and 2024.12 (`api_version=None`: the
    /// latest).
    #[pyo3(signature = (*, api_version=None))]
    fn __array_namespace__(
        &self,
        py: Python<'_>,
        api_version: Option<&str>,
    ) -> PyResult<Py<PyAny>> {
        match api_version {
            None | Some("2023.12") | Some("2024.12") => {}
            Some(v) => {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "strata.array_api implements the array API standard versions 2023.12 and 2024.12, not {v:?}"
                )))
            }
        }
        Ok(py.import("strata.array_api")?.into_any().unbind())
    }

    /// The array API's `to_device(device, /, *, stream=None)`: this tensor when it is on
    /// `device` already, else a copy there (on the current stream; `stream` is accepted
    /// for the standard's signature).
    #[pyo3(signature = (device, /, *, stream=None))]
    fn to_device(
        &self,
        py: Python<'_>,
        device: &Bound<'_, PyAny>,
        stream: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let _ = stream;
        let dev = crate::device::opt_device("to_device", Some(device))?;
        if dev == self.inner().device() {
            return Ok(PyTensor::wrap(self.inner().clone()));
        }
        let t = self.inner().clone();
        py.detach(|| t.to_device(dev)).py().map(PyTensor::wrap)
    }

    fn index_select(&self, dim: i64, index: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let ix = int_list(index)?;
        self.inner().index_select(dim, &ix).py().map(PyTensor::wrap)
    }

    /// `take(index)`: the elements at flat positions `index` (PyTorch's `torch.take`).
    fn take(&self, index: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let ix = tensor_arg(index)?;
        self.inner().take(&ix).py().map(PyTensor::wrap)
    }

    /// `gather(dim, index)`: PyTorch's `torch.gather` (NumPy's `take_along_axis`).
    fn gather(&self, dim: i64, index: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let ix = tensor_arg(index)?;
        self.inner().gather(dim, &ix).py().map(PyTensor::wrap)
    }

    /// `masked_select(mask)`: the elements where `mask` is true, as a 1-D tensor.
    fn masked_select(&self, mask: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let m = tensor_arg(mask)?;
        self.inner().masked_select(&m).py().map(PyTensor::wrap)
    }

    /// `nonzero()` → an `(n, ndim)` int64 tensor; `nonzero(as_tuple=True)` → one 1-D
    /// tensor per dim.
    #[pyo3(signature = (*, as_tuple=false))]
    fn nonzero(&self, py: Python<'_>, as_tuple: bool) -> PyResult<Py<PyAny>> {
        if !as_tuple {
            let t = self.inner().nonzero().py()?;
            return Ok(Bound::new(py, PyTensor::wrap(t))?.into_any().unbind());
        }
        let cols = self.inner().nonzero_tuple().py()?;
        let items = cols
            .into_iter()
            .map(|c| Bound::new(py, PyTensor::wrap(c)))
            .collect::<PyResult<Vec<_>>>()?;
        Ok(PyTuple::new(py, items)?.into_any().unbind())
    }

    /// `self[indices] = values` in place (PyTorch's `index_put_`): `indices` is a tuple or
    /// list of index entries (tensors, lists, ints, slices, ...), as a key of `[]`;
    /// `accumulate=True` adds at every occurrence of a repeated index.
    #[pyo3(signature = (indices, values, accumulate=false))]
    fn index_put_<'py>(
        slf: PyRef<'py, Self>,
        indices: &Bound<'py, PyAny>,
        values: &Bound<'py, PyAny>,
        accumulate: bool,
    ) -> PyResult<PyRef<'py, Self>> {
        let key: Vec<TensorIndex> = if let Ok(t) = indices.cast::<PyTuple>() {
            t.iter().map(|k| parse_entry(&k)).collect::<PyResult<_>>()?
        } else if let Ok(l) = indices.cast::<PyList>() {
            l.iter().map(|k| parse_entry(&k)).collect::<PyResult<_>>()?
        } else {
            return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                "index_put_(): indices must be a tuple or list of indices, not {}",
                indices.get_type().name()?
            )));
        };
        let src = match as_scalar(values)? {
            Some(s) => Tensor::full(&[], s, slf.inner().dtype()).py()?,
            None => tensor_arg(values)?,
        };
        if accumulate {
            slf.inner().index_put_accumulate_(&key, &src).py()?;
        } else {
            slf.inner().index_put_(&key, &src).py()?;
        }
        Ok(slf)
    }
}

/// Reads a scalar argument or fails with a dtype error naming the op.
pub fn scalar_arg(op: &'static str, obj: &Bound<'_, PyAny>) -> PyResult<Scalar> {
    as_scalar(obj)?.ok_or_else(|| {
        err(
            ErrorKind::DType,
            op,
            format!(
                "expected a number, got {}",
                obj.get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default()
            ),
        )
    })
}
