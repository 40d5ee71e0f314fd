//! NumPy arrays read and made through NumPy's own C structures: the per-call fast paths
//! of `strata.from_numpy(a)` and `Tensor.numpy()`.
//!
//! The buffer protocol (`buffer.rs`) works for every exporter, but a NumPy array pays
//! for it twice: its `bf_getbuffer` builds a format string and a `Py_buffer`, and
//! `np.asarray` of the result goes through a `memoryview`. PyTorch's `from_numpy` /
//! `.numpy()` read and build arrays directly; so do these, for plain `numpy.ndarray`
//! objects of the dtypes strata has (anything else — subclasses such as `np.memmap`,
//! datetimes, byte-swapped data — takes the buffer protocol and its errors).
//!
//! Both rely only on NumPy's stable ABI: the leading fields of `PyArrayObject` and
//! `PyArray_Descr` (unchanged from NumPy 1.7 through 2.x: `type_num` sits at the same
//! offset in both descriptor layouts), the `type_num` codes, and the C-API table slots
//! `PyArray_DescrFromType` (45), `PyArray_NewFromDescr` (94) and `PyArray_SetBaseObject`
//! (282) of the `_ARRAY_API` capsule.
//!
//! Lifetimes follow Note [Buffer ownership] in `buffer.rs`: an imported array is held
//! (a strong reference, shown to the garbage collector) until the storage goes; an
//! exported array's base is a capsule holding an export pin on the storage, so the bytes
//! outlive the array and cannot be swapped under it, and the pin goes with the array.

use std::ffi::{c_char, c_int, c_void, CStr};

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;
use strata::{DType, Tensor};

/// The leading fields of NumPy's `PyArrayObject` (`ndarraytypes.h`).
#[repr(C)]
struct ArrayFields {
    ob_base: ffi::PyObject,
    data: *mut c_char,
    nd: c_int,
    dimensions: *const isize,
    strides: *const isize,
    base: *mut ffi::PyObject,
    descr: *const DescrHead,
    flags: c_int,
}

/// The leading fields of NumPy's `PyArray_Descr`, common to NumPy 1.x and 2.x.
#[repr(C)]
struct DescrHead {
    ob_base: ffi::PyObject,
    typeobj: *mut ffi::PyTypeObject,
    kind: c_char,
    type_char: c_char,
    byteorder: c_char,
    former_flags: c_char,
    type_num: c_int,
}

/// `NPY_ARRAY_WRITEABLE`.
const WRITEABLE: c_int = 0x0400;

/// NumPy's `type_num` of the 64-bit integers: `NPY_LONG`/`NPY_ULONG` where C `long` has
/// 64 bits (NumPy's `int64` there), else `NPY_LONGLONG`/`NPY_ULONGLONG`.
const LONG_IS_64: bool = std::mem::size_of::<std::ffi::c_long>() == 8;
const NPY_INT64: c_int = if LONG_IS_64 { 7 } else { 9 };
const NPY_UINT64: c_int = if LONG_IS_64 { 8 } else { 10 };

/// The strata dtype of a NumPy `type_num` (`None`: one strata does not have).
fn dtype_of(type_num: c_int) -> Option<DType> {
    Some(match type_num {
        0 => DType::Bool,
        1 => DType::I8,
        2 => DType::U8,
        3 => DType::I16,
        4 => DType::U16,
        5 => DType::I32,
        6 => DType::U32,
        // NPY_LONG and NPY_LONGLONG (whichever has 64 bits; `long` may have 32).
        7 if LONG_IS_64 => DType::I64,
        8 if LONG_IS_64 => DType::U64,
        7 => DType::I32,
        8 => DType::U32,
        9 => DType::I64,
        10 => DType::U64,
        23 => DType::F16,
        11 => DType::F32,
        12 => DType::F64,
        14 => DType::C64,
        15 => DType::C128,
        _ => return None,
    })
}

