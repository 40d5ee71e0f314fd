"""PyTorch's module-level spellings that the design write-ups use: ``strata.multiprocessing``
as a drop-in for ``multiprocessing`` (with ``spawn`` / ``start_processes``),
``strata.utils.dlpack`` and ``tensor.layout`` / ``strata.strided``."""

from __future__ import annotations

import multiprocessing as mp
import os
import pickle
import signal
import time

import numpy as np
import pytest

import strata as st
import strata.multiprocessing as smp

# -- workers (module level, so spawn children can import them) ------------------------


def _fill_row(i, t, value):
    # Each process writes its own row of a tensor that arrived as shared memory.
    t[i] = value + i


def _raise_in_one(i, bad):
    if i == bad:
        raise ValueError(f"process {i} refuses")
    time.sleep(30)  # the others would run long: they must be terminated


def _exit_with(i, code):
    if i == 1:
        os._exit(code)
    time.sleep(30)


def _kill_self(i):
    os.kill(os.getpid(), signal.SIGKILL)


def _quick(i):
    pass


# -- multiprocessing drop-in ----------------------------------------------------------


def test_every_multiprocessing_name_is_the_same_object():
    for name in mp.__all__:
        assert getattr(smp, name) is getattr(mp, name), name
        assert name in smp.__all__
    for name in ("get_sharing_strategy", "set_sharing_strategy", "spawn", "start_processes",
                 "ProcessContext", "ProcessRaisedException", "ProcessExitedException"):
        assert name in smp.__all__ and hasattr(smp, name)
    # The drop-in's Queue still sends tensors as shared memory (the reducer is there).
    ctx = smp.get_context("fork")
    q = ctx.SimpleQueue()
    t = st.zeros(3)
    q.put(t)
    u = q.get()
    assert u.untyped_storage() == t.untyped_storage()


@pytest.mark.parametrize("method", ["spawn", "fork"])
def test_processes_write_a_shared_tensor(method):
    t = st.zeros(3, 4, dtype=st.float64)
    if method == "fork":
        # A fork child inherits its arguments without pickling: only memory shared
        # before the fork is seen by both (PyTorch's rule too).
        t.share_memory_()
    run = smp.spawn if method == "spawn" else smp.start_processes
    kwargs = {} if method == "spawn" else {"start_method": method}
    assert run(_fill_row, args=(t, 10.0), nprocs=3, **kwargs) is None
    want = np.repeat(np.array([[10.0], [11.0], [12.0]]), 4, axis=1)
    np.testing.assert_array_equal(t.numpy(), want)


def test_a_raising_process_fails_the_whole_group_with_its_traceback():
    t0 = time.monotonic()
    with pytest.raises(smp.ProcessRaisedException) as e:
        smp.start_processes(_raise_in_one, args=(1,), nprocs=3, start_method="fork")
    assert time.monotonic() - t0 < 20  # the sleeping processes were terminated
    assert e.value.error_index == 1
    assert isinstance(e.value.pid, int) and e.value.pid > 0
    assert "ValueError: process 1 refuses" in str(e.value)
    assert "Traceback" in str(e.value)
    # The exception pickles (a caller may send it on).
    again = pickle.loads(pickle.dumps(e.value))
    assert (type(again), again.error_index, again.pid) == (
        smp.ProcessRaisedException, 1, e.value.pid)


def test_an_exit_code_and_a_signal_are_reported():
    with pytest.raises(smp.ProcessExitedException) as e:
        smp.start_processes(_exit_with, args=(3,), nprocs=2, start_method="fork")
    assert (e.value.error_index, e.value.exit_code, e.value.signal_name) == (1, 3, None)
    assert "exit code 3" in str(e.value)
    with pytest.raises(smp.ProcessExitedException) as e:
        smp.start_processes(_kill_self, nprocs=1, start_method="fork")
    assert (e.value.exit_code, e.value.signal_name) == (-signal.SIGKILL, "SIGKILL")
    assert "SIGKILL" in str(e.value)


def test_join_false_returns_a_context_to_join():
    ctx = smp.start_processes(_quick, nprocs=2, join=False, start_method="fork")
    assert isinstance(ctx, smp.ProcessContext)
    assert len(ctx.pids()) == 2 and all(p > 0 for p in ctx.pids())
    deadline = time.monotonic() + 60
    while not ctx.join(timeout=1.0):
        assert time.monotonic() < deadline
    assert ctx.join() is True  # joined: stays done


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_a_bad_process_count_is_refused(bad):
    with pytest.raises(ValueError, match="nprocs"):
        smp.start_processes(_quick, nprocs=bad)


def test_spawn_with_another_start_method_warns_and_spawns():
    t = st.zeros(1, 2)  # sent to a spawn child, so moved into shared memory
    with pytest.warns(FutureWarning, match="start_processes"):
        smp.spawn(_fill_row, args=(t, 5.0), nprocs=1, start_method="fork")
    assert t.tolist() == [[5.0, 5.0]]


# -- strata.utils.dlpack --------------------------------------------------------------


def test_utils_dlpack_round_trips_without_copies():
    t = st.arange(12, dtype=st.float32).view(3, 4).T  # strided
    cap = st.utils.dlpack.to_dlpack(t)
    assert type(cap).__name__ == "PyCapsule"
    u = st.utils.dlpack.from_dlpack(cap)
    assert (u.data_ptr(), u.shape, u.stride()) == (t.data_ptr(), t.shape, t.stride())
    u[0, 0] = 100.0
    assert float(t[0, 0]) == 100.0
    # NumPy consumes the capsule-producing protocol; strata takes any producer.
    a = np.arange(6.0).reshape(2, 3)[:, ::-1]
    v = st.utils.dlpack.from_dlpack(a)
    assert v.data_ptr() == a.__array_interface__["data"][0]
    np.testing.assert_array_equal(v.numpy(), a)
    np.testing.assert_array_equal(np.from_dlpack(t), t.numpy())


def test_utils_dlpack_bad_input():
    t = st.ones(2)
    cap = st.utils.dlpack.to_dlpack(t)
    st.utils.dlpack.from_dlpack(cap)
    with pytest.raises(ValueError, match="already been consumed"):
        st.utils.dlpack.from_dlpack(cap)
    with pytest.raises(TypeError, match="to_dlpack"):
        st.utils.dlpack.to_dlpack(np.ones(2))
    with pytest.raises(TypeError, match="from_dlpack"):
        st.utils.dlpack.from_dlpack([1, 2])


# -- tensor.layout --------------------------------------------------------------------


def test_every_tensor_is_strided():
    t = st.zeros(2, 3)
    for v in (t, t.T, t[:, ::-1], t.view(-1), st.tensor(1.0)):
        assert v.layout is st.strided
    assert repr(st.strided) == "strata.strided"
    assert st.layout("strided") is st.strided
    assert pickle.loads(pickle.dumps(st.strided)) is st.strided
    assert isinstance(st.strided, st.layout)
    with pytest.raises(ValueError, match="only the strided layout"):
        st.layout("sparse_coo")
