"""Autograd benchmarks: the per-op overhead of recording and backward from Python, and one
training step of an MLP, against PyTorch on the same data and thread count when it is
installed (skipped otherwise) and a hand-written NumPy MLP step (the same arithmetic, no
graph) as the same-run baseline.

    python python/bench/bench_autograd.py            # one thread
    RAYON_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 python python/bench/bench_autograd.py
"""

from __future__ import annotations

import os
import time

import numpy as np

import strata as st
import strata.nn as nn
import strata.nn.functional as F
import strata.optim as optim

try:
    import torch
except ImportError:
    torch = None


def best(fn, reps: int, rounds: int = 7) -> float:
    """Best of ``rounds`` mean times of ``reps`` calls, in seconds."""
    fn()
    out = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        out.append((time.perf_counter() - t0) / reps)
    return min(out)


CHAIN = 20  # ops per chain: 10 × (mul by a scalar, sin)


def chain_strata(x):
    y = x
    for _ in range(CHAIN // 2):
        y = (y * 1.01).sin()
    y.sum().backward()


def chain_torch(x):
    y = x
    for _ in range(CHAIN // 2):
        y = (y * 1.01).sin()
    y.sum().backward()


def chain_forward_strata(x):
    y = x
    for _ in range(CHAIN // 2):
        y = (y * 1.01).sin()
    y.sum()


def mlp_numpy_step(w1, b1, w2, b2, x, onehot, lr):
    h = x @ w1.T + b1
    r = np.maximum(h, 0)
    z = r @ w2.T + b2
    z = z - z.max(1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(1, keepdims=True)
    g = (p - onehot) / x.shape[0]
    gw2 = g.T @ r
    gb2 = g.sum(0)
    gr = g @ w2
    gh = gr * (h > 0)
    gw1 = gh.T @ x
    gb1 = gh.sum(0)
    w1 -= lr * gw1
    b1 -= lr * gb1
    w2 -= lr * gw2
    b2 -= lr * gb2


def main() -> None:
    threads = os.environ.get("RAYON_NUM_THREADS", "all")
    if torch is not None and threads != "all":
        torch.set_num_threads(int(threads))
    print(f"threads {threads}; torch {'%s' % torch.__version__ if torch else 'not installed'}")
    print(f"{'case':44} {'strata':>12} {'torch':>12} {'numpy':>12}  strata/torch strata/numpy")

    # Per-op autograd overhead: a chain of small ops, forward + backward.
    a = np.linspace(-1, 1, 100, dtype=np.float32)
    xs = st.tensor(a, requires_grad=True)
    t_chain = best(lambda: chain_strata(xs), 200) / CHAIN
    t_fwd = best(lambda: chain_forward_strata(st.tensor(a)), 200) / CHAIN
    tt = None
    if torch is not None:
        xt = torch.tensor(a, requires_grad=True)
        tt = best(lambda: chain_torch(xt), 200) / CHAIN
    row("per op, forward+backward (100 f32)", t_chain, tt, None)
    row("per op, forward only, no grad (100 f32)", t_fwd, None, None)

    # One training step of an MLP 784-256-10, batch 64.
    rng = np.random.default_rng(0)
    xb = rng.standard_normal((64, 784)).astype(np.float32)
    yb = rng.integers(0, 10, 64)
    st.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
    opt = optim.SGD(model.parameters(), lr=0.01)
    x, y = st.tensor(xb), st.tensor(yb)

    def step_strata():
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()

    t_st = best(step_strata, 20)
    t_to = None
    if torch is not None:
        tm = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
        topt = torch.optim.SGD(tm.parameters(), lr=0.01)
        xtb, ytb = torch.from_numpy(xb), torch.from_numpy(yb)

        def step_torch():
            topt.zero_grad()
            torch.nn.functional.cross_entropy(tm(xtb), ytb).backward()
            topt.step()

        t_to = best(step_torch, 20)
    w1 = rng.standard_normal((256, 784)).astype(np.float32) * 0.03
    b1 = np.zeros(256, np.float32)
    w2 = rng.standard_normal((10, 256)).astype(np.float32) * 0.06
    b2 = np.zeros(10, np.float32)
    onehot = np.eye(10, dtype=np.float32)[yb]
    t_np = best(lambda: mlp_numpy_step(w1, b1, w2, b2, xb, onehot, 0.01), 20)
    row("MLP 784-256-10 train step (batch 64, f32)", t_st, t_to, t_np)


def row(name, s, t, n):
    def fmt(v):
        return f"{v * 1e6:10.2f}us" if v is not None else f"{'-':>12}"

    rt = f"{s / t:12.2f}" if t else f"{'-':>12}"
    rn = f"{s / n:12.2f}" if n else f"{'-':>12}"
    print(f"{name:44} {fmt(s)} {fmt(t)} {fmt(n)}  {rt} {rn}")


if __name__ == "__main__":
    main()
