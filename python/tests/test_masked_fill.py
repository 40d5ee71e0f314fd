"""`masked_fill` / `masked_fill_` (PyTorch's): values against NumPy's `where` on the
engine's layouts, broadcasting, dtypes, autograd, and PyTorch's errors."""

import numpy as np
import pytest

import strata as st
from strata.autograd import gradcheck

from _strata_helpers import assert_values  # noqa: E402

RNG = np.random.default_rng(7)


def layouts(a):
    """(name, tensor) pairs over the same values: contiguous, transposed, stepped,
    flipped."""
    yield "contig", st.from_numpy(a.copy())
    yield "transposed", st.from_numpy(np.ascontiguousarray(a.T)).T
    big = np.zeros((a.shape[0] * 2, a.shape[1] * 3), a.dtype)
    big[::2, ::3] = a
    yield "stepped", st.from_numpy(big)[::2, ::3]
    yield "flipped", st.from_numpy(np.ascontiguousarray(a[::-1, ::-1])).flip(0, 1)


@pytest.mark.parametrize("npdt", [np.float32, np.float64, np.int64, np.uint8, np.bool_,
                                  np.complex64])
def test_values_layouts_and_dtypes(npdt):
    a = (RNG.uniform(-5, 5, (4, 5)) * 3).astype(npdt)
    m = RNG.uniform(size=(4, 5)) < 0.4
    value = {np.bool_: True, np.complex64: 2 - 1j}.get(npdt, 7)
    want = np.where(m, np.asarray(value).astype(npdt), a)
    for name, t in layouts(a):
        for mname, mt in layouts(m):
            got = t.masked_fill(mt, value)
            assert got.dtype == t.dtype, name
            assert_values(got, want)
            assert_values(st.masked_fill(t, mt, value), want)
            # the input is untouched; the in-place form writes it
            assert_values(t, a)
            c = t.clone()
            assert c.masked_fill_(mt, value) is c
            assert_values(c, want)


def test_broadcasting_value_tensors_and_casts():
    a = np.arange(12.0).reshape(3, 4)
    t = st.from_numpy(a.copy())
    row = st.tensor([True, False, False, True])
    np.testing.assert_array_equal(t.masked_fill(row, -1.0).numpy(),
                                  np.where(row.numpy(), -1.0, a))
    # out of place, the result has the broadcast shape of input and mask (PyTorch's)
    col = st.tensor([[True], [False]]).reshape(2, 1, 1)
    assert t.masked_fill(col, 0).shape == (2, 3, 4)
    # a 0-d tensor value, cast to the input's dtype; a float into an integer tensor
    v = st.tensor(2.5, dtype=st.float64)
    np.testing.assert_array_equal(t.masked_fill(row, v).numpy(), np.where(row.numpy(), 2.5, a))
    i = st.arange(4)
    assert i.masked_fill(row, 2.7).tolist() == [2, 1, 2, 2]
    assert i.masked_fill(row, 2.7).dtype == st.int64
    f = st.zeros(3)
    f.masked_fill_(st.tensor([False, True, False]), float("-inf"))
    assert f.tolist() == [0.0, float("-inf"), 0.0]
    # an empty input, a 0-d one
    assert st.zeros(0, 3).masked_fill(st.zeros(0, 3, dtype=st.bool), 1.0).shape == (0, 3)
    assert st.tensor(3.0).masked_fill(st.tensor(True), 1.0).item() == 1.0


def test_errors_have_pytorchs_texts():
    t = st.zeros(2, 3)
    # PyTorch's texts; strata's error classes (a dtype error is a TypeError, a shape
    # error a ValueError, as for every op)
    with pytest.raises(st.DTypeError, match="masked_fill_ only supports boolean masks, but got mask with dtype float"):
        t.masked_fill(st.zeros(2, 3), 1.0)
    with pytest.raises(st.DTypeError, match="but got mask with dtype long int"):
        t.masked_fill_(st.zeros(2, 3, dtype=st.int64), 1.0)
    with pytest.raises(st.ShapeError, match="masked_fill_ only supports a 0-dimensional value tensor, but got tensor with 1 dimension"):
        t.masked_fill(st.ones(2, 3, dtype=st.bool), st.ones(3))
    # the in-place form cannot grow its input
    with pytest.raises(st.ShapeError, match=r"doesn't match the broadcast shape \[4, 2, 3\]"):
        t.masked_fill_(st.ones(4, 2, 3, dtype=st.bool), 1.0)
    with pytest.raises(st.ShapeError, match="size"):
        t.masked_fill(st.ones(4, dtype=st.bool), 1.0)
    with pytest.raises(TypeError):
        t.masked_fill(st.ones(2, 3, dtype=st.bool), "x")
    # a value the dtype cannot hold is an error, never wrapped, clipped or dropped
    m = st.tensor([True, False])
    for x, v, name in [(st.arange(2), 1e30, "int64_t"), (st.zeros(2, dtype=st.uint8), -1, "uint8_t"),
                       (st.zeros(2), 1 + 2j, "float"), (st.zeros(2), st.tensor(1 + 1j), "float"),
                       (st.arange(2), float("nan"), "int64_t")]:
        with pytest.raises(st.StrataValueError, match=f"value cannot be converted to type {name} without overflow"):
            x.masked_fill(m, v)
        with pytest.raises(st.StrataValueError, match="without overflow"):
            x.clone().masked_fill_(m, v)
    assert st.zeros(2).masked_fill(m, 1 + 0j).tolist() == [1.0, 0.0]
    assert st.zeros(2, dtype=st.uint8).masked_fill(m, 255).tolist() == [255, 0]


def test_autograd():
    x = st.from_numpy(RNG.normal(size=(3, 4))).requires_grad_()
    m = st.from_numpy(RNG.uniform(size=(3, 4)) < 0.5)
    assert gradcheck(lambda t: t.masked_fill(m, 2.0) * t, (x,))
    v = st.tensor(0.5, dtype=st.float64).requires_grad_()
    assert gradcheck(lambda t, s: t.masked_fill(m, s) ** 2, (x, v))
    x.masked_fill(m, 0.0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.where(m.numpy(), 0.0, 1.0))
    # in place on a non-leaf: the history is rewritten
    y = x * 1
    y.masked_fill_(m, 3.0)
    x.grad = None
    (y * y).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.where(m.numpy(), 0.0, 2 * x.detach().numpy()))
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x.masked_fill_(m, 0.0)
