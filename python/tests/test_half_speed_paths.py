"""The half-precision fast paths (block conversions F16C / AVX-512 / portable, the f32
block kernels of the elementwise ops, casts, sums, 2-byte transposes) against NumPy's
float16, contiguous, strided, broadcast, at lengths around the vector widths and the
64-element block; then the same checks in a child process at every CPU level this
machine has (``STRATA_CPU``, read once per process).

NumPy computes a float16 ``a + b`` (and ``*``, ``-``, ``/``) in float32 and rounds once,
as strata does, so those are compared bit for bit; so are the casts (NumPy's
float64 -> float16 is correctly rounded). Transcendental functions may differ by one
float16 ulp (the float32 functions differ in their last bits). bfloat16 has no NumPy
dtype: it is checked against float32 values rounded to nearest even here.
"""

from __future__ import annotations

import numpy as np
import pytest

import strata as st
from _strata_helpers import bf16_round
from _isolated import assert_clean

LENGTHS = [0, 1, 7, 8, 9, 15, 16, 17, 31, 33, 63, 64, 65, 127, 129, 1000, 70001]


def _src(n: int, seed: int, dtype=np.float16, scale: float = 4.0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(n) * scale).astype(dtype)


def _bits16(a) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.uint16)


def _half_bits(t) -> np.ndarray:
    """A float16 tensor's values as uint16 bits (through NumPy's float16)."""
    return _bits16(t.numpy())


