"""Tensor objects are kept on a free list when freed and handed out again (as CPython
does for floats and tuples), with the type's own deallocator. A reused object must
carry nothing of its previous life: not its values, layout or weak references; subclass
instances never enter the list; the collector still sees every tensor."""

import gc
import threading
import weakref

import numpy as np
import pytest

import strata as st

kept = st._strata._tensors_kept


def test_freed_tensors_are_kept_up_to_a_bound():
    ts = [st.zeros(3) for _ in range(200)]
    before = kept()
    del ts
    after = kept()
    assert after > before
    assert after <= 64


def test_reused_objects_hold_only_their_new_view():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    t = st.from_numpy(a)
    # Fill the list with freed views of other shapes and strides.
    junk = [st.arange(k + 1).flip(0) for k in range(80)]
    del junk
    assert kept() > 0
    for _ in range(3):
        v = t.permute(2, 0, 1)[1:3, ::-1]
        want = a.transpose(2, 0, 1)[1:3, ::-1]
        assert v.shape == want.shape
        assert v.stride() == tuple(s // 4 for s in want.strides)
        assert v.storage_offset() * 4 == (
            want.__array_interface__["data"][0] - a.__array_interface__["data"][0]
        )
        np.testing.assert_array_equal(np.asarray(v), want)
        assert type(v) is st.Tensor
        assert weakref.getweakrefcount(v) == 0
        assert gc.is_tracked(v)
        del v


def test_weak_references_die_with_the_tensor_and_not_after_reuse():
    t = st.rand(4, 4)
    fired = []
    v = t.T
    w = weakref.ref(v, lambda r: fired.append(r))
    assert w() is v
    del v
    assert w() is None and len(fired) == 1
    # The next views may reuse that object: no weak reference comes with them.
    vs = [t.T for _ in range(5)]
    assert all(weakref.getweakrefcount(x) == 0 for x in vs)
    w2 = weakref.ref(vs[0])
    del vs
    assert w2() is None and len(fired) == 1


def test_errors_leave_no_half_built_objects():
    t = st.rand(4, 4)
    for _ in range(100):
        with pytest.raises(IndexError):
            t.T[9]
        with pytest.raises(ValueError):
            t.view(5)
    np.testing.assert_array_equal(np.asarray(t.T[1:3]), np.asarray(t).T[1:3])


class Sub(st.Tensor):
    pass


def test_subclass_instances_are_never_kept():
    s = Sub([1.0, 2.0, 3.0])
    assert type(s) is Sub
    s.note = "attribute"
    assert gc.is_tracked(s)
    w = weakref.ref(s)
    n = kept()
    del s
    assert w() is None
    assert kept() == n
    # A cycle through a subclass instance's dict is collected.
    s = Sub([1.0])
    s.me = s
    w = weakref.ref(s)
    del s
    gc.collect()
    assert w() is None
    # Views of a subclass instance are plain tensors, and may be reused.
    s = Sub([[1.0, 2.0], [3.0, 4.0]])
    v = s.T
    assert type(v) is st.Tensor
    assert v.tolist() == [[1.0, 3.0], [2.0, 4.0]]


def test_cycles_through_numpy_still_collected():
    class Arr(np.ndarray):
        pass

    a = np.arange(6.0).view(Arr)
    t = st.from_numpy(a)
    a.t = t
    w = weakref.ref(a)
    del a, t
    gc.collect()
    assert w() is None


def test_threads_creating_and_dropping_views():
    base = np.arange(64, dtype=np.float64).reshape(8, 8)
    t = st.from_numpy(base)
    errors = []

    def work(k):
        try:
            for i in range(3000):
                r = (i + k) % 7
                v = t.T[r : r + 1]
                if np.asarray(v).tolist() != base.T[r : r + 1].tolist():
                    errors.append((k, i))
                    return
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    assert kept() <= 64