/// NumPy's `type_num` of a strata dtype (`None` for bfloat16, which NumPy lacks).
fn type_num_of(dt: DType) -> Option<c_int> {
    Some(match dt {
        DType::Bool => 0,
        DType::I8 => 1,
        DType::U8 => 2,
        DType::I16 => 3,
        DType::U16 => 4,
        DType::I32 => 5,
        DType::U32 => 6,
        DType::I64 => NPY_INT64,
        DType::U64 => NPY_UINT64,
        DType::F16 => 23,
        DType::F32 => 11,
        DType::F64 => 12,
        DType::C64 => 14,
        DType::C128 => 15,
        DType::BF16 => return None,
    })
}

/// `numpy.ndarray`, once NumPy has been imported by someone: before that, no object can
/// be an array, and nothing here is looked up.
static NDARRAY: PyOnceLock<Py<PyType>> = PyOnceLock::new();

fn ndarray_type(py: Python<'_>) -> Option<&'static Py<PyType>> {
    if let Some(t) = NDARRAY.get(py) {
        return Some(t);
    }
    let modules = py.import("sys").ok()?.getattr("modules").ok()?;
    let numpy = modules.get_item("numpy").ok()?;
    let ty = numpy.getattr("ndarray").ok()?.cast_into::<PyType>().ok()?;
    Some(NDARRAY.get_or_init(py, || ty.unbind()))
}

/// An imported NumPy array, held for the storage made over its memory.
struct HeldArray(Option<Py<PyAny>>);

impl Drop for HeldArray {
    fn drop(&mut self) {
        // SAFETY: `Py_IsInitialized` may be called at any time.
        if unsafe { ffi::Py_IsInitialized() } == 0 {
            // The interpreter is gone: there is nothing left to decref into.
            std::mem::forget(self.0.take());
            return;
        }
        // Most tensors go from Python (a deallocator, where this thread holds the GIL but
        // pyo3 does not know it, so `Python::attach` would take the GIL state again):
        // the reference is dropped directly.
        // SAFETY: `PyGILState_Check` may be called at any time.
        if unsafe { ffi::PyGILState_Check() } == 1 {
            if let Some(p) = self.0.take() {
                // SAFETY: the GIL is held (checked above); the strong reference this
                // value owned is released once.
                unsafe { ffi::Py_DECREF(p.into_ptr()) };
            }
            return;
        }
        Python::attach(|_py| drop(self.0.take()));
    }
}

/// The array a storage owner holds, if it is an import made here.
pub(crate) fn held_array(owner: &(dyn std::any::Any + Send + Sync)) -> Option<&Py<PyAny>> {
    owner.downcast_ref::<HeldArray>().and_then(|h| h.0.as_ref())
}

/// `from_numpy(obj)` for a plain `numpy.ndarray` of a strata dtype in native byte order;
/// `None` for anything else (the caller then takes the buffer protocol).
pub(crate) fn from_ndarray(obj: &Bound<'_, PyAny>) -> Option<PyResult<Tensor>> {
    let py = obj.py();
    let ty = obj.get_type_ptr();
    let is_array = match NDARRAY.get(py) {
        Some(t) => t.as_ptr() == ty.cast(),
        // Before the type is known, a cheap refusal first: the exact type's name, before
        // any lookup.
        None => {
            // SAFETY: a live type object's `tp_name` is a NUL-terminated string.
            let name = unsafe { CStr::from_ptr((*ty).tp_name) };
            name.to_bytes() == b"numpy.ndarray" && ndarray_type(py)?.as_ptr() == ty.cast()
        }
    };
    if !is_array {
        return None;
    }
    // SAFETY: `obj` is exactly a `numpy.ndarray`, whose object starts with these fields.
    let a = unsafe { &*(obj.as_ptr() as *const ArrayFields) };
    // SAFETY: an array's `descr` is a live dtype object.
    let d = unsafe { &*a.descr };
    let dtype = dtype_of(d.type_num)?;
    let swapped = if cfg!(target_endian = "little") {
        b'>'
    } else {
        b'<'
    };
    if d.byteorder as u8 == swapped || a.nd < 0 {
        return None;
    }
    let nd = a.nd as usize;
    let (shape, bstrides): (&[usize], &[isize]) = if nd == 0 {
        (&[], &[])
    } else {
        // SAFETY: an array has `nd` dimensions and strides, live while `obj` is.
        let (dims, strides) = unsafe {
            (
                std::slice::from_raw_parts(a.dimensions, nd),
                std::slice::from_raw_parts(a.strides, nd),
            )
        };
        if dims.iter().any(|&n| n < 0) {
            return None;
        }
        // SAFETY: the sizes are non-negative `isize`s, so the same words read as `usize`
        // hold the same values (same size and alignment).
        let dims = unsafe { std::slice::from_raw_parts(dims.as_ptr().cast::<usize>(), nd) };
        (dims, strides)
    };
    let read_only = a.flags & WRITEABLE == 0;
    let owner = Box::new(HeldArray(Some(obj.clone().unbind())));
    // SAFETY: the array's data spans its elements and stays valid while the array lives,
    // which `owner` ensures; NumPy's writeable flag gives the writability.
    Some(unsafe {
        crate::buffer::wrap_foreign(a.data.cast(), shape, bstrides, dtype, read_only, owner)
    })
}

/// `PyArray_DescrFromType(type_num)`.
type DescrFromType = unsafe extern "C" fn(c_int) -> *mut ffi::PyObject;
/// `PyArray_NewFromDescr(subtype, descr, nd, dims, strides, data, flags, obj)`.
type NewFromDescr = unsafe extern "C" fn(
    *mut ffi::PyTypeObject,
    *mut ffi::PyObject,
    c_int,
    *const isize,
    *const isize,
    *mut c_void,
    c_int,
    *mut ffi::PyObject,
) -> *mut ffi::PyObject;
/// `PyArray_SetBaseObject(array, base)`.
type SetBaseObject = unsafe extern "C" fn(*mut ffi::PyObject, *mut ffi::PyObject) -> c_int;

/// The three functions of NumPy's C-API table used by [`to_ndarray`].
struct Api {
    descr_from_type: DescrFromType,
    new_from_descr: NewFromDescr,
    set_base_object: SetBaseObject,
    ndarray: Py<PyType>,
}

/// NumPy's C-API table, from the `_ARRAY_API` capsule of its `multiarray` module
/// (`numpy._core` in NumPy 2, `numpy.core` before), imported once.
fn api(py: Python<'_>) -> PyResult<&'static Api> {
    static API: PyOnceLock<Api> = PyOnceLock::new();
    API.get_or_try_init(py, || {
        let multiarray = py
            .import("numpy._core._multiarray_umath")
            .or_else(|_| py.import("numpy.core._multiarray_umath"))?;
        let capsule = multiarray.getattr("_ARRAY_API")?;
        let capsule = capsule.cast::<pyo3::types::PyCapsule>()?;
        // SAFETY: `capsule` is a live capsule; asking by its own name always matches.
        let table = unsafe {
            ffi::PyCapsule_GetPointer(capsule.as_ptr(), ffi::PyCapsule_GetName(capsule.as_ptr()))
        } as *const *const c_void;
        if table.is_null() {
            return Err(PyErr::fetch(py));
        }
        let ndarray = py
            .import("numpy")?
            .getattr("ndarray")?
            .cast_into::<PyType>()?
            .unbind();
        // SAFETY: the capsule holds NumPy's C-API table, whose slots 45, 94 and 282 are
        // these functions in every NumPy since 1.7 (the table only ever grows).
        unsafe {
            Ok(Api {
                descr_from_type: std::mem::transmute::<*const c_void, DescrFromType>(
                    *table.add(45),
                ),
                new_from_descr: std::mem::transmute::<*const c_void, NewFromDescr>(*table.add(94)),
                set_base_object: std::mem::transmute::<*const c_void, SetBaseObject>(
                    *table.add(282),
                ),
                ndarray,
            })
        }
    })
}

const PIN_CAPSULE: &CStr = c"strata.export_pin";

/// What an exported array's base capsule holds: the export pin, and the tensor object
/// it came from (kept alive as long as the array, as a buffer export's `obj` is).
type ExportBase = (strata::storage::ExportPin, Py<PyAny>);

/// Frees what an exported array's base capsule holds.
unsafe extern "C" fn drop_pin(capsule: *mut ffi::PyObject) {
    // SAFETY: called once, with the GIL held, by the capsule made in `to_ndarray`, which
    // holds a `Box<ExportBase>` under this name.
    unsafe {
        let p = ffi::PyCapsule_GetPointer(capsule, PIN_CAPSULE.as_ptr());
        if !p.is_null() {
            let (pin, obj) = *Box::from_raw(p as *mut ExportBase);
            drop(pin);
            // Released directly: the caller (the array's deallocation) holds the GIL, and
            // PyO3 would defer it, not knowing that, or assert during finalisation.
            ffi::Py_DECREF(obj.into_ptr());
        }
    }
}

/// A NumPy array viewing the memory of `obj`'s tensor `t` (the caller has checked it is
/// a host tensor), whose base holds `obj` and an export pin on the storage.
pub(crate) fn to_ndarray<'py>(obj: &Bound<'py, PyAny>, t: &Tensor) -> PyResult<Bound<'py, PyAny>> {
    let py = obj.py();
    let api = api(py)?;
    let type_num = type_num_of(t.dtype()).ok_or_else(|| {
        crate::errors::err(
            strata::ErrorKind::DType,
            "numpy",
            "bfloat16 has no NumPy equivalent",
        )
    })?;
    let item = t.dtype().itemsize() as isize;
    let dims: Vec<isize> = t.shape().iter().map(|&n| n as isize).collect();
    // Saturating, as in `buffer::get_buffer`: only a dim that is never stepped can pass.
    let strides: Vec<isize> = t
        .strides()
        .iter()
        .map(|&s| s.saturating_mul(item))
        .collect();
    let flags = if t.is_read_only() { 0 } else { WRITEABLE };
    let pin: *mut ExportBase =
        Box::into_raw(Box::new((t.storage().pin_export(), obj.clone().unbind())));
    // SAFETY: a capsule owning `pin`, freed by `drop_pin` (or below on failure).
    let base = unsafe { ffi::PyCapsule_New(pin.cast(), PIN_CAPSULE.as_ptr(), Some(drop_pin)) };
    if base.is_null() {
        // SAFETY: the capsule was not made, so `pin` is still ours.
        drop(unsafe { Box::from_raw(pin) });
        return Err(PyErr::fetch(py));
    }
    // SAFETY: NumPy's functions called as documented: `descr` (a new reference) is
    // stolen by `PyArray_NewFromDescr`; `dims`/`strides` hold `ndim` entries and are
    // copied; the data stays valid while the pin in `base` lives, which the array keeps
    // (`PyArray_SetBaseObject` steals `base`, also on failure).
    unsafe {
        let descr = (api.descr_from_type)(type_num);
        if descr.is_null() {
            ffi::Py_DECREF(base);
            return Err(PyErr::fetch(py));
        }
        let arr = (api.new_from_descr)(
            api.ndarray.as_ptr().cast(),
            descr,
            t.ndim() as c_int,
            dims.as_ptr(),
            strides.as_ptr(),
            t.data_ptr() as *mut c_void,
            flags,
            std::ptr::null_mut(),
        );
        if arr.is_null() {
            ffi::Py_DECREF(base);
            return Err(PyErr::fetch(py));
        }
        if (api.set_base_object)(arr, base) < 0 {
            ffi::Py_DECREF(arr);
            return Err(PyErr::fetch(py));
        }
        Ok(Bound::from_owned_ptr(py, arr))
    }
}
