"""strata.linalg against numpy.linalg: every function on every memory layout (contiguous,
transposed, stepped, flipped, a strided NumPy view), batched, empty, float32, float64,
complex64 and complex128; decompositions whose factors are not unique (QR, SVD, eigh) are
checked by reconstruction and orthogonality (unitarity) plus the unique parts against
NumPy; then the errors (non-square,
singular, not positive definite, integer dtypes, 1-d input) with the op in the message.
"""

import math

import numpy as np
import pytest

import strata as st
import strata.linalg as sla
from _strata_helpers import LAYOUTS, laid_out, tensor_of, to_np

RNG = np.random.default_rng
DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
WIDE = {np.float32: np.float64, np.float64: np.float64, np.complex64: np.complex128, np.complex128: np.complex128}


def tol(dt, n=4):
    """(rtol, atol) for results of matrices of side ``n`` in dtype ``dt``."""
    return (2e-4 * n, 2e-4 * n) if dt in (np.float32, np.complex64) else (1e-10 * n, 1e-10 * n)


def wide(a):
    """``a`` in double precision (float64 or complex128), NumPy's reference precision."""
    return a.astype(WIDE[a.dtype.type])


def adj(a):
    """The conjugate transpose of the last two dims."""
    return np.conj(np.swapaxes(a, -1, -2))


def real_dtype(a):
    """strata's dtype of ``a``'s real parts."""
    return tensor_of(np.ascontiguousarray(a.real)).dtype


def close(got, want, dt, n=4):
    rtol, atol = tol(dt, n)
    g = to_np(got) if isinstance(got, st.Tensor) else np.asarray(got)
    np.testing.assert_allclose(g, want, rtol=rtol, atol=atol)


def rand(shape, dt, seed=0):
    g = RNG(seed)
    x = g.uniform(-1, 1, shape)
    if np.issubdtype(dt, np.complexfloating):
        x = x + 1j * g.uniform(-1, 1, shape)
    return x.astype(dt)


def well_conditioned(batch, n, dt, seed=0):
    return (rand((*batch, n, n), dt, seed) + n * np.eye(n)).astype(dt)


def spd(batch, n, dt, seed=0):
    """Symmetric (Hermitian) positive definite."""
    x = wide(rand((*batch, n, n), dt, seed))
    return (x @ adj(x) + n * np.eye(n)).astype(dt)


def symmetric(batch, n, dt, seed=0):
    """Symmetric (Hermitian)."""
    x = rand((*batch, n, n), dt, seed)
    return (x + adj(x)).astype(dt)


# Orders up to 8 take the kernel's small-matrix LU (`kernel/linalg.rs`, `small_lu`), 9 and
# up faer's.
SQUARE_CASES = [((), 1), ((), 4), ((3,), 3), ((2, 2), 5), ((5,), 8), ((2,), 9), ((), 33)]


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("batch,n", SQUARE_CASES)
def test_inv_det_slogdet(dt, layout, batch, n):
    a = well_conditioned(batch, n, dt, seed=n)
    t = laid_out(a, layout)
    x = sla.inv(t)
    assert x.dtype == t.dtype and x.shape == a.shape and x.is_contiguous()
    close(x, np.linalg.inv(wide(a)), dt, n)
    # Scaled so that the determinant stays near 1 (float32 overflows at 33 × 33 otherwise).
    a = (a / n).astype(dt)
    t = laid_out(a, layout)
    close(sla.det(t), np.linalg.det(wide(a)), dt, n)
    sign, logabs = sla.slogdet(t)
    ws, wl = np.linalg.slogdet(wide(a))
    if np.issubdtype(dt, np.complexfloating):
        # A complex sign of modulus 1, a real log|det| of the parts' precision.
        close(sign, ws, dt, n)
        assert logabs.dtype == real_dtype(a)
    else:
        np.testing.assert_array_equal(to_np(sign), ws.astype(dt))
    close(logabs, wl, dt, n)
    r = sla.slogdet(t)
    assert (r.sign is r[0]) and (r.logabsdet is r[1])


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_solve_matrix_vector_and_broadcast_batches(dt, layout):
    a = well_conditioned((2, 1), 4, dt, seed=1)
    b = rand((3, 4, 2), dt, seed=2)
    x = sla.solve(laid_out(a, layout), laid_out(b, layout))
    assert x.shape == (2, 3, 4, 2)
    close(x, np.linalg.solve(wide(a), wide(b)), dt)
    # A batch of vectors (B is A's shape without its last dim) and one 1-d vector.
    a1 = well_conditioned((3,), 5, dt, seed=3)
    v = rand((3, 5), dt, seed=4)
    xv = sla.solve(laid_out(a1, layout), laid_out(v, layout))
    assert xv.shape == (3, 5)
    close(xv, np.linalg.solve(wide(a1), wide(v)[..., None])[..., 0], dt)
    v1 = rand((5,), dt, seed=5)
    x1 = sla.solve(laid_out(a1, layout), laid_out(v1, layout))
    close(x1, np.linalg.solve(wide(a1), np.broadcast_to(wide(v1)[:, None], (3, 5, 1)))[..., 0], dt)
    # left=False: X A = B.
    bl = rand((3, 2, 5), dt, seed=6)
    xl = sla.solve(laid_out(a1, layout), laid_out(bl, layout), left=False)
    close(to_np(xl) @ a1, bl, dt)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("batch,n", SQUARE_CASES)
