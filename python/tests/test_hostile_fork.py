"""Hostile: a fork()ed child must work after the parent started strata's thread pool.

Before the fix, any reduction, matmul or cumsum in the parent started rayon's global pool,
and a fork()ed child (os.fork, multiprocessing with the 'fork' start method, a Pool, a data
loader) blocked for ever on its first large parallel op: the pool's workers do not exist
in the child. Each scenario runs in a child interpreter (``assert_clean``) with a timeout,
so a hang fails the test instead of stalling the run. Values are checked against NumPy.
"""

from __future__ import annotations

import sys

import pytest

from _isolated import assert_clean

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="fork() is POSIX")

# Hangs show up as a timeout; the work itself takes a second or two in a debug build.
TIMEOUT = 90

# Shared prologue: start the pool in the parent with large ops (and small ones), and a
# `work()` that every child runs: large reductions, a scan, matmuls, elementwise ops and
# arg-reductions, each compared with NumPy. It returns the number of checks made.
PROLOGUE = r"""
import os, sys
import numpy as np
import strata as st

rng = np.random.default_rng(7)
A = rng.standard_normal((640, 512)).astype(np.float32)    # 327K elements: parallel
B = rng.standard_normal((512, 128)).astype(np.float32)
S = rng.standard_normal(10).astype(np.float32)              # small: serial

def start_pool():
    a, b, s = st.from_numpy(A), st.from_numpy(B), st.from_numpy(S)
    assert np.isclose(float(a.sum()), A.sum(dtype=np.float64), rtol=1e-4, atol=1e-2)
    assert np.allclose(np.asarray(a @ b), A @ B, rtol=1e-3, atol=1e-3)
    assert np.allclose(np.asarray(a.cumsum(0)), np.cumsum(A, 0), rtol=1e-3, atol=1e-3)
    float(s.sum()); s.cumsum(0); (s.view(2, 5) @ s.view(5, 2))

def work(seed=0):
    r = np.random.default_rng(seed)
    # Each op is past its parallel threshold (262144 elements for memory-bound ops,
    # 32768 for transcendental ones, 64³ multiply-adds for a matrix product).
    x = r.standard_normal((640, 512)).astype(np.float32)
    y = r.standard_normal((512, 96)).astype(np.float32)
    t, u = st.from_numpy(x), st.from_numpy(y)
    checks = 0
    def close(got, want, rtol=1e-3, atol=1e-3):
        nonlocal checks
        got = np.asarray(got)
        assert got.shape == np.shape(want), (got.shape, np.shape(want))
        assert np.allclose(got, want, rtol=rtol, atol=atol), (got, want)
        checks += 1
    close(float(t.sum()), x.sum(dtype=np.float64), rtol=1e-4, atol=1e-2)
    close(t.sum(0), x.sum(0))
    close(t.sum(1), x.sum(1))
    close(t.T.sum(1), x.T.sum(1))
    close(t.mean(), x.mean(dtype=np.float64), atol=1e-5)
    close(t.amax(0), x.max(0))
    close(t.argmax(1), x.argmax(1))
    close(t.cumsum(0), np.cumsum(x, 0), atol=1e-2)
    close(t.cumsum(1), np.cumsum(x, 1), atol=1e-2)
    close(t @ u, x @ y, atol=1e-2)
    close(st.bmm(t[:256].view(4, 64, 512), u.view(1, 512, 96).expand(4, 512, 96)),
          x[:256].reshape(4, 64, 512) @ y, atol=1e-2)
    close(t + 1, x + 1)
    close(t * t, x * x)
    close(t.T.contiguous(), np.ascontiguousarray(x.T))
    close(st.exp(t[:, :100]), np.exp(x[:, :100]), rtol=1e-4)
    close(t.flip(0).contiguous(), x[::-1])
    big = st.ones(300_000)
    big.add_(2)
    close(big.sum(), 900_000.0)
    return checks

# Runs fn() in a fork()ed child and asserts that it passed (exit 0; on an exception the
# child prints the traceback and exits 3). The child prints with flush=True: it leaves
# through os._exit, which does not flush.
def in_fork(fn):
    pid = os.fork()
    if pid == 0:
        try:
            fn()
            os._exit(0)
        except BaseException:
            import traceback; traceback.print_exc()
            os._exit(3)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, status
"""


