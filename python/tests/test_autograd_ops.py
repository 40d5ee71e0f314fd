"""Every differentiable op of the op table under gradcheck (float64 finite differences) on
varied layouts — contiguous, transposed, negatively stepped, broadcast, 0-d, empty — and
under gradgradcheck; the ops without a derivative behave as PyTorch's."""

import numpy as np
import pytest

import strata as st
from strata.autograd import gradcheck, gradgradcheck

TABLE = {name: arity for name, arity, _ in st._strata._op_table()}

# Inputs inside each op's domain, away from kinks and poles.
DOMAIN = {
    "sqrt": (0.5, 2.0), "rsqrt": (0.5, 2.0), "log": (0.5, 2.0), "log2": (0.5, 2.0),
    "log10": (0.5, 2.0), "log1p": (-0.5, 2.0), "asin": (-0.8, 0.8), "acos": (-0.8, 0.8),
    "acosh": (1.5, 3.0), "atanh": (-0.8, 0.8), "erfinv": (-0.8, 0.8), "reciprocal": (0.5, 2.0),
    "tan": (-1.0, 1.0), "abs": (0.2, 2.0), "relu": (0.2, 2.0), "frac": (0.1, 0.9),
    "pow": (0.5, 2.0), "div": (0.5, 2.0), "atan2": (0.5, 2.0), "hypot": (0.5, 2.0),
    "xlogy": (0.5, 2.0), "fmod": (0.5, 2.0), "remainder": (0.5, 2.0), "copysign": (0.5, 2.0),
}
NO_DERIVATIVE = {"nextafter", "heaviside"}
NOT_FLOAT = {
    "logical_not", "bitwise_not", "isnan", "isinf", "isfinite", "signbit", "eq", "ne", "lt",
    "le", "gt", "ge", "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or",
    "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift",
}
ZERO_GRAD = {"sign", "floor", "ceil", "round", "trunc", "floor_divide"}
UNARY = [n for n, a in TABLE.items() if a == 1 and n not in NOT_FLOAT]
BINARY = [n for n, a in TABLE.items() if a == 2 and n not in NOT_FLOAT | NO_DERIVATIVE]


def sample(shape, lo, hi, seed):
    return np.random.default_rng(seed).uniform(lo, hi, shape)


def layouts(values):
    """(name, maker) pairs: each maker takes a float64 leaf of values' shape (3, 4) and
    returns a tensor in some layout built from it by differentiable views."""
    return [
        ("contiguous", lambda x: x),
        ("transposed", lambda x: x.T),
        ("negative step", lambda x: x[::-1, ::-2]),
        ("broadcast", lambda x: x[:1].expand(3, 4)),
        ("0-d", lambda x: x[1, 2]),
        ("empty", lambda x: x[:, 4:]),
    ]


LAYOUTS = [name for name, _ in layouts(None)]


def leaf(op, seed, shape=(3, 4)):
    lo, hi = DOMAIN.get(op, (-1.5, 1.5))
    return st.tensor(sample(shape, lo, hi, seed), requires_grad=True)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("op", UNARY)
def test_unary_gradcheck(op, layout):
    make = dict(layouts(None))[layout]
    x = leaf(op, 1)
    fn = getattr(st.Tensor, op)
    assert gradcheck(lambda x: fn(make(x)), (x,))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("op", BINARY)
def test_binary_gradcheck(op, layout):
    make = dict(layouts(None))[layout]
    a = leaf(op, 2)
    probe = make(a.detach())
    # b broadcasts against the rows of a's view (0-d against a 0-d view).
    b = leaf(op, 3, tuple(probe.shape[-1:]))
    fn = getattr(st.Tensor, op)
    assert gradcheck(lambda a, b: fn(make(a), b), (a, b))


@pytest.mark.parametrize("op", [o for o in UNARY if o not in ZERO_GRAD])
def test_unary_gradgradcheck(op):
    x = leaf(op, 4, (2, 3))
    fn = getattr(st.Tensor, op)
    assert gradgradcheck(lambda x: fn(x), (x,))


@pytest.mark.parametrize("op", [o for o in BINARY if o not in ZERO_GRAD | {"fmod", "remainder"}])
def test_binary_gradgradcheck(op):
    a, b = leaf(op, 5, (2, 3)), leaf(op, 6, (3,))
    fn = getattr(st.Tensor, op)
    assert gradgradcheck(lambda a, b: fn(a, b), (a, b))


@pytest.mark.parametrize("op", sorted(NO_DERIVATIVE))
def test_ops_without_a_derivative(op):
    a, b = leaf("x", 7, (3,)), leaf("x", 8, (3,))
    y = getattr(st.Tensor, op)(a, b)
    with pytest.raises(RuntimeError, match=f"the derivative for '{op}' is not implemented"):
        y.sum().backward()


@pytest.mark.parametrize("op", sorted(NOT_FLOAT & set(TABLE)))
def test_bool_and_integer_results_do_not_require_grad(op):
    x = leaf("x", 9, (3,))
    if op.startswith("bitwise"):
        with pytest.raises(Exception):
            getattr(st.Tensor, op)(x, x) if TABLE[op] == 2 else getattr(st.Tensor, op)(x)
        return
    y = getattr(st.Tensor, op)(x, x) if TABLE[op] == 2 else getattr(st.Tensor, op)(x)
    assert not y.requires_grad and y.grad_fn is None


def test_integer_inputs_never_require_grad():
    i = st.arange(4)
    x = st.ones(4, requires_grad=True)
    y = x * i  # float result from a float leaf and an int tensor
    assert y.requires_grad
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0, 1, 2, 3])


REDUCTIONS = {
    "sum": lambda x: x.sum(0),
    "sum all": lambda x: x.sum(),
    "mean": lambda x: x.mean(-1, keepdim=True),
    "prod": lambda x: x.prod(0),
    "amax": lambda x: x.amax(0),
    "amin": lambda x: x.amin(-1),
    "max": lambda x: x.max(),
    "max dim": lambda x: x.max(0)[0],
    "var": lambda x: x.var(0),
    "std": lambda x: x.std(-1),
    "logsumexp": lambda x: x.logsumexp(0),
    "cumsum": lambda x: x.cumsum(0),
    "cumprod": lambda x: x.cumprod(-1),
}


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "negative step", "broadcast"])
@pytest.mark.parametrize("red", sorted(REDUCTIONS))
def test_reductions_gradcheck(red, layout):
    make = dict(layouts(None))[layout]
    x = st.tensor(sample((3, 4), 0.5, 1.5, 11), requires_grad=True)
    if layout == "broadcast" and red in ("amax", "amin", "max", "max dim"):
        pytest.skip("a broadcast input ties every element: finite differences split them otherwise")
    f = REDUCTIONS[red]
    assert gradcheck(lambda x: f(make(x)), (x,))
    if red not in ("amax", "amin", "max", "max dim"):  # piecewise linear: no curvature
        assert gradgradcheck(lambda x: f(make(x)), (x,))
