"""Hogwild!: lock-free parallel SGD on parameters in shared memory.

N worker processes train a logistic regression on synthetic sparse data. The data and the
weights are moved into shared memory once (``share_memory_()``) and handed to the workers
as handles (no bytes copied); every worker reads minibatches and updates the shared
weights in place without locks (``w.sub_(lr * grad)``), its own state (RNG, minibatch
order, gradients) staying local. After ``join`` the parent evaluates the shared model.

    python examples/hogwild.py                 # 1 process, then 2 (Hogwild)
    python examples/hogwild.py --quick         # tiny settings (the test suite runs this)
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import random
import time

import strata as st


def make_data(n: int, d: int, density: float, seed: int):
    st.manual_seed(seed)
    x = (st.rand(n, d) < density).float() * st.randn(n, d)  # mostly zeros: sparse rows
    w_true = st.randn(d, 1)
    y = (st.sigmoid(x @ w_true) > st.rand(n, 1)).float()
    return x, y


def loss(x, y, w) -> float:
    p = st.sigmoid(x @ w).clamp(1e-7, 1 - 1e-7)
    return float((-(y * p.log() + (1 - y) * (1 - p).log())).mean())


def train(x, y, w, rank: int, nproc: int, epochs: int, lr: float, batch: int, start, times):
    # Everything here but `w` (and the read-only data) is local to this process.
    rng = random.Random(rank)
    n = x.shape[0] // nproc
    shard_x, shard_y = x[rank * n : (rank + 1) * n], y[rank * n : (rank + 1) * n]
    starts = list(range(0, n - batch + 1, batch))
    start.wait()
    t0 = time.perf_counter()
    for _ in range(epochs):
        rng.shuffle(starts)
        for s in starts:
            xb, yb = shard_x[s : s + batch], shard_y[s : s + batch]  # views, no copy
            grad = xb.T @ (st.sigmoid(xb @ w) - yb)
            w.sub_(grad * (lr / batch))  # lock-free update of the shared weights
    times.put((time.perf_counter() - t0, len(starts) * batch * epochs))


def run(nproc: int, x, y, args, ctx):
    w = st.zeros(x.shape[1], 1).share_memory_()
    start, times = ctx.Barrier(nproc), ctx.Queue()
    ps = [
        ctx.Process(target=train, args=(x, y, w, r, nproc, args.epochs, args.lr, args.batch, start, times))
        for r in range(nproc)
    ]
    for p in ps:
        p.start()
    results = [times.get() for _ in ps]
    for p in ps:
        p.join()
        assert p.exitcode == 0
    secs = max(t for t, _ in results)
    samples = sum(k for _, k in results)
    return loss(x, y, w), samples / secs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=40000)
    ap.add_argument("--features", type=int, default=256)
    ap.add_argument("--density", type=float, default=0.05)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=0.5)
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--start-method", default="fork", choices=mp.get_all_start_methods())
    ap.add_argument("--quick", action="store_true", help="tiny settings, for tests")
    args = ap.parse_args()
    if args.quick:
        args.samples, args.features, args.epochs = 2000, 32, 1
    ctx = mp.get_context(args.start_method)
    x, y = make_data(args.samples, args.features, args.density, seed=0)
    x.share_memory_()  # the data too: workers map it, nobody copies it
    y.share_memory_()
    print(f"{args.samples} samples x {args.features} features ({args.density:.0%} non-zero), "
          f"{args.epochs} epoch(s), batch {args.batch}, start method {args.start_method}")
    print(f"initial loss {loss(x, y, st.zeros(args.features, 1)):.4f}")
    loss1, rate1 = run(1, x, y, args, ctx)
    print(f"1 process:   loss {loss1:.4f}   {rate1:12,.0f} samples/s")
    lossn, raten = run(args.procs, x, y, args, ctx)
    print(f"{args.procs} processes: loss {lossn:.4f}   {raten:12,.0f} samples/s "
          f"(x{raten / rate1:.2f}; Hogwild, no locks)")


if __name__ == "__main__":
    main()
