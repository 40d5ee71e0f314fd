"""Autograd through complex tensors (`autograd/complex.rs`), PyTorch's convention: the
gradient of a real loss with respect to ``z = x + iy`` is ``∂L/∂x + i·∂L/∂y``.

The oracle is central finite differences (``strata.autograd.gradcheck`` perturbs the real
and imaginary part of each input element and checks the real and imaginary part of each
output element), plus closed forms for a few losses."""

import numpy as np
import pytest

import strata as st
from strata.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(20261207)


def cplx(*shape, scale=1.0, shift=0.0):
    """A complex128 leaf that requires grad, away from 0 and the branch cuts."""
    a = (RNG.uniform(0.3, 1.2, shape) + shift) * scale
    b = RNG.uniform(0.2, 0.9, shape) * scale
    return st.from_numpy(a + 1j * b).requires_grad_()


def real(*shape):
    return st.from_numpy(RNG.uniform(0.3, 1.2, shape)).requires_grad_()


HOLOMORPHIC_UNARY = [
    "neg", "positive", "square", "sqrt", "rsqrt", "exp", "exp2", "log", "log2", "log10",
    "log1p", "expm1", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh",
    "asinh", "acosh", "atanh", "sigmoid", "reciprocal",
]


@pytest.mark.parametrize("name", HOLOMORPHIC_UNARY)
def test_holomorphic_unary_ops_match_finite_differences(name):
    z = cplx(2, 3)
    assert gradcheck(lambda t: getattr(t, name)(), (z,))


@pytest.mark.parametrize("name", ["exp", "log", "sin", "tanh", "sqrt", "reciprocal"])
def test_holomorphic_unary_ops_on_strided_layouts(name):
    base = cplx(4, 6)
    # transposed, stepped and flipped views of a leaf
    assert gradcheck(lambda t: getattr(t.T[::2, ::-1], name)(), (base,))


@pytest.mark.parametrize("name", ["abs", "sgn", "angle", "real", "imag", "conj",
                                  "conj_physical"])
def test_non_holomorphic_unary_ops_match_finite_differences(name):
    z = cplx(2, 3)
    f = {
        "real": lambda t: t.real,
        "imag": lambda t: t.imag,
    }.get(name, lambda t: getattr(t, name)())
    assert gradcheck(f, (z,))


def test_view_as_real_and_view_as_complex():
    z = cplx(3, 2)
    assert gradcheck(lambda t: st.view_as_real(t) * st.tensor([2.0, -3.0], dtype=st.float64),
                     (z,))
    r = real(3, 2)
    assert gradcheck(lambda t: st.view_as_complex(t) * (1 - 2j), (r,))
    # round trip through the pairs of a strided view
    assert gradcheck(lambda t: st.view_as_complex(st.view_as_real(t.T).contiguous()).exp(),
                     (z,))


def test_complex_and_polar_from_real_parts():
    re, im = real(2, 3), real(3)
    assert gradcheck(lambda a, b: st.complex(a, b).exp(), (re, im))
    r, th = real(2, 3), real(2, 3)
    assert gradcheck(lambda a, b: st.polar(a, b) * (0.5 + 1j), (r, th))


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "pow"])
def test_binary_ops_complex_with_complex(op):
    a, b = cplx(2, 3), cplx(3, shift=0.5)
    assert gradcheck(lambda x, y: getattr(x, op)(y), (a, b))


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_binary_ops_real_with_complex_give_the_real_input_a_real_gradient(op):
    a, b = real(2, 3), cplx(2, 3)
    assert gradcheck(lambda x, y: getattr(x, op)(y), (a, b))
    assert gradcheck(lambda x, y: getattr(y, op)(x), (a, b))
    out = getattr(a, op)(b)
    out.abs().sum().backward()
    assert a.grad.dtype == st.float64 and b.grad.dtype == st.complex128


def test_complex_python_scalars():
    z = cplx(4)
    assert gradcheck(lambda t: t * (2 - 3j) + (1 + 1j) / t - (0.5j) ** t, (z,))


def test_matmul_family():
    a, b = cplx(3, 4), cplx(4, 2)
    assert gradcheck(lambda x, y: x @ y, (a, b))
    assert gradcheck(lambda x, y: st.mm(x.T.conj().T, y), (a, b))
    v = cplx(4)
    assert gradcheck(lambda x, y: st.mv(x, y), (a, v))
    assert gradcheck(lambda x, y: st.dot(x, y), (v, cplx(4)))
    ba, bb = cplx(2, 3, 2), cplx(2, 2, 3)
    assert gradcheck(lambda x, y: st.bmm(x, y), (ba, bb))
    assert gradcheck(lambda x, y: st.einsum("ij,jk->ik", x, y), (a, b))


