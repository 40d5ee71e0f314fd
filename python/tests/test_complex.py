"""Complex dtypes (complex64, complex128): creation, exchange, the part views, arithmetic,
math, reductions and matmul, against NumPy on the same data; bad input."""

import math

import numpy as np
import pytest

import strata as st

RNG = np.random.default_rng(7)
CDTYPES = [(st.complex64, np.complex64), (st.complex128, np.complex128)]


def crandom(shape, npdt=np.complex128):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(npdt)


def layouts(npdt):
    """(name, ndarray) pairs over the layouts the engine accepts."""
    base = crandom((6, 8), npdt)
    return [
        ("contiguous", base),
        ("transposed", base.T),
        ("stepped", base[::2, 1::3]),
        ("negative", base[::-1, ::-2]),
        ("broadcast", np.broadcast_to(crandom((1, 8), npdt), (5, 8))),
        ("zero_d", np.array(1.5 - 2j, dtype=npdt)),
        ("empty", base[:0]),
    ]


def as_strata(a):
    """A strata view over the same memory as `a` (broadcast arrays via expand)."""
    if a.ndim and 0 in a.strides and a.size:
        base = np.ascontiguousarray(a[tuple(slice(0, 1) if s == 0 else slice(None) for s in a.strides)])
        return st.from_numpy(base).expand(*a.shape)
    return st.from_numpy(a)


def tol(npdt):
    return dict(rtol=2e-6, atol=2e-6) if npdt == np.complex64 else dict(rtol=1e-13, atol=1e-13)


# ----- creation and exchange


def test_python_complex_infers_complex64_and_dtypes_convert():
    t = st.tensor([1 + 2j, 3, -0.5j])
    assert t.dtype == st.complex64 and t.dtype.is_complex and t.dtype.itemsize == 8
    assert t.tolist() == [1 + 2j, 3 + 0j, -0.5j]
    assert isinstance(t[0].item(), complex)
    assert complex(t[0]) == 1 + 2j and complex(st.tensor(2.5)) == 2.5 + 0j
    assert float(t[1]) == 3.0  # a zero imaginary part converts
    with pytest.raises(TypeError, match="can't convert complex to float"):
        float(t[0])
    with pytest.raises(TypeError, match="can't convert complex to int"):
        int(t[1])
    assert st.tensor(1j).dtype == st.complex64 and st.tensor(1j).item() == 1j
    assert st.tensor([1, 2], dtype=st.complex128).dtype == st.complex128
    assert st.tensor([1], dtype="cdouble").dtype == st.complex128
    assert st.tensor([1], dtype=np.complex64).dtype == st.complex64
    assert st.cfloat == st.complex64 and st.cdouble == st.complex128
    z = st.zeros(2, 3, dtype=st.complex64)
    assert z.shape == (2, 3) and z.tolist() == [[0j] * 3] * 2
    assert st.ones(2, dtype=st.complex128).tolist() == [1 + 0j, 1 + 0j]
    assert st.full((2,), 1 + 1j, dtype=st.complex64).tolist() == [1 + 1j, 1 + 1j]
    assert not st.float32.is_complex and st.complex64.is_signed


