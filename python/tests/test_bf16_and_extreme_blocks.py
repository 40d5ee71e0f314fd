"""The fused bfloat16 block paths and the block fold of amax/amin, against NumPy.

bfloat16 has no NumPy dtype: every bfloat16 bit pattern (NaNs with payloads, signalling
ones included, ±inf, subnormals, ±0) is made with ``view(st.bfloat16)`` from uint16 bits;
the reference computes in float32 (the bits shifted up, exact) and rounds to nearest
even with a model (NaN made quiet keeping the top of its payload); results are read
back as bits with ``view(st.int16)``. Where both operands of an element are NaN either
payload may come out (quiet). amax/amin/max()/min() of float32/float64/int tensors are
checked against NumPy's ``max``/``min`` (NaN propagates) with NaNs around the lanes and
the 512-element blocks. Each check runs again in a child process at every CPU level this
machine has (``STRATA_CPU``).
"""

from __future__ import annotations

import numpy as np
import pytest

import strata as st
from _strata_helpers import bf16_round
from _isolated import assert_clean


def _values(bits: np.ndarray) -> np.ndarray:
    # Quiet NaNs as the model widens (the quiet bit does not change what rounds back).
    return ((bits.astype(np.uint32) | np.where((bits & 0x7FFF) > 0x7F80, 0x40, 0)
             .astype(np.uint32)) << 16).view(np.float32)


def _tensor(bits: np.ndarray):
    return st.from_numpy(np.ascontiguousarray(bits).view(np.int16)).view(st.bfloat16)


def _bits(t) -> np.ndarray:
    return np.ascontiguousarray(t.contiguous().view(st.int16).numpy()).view(np.uint16)


def _isnan(b):
    return (b & 0x7FFF) > 0x7F80


def _check(got, want, x, y, what):
    both = _isnan(x) & _isnan(y)
    ok = np.where(both, _isnan(got) & ((got & 0x40) != 0), got == want)
    bad = np.flatnonzero(~ok)
    assert bad.size == 0, (
        f"{what}: {bad.size} wrong, first at {bad[0]}: x {x[bad[0]]:#06x} y {y[bad[0]]:#06x} "
        f"got {got[bad[0]]:#06x} want {want[bad[0]]:#06x}")


def _operands():
    x = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    y = ((np.arange(65536, dtype=np.uint64) * 40503 + 12345) & 0xFFFF).astype(np.uint16)
    # Exact ties: 1 + 2^-8, (1 + 2^-7) + 2^-8, (1 + 2^-7)·1.5, subnormal sums, max + ulp/2.
    tx = np.array([0x3F80, 0x3F81, 0xBF80, 0x3F81, 0x3F83, 0x0001, 0x7F7F], dtype=np.uint16)
    ty = np.array([0x3B80, 0x3B80, 0xBB80, 0x3FC0, 0x3FC0, 0x0001, 0x7380], dtype=np.uint16)
    return np.concatenate([x, np.tile(tx, 9)]), np.concatenate([y, np.tile(ty, 9)])


@pytest.mark.parametrize("start,n", [(0, None), (0, 0), (0, 1), (1, 63), (1, 64), (3, 65),
                                     (0, 127), (5, 128), (7, 129), (1, 1000)])
def test_bf16_binary_every_bit_pattern(start, n):
    xs, ys = _operands()
    end = len(xs) if n is None else start + n
    x, y = xs[start:end], ys[start:end]
    a = _tensor(xs)[start:end]
    b = _tensor(ys)[start:end]
    xv, yv = _values(x), _values(y)
    with np.errstate(all="ignore"):
        _check(_bits(a + b), bf16_round(xv + yv), x, y, "a + b")
        _check(_bits(a * b), bf16_round(xv * yv), x, y, "a * b")
        _check(_bits(a - b), bf16_round(xv - yv), x, y, "a - b")
        _check(_bits(a / b), bf16_round(xv / yv), x, y, "a / b")
        # A 0-d operand (stride 0) on either side.
        c = np.full_like(x, 0x3FC0)  # 1.5
        _check(_bits(a * 1.5), bf16_round(xv * np.float32(1.5)), x, c, "a * 1.5")
        _check(_bits(1.5 - a), bf16_round(np.float32(1.5) - xv), c, x, "1.5 - a")
        np.testing.assert_array_equal(_bits(-a), bf16_round(-xv))
        np.testing.assert_array_equal(_bits(a.abs()), bf16_round(np.abs(xv)))
        # exp: strata's float32 exp on the widened values, rounded.
        want = bf16_round(a.float().exp().numpy())
        _check(_bits(a.exp()), want, x, x, "exp")
        # In place on itself.
        t = a.clone()
        t += t
        _check(_bits(t), bf16_round(xv + xv), x, x, "t += t")


