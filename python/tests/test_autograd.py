"""Autograd from Python: gradients against NumPy's analytic values and finite differences,
the graph's attributes, PyTorch's messages, grad modes, hooks and custom Functions."""

import numpy as np
import pytest

import strata as st
from strata.autograd import Function, gradcheck, gradgradcheck


def arr(t):
    return np.asarray(t.detach().contiguous().numpy())


def leaf(values, dtype=st.float64):
    return st.tensor(values, dtype=dtype, requires_grad=True)


def test_requires_grad_and_leaves():
    x = st.ones(2, 3, requires_grad=True)
    assert x.requires_grad and x.is_leaf and x.grad_fn is None and x.grad is None
    y = x * 2
    assert y.requires_grad and not y.is_leaf
    assert y.grad_fn.name() == "MulBackward0"
    (node, nr), (none, _) = y.grad_fn.next_functions
    assert node.name() == "AccumulateGrad" and nr == 0 and none is None
    z = st.zeros(3)
    assert not z.requires_grad
    z.requires_grad = True
    assert z.requires_grad
    with pytest.raises(RuntimeError, match="only Tensors of floating point and complex dtype can require gradients"):
        st.arange(3).requires_grad_()
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf variables"):
        y.requires_grad = False


def test_backward_matches_numpy():
    xv = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])
    x = leaf(xv)
    w = leaf([0.3, -0.2, 0.1])
    y = ((x * w).exp() + x.sin() * w).sum()
    y.backward()
    wv = np.array([0.3, -0.2, 0.1])
    e = np.exp(xv * wv)
    np.testing.assert_allclose(arr(x.grad), e * wv + np.cos(xv) * wv, rtol=1e-12)
    np.testing.assert_allclose(arr(w.grad), (e * xv + np.sin(xv)).sum(0), rtol=1e-12)


def test_matmul_and_reductions_match_numpy():
    rng = np.random.default_rng(0)
    av, bv = rng.standard_normal((4, 3)), rng.standard_normal((3, 5))
    a, b = leaf(av), leaf(bv)
    (a @ b).mean().backward()
    g = np.full((4, 5), 1 / 20)
    np.testing.assert_allclose(arr(a.grad), g @ bv.T, rtol=1e-12)
    np.testing.assert_allclose(arr(b.grad), av.T @ g, rtol=1e-12)


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x.T.exp(),
        lambda x: x[::-1, 1:].sin(),
        lambda x: x.flip(0) * x,
        lambda x: x[:, None, :].expand(2, 3, 4) * 2,
        lambda x: x.unfold(1, 2, 1).sum(-1),
        lambda x: x.reshape(8)[[1, 1, 5]] * 3,
        lambda x: x[x > 0] * 2,
        lambda x: x.diagonal() + 0,
        lambda x: x.sum(1, keepdim=True) * x,
        lambda x: x.as_strided((3, 2), (1, 1)).exp(),
    ],
)
def test_gradcheck_views_and_indexing(fn):
    x = st.tensor(np.random.default_rng(1).standard_normal((2, 4)), requires_grad=True)
    assert gradcheck(fn, (x,))


def test_gradgradcheck():
    x = st.tensor(np.random.default_rng(2).standard_normal(3), requires_grad=True)
    assert gradgradcheck(lambda x: (x * x).sin().sum(), (x,))


def test_second_backward_and_retain_graph():
    x = leaf([1.0, 2.0])
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_array_equal(arr(x.grad), [4.0, 8.0])
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        (x * 2).backward()
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad"):
        st.ones(1).backward()