@pytest.mark.parametrize("sdt,npdt", CDTYPES)
def test_numpy_exchange_is_zero_copy_on_every_layout(sdt, npdt):
    for name, a in layouts(npdt):
        if name == "broadcast":
            continue
        t = st.from_numpy(a)
        assert t.dtype == sdt, name
        assert t.shape == a.shape and t.stride() == tuple(s // a.itemsize for s in a.strides), name
        np.testing.assert_array_equal(t.numpy(), a)
        if a.size:
            assert t.data_ptr() == a.ctypes.data, name
        back = np.asarray(t)
        assert back.dtype == npdt
        np.testing.assert_array_equal(back, a)
    a = crandom(5, npdt)
    t = st.from_numpy(a)
    t[1] = 7 - 7j
    assert a[1] == 7 - 7j  # shared memory


@pytest.mark.parametrize("sdt,npdt", CDTYPES)
def test_dlpack_round_trip(sdt, npdt):
    a = crandom((3, 4), npdt)[:, ::2]
    t = st.from_dlpack(a)
    assert t.dtype == sdt and t.data_ptr() == a.ctypes.data
    b = np.from_dlpack(st.from_numpy(a))
    np.testing.assert_array_equal(b, a)
    assert b.ctypes.data == a.ctypes.data


@pytest.mark.parametrize("npdt", [np.complex64, np.complex128])
def test_npy_files_round_trip_and_big_endian_loads(tmp_path, npdt):
    a = crandom((3, 5), npdt)
    p = tmp_path / "c.npy"
    st.save(st.from_numpy(a), p)
    np.testing.assert_array_equal(np.load(p), a)
    np.testing.assert_array_equal(st.load(p).numpy(), a)
    np.testing.assert_array_equal(st.load(p, mmap=True).numpy(), a)
    big = tmp_path / "big.npy"
    np.save(big, a.astype(a.dtype.newbyteorder(">")))
    got = st.load(big)
    assert got.dtype == st.from_numpy(a).dtype
    np.testing.assert_array_equal(got.numpy(), a)


def test_safetensors_has_no_complex_dtype(tmp_path):
    with pytest.raises(st.DTypeError, match="safetensors format has no complex64"):
        st.safetensors.save_file({"z": st.tensor([1j])}, tmp_path / "z.safetensors")
    # The real pairs go through.
    st.safetensors.save_file({"z": st.view_as_real(st.tensor([1j]))}, tmp_path / "z.safetensors")
    back = st.safetensors.load_file(tmp_path / "z.safetensors")["z"]
    assert st.view_as_complex(back).tolist() == [1j]


def test_repr_matches_pytorch():
    assert repr(st.tensor([1 + 2j, 3 - 4j, -0.5j])) == "tensor([1.+2.0000j, 3.-4.0000j, -0.-0.5000j])"
    assert repr(st.tensor([[0 + 2j, 2 + 4j], [0j, -1 + 0j]])) == (
        "tensor([[ 0.+2.j,  2.+4.j],\n        [ 0.+0.j, -1.+0.j]])"
    )
    assert repr(st.tensor(4 - 2.5j)) == "tensor(4.-2.5000j)"
    assert repr(st.tensor([1 + 1j], dtype=st.complex128)) == "tensor([1.+1.j], dtype=strata.complex128)"


# ----- the part views


@pytest.mark.parametrize("sdt,npdt", CDTYPES)
def test_view_as_real_and_parts_are_views(sdt, npdt):
    for name, a in layouts(npdt):
        t = as_strata(a)
        r = st.view_as_real(t)
        want = a.view(a.real.dtype).reshape(*a.shape, 2) if a.flags.c_contiguous and a.ndim else None
        assert r.shape == (*a.shape, 2), name
        assert r.stride() == (*(2 * s for s in t.stride()), 1), name
        assert r.storage_offset() == 2 * t.storage_offset(), name
        np.testing.assert_array_equal(r.numpy(), np.stack([a.real, a.imag], axis=-1))
        if want is not None:
            np.testing.assert_array_equal(r.numpy(), want)
        np.testing.assert_array_equal(t.real.numpy(), a.real)
        np.testing.assert_array_equal(t.imag.numpy(), a.imag)
        assert t.real.dtype == st.from_numpy(a.real.copy()).dtype
        back = st.view_as_complex(r)
        assert back.shape == t.shape and back.stride() == t.stride(), name
        assert back.storage_offset() == t.storage_offset()
    a = crandom((4, 3), npdt)
    t = st.from_numpy(a)
    t.imag[1] = 5.0  # writes through the view
    assert a[1, 0].imag == 5.0
    t.real = st.zeros(3)
    assert (a.real == 0).all()
    t.imag = 2.0
    assert (a.imag == 2).all()


def test_view_as_complex_of_offset_and_strided_pairs():
    a = np.arange(24, dtype=np.float32).reshape(3, 4, 2)
    t = st.from_numpy(a)[1:, ::2]
    z = st.view_as_complex(t)
    np.testing.assert_array_equal(z.numpy(), a[1:, ::2, 0] + 1j * a[1:, ::2, 1])
    assert z.storage_offset() == 4 and z.stride() == (4, 2)


@pytest.mark.parametrize(
    "make,exc,text",
    [
        (lambda: st.view_as_real(st.ones(2)), st.DTypeError, "view_as_real is only supported for complex tensors"),
        (lambda: st.view_as_complex(st.ones(2, 2, dtype=st.int64)), st.DTypeError,
         "view_as_complex is only supported for half, float and double tensors, but got a tensor of scalar type: Long"),
        (lambda: st.view_as_complex(st.ones(3)), st.ShapeError, "Tensor must have a last dimension of size 2"),
        (lambda: st.view_as_complex(st.ones(2, 2, dtype=st.float16)), st.DTypeError, "strata has no complex32"),
        (lambda: st.view_as_complex(st.tensor(1.0)), st.ShapeError, "Input tensor must have one or more dimensions"),
        (lambda: st.view_as_complex(st.ones(2, 4)[:, ::2]), st.ShapeError, "Tensor must have a last dimension with stride 1"),
        (lambda: st.view_as_complex(st.ones(3, 2).as_strided((2, 2), (3, 1))), st.ShapeError,
         "Tensor must have a stride divisible by 2 for all but last dimension"),
        (lambda: st.view_as_complex(st.ones(5)[1:3]), st.ShapeError, "Tensor must have a storage_offset divisible by 2"),
        (lambda: st.ones(2).imag, st.DTypeError, "imag is not implemented for tensors with non-complex dtypes."),
        (lambda: st.complex(st.ones(2), st.ones(2, dtype=st.float64)), st.DTypeError,
         "Expected object of scalar type Float but got scalar type Double for second argument"),
        (lambda: st.complex(st.ones(2, dtype=st.int64), st.ones(2, dtype=st.int64)), st.DTypeError,
         "Expected both inputs to be Half, Float or Double tensors but got Long and Long"),
        (lambda: st.complex(st.ones(2), st.ones(3)), st.ShapeError, ""),
    ],
)
def test_part_view_errors(make, exc, text):
    with pytest.raises(exc) as info:
        make()
    assert text in str(info.value)


def test_real_conj_of_real_tensors_are_the_tensor_itself():
    t = st.ones(3)
    assert t.real.data_ptr() == t.data_ptr()
    assert t.conj() is t and t.resolve_conj() is t and not t.is_conj() and not t.is_complex()
    assert st.is_complex(st.tensor([1j])) and not st.is_complex(t)


@pytest.mark.parametrize("sdt,npdt", CDTYPES)
def test_conj_abs_angle_complex_polar(sdt, npdt):
    a = crandom((3, 4), npdt)
    a[0, 0] = 0
    t = st.from_numpy(a)
    c = t.conj()
    np.testing.assert_array_equal(c.numpy(), np.conj(a))
    assert c.data_ptr() != t.data_ptr()
    np.testing.assert_array_equal(t.conj_physical().numpy(), np.conj(a))
    np.testing.assert_allclose(abs(t).numpy(), np.abs(a), **tol(npdt))
    assert abs(t).dtype == st.from_numpy(a.real.copy()).dtype
    np.testing.assert_allclose(t.angle().numpy(), np.angle(a), **tol(npdt))
    re, im = a.real.copy(), a.imag.copy()
    z = st.complex(st.from_numpy(re), st.from_numpy(im))
    assert z.dtype == sdt
    np.testing.assert_array_equal(z.numpy(), a)
    p = st.polar(st.from_numpy(np.abs(a)), st.from_numpy(np.angle(a)))
    np.testing.assert_allclose(p.numpy(), a, **tol(npdt))
    # Broadcast parts.
    z = st.complex(st.ones(2, 1, dtype=st.float64), st.arange(3, dtype=st.float64))
    np.testing.assert_array_equal(z.numpy(), 1 + 1j * np.broadcast_to(np.arange(3.0), (2, 3)))
    np.testing.assert_allclose(st.tensor([1, -2, 0]).angle().numpy(), np.angle([1.0, -2.0, 0.0]))


# ----- arithmetic and promotion


@pytest.mark.parametrize("sdt,npdt", CDTYPES)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_binary_ops_match_numpy_on_every_layout(sdt, npdt, op):
    f = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}[op]
    for name, a in layouts(npdt):
        b = crandom(a.shape, npdt) if a.shape else npdt(0.25 + 3j)
        got = getattr(as_strata(a), op)(st.from_numpy(np.asarray(b)))
        assert got.dtype == sdt
        np.testing.assert_allclose(got.numpy(), f(a, b), **tol(npdt), err_msg=name)
        with_scalar = getattr(as_strata(a), op)(2 - 0.5j)
        assert with_scalar.dtype == sdt
        np.testing.assert_allclose(with_scalar.numpy(), f(a, npdt(2 - 0.5j)), **tol(npdt), err_msg=name)


