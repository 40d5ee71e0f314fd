"""Hostile shapes, strides and offsets from Python: every view op, constructor,
``as_strided``, indexing, ops and conversions driven with extreme integers (±2^62,
2^63-1, -2^63, 2^64, 2^40-size dims beside 0-size ones), nan/inf where a number is
expected, and wrong types.

What is asserted: a result, or a ``StrataError`` / ``TypeError`` / ``ValueError`` /
``IndexError`` / ``OverflowError`` / ``BufferError`` — never a panic (pyo3's
``PanicException`` is a ``BaseException``, which the ``except`` clauses below do not
catch, so it fails the test), an abort or a hang. Results are checked against an
index-arithmetic model (shape, strides, element count, and for small tensors the values,
which are storage indices of an ``arange`` base).

Nothing in-process allocates more than a few kilobytes: huge shapes appear only in tensors
without elements, in stride-0 views, or in calls that must refuse them. Cases that could
try a huge allocation run in a child process (``_isolated``).
"""

from __future__ import annotations

import ctypes
import math
import pickle

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as hs

import strata as st
from _isolated import assert_clean
from _strata_helpers import budget

P40 = 2**40
P62 = 2**62
IMAX = 2**63 - 1
IMIN = -(2**63)

ALLOWED = (st.StrataError, TypeError, ValueError, IndexError, OverflowError, BufferError)
SMALL = 512  # tensors up to this many elements are materialised and compared


def attempt(f, *args, **kwargs):
    """``f(*args)``, or ``None`` when it raises an allowed error; a panic propagates."""
    try:
        return f(*args, **kwargs)
    except ALLOWED as e:
        assert str(e) or isinstance(e, (TypeError, BufferError)), f"empty message from {f}"
        return None


def numel(shape) -> int:
    return 0 if 0 in shape else math.prod(shape)


def base() -> st.Tensor:
    return st.arange(64, dtype=st.int64)


def model_index(t: st.Tensor, flat: int) -> int:
    pos = t.storage_offset()
    for n, s in zip(reversed(t.shape), reversed(t.stride())):
        pos += (flat % n) * s
        flat //= n
    return pos


def list_count(shape) -> int:
    """How many Python lists ``tolist`` builds (lists inside a 0 dim are not)."""
    total, run = 0, 1
    for n in shape[:-1]:
        run *= n
        total += run
        if n == 0:
            break
    return total


def check(t: st.Tensor, indexed: bool):
    """Invariants of a tensor the API returned; ``indexed``: values are storage indices."""
    shape, strides = tuple(t.shape), tuple(t.stride())
    assert len(shape) == len(strides) == t.ndim
    assert all(0 <= n <= IMAX for n in shape)
    assert all(IMIN <= s <= IMAX for s in strides)
    n = numel(shape)
    assert t.numel() == n <= IMAX
    ptr = t.data_ptr()
    assert 0 <= ptr < 2**64
    if n == 0:
        if list_count(shape) <= 10_000:
            assert np.asarray(t.tolist(), dtype=object).size == 0
        arr = attempt(np.asarray, t)  # NumPy refuses shapes whose sizes multiply past 2^63
        assert arr is None or arr.shape == shape
        mv = attempt(memoryview, t)
        if mv is not None:
            assert mv.shape == shape and mv.nbytes == 0
            mv.release()
        assert t.__array_interface__["shape"] == shape
        arr = attempt(np.from_dlpack, t)
        assert arr is None or arr.shape == shape
        assert tuple(st.from_dlpack(t).shape) == shape
        c = t.contiguous()
        assert tuple(c.shape) == shape and c.is_contiguous()
        assert tuple((t + 1).shape) == shape
        if t.dtype == st.int64:
            assert t.sum().item() == 0
        for proto in (2, 5):
            assert tuple(pickle.loads(pickle.dumps(t, protocol=proto)).shape) == shape
        return
    # Elements: every storage index inside the storage.
    lo = hi = t.storage_offset()
    for n_, s in zip(shape, strides):
        span = (n_ - 1) * s
        lo, hi = (lo + span, hi) if span < 0 else (lo, hi + span)
    assert lo >= 0
    if n <= SMALL and t.dtype == st.int64:
        want = [model_index(t, f) for f in range(n)] if indexed else None
        got = np.asarray(t).reshape(-1).tolist()
        if want is not None:
            assert got == want
            assert t.contiguous().reshape(-1).tolist() == want
            assert (t + 1).reshape(-1).tolist() == [w + 1 for w in want]
            assert t.sum().item() == sum(want)
            assert np.from_dlpack(t).reshape(-1).tolist() == want
            assert pickle.loads(pickle.dumps(t)).reshape(-1).tolist() == want