def test_reductions_and_scans():
    z = cplx(3, 4)
    assert gradcheck(lambda t: t.sum(1), (z,))
    assert gradcheck(lambda t: t.mean(0), (z,))
    assert gradcheck(lambda t: t.prod(1), (z,))
    assert gradcheck(lambda t: t.prod(), (cplx(5),))
    assert gradcheck(lambda t: t.cumsum(1), (z,))
    assert gradcheck(lambda t: t.cumprod(1), (z,))
    assert gradcheck(lambda t: t.logsumexp(1), (z,))
    assert gradcheck(lambda t: t.logsumexp((0, 1), keepdim=True), (z,))


def test_cumprod_and_prod_with_a_zero():
    z = st.tensor([1 + 1j, 0j, 2 - 1j, 0.5 + 0.25j], dtype=st.complex128).requires_grad_()
    assert gradcheck(lambda t: t.cumprod(0), (z,))
    assert gradcheck(lambda t: t.prod(), (z,))


def test_var_and_std_of_complex():
    z = cplx(3, 4)
    assert gradcheck(lambda t: t.var(1), (z,))
    assert gradcheck(lambda t: t.std(0), (z,))


def test_views_joins_and_indexing():
    z, w = cplx(3, 4), cplx(3, 4)
    idx = st.tensor([2, 0, 2])
    assert gradcheck(lambda t: t.flip(0)[1:, ::2].reshape(-1), (z,))
    assert gradcheck(lambda t: t.unsqueeze(0).expand(2, 3, 4) * 1j, (z,))
    assert gradcheck(lambda t: t[idx], (z,))
    assert gradcheck(lambda t, u: st.cat([t, u], 1), (z, w))
    assert gradcheck(lambda t, u: st.stack([t, u]), (z, w))
    assert gradcheck(lambda t, u: st.where(t.real > 0.7, t, u), (z, w))
    assert gradcheck(lambda t: st.gather(t, 1, st.tensor([[0, 3], [1, 1], [2, 0]])), (z,))


def test_closed_forms():
    v = np.array([3 + 4j, -1 + 2j, 0.5 - 0.25j])
    z = st.from_numpy(v.copy()).requires_grad_()
    (z * z.conj()).real.sum().backward()  # Σ|z|²: gradient 2z
    np.testing.assert_allclose(z.grad.numpy(), 2 * v)

    z = st.from_numpy(v.copy()).requires_grad_()
    z.abs().sum().backward()  # Σ|z|: gradient z/|z|
    np.testing.assert_allclose(z.grad.numpy(), v / np.abs(v))

    z = st.from_numpy(v.copy()).requires_grad_()
    z.angle().sum().backward()  # Σ arg z: gradient i·z/|z|²
    np.testing.assert_allclose(z.grad.numpy(), 1j * v / np.abs(v) ** 2)

    z = st.from_numpy(v.copy()).requires_grad_()
    # a holomorphic f with upstream 1: the gradient is conj(f'(z))
    st.view_as_real(z.exp()).select(-1, 0).sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), np.conj(np.exp(v)))


def test_empty_and_0d_complex_tensors():
    z = st.zeros(0, 3, dtype=st.complex128).requires_grad_()
    st.view_as_real(z).sum().backward()  # an expanded, empty gradient of the pairs
    assert z.grad.shape == (0, 3) and z.grad.dtype == st.complex128
    z = st.zeros(0, dtype=st.complex64).requires_grad_()
    z.abs().sum().backward()
    assert z.grad.shape == (0,)
    w = st.tensor(1 + 1j, dtype=st.complex128).requires_grad_()
    st.view_as_real(w.exp()).sum().backward()
    np.testing.assert_allclose(w.grad.item(), np.conj(np.exp(1 + 1j)) * (1 + 1j))


def test_abs_and_angle_at_zero_give_zero():
    z = st.tensor([0j, 1 + 1j], dtype=st.complex128).requires_grad_()
    (z.abs().sum() + z.angle().sum() + st.view_as_real(z.sgn()).sum()).backward()
    g = z.grad.numpy()
    assert g[0] == 0 and np.isfinite(g[1])


def test_gradient_descent_on_a_complex_parameter():
    target = st.tensor([1 - 2j, 0.5 + 3j], dtype=st.complex128)
    w = st.nn.Parameter(st.zeros(2, dtype=st.complex128))
    opt = st.optim.SGD([w], lr=0.1)
    for _ in range(200):
        opt.zero_grad()
        loss = (w - target).abs().pow(2).sum()
        loss.backward()
        opt.step()
    np.testing.assert_allclose(w.detach().numpy(), target.numpy(), atol=1e-8)


def test_second_derivatives():
    z = cplx(3)
    assert gradgradcheck(lambda t: (t * t).exp(), (z,))
    assert gradgradcheck(lambda t: t.abs() * t, (cplx(3),))


def test_complex64_gradients_have_their_dtype():
    z = st.tensor([1 + 2j, 3 - 1j], dtype=st.complex64).requires_grad_()
    (z * z).abs().sum().backward()  # Σ|z|²: gradient 2z
    assert z.grad.dtype == st.complex64
    np.testing.assert_allclose(z.grad.numpy(), 2 * np.array([1 + 2j, 3 - 1j]), rtol=1e-6)


