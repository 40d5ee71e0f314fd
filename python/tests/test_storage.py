"""Storages as Python objects (`strata.UntypedStorage`, `strata.TypedStorage`,
`t.storage()`, `Tensor(storage)`) and the hand-made shared-memory handles, against PyTorch's
behaviour as its storage API has it, with NumPy reading the same bytes as the oracle."""

from __future__ import annotations

import array
import os
import pickle
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import strata as st
import strata.storage as sst


def _bytes_of(t) -> np.ndarray:
    """The whole storage of `t`, read by NumPy through the buffer protocol."""
    u = t.untyped_storage()
    return np.asarray(st.Tensor(u, st.uint8))


# ----- UntypedStorage -----------------------------------------------------------------


def test_construction_and_metadata():
    assert st.UntypedStorage().nbytes() == 0
    u = st.UntypedStorage(10)
    assert (u.nbytes(), u.size(), len(u), u.element_size()) == (10, 10, 10, 1)
    assert u.tolist() == [0] * 10
    assert u.device == "cpu" and not u.is_cuda and not u.is_pinned() and not u.is_shared()
    assert st.UntypedStorage([1, 2, 255]).tolist() == [1, 2, 255]
    with pytest.raises(ValueError, match="non-negative"):
        st.UntypedStorage(-1)
    with pytest.raises(Exception, match="overflow"):
        st.UntypedStorage([1, 256])
    with pytest.raises(ValueError, match="flat sequence"):
        st.UntypedStorage([[1, 2]])


def test_storage_of_a_view_is_the_whole_storage():
    t = st.arange(12, dtype=st.float32).reshape(3, 4)
    v = t[1:, ::2]
    u = v.untyped_storage()
    assert u == t.untyped_storage() and hash(u) == hash(t.untyped_storage())
    assert u.nbytes() == 48
    assert u.data_ptr() == t.data_ptr() == v.data_ptr() - v.storage_offset() * 4
    assert u.tolist(st.float32) == list(map(float, range(12)))


def test_byte_indexing_matches_numpy():
    t = st.arange(6, dtype=st.int32)
    u = t.untyped_storage()
    ref = np.arange(6, dtype=np.int32).view(np.uint8)
    for i in (0, 1, 4, 23, -1, -24):
        assert u[i] == ref[i]
    u[4] = 7
    u[-1] = 1
    ref = ref.copy()
    ref[4] = 7
    ref[-1] = 1
    np.testing.assert_array_equal(_bytes_of(t), ref)
    np.testing.assert_array_equal(np.asarray(t), ref.view(np.int32))
    for bad in (24, -25, 2**63 - 1, -(2**63)):
        with pytest.raises(IndexError, match=f"index {bad} out of range for storage of size 24"):
            u[bad]
        with pytest.raises(IndexError):
            u[bad] = 0
    for bad_value in (256, -1):
        with pytest.raises(OverflowError, match=f"uint8_t without overflow: {bad_value}"):
            u[0] = bad_value
        with pytest.raises(OverflowError, match="overflow"):
            u[0:2] = bad_value
    # Bytes are integers: a float is refused (PyTorch's text), never truncated.
    for bad_value in (1.5, "1", None):
        with pytest.raises(TypeError, match="can only set storage content with a int types, but got"):
            u[0] = bad_value
        with pytest.raises(TypeError, match="can only set storage content"):
            u[0:2] = bad_value
    u[1] = np.uint8(9)
    u[2] = True
    assert (u[1], u[2]) == (9, 1)
    with pytest.raises(NotImplementedError):
        del u[0]


def test_slices_share_the_bytes():
    t = st.arange(8, dtype=st.int16)
    u = t.untyped_storage()
    s = u[4:12]
    assert isinstance(s, st.UntypedStorage)
    assert (s.nbytes(), s.data_ptr()) == (8, u.data_ptr() + 4)
    assert s.tolist() == np.arange(8, dtype=np.int16).view(np.uint8)[4:12].tolist()
    s[0] = 0xFF
    s[1] = 0x7F
    assert t[2].item() == 0x7FFF
    # A slice of a slice, negative bounds, and an empty slice.
    ss = s[-4:]
    assert ss.data_ptr() == u.data_ptr() + 8
    ss[2:4] = 0
    assert t[5].item() == 0
    assert u[5:5].nbytes() == 0 and u[100:].nbytes() == 0
    with pytest.raises(ValueError, match="only a step of 1 is supported"):
        u[::2]
    # Slice assignment fills.
    u[0:4] = 1
    np.testing.assert_array_equal(_bytes_of(t)[:4], [1, 1, 1, 1])


