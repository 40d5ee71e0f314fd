//! Conversions between Python values and strata values: scalars, shapes, nested lists.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyComplex, PyFloat, PyInt, PyList, PySequence, PyTuple};
use strata::layout::DimVec;
use strata::{with_dtype, DType, Element, ErrorKind, Scalar, Tensor};

use crate::errors::{err, IntoPy};

/// A Python `bool`, `int`, `float` or `complex` (or a NumPy scalar) as a scalar; `None`
/// when `obj` is not a number.
pub fn as_scalar(obj: &Bound<'_, PyAny>) -> PyResult<Option<Scalar>> {
    if obj.is_instance_of::<PyBool>() {
        return Ok(Some(Scalar::Bool(obj.extract()?)));
    }
    if obj.is_instance_of::<PyInt>() {
        return match obj.extract::<i64>() {
            Ok(v) => Ok(Some(Scalar::Int(v))),
            Err(_) => match obj.extract::<u64>() {
                Ok(v) => Ok(Some(Scalar::UInt(v))),
                Err(_) => Err(err(
                    ErrorKind::Overflow,
                    "tensor",
                    format!("Python int too large to convert: {}", obj.repr()?),
                )),
            },
        };
    }
    if obj.is_instance_of::<PyFloat>() {
        return Ok(Some(Scalar::Float(obj.extract()?)));
    }
    if let Ok(c) = obj.cast::<PyComplex>() {
        return Ok(Some(Scalar::Complex(c.real(), c.imag())));
    }
    // NumPy scalars and other numbers.
    if obj.hasattr("dtype")? && obj.hasattr("item")? && obj.getattr("shape")?.len()? == 0 {
        if let Some(e) = numpy_kind_error("tensor", obj) {
            return Err(e);
        }
        return as_scalar(&obj.call_method0("item")?);
    }
    Ok(None)
}

/// NumPy dtype kinds with no strata equivalent: datetime64, timedelta64, bytes, str,
/// void (structured), object. (Complex is one only as `complex256`, refused by size.)
const FOREIGN_KINDS: &str = "MmSUVO";

/// The `DTypeError` for a NumPy array or scalar whose dtype strata cannot hold (a
/// datetime64 scalar, say, exports its 8 bytes as a uint8 buffer), naming the dtype;
/// `None` for anything else (no `dtype`, or a numeric one).
pub fn numpy_kind_error(op: &'static str, obj: &Bound<'_, PyAny>) -> Option<PyErr> {
    let dtype = obj.getattr("dtype").ok()?;
    let kind: String = dtype.getattr("kind").ok()?.extract().ok()?;
    let size: usize = dtype.getattr("itemsize").ok()?.extract().ok()?;
    // Extended precision (float128, complex256) has no strata dtype either.
    let wide = matches!((kind.as_str(), size), ("f", 9..) | ("c", 17..));
    let kind = kind
        .chars()
        .next()
        .filter(|k| FOREIGN_KINDS.contains(*k) || wide)?;
    let what = match kind {
        'f' => "extended precision",
        'c' => "extended precision complex numbers",
        'M' | 'm' => "dates and durations",
        'S' | 'U' => "strings",
        'V' => "structured records",
        _ => "Python objects",
    };
    let name = dtype
        .str()
        .map(|s| s.to_string())
        .unwrap_or_else(|_| kind.to_string());
    Some(err(
        ErrorKind::DType,
        op,
        format!(
            "NumPy dtype {name} ({what}) is unsupported: strata holds bool, (u)int8-64, float16/32/64, bfloat16 and complex64/128"
        ),
    ))
}

/// Integer arguments (dims, sizes), the core's small-vector type for dims: inline, without
/// a heap allocation, up to [`INLINE_DIMS`](strata::layout::dims::INLINE_DIMS) of them.
pub type Ints = DimVec<i64>;

/// Shape arguments given as `f(2, 3)` or `f((2, 3))` / `f([2, 3])`.
pub fn shape_args(args: &Bound<'_, PyTuple>) -> PyResult<Vec<i64>> {
    let mut out = Ints::new();
    int_args(args, &mut out)?;
    Ok(out.into_vec())
}

