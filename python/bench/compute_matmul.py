"""Matrix products beyond the square case: batches of small matrices, ``a @ a.T`` and
``a.T @ a`` (symmetric products), matrix-vector in both layouts of the matrix.

The matrix-vector rows read a 64 MiB float32 matrix once; the ``memcpy`` row copies the same
bytes (read + write) in the same run, the bandwidth reference: GB/s = bytes / time.
"""


def cases(np, st, torch):
    rng = np.random.default_rng(0)
    out = []

    def trio(name, fs, fn, ft):
        out.append((name, fs, fn, ft))

    for batch, n, dtype in ((1000, 16, "float32"), (10000, 4, "float32"),
                            (1000, 16, "float64"), (10000, 4, "float64"),
                            (1000, 8, "float32")):
        a = rng.standard_normal((batch, n, n)).astype(dtype)
        b = rng.standard_normal((batch, n, n)).astype(dtype)
        sa, sb = st.from_numpy(a), st.from_numpy(b)
        ta, tb = (torch.from_numpy(a), torch.from_numpy(b)) if torch else (None, None)
        trio(f"bmm {batch}x{n}x{n} {dtype}", lambda sa=sa, sb=sb: sa @ sb,
             lambda a=a, b=b: a @ b, (lambda ta=ta, tb=tb: ta @ tb) if torch else None)
    # Small batch with a transposed right operand.
    a = rng.standard_normal((1000, 16, 16)).astype("float32")
    sa = st.from_numpy(a)
    ta = torch.from_numpy(a) if torch else None
    trio("bmm 1000x16x16 float32 a @ a.mT", lambda sa=sa: sa @ sa.transpose(1, 2),
         lambda a=a: a @ a.transpose(0, 2, 1),
         (lambda ta=ta: ta @ ta.transpose(1, 2)) if torch else None)

    for n, k, dtype in ((2048, 2048, "float32"), (1024, 1024, "float64")):
        a = rng.standard_normal((n, k)).astype(dtype)
        sa = st.from_numpy(a)
        ta = torch.from_numpy(a) if torch else None
        trio(f"A @ A.T {n}x{k} {dtype}", lambda sa=sa: sa @ sa.T, lambda a=a: a @ a.T,
             (lambda ta=ta: ta @ ta.T) if torch else None)
        trio(f"A.T @ A {n}x{k} {dtype}", lambda sa=sa: sa.T @ sa, lambda a=a: a.T @ a,
             (lambda ta=ta: ta.T @ ta) if torch else None)

    n = 4096  # 64 MiB of float32
    for dtype in ("float32", "float64"):
        m = n if dtype == "float32" else n // 2  # f64: 4096 x 2048, also 64 MiB
        A = rng.standard_normal((n, m)).astype(dtype)
        v = rng.standard_normal(m).astype(dtype)
        w = rng.standard_normal(n).astype(dtype)
        At = np.ascontiguousarray(A.T)  # (m, n); At.T is A with column-major layout
        sA, sv, sw, sAt = (st.from_numpy(x) for x in (A, v, w, At))
        tA, tv, tw, tAt = ((torch.from_numpy(x) for x in (A, v, w, At)) if torch
                           else (None,) * 4)
        tag = f"{n}x{m} {dtype}"
        trio(f"A @ v {tag} (rows)", lambda sA=sA, sv=sv: sA @ sv, lambda A=A, v=v: A @ v,
             (lambda tA=tA, tv=tv: tA @ tv) if torch else None)
        trio(f"w @ A {tag} (rows)", lambda sA=sA, sw=sw: sw @ sA, lambda A=A, w=w: w @ A,
             (lambda tA=tA, tw=tw: tw @ tA) if torch else None)
        # The same matrix stored column-major: Ac = At.T (n x m, unit row stride).
        trio(f"Ac @ v {tag} (cols)", lambda sAt=sAt, sv=sv: sAt.T @ sv,
             lambda At=At, v=v: At.T @ v, (lambda tAt=tAt, tv=tv: tAt.T @ tv) if torch else None)
        trio(f"w @ Ac {tag} (cols)", lambda sAt=sAt, sw=sw: sw @ sAt.T,
             lambda At=At, w=w: w @ At.T, (lambda tAt=tAt, tw=tw: tw @ tAt.T) if torch else None)
        # A 1-D dot of 16 MiB + 16 MiB (two read streams).
        d1 = A.reshape(-1)[: 1 << 22]
        d2 = A.reshape(-1)[1 << 22: 2 << 22]
        sd1, sd2 = st.from_numpy(d1), st.from_numpy(d2)
        td1, td2 = (torch.from_numpy(d1), torch.from_numpy(d2)) if torch else (None, None)
        trio(f"dot 4M {dtype}", lambda sd1=sd1, sd2=sd2: sd1.dot(sd2),
             lambda d1=d1, d2=d2: np.dot(d1, d2),
             (lambda td1=td1, td2=td2: td1.dot(td2)) if torch else None)
        dst = np.empty_like(A)
        sdst = st.from_numpy(dst)
        trio(f"memcpy 64 MiB {dtype} (bandwidth ref)", lambda sdst=sdst, sA=sA: sdst.copy_(sA),
             lambda dst=dst, A=A: np.copyto(dst, A),
             (lambda tA=tA: tA.clone()) if torch else None)
    return out