# ---------------------------------------------------------------------------------------
# Strategies
# ---------------------------------------------------------------------------------------

EXTREME = [0, 1, 2, 3, -1, -2, P40, -P40, P62, -P62, IMAX, IMIN, IMAX - 1, 2**64, -(2**64)]
ints = hs.one_of(hs.integers(-4, 4), hs.sampled_from(EXTREME))
sizes = hs.one_of(hs.integers(0, 4), hs.sampled_from([0, 0, P40, P62, IMAX, 2**64, -1]))
junk = hs.sampled_from(["x", None, 1.5, float("nan"), float("inf"), [1, "a"], object()])
arg = hs.one_of(ints, ints, ints, junk)
small_list = lambda s: hs.lists(s, max_size=4)  # noqa: E731


@hs.composite
def starts(draw):
    """A start tensor (maybe empty beside huge dims, maybe with extreme metadata) and
    whether its values are storage indices."""
    kind = draw(hs.integers(0, 2))
    if kind == 0:
        shape = draw(hs.lists(sizes, min_size=1, max_size=3))
        shape.insert(draw(hs.integers(0, len(shape))), 0)
        return ("zeros", shape), False
    shape = draw(small_list(sizes))
    strides = draw(hs.lists(hs.one_of(ints, hs.integers(-3, 3)), min_size=len(shape), max_size=len(shape)))
    offset = draw(hs.one_of(hs.integers(0, 63), hs.sampled_from([P62, IMAX, 2**64, -1])))
    return ("strided", shape, strides, offset), True


def make(spec):
    if spec[0] == "zeros":
        return attempt(st.zeros, *spec[1], dtype=st.int64)
    _, shape, strides, offset = spec
    return attempt(base().as_strided, shape, strides, offset)


def split_guard(t, d, pieces_of):
    """Refuses (as ``None``) a split into a huge number of pieces: legal, slow to check."""
    try:
        n = t.shape[d]
    except (IndexError, TypeError):
        return True
    return pieces_of(n) < 4096


