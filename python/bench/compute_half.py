"""Half precision (float16 / bfloat16): elementwise ops, casts, reductions, transposes.

1M elements (transposes 4096²). NumPy has float16 but no bfloat16: bfloat16 rows are
timed against NumPy's float32 op. Each half row has a float32 row of the same strata op
right after it ("… float32 (ref)"): the target is a half op within ~1.5x of the float32
one, and a cast about a copy of the bytes (the "copy" rows).
"""

N = 1 << 20
T = 4096


def cases(np, st, torch):
    rng = np.random.default_rng(0)
    out = []
    f32 = rng.uniform(-3.0, 3.0, N).astype(np.float32)
    g32 = rng.uniform(-3.0, 3.0, N).astype(np.float32)
    f16, g16 = f32.astype(np.float16), g32.astype(np.float16)
    f64 = f32.astype(np.float64)
    sf32, sg32 = st.from_numpy(f32), st.from_numpy(g32)
    sf16, sg16 = st.from_numpy(f16), st.from_numpy(g16)
    sbf, sgbf = sf32.bfloat16(), sg32.bfloat16()
    sf64 = st.from_numpy(f64)
    m32k = f32.reshape(1024, 1024)[:1000, :1000].copy()
    sm32k = st.from_numpy(m32k)
    tt = (lambda a: torch.from_numpy(a)) if torch else (lambda a: None)
    t32, u32, t16, u16 = tt(f32), tt(g32), tt(f16), tt(g16)
    tbf = t32.bfloat16() if torch else None
    ubf = u32.bfloat16() if torch else None

    def tfn(f, *xs):
        return (lambda: f(*xs)) if torch else None

    for op, sym in (("add", lambda a, b: a + b), ("mul", lambda a, b: a * b)):
        out.append((f"{op} 1M float16", lambda o=sym: o(sf16, sg16),
                    lambda o=sym: o(f16, g16), tfn(sym, t16, u16)))
        out.append((f"{op} 1M bfloat16 (numpy: float32)", lambda o=sym: o(sbf, sgbf),
                    lambda o=sym: o(f32, g32), tfn(sym, tbf, ubf)))
        out.append((f"{op} 1M float32 (ref)", lambda o=sym: o(sf32, sg32),
                    lambda o=sym: o(f32, g32), tfn(sym, t32, u32)))
    # Strided: every second element.
    f16b = rng.uniform(-3.0, 3.0, 2 * N).astype(np.float16)
    s16b = st.from_numpy(f16b)[::2]
    out.append(("add 1M float16 [::2]", lambda: s16b + s16b, lambda: f16b[::2] + f16b[::2],
                tfn(lambda t: t + t, tt(f16b)[::2] if torch else None)))
    out.append(("exp 1M float16", sf16.exp, lambda: np.exp(f16), tfn(lambda t: t.exp(), t16)))
    out.append(("exp 1M bfloat16 (numpy: float32)", sbf.exp, lambda: np.exp(f32),
                tfn(lambda t: t.exp(), tbf)))
    out.append(("exp 1M float32 (ref)", sf32.exp, lambda: np.exp(f32),
                tfn(lambda t: t.exp(), t32)))
    # Casts.
    out.append(("cast float32 -> float16 1M", sf32.half, lambda: f32.astype(np.float16),
                tfn(lambda t: t.half(), t32)))
    out.append(("cast float16 -> float32 1M", sf16.float, lambda: f16.astype(np.float32),
                tfn(lambda t: t.float(), t16)))
    out.append(("cast float32 -> bfloat16 1M (numpy: f32->f16)", sf32.bfloat16,
                lambda: f32.astype(np.float16), tfn(lambda t: t.bfloat16(), t32)))
    out.append(("cast bfloat16 -> float32 1M (numpy: f16->f32)", sbf.float,
                lambda: f16.astype(np.float32), tfn(lambda t: t.float(), tbf)))
    out.append(("cast float64 -> float16 1M", sf64.half, lambda: f64.astype(np.float16),
                tfn(lambda t: t.half(), tt(f64))))
    out.append(("cast float16 -> float64 1M", sf16.double, lambda: f16.astype(np.float64),
                tfn(lambda t: t.double(), t16)))
    out.append(("copy 2 MiB (ref: float16 contiguous)", sf16.clone, f16.copy,
                tfn(lambda t: t.clone(), t16)))
    out.append(("copy 4 MiB (ref: float32 contiguous)", sf32.clone, f32.copy,
                tfn(lambda t: t.clone(), t32)))
    # Reductions.
    out.append(("sum 1M float16", sf16.sum, f16.sum, tfn(lambda t: t.sum(), t16)))
    out.append(("sum 1M bfloat16 (numpy: float32)", sbf.sum, f32.sum,
                tfn(lambda t: t.sum(), tbf)))
    out.append(("sum 1M float32 (ref)", sf32.sum, f32.sum, tfn(lambda t: t.sum(), t32)))
    out.append(("mean 1M float16", sf16.mean, f16.mean, tfn(lambda t: t.mean(), t16)))
    out.append(("amax 1M float16", sf16.amax, f16.max, tfn(lambda t: t.amax(), t16)))
    out.append(("amax 1M float32 (ref)", sf32.amax, f32.max, tfn(lambda t: t.amax(), t32)))
    # The full max/min reductions of the other dtypes (a vector max per block, NaN checked
    # per block).
    out.append(("amin 1M float32", sf32.amin, f32.min, tfn(lambda t: t.amin(), t32)))
    out.append(("max() 1M float32", sf32.max, f32.max, tfn(lambda t: t.max(), t32)))
    out.append(("amax 1M float64", sf64.amax, f64.max, tfn(lambda t: t.amax(), tt(f64))))
    i32 = (f32 * 1000).astype(np.int32)
    out.append(("amax 1M int32", st.from_numpy(i32).amax, i32.max,
                tfn(lambda t: t.amax(), tt(i32))))
    out.append(("amax (1000,1000) dim=1 float32", lambda: sm32k.amax(1),
                lambda: m32k.max(axis=1), tfn(lambda t: t.amax(1), tt(m32k))))
    # Over the other dim: the kept dim is the fastest (the vertical driver, row by row).
    out.append(("amax (1000,1000) dim=0 float32", lambda: sm32k.amax(0),
                lambda: m32k.max(axis=0), tfn(lambda t: t.amax(0), tt(m32k))))
    out.append(("any (1000,1000) dim=0 float32", lambda: sm32k.any(0),
                lambda: m32k.any(axis=0), tfn(lambda t: t.any(0), tt(m32k))))
    out.append(("logsumexp (1000,1000) dim=0 float32", lambda: sm32k.logsumexp(0),
                None, tfn(lambda t: torch.logsumexp(t, 0), tt(m32k))))
    out.append(("sum 1M bfloat16 [::2] (numpy: float32)", lambda: sbf[::2].sum(),
                lambda: f32[::2].sum(), tfn(lambda t: t[::2].sum(), tbf)))
    out.append(("mul 1M bfloat16 by 2.0 (numpy: float32)", lambda: sbf * 2.0,
                lambda: f32 * np.float32(2.0), tfn(lambda t: t * 2.0, tbf)))
    # Transposes.
    m16 = rng.uniform(-3.0, 3.0, (T, T)).astype(np.float16)
    m32 = m16.astype(np.float32)
    sm16, sm32 = st.from_numpy(m16), st.from_numpy(m32)
    out.append((f"{T}² float16 .T.contiguous()", lambda: sm16.T.contiguous(),
                lambda: np.ascontiguousarray(m16.T),
                tfn(lambda t: t.T.contiguous(), tt(m16))))
    out.append((f"{T}² float32 .T.contiguous() (ref)", lambda: sm32.T.contiguous(),
                lambda: np.ascontiguousarray(m32.T),
                tfn(lambda t: t.T.contiguous(), tt(m32))))
    return out
