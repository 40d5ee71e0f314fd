"""Shared memory across processes: share_memory_(), multiprocessing Queue/Pipe/Pool under
fork and spawn, identity, zero copy, fd limits, SIGKILL cleanup, pickle protocol 5."""

from __future__ import annotations

import gc
import multiprocessing as mp
import os
import pathlib
import pickle
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import strata as st

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _rss_kb() -> int:
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def _shm_snapshot() -> set[str]:
    return set(os.listdir("/dev/shm"))


# -- workers (module level, so spawn children can import them) ------------------------


def _child_roundtrip(q_in, q_out):
    v, whole, same = q_in.get()
    maps = open("/proc/self/maps").read()
    v.add_(100)  # seen by the parent
    fresh = st.arange(3, dtype=st.int64)  # made here, moved into shm when sent
    q_out.put(
        (
            "memfd:strata" in maps,
            v.shape,
            v.stride(),
            v.storage_offset(),
            v.untyped_storage() == whole.untyped_storage() == same.untyped_storage(),
            v,
            fresh,
        )
    )
    assert q_in.get() == "done"
    q_out.put(fresh.tolist())  # the parent's write to `fresh` shows here


def _pool_double(t):
    t.mul_(2)
    return t


def _pipe_child(conn):
    n, mapped = 0, False
    while True:
        t = conn.recv()
        if t is None:
            break
        n += 1
        mapped = mapped or "memfd:strata" in open("/proc/self/maps").read()
        conn.send(t)  # straight back: a handle again, not bytes
    conn.send((mapped, n))


# -- in-process ------------------------------------------------------------------------


def test_share_memory_moves_in_place_every_view_follows():
    x = st.arange(12, dtype=st.float32).view(3, 4)
    v = x[1:, ::-1]
    assert not x.is_shared()
    x.share_memory_()
    assert x.is_shared() and v.is_shared()
    ptr = x.untyped_storage().data_ptr()
    assert x.share_memory_() is x and x.untyped_storage().data_ptr() == ptr
    v.fill_(-1)
    assert x.tolist()[1:] == [[-1.0] * 4] * 2


def test_share_memory_refused_while_exported():
    x = st.arange(4, dtype=st.float32)
    a = x.numpy()
    with pytest.raises(st.StrataValueError, match="exported raw"):
        x.share_memory_()
    del a
    gc.collect()
    cap = x.__dlpack__()
    with pytest.raises(st.StrataValueError, match="exported raw"):
        x.share_memory_()
    b = np.from_dlpack(x)  # a second export
    del cap, b
    gc.collect()
    x.share_memory_()
    assert x.is_shared()


def test_share_memory_refused_after_array_interface():
    # NumPy keeps an __array_interface__ address with no release call: the storage can
    # never move after one, so share_memory_ refuses instead of leaving the array dangling.
    x = st.arange(4, dtype=st.float32)
    a = np.array(type("Holder", (), {"__array_interface__": x.__array_interface__})(), copy=False)
    assert a.ctypes.data == x.data_ptr()
    with pytest.raises(st.StrataValueError, match="__array_interface__"):
        x.share_memory_()
    a[0] = 7
    assert x.tolist()[0] == 7
    y = st.arange(4, dtype=st.float32)
    y.share_memory_()
    assert y.__array_interface__["data"][0] == y.data_ptr()  # after the move: fine


def test_read_only_stays_read_only():
    a = np.arange(4, dtype=np.float32)
    ro = st.from_numpy(a.tobytes()).view(st.float32)  # immutable bytes: they may move
    # (a NumPy array's memory may not: see test_hostile_sharing.py)
    ro.share_memory_()
    assert ro.is_shared() and ro.is_read_only()  # copied into shm, still read-only
    a2 = np.arange(4, dtype=np.float32)
    u = pickle.loads(mp.reduction.ForkingPickler.dumps(ro))
    assert u.is_read_only() and u.tolist() == a2.tolist()
    with pytest.raises(st.ReadOnlyError):
        u.add_(1)


