"""Arithmetic that is compute-bound: `pow` (the special exponents PyTorch computes as
expressions, and the general function), `atan2`, and integer division by one divisor for
the whole tensor (1M elements)."""

N = 1 << 20


def cases(np, st, torch):
    rng = np.random.default_rng(0)
    out = []
    for dtype in ("float32", "float64"):
        a = (rng.random(N) + 0.5).astype(dtype)
        s, t = st.from_numpy(a), (torch.from_numpy(a) if torch else None)
        for e in (3, 0.5, -1, -0.5, -2, 1.7):
            out.append((f"x ** {e} 1M {dtype}", (lambda s=s, e=e: s ** e),
                        (lambda a=a, e=e: a ** e), (lambda t=t, e=e: t ** e) if torch else None))
        # An exponent per element: the general pow for every pair.
        b = (rng.random(N) * 4 - 2).astype(dtype)
        sb, tb = st.from_numpy(b), (torch.from_numpy(b) if torch else None)
        out.append((f"x ** y 1M {dtype}", (lambda s=s, sb=sb: s ** sb),
                    (lambda a=a, b=b: a ** b), (lambda t=t, tb=tb: t ** tb) if torch else None))
        # atan2 over every octant.
        out.append((f"atan2(y, x) 1M {dtype}", (lambda s=s, sb=sb: sb.atan2(s - 1.0)),
                    (lambda a=a, b=b: np.arctan2(b, a - 1.0)),
                    (lambda t=t, tb=tb: torch.atan2(tb, t - 1.0)) if torch else None))
    for dtype in ("int32", "int64"):
        a = rng.integers(-10**6, 10**6, N).astype(dtype)
        s, t = st.from_numpy(a), (torch.from_numpy(a) if torch else None)
        out.append((f"x // 7 1M {dtype}", lambda s=s: s // 7, lambda a=a: a // 7,
                    (lambda t=t: t // 7) if torch else None))
        out.append((f"x % 7 1M {dtype}", lambda s=s: s % 7, lambda a=a: a % 7,
                    (lambda t=t: t % 7) if torch else None))
        out.append((f"x // -3 1M {dtype}", lambda s=s: s // -3, lambda a=a: a // -3,
                    (lambda t=t: t // -3) if torch else None))
    return out
