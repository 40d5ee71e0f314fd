"""``strata.array_api.Array``: the namespace's array type against NumPy 2 (whose operators
promote by dtype, as the standard's) and against the plain ``Tensor`` it shares.

An Array is a Tensor subclass over the same view, storage and autograd state; its
operators, ``size`` and ``T`` follow the standard where PyTorch's rules differ, and the
Tensor's stay PyTorch's.
"""

from __future__ import annotations

import itertools
import math
import pickle
import sys

import numpy as np
import pytest

import strata as st
from _strata_helpers import array_api_namespace, to_np


xp = pytest.fixture(array_api_namespace, scope="module", autouse=True, name="xp")


NUMERIC = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
           "float32", "float64", "complex64", "complex128"]

# Operator, NumPy function, whether it takes integers, whether it takes floats.
BINARY_OPS = [
    ("__add__", np.add, True, True), ("__sub__", np.subtract, True, True),
    ("__mul__", np.multiply, True, True), ("__truediv__", np.divide, False, True),
    ("__floordiv__", np.floor_divide, True, "real"), ("__mod__", np.remainder, True, "real"),
    ("__pow__", np.power, False, True),
    ("__and__", np.bitwise_and, True, False), ("__or__", np.bitwise_or, True, False),
    ("__xor__", np.bitwise_xor, True, False),
    ("__lshift__", np.left_shift, True, False), ("__rshift__", np.right_shift, True, False),
    ("__lt__", np.less, True, "real"), ("__eq__", np.equal, True, True),
    ("__ne__", np.not_equal, True, True), ("__ge__", np.greater_equal, True, "real"),
]


def _kind(name):
    return "int" if "int" in name else ("complex" if "complex" in name else "float")


def _same_kind_pairs():
    """Pairs of distinct dtypes the standard promotes (same kind; uint64 with a signed
    integer is left to libraries and skipped)."""
    for a, b in itertools.permutations(NUMERIC, 2):
        ka, kb = _kind(a), _kind(b)
        if ka == "int" and kb == "int":
            if "uint64" in (a, b) and (a.startswith("int") or b.startswith("int")):
                continue
            yield a, b
        elif ka != "int" and kb != "int":
            yield a, b


def _takes(dt, op_int, op_float):
    if _kind(dt) == "int":
        return op_int
    if _kind(dt) == "complex":
        return op_float is True
    return bool(op_float)


def _sample(name, shape, seed):
    rng = np.random.default_rng(seed)
    dt = np.dtype(name)
    if _kind(name) == "int":
        info = np.iinfo(dt)
        lo, hi = max(info.min, -5), min(info.max, 5)
        a = rng.integers(lo, hi + 1, size=shape).astype(dt)
        return np.where(a == 0, 1, a).astype(dt)  # no integer division by zero
    a = rng.uniform(0.5, 3.0, size=shape).astype(dt)
    if _kind(name) == "complex":
        a = a + 1j * rng.uniform(0.5, 3.0, size=shape)
    return np.asarray(a, dtype=dt)  # an array, also when 0-d (not a NumPy scalar)


@pytest.mark.parametrize("op,npf,op_int,op_float", BINARY_OPS, ids=[o[0] for o in BINARY_OPS])
def test_operators_promote_by_dtype_with_0d_operands(xp, op, npf, op_int, op_float):
    """A 0-d array takes part in promotion like any other array: the result dtype and
    values are NumPy 2's (array-array promotion by dtype) for every pair of dtypes the
    standard promotes, in both orders, 0-d on either side."""
    checked = 0
    for a, b in _same_kind_pairs():
        if not (_takes(a, op_int, op_float) and _takes(b, op_int, op_float)):
            continue
        if op in ("__lshift__", "__rshift__") and "uint" in a + b and not (a.startswith("uint") and b.startswith("uint")):
            continue
        for sa, sb in [((), (3,)), ((3,), ())]:
            na, nb = _sample(a, sa, 1), _sample(b, sb, 2)
            if op in ("__lshift__", "__rshift__"):
                nb = np.abs(nb) % 3
            want = npf(na, nb)
            got = getattr(xp.asarray(na), op)(xp.asarray(nb))
            assert type(got) is xp.Array
            assert got.dtype == getattr(st, str(want.dtype)), (op, a, b, sa, sb)
            np.testing.assert_allclose(to_np(got), want, rtol=1e-5)
            checked += 1
    assert checked > 0


