"""strata.fft against numpy.fft on the same data: every transform, sizes (trimmed, padded,
prime, odd), dims, norms, layouts and dtypes; the bad arguments."""

import numpy as np
import pytest

import strata as st

RNG = np.random.default_rng(11)


def real(shape, dt=np.float64):
    return RNG.standard_normal(shape).astype(dt)


def cplx(shape, dt=np.complex128):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dt)


def tol(dt):
    return dict(rtol=2e-4, atol=2e-4) if dt in (np.float32, np.complex64) else dict(rtol=1e-10, atol=1e-10)


def layouts(make, dt):
    base = make((6, 10), dt)
    return [
        ("contiguous", base),
        ("transposed", base.T),
        ("stepped", base[::2, 1::2]),
        ("negative", base[::-1, ::-3]),
        ("one_dim", make(17, dt)),
        ("three_dim", make((2, 3, 8), dt)),
    ]


NORMS = [None, "backward", "ortho", "forward"]


@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
@pytest.mark.parametrize("name", ["fft", "ifft"])
@pytest.mark.parametrize("norm", NORMS)
def test_complex_transforms_match_numpy(dt, name, norm):
    for lname, a in layouts(cplx, dt):
        for n in (None, 1, 5, a.shape[-1], a.shape[-1] + 3, 64):
            got = getattr(st.fft, name)(st.from_numpy(a), n=n, norm=norm)
            want = getattr(np.fft, name)(a, n=n, norm=norm)
            assert got.dtype == st.from_numpy(np.zeros(1, dt)).dtype
            np.testing.assert_allclose(got.numpy(), want, **tol(dt), err_msg=f"{lname} n={n}")
        if a.ndim > 1:
            got = getattr(st.fft, name)(st.from_numpy(a), dim=0, norm=norm)
            np.testing.assert_allclose(got.numpy(), getattr(np.fft, name)(a, axis=0, norm=norm), **tol(dt))


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("norm", NORMS)
def test_real_transforms_match_numpy(dt, norm):
    cdt = np.complex64 if dt == np.float32 else np.complex128
    for lname, a in layouts(real, dt):
        for n in (None, 1, 2, 7, 16, a.shape[-1] + 5):
            r = st.fft.rfft(st.from_numpy(a), n=n, norm=norm)
            assert r.dtype == st.from_numpy(np.zeros(1, cdt)).dtype
            np.testing.assert_allclose(r.numpy(), np.fft.rfft(a, n=n, norm=norm), **tol(dt), err_msg=lname)
            h = st.fft.ihfft(st.from_numpy(a), n=n, norm=norm)
            np.testing.assert_allclose(h.numpy(), np.fft.ihfft(a, n=n, norm=norm), **tol(dt), err_msg=lname)
        spec = np.fft.rfft(a).astype(cdt)
        for n in (None, 2, 9, 2 * a.shape[-1]):
            back = st.fft.irfft(st.from_numpy(spec), n=n, norm=norm)
            assert back.dtype == st.from_numpy(np.zeros(1, dt)).dtype
            np.testing.assert_allclose(back.numpy(), np.fft.irfft(spec, n=n, norm=norm), **tol(dt), err_msg=lname)
            hf = st.fft.hfft(st.from_numpy(spec), n=n, norm=norm)
            np.testing.assert_allclose(hf.numpy(), np.fft.hfft(spec, n=n, norm=norm), **tol(dt), err_msg=lname)
        if a.ndim > 1:
            np.testing.assert_allclose(st.fft.rfft(st.from_numpy(a), dim=0).numpy(), np.fft.rfft(a, axis=0), **tol(dt))


def test_round_trips_and_odd_lengths():
    for n in (1, 2, 3, 7, 97, 128, 1000, 1009):
        x = real(n)
        t = st.from_numpy(x)
        np.testing.assert_allclose(st.fft.irfft(st.fft.rfft(t), n=n).numpy(), x, atol=1e-12)
        np.testing.assert_allclose(st.fft.ifft(st.fft.fft(t)).numpy(), x.astype(complex), atol=1e-12)
        np.testing.assert_allclose(st.fft.fft(t).numpy(), np.fft.fft(x), rtol=1e-10, atol=1e-9)


