"""`Tensor.set_`: a tensor object made to show another view, as PyTorch's `set_` does —
of a storage, of another tensor's view, or of nothing — with NumPy reading the same bytes
as the oracle for values, and PyTorch's texts for bad arguments."""

from __future__ import annotations

import gc
import sys
import warnings

import numpy as np
import pytest

import strata as st


@pytest.mark.parametrize(
    "dtype, offset, shape, strides",
    [
        (st.float32, 0, (6,), None),
        (st.float32, 1, (2, 2), (2, 1)),
        (st.float32, 2, (2, 2), (1, 2)),
        (st.int16, 3, (3, 2), (1, 3)),
        (st.float64, 0, (3,), (0,)),
        (st.uint8, 5, (0, 4), None),
    ],
)
def test_set_storage_view_matches_numpy(dtype, offset, shape, strides):
    src = np.arange(48, dtype=np.uint8)
    u = st.UntypedStorage(src.tolist())
    t = st.empty(0, dtype=dtype)
    r = t.set_(u, offset, shape, strides)
    assert r is t
    np_dtype = np.dtype(str(dtype).removeprefix("strata."))
    want_strides = strides
    if strides is None:
        want_strides = tuple(int(np.prod(shape[k + 1 :])) for k in range(len(shape)))
    assert t.shape == shape
    assert t.stride() == want_strides
    assert t.storage_offset() == offset
    assert t.dtype == dtype
    assert t.data_ptr() == u.data_ptr() + offset * np_dtype.itemsize
    flat = src.view(np_dtype)
    want = np.lib.stride_tricks.as_strided(
        flat[offset:], shape=shape, strides=[s * np_dtype.itemsize for s in want_strides]
    )
    np.testing.assert_array_equal(t.numpy(), want)
    # Writes through the tensor land in the storage's bytes (a stride-0 view refuses
    # them: its elements overlap).
    if t.numel() and 0 not in want_strides:
        t.fill_(7)
        got = np.frombuffer(bytes(u.tolist()), dtype=np_dtype)
        want_after = flat.copy()
        np.lib.stride_tricks.as_strided(
            want_after[offset:],
            shape=shape,
            strides=[s * np_dtype.itemsize for s in want_strides],
        )[...] = 7
        np.testing.assert_array_equal(got, want_after)


def test_negative_strides_inside_the_storage():
    base = st.arange(6.0)
    t = st.empty(0)
    t.set_(base.untyped_storage(), 5, (3,), (-2,))
    np.testing.assert_array_equal(t.numpy(), [5.0, 3.0, 1.0])
    t.set_(base.untyped_storage(), 4, (2, 2), (-3, 1))
    np.testing.assert_array_equal(t.numpy(), [[4.0, 5.0], [1.0, 2.0]])


def test_every_reference_sees_the_new_view_and_old_views_keep_theirs():
    src = st.arange(6.0)
    v = st.zeros(3)
    alias = v
    before = v.view(3)
    v.set_(src)
    assert alias.data_ptr() == src.data_ptr()
    assert alias.shape == (6,)
    np.testing.assert_array_equal(alias.numpy(), np.arange(6.0))
    np.testing.assert_array_equal(before.numpy(), np.zeros(3))
    # The two now share storage: writes show both ways.
    v[1] = 10.0
    assert src[1].item() == 10.0
    src[2] = 20.0
    assert v[2].item() == 20.0
    # A view made after set_ views the new storage.
    assert v[3:].data_ptr() == src[3:].data_ptr()


def test_set_tensor_takes_its_view_including_negative_strides():
    src = st.arange(12.0).view(3, 4)[::-1, 1::2]
    t = st.empty(0)
    t.set_(src)
    assert (t.shape, t.stride(), t.storage_offset()) == (
        src.shape,
        src.stride(),
        src.storage_offset(),
    )
    np.testing.assert_array_equal(t.numpy(), src.numpy())


def test_set_tensor_with_offset_reinterprets_its_storage():
    # PyTorch's (Tensor, offset, size, stride) form views the source's storage as this
    # tensor's dtype, whatever the source's dtype.
    src = st.tensor([1.0, 2.0], dtype=st.float32)
    t = st.empty(0, dtype=st.int32)
    t.set_(src, 0, (2,))
    np.testing.assert_array_equal(t.numpy(), np.array([1.0, 2.0], np.float32).view(np.int32))