def test_tensor_operators_keep_pytorch_rule(xp):
    """The plain Tensor's operators are unchanged: a 0-d float64 does not widen a float32
    tensor; once either operand is an Array, the standard's rule holds in both orders."""
    t0 = st.tensor(1.5, dtype=st.float64)
    t1 = st.ones(3)
    assert (t0 + t1).dtype == st.float32
    assert (t1 * t0).dtype == st.float32
    a1 = xp.asarray(t1)
    assert (t0 + a1).dtype == st.float64 and type(t0 + a1) is xp.Array
    assert (a1 + t0).dtype == st.float64
    assert (xp.asarray(t0) + t1).dtype == st.float64
    assert (t1 + xp.asarray(t0)).dtype == st.float64
    i8, i16 = st.tensor([1, 2], dtype=st.int8), st.tensor(3, dtype=st.int16)
    assert (i8 & i16).dtype == st.int8
    assert (xp.asarray(i8) & i16).dtype == st.int16


def test_python_scalars_stay_weak(xp):
    x = xp.asarray([1, 2, 3], dtype=xp.int8)
    for got in (x + 1, 1 + x, x * 2, 2 * x, x - 1, 10 - x, x // 2, 7 % x):
        assert got.dtype == xp.int8 and type(got) is xp.Array
    f = xp.asarray([1.0, 4.0], dtype=xp.float32)
    assert (f * 2.5).dtype == xp.float32
    assert to_np(2.0 ** f).tolist() == [2.0, 16.0]
    assert to_np(1.0 / f).tolist() == [1.0, 0.25]
    assert to_np(3.0 - f).tolist() == [2.0, -1.0]


def test_floor_divide_and_remainder_operators_give_special_cases(xp):
    """``//`` and ``%`` (and ``//=``, ``%=``) give the namespace functions' values — the
    standard's infinities and signed zeros — where the Tensor operators give PyTorch's."""
    inf = math.inf
    a = np.array([inf, -inf, inf, -inf, 1.0, -1.0, 1.0, -1.0, 7.5, -7.5])
    b = np.array([2.0, 2.0, -2.0, -2.0, inf, inf, -inf, -inf, 2.0, 2.0])
    want = np.array([inf, -inf, -inf, inf, 0.0, -0.0, -0.0, 0.0, 3.0, -4.0])
    got = to_np(xp.asarray(a) // xp.asarray(b))
    np.testing.assert_array_equal(got, want)
    assert [math.copysign(1, v) for v in got[4:8]] == [1, -1, -1, 1]
    assert np.isnan(to_np(st.tensor(a[:1]) // st.tensor(b[:1]))[0])  # the Tensor's: PyTorch's NaN
    x = xp.asarray(a)
    before = x.data_ptr()
    x //= xp.asarray(b)
    assert x.data_ptr() == before and type(x) is xp.Array
    np.testing.assert_array_equal(to_np(x), want)

    za = np.array([0.0, -0.0, 0.0, -0.0, 5.0, -5.0])
    zb = np.array([-3.0, 3.0, 3.0, -3.0, -3.0, 3.0])
    r = to_np(xp.asarray(za) % xp.asarray(zb))
    np.testing.assert_array_equal(r, np.remainder(za, zb))
    assert [math.copysign(1, v) for v in r] == [math.copysign(1, v) for v in np.remainder(za, zb)]
    y = xp.asarray(za)
    y %= xp.asarray(zb)
    assert [math.copysign(1, v) for v in to_np(y)] == [math.copysign(1, v) for v in np.remainder(za, zb)]
    # Integers: floored, as before; in-place keeps the object.
    n = xp.asarray([7, -7])
    n //= 2
    assert type(n) is xp.Array and n.tolist() == [3, -4]
    # An in-place op whose result cannot be held is refused by the Tensor's rule.
    ints = xp.asarray([1, 2])
    with pytest.raises(TypeError, match=r"floor_divide: result type Float can't be cast"):
        ints //= xp.asarray([1.5, 2.0])


def test_size_T_and_mT(xp):
    x = xp.reshape(xp.arange(24), (2, 3, 4))
    assert x.size == 24 and isinstance(x.size, int)
    assert xp.ones(()).size == 1 and xp.ones((0, 3)).size == 0
    assert st.ones((2, 3)).size() == (2, 3)  # the Tensor keeps PyTorch's method
    with pytest.raises(ValueError, match=r"Array.T: the array has 3 dims"):
        x.T
    with pytest.raises(ValueError, match=r"has 1 dims"):
        xp.ones(3).T
    m = xp.reshape(xp.arange(6), (2, 3))
    assert type(m.T) is xp.Array and m.T.shape == (3, 2) and m.T.stride() == (1, 3)
    np.testing.assert_array_equal(to_np(m.T), np.arange(6).reshape(2, 3).T)
    assert type(x.mT) is xp.Array and x.mT.shape == (2, 4, 3)
    assert x.mT.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()


def test_one_tensor_two_objects(xp):
    """``asarray`` of a Tensor shares it (storage, view, autograd state): no copy."""
    t = st.arange(6.0).reshape(2, 3)[:, ::2]
    a = xp.asarray(t)
    assert type(a) is xp.Array and isinstance(a, st.Tensor)
    assert a.data_ptr() == t.data_ptr() and a.stride() == t.stride() and a.shape == t.shape
    a[0, 0] = 42.0
    assert t[0, 0].item() == 42.0
    assert xp.asarray(a) is a
    w = st.tensor([1.0, 2.0], requires_grad=True)
    aw = xp.asarray(w)
    loss = xp.sum(aw * aw)
    assert type(loss) is xp.Array
    loss.backward()
    assert w.grad.tolist() == [2.0, 4.0]
    assert aw.grad.tolist() == [2.0, 4.0]


def test_every_kind_of_result_is_an_array(xp):
    x = xp.asarray([[2.0, 1.0], [1.0, 3.0]])
    singles = [
        xp.zeros(2), xp.arange(3), xp.full((2,), 1), xp.eye(2), xp.linspace(0, 1, 3),
        xp.empty_like(x), xp.tril(x), xp.exp(x), xp.add(x, 1.0), xp.clip(x, 0.0, 1.5),
        xp.floor_divide(x, 2.0), xp.sum(x), xp.astype(x, xp.float64), xp.matmul(x, x),
        xp.concat([x, x]), xp.sort(xp.asarray([3, 1])), xp.where(x > 1.5, x, 0.0),
        xp.linalg.inv(x), xp.linalg.det(x), xp.fft.fft(xp.asarray([1.0, 2.0])),
        xp.fft.fftfreq(4), x[0], x[x > 1.5], x[..., None], abs(-x), -x, +x,
        ~xp.asarray([True]), x.to_device("cpu"), xp.from_dlpack(x),
    ]
    for r in singles:
        assert type(r) is xp.Array, r
    for group in (xp.linalg.eigh(x), xp.linalg.qr(x), xp.linalg.svd(x), xp.linalg.slogdet(x),
                  xp.unique_all(xp.asarray([1, 2, 2])), xp.meshgrid(xp.arange(2), xp.arange(3)),
                  xp.broadcast_arrays(x, xp.ones(2)), xp.unstack(x)):
        assert all(type(r) is xp.Array for r in group), group
    assert type(xp.linalg.eigh(x)).__name__ == "EighResult"
    assert xp.linalg.eigh(x).eigenvalues.shape == (2,)
    assert all(type(r) is xp.Array for r in x)  # iteration gives rows as indexing does
    # strata's own API on an Array gives plain Tensors.
    assert type(x.reshape(4)) is st.Tensor and type(st.exp(x)) is st.Tensor


def test_empty_masks_select_nothing(xp):
    """A boolean mask with a zero-length dim where the array's is not selects nothing, as
    NumPy reads it; a mask that does not fit still raises IndexError."""
    n = np.arange(6.0).reshape(2, 3)
    x = xp.asarray(n)
    for mshape in [(0,), (0, 3), (2, 0), (0, 0)]:
        m = np.zeros(mshape, dtype=bool)
        got = x[xp.asarray(m)]
        assert type(got) is xp.Array and got.dtype == x.dtype
        assert got.shape == (0, *n.shape[len(mshape):])
        x[xp.asarray(m)] = 5.0
        assert to_np(x).tolist() == n.tolist()
    with pytest.raises(IndexError):
        x[xp.zeros((3,), dtype=xp.bool)]
    with pytest.raises(IndexError):
        st.tensor(n)[st.zeros(0, dtype=st.bool)]  # the Tensor: PyTorch's refusal
    full = xp.asarray(n > 2.0)
    np.testing.assert_array_equal(to_np(x[full]), n[n > 2.0])


def test_repr_hash_and_pickle(xp):
    x = xp.asarray([[1.0, 2.0], [3.0, 4.0]])
    assert repr(x) == "Array([[1., 2.],\n       [3., 4.]])"
    assert str(xp.asarray([1, 2], dtype=xp.int16)) == "Array([1, 2], dtype=strata.int16)"
    assert len({x, x, xp.asarray(x)}) == 1 and hash(x) == hash(x)
    y = pickle.loads(pickle.dumps(x))
    assert type(y) is xp.Array and to_np(y).tolist() == to_np(x).tolist()


def test_bad_share_arguments():
    with pytest.raises(TypeError, match=r"_share=True\) takes a tensor, got list"):
        st.Tensor([1.0], _share=True)
    with pytest.raises(TypeError, match=r"takes one tensor and no dtype"):
        st.Tensor(st.ones(2), st.float64, _share=True)
    with pytest.raises(TypeError, match=r"takes one tensor and no dtype"):
        st.Tensor(_share=True)


def test_share_as_builds_subclass_objects():
    """``_strata._share_as(cls, t)`` (how Arrays are made): an object of ``cls`` over
    ``t``'s tensor, in place for a subclass without slots, through ``Tensor.__new__`` for
    one with a ``__dict__``; anything but a Tensor subclass is refused."""
    import gc
    import weakref

    class Slotless(st.Tensor):
        __slots__ = ()

    class WithDict(st.Tensor):
        pass

    t = st.arange(6.0).reshape(2, 3).T
    for cls in (Slotless, WithDict, st.Tensor):
        obj = st._strata._share_as(cls, t)
        assert type(obj) is cls
        assert (obj.data_ptr(), obj.shape, obj.stride()) == (t.data_ptr(), t.shape, t.stride())
        assert sys.getrefcount(obj) == 2  # the name and the call's argument
        ref = weakref.ref(obj)
        del obj
        gc.collect()
        assert ref() is None
    w = st._strata._share_as(WithDict, t)
    w.note = "kept"
    assert w.note == "kept"
    with pytest.raises(TypeError, match=r"_share_as: int is not a subclass of strata.Tensor"):
        st._strata._share_as(int, t)
    with pytest.raises(TypeError):
        st._strata._share_as(Slotless, [1.0])


def test_unknown_operands(xp):
    x = xp.asarray([1.0, 2.0])
    with pytest.raises(TypeError):
        x + "a"
    with pytest.raises(TypeError):
        xp.add(x, "a")
    assert (x == "a") is False