def test_division_is_scaled_and_its_special_values():
    big = np.array([1e300 + 1e300j, 1e-300 + 1e-300j], dtype=np.complex128)
    d = np.array([2e300 + 1e300j, 3e-300 - 1e-300j], dtype=np.complex128)
    got = (st.from_numpy(big) / st.from_numpy(d)).numpy()
    np.testing.assert_allclose(got, big / d, rtol=1e-15)
    assert np.isfinite(got).all()
    with np.errstate(all="ignore"):
        want = np.array([1 + 1j, 0j, -0.5j]) / np.array([0j, 0j, 0j])
    got = (st.tensor([1 + 1j, 0j, -0.5j], dtype=st.complex128) / 0j).numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))


def test_promotion_follows_pytorch():
    f32, f64 = st.ones(2), st.ones(2, dtype=st.float64)
    c64, c128 = st.ones(2, dtype=st.complex64), st.ones(2, dtype=st.complex128)
    assert (c64 + f64).dtype == st.complex128
    assert (c64 + f32).dtype == st.complex64
    assert (c128 + f32).dtype == st.complex128
    assert (c64 + c128).dtype == st.complex128
    assert (c64 + st.ones(2, dtype=st.float16)).dtype == st.complex64
    assert (st.ones(2, dtype=st.int32) + 1j).dtype == st.complex64
    assert (st.tensor([True]) * 1j).dtype == st.complex64
    assert (f64 * 1j).dtype == st.complex128
    assert (f32 + 1j).dtype == st.complex64
    # A 0-d complex tensor over float dims: the complex dtype of their precision.
    assert (f64 + st.tensor(1j)).dtype == st.complex128
    assert (c64 + 2.5).dtype == st.complex64 and (c64 + st.tensor(2.5, dtype=st.float64)).dtype == st.complex64
    assert st.result_type(f32, 1j) == st.complex64
    assert st.add(1j, f32).dtype == st.complex64
    with pytest.raises(st.DTypeError, match="result type ComplexFloat can't be cast to the desired output type Float"):
        f32.add_(1j)
    c = st.zeros(2, dtype=st.complex64)
    c.add_(f32)  # real into complex is allowed
    assert c.tolist() == [1 + 0j, 1 + 0j]


