"""Transcendental functions, float32 and float64, contiguous and strided (1M elements)."""

N = 1 << 20

FUNCS = ["exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "tanh",
         "sigmoid", "erf", "gelu", "asin", "atan", "asinh", "acosh", "atanh", "sinh"]


def cases(np, st, torch):
    rng = np.random.default_rng(0)
    out = []
    for dtype in ("float32", "float64"):
        base = rng.uniform(-3.0, 3.0, N).astype(dtype)
        pos = rng.uniform(0.01, 10.0, N).astype(dtype)
        unit = rng.uniform(-0.99, 0.99, N).astype(dtype)
        above1 = (pos + 1.0).astype(dtype)
        for f in FUNCS:
            a = (pos if f.startswith("log") else unit if f in ("asin", "atanh")
                 else above1 if f == "acosh" else base)
            s, t = st.from_numpy(a), (torch.from_numpy(a) if torch else None)
            np_fn = {"sigmoid": lambda a=a: 1.0 / (1.0 + np.exp(-a)),
                     "erf": None, "gelu": None}.get(
                f, getattr(np, {"asin": "arcsin", "atan": "arctan", "asinh": "arcsinh",
                                "acosh": "arccosh", "atanh": "arctanh"}.get(f, f), None))
            if np_fn is not None and f not in ("sigmoid",):
                np_fn = (lambda g, a: lambda: g(a))(np_fn, a)
            t_fn = None
            if t is not None:  # torch.Tensor has no .gelu method
                t_fn = ((lambda t=t: torch.nn.functional.gelu(t)) if f == "gelu"
                        else getattr(t, f))
            out.append((f"{f} 1M {dtype}", getattr(s, f), np_fn, t_fn))
        # Strided: every second element of a 2M array.
        a2 = rng.uniform(-3.0, 3.0, 2 * N).astype(dtype)
        s2 = st.from_numpy(a2)[::2]
        t2 = torch.from_numpy(a2)[::2] if torch else None
        for f in ("exp", "sin", "tanh"):
            out.append((f"{f} 1M {dtype} [::2]", getattr(s2, f),
                        (lambda g: lambda: g(a2[::2]))(getattr(np, f)),
                        getattr(t2, f) if t2 is not None else None))
        # A cheap op: the gather is most of its time.
        p2 = np.abs(a2)
        sp2, tp2 = st.from_numpy(p2)[::2], (torch.from_numpy(p2)[::2] if torch else None)
        out.append((f"sqrt 1M {dtype} [::2]", sp2.sqrt, lambda: np.sqrt(p2[::2]),
                    tp2.sqrt if tp2 is not None else None))
    # The rest of the vector math: float64 acos, cosh in both types.
    base = rng.uniform(-3.0, 3.0, N)
    unit = rng.uniform(-0.99, 0.99, N)
    for f, np_name, a in (("acos", "arccos", unit), ("cosh", "cosh", base),
                          ("cosh", "cosh", base.astype("float32"))):
        s, t = st.from_numpy(a), (torch.from_numpy(a) if torch else None)
        t_fn = None
        if t is not None:
            t_fn = ((lambda t=t: torch.nn.functional.gelu(t)) if f == "gelu"
                    else getattr(t, f))
        np_fn = (lambda g, a: lambda: g(a))(getattr(np, np_name), a) if np_name else None
        out.append((f"{f} 1M {a.dtype}", getattr(s, f), np_fn, t_fn))
    return out