def test_in_place_rules():
    x = leaf([1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError, match="^a leaf Variable that requires grad is being used in an in-place operation.$"):
        x.add_(1)
    with pytest.raises(RuntimeError, match="^a view of a leaf Variable that requires grad"):
        x[1:].mul_(2)
    with st.no_grad():
        x.add_(1)
    np.testing.assert_array_equal(arr(x), [2.0, 3.0, 4.0])
    y = x.exp()
    loss = (y * y).sum()
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_copy_slices():
    # PyTorch's example: the in-place write through a view rewrites the base's history.
    x = leaf([1.0, 2.0, 3.0, 4.0])
    y = x.clone()
    y[1:3].mul_(2)
    y.sum().backward()
    np.testing.assert_array_equal(arr(x.grad), [1.0, 2.0, 2.0, 1.0])


def test_item_assignment_carries_gradients():
    w = leaf([5.0, 6.0])
    out = st.zeros(4, dtype=st.float64)
    out[1:3] = w * 2
    out[0] = 1.0
    assert out.requires_grad
    (out * st.tensor([1.0, 2.0, 3.0, 4.0], dtype=st.float64)).sum().backward()
    np.testing.assert_array_equal(arr(w.grad), [4.0, 6.0])
    v = leaf([1.0, 2.0, 3.0])
    z = st.zeros(5, dtype=st.float64)
    z[st.tensor([0, 4])] = v[:2]
    z.sum().backward()
    np.testing.assert_array_equal(arr(v.grad), [1.0, 1.0, 0.0])


def test_grad_modes():
    x = leaf([1.0])
    with st.no_grad():
        assert not st.is_grad_enabled()
        assert not (x * 2).requires_grad
        with st.enable_grad():
            assert (x * 2).requires_grad
    assert st.is_grad_enabled()

    @st.no_grad()
    def f(t):
        return t * 2

    assert not f(x).requires_grad
    with st.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert (x * 2).requires_grad


def test_autograd_grad_and_create_graph():
    x = leaf([1.0, 2.0, -1.5])
    (g,) = st.autograd.grad((x ** 3).sum(), x, create_graph=True)
    np.testing.assert_allclose(arr(g), 3 * arr(x) ** 2)
    assert x.grad is None
    (gg,) = st.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(arr(gg), 6 * arr(x))
    z = leaf([1.0])
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
        st.autograd.grad(x.sum(), z)
    assert st.autograd.grad(x.sum(), z, allow_unused=True) == (None,)


def test_hooks_and_retain_grad():
    x = leaf([1.0, 2.0])
    y = x * 3
    y.retain_grad()
    seen = []
    h = y.register_hook(lambda g: seen.append(arr(g)) or g * 10)
    x.register_hook(lambda g: g + 1)
    y.sum().backward()
    np.testing.assert_array_equal(seen[0], [1.0, 1.0])
    np.testing.assert_array_equal(arr(y.grad), [10.0, 10.0])
    np.testing.assert_array_equal(arr(x.grad), [31.0, 31.0])
    h.remove()

    def bad(g):
        raise ValueError("from the hook")

    x2 = leaf([1.0])
    x2.register_hook(bad)
    with pytest.raises(ValueError, match="from the hook"):
        (x2 * 2).sum().backward()


def test_detach_shares_storage_and_version():
    x = leaf([1.0, 2.0])
    d = x.detach()
    assert not d.requires_grad and d.data_ptr() == x.data_ptr()
    d.add_(1)
    assert x._version == d._version
    np.testing.assert_array_equal(arr(x), [2.0, 3.0])


class Cube(Function):
    @staticmethod
    def forward(ctx, x, k):
        ctx.save_for_backward(x)
        ctx.k = k
        return x * x * x * k

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x * x * ctx.k, None


def test_custom_function():
    x = leaf([1.0, -2.0])
    y = Cube.apply(x, 2.0)
    assert y.grad_fn.name() == "CubeBackward"
    y.sum().backward()
    np.testing.assert_allclose(arr(x.grad), 6 * arr(x) ** 2)
    assert gradcheck(lambda t: Cube.apply(t, 0.5), (leaf([0.3, 0.7]),))
    assert not Cube.apply(st.tensor([1.0]), 1.0).requires_grad


def test_integer_results_carry_no_gradient():
    x = leaf([1.0, -2.0])
    assert not (x > 0).requires_grad
    assert not x.argmax().requires_grad
    assert x.floor().requires_grad
    x.floor().sum().backward()
    np.testing.assert_array_equal(arr(x.grad), [0.0, 0.0])


def test_writes_into_views_of_untracked_tensors():
    w = leaf([1.0, 2.0])
    plain = st.zeros(4, dtype=st.float64)
    with pytest.raises(RuntimeError, match="write through the viewed tensor itself"):
        plain[1:3].copy_(w)  # the gradient could not reach `plain`: refused, not lost
    plain[1:3] = w  # through the base: recorded
    (plain * plain).sum().backward()
    np.testing.assert_array_equal(arr(w.grad), [2.0, 4.0])
    # A tensor over part of a NumPy buffer is its own base.
    t = st.from_numpy(np.zeros(10)[2:4])
    v = leaf([3.0, 4.0])
    t.add_(v)
    (t * 2).sum().backward()
    np.testing.assert_array_equal(arr(v.grad), [2.0, 2.0])


def test_in_place_ops_make_an_untracked_tensor_require_grad():
    w = leaf([1.0, 2.0, 3.0])
    x = st.zeros(3, dtype=st.float64)
    x.add_(w)  # PyTorch: x now has AddBackward0 and requires grad
    assert x.requires_grad and x.grad_fn.name() == "AddBackward0"
    y = st.zeros(3, dtype=st.float64)
    y.copy_(w * 2)
    z = st.zeros(3, dtype=st.float64)
    z.clamp_(min=w)
    (x + y + z).sum().backward()
    np.testing.assert_array_equal(arr(w.grad), [4.0, 4.0, 4.0])


def test_in_place_through_negative_stride_views_gradcheck():
    def f(x):
        y = x * 1
        y.flip(0)[0:2].mul_(3)  # a negative-stride view of a non-leaf, written in place
        y[::-2].add_(x[:2] * x[:2])  # a stepped negative view, written with tracked values
        return y * y

    x = st.tensor(np.linspace(-1, 1, 4), requires_grad=True)
    assert gradcheck(f, (x,))
    assert gradgradcheck(lambda x: f(x).sum(), (x,))


def test_pickling_keeps_a_leafs_requires_grad_and_refuses_non_leaves_across_processes():
    import multiprocessing.reduction as mpr
    import pickle

    x = st.tensor([1.0, 2.0, 3.0], requires_grad=True)
    for proto in (2, 5):
        y = pickle.loads(pickle.dumps(x, protocol=proto))
        assert y.requires_grad and y.is_leaf and y.grad_fn is None
        np.testing.assert_array_equal(y.detach().numpy(), [1.0, 2.0, 3.0])
        z = pickle.loads(pickle.dumps(x.T[::2], protocol=proto))  # non-contiguous: in-band
        assert z.requires_grad and z.is_leaf
    plain = pickle.loads(pickle.dumps(st.tensor([1.0])))
    assert not plain.requires_grad
    # Across processes (the multiprocessing pickler): a leaf keeps its flag, a non-leaf
    # is refused with PyTorch's message.
    shared = pickle.loads(mpr.ForkingPickler.dumps(x))
    assert shared.requires_grad and shared.is_leaf
    with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf tensor"):
        mpr.ForkingPickler.dumps(x * 2)


def test_function_mark_dirty_returns_the_input_itself_with_the_new_history():
    class MulTwo_(Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

    a = st.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x = a.clone()
    y = MulTwo_.apply(x)
    assert y is x
    assert x.grad_fn.name() == "MulTwo_Backward"
    # Going on with `x` itself: d/da Σ (2a)² = 8a.
    (x * x).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), [8.0, 16.0, 24.0])
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        MulTwo_.apply(st.tensor([1.0], requires_grad=True))
    with pytest.raises(RuntimeError, match="marked dirty a view"):
        MulTwo_.apply(a.clone()[1:])

    class AddInto(Function):
        @staticmethod
        def forward(ctx, x, w):
            x.add_(w)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g, g

    w = st.tensor([1.0, 2.0], requires_grad=True)
    z = st.zeros(2)
    out = AddInto.apply(z, w)
    assert out is z and z.requires_grad and not z.is_leaf
    (z * 3).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [3.0, 3.0])