@pytest.mark.parametrize("sdt,npdt", CDTYPES)
def test_pow_with_small_exponents_is_exact_and_general_pow_matches(sdt, npdt):
    a = np.array([1 + 2j, 3 - 4j, 0j, -1.5 + 0.5j], dtype=npdt)
    t = st.from_numpy(a)
    assert (t**2).tolist() == (a * a).tolist()
    np.testing.assert_allclose((t**3).numpy(), a * a * a, **tol(npdt))
    np.testing.assert_allclose((t[:2] ** -1).numpy(), 1 / a[:2], **tol(npdt))
    np.testing.assert_allclose((t ** 0.5).numpy(), np.sqrt(a), **tol(npdt))
    e = np.array([0.3 + 1j, 2.5, 1j, 0.7], dtype=npdt)
    np.testing.assert_allclose((t[:2] ** st.from_numpy(e[:2])).numpy(), a[:2] ** e[:2], **tol(npdt))
    assert (t**0).tolist() == [1 + 0j] * 4


@pytest.mark.parametrize("sdt,npdt", CDTYPES)
@pytest.mark.parametrize(
    "name,ref",
    [
        ("exp", np.exp), ("log", np.log), ("log2", np.log2), ("log10", np.log10), ("sqrt", np.sqrt),
        ("sin", np.sin), ("cos", np.cos), ("tan", np.tan), ("sinh", np.sinh), ("cosh", np.cosh),
        ("tanh", np.tanh), ("asin", np.arcsin), ("acos", np.arccos), ("atan", np.arctan),
        ("asinh", np.arcsinh), ("acosh", np.arccosh), ("atanh", np.arctanh),
        ("log1p", np.log1p), ("expm1", np.expm1), ("reciprocal", np.reciprocal),
        ("square", np.square), ("neg", np.negative), ("rsqrt", lambda z: 1 / np.sqrt(z)),
        ("sigmoid", lambda z: 1 / (1 + np.exp(-z))), ("exp2", np.exp2),
        ("sgn", lambda z: np.where(z == 0, 0, z / np.where(z == 0, 1, np.abs(z)))),
    ],
)
def test_unary_math_matches_numpy(sdt, npdt, name, ref):
    for lname, a in layouts(npdt):
        got = getattr(as_strata(a), name)()
        assert got.dtype == sdt
        np.testing.assert_allclose(got.numpy(), ref(a), rtol=5 * tol(npdt)["rtol"], atol=5 * tol(npdt)["atol"], err_msg=lname)


def test_accurate_near_zero_and_for_large_arguments():
    z = np.array([1e-10 + 1e-10j, -3e-9 + 2e-12j], dtype=np.complex128)
    t = st.from_numpy(z)
    # The Taylor series is exact to double precision at these sizes (the next term is
    # ~|z|⁴); NumPy's complex log1p and exp(z) - 1 cancel here.
    np.testing.assert_allclose(t.expm1().numpy(), z + z**2 / 2 + z**3 / 6, rtol=1e-14)
    np.testing.assert_allclose(t.log1p().numpy(), z - z**2 / 2 + z**3 / 3, rtol=1e-14)
    big = st.tensor([400 + 1j, -400 - 2j], dtype=st.complex128).tanh().numpy()
    np.testing.assert_allclose(big, np.tanh(np.array([400 + 1j, -400 - 2j])), rtol=1e-15, atol=1e-300)


def test_predicates_and_comparisons():
    nan, inf = float("nan"), float("inf")
    a = np.array([complex(nan, 0), complex(0, inf), 1 + 1j, complex(inf, nan)], dtype=np.complex128)
    t = st.from_numpy(a)
    np.testing.assert_array_equal(t.isnan().numpy(), np.isnan(a))
    np.testing.assert_array_equal(t.isinf().numpy(), np.isinf(a))
    np.testing.assert_array_equal(t.isfinite().numpy(), np.isfinite(a))
    b = st.tensor([1 + 1j, 2, 1 + 1j], dtype=st.complex128)
    assert (b == (1 + 1j)).tolist() == [True, False, True]
    assert (b != st.tensor([1 + 1j, 2j, 0])).tolist() == [False, True, True]
    assert st.tensor([0j, 1j]).logical_not().tolist() == [True, False]
    assert st.tensor([0j, 1j]).bool().tolist() == [False, True]
    assert st.tensor([0j, 1j]).any().item() and not st.tensor([0j, 1j]).all().item()


