"""The blocking of the matmul routes against NumPy at sizes the shape tests do not reach:
``a @ a.T`` / ``a.T @ a`` over several row panels of the symmetric product (the last one
partial; the result exactly symmetric), and matrix-vector / vector-matrix with row and
column counts around the groups the dot and axpy loops take at once, with transposed,
flipped and stepped operands (layouts as in ``test_matmul_shapes``)."""

from __future__ import annotations

import numpy as np
import pytest

import strata as st
from test_matmul_shapes import check, layout


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n,k", [(127, 9), (128, 33), (129, 16), (257, 24), (300, 1), (520, 7)])
@pytest.mark.parametrize("how", [0, 1, 2, 3])
def test_symmetric_over_panels(dtype, n, k, how):
    a = np.random.default_rng(n * 10 + how).standard_normal((n, k)).astype(dtype)
    _, t = layout(a, how)
    for got, want in [(t @ t.T, a @ a.T), (t.T @ t, a.T @ a)]:
        g = got.numpy()
        check(g, want, dtype)
        np.testing.assert_array_equal(g, g.T)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("m", [1, 4, 7, 8, 9, 15, 16, 17, 24, 25, 100, 1030])
def test_matrix_vector_around_groups(dtype, m):
    rng = np.random.default_rng(m)
    for k in [1, 7, 8, 9, 16, 17, 40]:
        a = rng.standard_normal((m, k)).astype(dtype)
        v = rng.standard_normal(k).astype(dtype)
        w = rng.standard_normal(m).astype(dtype)
        for how in [0, 1, 2]:
            _, ta = layout(a, how)
            for hv in [0, 3]:
                _, tv = layout(v, hv)
                check((ta @ tv).numpy(), a @ v, dtype)
            check((st.from_numpy(w) @ ta).numpy(), w @ a, dtype)