def test_pickle_copies_and_protocol5_goes_out_of_band():
    t = st.arange(6, dtype=st.float64).view(2, 3)
    for proto in (2, 4):
        u = pickle.loads(pickle.dumps(t, protocol=proto))
        assert u.tolist() == t.tolist() and u.dtype == t.dtype
        assert u.data_ptr() != t.data_ptr() and not u.is_read_only()
    bufs = []
    data = pickle.dumps(t, protocol=5, buffer_callback=bufs.append)
    assert len(bufs) == 1 and len(data) < 200
    u = pickle.loads(data, buffers=bufs)  # over the very bytes: no copy
    assert u.data_ptr() == t.data_ptr()
    ro = pickle.loads(data, buffers=[bytes(bufs[0].raw())])  # Ray hands buffers back read-only
    assert ro.is_read_only() and ro.tolist() == t.tolist()
    with pytest.raises(st.ReadOnlyError):
        ro.add_(1)
    nc = t.T  # not contiguous: in-band copy
    bufs = []
    u = pickle.loads(pickle.dumps(nc, protocol=5, buffer_callback=bufs.append))
    assert not bufs and u.tolist() == nc.tolist()
    odd_ones = (
        st.tensor(3.5),
        st.zeros(0, 3),
        st.zeros(3, 0).T,
        st.ones(2, dtype=st.bfloat16),
        st.tensor([[True, False, True], [False, False, True]]).T,
        st.arange(12, dtype=st.int16).view(3, 4)[::-1, 1::2],
    )
    for odd in odd_ones:
        for proto in (4, 5):  # in-band copy, and out-of-band where contiguous
            u = pickle.loads(pickle.dumps(odd, protocol=proto))
            assert (u.shape, u.dtype, u.tolist()) == (odd.shape, odd.dtype, odd.tolist())


# -- multiprocessing -------------------------------------------------------------------


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_queue_views_identity_and_writes_both_ways(method):
    ctx = mp.get_context(method)
    q_in, q_out = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=_child_roundtrip, args=(q_in, q_out))
    p.start()
    whole = st.arange(24, dtype=st.float32).view(4, 6)
    v = whole[1:, 4:0:-2]  # offset and negative strides
    q_in.put((v, whole, whole[2]))
    has_memfd, shape, stride, offset, one_storage, back, fresh = q_out.get(timeout=60)
    assert has_memfd and one_storage
    assert (shape, stride, offset) == (v.shape, v.stride(), v.storage_offset())
    assert whole[1].tolist() == [6, 7, 108, 9, 110, 11]  # the child's write
    assert back.untyped_storage() == whole.untyped_storage()  # our storage came back
    fresh.fill_(7)
    q_in.put("done")
    assert q_out.get(timeout=60) == [7, 7, 7]  # our write, seen by the child
    p.join(60)
    assert p.exitcode == 0


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_pool_and_pipe(method):
    ctx = mp.get_context(method)
    ts = [st.arange(4, dtype=st.int32) + i for i in range(3)]
    with ctx.Pool(1) as pool:
        out = pool.map(_pool_double, ts)
    for t, o in zip(ts, out):
        assert o.untyped_storage() == t.untyped_storage()
        assert t.tolist() == o.tolist() and t.tolist()[0] % 2 == 0
    a, b = ctx.Pipe()
    p = ctx.Process(target=_pipe_child, args=(b,))
    p.start()
    x = st.ones(5)
    a.send(x[1:4])
    y = a.recv()
    assert y.untyped_storage() == x.untyped_storage() and y.storage_offset() == 1
    a.send(None)
    assert a.recv() == (True, 1)
    p.join(60)


def test_zero_copy_rss_and_flat_fds():
    ctx = mp.get_context("fork")
    a, b = ctx.Pipe()
    p = ctx.Process(target=_pipe_child, args=(b,))
    p.start()
    big = st.zeros(8 << 20, dtype=st.float32).share_memory_()  # 32 MiB
    a.send(big[:1])
    a.recv()
    gc.collect()
    rss0, fds0 = _rss_kb(), _fds()
    for _ in range(5):
        a.send(big)
        assert a.recv().untyped_storage() == big.untyped_storage()
    for i in range(200):
        a.send(st.arange(8 + i, dtype=st.int16))
        del i
        a.recv()
    gc.collect()
    grown = _rss_kb() - rss0
    assert grown < 8 << 10, f"RSS grew by {grown} KiB over 5 sends of 32 MiB"
    assert _fds() <= fds0 + 4, (fds0, _fds())
    a.send(None)
    assert a.recv() == (True, 206)
    p.join(60)


