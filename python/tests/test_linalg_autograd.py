"""Backward passes of strata.linalg (`crates/strata/src/ops/linalg_grad.rs`) against
central finite differences (`strata.autograd.gradcheck`), float64 and complex128, batched
and strided. Functions of eigen- and singular vectors are checked through quantities
that do not depend on the vectors' arbitrary signs or phases (|V|², U·Vh), as PyTorch's
own tests do."""

import numpy as np
import pytest

import strata as st
from strata.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(20261207)
DTYPES = [np.float64, np.complex128]


def leaf(shape, npdt, scale=1.0):
    a = RNG.normal(size=shape) * scale
    if npdt == np.complex128:
        a = a + 1j * RNG.normal(size=shape) * scale
    return st.from_numpy(a).requires_grad_()


def well_conditioned(shape, npdt):
    """A leaf near a multiple of the identity (invertible, distinct eigenvalues)."""
    n = shape[-1]
    x = leaf(shape, npdt, 0.3)
    with st.no_grad():
        x += st.from_numpy(np.diag(np.arange(1.0, n + 1.0) * 2).astype(npdt))
    return x


def hermitian(x):
    return (x + x.mH) * 0.5


@pytest.mark.parametrize("npdt", DTYPES)
def test_inv_det_slogdet(npdt):
    a = well_conditioned((2, 3, 3), npdt)
    assert gradcheck(lambda t: st.linalg.inv(t), (a,))
    assert gradcheck(lambda t: st.linalg.inv(t.mT[..., ::-1, :]), (a,))
    assert gradcheck(lambda t: st.linalg.det(t), (a,))
    assert gradcheck(lambda t: st.linalg.slogdet(t)[1], (a,))
    if npdt == np.complex128:
        # the sign of a complex determinant has a gradient too
        assert gradcheck(lambda t: st.linalg.slogdet(t)[0], (a,))
    assert gradgradcheck(lambda t: st.linalg.inv(t), (well_conditioned((3, 3), npdt),))


@pytest.mark.parametrize("npdt", DTYPES)
def test_solve(npdt):
    a = well_conditioned((2, 3, 3), npdt)
    b = leaf((2, 3, 2), npdt)
    assert gradcheck(lambda x, y: st.linalg.solve(x, y), (a, b))
    v = leaf((3,), npdt)
    assert gradcheck(lambda x, y: st.linalg.solve(x, y), (a, v))  # vector rhs, broadcast
    c = leaf((4, 3), npdt)
    assert gradcheck(lambda x, y: st.linalg.solve(x, y, left=False), (a[0].detach().requires_grad_(), c))
    a1 = well_conditioned((3, 3), npdt)
    assert gradcheck(lambda x, y: st.linalg.solve(x, y), (a1, b))  # batch of b only


@pytest.mark.parametrize("npdt", DTYPES)
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky(npdt, upper):
    x = leaf((2, 3, 3), npdt)

    def f(t):
        spd = t @ t.mH + st.eye(3, dtype=t.dtype) * 3
        return st.linalg.cholesky(spd, upper=upper)

    assert gradcheck(f, (x,))


@pytest.mark.parametrize("npdt", DTYPES)
def test_eigh_and_eigvalsh(npdt):
    x = leaf((2, 4, 4), npdt)
    assert gradcheck(lambda t: st.linalg.eigvalsh(hermitian(t)), (x,))
    assert gradcheck(lambda t: st.linalg.eigh(hermitian(t))[0], (x,))
    # |V|² does not depend on each eigenvector's sign or phase
    assert gradcheck(lambda t: st.linalg.eigh(hermitian(t))[1].abs() ** 2, (x,))
    assert gradcheck(lambda t: st.linalg.eigh(hermitian(t), UPLO="U")[1].abs() ** 2, (x,))


@pytest.mark.parametrize("npdt", DTYPES)
@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4)])
def test_svd(npdt, shape):
    a = leaf((2,) + shape, npdt)
    assert gradcheck(lambda t: st.linalg.svdvals(t), (a,))
    assert gradcheck(lambda t: st.linalg.svd(t, full_matrices=False)[1], (a,))

    def vectors(t):
        u, s, vh = st.linalg.svd(t, full_matrices=False)
        return u @ vh, u.abs() ** 2, vh.abs() ** 2, u * s.unsqueeze(-2) @ vh

    assert gradcheck(vectors, (a,))


@pytest.mark.parametrize("npdt", DTYPES)
def test_compositions_through_svd_and_eigh(npdt):
    a = leaf((4, 3), npdt)
    b = leaf((4, 2), npdt)
    assert gradcheck(lambda t: st.linalg.pinv(t), (a,))
    assert gradcheck(lambda x, y: st.linalg.lstsq(x, y).solution, (a, b))
    assert gradcheck(lambda t: st.linalg.matrix_norm(t, "nuc"), (a,))
    assert gradcheck(lambda t: st.linalg.matrix_norm(t, 2), (a,))
    h = leaf((3, 3), npdt)
    assert gradcheck(lambda t: st.linalg.pinv(hermitian(t) + st.eye(3, dtype=t.dtype) * 4,
                                              hermitian=True), (h,))