# ----- reductions, scans, matmul


@pytest.mark.parametrize("sdt,npdt", CDTYPES)
def test_reductions_match_numpy(sdt, npdt):
    for name, a in layouts(npdt):
        t = as_strata(a)
        np.testing.assert_allclose(t.sum().numpy(), a.sum(), **tol(npdt), err_msg=name)
        if a.size:
            np.testing.assert_allclose(t.mean().numpy(), a.mean(), **tol(npdt), err_msg=name)
            np.testing.assert_allclose(t.prod().numpy(), a.prod(), rtol=1e-5 if npdt == np.complex64 else 1e-12)
        if a.ndim == 2:
            for d in (0, 1, -1):
                np.testing.assert_allclose(t.sum(d).numpy(), a.sum(d), **tol(npdt), err_msg=name)
                np.testing.assert_allclose(t.sum(d, keepdim=True).numpy(), a.sum(d, keepdims=True), **tol(npdt))
                np.testing.assert_allclose(t.prod(d).numpy(), a.prod(d), rtol=1e-5, atol=1e-6)
                np.testing.assert_allclose(t.cumsum(d).numpy(), a.cumsum(d), **tol(npdt), err_msg=name)
                np.testing.assert_allclose(t.cumprod(d).numpy(), a.cumprod(d), rtol=1e-5, atol=1e-6)
                if a.shape[d] > 1:
                    v = t.var(d)
                    assert v.dtype == st.from_numpy(a.real.copy()).dtype
                    np.testing.assert_allclose(v.numpy(), a.var(d, ddof=1), rtol=1e-5, atol=1e-6)
                    np.testing.assert_allclose(t.std(d).numpy(), a.std(d, ddof=1), rtol=1e-5, atol=1e-6)
    z = st.tensor([[1 + 1j, 2], [3j, 4]])
    assert z.prod(0, keepdim=True).shape == (1, 2)
    assert z.sum().item() == 7 + 4j and z.prod().item() == (1 + 1j) * 2 * 3j * 4


@pytest.mark.parametrize("sdt,npdt", CDTYPES)
def test_matmul_matches_numpy(sdt, npdt):
    a, b = crandom((5, 7), npdt), crandom((7, 3), npdt)
    for x, y in [(a, b), (a[::-1], b[:, ::-1]), (np.asfortranarray(a), b)]:
        got = st.from_numpy(x) @ st.from_numpy(y)
        assert got.dtype == sdt
        np.testing.assert_allclose(got.numpy(), x @ y, rtol=1e-5 if npdt == np.complex64 else 1e-12, atol=1e-5)
    batch = crandom((4, 3, 5), npdt)
    np.testing.assert_allclose((st.from_numpy(batch) @ st.from_numpy(a)).numpy(), batch @ a, rtol=1e-4, atol=1e-5)
    big = crandom((300, 200), npdt)
    np.testing.assert_allclose((st.from_numpy(big) @ st.from_numpy(big).T).numpy(), big @ big.T, rtol=1e-4, atol=1e-3)
    v = crandom(7, npdt)
    np.testing.assert_allclose((st.from_numpy(a) @ st.from_numpy(v)).numpy(), a @ v, rtol=1e-4, atol=1e-5)


def test_copies_casts_and_movement():
    a = crandom((4, 5))
    t = st.from_numpy(a)
    np.testing.assert_array_equal(t.to(st.float64).numpy(), a.real)  # the imaginary part dropped
    np.testing.assert_array_equal(t.to(st.complex64).numpy(), a.astype(np.complex64))
    np.testing.assert_array_equal(st.ones(3, dtype=st.int32).to(st.complex128).numpy(), np.ones(3, np.complex128))
    np.testing.assert_array_equal(t.T.contiguous().numpy(), a.T)
    np.testing.assert_array_equal(t.flip(0, 1).numpy(), a[::-1, ::-1])
    np.testing.assert_array_equal(st.cat([t, t]).numpy(), np.concatenate([a, a]))
    np.testing.assert_array_equal(t[st.tensor([3, 0])].numpy(), a[[3, 0]])
    np.testing.assert_array_equal(t[t.real > 0].numpy(), a[a.real > 0])
    w = st.where(t.real > 0, t, 0)
    np.testing.assert_array_equal(w.numpy(), np.where(a.real > 0, a, 0))
    c = t.clone()
    c[1:3, ::2] = 1j
    b = a.copy()
    b[1:3, ::2] = 1j
    np.testing.assert_array_equal(c.numpy(), b)


# ----- what complex tensors refuse


