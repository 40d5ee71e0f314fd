"""Kernels compiled per CPU level (crates/strata/src/kernel/cpu.rs) give NumPy's values at
every level ``STRATA_CPU`` can select on this machine: the line-wide transpose blocks
(AVX-512 registers, two AVX2 halves, or 16-byte blocks), the elementwise block loops."""

from __future__ import annotations

import pytest

from _isolated import assert_clean

CHECK = """
import numpy as np, strata as st
rng = np.random.default_rng(3)
for dt in ("float32", "float64", "int32", "int64", "float16", "uint8"):
    for shape, perm in (((67, 131), (1, 0)), ((256, 256), (1, 0)), ((3, 40, 72), (2, 0, 1)),
                        ((16, 16), (1, 0)), ((8, 8), (1, 0)), ((5, 33, 17, 2), (3, 1, 0, 2))):
        a = (rng.standard_normal(shape) * 100).astype(dt)
        want = np.ascontiguousarray(a.transpose(perm))
        got = st.from_numpy(a).permute(*perm).contiguous().numpy()
        assert got.tobytes() == want.tobytes(), (dt, shape, perm)
        # A reversed input and an offset view take the same blocks.
        v = a[::-1][1:]
        got = st.from_numpy(v.copy())[:, ...].permute(*perm).contiguous().numpy()
        assert got.tobytes() == np.ascontiguousarray(v.transpose(perm)).tobytes()
# Elementwise: unary and binary block loops, contiguous and strided.
x = rng.standard_normal(1000).astype(np.float32)
y = rng.standard_normal(1000).astype(np.float32)
s, t = st.from_numpy(x), st.from_numpy(y)
np.testing.assert_array_equal((s + t).numpy(), x + y)
np.testing.assert_array_equal((s[::3] * t[::3]).numpy(), x[::3] * y[::3])
np.testing.assert_array_equal(s.abs().numpy(), np.abs(x))
np.testing.assert_array_equal(s[::-2].neg().numpy(), -x[::-2])
# Strided unary runs gather a block at a time (constant steps and the general loop).
for step in (2, -1, -2, 3, 4, 7):
    np.testing.assert_array_equal(s[::step].abs().sqrt().numpy(), np.sqrt(np.abs(x[::step])))
    np.testing.assert_allclose(s[::step].exp().numpy(), np.exp(x[::step]), rtol=3e-7)
    x64 = x.astype(np.float64) * 40
    np.testing.assert_allclose(st.from_numpy(x64)[::step].sin().numpy(), np.sin(x64[::step]),
                               rtol=5e-16, atol=5e-16)
print(st.cpu_level())
"""


@pytest.mark.parametrize("level", ["portable", "avx2", "avx512"])
def test_transposes_and_elementwise_match_numpy_at_every_level(level):
    r = assert_clean(CHECK, env={"STRATA_CPU": level}, timeout=180)
    got = r.stdout.strip()
    # The cap never raises the level above what the CPU has.
    order = ["portable", "avx2", "avx512"]
    assert order.index(got) <= order.index(level)