def test_closed_forms():
    a = np.array([[2.0, 1.0], [0.5, 3.0]])
    t = st.from_numpy(a.copy()).requires_grad_()
    st.linalg.det(t).backward()
    # d det/dA = det·A⁻ᵀ (the cofactor matrix)
    np.testing.assert_allclose(t.grad.numpy(), [[3.0, -0.5], [-1.0, 2.0]])
    t = st.from_numpy(a.copy()).requires_grad_()
    st.linalg.inv(t).sum().backward()
    ai = np.linalg.inv(a)
    np.testing.assert_allclose(t.grad.numpy(), -ai.T @ np.ones((2, 2)) @ ai.T)


@pytest.mark.parametrize("npdt", DTYPES)
@pytest.mark.parametrize("shape, mode", [((4, 3), "reduced"), ((3, 3), "reduced"),
                                         ((2, 4), "reduced"), ((2, 4), "complete")])
def test_qr(npdt, shape, mode):
    a = leaf((2,) + shape, npdt)

    # Q and R themselves: R's diagonal is real (LAPACK's gauge), which the formula assumes
    def f(t):
        q, r = st.linalg.qr(t, mode=mode)
        return q, r, q @ r

    assert gradcheck(f, (a,))


def test_refusals():
    a = leaf((3, 3), np.float64)
    with pytest.raises(st.AutogradError, match="which is not computed when mode='r'"):
        st.linalg.qr(a, mode="r")
    with pytest.raises(st.AutogradError, match="not differentiable when mode='complete'"):
        st.linalg.qr(leaf((4, 3), np.float64), mode="complete")
    with pytest.raises(st.AutogradError, match="full_matrices=True"):
        st.linalg.svd(leaf((3, 2), np.float64), full_matrices=True)
    # square: full and thin are the same decomposition
    u, s, vh = st.linalg.svd(a, full_matrices=True)
    (u @ vh).sum().backward()
    assert a.grad is not None
    with st.no_grad():
        st.linalg.qr(a, mode="r")  # without grad mode, no refusal


@pytest.mark.parametrize("npdt", DTYPES)
def test_det_of_a_singular_matrix_has_the_cofactor_gradient(npdt):
    # d det/dA is the cofactor matrix, defined for singular A too (PyTorch goes through
    # the SVD there, as strata does).
    a = np.array([[1.0, 2.0, 0.5], [2.0, 4.0, 1.0], [0.0, 1.0, 3.0]], dtype=npdt)
    if npdt == np.complex128:
        a = a * (1 - 0.5j)
    t = st.from_numpy(np.stack([a, a + np.eye(3)])).requires_grad_()
    d = st.linalg.det(t)
    assert abs(d[0].item()) < 1e-12
    d.sum().backward() if npdt == np.float64 else st.view_as_real(d)[..., 0].sum().backward()
    cof = np.array([[np.linalg.det(np.delete(np.delete(m, i, 0), j, 1)) * (-1) ** (i + j)
                     for j in range(3)] for i in range(3) for m in [a]]).reshape(3, 3)
    np.testing.assert_allclose(t.grad.numpy()[0], np.conj(cof), atol=1e-10)
    b = a + np.eye(3)
    np.testing.assert_allclose(t.grad.numpy()[1], np.conj(np.linalg.det(b) * np.linalg.inv(b).T),
                               atol=1e-10)
    s = st.from_numpy(a.copy()).requires_grad_()
    assert gradcheck(lambda x: st.linalg.det(x), (s,))


def test_empty_matrices_and_batches_have_empty_gradients():
    def grad_of(f, *shape, dtype=st.float64):
        x = st.zeros(*shape, dtype=dtype).requires_grad_()
        out = f(x)
        out = out[0] if isinstance(out, tuple) else out
        out.sum().backward()
        assert x.grad is not None and x.grad.shape == x.shape
        return x.grad

    grad_of(st.linalg.inv, 0, 3, 3)
    grad_of(st.linalg.inv, 0, 0)
    # det of a 0×0 matrix is 1, a function of no entries: still part of the graph
    grad_of(st.linalg.det, 2, 0, 0)
    grad_of(lambda x: st.linalg.slogdet(x)[1], 0, 0)
    grad_of(st.linalg.svdvals, 0, 3)
    grad_of(lambda x: st.linalg.svd(x, full_matrices=False)[0], 0, 3, 2)
    grad_of(lambda x: st.linalg.qr(x)[0], 3, 0)
    grad_of(lambda x: st.linalg.eigh(x)[0], 0, 0)
    grad_of(st.linalg.cholesky, 2, 0, 0)
    a = st.eye(3, dtype=st.float64).requires_grad_()
    b = st.zeros(3, 0, dtype=st.float64).requires_grad_()
    st.linalg.solve(a, b).sum().backward()
    assert a.grad.shape == (3, 3) and b.grad.shape == (3, 0)