@pytest.mark.parametrize(
    "make,text",
    [
        (lambda z: z < z, "\"lt_cpu\" not implemented for 'ComplexFloat'"),
        (lambda z: z.max(), "not implemented for 'ComplexFloat'"),
        (lambda z: z.sort(), "Sort does not support complex dtypes on CPU"),
        (lambda z: z.sign(), "Unlike NumPy, torch.sign is not intended to support complex numbers"),
        (lambda z: z.floor(), "floor is not supported for complex inputs"),
        (lambda z: z.abs_(), "In-place abs is not supported for complex tensors."),
        (lambda z: z.clamp(0, 1), "not implemented for 'ComplexFloat'"),
        (lambda z: z // z, "not implemented for 'ComplexFloat'"),
        (lambda z: z.bitwise_not(), "\"bitwise_not_cpu\" not implemented for 'ComplexFloat'"),
        (lambda z: z.amax(), "not implemented for 'ComplexFloat'"),
        (lambda z: z.argmax(), "not implemented for 'ComplexFloat'"),
    ],
)
def test_ops_without_complex_semantics_are_refused(make, text):
    z = st.tensor([1 + 1j, 2j])
    with pytest.raises(st.StrataError) as info:
        make(z)
    assert text in str(info.value)


def test_writing_an_imaginary_part_into_a_real_tensor_is_refused():
    for dt, name in [(st.float32, "float"), (st.int64, "int64_t"), (st.float64, "double")]:
        t = st.zeros(2, dtype=dt)
        with pytest.raises(st.StrataValueError, match=f"value cannot be converted to type {name} without overflow"):
            t.fill_(1 + 2j)
        with pytest.raises(st.StrataValueError, match="without overflow"):
            t[0] = 2j
        t.fill_(3 + 0j)  # no imaginary part: converts
        assert t.tolist() == [3, 3]
    with pytest.raises(st.StrataValueError, match="without overflow"):
        st.full((2,), 1j, dtype=st.float32)


def test_extended_precision_numpy_complex_is_refused():
    with pytest.raises(st.DTypeError, match="complex256"):
        st.tensor(np.array([1j], dtype=np.clongdouble))
    with pytest.raises(st.DTypeError, match="unsupported"):
        st.from_numpy(np.zeros(2, dtype=np.clongdouble))


@pytest.mark.parametrize("npdt", [np.complex64, np.complex128])
def test_abs_over_the_whole_range(npdt):
    part = np.float32 if npdt == np.complex64 else np.float64
    fi = np.finfo(part)
    vals = [0.0, 1.0, 3.0, fi.tiny, fi.tiny / 8, fi.max, fi.max / 2, fi.eps, 1e-20, 1e20, np.inf, np.nan]
    a = np.array([complex(x, y) for x in vals for y in vals] + [complex(-x, y) for x in vals for y in vals], dtype=npdt)
    with np.errstate(all="ignore"):
        want = np.abs(a)
    got = st.from_numpy(a).abs().numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got[~np.isnan(want)], want[~np.isnan(want)], rtol=2 * fi.eps, atol=0)
    # A long run (blocks of 64 with and without an extreme element, and a remainder),
    # contiguous and strided.
    rng = np.random.default_rng(3)
    b = (rng.standard_normal(1000) + 1j * rng.standard_normal(1000)).astype(npdt)
    b[rng.integers(0, 500, 5)] = fi.max / 3 + 1j * fi.max / 5
    b[rng.integers(500, 1000, 5)] = fi.tiny * (3 - 2j)
    for view in (b, b[::3]):
        got = st.from_numpy(view).abs().numpy()
        np.testing.assert_allclose(got, np.abs(view), rtol=2 * fi.eps, atol=0)


def test_add_sub_on_pairs_keep_layouts_and_values():
    a = crandom((4, 6))
    t = st.from_numpy(a)[:, ::2]
    u = st.from_numpy(crandom(3))
    np.testing.assert_array_equal((t + u).numpy(), a[:, ::2] + u.numpy())
    np.testing.assert_array_equal((t - 2.5).numpy(), a[:, ::2] - 2.5)
    np.testing.assert_array_equal((t + (1 - 1j)).numpy(), a[:, ::2] + (1 - 1j))
    np.testing.assert_array_equal((t.T - t.T).numpy(), np.zeros((3, 4), complex))
    np.testing.assert_array_equal((u - t).numpy(), u.numpy() - a[:, ::2])  # broadcast left


INVERSE_FUNCTIONS = [
    ("asin", np.arcsin), ("acos", np.arccos), ("atan", np.arctan), ("asinh", np.arcsinh),
    ("acosh", np.arccosh), ("atanh", np.arctanh), ("sqrt", np.sqrt), ("tan", np.tan),
]