def test_set_whole_storage_counts_whole_elements():
    t = st.zeros(4, dtype=st.int16)
    t.set_(st.UntypedStorage(7))
    assert t.shape == (3,)
    assert t.dtype == st.int16
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        typed = st.arange(5.0).storage()
    t = st.empty(0)
    t.set_(typed)
    np.testing.assert_array_equal(t.numpy(), np.arange(5.0, dtype=np.float32))
    # A slice of a storage.
    t.set_(st.arange(6.0).untyped_storage()[4:12])
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0])


def test_set_empty():
    t = st.arange(5.0)
    t.set_()
    assert (t.shape, t.stride(), t.storage_offset()) == ((0,), (1,), 0)
    assert t.untyped_storage().nbytes() == 0
    assert t.dtype == st.float32


def test_set_returns_self_for_chaining():
    u = st.arange(6.0).untyped_storage()
    t = st.Tensor().set_(u, 0, (2, 3))
    np.testing.assert_array_equal(t.numpy(), np.arange(6.0, dtype=np.float32).reshape(2, 3))


SIG = "set_() received an invalid combination of arguments - got ({}), but expected one of:"


@pytest.mark.parametrize(
    "args, got",
    [
        ((5,), "int"),
        (("x",), "str"),
        (("storage", 1), "UntypedStorage, int"),
        (("storage", 1.0, (2,)), "UntypedStorage, float, tuple"),
        (("storage", None, (2,)), "UntypedStorage, NoneType, tuple"),
        (("tensor", 1), "Tensor, int"),
    ],
)
def test_bad_argument_combinations_are_type_errors(args, got):
    t = st.empty(0)
    repl = {"storage": st.UntypedStorage(8), "tensor": st.zeros(2)}
    args = tuple(repl.get(a, a) if isinstance(a, str) and a in repl else a for a in args)
    with pytest.raises(TypeError) as e:
        t.set_(*args)
    assert str(e.value).startswith(SIG.format(got)), str(e.value)


def test_bad_views_are_refused_and_leave_the_tensor_unchanged():
    u = st.UntypedStorage(24)
    t = st.arange(3.0)
    before = (t.shape, t.stride(), t.data_ptr())
    with pytest.raises(
        ValueError,
        match=r"set_: sizes \[10\], strides \[1\], storage offset 0, and itemsize 4 requiring a "
        r"storage size of 40 are out of bounds for storage of size 24",
    ):
        t.set_(u, 0, (10,))
    with pytest.raises(ValueError, match="invalid storage offset -1"):
        t.set_(u, -1, (2,))
    with pytest.raises(ValueError, match="mismatch in length of strides and shape"):
        t.set_(u, 0, (2,), (1, 1))
    with pytest.raises(ValueError, match="negative dimension -1"):
        t.set_(u, 0, (-1,))
    with pytest.raises(ValueError, match="before the start of the storage"):
        t.set_(u, 0, (3,), (-1,))
    assert (t.shape, t.stride(), t.data_ptr()) == before


@pytest.mark.parametrize(
    "offset, size, stride",
    [
        (0, (2, 3), (2**62, 1)),
        (0, (2, 3), (2**63 - 1, 1)),
        (2**62, (2,), None),
        (2**63, (0,), None),
        (0, (2**62, 2**62), None),
        (0, (2**40,) * 2, None),
    ],
)
def test_extreme_views_are_clear_errors(offset, size, stride):
    t = st.empty(0)
    with pytest.raises((OverflowError, ValueError)) as e:
        t.set_(st.UntypedStorage(24), offset, size, stride)
    assert str(e.value).startswith("set_:"), str(e.value)
    assert t.shape == (0,)


def test_dtype_mismatches_use_pytorchs_texts():
    t = st.empty(0)
    for src, name in [
        (st.arange(3), "long int"),
        (st.zeros(2, dtype=st.float64), "double"),
        (st.zeros(2, dtype=st.bool), "bool"),
        (st.zeros(2, dtype=st.float16), "c10::Half"),
        (st.zeros(2, dtype=st.int32), "int"),
        (st.zeros(2, dtype=st.uint8), "unsigned char"),
    ]:
        with pytest.raises(TypeError, match=f"Could not set tensor of type {name} to a tensor of type float"):
            t.set_(src)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        typed = st.arange(3).storage()
    with pytest.raises(
        TypeError,
        match="Expected a Storage of type float or an UntypedStorage, but got type Long for argument 1 'storage'",
    ):
        t.set_(typed)


