"""Hogwild!: lock-free parallel training of one model in shared memory (PyTorch's
Hogwild example, on strata).

A small MLP's parameters are moved into shared memory with ``model.share_memory()``; N
worker processes (fork or spawn) each train that same model on their share of the
training set with ``optim.SGD`` and ``loss.backward()``, without locks: every
``optimizer.step()`` updates the shared parameters in place, so each worker's updates
reach the others. After ``join`` the parent evaluates the shared model on held-out data.

The data are scikit-learn's bundled handwritten digits (8×8 images, 10 classes, no
download) when scikit-learn is installed, else a generated set of the same shape (ten
random 8×8 prototypes, each sample with 15% of its pixels flipped and noise added).

    python examples/hogwild.py                       # 2 processes, fork
    python examples/hogwild.py --start-method spawn
    python examples/hogwild.py --quick               # tiny settings (the test suite)
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import random
import time

import strata as st
import strata.nn as nn
import strata.nn.functional as F
import strata.optim as optim


class Net(nn.Module):
    def __init__(self, hidden: int = 64):
        super().__init__()
        self.fc1 = nn.Linear(64, hidden)
        self.fc2 = nn.Linear(hidden, 10)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        x = self.drop(F.relu(self.fc1(x)))
        return F.log_softmax(self.fc2(x), dim=1)


def load_data(seed: int = 0):
    """(x_train, y_train, x_test, y_test, source): float32 pixels scaled to [0, 1],
    int64 labels."""
    try:
        from sklearn.datasets import load_digits

        d = load_digits()
        x = st.tensor(d.data, dtype=st.float32) / 16.0
        y = st.tensor(d.target, dtype=st.int64)
        source = "scikit-learn digits"
    except ImportError:
        st.manual_seed(seed)
        n = 1800
        protos = (st.rand(10, 64) > 0.6).float()
        y = st.arange(n) % 10
        # Each sample its class's prototype with some pixels flipped and noise added.
        flips = (st.rand(n, 64) < 0.15).float()
        x = protos[y]
        x = (x + flips * (1 - 2 * x) + 0.35 * st.randn(n, 64)).clamp(0.0, 1.0)
        source = "generated digits (scikit-learn not installed)"
    n = x.shape[0]
    perm = st.tensor(random.Random(seed).sample(range(n), n))
    x, y = x[perm].contiguous(), y[perm].contiguous()
    cut = n * 4 // 5
    return x[:cut], y[:cut], x[cut:], y[cut:], source


def train(rank: int, model: Net, x, y, args, start, done):
    st.manual_seed(1000 + rank)  # each worker its own dropout
    rng = random.Random(1000 + rank)  # and its own order
    opt = optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    shard_x, shard_y = x[rank :: args.procs], y[rank :: args.procs]
    n = shard_x.shape[0]
    start.wait()
    t0 = time.perf_counter()
    model.train()
    for _ in range(args.epochs):
        order = st.tensor(rng.sample(range(n), n))
        for i in range(0, n, args.batch):
            idx = order[i : i + args.batch]
            opt.zero_grad()
            loss = F.nll_loss(model(shard_x[idx]), shard_y[idx])
            loss.backward()
            opt.step()  # updates the shared parameters in place, no lock
    done.put((time.perf_counter() - t0, args.epochs * n))


def evaluate(model: Net, x, y):
    model.eval()
    with st.no_grad():
        out = model(x)
        loss = float(F.nll_loss(out, y))
        acc = float((out.argmax(1) == y).float().mean())
    return loss, acc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--momentum", type=float, default=0.5)
    ap.add_argument("--start-method", default="fork", choices=mp.get_all_start_methods())
    ap.add_argument("--quick", action="store_true", help="tiny settings, for tests")
    args = ap.parse_args()
    if args.quick:
        args.epochs = 2
    ctx = mp.get_context(args.start_method)

    x_train, y_train, x_test, y_test, source = load_data()
    for t in (x_train, y_train):
        t.share_memory_()  # workers map the data too; nobody copies it
    st.manual_seed(0)
    model = Net()
    model.share_memory()  # the parameters every worker updates
    print(f"{source}: {x_train.shape[0]} training and {x_test.shape[0]} test images; "
          f"{args.procs} processes ({args.start_method}), {args.epochs} epochs, batch {args.batch}")
    loss, acc = evaluate(model, x_test, y_test)
    print(f"before: test loss {loss:.4f}, accuracy {acc:.1%}")

    start, done = ctx.Barrier(args.procs), ctx.Queue()
    ps = [ctx.Process(target=train, args=(r, model, x_train, y_train, args, start, done))
          for r in range(args.procs)]
    for p in ps:
        p.start()
    results = [done.get() for _ in ps]
    for p in ps:
        p.join()
        assert p.exitcode == 0, f"worker exited with {p.exitcode}"
    secs = max(t for t, _ in results)
    samples = sum(k for _, k in results)
    loss, acc = evaluate(model, x_test, y_test)
    print(f"after:  test loss {loss:.4f}, accuracy {acc:.1%}   "
          f"({samples / secs:,.0f} samples/s over all workers)")


if __name__ == "__main__":
    main()