def test_backward_of_a_complex_scalar_needs_a_gradient():
    z = cplx(2)
    s = (z * z).sum()
    with pytest.raises(st.AutogradError, match="only for real scalar outputs"):
        s.backward()
    s.backward(st.tensor(1 + 0j, dtype=st.complex128))
    np.testing.assert_allclose(z.grad.numpy(), np.conj(2 * z.detach().numpy()))


def test_integer_tensors_still_cannot_require_grad():
    with pytest.raises(RuntimeError, match="floating point and complex dtype"):
        st.tensor([1, 2]).requires_grad_()


def test_in_place_through_a_parts_view_is_refused():
    z = cplx(3) * 1  # a non-leaf
    r = st.view_as_real(z)
    with pytest.raises(st.AutogradError, match="view of another dtype"):
        r.mul_(2)
    with pytest.raises(st.AutogradError, match="view of another dtype"):
        z.real.add_(1)


def test_parts_view_after_its_base_is_rewritten_in_place():
    leaf = cplx(3)
    z = leaf * 1
    r = st.view_as_real(z)
    z.mul_(2j)  # rewrites the base after the view was made
    (r * st.tensor([1.0, 2.0], dtype=st.float64)).sum().backward()
    # r holds the pairs of 2i·(x + iy) = -2y + 2ix: L = Σ -2y + 2·2x, gradient 4 - 2i
    np.testing.assert_allclose(leaf.grad.numpy(), np.full(3, 4 - 2j))


def test_complex_custom_function_keeps_its_own_formula():
    class Conj(st.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.conj()

        @staticmethod
        def backward(ctx, g):
            return g.conj()

    z = cplx(3)
    assert gradcheck(lambda t: Conj.apply(t) * (1 + 2j), (z,))


@pytest.mark.parametrize("make", [
    lambda ps: st.optim.Adam(ps, lr=0.05),
    lambda ps: st.optim.AdamW(ps, lr=0.05, amsgrad=True),
    lambda ps: st.optim.SGD(ps, lr=0.05, momentum=0.9, weight_decay=0.01),
])
def test_optimizers_step_a_complex_parameter_as_its_real_pairs(make):
    # PyTorch's rule: the same trajectory as the real pairs stepped as a real parameter.
    start = np.array([0.3 - 0.2j, -1.0 + 0.5j, 2.0 + 0.0j])
    target = np.array([1 - 2j, 0.5 + 3j, -1 + 1j])
    z = st.nn.Parameter(st.from_numpy(start.copy()))
    r = st.nn.Parameter(st.from_numpy(np.stack([start.real, start.imag], -1)))
    oz, orr = make([z]), make([r])
    tz = st.from_numpy(target)
    tr = st.from_numpy(np.stack([target.real, target.imag], -1))
    for _ in range(25):
        oz.zero_grad()
        orr.zero_grad()
        (z - tz).abs().pow(2).sum().backward()
        (r - tr).pow(2).sum().backward()
        np.testing.assert_allclose(st.view_as_real(z.grad).numpy(), r.grad.numpy(), atol=1e-12)
        oz.step()
        orr.step()
    np.testing.assert_allclose(st.view_as_real(z.detach()).numpy(), r.detach().numpy(),
                               atol=1e-12)


@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
@pytest.mark.parametrize("n", [None, 3, 8])
def test_fft_gradients(norm, n):
    z = cplx(2, 5)
    x = real(2, 5)
    assert gradcheck(lambda t: st.fft.fft(t, n=n, norm=norm), (z,))
    assert gradcheck(lambda t: st.fft.ifft(t, n=n, dim=0 if n is None else -1, norm=norm),
                     (z,))
    assert gradcheck(lambda t: st.fft.fft(t, n=n, norm=norm), (x,))
    assert gradcheck(lambda t: st.fft.rfft(t, n=n, norm=norm), (x,))
    assert gradcheck(lambda t: st.fft.irfft(t, n=n, norm=norm), (z,))
    assert gradcheck(lambda t: st.fft.hfft(t, n=n, norm=norm), (z,))
    assert gradcheck(lambda t: st.fft.ihfft(t, n=n, norm=norm), (x,))


def test_fftn_gradients_on_strided_input():
    z = cplx(3, 4, 2)
    x = real(4, 3, 4)
    assert gradcheck(lambda t: st.fft.fftn(t.transpose(0, 2), s=(2, 5)), (z,))
    assert gradcheck(lambda t: st.fft.rfftn(t[::-1], dim=(0, 2)), (x,))
    assert gradcheck(lambda t: st.fft.irfftn(t, s=(3, 4)), (z,))
    assert gradcheck(lambda t: st.fft.fft2(t, norm="ortho").abs(), (z,))


def test_fft_round_trip_gradient_is_the_identity():
    x = real(6)
    st.fft.irfft(st.fft.rfft(x), n=6).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.ones(6), atol=1e-12)
