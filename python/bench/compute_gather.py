"""Arg-reductions, integer-array indexing and boolean masks (float32), against NumPy's
equivalents: np.argmax/argmin, a[idx], np.take, np.take_along_axis, a[mask], np.nonzero,
a[idx] = v. Strided cases read every second element of an array twice the size."""

N = 1 << 20
K = 100_000


def cases(np, st, torch):
    rng = np.random.default_rng(0)
    out = []

    def add(name, s_fn, n_fn, t_fn=None):
        out.append((name, s_fn, n_fn, t_fn if torch is not None else None))

    a = rng.standard_normal(N).astype("float32")
    s = st.from_numpy(a)
    t = torch.from_numpy(a) if torch else None
    a2 = rng.standard_normal(2 * N).astype("float32")
    s2 = st.from_numpy(a2)[::2]
    t2 = torch.from_numpy(a2)[::2] if torch else None
    m = rng.standard_normal((1000, 1000)).astype("float32")
    sm = st.from_numpy(m)
    tm = torch.from_numpy(m) if torch else None

    # Arg-reductions.
    add("argmax 1M f32", s.argmax, lambda: np.argmax(a), t is not None and t.argmax)
    add("argmin 1M f32", s.argmin, lambda: np.argmin(a), t is not None and t.argmin)
    rise = np.arange(N, dtype="float32")  # a new maximum in every block of the scan
    srise = st.from_numpy(rise)
    trise = torch.from_numpy(rise) if torch else None
    add("argmax 1M f32, ascending", srise.argmax, lambda: np.argmax(rise),
        trise is not None and trise.argmax)
    add("argmax 1M f32 [::2]", s2.argmax, lambda: np.argmax(a2[::2]), t2 is not None and t2.argmax)
    add("argmax(dim=1) (1000,1000)", lambda: sm.argmax(dim=1), lambda: m.argmax(axis=1),
        tm is not None and (lambda: tm.argmax(dim=1)))
    add("argmax(dim=0) (1000,1000)", lambda: sm.argmax(dim=0), lambda: m.argmax(axis=0),
        tm is not None and (lambda: tm.argmax(dim=0)))
    add("max(dim=1) values+indices (1000,1000)", lambda: sm.max(dim=1),
        lambda: (m.max(axis=1), m.argmax(axis=1)), tm is not None and (lambda: tm.max(dim=1)))
    add("min(dim=0) values+indices (1000,1000)", lambda: sm.min(dim=0),
        lambda: (m.min(axis=0), m.argmin(axis=0)), tm is not None and (lambda: tm.min(dim=0)))

    # Integer-array indexing.
    idx = rng.integers(0, N, K).astype("int64")
    sidx = np.sort(idx)
    si, ssi = st.from_numpy(idx), st.from_numpy(sidx)
    ti = torch.from_numpy(idx) if torch else None
    tsi = torch.from_numpy(sidx) if torch else None
    add("b[idx] 100k into 1M, random", lambda: s[si], lambda: a[idx],
        t is not None and (lambda: t[ti]))
    add("b[idx] 100k into 1M, sorted", lambda: s[ssi], lambda: a[sidx],
        t is not None and (lambda: t[tsi]))
    add("b[idx] 100k into 1M [::2]", lambda: s2[si], lambda: a2[::2][idx],
        t2 is not None and (lambda: t2[ti]))
    rows = rng.integers(0, 1000, 500).astype("int64")
    sr = st.from_numpy(rows)
    tr = torch.from_numpy(rows) if torch else None
    add("index_select dim 0 (1000,1000), 500", lambda: sm.index_select(0, sr),
        lambda: np.take(m, rows, axis=0), tm is not None and (lambda: tm.index_select(0, tr)))
    add("index_select dim 1 (1000,1000), 500", lambda: sm.index_select(1, sr),
        lambda: np.take(m, rows, axis=1), tm is not None and (lambda: tm.index_select(1, tr)))
    add("index_select dim 0 of .T (1000,1000), 500", lambda: sm.T.index_select(0, sr),
        lambda: np.take(m.T, rows, axis=0),
        tm is not None and (lambda: tm.T.index_select(0, tr)))
    if hasattr(st, "take"):
        # Flat indices into the 1000×1000 matrix (idx runs over N = 2^20 > 10^6).
        tk = idx % m.size
        stk = st.from_numpy(tk)
        ttk = torch.from_numpy(tk) if torch else None
        add("take 100k into (1000,1000)", lambda: st.take(sm, stk), lambda: np.take(m, tk),
            tm is not None and (lambda: torch.take(tm, ttk)))
    gidx = rng.integers(0, 1000, (1000, 100)).astype("int64")
    sg = st.from_numpy(gidx)
    tg = torch.from_numpy(gidx) if torch else None
    if hasattr(st, "gather"):
        add("gather dim 1 (1000,1000) by (1000,100)", lambda: st.gather(sm, 1, sg),
            lambda: np.take_along_axis(m, gidx, axis=1),
            tm is not None and (lambda: torch.gather(tm, 1, tg)))
        gidx0 = np.ascontiguousarray(gidx.T)
        sg0 = st.from_numpy(gidx0)
        tg0 = torch.from_numpy(gidx0) if torch else None
        add("gather dim 0 (1000,1000) by (100,1000)", lambda: st.gather(sm, 0, sg0),
            lambda: np.take_along_axis(m, gidx0, axis=0),
            tm is not None and (lambda: torch.gather(tm, 0, tg0)))
    vals = rng.standard_normal(K).astype("float32")
    sv = st.from_numpy(vals)
    tv = torch.from_numpy(vals) if torch else None
    acopy, scopy = a.copy(), st.from_numpy(a.copy())
    tcopy = torch.from_numpy(a.copy()) if torch else None

    def np_put():
        acopy[idx] = vals

    add("index_put_ 100k into 1M", lambda: scopy.index_put_((si,), sv), np_put,
        tcopy is not None and (lambda: tcopy.index_put_((ti,), tv)))

    # Boolean masks.
    for density in (0.5, 0.01):
        mask = rng.random(N) < density
        smask = st.from_numpy(mask)
        tmask = torch.from_numpy(mask) if torch else None
        add(f"b[mask] 1M, density {density}", lambda smask=smask: s[smask],
            lambda mask=mask: a[mask], t is not None and (lambda tmask=tmask: t[tmask]))
        add(f"nonzero 1M, density {density}", smask.nonzero, lambda mask=mask: np.nonzero(mask),
            tmask is not None and tmask.nonzero)
        if hasattr(st, "masked_select"):
            add(f"masked_select 1M, density {density}",
                lambda smask=smask: st.masked_select(s, smask), lambda mask=mask: a[mask],
                t is not None and (lambda tmask=tmask: torch.masked_select(t, tmask)))
    mask = rng.random(N) < 0.5
    smask = st.from_numpy(mask)
    add("b[mask] 1M [::2], density 0.5", lambda: s2[smask], lambda: a2[::2][mask],
        t2 is not None and (lambda: t2[torch.from_numpy(mask)]))
    add("b[b > 0.5] 1M", lambda: s[s > 0.5], lambda: a[a > 0.5],
        t is not None and (lambda: t[t > 0.5]))
    return [(n, sf, nf, tf if callable(tf) else None) for n, sf, nf, tf in out]