/// [`shape_args`] into `out`, without a heap allocation for the usual few dims (the hot
/// view methods `view`, `reshape`, `permute`, `flip` and `expand` take their dims through
/// here). `out` is the caller's: a list returned by value is moved out in wide loads of
/// values just stored one by one, a store-forwarding stall.
pub fn int_args(args: &Bound<'_, PyTuple>, out: &mut Ints) -> PyResult<()> {
    if args.len() == 1 {
        let first = args.get_item(0)?;
        if !first.is_instance_of::<PyInt>() {
            out.extend(int_list(&first)?);
            return Ok(());
        }
    }
    for a in args.iter() {
        out.push(index_arg(&a)?);
    }
    Ok(())
}

/// The value of an exact `int` (checked by the caller). pyo3's `extract` asks for the
/// pending error whenever the value is -1 (the C API's error sentinel), which takes and
/// normalizes the error state, a large part of a cheap call like `t.view(-1)`. An int
/// cannot fail the conversion but by overflow, which `extract` then reports with its usual
/// error.
#[inline]
pub fn exact_int(obj: &Bound<'_, PyAny>) -> PyResult<i64> {
    let mut overflow = 0;
    // SAFETY: `obj` is a live int (the caller checked its exact type) borrowed for the
    // call, with the thread attached; `overflow` is a local.
    let v = unsafe { pyo3::ffi::PyLong_AsLongLongAndOverflow(obj.as_ptr(), &mut overflow) };
    if overflow == 0 && v != -1 {
        return Ok(v);
    }
    // SAFETY: as above; only reads the thread's error indicator.
    if overflow == 0 && unsafe { pyo3::ffi::PyErr_Occurred() }.is_null() {
        return Ok(v);
    }
    obj.extract()
}

/// An integer argument (anything with `__index__`).
pub fn index_arg(obj: &Bound<'_, PyAny>) -> PyResult<i64> {
    // A plain int is its own `__index__`: read it directly (the common case; it skips two
    // attribute lookups and a call).
    if obj.is_exact_instance_of::<PyInt>() {
        return exact_int(obj);
    }
    if obj.is_instance_of::<PyBool>() || obj.is_instance_of::<PyFloat>() {
        return Err(err(
            ErrorKind::DType,
            "shape",
            format!("expected an integer, got {}", obj.repr()?),
        ));
    }
    let py = obj.py();
    if !obj.hasattr(intern!(py, "__index__"))? {
        return Err(err(
            ErrorKind::DType,
            "shape",
            format!("expected an integer, got {}", obj.get_type().name()?),
        ));
    }
    obj.call_method0(intern!(py, "__index__"))?.extract()
}

/// A sequence of integers (a tuple, list or 1-D integer tensor).
pub fn int_list(obj: &Bound<'_, PyAny>) -> PyResult<Vec<i64>> {
    if obj.is_instance_of::<PyInt>() {
        return Ok(vec![index_arg(obj)?]);
    }
    if let Ok(t) = obj.cast::<crate::tensor::PyTensor>() {
        let t = t.get().inner();
        if !(t.dtype().is_int()) || t.ndim() > 1 {
            return Err(err(
                ErrorKind::DType,
                "shape",
                format!(
                    "expected a 0-d or 1-D integer tensor, got {} of shape {:?}",
                    t.dtype(),
                    t.shape()
                ),
            ));
        }
        return t
            .to_dtype(DType::I64)
            .and_then(|t| t.contiguous())
            .and_then(|t| t.to_vec::<i64>())
            .map_err(crate::errors::to_py);
    }
    // A NumPy integer array (or anything array-like with an integer dtype and tolist()).
    if obj.hasattr("dtype")? && obj.hasattr("tolist")? && obj.hasattr("ndim")? {
        let kind: String = obj
            .getattr("dtype")?
            .getattr("kind")?
            .extract()
            .unwrap_or_default();
        let ndim: usize = obj.getattr("ndim")?.extract()?;
        if (kind == "i" || kind == "u") && ndim <= 1 {
            let list = obj.call_method0("tolist")?;
            if ndim == 0 {
                return Ok(vec![index_arg(&list)?]);
            }
            return int_list(&list);
        }
    }
    let seq = obj.cast::<PySequence>().map_err(|_| {
        err(
            ErrorKind::DType,
            "shape",
            format!(
                "expected a sequence of integers, got {}",
                obj.repr().map(|r| r.to_string()).unwrap_or_default()
            ),
        )
    })?;
    (0..seq.len()?)
        .map(|i| index_arg(&seq.get_item(i)?))
        .collect()
}