def test_bf16_sums():
    for n in [1, 63, 64, 65, 1000, 70001]:
        v = ((np.arange(n) * 7919) % 201 - 100).astype(np.float32) / 4  # exact sums
        bits = bf16_round(v)
        t = _tensor(bits)
        assert _bits(t.sum())[()] == bf16_round(np.array([v.sum()], np.float32))[0]
        w = bits.copy()
        w[n // 2] = 0x7F81  # a signalling NaN: the sum is it, made quiet
        assert _bits(_tensor(w).sum())[()] == 0x7FC1
        w[n // 2] = 0xFF80
        assert _bits(_tensor(w).sum())[()] == 0xFF80


LENGTHS = [1, 15, 16, 17, 32, 33, 511, 512, 513, 1025, 70001]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", LENGTHS)
def test_float_extremes_against_numpy(dtype, n):
    rng = np.random.default_rng(n)
    base = (rng.standard_normal(n) * 100).astype(dtype)
    cases = [base]
    for at in {0, 15, 16, 511, 512, n // 2, n - 1}:
        if at < n:
            v = base.copy()
            v[at] = np.nan
            cases.append(v)
    v = base.copy()
    v[0], v[-1] = -np.inf, np.inf
    cases.append(v)
    cases.append(np.full(n, -np.inf, dtype))
    for v in cases:
        t = st.from_numpy(v)
        for got, want in [(t.amax(), v.max()), (t.amin(), v.min()), (t.max(), v.max()),
                          (t.min(), v.min()), (t[1:].amax() if n > 1 else t.amax(),
                                               v[1:].max() if n > 1 else v.max()),
                          (t[::2].amin(), v[::2].min())]:
            np.testing.assert_array_equal(got.numpy(), want)
        if n >= 3:
            m = v[: (n // 3) * 3].reshape(3, -1)
            np.testing.assert_array_equal(st.from_numpy(m).amax(1).numpy(), m.max(1))
            np.testing.assert_array_equal(st.from_numpy(m).amin(1).numpy(), m.min(1))


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int32, np.int64])
def test_integer_extremes_against_numpy(dtype):
    info = np.iinfo(dtype)
    for n in LENGTHS:
        v = np.random.default_rng(n).integers(info.min, info.max, n, dtype=dtype,
                                              endpoint=True)
        t = st.from_numpy(v)
        assert t.amax().numpy() == v.max() and t.amin().numpy() == v.min()
        assert t.max().numpy() == v.max() and t[::2].amin().numpy() == v[::2].min()
        # The type's extremes planted at lane, pair and block edges (int32's vector
        # blocks are 32 elements in pairs of 16, folded 512 at a time).
        for at in {0, 15, 16, 31, 32, 511, 512, 513, n // 2, n - 1}:
            if at >= n:
                continue
            w = np.zeros(n, dtype)
            w[at] = info.max
            assert st.from_numpy(w).amax().numpy() == info.max
            w[at] = info.min
            assert st.from_numpy(w).amin().numpy() == info.min


_ALL = """
import numpy as np
import strata as st
import test_bf16_and_extreme_blocks as m
assert st.cpu_level() == {level!r}, st.cpu_level()
for start, n in [(0, None), (1, 64), (3, 65), (7, 129), (1, 1000)]:
    m.test_bf16_binary_every_bit_pattern(start, n)
m.test_bf16_sums()
for n in m.LENGTHS:
    for dt in (np.float32, np.float64):
        m.test_float_extremes_against_numpy(dt, n)
for dt in (np.int8, np.uint8, np.int16, np.int32, np.int64):
    m.test_integer_extremes_against_numpy(dt)
print("ok")
"""


def _levels():
    order = ["portable", "avx2", "avx512"]
    return order[: order.index(st.cpu_level()) + 1]


@pytest.mark.parametrize("level", ["portable", "avx2", "avx512"])
def test_every_level_in_a_child(level):
    if level not in _levels():
        pytest.skip(f"this CPU runs at most {st.cpu_level()}")
    r = assert_clean(_ALL.format(level=level), timeout=600, env={"STRATA_CPU": level})
    assert r.stdout.strip().endswith("ok")