def test_function_mark_dirty_of_a_view_of_an_untracked_tensor_is_refused():
    class AddInto(Function):
        @staticmethod
        def forward(ctx, x, w):
            x.add_(w)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g, g

    w = st.tensor([1.0, 2.0], requires_grad=True)
    base = st.zeros(4)
    with pytest.raises(RuntimeError, match="view of a tensor that does not require grad"):
        AddInto.apply(base[1:3], w)


def test_repr_shows_autograd_state_as_pytorch():
    # PyTorch's suffixes: `requires_grad=True` on a leaf that requires grad, the node's
    # name on a tensor autograd made, nothing once detached or under no_grad.
    x = st.zeros(2, dtype=st.float64, requires_grad=True)
    assert repr(x) == "tensor([0., 0.], dtype=strata.float64, requires_grad=True)"
    assert repr(x * 2) == "tensor([0., 0.], dtype=strata.float64, grad_fn=<MulBackward0>)"
    assert repr(x[0]) == "tensor(0., dtype=strata.float64, grad_fn=<SelectBackward0>)"
    assert repr(st.zeros(0, requires_grad=True)) == "tensor([], requires_grad=True)"
    assert repr(x.detach()) == "tensor([0., 0.], dtype=strata.float64)"
    with st.no_grad():
        assert repr(x * 2) == "tensor([0., 0.], dtype=strata.float64)"