def test_a_slice_pins_its_storage_and_cannot_be_shared_itself():
    t = st.zeros(16)
    s = t.untyped_storage()[8:]
    with pytest.raises(ValueError, match="exported"):
        t.share_memory_()
    with pytest.raises(ValueError, match="slice of another storage"):
        s.share_memory_()
    del s
    t.share_memory_()
    assert t.is_shared()


def test_fill_copy_clone():
    u = st.UntypedStorage(6)
    assert u.fill_(9) is u and u.tolist() == [9] * 6
    with pytest.raises(OverflowError, match="overflow"):
        u.fill_(1000)
    with pytest.raises(TypeError, match="fill_ expects int, but got float"):
        u.fill_(2.5)
    assert u.tolist() == [9] * 6
    src = st.UntypedStorage([1, 2, 3, 4, 5, 6])
    assert u.copy_(src) is u and u.tolist() == [1, 2, 3, 4, 5, 6]
    with pytest.raises(ValueError, match="size mismatch"):
        u.copy_(st.UntypedStorage(5))
    with pytest.raises(TypeError, match="expected a storage"):
        u.copy_([1, 2, 3, 4, 5, 6])
    # Overlapping slices of one storage copy as memmove does.
    ref = np.array([1, 2, 3, 4, 5, 6], dtype=np.uint8)
    ref[0:4] = ref[2:6].copy()
    u[0:4].copy_(u[2:6])
    assert u.tolist() == ref.tolist()
    c = u.clone()
    assert c.tolist() == u.tolist() and c.data_ptr() != u.data_ptr()
    c[0] = 0
    assert u[0] == ref[0]
    assert u.cpu() is u and u.untyped() is u
    with pytest.raises(ValueError, match="not resizable"):
        u.resize_(100)


def test_from_buffer_matches_numpy():
    data = np.arange(6, dtype=np.int32)
    raw = data.tobytes()
    assert st.UntypedStorage.from_buffer(raw).tolist() == list(raw)
    for order, np_order in (("native", "="), ("little", "<"), ("big", ">")):
        u = st.UntypedStorage.from_buffer(raw, order, dtype=st.int32)
        np.testing.assert_array_equal(u.tolist(st.int32), np.frombuffer(raw, dtype=np_order + "i4"))
    u = st.UntypedStorage.from_buffer(raw, "big", count=2, offset=4, dtype=st.int32)
    np.testing.assert_array_equal(u.tolist(st.int32), np.frombuffer(raw, dtype=">i4", count=2, offset=4))
    # Any buffer-protocol exporter, copied (later writes to the source are not seen).
    a = array.array("f", [1.5, 2.5])
    u = st.UntypedStorage.from_buffer(a, dtype=st.float32)
    a[0] = 9.0
    assert u.tolist(st.float32) == [1.5, 2.5]
    ba = bytearray(b"\x01\x02")
    assert st.UntypedStorage.from_buffer(ba).tolist() == [1, 2]
    with pytest.raises(ValueError, match="invalid byte_order 'middle'"):
        st.UntypedStorage.from_buffer(raw, "middle")
    with pytest.raises(ValueError, match=r"offset must be non-negative and no greater than buffer length \(24\)"):
        st.UntypedStorage.from_buffer(raw, offset=25)
    with pytest.raises(ValueError, match="offset must be non-negative"):
        st.UntypedStorage.from_buffer(raw, offset=-1)
    with pytest.raises(ValueError, match=r"buffer size \(23\) must be a multiple of element size \(4\)"):
        st.UntypedStorage.from_buffer(raw, offset=1, dtype=st.int32)
    with pytest.raises(ValueError, match=r"requested buffer length \(7 \* 4 bytes\)"):
        st.UntypedStorage.from_buffer(raw, count=7, dtype=st.int32)
    with pytest.raises(ValueError, match="requested buffer length"):
        st.UntypedStorage.from_buffer(raw, count=2**62, dtype=st.int32)


def test_from_file_shared_and_private(tmp_path):
    p = tmp_path / "bytes.bin"
    p.write_bytes(bytes(range(16)))
    private = st.UntypedStorage.from_file(str(p), False, 16)
    private[0] = 99
    assert p.read_bytes()[0] == 0 and private.tolist() == [99] + list(range(1, 16))
    shared = st.UntypedStorage.from_file(str(p), True, 16)
    assert shared.is_shared()
    shared[1] = 77
    del shared
    assert p.read_bytes()[1] == 77


