"""Hostile conversions: printing and copying tensors too large for memory, int() of
non-finite floats, NumPy dtypes strata cannot hold, DLPack producers with Python
deleters, pickle protocol-5 buffers, and the error texts users see.

Anything that could abort the process runs in a child (``_isolated``), so an abort fails
one test instead of killing the run.
"""

from __future__ import annotations

import math
import pickle
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hst

import strata as st
from _isolated import assert_clean

# 2^46 elements: 2^49 bytes of float64, 2^46 of uint8 -- past any user address space,
# so refused whatever the system's overcommit policy.
HUGE = 2**46

FLOATS = [st.float64, st.float32, st.float16, st.bfloat16]


# ----- item 2: printing and allocation sized by the user ---------------------------------


def test_repr_of_a_huge_expanded_view_is_summarised():
    r = assert_clean(
        """
        import strata as st
        print(repr(st.zeros(1).expand(2**40)))
        print(str(st.zeros(1, 1, dtype=st.int64).expand(2**30, 2**30)))
        print(repr(st.ones(1, dtype=st.float64).expand(2**46)))
        """
    )
    row = "[0, 0, 0,  ..., 0, 0, 0]"
    rows = ",\n        ".join([row] * 3 + ["..."] + [row] * 3)
    assert r.stdout == (
        "tensor([0., 0., 0.,  ..., 0., 0., 0.])\n"
        f"tensor([{rows}])\n"
        "tensor([1., 1., 1.,  ..., 1., 1., 1.], dtype=strata.float64)\n"
    )


def test_summary_matches_pytorch_text():
    # The texts PyTorch prints for the same tensors (torch.arange(10000).reshape(100, 100),
    # and a hidden large value that must not widen the shown columns).
    t = st.arange(10000).reshape(100, 100)
    assert repr(t) == (
        "tensor([[   0,    1,    2,  ...,   97,   98,   99],\n"
        "        [ 100,  101,  102,  ...,  197,  198,  199],\n"
        "        [ 200,  201,  202,  ...,  297,  298,  299],\n"
        "        ...,\n"
        "        [9700, 9701, 9702,  ..., 9797, 9798, 9799],\n"
        "        [9800, 9801, 9802,  ..., 9897, 9898, 9899],\n"
        "        [9900, 9901, 9902,  ..., 9997, 9998, 9999]])"
    )
    z = st.zeros(2000)
    z[1000] = 123456.5
    assert repr(z) == "tensor([0., 0., 0.,  ..., 0., 0., 0.])"
    # 1000 elements is not past the threshold: all shown.
    assert "..." not in repr(st.zeros(1000))
    assert "..." in repr(st.zeros(1001))


def test_repr_with_many_large_dims_stays_short():
    r = assert_clean(
        """
        import strata as st
        t = st.zeros([1] * 22).expand(*[7] * 22)
        s = repr(t)
        assert len(s) < 300, s
        assert s.startswith("tensor([...],"), s
        assert "size=(7, 7," in s, s
        e = st.zeros(1).expand(2**40).explain()
        assert len(e) < 2000, e
        """
    )
    assert r.returncode == 0


def test_huge_copies_raise_resource_error():
    r = assert_clean(
        f"""
        import pickle
        import strata as st
        HUGE = {HUGE}
        v = st.zeros(1, dtype=st.float64).expand(HUGE)
        cases = {{
            "zeros": lambda: st.zeros(HUGE, dtype=st.float64),
            "empty": lambda: st.empty(HUGE, dtype=st.float64),
            "full": lambda: st.full((HUGE,), 1.0, dtype=st.float64),
            "tolist": lambda: st.zeros(1, dtype=st.uint8).expand(HUGE).tolist(),
            "contiguous": v.contiguous,
            "clone": v.clone,
            "to": lambda: v.to(st.float32),
            "add": lambda: v + 1,
            "pickle": lambda: pickle.dumps(v),
            "pickle5": lambda: pickle.dumps(v, protocol=5),
            "index": lambda: st.zeros(4)[st.zeros(1, dtype=st.int64).expand(HUGE)],
            "mask": lambda: v[st.ones(1, dtype=st.bool).expand(HUGE)],
            "iter": lambda: iter(v),
            "unbind": lambda: v.unbind(0),
            "split": lambda: v.split(1),
            "chunk": lambda: st.zeros(0).chunk(HUGE),
        }}
        for name, f in cases.items():
            try:
                f()
            except st.ResourceError as e:
                assert isinstance(e, OSError)
                print(name, "ok")
            else:
                raise AssertionError(name + " succeeded")
        try:
            bytes(v)
        except MemoryError:
            pass
        else:
            raise AssertionError("bytes() succeeded")
        """
    )
    assert r.stdout.count(" ok") == 16, r.stdout