_ULIMIT = r"""
import multiprocessing as mp, os, resource
import strata as st
resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))

def produce(q, n, done):
    for i in range(n):
        t = st.full((4,), i, dtype=st.int32)
        q.put(t)
        del t
    q.put(None)
    done.wait()  # a sender must outlive the receipt of what it sent

if __name__ == "__main__":
    ctx = mp.get_context("fork")
    q = ctx.Queue(maxsize=64)
    done = ctx.Event()
    p = ctx.Process(target=produce, args=(q, 10000, done))
    p.start()
    kept, n = [], 0
    while (t := q.get()) is not None:
        assert t.tolist() == [n] * 4, (t.tolist(), n)
        if n % 10 == 0:
            kept.append(t)  # 1000 received storages alive at once
        n += 1
        del t
    done.set()
    p.join()
    assert n == 10000 and p.exitcode == 0
    print("ok", len(os.listdir("/proc/self/fd")), len(kept))
"""


def test_ten_thousand_sends_under_ulimit_256(tmp_path):
    script = tmp_path / "ulimit.py"
    script.write_text(_ULIMIT)
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.startswith("ok"), r.stdout
    assert "Too many open files" not in r.stderr


_KILL = r"""
import multiprocessing as mp, os, sys, time
import strata as st
import strata.multiprocessing as smp

def child(q, ready):
    smp.set_sharing_strategy("file_system")
    ready.wait(1.5)     # the test kills around here
    t = q.get()
    print("child got", t.tolist(), flush=True)

if __name__ == "__main__":
    smp.set_sharing_strategy(sys.argv[1])
    ctx = mp.get_context("fork")
    q, ready = ctx.Queue(), ctx.Event()
    p = ctx.Process(target=child, args=(q, ready))
    p.start()
    t = st.arange(1000, dtype=st.float32)
    q.put(t[10:20])
    time.sleep(0.3)     # the feeder thread has pickled it: a send name now exists
    print("sent", p.pid, flush=True)
    sys.stdin.readline()  # exit normally when told (unless killed first)
"""


def _dead(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return open(f"/proc/{pid}/stat").read().split()[2] == "Z"


@pytest.mark.parametrize(
    "strategy,victims",
    [
        ("file_system", "parent"),
        ("file_system", "child"),
        ("file_system", "both"),
        ("file_descriptor", "both"),
    ],
)
def test_sigkill_mid_transfer_leaves_dev_shm_as_it_was(tmp_path, strategy, victims):
    before = _shm_snapshot()
    script = tmp_path / "kill.py"
    script.write_text(_KILL)
    proc = subprocess.Popen(
        [sys.executable, str(script), strategy],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    line = proc.stdout.readline().split()
    assert line and line[0] == "sent", line
    child = int(line[1])
    mine = f"strata-{proc.pid}-"
    if strategy == "file_system":
        assert any(n.startswith(mine) for n in _shm_snapshot() - before)
    if victims in ("child", "both"):
        os.kill(child, signal.SIGKILL)
    if victims in ("parent", "both"):
        proc.kill()
    else:
        proc.stdin.write("exit\n")
        proc.stdin.flush()
    proc.wait(30)
    deadline = time.time() + 20
    while not _dead(child) and time.time() < deadline:
        time.sleep(0.05)
    left = _shm_snapshot() - before
    if victims == "child":
        # The parent exited normally: it unlinked its unreceived send name and its base
        # name (step 4 of Note [shared memory lifetime]).
        assert left == set()
    else:
        # Only names of the killed parent remain (the child, if alive, unlinked the send
        # name it opened); a later process sweeps them (step 5): no daemon involved.
        assert all(n.startswith(mine) for n in left), left
        subprocess.run(
            [sys.executable, "-c", "import strata.multiprocessing as m; m.sweep()"], check=True
        )
    assert _shm_snapshot() - before == set()


def test_hogwild_example_runs():
    r = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "hogwild.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert "loss" in r.stdout and "samples/s" in r.stdout, r.stdout


def test_strategy_names():
    import strata.multiprocessing as smp

    assert smp.get_sharing_strategy() == "file_descriptor"
    assert smp.get_all_sharing_strategies() == {"file_descriptor", "file_system"}
    with pytest.raises(st.StrataValueError):
        smp.set_sharing_strategy("bogus")
    assert smp.get_sharing_strategy() == "file_descriptor"  # unchanged by the refusal
    smp.set_sharing_strategy("file_system")
    try:
        assert smp.get_sharing_strategy() == "file_system"
        t = st.arange(3).share_memory_()
        assert st._strata._shm_info(t)[0] == "named"
        u = pickle.loads(mp.reduction.ForkingPickler.dumps(t))
        assert u.untyped_storage() == t.untyped_storage()
    finally:
        smp.set_sharing_strategy("file_descriptor")
