"""Compute-bound cases: strata against NumPy and (when installed) PyTorch, same data,
same run, one thread and two.

The cases live beside this file in ``compute_*.py`` modules, one per area (``compute_math``:
transcendental functions; ``compute_half``: float16/bfloat16; ``compute_gather``:
arg-reductions, integer and boolean indexing; ``compute_matmul``: small batches,
symmetric products, matrix-vector; ``compute_percall``: per-call cost from Python;
``compute_complex``: complex dtypes and FFTs; ``compute_arith``: pow and integer division
by one divisor). Each module defines ``cases(np, st,
torch)``, returning ``(name, strata_fn, numpy_fn, torch_fn_or_None)`` tuples; each
function runs the case once.

Run it through ``make bench-python`` (a release build). ``STRATA_CPU=avx2`` (or
``portable``) caps strata's kernels at that instruction set, so one machine gives the
numbers of each path; the header line says which level ran. NumPy is capped to match
(``NPY_DISABLE_CPU_FEATURES``, set for the runs this script starts unless already set:
``X86_V4`` and the AVX-512 extras off for avx2, ``X86_V3`` too for portable), so the ratios compare like
with like; the header says what NumPy found. ``--only NAME`` runs the modules whose name
contains NAME.
"""

from __future__ import annotations

import importlib.util
import os
import pathlib
import platform
import subprocess
import sys
import time

import numpy as np

import strata as st

try:  # PyTorch is optional: its column is left out when it is not installed.
    import torch
except ImportError:  # pragma: no cover - depends on the machine
    torch = None


def best(fn, budget: float = 0.2, repeat_max: int = 200) -> float:
    """The best time of `fn` over up to `repeat_max` calls or about `budget` seconds."""
    fn()
    times = []
    start = time.perf_counter()
    while len(times) < repeat_max and (len(times) < 3 or time.perf_counter() - start < budget):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def modules(only: str | None):
    here = pathlib.Path(__file__).parent
    for path in sorted(here.glob("compute_*.py")):
        if only and only not in path.stem:
            continue
        spec = importlib.util.spec_from_file_location(path.stem, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        yield path.stem, mod


def fmt(t: float | None) -> str:
    if t is None:
        return "-"
    return f"{t * 1e6:.1f}" if t < 1e-3 else f"{t * 1e3:.3f}m"


def numpy_simd() -> str:
    """The SIMD extensions NumPy dispatches to in this process (its runtime report)."""
    try:
        from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    except ImportError:  # pragma: no cover - older NumPy
        return "?"
    found = [f for f in __cpu_dispatch__ if __cpu_features__.get(f)]
    return "+".join(found) if found else "baseline"


# What NumPy must leave out to match each `STRATA_CPU` level.
NUMPY_CAP = {"avx2": "X86_V4 AVX512_ICL AVX512_SPR",
             "portable": "X86_V3 X86_V4 AVX512_ICL AVX512_SPR"}


def run(only: str | None) -> None:
    threads = os.environ.get("RAYON_NUM_THREADS", "?")
    if torch is not None:
        torch.set_num_threads(int(threads) if threads.isdigit() else 1)
    print(
        f"\n## threads = {threads}, strata level {st.cpu_level()}, numpy SIMD {numpy_simd()}  "
        f"({platform.machine()}, numpy {np.__version__}, "
        f"torch {torch.__version__ if torch else 'not installed'})"
    )
    print("times in µs (m: ms); ratios are strata's time over the peer's (< 1: strata faster)")
    print(f"{'case':<44} {'strata':>9} {'numpy':>9} {'torch':>9} {'st/np':>7} {'st/torch':>8}")
    for stem, mod in modules(only):
        print(f"# {stem}")
        for name, s_fn, n_fn, t_fn in mod.cases(np, st, torch):
            ts = best(s_fn)
            tn = best(n_fn) if n_fn is not None else None
            tt = best(t_fn) if (t_fn is not None and torch is not None) else None
            r_np = f"{ts / tn:7.2f}" if tn else f"{'-':>7}"
            r_t = f"{ts / tt:8.2f}" if tt else f"{'-':>8}"
            print(f"{name:<44} {fmt(ts):>9} {fmt(tn):>9} {fmt(tt):>9} {r_np} {r_t}", flush=True)


def main() -> None:
    only = None
    if "--only" in sys.argv:
        only = sys.argv[sys.argv.index("--only") + 1]
    if os.environ.get("RAYON_NUM_THREADS"):
        run(only)
        return
    print(time.strftime("strata compute cases, %Y-%m-%d %H:%M UTC", time.gmtime()))
    print(f"{os.cpu_count()} logical CPUs; {platform.processor() or platform.machine()}")
    for n in ("1", "2"):
        env = dict(os.environ, RAYON_NUM_THREADS=n, OPENBLAS_NUM_THREADS=n, OMP_NUM_THREADS=n,
                   MKL_NUM_THREADS=n)
        cap = NUMPY_CAP.get(os.environ.get("STRATA_CPU", "").strip().lower())
        if cap and "NPY_DISABLE_CPU_FEATURES" not in env:
            env["NPY_DISABLE_CPU_FEATURES"] = cap
        subprocess.run([sys.executable, __file__, *sys.argv[1:]], env=env, check=True)


if __name__ == "__main__":
    main()