def test_tolist_too_large_names_the_size():
    r = assert_clean(
        f"""
        import strata as st
        try:
            st.zeros(1, dtype=st.uint8).expand({HUGE}).tolist()
        except st.ResourceError as e:
            print(e)
        """
    )
    assert "out of memory" in r.stdout and str(HUGE) in r.stdout, r.stdout


def test_npy_claiming_a_huge_size_is_refused(tmp_path):
    p = tmp_path / "huge.npy"
    header = "{'descr': '<f8', 'fortran_order': False, 'shape': (%d,), }" % HUGE
    header += " " * ((-(10 + len(header) + 1)) % 64) + "\n"
    p.write_bytes(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
    with pytest.raises(st.FormatError, match="truncated"):
        st.load(p)
    with pytest.raises(ValueError):
        st.load(p, mmap=True)


# ----- item 7: conversions ----------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS)
def test_int_of_non_finite_floats_raises_like_python(dtype):
    with pytest.raises(ValueError, match="cannot convert float NaN to integer"):
        int(st.tensor(math.nan, dtype=dtype))
    for v in (math.inf, -math.inf):
        with pytest.raises(OverflowError, match="cannot convert float infinity to integer"):
            int(st.tensor(v, dtype=dtype))


@pytest.mark.parametrize("dtype", FLOATS)
def test_int_of_large_floats_is_exact(dtype):
    for v in (1e30, -1e30, 2.0**63, 2.0**64 + 2.0**60, 3.99, -3.99, 65504.0):
        t = st.tensor(v, dtype=dtype)
        f = float(t)  # the value as stored in the dtype (float16 may round to inf)
        if math.isinf(f):
            with pytest.raises(OverflowError):
                int(t)
        else:
            assert int(t) == int(f)
            assert type(int(t)) is int
    assert int(st.tensor(1e30, dtype=st.float64)) == int(1e30)
    assert int(st.tensor(1e30, dtype=st.float32)) == int(np.float32(1e30))


@settings(max_examples=150, deadline=None)
@given(hst.floats(allow_nan=True, allow_infinity=True))
def test_int_matches_numpy_float64(x):
    t = st.tensor(x, dtype=st.float64)
    try:
        want = int(np.float64(x))
    except (ValueError, OverflowError) as e:
        with pytest.raises(type(e)):
            int(t)
    else:
        assert int(t) == want
    assert float(t) == x or (math.isnan(x) and math.isnan(float(t)))
    assert bool(t) == bool(np.float64(x))
    assert complex(t) == complex(x) or math.isnan(x)


def test_index_and_bool_of_each_dtype():
    with pytest.raises(TypeError):
        [1, 2, 3][st.tensor(1.0)]
    assert [1, 2, 3][st.tensor(2, dtype=st.int8)] == 3
    assert int(st.tensor(2**64 - 1, dtype=st.uint64)) == 2**64 - 1
    assert st.tensor(2**64 - 1, dtype=st.uint64).__index__() == 2**64 - 1
    for dt, v in [(st.int64, -(2**63)), (st.uint8, 255), (st.bool, True)]:
        assert int(st.tensor(v, dtype=dt)) == int(v)
    assert bool(st.tensor(math.nan)) is True  # as bool(float('nan')) and NumPy
    assert bool(st.tensor(0.0)) is False and bool(st.tensor(-0.0, dtype=st.float16)) is False


DATE = np.datetime64("2020-01-01")
FOREIGN = [
    (DATE, "datetime64"),
    (np.timedelta64(5, "s"), "timedelta64"),
    (np.array(["2020-01-01"], dtype="datetime64[D]"), "datetime64"),
    (np.array([1, 2], dtype="timedelta64[s]"), "timedelta64"),
    (np.str_("a"), "U1"),
    (np.bytes_(b"ab"), "S2"),
    (np.array([b"ab"]), "S2"),
    (np.void(b"ab"), "V2"),
    (np.clongdouble(1), "complex256"),
    (np.array([1j], dtype=np.clongdouble), "complex256"),
    (np.longdouble(1), "float128"),
    (np.array([object()]), "object"),
]


@pytest.mark.parametrize("value,name", FOREIGN, ids=[n for _, n in FOREIGN])
def test_numpy_kinds_without_a_strata_dtype_are_refused(value, name):
    for f in (st.tensor, st.from_numpy, st.as_tensor):
        with pytest.raises(st.DTypeError, match=name):
            f(value)
    if np.ndim(value) == 0:
        with pytest.raises(st.DTypeError, match=name):
            st.ones(2) + value
        with pytest.raises(st.DTypeError, match=name):
            st.tensor([value, value])


def test_numpy_scalars_with_a_strata_dtype_still_convert():
    assert st.tensor(np.float16(1.5)).dtype == st.float16
    assert st.tensor(np.uint8(7)).item() == 7
    assert st.tensor(np.int8(-3)).item() == -3
    assert st.from_numpy(np.arange(4, dtype=np.uint8)).tolist() == [0, 1, 2, 3]
    assert st.from_numpy(np.arange(4, dtype=np.int8)).dtype == st.int8


# ----- item 8: Python deleters while an error unwinds ------------------------------------


def test_python_dlpack_deleter_runs_and_error_survives():
    r = assert_clean(
        """
        import ctypes, gc
        import strata as st

        class Version(ctypes.Structure):
            _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]
        class Device(ctypes.Structure):
            _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]
        class DType(ctypes.Structure):
            _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]
        class DLTensor(ctypes.Structure):
            _fields_ = [("data", ctypes.c_void_p), ("device", Device), ("ndim", ctypes.c_int32),
                        ("dtype", DType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                        ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]
        class Managed(ctypes.Structure):
            pass
        DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
        Managed._fields_ = [("version", Version), ("manager_ctx", ctypes.c_void_p),
                            ("deleter", DELETER), ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]

        new_capsule = ctypes.pythonapi.PyCapsule_New
        new_capsule.restype = ctypes.py_object
        new_capsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]

        deleted = []
        keep = []

        @DELETER
        def deleter(p):
            # Python code in the deleter: it fails if called with an exception pending.
            deleted.append(int(p))
            gc.collect(0)

        class Producer:
            def __init__(self, read_only):
                self.data = (ctypes.c_float * 4)(1, 2, 3, 4)
                self.shape = (ctypes.c_int64 * 1)(4)
                m = Managed()
                m.version = Version(1, 0)
                m.deleter = deleter
                m.flags = 1 if read_only else 0
                m.dl_tensor = DLTensor(ctypes.addressof(self.data), Device(1, 0), 1,
                                       DType(2, 32, 1), self.shape, None, 0)
                self.m = m
                keep.append(self)
            def __dlpack__(self, **kw):
                return new_capsule(ctypes.addressof(self.m), b"dltensor_versioned", None)
            def __dlpack_device__(self):
                return (1, 0)

        for op in ("fill_", "add_", "setitem", "copy_"):
            p = Producer(read_only=True)
            try:
                t = st.from_dlpack(p)
                assert t.is_read_only()
                if op == "fill_":
                    t.fill_(0)
                elif op == "add_":
                    t.add_(1)
                elif op == "setitem":
                    t[0] = 5
                else:
                    t.copy_(st.zeros(4))
            except st.ReadOnlyError as e:
                pass
            else:
                raise AssertionError(op + " wrote to a read-only import")
            # The temporary import dies as the error unwinds: its deleter runs then.
            try:
                st.from_dlpack(Producer(read_only=True)).fill_(0)
            except st.ReadOnlyError:
                pass
            del t
        assert len(deleted) == 8, deleted
        # A storage object dropped while an error is pending.
        try:
            s = st.from_dlpack(Producer(read_only=True)).untyped_storage()
            raise KeyError("x")
        except KeyError:
            del s
        assert len(deleted) == 9, deleted
        print("ok")
        """
    )
    assert r.stdout.strip() == "ok"


def test_dlpack_returning_a_non_capsule_is_a_type_error():
    class Bad:
        def __dlpack__(self, **kw):
            return [1, 2]

        def __dlpack_device__(self):
            return (1, 0)

    with pytest.raises(TypeError, match=r"from_dlpack: Bad.__dlpack__\(\) returned \[1, 2\] \(a list\)"):
        st.from_dlpack(Bad())


# ----- item 9: errors users see ----------------------------------------------------------


def test_numpy_dtypes_are_accepted_where_strata_dtypes_are():
    t = st.arange(4, dtype=st.float32)
    a = np.arange(4, dtype=np.float32)
    for d in (np.float64, np.dtype("f8"), np.dtype("<f8"), "float64"):
        np.testing.assert_array_equal(t.view(d).numpy(), a.view(np.float64))
        assert t.to(d).dtype == st.float64
        assert st.zeros(2, dtype=d).dtype == st.float64
        assert st.tensor([1.0], dtype=d).dtype == st.float64
    for d, want in ((np.int16, st.int16), (np.dtype("u1"), st.uint8), (np.bool_, st.bool)):
        assert t.view(d).dtype == want
    with pytest.raises(st.DTypeError, match="byte order"):
        t.to(np.dtype(">f8"))
    with pytest.raises(st.DTypeError, match="datetime64"):
        t.view(np.dtype("M8[s]"))
    # A shape is still a shape.
    assert t.view(2, 2).shape == (2, 2)
    assert t.view((4,)).shape == (4,)
    assert t.view(np.array([2, 2])).shape == (2, 2)


def test_npy_header_limit_names_the_keyword(tmp_path):
    p = tmp_path / "long.npy"
    a = np.zeros(3, dtype=np.float32)
    pad = b"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }" + b" " * 20000
    pad += b" " * ((-(12 + len(pad) + 1)) % 64) + b"\n"
    p.write_bytes(b"\x93NUMPY\x02\x00" + struct.pack("<I", len(pad)) + pad + a.tobytes())
    with pytest.raises(st.FormatError, match="max_header_size"):
        st.load(p)
    np.testing.assert_array_equal(st.load(p, max_header_size=30000).numpy(), a)


def test_from_file_of_a_directory_says_so(tmp_path):
    for shared in (False, True):
        with pytest.raises(st.FileError, match="(?i)is a directory") as e:
            st.from_file(str(tmp_path), shared=shared, size=4)
        assert str(tmp_path) in str(e.value)
    with pytest.raises(st.FileError, match="(?i)is a directory"):
        st.from_file(str(tmp_path), size=0)


def test_advanced_index_after_a_slice_follows_pytorch():
    # Documented: an advanced index separated from another by a slice goes first in
    # NumPy; strata (like PyTorch) keeps a lone int with the basic indices.
    t = st.arange(24).reshape(2, 3, 4)
    assert t[0, :, [0, 1]].shape == (3, 2)
    assert np.arange(24).reshape(2, 3, 4)[0, :, [0, 1]].shape == (2, 3)
    np.testing.assert_array_equal(t[0, :, [0, 1]].numpy(), np.arange(24).reshape(2, 3, 4)[0][:, [0, 1]])


# ----- item 10: pickle protocol 5 --------------------------------------------------------


def test_pickle5_buffers_leave_no_noise():
    r = assert_clean(
        """
        import gc, pickle
        import numpy as np
        import strata as st

        def roundtrip(t, wrap=lambda b: b):
            bufs = []
            data = pickle.dumps(t, protocol=5, buffer_callback=bufs.append)
            assert bufs, "expected out-of-band buffers"
            return pickle.loads(data, buffers=[wrap(b) for b in bufs])

        a = np.arange(6, dtype=np.float32)
        ro = a.copy()
        ro.flags.writeable = False
        cases = [
            roundtrip(st.arange(10.0)),
            roundtrip(st.arange(10.0), memoryview),         # buffers as memoryviews (Ray)
            roundtrip(st.arange(10.0), lambda b: memoryview(b).cast("B")),
            roundtrip(st.from_numpy(ro)),                   # read-only: a memoryview arrives
            roundtrip(st.arange(12).reshape(3, 4)),
        ]
        for u in cases[:4]:
            assert u.tolist()[:3] in ([0.0, 1.0, 2.0],), u
        assert cases[3].is_read_only()

        class Node:
            pass
        # Cycles through the rebuilt tensors, collected now ...
        for u in list(cases):
            n = Node(); n.me = n; n.t = u
        del n, u
        gc.collect()
        # ... and some left for interpreter exit, held by a cycle and by globals.
        keep = cases
        loop = Node(); loop.me = loop; loop.ts = cases
        print("ok")
        """
    )
    assert r.stdout.strip() == "ok"
    assert "Exception ignored" not in r.stderr


def test_memoryview_import_in_a_cycle_leaves_no_noise():
    assert_clean(
        """
        import gc
        import numpy as np
        import strata as st
        mv = memoryview(bytearray(16))
        t = st.from_numpy(mv)
        class Node:
            pass
        n = Node(); n.me = n; n.t = t
        del t, mv, n
        gc.collect()
        held = st.from_numpy(memoryview(np.arange(4.0)))
        g = Node(); g.me = g; g.t = held
        """
    )


# ----- an independent oracle for the printed text: PyTorch's torch/_tensor_str.py --------
# A direct port of PyTorch's algorithm (default print options) over NumPy arrays.

_EDGE, _THRESHOLD, _LINEWIDTH, _PRECISION = 3, 1000, 80, 4


class _TorchFormatter:
    def __init__(self, vals: np.ndarray, floating: bool):
        self.floating, self.int_mode, self.sci_mode, self.max_width = floating, True, False, 1
        flat = vals.reshape(-1)
        if not floating:
            for v in flat.tolist():
                self.max_width = max(self.max_width, len(f"{v}"))
            return
        nz = flat[np.isfinite(flat) & (flat != 0)]
        if nz.size == 0:
            return
        a = np.abs(nz).astype(np.float64)
        lo, hi = a.min(), a.max()
        self.int_mode = bool(np.all(nz == np.ceil(nz)))
        if self.int_mode:
            if hi / lo > 1000.0 or hi > 1.0e8:
                self.sci_mode = True
                strs = [f"{{:.{_PRECISION}e}}".format(v) for v in nz.tolist()]
            else:
                strs = [f"{v:.0f}" + "." for v in nz.tolist()]
        elif hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4:
            self.sci_mode = True
            strs = [f"{{:.{_PRECISION}e}}".format(v) for v in nz.tolist()]
        else:
            strs = [f"{{:.{_PRECISION}f}}".format(v) for v in nz.tolist()]
        self.max_width = max([self.max_width] + [len(s) for s in strs])

    def format(self, v):
        if self.floating:
            if self.sci_mode:
                ret = f"{{:{self.max_width}.{_PRECISION}e}}".format(v)
            elif self.int_mode:
                ret = f"{v:.0f}"
                if not (math.isinf(v) or math.isnan(v)):
                    ret += "."
            else:
                ret = f"{{:.{_PRECISION}f}}".format(v)
        else:
            ret = f"{v}"
        return (self.max_width - len(ret)) * " " + ret


def _summarized(a: np.ndarray) -> np.ndarray:
    if a.ndim == 0:
        return a
    if a.ndim == 1:
        return np.concatenate([a[:_EDGE], a[-_EDGE:]]) if a.shape[0] > 2 * _EDGE else a
    rows = list(range(_EDGE)) + list(range(len(a) - _EDGE, len(a))) if a.shape[0] > 2 * _EDGE else range(len(a))
    return np.stack([_summarized(a[i]) for i in rows])


def _vector_str(a, indent, summarize, f):
    per_line = max(1, int(math.floor((_LINEWIDTH - indent) / (f.max_width + 2))))
    if summarize and a.shape[0] > 2 * _EDGE:
        data = [f.format(v) for v in a[:_EDGE].tolist()] + [" ..."] + [f.format(v) for v in a[-_EDGE:].tolist()]
    else:
        data = [f.format(v) for v in a.tolist()]
    lines = [", ".join(data[i : i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _with_formatter(a, indent, summarize, f):
    if a.ndim == 0:
        return f.format(a.item())
    if a.ndim == 1:
        return _vector_str(a, indent, summarize, f)
    if summarize and a.shape[0] > 2 * _EDGE:
        parts = [_with_formatter(a[i], indent + 1, summarize, f) for i in range(_EDGE)]
        parts += ["..."] + [_with_formatter(a[i], indent + 1, summarize, f) for i in range(len(a) - _EDGE, len(a))]
    else:
        parts = [_with_formatter(a[i], indent + 1, summarize, f) for i in range(a.shape[0])]
    return "[" + ("," + "\n" * (a.ndim - 1) + " " * (indent + 1)).join(parts) + "]"


def torch_repr(a: np.ndarray, dtype_name: str) -> str:
    prefix, indent = "tensor(", len("tensor(")
    floating = a.dtype.kind == "f"
    if a.dtype == np.float16:
        a = a.astype(np.float32)
    suffixes = []
    if a.size == 0:
        body = "[]"
        if a.ndim != 1:
            suffixes.append("size=" + str(tuple(a.shape)))
        if dtype_name != "float32":
            suffixes.append("dtype=strata." + dtype_name)
    else:
        summarize = a.size > _THRESHOLD
        f = _TorchFormatter(_summarized(a) if summarize else a, floating)
        body = _with_formatter(a, indent, summarize, f)
        if dtype_name not in ("float32", "int64", "bool"):
            suffixes.append("dtype=strata." + dtype_name)
    s = prefix + body
    last = len(s) - s.rfind("\n") + 1
    for suf in suffixes:
        if last + len(suf) + 2 > _LINEWIDTH:
            s += ",\n" + " " * indent + suf
            last = indent + len(suf)
        else:
            s += ", " + suf
            last += len(suf) + 2
    return s + ")"


_VALUES = [0.0, -0.0, 1.0, -1.0, 0.5, 0.03125, 1.03125, 2.5, 123.456, -7.25, 1e-5, 3e8,
           1e10, 65504.0, math.nan, math.inf, -math.inf, 1 / 3, 1e-3]


@settings(max_examples=200, deadline=None)
@given(
    dtype=hst.sampled_from(["float32", "float64", "float16", "int64", "int32", "uint8", "bool", "int8"]),
    shape=hst.lists(hst.integers(0, 9), min_size=0, max_size=3),
    reps=hst.sampled_from([1, 1, 150, 1200]),
    data=hst.data(),
)
def test_repr_matches_pytorch_algorithm(dtype, shape, reps, data):
    n = int(np.prod(shape)) if shape else 1
    if dtype in ("float32", "float64", "float16"):
        vals = data.draw(hst.lists(hst.sampled_from(_VALUES), min_size=n, max_size=n))
    elif dtype == "bool":
        vals = data.draw(hst.lists(hst.booleans(), min_size=n, max_size=n))
    else:
        lo, hi = (0, 255) if dtype == "uint8" else (-128, 127) if dtype == "int8" else (-(10**6), 10**6)
        vals = data.draw(hst.lists(hst.integers(lo, hi), min_size=n, max_size=n))
    with np.errstate(over="ignore"):
        a = np.array(vals, dtype=dtype).reshape(shape)
    if reps > 1 and a.ndim > 0:
        a = np.ascontiguousarray(np.broadcast_to(a, (reps,) + a.shape))
    t = st.tensor(a)
    assert t.dtype == getattr(st, dtype)
    assert repr(t) == torch_repr(a, dtype)