def _bf16_values(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


def _bf16_bits_of(t) -> np.ndarray:
    """A bfloat16 tensor's bits: widened to float32 (exact) and shifted back."""
    f = np.ascontiguousarray(t.float().numpy())
    return (f.view(np.uint32) >> 16).astype(np.uint16)


@pytest.mark.parametrize("n", LENGTHS)
def test_float16_arithmetic_bitwise(n):
    a, b = _src(n, 1), _src(n, 2)
    b[b == 0] = 1
    sa, sb = st.from_numpy(a), st.from_numpy(b)
    for name, f in [("add", lambda x, y: x + y), ("sub", lambda x, y: x - y),
                    ("mul", lambda x, y: x * y), ("div", lambda x, y: x / y)]:
        np.testing.assert_array_equal(_half_bits(f(sa, sb)), _bits16(f(a, b)), err_msg=name)
    # Broadcast 0-d / 1-element operands on either side.
    s = np.float16(1.5)
    np.testing.assert_array_equal(_half_bits(sa * 1.5), _bits16(a * s))
    np.testing.assert_array_equal(_half_bits(st.from_numpy(np.array(s)) - sa), _bits16(s - a))
    # Strided: every second element, and a reversed view.
    w = _src(2 * n, 3)
    sw = st.from_numpy(w)
    np.testing.assert_array_equal(_half_bits(sw[::2] + sw[1::2]), _bits16(w[::2] + w[1::2]))
    np.testing.assert_array_equal(_half_bits(sw.flip(0) * sw), _bits16(w[::-1] * w))
    # In place.
    c = st.from_numpy(a.copy())
    c += c
    np.testing.assert_array_equal(_half_bits(c), _bits16(a + a))


@pytest.mark.parametrize("n", [0, 1, 9, 65, 1000, 70001])
def test_float16_math_within_one_ulp(n):
    a = _src(n, 4, scale=2.0)
    sa = st.from_numpy(a)
    for name in ["exp", "sin", "tanh", "sqrt", "log"]:
        x = np.abs(a) + np.float16(0.5) if name in ("sqrt", "log") else a
        got = getattr(st.from_numpy(x), name)().numpy().astype(np.float64)
        with np.errstate(all="ignore"):
            want = getattr(np, name)(x.astype(np.float32)).astype(np.float16).astype(np.float64)
        ulp = np.spacing(np.abs(want).astype(np.float16)).astype(np.float64)
        assert np.all(np.abs(got - want) <= ulp), name
    np.testing.assert_array_equal(_half_bits(-sa), _bits16(-a))
    np.testing.assert_array_equal(_half_bits(sa.abs()), _bits16(np.abs(a)))


# The functions whose float32 form has an AVX-512 kernel
# (crates/strata/src/kernel/vector_math/avx512_f32.rs), which the half dtypes run on their
# widened blocks at that level: (name, NumPy's name, input domain).
KERNEL_MATH = [("exp", "exp", "any"), ("exp2", "exp2", "any"), ("expm1", "expm1", "any"),
               ("log", "log", "pos"), ("log2", "log2", "pos"), ("log10", "log10", "pos"),
               ("log1p", "log1p", "pos"), ("sin", "sin", "any"), ("cos", "cos", "any"),
               ("tan", "tan", "any"), ("tanh", "tanh", "any"), ("sinh", "sinh", "any"),
               ("cosh", "cosh", "any"), ("asinh", "arcsinh", "any"),
               ("acosh", "arccosh", "above1"), ("atanh", "arctanh", "unit"),
               ("atan", "arctan", "any")]


def _domain(a, dom):
    if dom == "pos":
        return np.abs(a) + a.dtype.type(0.5)
    if dom == "above1":
        return np.abs(a) + a.dtype.type(1.0)
    if dom == "unit":
        return (a / (np.abs(a).max(initial=0) * 1.01 + 1)).astype(a.dtype)
    return a


@pytest.mark.parametrize("n", [1, 17, 129, 1000, 70001])
def test_half_math_through_the_float32_kernels(n):
    """float16: within one ulp of NumPy's float32 function rounded; bfloat16: the bits of
    strata's own float32 function on the widened values, rounded (the same float32 code at
    every level: the kernel at AVX-512), contiguous and strided."""
    a16 = _src(n, 11, scale=1.5)
    a32 = _src(n, 12, np.float32, scale=1.5)
    for name, np_name, dom in KERNEL_MATH:
        x = _domain(a16, dom)
        got = getattr(st.from_numpy(x), name)().numpy().astype(np.float64)
        with np.errstate(all="ignore"):
            want = getattr(np, np_name)(x.astype(np.float32)).astype(np.float16)
        want = want.astype(np.float64)
        ulp = np.spacing(np.abs(want).astype(np.float16)).astype(np.float64)
        bad = ~((np.abs(got - want) <= ulp) | (got == want))
        assert not bad.any(), (name, x[bad][:5], got[bad][:5], want[bad][:5])
        strided = getattr(st.from_numpy(x)[::2], name)().numpy().astype(np.float64)
        np.testing.assert_array_equal(strided, got[::2])
        xb = st.from_numpy(_domain(a32, dom)).bfloat16()
        wide = getattr(xb.float(), name)().numpy()
        np.testing.assert_array_equal(_bf16_bits_of(getattr(xb, name)()), bf16_round(wide))
        np.testing.assert_array_equal(_bf16_bits_of(getattr(xb[::2], name)()),
                                      bf16_round(wide[::2]))


def _f32_specials():
    v = [0.0, -0.0, np.inf, -np.inf, np.nan, 65504.0, 65519.996, 65520.0, 65536.0, 1e-8,
         5.96e-8, 2.98e-8, 6.1035156e-05, 3.4e38, -3.4e38, 1.4e-45]
    return np.array(v, dtype=np.float32)


@pytest.mark.parametrize("n", LENGTHS)
def test_casts_bitwise(n):
    x = np.concatenate([_src(n, 5, np.float32, 300.0), _f32_specials()])
    # Ties between float16 neighbours and the floats either side of them.
    h = _src(n, 6, np.float16, 100.0)
    up = np.nextafter(h, np.float16(np.inf))
    mid = (h.astype(np.float32) + up.astype(np.float32)) / 2
    mids = np.concatenate([mid, np.nextafter(mid, np.float32(np.inf)),
                           np.nextafter(mid, np.float32(-np.inf))]).astype(np.float32)
    x = np.concatenate([x, mids[np.isfinite(mids)]])
    sx = st.from_numpy(x)
    np.testing.assert_array_equal(_half_bits(sx.half()), _bits16(x.astype(np.float16)))
    np.testing.assert_array_equal(_bf16_bits_of(sx.bfloat16()), bf16_round(x))
    # Strided source.
    np.testing.assert_array_equal(_half_bits(sx[::3].half()), _bits16(x[::3].astype(np.float16)))
    # float16 -> float32 / float64, every second element too.
    hs = st.from_numpy(h)
    np.testing.assert_array_equal(hs.float().numpy(), h.astype(np.float32))
    np.testing.assert_array_equal(hs.double().numpy(), h.astype(np.float64))
    np.testing.assert_array_equal(hs[::2].float().numpy(), h[::2].astype(np.float32))
    # float64 -> float16: correctly rounded (NumPy rounds once), including values a hair
    # from a tie, where rounding to float32 first would land on the tie.
    d = np.concatenate([mid.astype(np.float64) * (1 + 1e-12), mid.astype(np.float64) * (1 - 1e-12),
                        _src(n, 7, np.float64, 1000.0)])
    np.testing.assert_array_equal(_half_bits(st.from_numpy(d).half()), _bits16(d.astype(np.float16)))
    # bfloat16 -> float32 is exact.
    b = st.from_numpy(x).bfloat16()
    np.testing.assert_array_equal(np.ascontiguousarray(b.float().numpy()).view(np.uint32) & 0xFFFF, 0)


@pytest.mark.parametrize("n", LENGTHS)
def test_bfloat16_arithmetic_against_rounded_float32(n):
    a, b = _src(n, 8, np.float32), _src(n, 9, np.float32)
    ab, bb = bf16_round(a), bf16_round(b)
    av, bv = _bf16_values(ab), _bf16_values(bb)
    sa, sb = st.from_numpy(a).bfloat16(), st.from_numpy(b).bfloat16()
    np.testing.assert_array_equal(_bf16_bits_of(sa), ab)
    np.testing.assert_array_equal(_bf16_bits_of(sa + sb), bf16_round(av + bv))
    np.testing.assert_array_equal(_bf16_bits_of(sa * sb), bf16_round(av * bv))
    np.testing.assert_array_equal(_bf16_bits_of(sa[::2] * 2.0), bf16_round(av[::2] * 2))


@pytest.mark.parametrize("n", [1, 15, 16, 17, 255, 256, 257, 1000, 70001])
def test_half_sums_and_means(n):
    a = (_src(n, 10, np.float16) * 8).round() / 8  # exact in float32 sums
    a = a.astype(np.float16)
    sa = st.from_numpy(a)
    exact = a.astype(np.float64).sum()
    assert sa.sum().numpy().astype(np.float64) == np.float64(np.float16(exact))
    assert sa[::2].sum().numpy().astype(np.float64) == np.float64(
        np.float16(a[::2].astype(np.float64).sum()))
    # The mean divides in float64 and rounds (through float32: within one float16 ulp).
    want = np.float16(exact / n)
    assert abs(sa.mean().numpy().astype(np.float64) - np.float64(want)) <= np.spacing(abs(want))
    assert sa.amax().numpy() == a.max() and sa.amin().numpy() == a.min()
    b = sa.bfloat16()
    bv = _bf16_values(_bf16_bits_of(b)).astype(np.float64)
    got = float(b.sum().float().numpy())
    assert got == float(_bf16_values(bf16_round(np.array([bv.sum()], dtype=np.float32)))[0])
    # Sum over a dim of a 2-d array, both ways.
    m = a[: (n // 5) * 5].reshape(-1, 5) if n >= 5 else a.reshape(1, -1)
    sm = st.from_numpy(m)
    for dim in (0, 1):
        want = m.astype(np.float64).sum(axis=dim).astype(np.float16)
        np.testing.assert_array_equal(sm.sum(dim).numpy(), want)


@pytest.mark.parametrize("shape", [(1, 1), (15, 17), (16, 16), (33, 31), (64, 64), (257, 300),
                                   (600, 520), (1024, 96)])
def test_two_byte_transposes(shape):
    a = _src(shape[0] * shape[1], 11).reshape(shape)
    sa = st.from_numpy(a)
    np.testing.assert_array_equal(_bits16(sa.T.contiguous().numpy()), _bits16(a.T))
    i = a.view(np.int16)
    np.testing.assert_array_equal(st.from_numpy(i).T.contiguous().numpy(), i.T)
    # A transposed float16 operand of an op.
    np.testing.assert_array_equal(_half_bits(sa.T + sa.T), _bits16(a.T + a.T))


_ALL = """
import sys
import numpy as np
import strata as st
import test_half_speed_paths as m
assert st.cpu_level() == {level!r}, st.cpu_level()
for n in m.LENGTHS:
    m.test_float16_arithmetic_bitwise(n)
    m.test_casts_bitwise(n)
    m.test_bfloat16_arithmetic_against_rounded_float32(n)
for n in [1, 17, 257, 70001]:
    m.test_half_sums_and_means(n)
    m.test_float16_math_within_one_ulp(n)
    m.test_half_math_through_the_float32_kernels(n)
for shape in [(15, 17), (33, 31), (600, 520)]:
    m.test_two_byte_transposes(shape)
print("ok")
"""


def _levels():
    order = ["portable", "avx2", "avx512"]
    top = st.cpu_level()
    return order[: order.index(top) + 1]


@pytest.mark.parametrize("level", ["portable", "avx2", "avx512"])
def test_every_level_in_a_child(level):
    if level not in _levels():
        pytest.skip(f"this CPU runs at most {st.cpu_level()}")
    r = assert_clean(_ALL.format(level=level), timeout=600, env={"STRATA_CPU": level})
    assert r.stdout.strip().endswith("ok")
