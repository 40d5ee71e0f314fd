"""Complex dtypes and FFTs against NumPy (and PyTorch when installed): complex64 and
complex128 arithmetic, a transcendental function, |z|, a sum and a 512² product on 1M
(or 512²) elements; 1-D and 2-D FFTs of power-of-two and awkward lengths, real and
complex."""

N = 1 << 20


def cases(np, st, torch):
    rng = np.random.default_rng(0)
    out = []

    def add(name, s_fn, n_fn, t_fn=None):
        out.append((name, s_fn, n_fn, t_fn if torch is not None else None))

    def per_dtype(dt, name):
        a = (rng.standard_normal(N) + 1j * rng.standard_normal(N)).astype(dt)
        b = (rng.standard_normal(N) + 1j * rng.standard_normal(N)).astype(dt)
        m = (rng.standard_normal((512, 512)) + 1j * rng.standard_normal((512, 512))).astype(dt)
        sa, sb, sm = st.from_numpy(a), st.from_numpy(b), st.from_numpy(m)
        ta, tb, tm = (torch.from_numpy(a), torch.from_numpy(b), torch.from_numpy(m)) if torch else (None,) * 3
        add(f"{name} a + b 1M", lambda: sa + sb, lambda: a + b, torch and (lambda: ta + tb))
        add(f"{name} a * b 1M", lambda: sa * sb, lambda: a * b, torch and (lambda: ta * tb))
        add(f"{name} a / b 1M", lambda: sa / sb, lambda: a / b, torch and (lambda: ta / tb))
        add(f"{name} exp 1M", lambda: sa.exp(), lambda: np.exp(a), torch and (lambda: ta.exp()))
        add(f"{name} abs 1M", lambda: sa.abs(), lambda: np.abs(a), torch and (lambda: ta.abs()))
        add(f"{name} sum 1M", lambda: sa.sum(), lambda: a.sum(), torch and (lambda: ta.sum()))
        add(f"{name} matmul 512²", lambda: sm @ sm, lambda: m @ m, torch and (lambda: tm @ tm))

    # One call per dtype, so that each case's lambdas see that call's arrays.
    per_dtype(np.complex64, "c64")
    per_dtype(np.complex128, "c128")

    x = rng.standard_normal(N)
    z = (rng.standard_normal(N) + 1j * rng.standard_normal(N))
    x1000 = rng.standard_normal((1000, 1000))
    img = rng.standard_normal((1024, 1024))
    sx, sz, sx1000, simg = st.from_numpy(x), st.from_numpy(z), st.from_numpy(x1000), st.from_numpy(img)
    tx, tz, tx1000, timg = (torch.from_numpy(v) for v in (x, z, x1000, img)) if torch else (None,) * 4
    add("fft c128 1M", lambda: st.fft.fft(sz), lambda: np.fft.fft(z), torch and (lambda: torch.fft.fft(tz)))
    add("rfft f64 1M", lambda: st.fft.rfft(sx), lambda: np.fft.rfft(x), torch and (lambda: torch.fft.rfft(tx)))
    add("irfft f64 1M", lambda: st.fft.irfft(st.fft.rfft(sx)), lambda: np.fft.irfft(np.fft.rfft(x)),
        torch and (lambda: torch.fft.irfft(torch.fft.rfft(tx))))
    add("rfft f64 1000 rows of 1000", lambda: st.fft.rfft(sx1000), lambda: np.fft.rfft(x1000),
        torch and (lambda: torch.fft.rfft(tx1000)))
    add("fft f64 along dim 0 of 1000²", lambda: st.fft.fft(sx1000, dim=0), lambda: np.fft.fft(x1000, axis=0),
        torch and (lambda: torch.fft.fft(tx1000, dim=0)))
    add("rfft2 f64 1024²", lambda: st.fft.rfft2(simg), lambda: np.fft.rfft2(img),
        torch and (lambda: torch.fft.rfft2(timg)))
    p = rng.standard_normal(1_000_003)
    sp, tp = st.from_numpy(p), (torch.from_numpy(p) if torch else None)
    add("rfft f64 1000003 (prime)", lambda: st.fft.rfft(sp), lambda: np.fft.rfft(p),
        torch and (lambda: torch.fft.rfft(tp)))
    return out