def test_cholesky(dt, layout, batch, n):
    a = spd(batch, n, dt, seed=n)
    t = laid_out(a, layout)
    want = np.linalg.cholesky(wide(a))
    close(sla.cholesky(t), want, dt, n)
    close(sla.cholesky(t, upper=True), adj(want), dt, n)
    # upper=True reads only the upper triangle, the default only the lower one.
    junk = rand(a.shape, dt, seed=98)
    close(sla.cholesky(laid_out(np.triu(a) + np.tril(junk, -1), layout), upper=True), adj(want), dt, n)
    close(sla.cholesky(laid_out(np.tril(a) + np.triu(junk, 1), layout)), want, dt, n)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (4, 4), (2, 3, 6, 2), (1, 1), (40, 30)])
def test_qr(dt, layout, shape):
    a = rand(shape, dt, seed=sum(shape))
    t = laid_out(a, layout)
    m, n = shape[-2:]
    k = min(m, n)
    for mode in ["reduced", "complete"]:
        q, r = sla.qr(t, mode=mode)
        qn, rn = np.linalg.qr(wide(a), mode=mode)
        assert q.shape == qn.shape and r.shape == rn.shape
        close(to_np(q) @ to_np(r), a, dt, m)
        qc = q.shape[-1]
        close(adj(to_np(q)) @ to_np(q), np.broadcast_to(np.eye(qc), (*shape[:-2], qc, qc)), dt, m)
        assert np.all(np.tril(to_np(r), -1) == 0)
        # R's diagonal is real, as LAPACK's (complex too), so R is NumPy's up to the sign
        # of each row: compare |R| on its first k rows.
        close(np.abs(to_np(r)[..., :k, :]), np.abs(rn[..., :k, :]), dt, m)
        assert np.all(np.diagonal(to_np(r), 0, -2, -1)[..., :k].imag == 0)
    q0, r0 = sla.qr(t, mode="r")
    assert q0.numel() == 0
    close(np.abs(to_np(r0)), np.abs(np.linalg.qr(wide(a), mode="r")), dt, m)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (4, 4), (2, 2, 6, 3), (1, 1), (30, 40)])