def run(body: str) -> str:
    r = assert_clean(PROLOGUE + body, timeout=TIMEOUT)
    return r.stdout


def test_os_fork_child_runs_large_ops_after_the_pool_started():
    out = run(
        r"""
start_pool()
in_fork(lambda: print("child checks", work(1), flush=True))
# The parent's pool still works after the fork.
print("parent checks", work(2))
"""
    )
    assert "child checks 17" in out
    assert "parent checks 17" in out


def test_grandchild_of_a_fork_gets_its_own_pool():
    """A child that went parallel (so built its own pool) forks again: the grandchild's
    copy of that pool is dead too."""
    out = run(
        r"""
start_pool()
def child():
    work(1)
    in_fork(lambda: print("grandchild checks", work(3), flush=True))
in_fork(child)
"""
    )
    assert "grandchild checks 17" in out


def test_multiprocessing_fork_process_and_pool():
    out = run(
        r"""
import multiprocessing as mp

def target(q, seed):
    try:
        q.put(("ok", work(seed)))
    except BaseException as e:
        q.put(("err", repr(e)))

def task(seed):
    r = np.random.default_rng(seed)
    x = r.standard_normal((600, 500)).astype(np.float32)
    t = st.from_numpy(x)
    return (float(t.sum()), float(x.sum(dtype=np.float64)),
            np.asarray(t @ t.T).tolist()[0][:3], (x @ x.T)[0, :3].tolist(),
            np.asarray(t.cumsum(1))[:, -1].tolist(), np.cumsum(x, 1)[:, -1].tolist())

if __name__ == "__main__":
    start_pool()
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    procs = [ctx.Process(target=target, args=(q, s)) for s in (1, 2)]
    for p in procs:
        p.start()
    res = [q.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(60)
        assert p.exitcode == 0, p.exitcode
    assert all(r == ("ok", 17) for r in res), res
    with ctx.Pool(2) as pool:
        for s, sn, row, rown, last, lastn in pool.map(task, range(3)):
            assert np.isclose(s, sn, rtol=1e-4, atol=1e-2), (s, sn)
            assert np.allclose(row, rown, rtol=1e-3, atol=1e-2)
            assert np.allclose(last, lastn, rtol=1e-3, atol=1e-2)
    print("done")
"""
    )
    assert "done" in out


def test_fork_before_any_parallel_op_and_with_only_small_ops():
    """The pool never started (or only small, serial ops ran) in the parent: the child
    still works."""
    out = run(
        r"""
s = st.from_numpy(S)
float(s.sum()); s.cumsum(0)
in_fork(lambda: print("child checks", work(5), flush=True))
"""
    )
    assert "child checks 17" in out


def test_fork_while_other_threads_run_ops():
    """Threads busy with large ops (and the block cache) while the main thread forks:
    the child must still allocate and compute (the cache's lock is not left held), and
    use the tensors those threads had borrowed (their borrows died with them)."""
    out = run(
        r"""
import threading
start_pool()
stop = threading.Event()
X, XB = st.from_numpy(A.copy()), st.from_numpy(B)
def busy():
    # Shared and exclusive borrows of X are held most of the time: a fork then copies
    # counts that name threads the child does not have.
    while not stop.is_set():
        X.mul_(1.0)
        (X + 1).sum()
        (X @ XB).sum()
threads = [threading.Thread(target=busy) for _ in range(2)]
for t in threads:
    t.start()
try:
    def child():
        x = st.ones(1 << 20)           # 4 MiB: a block cache allocation
        assert float((x * 2).sum()) == 2 * (1 << 20)
        X.add_(0.0)                    # waited for ever on a stale borrow before the fix
        assert np.allclose(np.asarray(X), A)
        a, b = st.from_numpy(A), st.from_numpy(B)
        assert np.allclose(np.asarray(a @ b), A @ B, rtol=1e-3, atol=1e-3)
        assert np.allclose(np.asarray(a.cumsum(0)), np.cumsum(A, 0), atol=1e-2)
    for k in range(3):
        in_fork(child)
finally:
    stop.set()
    for t in threads:
        t.join()
print("forks ok")
""",
    )
    assert "forks ok" in out
