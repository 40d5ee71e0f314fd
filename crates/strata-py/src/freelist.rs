//! A free list of `Tensor` objects, as CPython keeps for floats and tuples, and the
//! type's own deallocator.
//!
//! A view op from Python is little work, and a fair part of it is the object: pyo3 makes
//! every class a GC type, so each new view is a pymalloc allocation with a GC header,
//! zero-filled, linked into the collector's youngest generation (and counted towards its
//! next collection), then unlinked and freed when it goes, through pyo3's deallocator,
//! which marks the thread attached and catches panics around dropping the value. Here,
//! freed `Tensor` objects of the exact type are kept (up to [`CAPACITY`]) and handed out
//! again by the type's allocator, which clears what lies outside the value (the value is
//! always written by whoever allocates: pyo3's initializer or `new_view`) and takes a
//! reference to the type, as `PyType_GenericAlloc` does; the deallocator does what pyo3's
//! does, directly: a good part of a view op's per-call cost from Python (see the per-call
//! cases of `python/bench/bench_numpy.py`).
//! Subclass instances go pyo3's and CPython's generic ways.
//!
//! The list is touched only by the type's slots, which CPython calls with the GIL held;
//! none of this is installed when the interpreter runs without a GIL.

use std::cell::{Cell, UnsafeCell};
use std::sync::OnceLock;

use pyo3::ffi;
use pyo3::prelude::*;

/// Most objects kept.
const CAPACITY: usize = 64;

/// What the slots need to know of the exact `Tensor` type, fixed at [`install`].
struct Shape {
    tp: usize,
    /// `tp_basicsize`.
    size: usize,
    /// Where the value (a `PyTensor`) lies in the object: `[start, end)`.
    value: (usize, usize),
    /// `tp_weaklistoffset`.
    weaklist: usize,
    /// pyo3's deallocator, for subclass instances.
    pyo3_dealloc: ffi::destructor,
}

static SHAPE: OnceLock<Shape> = OnceLock::new();

struct FreeList {
    items: UnsafeCell<[*mut ffi::PyObject; CAPACITY]>,
    len: Cell<usize>,
}

// SAFETY: only the type's slots touch the list, and CPython calls them with the GIL
// held (they are installed only when there is one), so accesses never overlap.
unsafe impl Sync for FreeList {}

static FREE: FreeList = FreeList {
    items: UnsafeCell::new([std::ptr::null_mut(); CAPACITY]),
    len: Cell::new(0),
};

/// Makes `tp`, the `Tensor` type, allocate from and free to the list, with its value at
/// byte `value_at` of each object (see `tensor::direct_offset`).
///
/// # Safety
/// `tp` must be the live, ready type object of `PyTensor`, a heap GC type whose instances
/// are freed with `PyObject_GC_Del` (what pyo3 builds), with a `PyTensor` at `value_at`;
/// nothing is done unless its allocator is `PyType_GenericAlloc`.
pub unsafe fn install(py: Python<'_>, tp: *mut ffi::PyTypeObject, value_at: usize) -> PyResult<()> {
    // Free-threaded CPython (3.13t) reports whether the GIL is on.
    let sys = py.import("sys")?;
    if sys.hasattr("_is_gil_enabled")? && !sys.call_method0("_is_gil_enabled")?.is_truthy()? {
        return Ok(());
    }
    // SAFETY: forwarded to the caller; the slots are plain fields of a heap type.
    unsafe {
        let generic = ffi::PyType_GenericAlloc as ffi::allocfunc;
        let (Some(alloc), Some(dealloc)) = ((*tp).tp_alloc, (*tp).tp_dealloc) else {
            return Ok(());
        };
        let size = usize::try_from((*tp).tp_basicsize).unwrap_or(0);
        let weaklist = usize::try_from((*tp).tp_weaklistoffset).unwrap_or(0);
        let value = (
            value_at,
            value_at + std::mem::size_of::<crate::tensor::PyTensor>(),
        );
        let slot = std::mem::size_of::<*mut ffi::PyObject>();
        let weak_ok = weaklist == 0 || (weaklist >= value.1 && weaklist + slot <= size);
        if !std::ptr::fn_addr_eq(alloc, generic) || value.1 > size || !weak_ok {
            return Ok(());
        }
        let shape = Shape {
            tp: tp as usize,
            size,
            value,
            weaklist,
            pyo3_dealloc: dealloc,
        };
        if SHAPE.set(shape).is_err() {
            return Ok(());
        }
        (*tp).tp_alloc = Some(tensor_alloc);
        (*tp).tp_free = Some(tensor_free);
        (*tp).tp_dealloc = Some(tensor_dealloc);
    }
    Ok(())
}