def test_autograd_rules():
    src = st.arange(4.0)
    x = st.zeros(3, requires_grad=True)
    x.grad = st.full((3,), 7.0)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation."):
        x.set_(src)
    with st.no_grad():
        x.set_(src)
    # Still a leaf that requires grad, its grad kept (as PyTorch).
    assert x.requires_grad and x.is_leaf
    np.testing.assert_array_equal(x.grad.numpy(), [7.0, 7.0, 7.0])
    # A tensor autograd made is refused, in any grad mode.
    y = st.ones(2, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="made by an op autograd recorded"):
        y.set_(src)
    with st.no_grad(), pytest.raises(RuntimeError, match="made by an op autograd recorded"):
        y.set_(src)
    # A source that requires grad, with grad mode on.
    with pytest.raises(RuntimeError, match="not differentiable"):
        st.empty(0).set_(st.ones(2, requires_grad=True))
    # A view of a leaf that requires grad: refused with grad mode on; under no_grad it is
    # cut loose from its base.
    b = st.ones(4, requires_grad=True)
    v = b[1:]
    with pytest.raises(RuntimeError, match="a view of a leaf Variable"):
        v.set_(st.zeros(2))
    with st.no_grad():
        v.set_(st.zeros(2))
    assert not v.requires_grad and v.grad_fn is None
    # A view of a tensor autograd made (not a leaf): allowed with grad mode on, as in
    # PyTorch, and cut loose from the graph (no longer its base's view).
    w_view = (st.ones(4, requires_grad=True) * 2)[1:]
    w_view.set_(st.zeros(2))
    assert not w_view.requires_grad and w_view.grad_fn is None
    # A leaf set_ under no_grad still trains: the gradient reaches it.
    w = st.zeros(2, requires_grad=True)
    with st.no_grad():
        w.set_(st.tensor([1.0, 2.0]))
    (w * w).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [2.0, 4.0])


def test_device_must_match():
    t = st.empty(0)
    if not st.cuda.is_available():
        pytest.skip("no CUDA device: the mismatch needs a GPU storage")
    with pytest.raises(RuntimeError, match="Attempted to set the storage of a tensor on device"):
        t.set_(st.UntypedStorage(8, device="cuda"))


def test_an_op_running_during_set_finishes_on_the_view_it_started_with():
    # `t.view(5)` holds `t`'s view while it allocates the result object; with the
    # collector's threshold at 1 that allocation runs a collection, whose callback (Python
    # code) calls `t.set_` meanwhile. The op finishes on the view it started with, which
    # the object keeps alive, never on freed memory; `t` shows the new view after.
    t = st.arange(5.0)
    other = st.full((3,), -1.0)
    fired = []

    def callback(phase, info):
        if phase == "start" and not fired:
            fired.append(True)
            t.set_(other)

    keep = [st.zeros(1) for _ in range(200)]  # empties the free list of tensor objects
    old = gc.get_threshold()
    gc.callbacks.append(callback)
    gc.set_threshold(1)
    try:
        r = t.view(5)
    finally:
        gc.set_threshold(*old)
        gc.callbacks.remove(callback)
    del keep
    assert fired
    assert r.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert t.tolist() == [-1.0, -1.0, -1.0]


def test_replaced_views_are_freed_with_the_object():
    a = np.arange(4, dtype=np.float32)
    base = sys.getrefcount(a)
    t = st.from_numpy(a)
    held = sys.getrefcount(a)
    assert held > base
    t.set_(st.zeros(2))
    # Kept while the object lives (a frame may still read the replaced view)...
    assert sys.getrefcount(a) == held
    t.set_(st.ones(1))
    del t
    gc.collect()
    # ...and released with it.
    assert sys.getrefcount(a) == base


def test_set_on_a_subclass_and_a_parameter():
    p = st.nn.Parameter(st.zeros(2))
    with st.no_grad():
        p.set_(st.arange(3.0))
    assert isinstance(p, st.nn.Parameter) and p.requires_grad
    np.testing.assert_array_equal(p.detach().numpy(), [0.0, 1.0, 2.0])
