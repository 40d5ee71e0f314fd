"""Memory footprint of a loop of large ops: strata beside NumPy, each in a fresh process.

The loop (issue "Memory footprint"): ten rounds of ``a + b``, ``a.T.contiguous()``,
``(a * 2).exp()`` and ``a.flip(0).contiguous()`` on 4096² float32 (64 MiB a tensor), the
last round's results kept, then every tensor deleted. Each library runs it in its own
child interpreter, which reports its resident memory (``/proc/self/statm``) after its
imports, before the inputs are made, its peak (``ru_maxrss``), and after the deletes: at once and then every quarter
second for three seconds, with no call into the library. strata's block cache (Note
[block cache] in ``storage/cache.rs``) keeps freed blocks for reuse and gives back those
idle for about a second; NumPy returns each block to the system when it is freed.

A second part times the fresh-output cases the cache exists for (a loop of the same op,
each result dropped before the next), strata beside NumPy in the same run, and strata
again with the decay off (``STRATA_CACHE_DECAY=inf``: blocks kept until evicted), so
that the cost of giving memory back shows in speed as well as in memory.

Run: ``python python/bench/bench_memory.py`` (``make bench-python`` runs it too).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

CHILD = r"""
import json, os, resource, sys, time
import numpy as np
lib = sys.argv[1]
page = os.sysconf("SC_PAGE_SIZE")

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * page

if lib == "strata":
    import strata as st
start = rss()
n = 4096
rng = np.random.default_rng(0)
a0 = rng.standard_normal((n, n), dtype=np.float32)
b0 = rng.standard_normal((n, n), dtype=np.float32)
if lib == "strata":
    a, b = st.from_numpy(a0.copy()), st.from_numpy(b0.copy())
    ops = [lambda: a + b, lambda: a.T.contiguous(), lambda: (a * 2.0).exp(),
           lambda: a.flip(0).contiguous()]
else:
    a, b = a0.copy(), b0.copy()
    ops = [lambda: a + b, lambda: np.ascontiguousarray(a.T), lambda: np.exp(a * 2.0),
           lambda: np.ascontiguousarray(a[::-1])]
del a0, b0
peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
outs = [None] * len(ops)
t0 = time.perf_counter()
for _ in range(10):
    for i, op in enumerate(ops):
        outs[i] = op()
loop_s = time.perf_counter() - t0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
del outs, ops, a, b
after = [(0.0, rss())]
t1 = time.perf_counter()
while time.perf_counter() - t1 < 3.0:
    time.sleep(0.25)
    after.append((round(time.perf_counter() - t1, 2), rss()))
info = st.cache_info() if lib == "strata" else None
print(json.dumps(dict(start=start, peak_before=peak_before, peak=peak, loop_s=loop_s,
                      after=after, cache=info)))
"""

TIMED = r"""
import json, sys, time
import numpy as np
import strata as st
n = 4096
rng = np.random.default_rng(1)
a0 = rng.standard_normal((n, n), dtype=np.float32)
b0 = rng.standard_normal((n, n), dtype=np.float32)
a, b = st.from_numpy(a0), st.from_numpy(b0)
row = b0[:1].copy(); trow = st.from_numpy(row)
cases = [
    ("a + b", lambda: a + b, lambda: a0 + b0),
    ("a.flip(0).contiguous()", lambda: a.flip(0).contiguous(),
     lambda: np.ascontiguousarray(a0[::-1])),
    ("a[::2, ::2].contiguous()", lambda: a[::2, ::2].contiguous(),
     lambda: np.ascontiguousarray(a0[::2, ::2])),
    ("a + row (broadcast)", lambda: a + trow, lambda: a0 + row),
]
def best(f, reps=15):
    f()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter(); r = f(); ts.append(time.perf_counter() - t0); del r
    return min(ts)
print(json.dumps({name: [best(fs), best(fn)] for name, fs, fn in cases}))
"""

MIB = 1 << 20


def run_child(lib: str) -> dict:
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(CHILD), lib],
        check=True, capture_output=True, text=True, env=env,
    )
    return json.loads(out.stdout)


def main() -> None:
    print("# memory: the loop of issue 'Memory footprint' (4096² float32), each library in"
          " a fresh process; MiB")
    res = {lib: run_child(lib) for lib in ("strata", "numpy")}
    print(f"{'':28s} {'strata':>9s} {'numpy':>9s}")
    for key, label in [("start", "resident at the start"), ("peak", "peak resident"),
                       ("loop_s", "loop time (s)")]:
        s, n = res["strata"][key], res["numpy"][key]
        if key == "loop_s":
            print(f"{label:28s} {s:9.2f} {n:9.2f}")
        else:
            print(f"{label:28s} {s / MIB:9.1f} {n / MIB:9.1f}")
    s_peak = res["strata"]["peak"] - res["strata"]["start"]
    n_peak = res["numpy"]["peak"] - res["numpy"]["start"]
    print(f"{'peak over the start':28s} {s_peak / MIB:9.1f} {n_peak / MIB:9.1f}"
          f"   (strata - numpy: {(s_peak - n_peak) / MIB:.1f} MiB; one block is 64 MiB)")
    print("resident over the start after the deletes (s after: strata, numpy):")
    for (ts, s), (_, n) in zip(res["strata"]["after"], res["numpy"]["after"]):
        s0, n0 = res["strata"]["start"], res["numpy"]["start"]
        print(f"  {ts:5.2f} s {(s - s0) / MIB:9.1f} {(n - n0) / MIB:9.1f}")
    print("strata cache_info() at the end:", res["strata"]["cache"])
    print()
    print("# fresh outputs in a loop (4096² float32, best of 15, ms): strata with the"
          " default decay, strata with none, numpy; strata / numpy")
    runs = []
    for decay in (None, "inf"):
        env = dict(os.environ)
        env.setdefault("OMP_NUM_THREADS", "1")
        env.pop("STRATA_CACHE_DECAY", None)
        if decay:
            env["STRATA_CACHE_DECAY"] = decay
        out = subprocess.run([sys.executable, "-c", textwrap.dedent(TIMED)], check=True,
                             env=env, capture_output=True, text=True)
        runs.append(json.loads(out.stdout))
    print(f"{'':28s} {'decay 1s':>9s} {'no decay':>9s} {'numpy':>9s} {'ratio':>7s}")
    for name, (s, n) in runs[0].items():
        s_inf, n_inf = runs[1][name]
        n = min(n, n_inf)
        print(f"{name:28s} {s * 1e3:9.2f} {s_inf * 1e3:9.2f} {n * 1e3:9.2f} {s / n:7.2f}")


if __name__ == "__main__":
    main()