/// Whether `f` is the free list's allocator or `PyType_GenericAlloc`: both give objects
/// zero-filled outside the value.
pub fn is_generic_alloc(f: ffi::allocfunc) -> bool {
    std::ptr::fn_addr_eq(f, tensor_alloc as ffi::allocfunc)
        || std::ptr::fn_addr_eq(f, ffi::PyType_GenericAlloc as ffi::allocfunc)
}

/// Objects on the list now, for the tests.
pub fn kept() -> usize {
    FREE.len.get()
}

/// The shape, if `tp` is the exact `Tensor` type.
fn exact(tp: *mut ffi::PyTypeObject) -> Option<&'static Shape> {
    SHAPE.get().filter(|s| s.tp == tp as usize)
}

/// `tp_alloc`: a kept object if `tp` is the exact `Tensor` type, else a fresh one. The
/// object holds one reference and one to its type and is tracked by the collector; a
/// fresh one is zero-filled, a kept one outside its value (which its allocator writes
/// before anything can read it, as it does the zeros of a fresh one).
unsafe extern "C" fn tensor_alloc(
    tp: *mut ffi::PyTypeObject,
    nitems: ffi::Py_ssize_t,
) -> *mut ffi::PyObject {
    let n = FREE.len.get();
    let Some(s) = exact(tp).filter(|_| n > 0 && nitems == 0) else {
        // SAFETY: forwarded from CPython's call.
        return unsafe { ffi::PyType_GenericAlloc(tp, nitems) };
    };
    // SAFETY: the GIL is held (module docs); entry `n - 1` is a kept object: a block of
    // `s.size` bytes from `PyType_GenericAlloc` for this type, untracked (the deallocator
    // untracked it before freeing), its GC header still in front of it.
    unsafe {
        FREE.len.set(n - 1);
        let obj = (*FREE.items.get())[n - 1];
        let bytes = obj.cast::<u8>();
        let header = std::mem::size_of::<ffi::PyObject>();
        std::ptr::write_bytes(bytes, 0, header);
        std::ptr::write_bytes(bytes.add(header), 0, s.value.0 - header);
        std::ptr::write_bytes(bytes.add(s.value.1), 0, s.size - s.value.1);
        (*obj).ob_type = tp;
        ffi::Py_INCREF(obj);
        ffi::Py_INCREF(tp.cast());
        ffi::PyObject_GC_Track(obj.cast());
        obj
    }
}

/// `tp_free`: keeps an exact `Tensor` object if there is room, else frees it.
unsafe extern "C" fn tensor_free(p: *mut std::ffi::c_void) {
    let obj = p.cast::<ffi::PyObject>();
    let n = FREE.len.get();
    // SAFETY: CPython or a deallocator passes an object of a type using this slot, with
    // the GIL held; its type is still referenced by the object here.
    unsafe {
        if n < CAPACITY && exact(ffi::Py_TYPE(obj)).is_some() {
            (*FREE.items.get())[n] = obj;
            FREE.len.set(n + 1);
        } else {
            ffi::PyObject_GC_Del(p);
        }
    }
}

/// `tp_dealloc`, for the exact type what pyo3's does (untrack, drop the value, clear weak
/// references, free, release the type); subclass instances go to pyo3's.
unsafe extern "C" fn tensor_dealloc(obj: *mut ffi::PyObject) {
    // SAFETY: CPython calls this with the GIL held on an object whose last reference
    // went; the shape describes the exact type's objects.
    unsafe {
        let tp = ffi::Py_TYPE(obj);
        let Some(s) = exact(tp) else {
            // A subclass instance (the slot is installed only once SHAPE is set).
            if let Some(s) = SHAPE.get() {
                crate::errors::preserving_error(|| (s.pyo3_dealloc)(obj));
            }
            return;
        };
        ffi::PyObject_GC_UnTrack(obj.cast());
        let value = obj
            .cast::<u8>()
            .add(s.value.0)
            .cast::<crate::tensor::PyTensor>();
        // A panic cannot cross into CPython; dropping a tensor does not panic, but if it
        // did, the value would be leaked rather than the process aborted.
        // The last handle of a storage may run a foreign owner's code (a DLPack deleter in
        // Python, a buffer release), and this may run while an exception unwinds.
        crate::errors::preserving_error(|| {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                std::ptr::drop_in_place(value)
            }));
        });
        let weaklist = obj
            .cast::<u8>()
            .add(s.weaklist)
            .cast::<*mut ffi::PyObject>();
        if s.weaklist != 0 && !weaklist.read().is_null() {
            ffi::PyObject_ClearWeakRefs(obj);
        }
        tensor_free(obj.cast());
        ffi::Py_DECREF(tp.cast());
    }
}