def test_svd_and_svdvals(dt, layout, shape):
    a = rand(shape, dt, seed=sum(shape) + 1)
    t = laid_out(a, layout)
    m, n = shape[-2:]
    sn = np.linalg.svd(wide(a), compute_uv=False)
    close(sla.svdvals(t), sn, dt, max(m, n))
    u, s, vh = sla.svd(t, full_matrices=False)
    close(s, sn, dt, max(m, n))
    close((to_np(u) * to_np(s)[..., None, :]) @ to_np(vh), a, dt, max(m, n))
    uf, sf, vhf = sla.svd(t)
    un, _, vhn = np.linalg.svd(wide(a))
    assert uf.shape == un.shape and vhf.shape == vhn.shape
    eye = lambda k: np.broadcast_to(np.eye(k), (*shape[:-2], k, k))  # noqa: E731
    close(adj(to_np(uf)) @ to_np(uf), eye(m), dt, m)
    close(to_np(vhf) @ adj(to_np(vhf)), eye(n), dt, n)
    k = min(m, n)
    close((to_np(uf)[..., :, :k] * to_np(sf)[..., None, :]) @ to_np(vhf)[..., :k, :], a, dt, max(m, n))
    assert s.dtype == sla.svdvals(t).dtype == real_dtype(a)
    r = sla.svd(t)
    assert r.U is r[0] and r.S is r[1] and r.Vh is r[2]


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("batch,n", SQUARE_CASES)
def test_eigh_and_eigvalsh(dt, layout, batch, n):
    a = symmetric(batch, n, dt, seed=n + 7)
    t = laid_out(a, layout)
    wn = np.linalg.eigvalsh(wide(a))
    w, v = sla.eigh(t)
    close(w, wn, dt, n)
    close(sla.eigvalsh(t), wn, dt, n)
    av, vv = to_np(t) @ to_np(v), to_np(v) * to_np(w)[..., None, :]
    close(av, vv, dt, 4 * n)
    close(adj(to_np(v)) @ to_np(v), np.broadcast_to(np.eye(n), (*batch, n, n)), dt, n)
    assert w.dtype == real_dtype(a)
    # UPLO='U' reads only the upper triangle: junk below it is ignored (NumPy's too).
    junk = (np.triu(a) + np.tril(rand(a.shape, dt, seed=99), -1)).astype(dt)
    close(sla.eigvalsh(laid_out(junk, layout), UPLO="U"), np.linalg.eigvalsh(wide(junk), UPLO="U"), dt, n)
    wu, vu = sla.eigh(laid_out(junk, layout), UPLO="U")
    close(to_np(t) @ to_np(vu), to_np(vu) * to_np(wu)[..., None, :], dt, 4 * n)
    r = sla.eigh(t)
    assert r.eigenvalues is r[0] and r.eigenvectors is r[1]


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 4, 3)])
def test_pinv_and_matrix_rank(dt, layout, shape):
    a = rand(shape, dt, seed=11)
    t = laid_out(a, layout)
    close(sla.pinv(t), np.linalg.pinv(wide(a)), dt, 10)
    assert to_np(sla.matrix_rank(t)).tolist() == np.linalg.matrix_rank(wide(a)).tolist()
    # A rank-deficient product: rank 2.
    m, n = shape[-2:]
    low = (rand((*shape[:-2], m, 2), dt, 1) @ rand((*shape[:-2], 2, n), dt, 2)).astype(dt)
    lt = laid_out(low, layout)
    assert np.all(to_np(sla.matrix_rank(lt)) == 2)
    close(sla.pinv(lt), np.linalg.pinv(wide(low), rcond=max(m, n) * np.finfo(dt).eps), dt, 50)
    if m == n:
        s = symmetric(shape[:-2], n, dt, 3)
        close(sla.pinv(laid_out(s, layout), hermitian=True), np.linalg.pinv(wide(s), hermitian=True), dt, 50)
        assert np.all(to_np(sla.matrix_rank(laid_out(s, layout), hermitian=True)) == np.linalg.matrix_rank(wide(s), hermitian=True))


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_lstsq(dt, layout):
    a = rand((6, 3), dt, 1)
    b = rand((6, 2), dt, 2)
    xn, resn, rankn, sn = np.linalg.lstsq(wide(a), wide(b), rcond=None)
    r = sla.lstsq(laid_out(a, layout), laid_out(b, layout), driver="gelsd")
    close(r.solution, xn, dt, 10)
    close(r.residuals, resn, dt, 10)
    assert int(r.rank.item()) == rankn and r.rank.dtype == st.int64
    close(r.singular_values, sn, dt, 10)
    # Default driver (gelsy): residuals and singular values empty, as in PyTorch.
    d = sla.lstsq(laid_out(a, layout), laid_out(b, layout))
    close(d.solution, xn, dt, 10)
    assert d.residuals.numel() == 0 and d.singular_values.numel() == 0
    # Under-determined: the minimum-norm solution; a vector right-hand side.
    aw = rand((3, 5), dt, 3)
    bv = rand((3,), dt, 4)
    xw = sla.lstsq(laid_out(aw, layout), laid_out(bv, layout)).solution
    assert xw.shape == (5,)
    close(xw, np.linalg.lstsq(wide(aw), wide(bv), rcond=None)[0], dt, 10)
    # Batched.
    ab, bb = rand((2, 5, 3), dt, 5), rand((2, 5, 4), dt, 6)
    xb = sla.lstsq(laid_out(ab, layout), laid_out(bb, layout)).solution
    close(xb, np.stack([np.linalg.lstsq(wide(ab[i]), wide(bb[i]), rcond=None)[0] for i in range(2)]), dt, 10)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_norms(dt, layout):
    a = rand((3, 4, 5), dt, 8)
    t = laid_out(a, layout)
    a64 = wide(a)
    for ord_ in [2, 1, 3, 0.5, math.inf, -math.inf, 0]:
        close(sla.vector_norm(t, ord=ord_), np.linalg.norm(a64.ravel(), ord=ord_), dt)
        close(sla.vector_norm(t, ord=ord_, dim=-1), np.linalg.norm(a64, ord=ord_, axis=-1), dt)
        close(sla.vector_norm(t, ord=ord_, dim=(0, 2), keepdim=True), _vnorm(a64, ord_, (0, 2)), dt)
    for ord_ in ["fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf]:
        close(sla.matrix_norm(t, ord=ord_), np.linalg.norm(a64, ord=ord_, axis=(-2, -1)), dt)
        got = sla.matrix_norm(t, ord=ord_, dim=(2, 0), keepdim=True)
        close(got, np.linalg.norm(a64, ord=ord_, axis=(2, 0), keepdims=True), dt)
    m = t[0]
    close(sla.norm(m), np.linalg.norm(a64[0]), dt)
    close(sla.norm(t), np.linalg.norm(a64.ravel()), dt)
    close(sla.norm(m, ord="nuc"), np.linalg.norm(a64[0], ord="nuc"), dt)
    close(sla.norm(m, ord=1), np.linalg.norm(a64[0], ord=1), dt)
    close(sla.norm(t, ord=1, dim=1), np.linalg.norm(a64, ord=1, axis=1), dt)
    close(sla.norm(t, dim=(0, 1)), np.linalg.norm(a64, axis=(0, 1)), dt)
    close(sla.norm(t[0, 0], ord=3), np.linalg.norm(a64[0, 0], ord=3), dt)
    if np.issubdtype(dt, np.complexfloating):
        # Norms of complex tensors are real.
        assert sla.vector_norm(t).dtype == sla.matrix_norm(t).dtype == real_dtype(a)
    else:
        close(sla.vector_norm(t, dtype=st.float64), np.linalg.norm(a64.ravel()), np.float64)


def _vnorm(a, ord_, axes):
    x = np.abs(a)
    if ord_ == math.inf:
        return x.max(axis=axes, keepdims=True)
    if ord_ == -math.inf:
        return x.min(axis=axes, keepdims=True)
    if ord_ == 0:
        return (x != 0).sum(axis=axes, keepdims=True).astype(a.dtype)
    return (x**ord_).sum(axis=axes, keepdims=True) ** (1 / ord_)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_trace_tensordot_vecdot(layout):
    a = rand((4, 4), np.float64, 1)
    assert st.trace(laid_out(a, layout)).item() == pytest.approx(np.trace(a))
    assert laid_out(a, layout).trace().item() == pytest.approx(np.trace(a))
    ti = st.tensor([[1, 2], [3, 4]], dtype=st.int32).trace()
    assert ti.dtype == st.int64 and ti.item() == 5
    x, y = rand((2, 3, 4), np.float64, 2), rand((4, 3, 5), np.float64, 3)
    tx, ty = laid_out(x, layout), laid_out(y, layout)
    close(st.tensordot(tx, ty, dims=([1, 2], [1, 0])), np.tensordot(x, y, axes=([1, 2], [1, 0])), np.float64)
    z = rand((4, 5), np.float64, 4)
    close(st.tensordot(tx, laid_out(z, layout), dims=1), np.tensordot(x, z, axes=1), np.float64)
    close(st.tensordot(laid_out(z, layout), laid_out(z, layout), dims=2), np.tensordot(z, z, axes=2), np.float64)
    close(st.tensordot(tx, ty, dims=0), np.tensordot(x, y, axes=0), np.float64)
    u, v = rand((3, 4), np.float64, 5), rand((2, 1, 4), np.float64, 6)
    close(sla.vecdot(laid_out(u, layout), laid_out(v, layout)), (u * v).sum(-1), np.float64)
    close(sla.vecdot(laid_out(u, layout), laid_out(u, layout), dim=0), (u * u).sum(0), np.float64)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_complex_trace_tensordot_vecdot_and_adjoint(layout):
    a = rand((4, 4), np.complex128, 1)
    assert st.trace(laid_out(a, layout)).item() == pytest.approx(np.trace(a))
    x, y = rand((2, 3, 4), np.complex64, 2), rand((4, 3, 5), np.complex64, 3)
    close(st.tensordot(laid_out(x, layout), laid_out(y, layout), dims=([1, 2], [1, 0])), np.tensordot(x, y, axes=([1, 2], [1, 0])), np.complex64)
    # vecdot conjugates its first argument (NumPy's vecdot and the array API's too).
    u, v = rand((3, 4), np.complex128, 5), rand((2, 1, 4), np.complex128, 6)
    close(sla.vecdot(laid_out(u, layout), laid_out(v, layout)), np.vecdot(u, v), np.complex128)
    b = rand((2, 3, 4), np.complex128, 7)
    tb = laid_out(b, layout)
    np.testing.assert_array_equal(to_np(tb.mH), adj(b))
    np.testing.assert_array_equal(to_np(tb.adjoint()), adj(b))
    np.testing.assert_array_equal(to_np(tb[0].H), adj(b[0]))
    r = rand((3, 4), np.float32, 8)
    tr = laid_out(r, layout)
    np.testing.assert_array_equal(to_np(tr.mH), r.T)
    assert tr.H.shape == (4, 3)
    with pytest.raises(st.ShapeError, match=r"tensor\.H is only supported on matrices \(2-D tensors\)\. Got 3-D tensor\."):
        tb.H
    with pytest.raises(st.ShapeError, match=r"tensor\.mH is only supported on matrices or batches of matrices\. Got 1-D tensor\."):
        st.zeros(3, dtype=st.complex64).mH


def test_composite_norms_are_differentiable():
    x = st.tensor(rand((3, 4), np.float64, 1), requires_grad=True)
    sla.vector_norm(x).backward()
    close(x.grad, to_np(x.detach()) / np.linalg.norm(to_np(x.detach())), np.float64)
    y = st.tensor(rand((3, 3), np.float64, 2), requires_grad=True)
    y.trace().backward()
    np.testing.assert_array_equal(to_np(y.grad), np.eye(3))


def test_empty_matrices_and_batches():
    z = st.zeros(0, 0, dtype=st.float64)
    assert sla.inv(z).shape == (0, 0)
    assert sla.det(z).item() == 1.0
    assert [t.item() for t in sla.slogdet(z)] == [1.0, 0.0]
    assert sla.cholesky(z).shape == (0, 0)
    b0 = st.zeros(0, 3, 3)
    assert sla.inv(b0).shape == (0, 3, 3)
    assert sla.det(b0).shape == (0,)
    w, v = sla.eigh(b0)
    assert w.shape == (0, 3) and v.shape == (0, 3, 3)
    assert sla.solve(b0, st.zeros(0, 3)).shape == (0, 3)
    u, s, vh = sla.svd(st.zeros(3, 0, dtype=st.float64))
    np.testing.assert_array_equal(to_np(u), np.eye(3))
    assert s.shape == (0,) and vh.shape == (0, 0)
    assert sla.svd(st.zeros(3, 0), full_matrices=False).U.shape == (3, 0)
    q, r = sla.qr(st.zeros(2, 3, 0, dtype=st.float64), mode="complete")
    assert q.shape == (2, 3, 3) and r.shape == (2, 3, 0)
    assert sla.pinv(st.zeros(3, 0)).shape == (0, 3)
    assert sla.matrix_rank(st.zeros(2, 0, 4)).tolist() == [0, 0]
    zc = st.zeros(2, 0, 0, dtype=st.complex64)
    sign, logabs = sla.slogdet(zc)
    assert sign.dtype == st.complex64 and logabs.dtype == st.float32 and sign.tolist() == [1, 1]
    assert sla.svdvals(st.zeros(3, 0, dtype=st.complex128)).dtype == st.float64


def _raises(exc, match, fn, *args, **kw):
    with pytest.raises(exc, match=match) as info:
        fn(*args, **kw)
    return info.value


def test_errors():
    rect = st.zeros(3, 4)
    _raises(st.ShapeError, r"^linalg\.inv: A must be batches of square matrices, but they are 3 by 4 matrices$", sla.inv, rect)
    _raises(st.ShapeError, r"linalg\.cholesky: A must be batches of square", sla.cholesky, rect)
    _raises(st.ShapeError, r"linalg\.det: A must be batches of square", sla.det, rect)
    _raises(st.ShapeError, r"linalg\.eigh: A must be batches of square", sla.eigh, rect)
    _raises(st.ShapeError, r"linalg\.solve: A must be batches of square", sla.solve, rect, st.zeros(3))
    for fn in [sla.inv, sla.det, sla.slogdet, sla.cholesky, sla.eigh, sla.eigvalsh, sla.qr, sla.svd, sla.svdvals, sla.pinv]:
        e = _raises(st.ShapeError, r"must have at least 2 dimensions", fn, st.zeros(3))
        assert "linalg." in str(e)
        e = _raises(st.DTypeError, r"Expected a floating point or complex tensor as input\. Got Long", fn, st.zeros(3, 3, dtype=st.int64))
        assert str(e).startswith("linalg.")
        _raises(TypeError, r"Low precision dtypes not supported\. Got Half", fn, st.zeros(3, 3, dtype=st.float16))
    _raises(TypeError, r"linalg\.vector_norm: Expected a floating point .* Got Int", sla.vector_norm, st.zeros(3, dtype=st.int32))
    sing = st.tensor([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])
    e = _raises(
        sla.LinAlgError,
        r"^linalg\.inv: The diagonal element 3 is zero, the inversion could not be completed because the input matrix is singular\.$",
        sla.inv,
        sing,
    )
    assert isinstance(e, RuntimeError) and isinstance(e, st.StrataError) and sla.LinAlgError is st.LinAlgError
    # The first exactly zero pivot of LU with partial pivoting (LAPACK's getrf `info`), on
    # both sides of the small-matrix path's bound (order 8).
    for n in (2, 8, 9, 12):
        for zero_col in (0, n // 2, n - 1):
            m = np.eye(n) + np.triu(np.ones((n, n)), 1)
            m[:, zero_col] = 0.0
            _raises(sla.LinAlgError, rf"The diagonal element {zero_col + 1} is zero", sla.inv,
                    st.from_numpy(m))
            assert sla.det(st.from_numpy(m)).item() == 0.0
            assert [x.item() for x in sla.slogdet(st.from_numpy(m))] == [0.0, -np.inf]
    batch = st.stack([st.eye(3), sing])
    _raises(sla.LinAlgError, r"^linalg\.inv: \(Batch element 1\): The diagonal element 3 is zero", sla.inv, batch)
    _raises(sla.LinAlgError, r"^torch\.linalg\.solve: The solver failed because the input matrix is singular\.$", sla.solve, sing, st.ones(3))
    _raises(sla.LinAlgError, r"\(Batch element 1\): The solver failed", sla.solve, batch, st.ones(3))
    npd = st.tensor([[1.0, 2.0], [2.0, 1.0]])
    _raises(sla.LinAlgError, r"^linalg\.cholesky: The factorization could not be completed because the input is not positive-definite \(the leading minor of order 2 is not positive-definite\)\.$", sla.cholesky, npd)
    _raises(sla.LinAlgError, r"^linalg\.cholesky: \(Batch element 1\)", sla.cholesky, st.stack([st.eye(2), npd]))
    _raises(st.ShapeError, r"linalg\.solve: Incompatible shapes of A and B for the equation AX = B \(3x3 and 4x2\)", sla.solve, st.eye(3), st.zeros(4, 2))
    _raises(st.ShapeError, r"\(3x3 and 4x1\)", sla.solve, st.eye(3), st.zeros(4))
    _raises(st.ShapeError, r"must match the size of tensor b", sla.solve, st.eye(3).expand(2, 3, 3), st.zeros(3, 3, 2))
    _raises(st.DTypeError, r"linalg\.solve: Expected A and B to have the same dtype, but found A of type Float and B of type Double instead", sla.solve, st.eye(3), st.zeros(3, dtype=st.float64))
    _raises(st.DTypeError, r"but found A of type ComplexFloat and B of type Float instead", sla.solve, st.eye(3, dtype=st.complex64), st.zeros(3))
    csing = st.tensor([[1 + 1j, 2 + 2j], [2 + 2j, 4 + 4j]], dtype=st.complex128)
    _raises(sla.LinAlgError, r"^linalg\.inv: The diagonal element 2 is zero", sla.inv, csing)
    assert sla.det(csing).item() == 0
    cnpd = st.tensor([[1, 2j], [-2j, 1]], dtype=st.complex64)
    _raises(sla.LinAlgError, r"^linalg\.cholesky: .*the leading minor of order 2 is not positive-definite", sla.cholesky, cnpd)
    _raises(st.DTypeError, r"Low precision dtypes not supported|Expected a floating point", sla.inv, st.zeros(3, 3, dtype=st.int8))
    _raises(ValueError, r"qr received unrecognized mode 'x'", sla.qr, st.eye(3), mode="x")
    _raises(ValueError, r"Expected UPLO argument to be 'L' or 'U', but got X", sla.eigh, st.eye(3), UPLO="X")
    _raises(st.ShapeError, r"linalg\.lstsq: input\.size\(-2\) should match other\.size\(-2\)", sla.lstsq, st.zeros(3, 2), st.zeros(4, 2))
    _raises(ValueError, r"linalg\.lstsq: parameter `driver`", sla.lstsq, st.zeros(3, 2), st.zeros(3, 2), driver="x")
    _raises(ValueError, r"linalg\.matrix_norm: Order 3 not supported\.", sla.matrix_norm, st.eye(3), ord=3)
    _raises(st.ShapeError, r"linalg\.norm: If dim is not specified but ord is, the input must be 1D or 2D\. Got 3D\.", sla.norm, st.zeros(2, 3, 3), ord=2)
    _raises(st.ShapeError, r"^trace: expected a matrix, but got tensor with dim 3$", st.trace, st.zeros(2, 3, 3))
    _raises(st.ShapeError, r"contracted dimensions need to match, but first has size 3 in dim -1 and second has size 4 in dim 0", st.tensordot, st.zeros(2, 3), st.zeros(4, 5), dims=1)
    g = st.eye(3, requires_grad=True)
    _raises(st.AutogradError, r"depends on Q, which is not computed when mode='r'", sla.qr, g, mode="r")
    with st.no_grad():
        assert sla.qr(g, mode="r")[1].shape == (3, 3)


def test_large_matrices_take_the_parallel_path():
    # 160 × 160: large enough for faer's parallel algorithms (with more than one thread).
    a = well_conditioned((), 160, np.float64, 3)
    t = tensor_of(a)
    close(sla.inv(t), np.linalg.inv(a), np.float64, 1000)
    s = spd((), 160, np.float64, 4)
    close(sla.cholesky(tensor_of(s)), np.linalg.cholesky(s), np.float64, 1000)
    close(sla.eigvalsh(tensor_of(s)), np.linalg.eigvalsh(s), np.float64, 1000)
    close(sla.svdvals(t), np.linalg.svd(a, compute_uv=False), np.float64, 1000)
    # Many small matrices: spread over threads, each in its own scratch.
    many = well_conditioned((300,), 6, np.float64, 5)
    close(sla.inv(tensor_of(many)), np.linalg.inv(many), np.float64, 10)
    close(sla.det(tensor_of(many)), np.linalg.det(many), np.float64, 1e6)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("magnitude", ["huge", "tiny"])
def test_svd_and_eigh_of_matrices_far_from_one(dt, magnitude):
    """Elements whose squares overflow (or underflow) the dtype: the kernel scales the
    matrix by a power of two first, as LAPACK does (faer alone reported no convergence for
    a 2 × 6 matrix of 5.5e153 in float64 or 5.8e18 in float32)."""
    part = np.float32 if dt in (np.float32, np.complex64) else np.float64
    fi = np.finfo(part)
    v = np.sqrt(fi.max) * 4 if magnitude == "huge" else np.sqrt(fi.tiny) / 4
    a = (rand((2, 6), dt, 3) * v).astype(dt)
    a[0] = a[1] * 2  # rank one as well
    want = np.linalg.svd(wide(a), compute_uv=False)
    s = to_np(sla.svdvals(tensor_of(a)))
    np.testing.assert_allclose(s[0], want[0], rtol=50 * fi.eps)
    assert abs(s[1]) <= 50 * fi.eps * s[0]
    u, s2, vh = sla.svd(tensor_of(a), full_matrices=False)
    np.testing.assert_allclose((to_np(u) * to_np(s2)[None, :]) @ to_np(vh), a, rtol=0, atol=50 * fi.eps * want[0])
    h = (rand((4, 4), dt, 4) * v).astype(dt)
    h = (h + adj(h)).astype(dt)
    np.testing.assert_allclose(to_np(sla.eigvalsh(tensor_of(h))), np.linalg.eigvalsh(wide(h)), rtol=0, atol=50 * fi.eps * np.abs(h).max())
    full = np.full((3, 5), fi.max / 4, dtype=part)
    s3 = to_np(sla.svdvals(tensor_of(full)))
    assert np.isfinite(s3[0]) or magnitude == "tiny"


def test_matrix_power_cross_diagonal_matmul_and_broadcasting():
    a = well_conditioned((2,), 3, np.float64, 21)
    t = tensor_of(a)
    for k in [0, 1, 2, 5, -1, -2]:
        close(sla.matrix_power(t, k), np.linalg.matrix_power(a, k), np.float64, 100)
    assert sla.matrix_power(t, 1).data_ptr() != t.data_ptr()
    fib = sla.matrix_power(st.tensor([[1, 1], [1, 0]]), 10)
    assert fib.dtype == st.int64 and fib.tolist() == [[89, 55], [55, 34]]
    with pytest.raises(st.ShapeError, match=r"linalg\.matrix_power: A must be batches of square matrices, but they are 2 by 3 matrices"):
        sla.matrix_power(st.zeros(2, 3), 2)
    with pytest.raises(st.ShapeError, match="at least 2 dimensions"):
        sla.matrix_power(st.zeros(3), 2)
    x, y = rand((4, 3), np.float64, 22), rand((3,), np.float64, 23)
    close(sla.cross(tensor_of(x), tensor_of(y)), np.cross(x, y), np.float64)
    close(sla.cross(tensor_of(x.T.copy()), tensor_of(y[:, None]), dim=0), np.cross(x.T, y[:, None], axis=0), np.float64)
    np.testing.assert_array_equal(to_np(sla.diagonal(t, offset=1)), np.diagonal(a, 1, -2, -1))
    close(sla.matmul(t, t), a @ a, np.float64)
    assert st.broadcast_shapes((2, 1), (3,), 1) == (2, 3)
    p, q = st.broadcast_tensors(st.zeros(2, 1), st.ones(3))
    assert p.shape == q.shape == (2, 3) and p.stride() == (1, 0)
    with pytest.raises(st.ShapeError, match="Mismatch is between arg 0 and arg 1"):
        st.broadcast_shapes((2,), (3,))
    with pytest.raises(st.ShapeError, match="negative dimension -1"):
        st.broadcast_shapes((2, -1))