def test_pickle_copies_the_bytes():
    u = st.UntypedStorage([5, 6, 7])
    r = pickle.loads(pickle.dumps(u))
    assert r.tolist() == [5, 6, 7] and r.data_ptr() != u.data_ptr()
    t = st.tensor([1.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ts = t.storage()
    r = pickle.loads(pickle.dumps(ts))
    assert isinstance(r, st.TypedStorage) and r.dtype == st.float32 and r.tolist() == [1.0, 2.0]


# ----- Tensor(storage) ----------------------------------------------------------------


def test_tensor_over_a_storage_shares_it():
    u = st.UntypedStorage(10)
    x = st.Tensor(u)
    # PyTorch: a float32 tensor of as many whole elements as the bytes hold.
    assert (x.dtype, x.shape, x.data_ptr()) == (st.float32, (2,), u.data_ptr())
    x[1] = 1.0
    assert u.tolist()[4:8] == list(np.float32(1.0).tobytes())
    y = st.Tensor(u, st.int16)
    assert (y.dtype, y.shape) == (st.int16, (5,))
    assert st.Tensor().shape == (0,) and st.Tensor().dtype == st.float32
    with pytest.raises(TypeError, match="positional arguments"):
        st.Tensor(u, st.int16, 3)


# ----- TypedStorage -------------------------------------------------------------------


def test_typed_storage_prints_as_pytorch_does():
    t = st.tensor([[1.0, 4.0], [2.0, 1.0], [3.0, 5.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = t.storage()
    assert str(s) == (
        " 1.0\n 4.0\n 2.0\n 1.0\n 3.0\n 5.0\n"
        "[strata.storage.TypedStorage(dtype=strata.float32, device=cpu) of size 6]"
    )
    assert repr(s) == str(s)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e = st.zeros(0, dtype=st.int64).storage()
    assert str(e) == " \n[strata.storage.TypedStorage(dtype=strata.int64, device=cpu) of size 0]"


def test_storage_warns_once_per_process():
    code = textwrap.dedent(
        """
        import warnings
        import strata as st
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            t = st.ones(3)
            t.storage(); t.storage(); st.TypedStorage(3)
        msgs = [str(x.message) for x in w]
        assert len(msgs) == 1, msgs
        assert msgs[0].startswith("TypedStorage is deprecated"), msgs
        assert w[0].category is UserWarning and w[0].filename == "<string>", w[0].filename
        print("ok")
        """
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


@pytest.fixture
def quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def test_typed_storage_reads_and_writes_elements(quiet):
    t = st.arange(6, dtype=st.float64).reshape(2, 3)
    s = t.t().storage()
    assert (s.dtype, s.size(), len(s), s.nbytes(), s.element_size()) == (st.float64, 6, 6, 48, 8)
    assert s.data_ptr() == t.data_ptr() and s.device == "cpu" and not s.is_pinned()
    assert s.untyped() == t.untyped_storage()
    assert list(s) == s.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    assert s[-1] == 5.0 and s[2] == 2.0
    s[0] = 7.5
    assert t[0, 0].item() == 7.5
    s[1:3] = -1.0
    assert t.tolist() == [[7.5, -1.0, -1.0], [3.0, 4.0, 5.0]]
    with pytest.raises(IndexError, match="index 6 out of range for storage of size 6"):
        s[6]
    with pytest.raises(RuntimeError, match="slices are only supported in UntypedStorage"):
        s[1:2]
    assert s.fill_(2.0) is s and t.tolist() == [[2.0] * 3] * 2
    c = s.clone()
    c[0] = 0.0
    assert s[0] == 2.0
    # A typed copy between dtypes converts values.
    i = st.TypedStorage([1, 2, 3, 4, 5, 6], dtype=st.int32)
    s.copy_(i)
    assert t.tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    with pytest.raises(ValueError, match="size mismatch"):
        s.copy_(st.TypedStorage([1, 2], dtype=st.int32))


def test_typed_storage_construction(quiet):
    s = st.TypedStorage(4, dtype=st.int16)
    assert s.tolist() == [0, 0, 0, 0] and s.nbytes() == 8
    assert st.TypedStorage().size() == 0 and st.TypedStorage().dtype == st.float32
    assert st.Storage is st.TypedStorage
    u = st.UntypedStorage(8)
    w = st.TypedStorage(wrap_storage=u, dtype=st.int32)
    assert w.untyped() is u and w.size() == 2
    x = st.Tensor(w)
    assert (x.dtype, x.shape, x.data_ptr()) == (st.int32, (2,), u.data_ptr())
    with pytest.raises(TypeError, match="cannot make a tensor of"):
        st.Tensor(w, st.float32)
    with pytest.raises(TypeError, match="UntypedStorage"):
        st.TypedStorage(wrap_storage=[1, 2])
    with pytest.raises(ValueError, match="non-negative"):
        st.TypedStorage(-1)
    b = st.TypedStorage.from_buffer(np.arange(3, dtype=">f4").tobytes(), "big", dtype=st.float32)
    assert b.tolist() == [0.0, 1.0, 2.0]


def test_tensor_from_storage_then_view_as_the_seed_does(quiet):
    # torch.Tensor(storage).view((5, 5)) over a typed storage of 25 floats.
    t = st.ones(5, 5)
    s = t.storage()
    x = st.Tensor(s).view((5, 5))
    assert x.data_ptr() == t.data_ptr() and x.tolist() == t.tolist()


# ----- hand-made handles --------------------------------------------------------------

_CHILD = textwrap.dedent(
    """
    import sys, warnings
    warnings.simplefilter("ignore")
    import strata as st
    how, *args = sys.argv[1:]
    if how == "text":
        u = st.UntypedStorage.from_shared_filename(args[0])
        x = st.Tensor(u).view((5, 5))
    elif how == "tuple":
        manager, name, size = args
        s = st.Storage._new_shared_filename(manager.encode(), name.encode(), int(size))
        x = st.Tensor(s).view((5, 5))
    elif how == "fd":
        import os
        fd, n = int(args[0]), int(args[1])
        u = st.UntypedStorage.from_shared_fd(fd, n)
        os.close(fd)  # strata keeps its own duplicate
        x = st.Tensor(u).view((5, 5))
    print(x.sum().item(), flush=True)
    x[0, 0] = 7.0
    """
)


def _child(*args, pass_fds=()):
    return subprocess.run(
        [sys.executable, "-c", _CHILD, *map(str, args)],
        capture_output=True, text=True, timeout=120, pass_fds=pass_fds,
    )


def test_named_handle_as_text_reaches_another_process():
    t = st.ones(5, 5)
    h = t.untyped_storage().share_filename()
    assert isinstance(h, str) and h.count(":") == 2 and h.endswith(":100")
    assert t.is_shared()
    r = _child("text", h)
    assert r.returncode == 0, r.stderr
    assert float(r.stdout) == 25.0
    assert t[0, 0].item() == 7.0  # the child's write
    # A handle is for one receiver: the name is gone once opened.
    r = _child("text", h)
    assert r.returncode != 0 and "shm_open" in r.stderr


def test_seed_004_tuple_handle(quiet):
    # Process A: the storage moves into a named segment (whatever the strategy).
    t = st.ones(5, 5)
    manager, name, size = t.storage()._share_filename_()
    assert isinstance(manager, bytes) and isinstance(name, bytes) and size == 25
    r = _child("tuple", manager.decode(), name.decode(), size)
    assert r.returncode == 0, r.stderr
    assert float(r.stdout) == 25.0 and t[0, 0].item() == 7.0


def test_fd_handle_reaches_another_process():
    t = st.ones(5, 5)
    fd, n = t.untyped_storage().share_fd()
    try:
        assert n == 100 and t.is_shared()
        r = _child("fd", fd, n, pass_fds=(fd,))
    finally:
        os.close(fd)
    assert r.returncode == 0, r.stderr
    assert float(r.stdout) == 25.0 and t[0, 0].item() == 7.0
    # PyTorch's spellings give the same kind of handle.
    fd2, n2 = t.untyped_storage()._share_fd_cpu_()
    try:
        again = st.UntypedStorage._new_shared_fd_cpu(fd2, n2)
        assert again.data_ptr() == t.data_ptr()  # this process already maps it
    finally:
        os.close(fd2)


def test_bad_handles_are_refused_clearly():
    t = st.ones(4)
    fd, n = t.untyped_storage().share_fd()
    os.close(fd)
    with pytest.raises(st.ResourceError, match="duplicating the handle's fd"):
        st.UntypedStorage.from_shared_fd(fd, n)  # closed
    with pytest.raises(ValueError, match="bad fd -1"):
        st.UntypedStorage.from_shared_fd(-1, n)
    with pytest.raises(ValueError, match="non-negative"):
        st.UntypedStorage.from_shared_fd(0, -5)
    fd, n = t.untyped_storage().share_fd()
    try:
        with pytest.raises(st.FormatError, match="claims 17 bytes but its shared-memory file holds 16"):
            st.UntypedStorage.from_shared_fd(fd, 17)
    finally:
        os.close(fd)
    # An fd that is not a sealed memfd (a plain file) is refused.
    with open(__file__, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        with pytest.raises(st.FormatError, match="not a memfd"):
            st.UntypedStorage.from_shared_fd(f.fileno(), size)
    # Text handles: malformed, not strata's, a wrong size, stale.
    for text in ("", "nonsense", "strata-1-2-3:strata-1-2-4", "/etc/passwd:strata-1:4", "strata-1:strata-2:x"):
        with pytest.raises(st.FormatError):
            st.UntypedStorage.from_shared_filename(text)
    named = st.zeros(4)
    h = named.untyped_storage().share_filename()
    send, base, _ = h.split(":")
    with pytest.raises(st.FormatError, match="claims 15 bytes but its shared-memory file holds 16"):
        st.UntypedStorage.from_shared_filename(f"{send}:{base}:15")
    with pytest.raises(st.ResourceError, match="shm_open"):
        st.UntypedStorage.from_shared_filename(h)  # consumed by the failed open above
    with pytest.raises(st.ResourceError, match="shm_open"):
        st.UntypedStorage.from_shared_filename(f"strata-{2**22 + 7}-0-dead:{base}:16")
    # The two kinds do not mix.
    with pytest.raises(ValueError, match="memfd"):
        t.untyped_storage().share_filename()
    with pytest.raises(ValueError, match="not in a memfd"):
        named.untyped_storage().share_fd()


def test_handle_from_an_exited_process_is_stale():
    code = "import strata as st; print(st.ones(3).untyped_storage().share_filename())"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    with pytest.raises(st.ResourceError, match="shm_open"):
        st.UntypedStorage.from_shared_filename(r.stdout.strip())


_MP_CHILD = textwrap.dedent(
    """
    import warnings
    warnings.simplefilter("ignore")
    import strata as st
    import strata.multiprocessing as mp

    def worker(q, done):
        u = q.get()
        s = q.get()
        u[0] = 7        # a byte of the parent's first element
        s[1] = 2.5      # the parent's second element
        done.put((u.nbytes(), type(s).__name__, str(s.dtype)))

    if __name__ == "__main__":
        ctx = mp.get_context("spawn")
        t = st.zeros(4)
        q, done = ctx.Queue(), ctx.Queue()
        p = ctx.Process(target=worker, args=(q, done))
        p.start()
        q.put(t.untyped_storage())
        q.put(t.storage())
        print(done.get(timeout=60))
        p.join(60)
        print(t.untyped_storage()[0], t[1].item(), t.is_shared())
    """
)


def test_storages_travel_through_multiprocessing_as_shared_memory(tmp_path):
    # A storage pickles as the byte tensor over it, which strata.multiprocessing sends as
    # a handle: the child's writes reach the parent (plain pickle copies, tested above).
    script = tmp_path / "mp_storage.py"
    script.write_text(_MP_CHILD)
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    assert lines == ["(16, 'TypedStorage', 'strata.float32')", "7 2.5 True"], r.stdout


def test_remaining_bad_inputs_are_clear_errors(tmp_path, quiet):
    with pytest.raises(TypeError, match="at most one positional argument"):
        st.TypedStorage(1, 2)
    with pytest.raises(TypeError, match="no positional arguments"):
        st.TypedStorage(3, wrap_storage=st.UntypedStorage(4))
    with pytest.raises(ValueError, match="device=cuda but the storage is on cpu"):
        st.TypedStorage(wrap_storage=st.UntypedStorage(4), device="cuda")
    with pytest.raises(ValueError, match="flat sequence"):
        st.TypedStorage([[1, 2]])
    with pytest.raises(OSError):
        st.UntypedStorage.from_file(str(tmp_path / "missing.bin"), False, 4)
    with pytest.raises(TypeError, match="expected a storage"):
        st.UntypedStorage(4).copy_(st.zeros(4))
    # A typed storage over bytes that are not a whole number of elements: the whole ones.
    odd = st.TypedStorage(wrap_storage=st.UntypedStorage(10), dtype=st.int32)
    assert (odd.size(), len(odd.tolist())) == (2, 2)
    assert st.Tensor(st.UntypedStorage(10)).shape == (2,)
