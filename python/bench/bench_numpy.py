"""strata against NumPy on the same data, in the same run.

Each case times strata and NumPy (best of N) and a same-run memcpy of the bytes the case
writes (``np.copyto`` between two contiguous arrays), and prints time, GB/s, the ratio to
that memcpy and strata's time over NumPy's. Run it through ``make bench-python`` (a
release build), which runs it once per thread count:

    RAYON_NUM_THREADS / OPENBLAS_NUM_THREADS / OMP_NUM_THREADS = 1, then 2

NumPy's elementwise ops and copies are single-threaded whatever the setting; its matmul
uses OpenBLAS threads.

The 1-thread run ends with the per-call cost of view ops from Python (``t.T``,
``t[1:3]``, ``t.view(-1)``, …) beside NumPy's; ``bench_numpy.py --per-call`` runs only
that part.

Tuning notes (the measurements behind the binding's per-call paths, kept here rather than
in the code's comments): the free list of Tensor objects (``strata-py/src/freelist.rs``)
took ``t.T[1:3]`` from ~140 to ~105 ns a call (NumPy ~122); reading exact ints without
pyo3's ``extract`` (``exact_int`` in ``strata-py/src/convert.rs``) removed a third of
``t.view(-1)``'s own time; building views in their objects (``new_view`` in
``strata-py/src/tensor.rs``) removed store-forwarding stalls that were a third of a view
op's time.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
import timeit

import numpy as np

import strata as st


def best(fn, repeat: int) -> float:
    # Warm up. NumPy's fresh outputs fault in new pages on every call; strata's reuse
    # the block the warm-up freed (its block cache), as in any loop of the same op.
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def memcpy_time(nbytes: int, repeat: int) -> float:
    src = np.ones(nbytes // 4, dtype=np.float32)
    dst = np.empty_like(src)
    return best(lambda: np.copyto(dst, src), repeat)


def case(name: str, s_fn, n_fn, out_bytes: int, repeat: int = 5) -> None:
    ts = best(s_fn, repeat)
    tn = best(n_fn, repeat)
    tm = memcpy_time(out_bytes, repeat)
    print(
        f"{name:<34} {ts * 1e3:9.3f} {tn * 1e3:9.3f} {out_bytes / ts / 1e9:7.1f} "
        f"{ts / tm:7.2f} {tn / tm:7.2f} {ts / tn:8.2f}",
        flush=True,
    )


def f32(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)


def run() -> None:
    threads = os.environ.get("RAYON_NUM_THREADS", "?")
    print(f"\n## threads = {threads}  ({platform.machine()}, numpy {np.__version__})")
    print(
        f"{'case':<34} {'strata ms':>9} {'numpy ms':>9} {'GB/s':>7} "
        f"{'st/mcpy':>7} {'np/mcpy':>7} {'st/np':>8}"
    )
    n = 8192
    a, b = f32(n, n), f32(n, n, seed=1)
    ta, tb = st.from_numpy(a), st.from_numpy(b)
    big = n * n * 4
    case("transpose 8192² → contiguous", lambda: ta.T.contiguous(), lambda: np.ascontiguousarray(a.T), big, 3)
    x = f32(8, 2048, 256)
    tx = st.from_numpy(x)
    case("(8,2048,256) permute(0,2,1)", lambda: tx.permute(0, 2, 1).contiguous(),
         lambda: np.ascontiguousarray(x.transpose(0, 2, 1)), x.nbytes)
    y = f32(32, 64, 56, 56)
    ty = st.from_numpy(y)
    case("NCHW→NHWC (32,64,56,56)", lambda: ty.permute(0, 2, 3, 1).contiguous(),
         lambda: np.ascontiguousarray(y.transpose(0, 2, 3, 1)), y.nbytes)
    z = np.ascontiguousarray(y.transpose(0, 2, 3, 1))
    tz = st.from_numpy(z)
    case("NHWC→NCHW", lambda: tz.permute(0, 3, 1, 2).contiguous(),
         lambda: np.ascontiguousarray(z.transpose(0, 3, 1, 2)), z.nbytes)
    w = np.random.default_rng(2).standard_normal((64, 64, 64, 64))
    tw = st.from_numpy(w)
    case("64⁴ f64 permute(3,2,1,0)", lambda: tw.permute(3, 2, 1, 0).contiguous(),
         lambda: np.ascontiguousarray(w.transpose(3, 2, 1, 0)), w.nbytes)
    case("a + b (8192², contiguous)", lambda: ta + tb, lambda: a + b, big, 3)
    case("a + b.T", lambda: ta + tb.T, lambda: a + b.T, big, 3)
    case("flip(0) → contiguous", lambda: ta.flip(0).contiguous(),
         lambda: np.ascontiguousarray(a[::-1]), big, 3)
    case("[::2, ::2] → contiguous", lambda: ta[::2, ::2].contiguous(),
         lambda: np.ascontiguousarray(a[::2, ::2]), big // 4)
    c, r = f32(n, 1), f32(1, n, seed=3)
    tc, tr = st.from_numpy(c), st.from_numpy(r)
    case("(8192,1) + (1,8192)", lambda: tc + tr, lambda: c + r, big, 3)
    # The fresh-output cases again with strata's block cache off: every strata output
    # then faults in fresh pages, as NumPy's do (see Note [block cache]).
    old_limit = st.set_cache_limit(0)
    case("a + b, cache off", lambda: ta + tb, lambda: a + b, big, 3)
    case("flip(0), cache off", lambda: ta.flip(0).contiguous(),
         lambda: np.ascontiguousarray(a[::-1]), big, 3)
    case("[::2, ::2], cache off", lambda: ta[::2, ::2].contiguous(),
         lambda: np.ascontiguousarray(a[::2, ::2]), big // 4)
    case("(8192,1) + (1,8192), cache off", lambda: tc + tr, lambda: c + r, big, 3)
    st.set_cache_limit(old_limit)
    case("sum(0) of 8192²", lambda: ta.sum(0), lambda: a.sum(0), big, 3)
    case("sum(1) of 8192²", lambda: ta.sum(1), lambda: a.sum(1), big, 3)
    for k in (16, 20):  # 64K and 1M elements: fixed costs, allocation, thread hand-off
        u, v = f32(1 << k), f32(1 << k, seed=5)
        tu, tv = st.from_numpy(u), st.from_numpy(v)
        label = f"{1 << (k - 10)}K"
        case(f"a + b ({label} f32)", lambda: tu + tv, lambda: u + v, u.nbytes, 9)
        case(f"a.sum() ({label} f32)", lambda: tu.sum(), lambda: u.sum(), u.nbytes, 9)
    p = f32(1 << 20, 2)
    tp = st.from_numpy(p)
    case("(1M,2).sum(-1)", lambda: tp.sum(-1), lambda: p.sum(-1), p.nbytes)
    m = 2048
    A, B = f32(m, m), f32(m, m, seed=4)
    tA, tB = st.from_numpy(A), st.from_numpy(B)
    flops = 2 * m**3
    for name, sf, nf in (
        ("matmul 2048²", lambda: tA @ tB, lambda: A @ B),
        ("A @ B.T", lambda: tA @ tB.T, lambda: A @ B.T),
        ("A[::-1] @ B", lambda: tA.flip(0) @ tB, lambda: A[::-1] @ B),
    ):
        ts, tn = best(sf, 3), best(nf, 3)
        print(
            f"{name:<34} {ts * 1e3:9.2f} {tn * 1e3:9.2f} {'':>7} {'':>7} {'':>7} {ts / tn:8.2f}"
            f"   ({flops / ts / 1e9:.0f} vs {flops / tn / 1e9:.0f} GFLOP/s)",
            flush=True,
        )

    if threads == "1":
        per_call()


# (label, strata statement, NumPy statement): the same view on a (4, 4) float32 tensor /
# array. Where NumPy's spelling of an op is a Python-level function (np.flip,
# np.expand_dims: 1-2 µs), the NumPy column uses its fast indexing equivalent instead.
PER_CALL = (
    ("t.T", "t.T", "a.T"),
    ("t[1:3]", "t[1:3]", "a[1:3]"),
    ("t.T[1:3]", "t.T[1:3]", "a.T[1:3]"),
    ("t[0]", "t[0]", "a[0]"),
    ("t[:, 1]", "t[:, 1]", "a[:, 1]"),
    ("t[..., None]", "t[..., None]", "a[..., None]"),
    ("t[::-1]", "t[::-1]", "a[::-1]"),
    ("t.flip(0)  | a[::-1]", "t.flip(0)", "a[::-1]"),
    ("t.view(-1)  | a.reshape(-1)", "t.view(-1)", "a.reshape(-1)"),
    ("t.reshape(2, 8)", "t.reshape(2, 8)", "a.reshape(2, 8)"),
    ("t.transpose(0, 1) | a.swapaxes", "t.transpose(0, 1)", "a.swapaxes(0, 1)"),
    ("t.permute(1, 0) | a.transpose", "t.permute(1, 0)", "a.transpose(1, 0)"),
    ("t.unsqueeze(0)  | a[None]", "t.unsqueeze(0)", "a[None]"),
    ("t.narrow(0, 1, 2)  | a[1:3]", "t.narrow(0, 1, 2)", "a[1:3]"),
    ("t.select(1, 2)  | a[:, 2]", "t.select(1, 2)", "a[:, 2]"),
    ("t.shape", "t.shape", "a.shape"),
    ("t.stride()  | a.strides", "t.stride()", "a.strides"),
)


def per_call(number: int = 200_000, repeat: int = 7) -> None:
    """ns per call of view ops, then of small ops, from Python (strata and NumPy
    alternating, best of `repeat`).

    The statements are timed as written (no lambda around them), so both sides pay the
    same interpreter loop and attribute lookups.
    """
    print(f"\nper-call cost of view ops from Python on a (4, 4) float32 tensor "
          f"(ns per call, best of {repeat} x {number})")
    per_call_table(PER_CALL, number, repeat)
    print(f"\nper-call cost of ops that compute, on the same (4, 4) float32 tensor "
          f"(ns per call, best of {repeat} x {number // 4})")
    per_call_table(SMALL_OPS, number // 4, repeat)


def per_call_table(rows, number: int, repeat: int) -> None:
    print(f"{'strata op  | NumPy op if different':<34} {'strata':>9} {'numpy':>9} {'st/np':>8}")
    a = np.arange(16, dtype=np.float32).reshape(4, 4)
    env = {"a": a, "t": st.from_numpy(a), "np": np}
    ratios = []
    for name, s_stmt, n_stmt in rows:
        s_timer = timeit.Timer(s_stmt, globals=env)
        n_timer = timeit.Timer(n_stmt, globals=env)
        s_best = n_best = float("inf")
        for _ in range(repeat):  # alternate, so load from other processes hits both sides
            s_best = min(s_best, s_timer.timeit(number))
            n_best = min(n_best, n_timer.timeit(number))
        s_ns, n_ns = s_best / number * 1e9, n_best / number * 1e9
        ratios.append(s_ns / n_ns)
        print(f"{name:<34} {s_ns:9.0f} {n_ns:9.0f} {s_ns / n_ns:8.2f}", flush=True)
    geo = float(np.exp(np.mean(np.log(ratios))))
    print(f"{'geometric mean of st/np':<34} {'':>9} {'':>9} {geo:8.2f}", flush=True)


# Ops that read and write data, on the (4, 4) tensor: the fixed cost of an op.
SMALL_OPS = (
    ("t + t", "t + t", "a + a"),
    ("t * 2.0", "t * 2.0", "a * 2.0"),
    ("-t", "-t", "-a"),
    ("t > 0", "t > 0", "a > 0"),
    ("t.sum()", "t.sum()", "a.sum()"),
    ("t.exp()  | np.exp(a)", "t.exp()", "np.exp(a)"),
    ("t.T.contiguous() | ascontiguousarray", "t.T.contiguous()", "np.ascontiguousarray(a.T)"),
    ("t[[0, 2]]  (advanced index)", "t[[0, 2]]", "a[[0, 2]]"),
    ("t[t > 5]  (mask)", "t[t > 5]", "a[a > 5]"),
    ("t[1:3] = 0.0  (setitem)", "t[1:3] = 0.0", "a[1:3] = 0.0"),
    ("t[[0, 2]] = 1.0  (advanced setitem)", "t[[0, 2]] = 1.0", "a[[0, 2]] = 1.0"),
)


def main() -> None:
    if "--per-call" in sys.argv[1:]:
        per_call()
        return
    if os.environ.get("RAYON_NUM_THREADS"):
        run()
        return
    print(time.strftime("strata vs NumPy, %Y-%m-%d %H:%M UTC", time.gmtime()))
    print(f"{os.cpu_count()} logical CPUs; {platform.processor() or platform.machine()}")
    for n in ("1", "2"):
        env = dict(os.environ, RAYON_NUM_THREADS=n, OPENBLAS_NUM_THREADS=n, OMP_NUM_THREADS=n,
                   MKL_NUM_THREADS=n)
        subprocess.run([sys.executable, __file__], env=env, check=True)


if __name__ == "__main__":
    main()