/// Non-negative sizes.
pub fn sizes(op: &'static str, v: &[i64]) -> PyResult<Vec<usize>> {
    v.iter()
        .map(|&n| {
            usize::try_from(n).map_err(|_| {
                err(
                    ErrorKind::Value,
                    op,
                    format!("negative dimension {n} in size {v:?}"),
                )
            })
        })
        .collect()
}

/// The values of nested Python sequences, flattened, with their shape.
struct Nested {
    shape: Vec<usize>,
    values: Vec<Scalar>,
    /// The first Python int above `i64::MAX` seen (only a uint64 tensor can hold it).
    big: Option<String>,
}

fn walk(obj: &Bound<'_, PyAny>, depth: usize, out: &mut Nested) -> PyResult<()> {
    if depth > strata::tensor::MAX_NDIM {
        return Err(err(
            ErrorKind::Shape,
            "tensor",
            format!(
                "nested sequences deeper than {} dims",
                strata::tensor::MAX_NDIM
            ),
        ));
    }
    if obj.is_instance_of::<PyInt>()
        && !obj.is_instance_of::<PyBool>()
        && out.big.is_none()
        && obj.extract::<i64>().is_err()
    {
        out.big = Some(obj.repr()?.to_string());
    }
    if let Some(s) = as_scalar(obj)? {
        if depth != out.shape.len() {
            return Err(err(
                ErrorKind::Shape,
                "tensor",
                format!("expected a sequence at depth {depth}, got a number"),
            ));
        }
        out.values.push(s);
        return Ok(());
    }
    if obj.extract::<PyRef<'_, crate::tensor::PyTensor>>().is_ok() {
        let t = obj.extract::<PyRef<'_, crate::tensor::PyTensor>>()?;
        if t.inner().numel() == 1 && t.inner().ndim() == 0 {
            out.values.push(t.inner().item().py()?);
            return Ok(());
        }
        let list = crate::tensor::to_list(obj.py(), t.inner())?;
        return walk(&list.into_bound(obj.py()), depth, out);
    }
    // A NumPy array inside a list (`[np.array([1, 2]), …]`): its elements.
    if obj.hasattr("dtype")? && obj.hasattr("tolist")? && obj.hasattr("ndim")? {
        let list = obj.call_method0("tolist")?;
        if !list.is(obj) {
            return walk(&list, depth, out);
        }
    }
    let seq = obj.cast::<PySequence>().map_err(|_| {
        err(
            ErrorKind::DType,
            "tensor",
            format!(
                "Could not infer dtype of {}",
                obj.get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default()
            ),
        )
    })?;
    if obj.is_instance_of::<pyo3::types::PyString>() {
        return Err(err(
            ErrorKind::DType,
            "tensor",
            "Could not infer dtype of str",
        ));
    }
    let n = seq.len()?;
    if depth == out.shape.len() {
        if !out.values.is_empty() {
            return Err(err(
                ErrorKind::Shape,
                "tensor",
                format!("expected a number at depth {depth}, got a sequence"),
            ));
        }
        out.shape.push(n);
    } else if out.shape[depth] != n {
        return Err(err(
            ErrorKind::Shape,
            "tensor",
            format!(
                "expected sequence of length {} at dim {depth} (got {n})",
                out.shape[depth]
            ),
        ));
    }
    for i in 0..n {
        walk(&seq.get_item(i)?, depth + 1, out)?;
    }
    Ok(())
}