@pytest.mark.parametrize("npdt", [np.complex64, np.complex128])
@pytest.mark.parametrize("name,ref", INVERSE_FUNCTIONS)
def test_inverse_functions_over_the_whole_range(npdt, name, ref):
    """Moduli from 1e-30 to 1e30 (NumPy computes in complex128 as the oracle): a few ulps,
    where the principal-value formulas of the library cancelled (acos(12046 − 1j) in
    complex64 was off in its imaginary part by 27%, asinh(−2731 + 1j) by a factor 2,
    atan(1e-9 + 1e-9j) by 70%) or overflowed (tan(1 + 45j) was NaN), and tan/tanh lost
    digits near their poles (cosh 2x + cos 2y cancelling; now Kahan's form)."""
    part = np.float32 if npdt == np.complex64 else np.float64
    rng = np.random.default_rng(5)
    scale = np.exp(rng.uniform(-np.log(1e30) if part == np.float64 else -30, 30, 3000))
    z = (rng.standard_normal(3000) + 1j * rng.standard_normal(3000)) * scale
    z = np.concatenate([z, [12046 - 1j, -2731 + 1j, 1 + 45j, 1e-9 + 1e-9j, 0.999, 1.0001 + 1e-12j, 3, -3, 2j, -2j]]).astype(npdt)
    got = getattr(st.from_numpy(z), name)().numpy()
    with np.errstate(all="ignore"):
        want = ref(z.astype(np.complex128))
    ok = np.isfinite(want) & (np.abs(want) < np.finfo(part).max)
    err = np.abs(got[ok] - want[ok]) / np.abs(want[ok])
    assert err.max() < 8 * np.finfo(part).eps, (z[ok][np.argmax(err)], got[ok][np.argmax(err)], want[ok][np.argmax(err)])


def _same(got, want):
    """Equal with NaNs in the same places and the same signs of zero."""
    for g, w in [(got.real, want.real), (got.imag, want.imag)]:
        if math.isnan(w):
            assert math.isnan(g), (got, want)
        else:
            assert g == pytest.approx(w, rel=1e-14, abs=0) and math.copysign(1, g) == math.copysign(1, w), (got, want)


@pytest.mark.parametrize(
    "name,z,want",
    [
        # The branch cuts: the sign of a zero part picks the side (C99 Annex G).
        ("asinh", complex(0.0, 2.0), complex(1.3169578969248166, math.pi / 2)),
        ("asinh", complex(-0.0, 2.0), complex(-1.3169578969248166, math.pi / 2)),
        ("asinh", complex(2.0, -0.0), complex(1.4436354751788103, -0.0)),
        ("asin", complex(2.0, 0.0), complex(math.pi / 2, 1.3169578969248166)),
        ("asin", complex(2.0, -0.0), complex(math.pi / 2, -1.3169578969248166)),
        ("acos", complex(2.0, 0.0), complex(0.0, -1.3169578969248166)),
        ("acos", complex(2.0, -0.0), complex(0.0, 1.3169578969248166)),
        ("acosh", complex(-2.0, 0.0), complex(1.3169578969248166, math.pi)),
        ("acosh", complex(-2.0, -0.0), complex(1.3169578969248166, -math.pi)),
        ("atanh", complex(3.0, 0.0), complex(0.34657359027997264, math.pi / 2)),
        ("atanh", complex(3.0, -0.0), complex(0.34657359027997264, -math.pi / 2)),
        ("atan", complex(0.0, 3.0), complex(math.pi / 2, 0.34657359027997264)),
        ("sqrt", complex(-4.0, 0.0), complex(0.0, 2.0)),
        ("sqrt", complex(-4.0, -0.0), complex(0.0, -2.0)),
        # Special values.
        ("asinh", complex(0.0, 0.0), complex(0.0, 0.0)),
        ("asinh", complex(1.0, math.inf), complex(math.inf, math.pi / 2)),
        ("asinh", complex(math.inf, math.inf), complex(math.inf, math.pi / 4)),
        ("asinh", complex(math.nan, 0.0), complex(math.nan, 0.0)),
        ("asinh", complex(1.0, math.nan), complex(math.nan, math.nan)),
        ("acos", complex(0.0, 0.0), complex(math.pi / 2, -0.0)),
        ("acos", complex(1.0, math.inf), complex(math.pi / 2, -math.inf)),
        ("acos", complex(-math.inf, 1.0), complex(math.pi, -math.inf)),
        ("acos", complex(math.inf, 1.0), complex(0.0, -math.inf)),
        ("acos", complex(-math.inf, math.inf), complex(3 * math.pi / 4, -math.inf)),
        ("acos", complex(0.0, math.nan), complex(math.pi / 2, math.nan)),
        ("acosh", complex(0.0, 0.0), complex(0.0, math.pi / 2)),
        ("acosh", complex(1.0, math.inf), complex(math.inf, math.pi / 2)),
        ("acosh", complex(-math.inf, 1.0), complex(math.inf, math.pi)),
        ("acosh", complex(math.inf, 1.0), complex(math.inf, 0.0)),
        ("atanh", complex(0.0, 0.0), complex(0.0, 0.0)),
        ("atanh", complex(1.0, 0.0), complex(math.inf, 0.0)),
        ("atanh", complex(0.0, math.nan), complex(0.0, math.nan)),
        ("atanh", complex(1.0, math.inf), complex(0.0, math.pi / 2)),
        ("atanh", complex(math.inf, 1.0), complex(0.0, math.pi / 2)),
        ("atanh", complex(math.inf, math.nan), complex(0.0, math.nan)),
        ("atanh", complex(math.nan, math.inf), complex(0.0, math.pi / 2)),
        ("sqrt", complex(0.0, 0.0), complex(0.0, 0.0)),
        ("sqrt", complex(-0.0, -0.0), complex(0.0, -0.0)),
        ("sqrt", complex(1.0, math.inf), complex(math.inf, math.inf)),
        ("sqrt", complex(-math.inf, 1.0), complex(0.0, math.inf)),
        ("sqrt", complex(math.inf, 1.0), complex(math.inf, 0.0)),
        ("sqrt", complex(math.inf, math.nan), complex(math.inf, math.nan)),
        ("tan", complex(1.0, 45.0), complex(0.0, 1.0)),
        ("sinh", complex(0.0, math.inf), complex(0.0, math.nan)),
        ("sinh", complex(math.inf, 0.0), complex(math.inf, 0.0)),
        ("sinh", complex(math.inf, math.nan), complex(math.inf, math.nan)),
        ("sinh", complex(math.nan, 0.0), complex(math.nan, 0.0)),
        ("sinh", complex(math.inf, 1.0), complex(math.inf, math.inf)),
        ("cosh", complex(0.0, math.inf), complex(math.nan, 0.0)),
        ("cosh", complex(math.inf, 0.0), complex(math.inf, 0.0)),
        ("cosh", complex(-math.inf, 0.0), complex(math.inf, -0.0)),
        ("cosh", complex(math.inf, math.inf), complex(math.inf, math.nan)),
        ("cosh", complex(math.nan, 0.0), complex(math.nan, 0.0)),
        ("cosh", complex(math.inf, 2.0), complex(-math.inf, math.inf)),
        ("tanh", complex(0.0, math.inf), complex(0.0, math.nan)),
        ("tanh", complex(1.0, math.nan), complex(math.nan, math.nan)),
        ("tanh", complex(math.nan, 0.0), complex(math.nan, 0.0)),
        ("tanh", complex(math.inf, 1.0), complex(1.0, 0.0)),
        ("tanh", complex(-math.inf, 2.0), complex(-1.0, 0.0)),
        ("tanh", complex(math.inf, -2.0), complex(1.0, -0.0)),
        ("tanh", complex(math.inf, math.nan), complex(1.0, 0.0)),
    ],
)
def test_branch_cuts_and_special_values_follow_c99(name, z, want):
    got = getattr(st.tensor([z], dtype=st.complex128), name)().tolist()[0]
    if name == "tan":
        assert got == pytest.approx(want, abs=1e-30)
        return
    _same(got, want)