def test_irfft_ignores_the_imaginary_parts_a_real_signal_cannot_have():
    spec = np.array([1 + 5j, 2 - 1j, 3 + 7j])
    np.testing.assert_allclose(st.fft.irfft(st.from_numpy(spec)).numpy(), np.fft.irfft(spec), atol=1e-14)
    np.testing.assert_allclose(st.fft.irfft(st.from_numpy(spec), n=5).numpy(), np.fft.irfft(spec, n=5), atol=1e-14)


@pytest.mark.parametrize("norm", NORMS)
def test_n_dimensional_transforms_match_numpy(norm):
    a = cplx((4, 6, 5))
    r = real((4, 6, 5))
    t, tr = st.from_numpy(a), st.from_numpy(r)
    cases = [
        ("fftn", t, a, {}),
        ("fftn", t, a, {"s": (3, 8)}),
        ("fftn", t, a, {"dim": (0, 2)}),
        ("fftn", t, a, {"s": (5, -1), "dim": (2, 0)}),
        ("ifftn", t, a, {"dim": (1,)}),
        ("ifftn", t, a, {}),
        ("rfftn", tr, r, {}),
        ("rfftn", tr, r, {"dim": (0, 1)}),
        ("rfftn", tr, r, {"s": (4, 9)}),
    ]
    for name, x, y, kw in cases:
        np_kw = {"axes" if k == "dim" else k: v for k, v in kw.items()}
        if "s" in np_kw and "axes" not in np_kw:
            # PyTorch's default (the last len(s) dims), which NumPy 2 wants spelled out.
            np_kw["axes"] = tuple(range(y.ndim - len(np_kw["s"]), y.ndim))
        if "s" in np_kw and -1 in np_kw["s"]:
            axes = np_kw["axes"]
            np_kw["s"] = tuple(y.shape[ax] if v == -1 else v for v, ax in zip(np_kw["s"], axes))
        got = getattr(st.fft, name)(x, norm=norm, **kw)
        want = getattr(np.fft, name)(y, norm=norm, **np_kw)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-10, atol=1e-10, err_msg=f"{name} {kw}")
    spec = np.fft.rfftn(r)
    np.testing.assert_allclose(st.fft.irfftn(st.from_numpy(spec), norm=norm).numpy(), np.fft.irfftn(spec, norm=norm), atol=1e-12)
    np.testing.assert_allclose(
        st.fft.irfftn(st.from_numpy(spec), s=(4, 6, 5), norm=norm).numpy(),
        np.fft.irfftn(spec, s=(4, 6, 5), axes=(0, 1, 2), norm=norm),
        atol=1e-12,
    )
    np.testing.assert_allclose(st.fft.fft2(t).numpy(), np.fft.fft2(a), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(st.fft.ifft2(t).numpy(), np.fft.ifft2(a), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(st.fft.rfft2(tr).numpy(), np.fft.rfft2(r), rtol=1e-10, atol=1e-10)
    spec2 = np.fft.rfft2(r)
    np.testing.assert_allclose(st.fft.irfft2(st.from_numpy(spec2)).numpy(), np.fft.irfft2(spec2), atol=1e-12)


def test_dtypes_of_inputs():
    assert st.fft.fft(st.arange(8)).dtype == st.complex64
    assert st.fft.rfft(st.tensor([True, False, True])).dtype == st.complex64
    assert st.fft.fft(st.ones(4, dtype=st.float64)).dtype == st.complex128
    assert st.fft.irfft(st.ones(4, dtype=st.float64)).dtype == st.float64
    np.testing.assert_allclose(st.fft.fft(st.arange(8)).numpy(), np.fft.fft(np.arange(8)), rtol=1e-5, atol=1e-5)
    x = st.ones(8)
    y = st.fft.fft(x)
    assert x.tolist() == [1.0] * 8  # the input is never written
    big = real((64, 4096))
    np.testing.assert_allclose(st.fft.rfft(st.from_numpy(big)).numpy(), np.fft.rfft(big), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(st.fft.fft(st.from_numpy(big.astype(complex)), dim=0).numpy(), np.fft.fft(big, axis=0), rtol=1e-9, atol=1e-9)
    assert y.shape == (8,)


def test_frequencies_and_shifts():
    for n in (1, 2, 7, 8):
        for d in (1.0, 0.1):
            np.testing.assert_allclose(st.fft.fftfreq(n, d).numpy(), np.fft.fftfreq(n, d), rtol=1e-6)
            np.testing.assert_allclose(st.fft.rfftfreq(n, d).numpy(), np.fft.rfftfreq(n, d), rtol=1e-6)
    assert st.fft.fftfreq(4).dtype == st.float32
    assert st.fft.fftfreq(4, dtype=st.float64).dtype == st.float64
    a = np.arange(35.0).reshape(5, 7)
    t = st.from_numpy(a)
    np.testing.assert_array_equal(st.fft.fftshift(t).numpy(), np.fft.fftshift(a))
    np.testing.assert_array_equal(st.fft.ifftshift(t).numpy(), np.fft.ifftshift(a))
    np.testing.assert_array_equal(st.fft.fftshift(t, dim=1).numpy(), np.fft.fftshift(a, axes=1))
    np.testing.assert_array_equal(st.fft.ifftshift(t, dim=(0,)).numpy(), np.fft.ifftshift(a, axes=(0,)))
    np.testing.assert_array_equal(st.fft.ifftshift(st.fft.fftshift(t)).numpy(), a)


@pytest.mark.parametrize(
    "call,exc,text",
    [
        (lambda: st.fft.fft(st.ones(4), n=0), st.StrataValueError, "Invalid number of data points (0) specified"),
        (lambda: st.fft.irfft(st.ones(1, dtype=st.complex64)), st.StrataValueError, "Invalid number of data points (0) specified"),
        (lambda: st.fft.fft(st.ones(4), norm="bogus"), st.StrataValueError, "Invalid normalization mode: bogus"),
        (lambda: st.fft.fft(st.ones(4), dim=1), st.TensorIndexError, "Dimension out of range"),
        (lambda: st.fft.fft(st.tensor(1.0)), st.TensorIndexError, "Dimension specified as -1 but tensor has no dimensions"),
        (lambda: st.fft.fftn(st.tensor(1.0), dim=(0,)), st.TensorIndexError, "no dimensions"),
        (lambda: st.fft.rfft(st.ones(4, dtype=st.complex64)), st.DTypeError, "rfft expects a real input tensor, but got ComplexFloat"),
        (lambda: st.fft.fft(st.ones(4, dtype=st.float16)), st.DTypeError, "Unsupported dtype Half"),
        (lambda: st.fft.fftn(st.ones(2, 2), s=(2, 2, 2)), st.StrataValueError, "only has 2 dimensions"),
        (lambda: st.fft.fftn(st.ones(2, 2), s=(2,), dim=(0, 1)), st.StrataValueError, "must have the same length"),
        (lambda: st.fft.fftn(st.ones(2, 2), dim=(0, -2)), st.StrataValueError, "FFT dims must be unique"),
        (lambda: st.fft.fftfreq(-1), st.StrataValueError, "Invalid number of data points (-1) specified"),
        (lambda: st.fft.fftfreq(3, dtype=st.int64), st.DTypeError, "floating point dtype"),
        (lambda: st.fft.fftfreq(2**62), st.ResourceError, "out of memory"),
        (lambda: st.fft.rfftfreq(2**62), st.ResourceError, "out of memory"),
        (lambda: st.fft.fft(st.ones(4), n=2**62), st.StrataOverflowError, "overflows"),
        (lambda: st.fft.rfft(st.ones(4), n=2**40), st.ResourceError, "out of memory"),
    ],
)
def test_bad_arguments(call, exc, text):
    with pytest.raises(exc) as info:
        call()
    assert text in str(info.value)