/// PyTorch's inference: complex64 if any complex, else float32 if any float, else int64
/// if any int, else bool.
fn infer_dtype(values: &[Scalar]) -> DType {
    if values.iter().any(|v| matches!(v, Scalar::Complex(..))) {
        DType::C64
    } else if values.iter().any(|v| matches!(v, Scalar::Float(_))) {
        DType::F32
    } else if values
        .iter()
        .any(|v| matches!(v, Scalar::Int(_) | Scalar::UInt(_)))
    {
        DType::I64
    } else if values.is_empty() {
        DType::F32
    } else {
        DType::Bool
    }
}

/// A tensor from a number or nested sequences (always a copy).
pub fn from_nested(obj: &Bound<'_, PyAny>, dtype: Option<DType>) -> PyResult<Tensor> {
    let mut n = Nested {
        shape: Vec::new(),
        values: Vec::new(),
        big: None,
    };
    walk(obj, 0, &mut n)?;
    let dtype = dtype.unwrap_or_else(|| infer_dtype(&n.values));
    if let (Some(big), true) = (&n.big, dtype != DType::U64) {
        // Only uint64 holds ints above 2**63 - 1; PyTorch raises "Overflow when unpacking long".
        return Err(err(
            ErrorKind::Overflow,
            "tensor",
            format!("Overflow when unpacking long: {big} does not fit in {dtype}"),
        ));
    }
    with_dtype!(dtype, T => {
        let v: Vec<T> = n.values.iter().map(|s| s.to::<T>()).collect();
        Tensor::from_vec(v, &n.shape).py()
    })
}

/// One element as a Python object.
pub fn scalar_to_py(py: Python<'_>, s: Scalar) -> PyResult<Py<PyAny>> {
    Ok(match s {
        Scalar::Bool(b) => PyBool::new(py, b).to_owned().into_any().unbind(),
        Scalar::Int(i) => i.into_pyobject(py)?.into_any().unbind(),
        Scalar::UInt(u) => u.into_pyobject(py)?.into_any().unbind(),
        Scalar::Float(f) => PyFloat::new(py, f).into_any().unbind(),
        Scalar::Complex(re, im) => PyComplex::from_doubles(py, re, im).into_any().unbind(),
    })
}

/// Reads the elements of a tensor as Python objects in row-major order.
pub fn elements(py: Python<'_>, t: &Tensor) -> PyResult<Vec<Py<PyAny>>> {
    with_dtype!(t.dtype(), T => {
        let v: Vec<T> = t.to_vec::<T>().py()?;
        let mut out = strata::try_vec("tolist", v.len()).py()?;
        for x in v {
            out.push(element_to_py(py, x)?);
        }
        Ok(out)
    })
}

fn element_to_py<T: Element>(py: Python<'_>, x: T) -> PyResult<Py<PyAny>> {
    if T::DTYPE == DType::U64 {
        return Ok(x.to_u64().into_pyobject(py)?.into_any().unbind());
    }
    scalar_to_py(py, Scalar::from_element(x))
}

/// Builds nested lists of `shape` from flat row-major elements.
pub fn nest(py: Python<'_>, shape: &[usize], flat: &[Py<PyAny>]) -> PyResult<Py<PyAny>> {
    if shape.is_empty() {
        return Ok(flat[0].clone_ref(py));
    }
    // 0 when a later dim is 0, even if the dims before it multiply past `usize`.
    let inner = strata::layout::numel_of(&shape[1..]);
    let mut items = Vec::new();
    items.try_reserve(shape[0]).map_err(|_| {
        pyo3::exceptions::PyMemoryError::new_err(format!(
            "tolist: cannot build a list of {} items",
            shape[0]
        ))
    })?;
    for i in 0..shape[0] {
        items.push(nest(py, &shape[1..], &flat[i * inner..(i + 1) * inner])?);
    }
    Ok(PyList::new(py, items)?.into_any().unbind())
}
