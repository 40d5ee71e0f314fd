"""Linear algebra (``strata.linalg``, through faer) against ``numpy.linalg`` (LAPACK from
the BLAS NumPy ships, OpenBLAS in the wheels) and ``torch.linalg``: inv, solve (64
right-hand sides), cholesky, qr (reduced), eigh (values and vectors), svd (thin, values
and vectors) and det of one float64 matrix of side 512 and 2048, float32, complex64 and
complex128 at 512, and two batches of small matrices. The same well-conditioned (symmetric
or Hermitian positive definite for cholesky and eigh) data goes to every library.

``STRATA_LINALG_SIZES`` (default ``512,2048``) picks the float64 sides and
``STRATA_LINALG_COMPLEX_SIZES`` (default ``512``) the complex ones; the 2048 cases take
seconds each per library.
"""

import os


def cases(np, st, torch):
    rng = np.random.default_rng(0)
    out = []
    sizes = [int(s) for s in os.environ.get("STRATA_LINALG_SIZES", "512,2048").split(",") if s]

    def add(name, s_fn, n_fn, t_fn=None):
        out.append((name, s_fn, n_fn, t_fn if torch is not None else None))

    def normal(shape, dtype):
        x = rng.standard_normal(shape)
        if dtype.startswith("complex"):
            x = x + 1j * rng.standard_normal(shape)
        return x.astype(dtype)

    def square(n, dtype):
        # Scaled to unit diagonal so that det stays finite at 2048.
        a = ((normal((n, n), dtype) + n**0.5 * np.eye(n)) / n**0.5).astype(dtype)
        x = normal((n, n), dtype) / n**0.5
        spd = (x @ np.conj(x.T) + np.eye(n, dtype=dtype)).astype(dtype)
        return a, spd

    def matrices(n, dtype):
        # One function scope per plan, so that each case's closures keep its own data.
        a, spd = square(n, dtype)
        b = normal((n, 64), dtype)
        sa, sspd, sb = st.from_numpy(a), st.from_numpy(spd), st.from_numpy(b)
        T = torch.linalg if torch is not None else None
        ta = tspd = tb = None
        if torch is not None:
            ta, tspd, tb = torch.from_numpy(a), torch.from_numpy(spd), torch.from_numpy(b)
        short = {"float64": "f64", "float32": "f32", "complex64": "c64", "complex128": "c128"}
        tag = f"{n}x{n} {short[dtype]}"
        L = st.linalg
        add(f"inv {tag}", lambda: L.inv(sa), lambda: np.linalg.inv(a), T and (lambda: T.inv(ta)))
        add(f"solve {tag}, 64 rhs", lambda: L.solve(sa, sb), lambda: np.linalg.solve(a, b),
            T and (lambda: T.solve(ta, tb)))
        add(f"cholesky {tag}", lambda: L.cholesky(sspd), lambda: np.linalg.cholesky(spd),
            T and (lambda: T.cholesky(tspd)))
        add(f"qr {tag}", lambda: L.qr(sa), lambda: np.linalg.qr(a), T and (lambda: T.qr(ta)))
        add(f"eigh {tag}", lambda: L.eigh(sspd), lambda: np.linalg.eigh(spd),
            T and (lambda: T.eigh(tspd)))
        add(f"svd {tag} (thin)", lambda: L.svd(sa, full_matrices=False),
            lambda: np.linalg.svd(a, full_matrices=False),
            T and (lambda: T.svd(ta, full_matrices=False)))
        add(f"det {tag}", lambda: L.det(sa), lambda: np.linalg.det(a), T and (lambda: T.det(ta)))

    def batch(count, n):
        a = rng.standard_normal((count, n, n)) + n * np.eye(n)
        sa = st.from_numpy(a)
        T = torch.linalg if torch is not None else None
        ta = torch.from_numpy(a) if torch is not None else None
        add(f"inv ({count}, {n}, {n}) f64", lambda: st.linalg.inv(sa), lambda: np.linalg.inv(a),
            T and (lambda: T.inv(ta)))
        add(f"det ({count}, {n}, {n}) f64", lambda: st.linalg.det(sa), lambda: np.linalg.det(a),
            T and (lambda: T.det(ta)))

    csizes = [int(s) for s in os.environ.get("STRATA_LINALG_COMPLEX_SIZES", "512").split(",") if s]
    for n, dtype in [(n, "float64") for n in sizes] + [(512, "float32")]:
        matrices(n, dtype)
    for n in csizes:
        matrices(n, "complex128")
        matrices(n, "complex64")
    for count, n in [(10000, 4), (1000, 16)]:
        batch(count, n)
    return out