@pytest.mark.parametrize("dt, part", [(st.complex64, np.float32), (st.complex128, np.float64)])
def test_rand_and_randn_of_complex_dtypes(dt, part):
    # PyTorch's: independent parts, each of variance 1/2 for randn, uniform in [0, 1) for
    # rand.
    st.manual_seed(7)
    z = st.randn(200_000, dtype=dt).numpy()
    assert z.real.dtype == part
    for p in (z.real, z.imag):
        assert abs(p.mean()) < 0.01 and abs(p.var() - 0.5) < 0.01
    assert abs(np.corrcoef(z.real, z.imag)[0, 1]) < 0.01
    u = st.rand(100_000, dtype=dt).numpy()
    for p in (u.real, u.imag):
        assert p.min() >= 0 and p.max() < 1 and abs(p.mean() - 0.5) < 0.01
    assert st.randn_like(st.zeros(3, 2, dtype=dt)).shape == (3, 2)


@pytest.mark.parametrize("npdt", [np.complex64, np.complex128])
def test_logsumexp_of_complex_is_complex(npdt):
    # log Σ exp(z), shifted by the largest real part (so 700 + i does not overflow); was
    # cast to float32, dropping the imaginary parts.
    z = np.array([[1 + 2j, 0.5 - 1j, -1 + 0.3j], [700 + 1j, 699 - 2j, 0j]], dtype=npdt)
    t = st.from_numpy(z)
    got = t.logsumexp(1).numpy()
    assert got.dtype == npdt
    want = [np.log(np.exp(z[0].astype(complex)).sum()),
            700 + np.log(np.exp(z[1].astype(complex) - 700).sum())]
    np.testing.assert_allclose(got, want, rtol=1e-5 if npdt == np.complex64 else 1e-12)
    assert t.logsumexp(1, keepdim=True).shape == (2, 1)
    assert t.T[::-1].logsumexp(0).shape == (2,)
    e = st.zeros(0, 3, dtype=st.from_numpy(z).dtype).logsumexp(0).numpy()
    assert np.all(np.isneginf(e.real)) and np.all(e.imag == 0)
