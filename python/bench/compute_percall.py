"""Per-call cost from Python on small tensors (100 elements): the time of one call, which
is the binding's overhead (argument checks, dtype/shape logic, allocating the result and
its Python object), not the arithmetic."""


def cases(np, st, torch):
    a = np.arange(100, dtype=np.float32) / 100
    m = a.reshape(10, 10)
    t, tm = st.from_numpy(a.copy()), st.from_numpy(m.copy())
    tt = torch.from_numpy(a.copy()) if torch else None
    ttm = torch.from_numpy(m.copy()) if torch else None
    big = np.arange(1000, dtype=np.float64)
    tbig = st.from_numpy(big)
    mv = memoryview(big)
    import strata.array_api as xp

    xa = xp.asarray(t)  # the array API's Array over the same tensor
    out = [
        ("t + t (100 f32)", lambda: t + t, lambda: a + a, (lambda: tt + tt) if torch else None),
        # The namespace's Array: its operators check the standard's promotion in Python.
        ("array API x + x (100 f32)", lambda: xa + xa, lambda: a + a, None),
        ("array API xp.sum(x) (100 f32)", lambda: xp.sum(xa), lambda: np.sum(a), None),
        ("t * 2.0 (100 f32)", lambda: t * 2.0, lambda: a * 2.0,
         (lambda: tt * 2.0) if torch else None),
        ("t.exp() (100 f32)", lambda: t.exp(), lambda: np.exp(a),
         (lambda: tt.exp()) if torch else None),
        ("t.T.contiguous() (10x10 f32)", lambda: tm.T.contiguous(),
         lambda: np.ascontiguousarray(m.T), (lambda: ttm.T.contiguous()) if torch else None),
        # Interop: each against NumPy's own np.asarray of an array (the floor).
        ("st.from_numpy(a) vs np.asarray(a)", lambda: st.from_numpy(big),
         lambda: np.asarray(big), (lambda: torch.from_numpy(big)) if torch else None),
        ("np.asarray(t) vs np.asarray(a)", lambda: np.asarray(tbig),
         lambda: np.asarray(big), (lambda: tt.numpy()) if torch else None),
        # NumPy tries the buffer protocol before anything else, so np.asarray(t) costs at
        # least what np.asarray of any buffer exporter does: this row compares the two.
        ("np.asarray(t) vs np.asarray(memoryview)", lambda: np.asarray(tbig),
         lambda: np.asarray(mv), None),
        ("t.numpy() vs np.asarray(a)", lambda: tbig.numpy(), lambda: np.asarray(big),
         (lambda: tt.numpy()) if torch else None),
    ]
    return out