OPS = {
    "view": lambda t, a: t.view(*a[:3]),
    "reshape": lambda t, a: t.reshape(a[:3]),
    "flatten": lambda t, a: t.flatten(a[0], a[1]),
    "transpose": lambda t, a: t.transpose(a[0], a[1]),
    "T": lambda t, a: t.T,
    "mT": lambda t, a: t.mT,
    "permute": lambda t, a: t.permute(*a[:3]),
    "movedim": lambda t, a: t.movedim(a[0], a[1]),
    "narrow": lambda t, a: t.narrow(a[0], a[1], a[2]),
    "select": lambda t, a: t.select(a[0], a[1]),
    "flip": lambda t, a: t.flip(a[:2]),
    "expand": lambda t, a: t.expand(*a[:4]),
    "broadcast_to": lambda t, a: t.broadcast_to(a[:4]),
    "squeeze": lambda t, a: t.squeeze(a[0]),
    "unsqueeze": lambda t, a: t.unsqueeze(a[0]),
    "as_strided": lambda t, a: t.as_strided(a[:2], a[2:4], a[4]),
    "unfold": lambda t, a: t.unfold(a[0], a[1], a[2]),
    "diagonal": lambda t, a: t.diagonal(a[0], a[1], a[2]),
    "split": lambda t, a: t.split(a[0], a[1])[0] if split_guard(t, a[1], lambda n: n // max(a[0], 1) if isinstance(a[0], int) else 0) else None,
    "chunk": lambda t, a: t.chunk(min(a[0], 64) if isinstance(a[0], int) else a[0], a[1])[0],
    "getitem_int": lambda t, a: t[a[0]],
    "getitem_slice": lambda t, a: t[a[0] : a[1] : a[2]],
    "getitem_tuple": lambda t, a: t[a[0], ..., a[1] : a[2]],
    "getitem_newaxis": lambda t, a: t[None, a[0] :: a[1]],
    "getitem_list": lambda t, a: t[[a[0], a[1]]],
    "getitem_tensor": lambda t, a: t[st.tensor([a[0] % 4 if isinstance(a[0], int) else 0])],
    "view_dtype": lambda t, a: t.view(st.uint8),
}


# ---------------------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------------------


@budget(200)
@given(starts(), hs.lists(hs.tuples(hs.sampled_from(sorted(OPS)), hs.lists(arg, min_size=5, max_size=5)), min_size=1, max_size=4))
def test_view_chains_never_panic(start, chain):
    spec, indexed = start
    t = make(spec)
    if t is None:
        return
    check(t, indexed)
    for name, a in chain:
        r = attempt(OPS[name], t, a)
        if r is None:
            continue
        t = r
        if name in ("view_dtype", "reshape", "flatten", "getitem_list", "getitem_tensor"):
            indexed = False  # a copy (or another dtype): values are no longer indices
        check(t, indexed and t.dtype == st.int64)


@budget(150)
@given(hs.lists(hs.one_of(sizes, junk), max_size=4), hs.one_of(ints, junk))
def test_constructors_never_panic(shape, fill):
    ok_shape = all(isinstance(n, int) for n in shape)
    if ok_shape and all(0 <= n <= IMAX for n in shape):
        n = numel(shape)
        if SMALL < n and n * 8 <= IMAX:
            return  # a real (huge) allocation: not in-process
    for ctor in (st.zeros, st.empty, st.ones):
        t = attempt(ctor, *shape)
        if t is not None:
            assert list(t.shape) == shape
            check(t, False)
    t = attempt(st.full, shape, fill)
    if t is not None:
        assert list(t.shape) == shape


@budget(150)
@given(arg, arg, arg)
def test_arange_never_panics(a, b, c):
    ok = all(isinstance(x, int) for x in (a, b, c)) and c != 0
    if ok:
        length = max(0, -((a - b) // c))
        if SMALL < length <= IMAX:
            return  # a real allocation
    t = attempt(st.arange, a, b, c)
    if t is not None and ok:
        assert t.tolist() == list(range(a, b, c))


@budget(150)
@given(hs.lists(hs.sampled_from([0, 1, 2, 3, P40, 2**31]), min_size=1, max_size=4),
       hs.lists(hs.sampled_from([0, 8, -8, 16, 2**40, 2**62, -(2**62), 2**63 - 8]), min_size=4, max_size=4))
def test_from_numpy_of_strided_arrays_never_panics(shape, bstrides):
    """NumPy's own ``as_strided`` can build arrays of any extent (it checks nothing):
    strata must refuse those whose extent overflows, and view the others exactly."""
    owner = np.arange(64, dtype=np.int64)
    try:
        a = np.lib.stride_tricks.as_strided(owner, shape=shape, strides=bstrides[: len(shape)])
    except ValueError:
        return
    t = attempt(st.from_numpy, a)
    if t is None:
        return
    assert tuple(t.shape) == a.shape
    if a.size:
        # Strides of size-1 dims are never stepped (the buffer protocol may rewrite them).
        assert [s * 8 for n, s in zip(a.shape, t.stride()) if n > 1] == [
            s for n, s in zip(a.shape, a.strides) if n > 1
        ]
    if a.size:
        assert t.data_ptr() == a.ctypes.data
    else:
        assert t.numel() == 0


# ---------------------------------------------------------------------------------------
# Hand-made DLPack capsules
# ---------------------------------------------------------------------------------------


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [
        ("dl_tensor", DLTensor),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
    ]


_PyCapsule_New = ctypes.pythonapi.PyCapsule_New
_PyCapsule_New.restype = ctypes.py_object
_PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_KEEP = []  # producers' memory, kept for the life of the test process (no deleter)


class Producer:
    """A legacy DLPack producer over ``owner``'s memory with the given metadata (no
    deleter: the memory is kept alive in ``_KEEP``)."""

    def __init__(self, owner: np.ndarray, shape, strides, byte_offset=0, ndim=None):
        n = len(shape)
        sh = (ctypes.c_int64 * max(n, 1))(*shape)
        stp = (ctypes.c_int64 * max(n, 1))(*strides) if strides is not None else None
        m = DLManagedTensor()
        m.dl_tensor.data = owner.ctypes.data
        m.dl_tensor.device = DLDevice(1, 0)
        m.dl_tensor.ndim = n if ndim is None else ndim
        m.dl_tensor.dtype = DLDataType(0, 64, 1)  # int64
        m.dl_tensor.shape = ctypes.cast(sh, ctypes.POINTER(ctypes.c_int64))
        m.dl_tensor.strides = ctypes.cast(stp, ctypes.POINTER(ctypes.c_int64)) if stp is not None else None
        m.dl_tensor.byte_offset = byte_offset
        _KEEP.append((owner, sh, stp, m))
        self.m = m

    def __dlpack__(self, **kw):
        return _PyCapsule_New(ctypes.addressof(self.m), b"dltensor", None)

    def __dlpack_device__(self):
        return (1, 0)


dl_sizes = hs.sampled_from([0, 1, 2, 3, P40, P62, IMAX])
dl_strides = hs.sampled_from([0, 1, -1, 2, P40, -P40, P62, -P62, IMAX, IMIN])


@budget(150)
@given(hs.lists(dl_sizes, max_size=4), hs.lists(dl_strides, min_size=4, max_size=4),
       hs.sampled_from([0, 8, 2**62, 2**63, 2**64 - 8]), hs.booleans())
def test_dlpack_import_of_extreme_producers_never_panics(shape, strides, byte_offset, with_strides):
    owner = np.arange(64, dtype=np.int64)
    p = Producer(owner, shape, strides[: len(shape)] if with_strides else None, byte_offset)
    t = attempt(st.from_dlpack, p)
    if t is None:
        return
    assert list(t.shape) == shape
    assert t.numel() == numel(shape)
    if t.numel():
        # The producer's word is all strata has: a view over its pointer, with the
        # producer's extent (which may well lie outside `owner`: not read then).
        assert byte_offset % 8 == 0
        assert t.data_ptr() == owner.ctypes.data + byte_offset
        lo = hi = byte_offset // 8
        for n, s in zip(t.shape, t.stride()):
            lo, hi = (lo + (n - 1) * s, hi) if s < 0 else (lo, hi + (n - 1) * s)
        if 0 <= lo and hi < 64:
            check(t, False)
    else:
        check(t, False)


def test_dlpack_import_regressions():
    owner = np.arange(64, dtype=np.int64)
    # Extents that overflow: refused with an overflow error.
    for shape, strides, off in [
        ([2, 2], [P62, P62], 0),
        ([3], [IMAX], 0),
        ([IMAX, 2], [1, 1], 0),
        ([2] * 63, [P62] * 63, 0),
        ([2], [1], 2**64 - 8),
    ]:
        with pytest.raises((OverflowError, ValueError)):
            st.from_dlpack(Producer(owner, shape, strides, off))
    # 0 beside huge sizes: an empty tensor, as PyTorch accepts.
    t = st.from_dlpack(Producer(owner, [0, P40, P40], [IMAX, P40, 1]))
    assert t.shape == (0, P40, P40) and t.numel() == 0
    t = st.from_dlpack(Producer(owner, [P40, P40, 0], None))
    assert t.shape == (P40, P40, 0)
    # Negative sizes and ndim are refused.
    with pytest.raises(ValueError):
        st.from_dlpack(Producer(owner, [-1], [1]))
    with pytest.raises(ValueError):
        st.from_dlpack(Producer(owner, [1], [1], ndim=-1))
    # A fine producer still works, values and all.
    t = st.from_dlpack(Producer(owner, [4, 2], [-2, 5], 6 * 8))
    assert t.tolist() == [[6, 11], [4, 9], [2, 7], [0, 5]]


# ---------------------------------------------------------------------------------------
# Regressions of issue 15 item 6 (PyTorch's semantics)
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(0, P40, P40), (P40, P40, 0), (P40, 0, P40)])
def test_empty_beside_huge_dims(shape):
    t = st.zeros(*shape)
    assert t.shape == shape and t.numel() == 0 and t.is_contiguous()
    check(t, False)
    for v in (t.T, t.permute(2, 0, 1), t.flip(0), t.flip(1, 2), t.mT, t.transpose(0, 2),
              t.unsqueeze(1), t.movedim(0, 2), t[..., ::-1], t[None, ::2]):
        check(v, False)
    big = shape.index(P40)
    check(t.narrow(big, 1, 5), False)
    check(t.select(big, P40 - 1), False)
    check(t.unfold(big, 2, 3), False)
    assert t.T.shape == shape[::-1]
    assert memoryview(t).shape == shape
    assert (t + 1).shape == shape
    # (NumPy refuses these shapes: "array is too big"; PyTorch accepts them.)
    for proto in range(2, 6):
        assert pickle.loads(pickle.dumps(t, protocol=proto)).shape == shape


def test_empty_beside_huge_dims_strides_and_reductions():
    t = st.zeros(0, P40, P40)
    # Strides are products of max(size, 1); one that does not fit saturates.
    assert t.stride() == (IMAX, P40, 1)
    assert st.zeros(P40, P40, 0).stride() == (P40, 1, 1)
    assert t.flip(1).stride() == (IMAX, -P40, 1)
    assert t.tolist() == []
    assert t.sum((1, 2)).shape == (0,)
    # Summing away the 0 leaves 2^80 elements: refused, never wrapped.
    with pytest.raises(OverflowError):
        t.sum(0)
    with pytest.raises(OverflowError):
        st.zeros(P40, P40, 0).flatten(0, 1)
    assert t.flatten(0, 1).shape == (0, P40)
    assert t.view(P40, 0, P40).shape == (P40, 0, P40)
    # A size past int64 is refused even beside a 0.
    with pytest.raises(OverflowError):
        st.zeros(0, 2**63)


@pytest.mark.parametrize("shape", [(2**40, 2**40, 0), (2**20, 2**20, 0), (2**21, 2**21)])
def test_tolist_of_too_many_lists_is_refused_before_building_any(shape):
    # (2^20, 2^20, 0) has no elements but would make 2^40 empty lists (tens of TB of
    # Python objects): refused up front with a ResourceError naming the counts, not a
    # run that fills memory or hangs. In a child, so a regression cannot take the run.
    r = assert_clean(
        f"""
        import strata as st
        t = st.zeros(1).expand({shape!r}) if 0 not in {shape!r} else st.zeros(*{shape!r})
        try:
            t.tolist()
        except st.ResourceError as e:
            print(e)
        else:
            raise SystemExit("tolist of {shape} returned")
        """,
        timeout=60,
    )
    assert "tolist" in r.stdout and "lists" in r.stdout and "out of memory" in r.stdout


def test_tolist_of_empty_tensors_with_few_lists_still_works():
    assert st.zeros(3, 0, 2**40).tolist() == [[], [], []]
    assert st.zeros(0, 2**40, 2**40).tolist() == []
    assert st.zeros(2, 3, 0).tolist() == np.zeros((2, 3, 0)).tolist()


def test_empty_view_with_huge_offset_exports():
    b = st.zeros(4)
    t = b.as_strided((0,), (1,), P62)
    assert t.storage_offset() == P62
    # Clamped to the end of the storage: an address, never a wrapped one. (PyTorch
    # reports 0 for any empty tensor.)
    assert t.data_ptr() == b.data_ptr() + 16
    assert t.__array_interface__["data"] == (b.data_ptr() + 16, False)
    assert np.asarray(t).shape == (0,)
    assert np.from_dlpack(t).shape == (0,)
    assert st.from_dlpack(t).shape == (0,)
    assert memoryview(t).nbytes == 0
    assert pickle.loads(pickle.dumps(t, protocol=5)).shape == (0,)
    with pytest.raises(OverflowError):
        b.as_strided((0,), (1,), 2**63)
    with pytest.raises((OverflowError, ValueError)):
        b.as_strided((0,), (1,), -1)


def test_narrow_start_plus_length_overflow():
    t = st.zeros(4)
    with pytest.raises(IndexError, match=r"start \(1\) \+ length \(9223372036854775807\) exceeds dimension size \(4\)"):
        t.narrow(0, 1, IMAX)
    with pytest.raises(IndexError):
        t.narrow(0, -1, IMAX)
    with pytest.raises((OverflowError, IndexError)):
        t.narrow(0, 1, 2**64)


def test_from_numpy_huge_strided_and_broadcast():
    a = np.broadcast_to(np.arange(3, dtype=np.int64), (P40, 3))
    t = st.from_numpy(a)
    assert t.shape == (P40, 3) and t.stride() == (0, 1)
    assert t[P40 - 1].tolist() == [0, 1, 2]
    owner = np.zeros(2, dtype=np.int64)
    # Extent 2^63 bytes: refused.
    a = np.lib.stride_tricks.as_strided(owner, shape=(3,), strides=(2**62,))
    with pytest.raises(OverflowError):
        st.from_numpy(a)
    a = np.lib.stride_tricks.as_strided(owner, shape=(2, 2), strides=(2**62, -(2**62)))
    with pytest.raises(OverflowError):
        st.from_numpy(a)
    # Empty with huge strides: accepted, 0 elements.
    a = np.lib.stride_tricks.as_strided(owner, shape=(0, 5), strides=(2**62, 2**62))
    assert st.from_numpy(a).shape == (0, 5)


def test_rebuild_buffer_with_overflowing_shapes():
    from strata.multiprocessing import _rebuild_buffer

    for shape in [(P40, P40), (IMAX, 2), (2**32, 2**32, 2)]:
        with pytest.raises((OverflowError, ValueError)):
            _rebuild_buffer(bytearray(8), "float32", shape)
    for shape in [(2**64,), (-1,)]:
        with pytest.raises((OverflowError, ValueError, TypeError)):
            _rebuild_buffer(bytearray(8), "float32", shape)
    assert _rebuild_buffer(bytearray(0), "float32", (0, P40, P40)).shape == (0, P40, P40)
    assert _rebuild_buffer(bytearray(8), "float32", (2,)).tolist() == [0.0, 0.0]


def test_npy_header_with_huge_shape(tmp_path):
    import io

    def npy(shape_txt: str) -> bytes:
        d = f"{{'descr': '<f4', 'fortran_order': False, 'shape': {shape_txt}, }}"
        d = d + " " * (63 - (10 + len(d)) % 64) + "\n"
        return b"\x93NUMPY\x01\x00" + len(d).to_bytes(2, "little") + d.encode()

    for txt in ["(1099511627776, 1099511627776)", "(9223372036854775807, 2)", "(18446744073709551616,)"]:
        p = tmp_path / "x.npy"
        p.write_bytes(npy(txt))
        with pytest.raises((OverflowError, ValueError, st.StrataError)):
            st.load(str(p))
    p = tmp_path / "e.npy"
    p.write_bytes(npy("(0, 1099511627776, 1099511627776)"))
    assert st.load(str(p)).shape == (0, P40, P40)
    del io


def test_wrong_types_and_non_finite_arguments():
    t = st.arange(6).view(2, 3)
    for bad in ("1", None, 1.5, float("nan"), float("inf"), [1]):
        for f in (lambda: t.narrow(0, bad, 1), lambda: t.select(0, bad), lambda: t.view(bad, 3),
                  lambda: t.expand(bad, 3), lambda: t.as_strided((2,), (1,), bad),
                  lambda: t.unfold(0, bad, 1), lambda: st.zeros(bad), lambda: t.flip(bad),
                  lambda: t.transpose(bad, 0), lambda: t.diagonal(bad)):
            attempt(f)
