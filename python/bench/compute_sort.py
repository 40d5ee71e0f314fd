"""Sorting and searching (float32 unless named), against NumPy's equivalents: np.sort,
np.argsort (PyTorch's sort returns values and indices at once, so strata's ``sort`` is
timed against NumPy's argsort plus the gather of the values, and strata's ``argsort``
against np.argsort), np.partition-based top-k, np.unique, np.searchsorted. Strided cases
read every second element of an array twice the size."""

N = 1 << 20


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

    def np_sort_pair(x, axis=-1, kind=None):
        i = np.argsort(x, axis=axis, kind=kind)
        return np.take_along_axis(x, i, axis=axis), i

    add("sort 1M f32 (values)", lambda: s.sort(), lambda: np.sort(a), t is not None and (lambda: t.sort()))
    add("sort 1M f32 (values+indices)", lambda: s.sort(), lambda: np_sort_pair(a),
        t is not None and (lambda: t.sort()))
    add("sort 1M f32 stable (values+indices)", lambda: s.sort(stable=True),
        lambda: np_sort_pair(a, kind="stable"), t is not None and (lambda: t.sort(stable=True)))
    add("argsort 1M f32", lambda: s.argsort(), lambda: np.argsort(a),
        t is not None and (lambda: t.argsort()))
    add("argsort 1M f32 stable", lambda: s.argsort(stable=True), lambda: np.argsort(a, kind="stable"),
        t is not None and (lambda: t.argsort(stable=True)))
    add("sort 1M f32 [::2] (values)", lambda: s2.sort(), lambda: np.sort(a2[::2]),
        t2 is not None and (lambda: t2.sort()))
    add("sort (1000,1000) dim=1 (values)", lambda: sm.sort(dim=1), lambda: np.sort(m, axis=1),
        tm is not None and (lambda: tm.sort(dim=1)))
    add("sort (1000,1000) dim=0 (values)", lambda: sm.sort(dim=0), lambda: np.sort(m, axis=0),
        tm is not None and (lambda: tm.sort(dim=0)))
    i = rng.integers(0, 1 << 30, N).astype("int64")
    si = st.from_numpy(i)
    ti = torch.from_numpy(i) if torch else None
    add("sort 1M int64 (values)", lambda: si.sort(), lambda: np.sort(i), ti is not None and (lambda: ti.sort()))
    add("topk 1M f32, k=100", lambda: s.topk(100),
        lambda: np.sort(np.partition(a, N - 100)[N - 100:])[::-1], t is not None and (lambda: t.topk(100)))
    u = rng.integers(0, 1000, N).astype("int32")
    su = st.from_numpy(u)
    tu = torch.from_numpy(u) if torch else None
    add("unique 1M int32 (1000 values)", lambda: st.unique(su), lambda: np.unique(u),
        tu is not None and (lambda: torch.unique(tu)))
    seq = np.sort(a)
    sseq = st.from_numpy(seq)
    q = rng.standard_normal(100_000).astype("float32")
    sq = st.from_numpy(q)
    tseq = torch.from_numpy(seq) if torch else None
    tq = torch.from_numpy(q) if torch else None
    add("searchsorted 100k into 1M f32", lambda: st.searchsorted(sseq, sq), lambda: np.searchsorted(seq, q),
        tseq is not None and (lambda: torch.searchsorted(tseq, tq)))
    return out
