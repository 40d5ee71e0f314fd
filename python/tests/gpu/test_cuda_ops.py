"""CUDA ops against two independent oracles: strata's own CPU engine (same inputs, same
layout built on each device) and, where it has the op with the same meaning, PyTorch.

Every input is built on the host as a contiguous "base", copied whole to the GPU, and the
same view function (transpose, flip, steps, offset, expand, ...) is applied on both
devices, so the CUDA kernels really see non-contiguous layouts.
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass

import numpy as np
import pytest

import strata as st

F16, BF16, F32, F64 = st.float16, st.bfloat16, st.float32, st.float64
ALL_DTYPES = [
    st.bool, st.uint8, st.int8, st.int16, st.uint16, st.int32, st.uint32, st.int64, st.uint64,
    F16, BF16, F32, F64,
]  # fmt: skip
FLOATS = (F16, BF16, F32, F64)
HALF = (F16, BF16)
UNSIGNED = (st.uint8, st.uint16, st.uint32, st.uint64)
NP = {
    st.bool: np.bool_, st.uint8: np.uint8, st.int8: np.int8, st.int16: np.int16,
    st.uint16: np.uint16, st.int32: np.int32, st.uint32: np.uint32, st.int64: np.int64,
    st.uint64: np.uint64, F16: np.float16, BF16: np.float32, F32: np.float32, F64: np.float64,
}  # fmt: skip
R, C = 6, 10
SPECIALS = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5]

_OPS = [tuple(row) for row in st._OP_TABLE]
UNARY = [n for n, arity, _ in _OPS if arity == 1]
BINARY = [n for n, arity, _ in _OPS if arity == 2]
INPLACE = {n: ip for n, arity, ip in _OPS if ip and arity < 3}

# Ops whose result is a single correctly rounded IEEE operation (or no rounding at all):
# the CUDA result must equal the CPU engine's bit for bit, half types included (they are
# computed in float32 and rounded once on both devices).
EXACT = set(
    """neg positive abs sign square relu sqrt rsqrt reciprocal deg2rad rad2deg floor ceil round
    trunc frac logical_not bitwise_not isnan isinf isfinite signbit add sub mul div maximum
    minimum fmax fmin copysign nextafter heaviside eq ne lt le gt ge logical_and logical_or
    logical_xor bitwise_and bitwise_or bitwise_xor bitwise_left_shift bitwise_right_shift fmod
    where clamp""".split()
)


def name_of(dt) -> str:
    return str(dt).removeprefix("strata.")


# ------------------------------------------------------------------------------ data


def values(rng, shape, dtype, *, specials=True, nonzero=False, lo=None, hi=None):
    """Random host values for ``dtype`` (bfloat16: float32 values, rounded later)."""
    if dtype == st.bool:
        return np.asarray(rng.random(shape) < 0.5)
    if dtype in FLOATS:
        a = np.asarray(rng.standard_normal(shape) * 3.0)
        if specials and a.size >= 16:
            a.reshape(-1)[: len(SPECIALS)] = SPECIALS
        if nonzero:
            a[a == 0] = 1.0
        return a.astype(np.float64 if dtype == F64 else np.float32)
    lo = (0 if dtype in UNSIGNED else -60) if lo is None else lo
    hi = 60 if hi is None else hi
    a = np.asarray(rng.integers(lo, hi, size=shape))
    if nonzero:
        a[a == 0] = 1
    return a.astype(NP[dtype])


def to_st(a, dtype):
    """A contiguous CPU strata tensor of ``dtype`` holding ``a``."""
    a = np.array(a, dtype=NP[dtype], copy=True, order="C")
    t = st.from_numpy(a)
    return t.to(BF16) if dtype == BF16 else t


_LAYOUTS = {
    "contig": ((R, C), lambda t: t),
    "T": ((C, R), lambda t: t.T),
    "flip": ((R, C), lambda t: t.flip(0, 1)),
    "step": ((2 * R, 3 * C + 1), lambda t: t[::2, 1::3]),
    "offset_T": ((C + 1, R + 2), lambda t: t[1:, 2:].T),
    "expand": ((1, C), lambda t: t.expand(R, C)),
    "row": ((C,), lambda t: t),
    "0d": ((), lambda t: t),
    "empty": ((0, C), lambda t: t),
}
LAYOUTS = ["contig", "T", "flip", "step", "offset_T", "expand", "0d", "empty"]
# The second operand of a binary op whose first operand has the key's layout (the shapes
# broadcast: a 0-d tensor against a matrix, a row against an empty matrix).
PARTNER = {
    "contig": "T", "T": "step", "flip": "contig", "step": "flip", "offset_T": "expand",
    "expand": "offset_T", "0d": "contig", "empty": "row",
}  # fmt: skip


@dataclass
class Pair:
    cpu: st.Tensor  # the view on the host
    gpu: st.Tensor  # the same view of a CUDA copy of the base
    cbase: st.Tensor
    gbase: st.Tensor


def make(rng, dtype, layout="contig", **kw) -> Pair:
    shape, view = _LAYOUTS[layout]
    cbase = to_st(values(rng, shape, dtype, **kw), dtype)
    gbase = cbase.cuda()
    assert gbase.is_cuda and gbase.device == "cuda:0" and gbase.dtype == dtype
    cpu, gpu = view(cbase), view(gbase)
    assert gpu.is_cuda and tuple(gpu.shape) == tuple(cpu.shape)
    # An empty array from NumPy may carry zero strides; .cuda() of it is row-major, as
    # PyTorch's .cuda() of a tensor that is not "non-overlapping and dense".
    if cpu.numel() > 0:
        assert gpu.stride() == cpu.stride(), layout
    assert gpu.storage_offset() == cpu.storage_offset(), layout
    return Pair(cpu, gpu, cbase, gbase)


def host(t) -> np.ndarray:
    """NumPy copy of a CPU or CUDA tensor (bfloat16 widened to float32)."""
    if t.is_cuda:
        t = t.cpu()
    assert t.device == "cpu"
    if t.dtype == BF16:
        t = t.to(F32)
    return np.array(t.numpy(), copy=True)


def tol(dtype, exact=False):
    if exact or dtype not in FLOATS:
        return None
    if dtype in HALF:
        return dict(rtol=1e-2, atol=1e-2)
    if dtype == F32:
        return dict(rtol=1e-5, atol=1e-5)
    return dict(rtol=1e-12, atol=1e-12)


def check(got, want, *, exact=False, what="", tolerance=None):
    """``got`` (CUDA) matches ``want`` (CPU engine): device, dtype, shape and values."""
    assert got.device == "cuda:0", what
    assert got.dtype == want.dtype, (what, got.dtype, want.dtype)
    assert tuple(got.shape) == tuple(want.shape), what
    g, w = host(got), host(want)
    t = tolerance or tol(want.dtype, exact)
    if t is None:
        np.testing.assert_array_equal(g, w, err_msg=what)
    else:
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), equal_nan=True, err_msg=what, **t)


def both(fn, cpu_args, gpu_args, *, what="", **kw):
    """Runs ``fn`` on the CPU arguments and the CUDA ones; the CUDA run must give the
    same result (``check``) or raise the same exception type the CPU run raised."""
    try:
        want = fn(*cpu_args)
    except Exception as e:  # noqa: BLE001 - parity of every error is the point
        with pytest.raises(type(e)):
            fn(*gpu_args)
        return None, None
    got = fn(*gpu_args)
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for i, (g, w) in enumerate(zip(got, want)):
            check(g, w, what=f"{what}[{i}]", **kw)
    else:
        check(got, want, what=what, **kw)
    return got, want


def tt(torch, t):
    """A torch CUDA tensor with the values of the strata tensor ``t``."""
    if t.dtype == BF16:
        return torch.from_numpy(host(t)).to("cuda", torch.bfloat16)
    return torch.from_numpy(host(t)).cuda()


def assert_torch(got, ref, *, what="", rtol=None, atol=None):
    """Compare a strata CUDA result with a torch CUDA result."""
    g = host(got)
    r = ref.detach().float().cpu().numpy() if str(ref.dtype) == "torch.bfloat16" else ref.detach().cpu().numpy()
    assert g.shape == r.shape, what
    if rtol is None and g.dtype.kind not in "fc":
        np.testing.assert_array_equal(g, r, err_msg=what)
    else:
        np.testing.assert_allclose(
            g.astype(np.float64), r.astype(np.float64), rtol=rtol or 1e-4, atol=atol or 1e-5, equal_nan=True, err_msg=what
        )


# ------------------------------------------------------------------------------ unary

_OTHER = [F64, F16, BF16, st.int32, st.int64, st.uint8, st.int8, st.bool]
UNARY_CASES = [(F32, lay) for lay in LAYOUTS] + [(dt, "T") for dt in _OTHER] + [(F64, "step"), (F16, "flip")]


@pytest.mark.parametrize("dtype,layout", UNARY_CASES, ids=lambda v: name_of(v) if isinstance(v, st.dtype) else v)
@pytest.mark.parametrize("op", UNARY)
def test_unary_matches_cpu_engine(op, dtype, layout, rng):
    p = make(rng, dtype, layout)
    fn = lambda t: getattr(t, op)()  # noqa: E731
    both(fn, (p.cpu,), (p.gpu,), exact=op in EXACT, what=op)
    # The module function is the same op.
    both(lambda t: getattr(st, op)(t), (p.cpu,), (p.gpu,), exact=op in EXACT, what=f"st.{op}")
    # The input is untouched.
    np.testing.assert_array_equal(host(p.gbase), host(p.cbase))


# Ops where NumPy-style NaN handling differs from PyTorch (documented in the op table).
_TORCH_SKIP = {"sign", "heaviside"}
_TORCH_NAME = {"gelu": lambda torch: torch.nn.functional.gelu}


def _torch_fn(torch, op):
    if op in _TORCH_NAME:
        return _TORCH_NAME[op](torch)
    return getattr(torch, op)


@pytest.mark.parametrize("op", [o for o in UNARY if o not in _TORCH_SKIP])
def test_unary_matches_torch(op, rng, torch):
    for dtype in (F32, st.int32, F16):
        p = make(rng, dtype, "T", specials=False)
        try:
            want = _torch_fn(torch, op)(tt(torch, p.cpu))
        except (RuntimeError, TypeError):
            continue  # torch has no kernel for this dtype; the CPU-engine test covers parity
        got = getattr(p.gpu, op)()
        assert name_of(got.dtype) == str(want.dtype).removeprefix("torch."), (op, dtype)
        rt = 1e-2 if dtype == F16 else 1e-4
        assert_torch(got, want, what=f"{op} {dtype}", rtol=rt, atol=rt)


# ------------------------------------------------------------------------------ binary

_SAME = [F32, F64, F16, BF16, st.int32, st.int64, st.uint8, st.int8, st.int16, st.bool]
_MIXED = [
    (st.int32, F32), (st.uint8, st.int8), (st.bool, F32), (F16, F32), (BF16, F16),
    (st.int64, F64), (st.uint8, st.int64), (F32, st.int64),
]  # fmt: skip
BINARY_CASES = (
    [((F32, F32), lay) for lay in LAYOUTS]
    + [((dt, dt), "T") for dt in _SAME[1:]]
    + [(pair, "flip") for pair in _MIXED]
)


def _second(op, rng, dtype, layout):
    if op == "pow" and dtype not in FLOATS:
        return make(rng, dtype, layout, lo=0, hi=5)  # negative integer powers are an error
    return make(rng, dtype, layout, nonzero=True)  # integer zero divisors: see below


@pytest.mark.parametrize(
    "dtypes,layout", BINARY_CASES, ids=lambda v: "-".join(map(name_of, v)) if isinstance(v, tuple) else v
)
@pytest.mark.parametrize("op", BINARY)
def test_binary_matches_cpu_engine(op, dtypes, layout, rng):
    a = make(rng, dtypes[0], layout)
    b = _second(op, rng, dtypes[1], PARTNER[layout])
    exact = op in EXACT
    both(lambda x, y: getattr(x, op)(y), (a.cpu, b.cpu), (a.gpu, b.gpu), exact=exact, what=op)
    both(lambda x, y: getattr(st, op)(x, y), (b.cpu, a.cpu), (b.gpu, a.gpu), exact=exact, what=f"st.{op} swapped")


@pytest.mark.parametrize("scalar", [3, -2.5, True, "cpu0d-f64", "cpu0d-i64"])
@pytest.mark.parametrize("dtype", [F32, st.int32, F16])
@pytest.mark.parametrize("op", BINARY)
def test_binary_with_scalar_or_cpu_0d(op, dtype, scalar, rng):
    a = make(rng, dtype, "step", nonzero=True, lo=1 if op == "pow" else None)
    if isinstance(scalar, str):  # a CPU 0-d tensor may be mixed with CUDA tensors
        s = st.tensor(2.0 if scalar.endswith("f64") else 3, dtype=F64 if scalar.endswith("f64") else st.int64)
        assert s.device == "cpu" and s.dim() == 0
    else:
        s = scalar
    exact = op in EXACT
    both(lambda x: getattr(x, op)(s), (a.cpu,), (a.gpu,), exact=exact, what=f"{op}(t, {scalar!r})")
    both(lambda x: getattr(st, op)(s, x), (a.cpu,), (a.gpu,), exact=exact, what=f"{op}({scalar!r}, t)")


@pytest.mark.parametrize("op", [o for o in BINARY if o not in _TORCH_SKIP])
def test_binary_matches_torch(op, rng, torch):
    for da, db in ((F32, F32), (st.int32, st.int32), (st.int32, F32), (BF16, BF16)):
        a = make(rng, da, "T", specials=False)
        if op.startswith("bitwise_") and "shift" in op:
            b = make(rng, db, "contig", lo=0, hi=8)  # counts torch defines the same everywhere
        elif op == "pow":
            b = make(rng, db, "contig", lo=0, hi=4, specials=False)
        else:
            b = make(rng, db, "contig", nonzero=True, specials=False)
        try:
            want = _torch_fn(torch, op)(tt(torch, a.cpu), tt(torch, b.cpu))
        except (RuntimeError, TypeError):
            continue
        got = getattr(a.gpu, op)(b.gpu)
        assert name_of(got.dtype) == str(want.dtype).removeprefix("torch."), (op, da, db)
        rt = 2e-2 if BF16 in (da, db) else 1e-4
        assert_torch(got, want, what=f"{op} {da} {db}", rtol=rt, atol=rt)


_OPERATORS = [
    operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod,
    operator.pow, operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge,
    operator.and_, operator.or_, operator.xor,
]  # fmt: skip


@pytest.mark.parametrize("dtype", [F32, st.int64, st.bool, BF16])
@pytest.mark.parametrize("fn", _OPERATORS, ids=lambda f: f.__name__)
def test_python_operators(fn, dtype, rng):
    a = make(rng, dtype, "offset_T", lo=0 if fn is operator.pow else None)
    b = make(rng, dtype, "contig", nonzero=True, lo=0 if fn is operator.pow else None, hi=4 if fn is operator.pow else None)
    both(fn, (a.cpu, b.cpu), (a.gpu, b.gpu), what=fn.__name__)
    both(lambda x: fn(2, x), (b.cpu,), (b.gpu,), what=f"2 {fn.__name__} t")
    both(lambda x: fn(x, 1.5), (a.cpu,), (a.gpu,), what=f"t {fn.__name__} 1.5")


@pytest.mark.parametrize("dtype", [F32, st.int32, st.bool, F16])
@pytest.mark.parametrize("fn", [operator.neg, operator.invert, operator.pos, abs], ids=lambda f: f.__name__)
def test_python_unary_operators(fn, dtype, rng):
    a = make(rng, dtype, "flip")
    both(fn, (a.cpu,), (a.gpu,), exact=True, what=fn.__name__)


# ------------------------------------------------------------------------------ in place


@pytest.mark.parametrize("dtype", [F32, st.int32, F16])
@pytest.mark.parametrize("op", sorted(INPLACE))
def test_inplace_on_transposed_cuda_tensor(op, dtype, rng):
    ip = INPLACE[op]
    a = make(rng, dtype, "offset_T", lo=1 if op == "pow" else None)
    args_c, args_g = (), ()
    if op in BINARY:
        b = _second(op, rng, dtype, "expand")
        args_c, args_g = (b.cpu,), (b.gpu,)
    before = host(a.gbase)
    stride, ptr = a.gpu.stride(), a.gpu.data_ptr()
    try:
        r_c = getattr(a.cpu, ip)(*args_c)
    except Exception as e:  # noqa: BLE001
        with pytest.raises(type(e)):
            getattr(a.gpu, ip)(*args_g)
        # An error raised before anything is written leaves the CUDA tensor as it was.
        np.testing.assert_array_equal(host(a.gbase), before)
        return
    r_g = getattr(a.gpu, ip)(*args_g)
    assert r_c.data_ptr() == a.cpu.data_ptr()
    assert r_g.data_ptr() == ptr and r_g.stride() == stride and r_g.is_cuda
    check(a.gpu, a.cpu, exact=op in EXACT, what=ip)
    # The write went through the view into the base (and only where the view is).
    check(a.gbase, a.cbase, exact=op in EXACT, what=f"{ip} base")


def test_inplace_broadcast_and_cast_rules(rng):
    a = make(rng, F32, "T")
    row = make(rng, F32, "row")
    a.cpu.add_(row.cpu[:R].unsqueeze(1))
    a.gpu.add_(row.gpu[:R].unsqueeze(1))
    check(a.gpu, a.cpu, exact=True)
    # A float result cannot be written into an int tensor, on either device.
    i = make(rng, st.int32, "T")
    with pytest.raises(Exception) as cpu_err:
        i.cpu.div_(2)
    with pytest.raises(type(cpu_err.value)):
        i.gpu.div_(2)
    # Writing into an expanded (overlapping) CUDA view is refused as on the CPU.
    e = make(rng, F32, "expand")
    with pytest.raises(Exception) as cpu_err:
        e.cpu.mul_(2.0)
    with pytest.raises(type(cpu_err.value)):
        e.gpu.mul_(2.0)


# ------------------------------------------------------------------------------ where / clamp


@pytest.mark.parametrize("layout", ["contig", "T", "step", "0d", "empty"])
@pytest.mark.parametrize("dtypes", [(F32, F32), (st.int32, F32), (st.int64, st.uint8), (F16, BF16), (st.bool, st.bool)])
def test_where(dtypes, layout, rng):
    cond = make(rng, st.bool, layout)
    a = make(rng, dtypes[0], PARTNER[layout])
    b = make(rng, dtypes[1], "expand" if layout != "empty" else "row")
    both(st.where, (cond.cpu, a.cpu, b.cpu), (cond.gpu, a.gpu, b.gpu), exact=True, what="where")
    both(lambda c, x: st.where(c, x, 0.5), (cond.cpu, a.cpu), (cond.gpu, a.gpu), exact=True, what="where scalar")
    both(lambda c, x: st.where(c, -1, x), (cond.cpu, b.cpu), (cond.gpu, b.gpu), exact=True, what="where scalar lhs")
    # A non-bool condition tensor (accepted or refused as on the CPU), a CPU 0-d operand.
    z = st.tensor(7.0)
    both(lambda c, x: st.where(c, x, z), (a.cpu, b.cpu), (a.gpu, b.gpu), exact=True, what="where nonbool cond")


@pytest.mark.parametrize("dtype", [F32, F64, st.int32, st.uint8, F16, BF16])
@pytest.mark.parametrize("layout", ["contig", "T", "flip", "step", "0d", "empty"])
def test_clamp(dtype, layout, rng):
    a = make(rng, dtype, layout)
    lo = make(rng, dtype, PARTNER[layout], lo=0, hi=10)
    hi = make(rng, dtype, "expand" if layout != "empty" else "row", lo=10, hi=30)
    for kw in (dict(min=-1, max=2), dict(min=0.5), dict(max=3), dict(min=2.5, max=1)):
        both(lambda t: t.clamp(**kw), (a.cpu,), (a.gpu,), exact=True, what=f"clamp {kw}")
    both(lambda t, x, y: t.clamp(x, y), (a.cpu, lo.cpu, hi.cpu), (a.gpu, lo.gpu, hi.gpu), exact=True, what="clamp T T")
    both(lambda t, x: st.clamp(t, min=x), (a.cpu, lo.cpu), (a.gpu, lo.gpu), exact=True, what="clamp min T")
    if layout not in ("0d", "empty"):
        c = a.cpu.clone().clamp_(-1, 1)
        g = a.gpu.clone().clamp_(-1, 1)
        check(g, c, exact=True, what="clamp_")


# ------------------------------------------------------------------------------ casts


@pytest.mark.parametrize("dst", ALL_DTYPES, ids=name_of)
@pytest.mark.parametrize("src", ALL_DTYPES, ids=name_of)
def test_cast_every_pair(src, dst, rng):
    if src in FLOATS and dst not in FLOATS and dst != st.bool:
        # Out-of-range float → int is undefined (PyTorch's CPU and CUDA differ): stay in range.
        kw = dict(specials=False)
        p = make(rng, src, "T", **kw)
        lo, hi = (0.0, 200.0) if dst in UNSIGNED else (-100.0, 100.0)
        p = Pair(p.cpu.clamp(lo, hi), p.gpu.clamp(lo, hi), p.cbase, p.gbase)
    elif src in FLOATS:
        p = make(rng, src, "T")  # NaN, ±inf, ±0 included; f64 → f16 overflows to inf
        big = to_st(np.array([1e5, -7e4, 3e38, 1e-8, 65504.0, 70000.0]), src)
        got, want = big.cuda().to(dst), big.to(dst)
        check(got, want, exact=True, what=f"{src}->{dst} extremes")
    else:
        lo, hi = (0, 255) if src in UNSIGNED else (-128, 128)
        if src in (st.int16, st.int32, st.int64):
            lo, hi = -40000, 40000  # wraps in narrower integer targets
        if src in (st.uint16, st.uint32, st.uint64):
            lo, hi = 0, 65535
        if src == st.bool:
            lo = hi = None
        p = make(rng, src, "T", lo=lo, hi=hi)
    got = p.gpu.to(dst)
    assert got.is_cuda and got.dtype == dst
    check(got, p.cpu.to(dst), exact=True, what=f"{src}->{dst}")
    # to(device, dtype) from the host gives the same values.
    check(p.cpu.to("cuda", dst), p.cpu.to(dst), exact=True, what=f"to(cuda, {dst})")


def test_cast_to_same_dtype_is_identity_and_copy_copies(rng):
    p = make(rng, F32, "T")
    assert p.gpu.to(F32) is p.gpu or p.gpu.to(F32).data_ptr() == p.gpu.data_ptr()
    c = p.gpu.to(F32, copy=True)
    assert c.data_ptr() != p.gpu.data_ptr()
    check(c, p.cpu, exact=True)


# ------------------------------------------------------------------------------ reductions

DIMS = [None, 0, 1, (0, 1), -1]
REDUCERS = ["sum", "prod", "mean", "amax", "amin", "all", "any", "var", "std", "logsumexp"]


def _reduce(op, t, dim, keepdim):
    if op == "logsumexp":
        return t.logsumexp((0, 1) if dim is None else dim, keepdim=keepdim)
    if dim is None:
        return getattr(t, op)()
    return getattr(t, op)(dim, keepdim=keepdim)


@pytest.mark.parametrize("layout", ["contig", "T", "step", "flip", "expand"])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dim", DIMS, ids=str)
@pytest.mark.parametrize("op", REDUCERS)
def test_reductions_f32(op, dim, keepdim, layout, rng, torch):
    p = make(rng, F32, layout, specials=False)
    got, want = both(
        lambda t: _reduce(op, t, dim, keepdim), (p.cpu,), (p.gpu,), what=op, tolerance=dict(rtol=1e-4, atol=1e-4)
    )
    if got is None:
        return
    x = tt(torch, p.cpu)
    try:
        if op == "logsumexp":
            ref = torch.logsumexp(x, (0, 1) if dim is None else dim, keepdim=keepdim)
        elif dim is None:
            ref = getattr(torch, op)(x)
        else:
            ref = getattr(torch, op)(x, dim=dim, keepdim=keepdim)
    except (RuntimeError, TypeError):
        return  # e.g. torch.prod takes one dim only
    assert_torch(got, ref, what=op, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", [F64, F16, BF16, st.int32, st.int64, st.uint8, st.bool])
@pytest.mark.parametrize("dim", DIMS, ids=str)
@pytest.mark.parametrize("op", REDUCERS + ["argmax", "argmin"])
def test_reductions_other_dtypes(op, dim, dtype, rng):
    if op in ("argmax", "argmin") and isinstance(dim, tuple):
        pytest.skip("argmax/argmin take one dim")
    p = make(rng, dtype, "T", specials=False, lo=0 if dtype in UNSIGNED else -3, hi=4)
    if op in ("argmax", "argmin"):
        fn = (lambda t: getattr(t, op)()) if dim is None else (lambda t: getattr(t, op)(dim))
    else:
        fn = lambda t: _reduce(op, t, dim, False)  # noqa: E731
    t = dict(rtol=1e-2, atol=1e-2) if dtype in HALF else dict(rtol=1e-10, atol=1e-10)
    both(fn, (p.cpu,), (p.gpu,), what=f"{op} {dtype}", tolerance=t if dtype in FLOATS else None)


@pytest.mark.parametrize("correction", [0, 1, 2.5])
@pytest.mark.parametrize("dim", [None, 0, 1, (0, 1)], ids=str)
def test_var_std_correction(dim, correction, rng, torch):
    p = make(rng, F64, "step", specials=False)
    for op in ("var", "std"):
        got, _ = both(lambda t: getattr(t, op)(dim, correction=correction), (p.cpu,), (p.gpu,), what=op)
        ref = getattr(torch, op)(tt(torch, p.cpu), dim=dim, correction=correction)
        assert_torch(got, ref, what=op, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("op", ["sum", "prod", "mean", "amax", "amin", "all", "any", "argmax", "argmin"])
def test_reduction_of_empty_and_0d(op, rng):
    z = make(rng, F32, "0d")
    both(lambda t: getattr(t, op)(), (z.cpu,), (z.gpu,), what=f"{op} 0d")
    e = make(rng, F32, "empty")
    both(lambda t: getattr(t, op)(), (e.cpu,), (e.gpu,), what=f"{op} empty")
    both(lambda t: getattr(t, op)(1), (e.cpu,), (e.gpu,), what=f"{op} empty dim1")
    both(lambda t: getattr(t, op)(0), (e.cpu,), (e.gpu,), what=f"{op} empty dim0")


@pytest.mark.parametrize("layout", ["contig", "T", "step"])
@pytest.mark.parametrize("dtype", [F32, F64, st.int32, F16, st.uint8])
def test_argmax_argmin_ties_and_nans(dtype, layout, rng, torch):
    vals = values(rng, (R, C), dtype, specials=False, lo=0, hi=3)  # few distinct values: ties
    if dtype in FLOATS:
        vals = np.round(vals.astype(np.float64)).clip(-1, 1)
        vals.reshape(-1)[[3, 17, 18, 40]] = np.nan  # NaNs in rows 0, 1 and 4
    p = embed(vals, dtype, layout)
    # dim=None reduces the flattened tensor (a copy for the T and step layouts).
    check(p.gpu.reshape(-1), p.cpu.reshape(-1), exact=True, what="flattened")
    for op in ("argmax", "argmin"):
        for dim in (None, 0, 1, -1):
            fn = (lambda t: getattr(t, op)()) if dim is None else (lambda t: getattr(t, op)(dim))
            got, want = both(fn, (p.cpu,), (p.gpu,), what=f"{op} {dim}")
            assert got.dtype == st.int64
            # First occurrence; NaN counts as the max (and the min), as NumPy and PyTorch.
            npf = getattr(np, op)
            ref = npf(host(p.cpu)) if dim is None else npf(host(p.cpu), axis=dim)
            np.testing.assert_array_equal(host(got), ref, err_msg=f"{op} {dim} vs numpy")
            tref = getattr(torch, op)(tt(torch, p.cpu)) if dim is None else getattr(torch, op)(tt(torch, p.cpu), dim)
            assert_torch(got, tref, what=f"{op} {dim} vs torch")
        for keepdim in (False, True):
            got, _ = both(lambda t: getattr(t, op.removeprefix("arg"))(1, keepdim=keepdim), (p.cpu,), (p.gpu,), what="max(dim)")
            assert isinstance(got, tuple) and got[1].dtype == st.int64
        both(lambda t: t.max(), (p.cpu,), (p.gpu,), what="max()")
        both(lambda t: t.min(), (p.cpu,), (p.gpu,), what="min()")


def embed(vals, dtype, layout) -> Pair:
    """A Pair whose view (contig, T or step layout) holds the (R, C) values ``vals``."""
    shape, view = _LAYOUTS[layout]
    base = np.zeros(shape, vals.dtype)
    {"contig": lambda: base.__setitem__(slice(None), vals), "T": lambda: base.__setitem__(slice(None), vals.T),
     "step": lambda: base.__setitem__((slice(None, None, 2), slice(1, None, 3)), vals)}[layout]()  # fmt: skip
    cbase = to_st(base, dtype)
    gbase = cbase.cuda()
    p = Pair(view(cbase), view(gbase), cbase, gbase)
    np.testing.assert_array_equal(host(p.cpu), vals.astype(NP[dtype]) if dtype != BF16 else host(p.cpu))
    return p


@pytest.mark.parametrize("layout", ["contig", "T", "step", "expand", "empty"])
@pytest.mark.parametrize("dtype", [F32, F64, st.int32, st.int64, st.uint8, st.bool, F16])
@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
def test_cumulative(op, dtype, layout, rng, torch):
    p = make(rng, dtype, layout, specials=False, lo=-2, hi=3)
    for dim in (0, 1, -1):
        t = dict(rtol=1e-2, atol=1e-2) if dtype in HALF else dict(rtol=1e-5, atol=1e-5)
        got, _ = both(lambda x: getattr(x, op)(dim), (p.cpu,), (p.gpu,), what=f"{op} {dim}", tolerance=t if dtype in FLOATS else None)
        if got is not None and dtype in (F32, st.int64):
            assert_torch(got, getattr(torch, op)(tt(torch, p.cpu), dim), what=op, rtol=t["rtol"] if dtype == F32 else None)


def test_large_reductions_against_torch(torch, rng):
    """Sizes that need several blocks and a second pass."""
    a = to_st(rng.standard_normal((1031, 4099)).astype(np.float32), F32)
    g = a.cuda()
    x = tt(torch, a)
    for dim in (None, 0, 1):
        for op in ("sum", "amax", "mean"):
            got = getattr(g, op)() if dim is None else getattr(g, op)(dim)
            ref = getattr(torch, op)(x) if dim is None else getattr(torch, op)(x, dim)
            assert_torch(got, ref, what=f"{op} {dim}", rtol=1e-4, atol=1e-3)
    assert_torch(g.T.sum(0), x.T.sum(0), rtol=1e-4, atol=1e-3)
    assert_torch(g[::3, 1::2].sum(1), x[::3, 1::2].sum(1), rtol=1e-4, atol=1e-3)
    big = to_st(rng.integers(0, 1000, 3_000_001), st.int64).cuda()
    assert big.sum().item() == int(tt(torch, big).sum().item())
    assert big.argmax().item() == int(tt(torch, big).argmax().item())


# ------------------------------------------------------------------------------ matmul


def _mat(rng, dtype, shape, transposed):
    if transposed:
        shape = (*shape[:-2], shape[-1], shape[-2])
    base = to_st(rng.standard_normal(shape).astype(np.float32), dtype)
    return base, (lambda t: t.transpose(-1, -2)) if transposed else (lambda t: t)


MM_TOL = {F32: dict(rtol=1e-4, atol=1e-4), F64: dict(rtol=1e-12, atol=1e-12), F16: dict(rtol=2e-2, atol=5e-2), BF16: dict(rtol=3e-2, atol=1e-1)}


@pytest.mark.parametrize("tb", [False, True], ids=["b", "bT"])
@pytest.mark.parametrize("ta", [False, True], ids=["a", "aT"])
@pytest.mark.parametrize("shapes", [((33, 47), (47, 29)), ((128, 96), (96, 64)), ((1, 17), (17, 1)), ((2, 1, 9, 12), (3, 12, 5)), ((4, 7, 8), (4, 8, 6))], ids=str)
@pytest.mark.parametrize("dtype", [F32, F64, F16, BF16], ids=name_of)
def test_matmul(dtype, shapes, ta, tb, rng, torch):
    ab, av = _mat(rng, dtype, shapes[0], ta)
    bb, bv = _mat(rng, dtype, shapes[1], tb)
    a_c, b_c = av(ab), bv(bb)
    a_g, b_g = av(ab.cuda()), bv(bb.cuda())
    got = a_g @ b_g
    assert got.is_cuda and got.dtype == dtype
    # CPU engine in float64 of the same values is the reference, then the torch result.
    want = (a_c.to(F64) @ b_c.to(F64)).to(dtype) if dtype in HALF else a_c @ b_c
    check(got, want, tolerance=MM_TOL[dtype], what="@")
    check(st.matmul(a_g, b_g), want, tolerance=MM_TOL[dtype], what="st.matmul")
    ref = tt(torch, a_c) @ tt(torch, b_c)
    assert_torch(got, ref, what="torch @", **MM_TOL[dtype])
    if len(shapes[0]) == 2:
        check(a_g.mm(b_g), want, tolerance=MM_TOL[dtype], what="mm")
    if len(shapes[0]) == 3 and len(shapes[1]) == 3:
        check(a_g.bmm(b_g), want, tolerance=MM_TOL[dtype], what="bmm")


def test_matmul_errors(rng):
    a = make(rng, st.int32, "contig").gpu
    with pytest.raises(TypeError, match="not implemented for"):
        a @ a.T
    f = make(rng, F32, "contig")
    with pytest.raises(Exception) as cpu_err:
        f.cpu @ f.cpu  # (6, 10) @ (6, 10): shape mismatch
    with pytest.raises(type(cpu_err.value)):
        f.gpu @ f.gpu
    with pytest.raises(st.DeviceError, match="Expected all tensors to be on the same device"):
        f.gpu @ f.cpu.T


# ------------------------------------------------------------------------------ indexing


@pytest.mark.parametrize("idx_device", ["cpu", "cuda"])
@pytest.mark.parametrize("layout", ["contig", "T", "step"])
@pytest.mark.parametrize("dtype", [F32, st.int64, F16, st.bool])
def test_index_gather(dtype, layout, idx_device, rng, torch):
    p = make(rng, dtype, layout)
    idx = st.tensor([0, 5, -1, 2, 2, 0], dtype=st.int64)
    gi = idx.cuda() if idx_device == "cuda" else idx
    both(lambda t, i: t[i], (p.cpu, idx), (p.gpu, gi), exact=True, what="t[idx]")
    both(lambda t, i: t[:, i], (p.cpu, idx), (p.gpu, gi), exact=True, what="t[:, idx]")
    both(lambda t, i: t.index_select(1, i), (p.cpu, idx), (p.gpu, gi), exact=True, what="index_select")
    idx2 = st.tensor([[1, 3], [4, 4]], dtype=st.int64)
    both(lambda t, i: t[i, i], (p.cpu, idx2), (p.gpu, idx2.cuda()), exact=True, what="t[idx2, idx2]")
    mask = make(rng, st.bool, "contig")
    gm = mask.gpu if idx_device == "cuda" else mask.cpu
    got, _ = both(lambda t, m: t[m], (p.cpu, mask.cpu), (p.gpu, gm), exact=True, what="t[mask]")
    assert got.dim() == 1 and got.shape[0] == int(host(mask.cpu).sum())
    both(lambda t, m: t[m[:, 0]], (p.cpu, mask.cpu), (p.gpu, gm), exact=True, what="t[row mask]")
    if dtype == F32:
        assert_torch(p.gpu[gi], tt(torch, p.cpu)[tt(torch, idx)], what="torch t[idx]")
        assert_torch(p.gpu[gm], tt(torch, p.cpu)[tt(torch, mask.cpu)], what="torch t[mask]")
    with pytest.raises(IndexError):
        p.gpu[st.tensor([R], dtype=st.int64).cuda()]


@pytest.mark.parametrize("layout", ["contig", "T", "step"])
@pytest.mark.parametrize("dtype", [F32, st.int64, st.int32])
def test_index_put(dtype, layout, rng, torch):
    p = make(rng, dtype, layout, specials=False)
    idx = st.tensor([1, 4, 1, 1, 0], dtype=st.int64)
    vals = make(rng, dtype, "contig", specials=False)
    v_c = vals.cpu[:5].round() if dtype in FLOATS else vals.cpu[:5]  # integers: sums are exact
    v_g = vals.gpu[:5].round() if dtype in FLOATS else vals.gpu[:5]
    c, g = p.cpu.clone(), p.gpu.clone()
    c.index_put_((idx,), v_c, accumulate=True)
    g.index_put_((idx.cuda(),), v_g, accumulate=True)
    check(g, c, exact=True, what="index_put_ accumulate")
    tref = tt(torch, p.cpu).index_put_((tt(torch, idx),), tt(torch, v_c), accumulate=True)
    assert_torch(g, tref, what="torch index_put_ accumulate")
    # Plain assignment: t[idx] = v (unique indices), t[mask] = scalar, t[:, idx] = row.
    u = st.tensor([3, 0, 5], dtype=st.int64)
    c, g = p.cpu.clone(), p.gpu.clone()
    c[u] = v_c[:3]
    g[u.cuda()] = v_g[:3]
    check(g, c, exact=True, what="t[idx] = v")
    mask = make(rng, st.bool, layout)
    c[mask.cpu] = 7
    g[mask.gpu] = 7
    check(g, c, exact=True, what="t[mask] = 7")
    c[:, st.tensor([1, 2], dtype=st.int64)] = -1
    g[:, st.tensor([1, 2], dtype=st.int64).cuda()] = -1
    check(g, c, exact=True, what="t[:, idx] = -1")
    # Writes through a view reach the base.
    c, g = p.cbase.clone(), p.gbase.clone()
    view = _LAYOUTS[layout][1]
    view(c)[u] = v_c[:3]
    view(g)[u.cuda()] = v_g[:3]
    check(g, c, exact=True, what="view[idx] = v")


# ------------------------------------------------------------------------------ random


@pytest.mark.parametrize("fn", ["rand", "randn"])
@pytest.mark.parametrize("dtype", [None, F64, F16, BF16])
def test_rand_matches_cpu_stream(fn, dtype):
    kw = {} if dtype is None else {"dtype": dtype}
    st.manual_seed(1234)
    g = getattr(st, fn)(3, 5, device="cuda", **kw)
    st.manual_seed(1234)
    c = getattr(st, fn)(3, 5, **kw)
    assert g.device == "cuda:0" and g.dtype == c.dtype
    check(g, c, exact=True, what=fn)
    assert len(np.unique(host(g))) > 5  # not a constant
    st.manual_seed(99)
    other = getattr(st, fn)(3, 5, device="cuda", **kw)
    assert not np.array_equal(host(other), host(g))


@pytest.mark.parametrize("make_fn", ["zeros", "ones", "empty", "full", "arange", "eye", "linspace"])
def test_creation_on_cuda(make_fn):
    args = {
        "zeros": ((3, 4), {}), "ones": ((3, 4), {"dtype": st.int32}), "empty": ((2, 0, 3), {}),
        "full": (((3, 2), -1.5), {}), "arange": ((2, 11, 3), {}), "eye": ((4, 3), {}),
        "linspace": ((0.0, 1.0, 7), {"dtype": F64}),
    }[make_fn]  # fmt: skip
    c = getattr(st, make_fn)(*args[0], **args[1])
    g = getattr(st, make_fn)(*args[0], device="cuda", **args[1])
    check(g, c, exact=True, what=make_fn)


# ------------------------------------------------------------------------------ errors


def test_device_mismatch(rng):
    a = make(rng, F32, "T")
    other = make(rng, F32, "contig").cpu
    for fn in (operator.add, operator.mul, st.maximum, lambda x, y: st.where(y > 0, x, y), lambda x, y: x.copysign(y)):
        with pytest.raises(st.DeviceError) as info:
            fn(a.gpu, other)
        assert "Expected all tensors to be on the same device, but found at least two devices" in str(info.value)
        assert isinstance(info.value, RuntimeError)
        with pytest.raises(st.DeviceError):
            fn(other, a.gpu)
    with pytest.raises(st.DeviceError):
        a.gpu.add_(other)
    with pytest.raises(st.DeviceError):
        a.gpu.clamp(other, None)
    # A CPU 0-d tensor and Python scalars are fine, and keep the CUDA device.
    z = st.tensor(2.5)
    check(a.gpu + z, a.cpu + z, exact=True)
    check(z * a.gpu, z * a.cpu, exact=True)
    check(a.gpu - 1, a.cpu - 1, exact=True)
    with pytest.raises(st.DeviceError):
        a.gpu.to("cuda:7")
    with pytest.raises(st.DeviceError):
        st.zeros(2, device="cuda:7")


@pytest.mark.parametrize("dtype", [st.int32, st.int64, st.uint8, st.int8])
@pytest.mark.parametrize("op", ["floor_divide", "remainder", "fmod"])
def test_integer_division_by_zero(op, dtype, rng):
    a = make(rng, dtype, "T")
    b = make(rng, dtype, "contig", nonzero=True)
    b_c = b.cpu.clone()
    b_c[2, 3] = 0
    b_g = b_c.cuda()
    with pytest.raises(Exception) as cpu_err:
        getattr(a.cpu, op)(b_c)
    assert "ZeroDivisionError" in str(cpu_err.value)
    with pytest.raises(type(cpu_err.value)) as gpu_err:
        getattr(a.gpu, op)(b_g)
    assert str(gpu_err.value) == str(cpu_err.value)
    with pytest.raises(type(cpu_err.value), match="ZeroDivisionError"):
        getattr(a.gpu, op)(0)
    # The in-place form raises before writing.
    before = host(a.gbase)
    if op + "_" in dir(a.gpu):
        with pytest.raises(type(cpu_err.value), match="ZeroDivisionError"):
            getattr(a.gpu, op + "_")(b_g)
        np.testing.assert_array_equal(host(a.gbase), before)
    # Float division by zero is fine: inf/nan, as on the CPU.
    f = a.gpu.to(F32)
    check(f // 0, a.cpu.to(F32) // 0, exact=True)


# ------------------------------------------------------------------------------ host views


@pytest.mark.parametrize("layout", ["contig", "T", "step", "0d", "empty", "expand"])
@pytest.mark.parametrize("dtype", [F32, st.int32, st.bool, F16, BF16])
def test_tolist_item_repr(dtype, layout, rng):
    p = make(rng, dtype, layout, specials=False)
    assert p.gpu.tolist() == p.cpu.tolist()
    if p.cpu.numel() == 1:
        assert p.gpu.item() == p.cpu.item()
    else:
        with pytest.raises(Exception) as cpu_err:
            p.cpu.item()
        with pytest.raises(type(cpu_err.value)):
            p.gpu.item()
    r = repr(p.gpu)
    assert r.startswith("tensor(") and "device='cuda:0'" in r and r.endswith(")"), r
    # The values print as on the host; only the device suffix is added (line breaks may
    # move, so compare without whitespace).
    rc = repr(p.cpu)
    squash = lambda s: re.sub(r"\s+", "", s)  # noqa: E731
    assert squash(r).replace(",device='cuda:0'", "") == squash(rc), (r, rc)
    assert isinstance(p.gpu.explain(), str) and "cuda:0" in p.gpu.explain()
    with pytest.raises(TypeError) as info:
        p.gpu.numpy()
    assert str(info.value) == (
        "can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first."
    )
    if p.cpu.numel() == 1 and dtype != st.bool:
        assert float(p.gpu) == float(p.cpu)
        assert bool(p.gpu) == bool(p.cpu)


def test_repr_like_torch():
    t = st.tensor([1.5, -2.0, 3.25]).cuda()
    assert repr(t) == "tensor([ 1.5000, -2.0000,  3.2500], device='cuda:0')"
    i = st.tensor([1, 2], dtype=st.int32).cuda()
    assert repr(i) == "tensor([1, 2], device='cuda:0', dtype=strata.int32)"
    assert repr(st.tensor(7).cuda()) == "tensor(7, device='cuda:0')"


# ------------------------------------------------------------------------------ loop kinds


@pytest.mark.parametrize("dtype", [F32, st.int64, F16, st.uint8])
def test_large_layouts_reach_every_loop_kind(dtype, rng, torch):
    """Layouts big enough for the row loop (last dim >= 32) and the tiled loop (a
    transposed operand, tiles of 32 with partial ones at the edges, a batch dim),
    against the CPU engine and PyTorch."""
    c = to_st(values(rng, (70, 90), dtype, specials=False), dtype)
    c2 = to_st(values(rng, (90, 70), dtype, specials=False), dtype)
    g, g2 = c.cuda(), c2.cuda()
    t, t2 = tt(torch, c), tt(torch, c2)
    cases = {
        "T.contiguous": lambda x, y: x.T.contiguous(),
        "flip(0)": lambda x, y: x.flip(0).contiguous(),
        "[::2, 1::2]": lambda x, y: x[::2, 1::2].contiguous(),
        "x + row": lambda x, y: x + x[3],
        "x + column": lambda x, y: x + x[:, :1],
        "x + y.T": lambda x, y: x + y.T,
        "y.T * x.flip(1)": lambda x, y: y.T * x.flip(1),
    }
    for name, fn in cases.items():
        got = fn(g, g2)
        check(got, fn(c, c2), what=name)
        assert_torch(got, fn(t, t2), what=name, **({} if dtype not in FLOATS else tol(dtype)))
    x = to_st(values(rng, (3, 5, 40, 36), dtype, specials=False), dtype)
    for perm in [(0, 2, 3, 1), (0, 3, 1, 2), (3, 2, 1, 0)]:
        got = x.cuda().permute(*perm).contiguous()
        check(got, x.permute(*perm).contiguous(), exact=True, what=f"permute{perm}")
        assert got.is_contiguous()
    # In place through a transposed destination.
    d, dc = g2.clone(), c2.clone()
    d.T.add_(g.flip(1))
    dc.T.add_(c.flip(1))
    check(d, dc, what="T.add_")
