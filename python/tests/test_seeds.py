"""Every example of the design write-ups this project started from (the five "seeds"),
run on strata with strata's names. The expected values are the outputs the write-ups
print from PyTorch (and NumPy); where strata answers differently on purpose, the
translation says why. `python -m strata.seeds_tour` prints the same walk."""

from __future__ import annotations

import ctypes
import math
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import strata as st


@pytest.fixture(autouse=True)
def _quiet_typed_storage():
    # `t.storage()` is PyTorch's deprecated TypedStorage; its warning is tested elsewhere.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        yield


# ----- seed 000: "torch memory" (row- and column-major, strides, print_internal) -------


def print_internal(t):
    """The seed's `print_internal`: the raw storage read back through `frombuffer`."""
    return st.frombuffer(ctypes.string_at(t.data_ptr(), t.storage().nbytes()), dtype=t.dtype)


def test_seed_000_row_and_column_major():
    values = [[0.2949, 0.9608, 0.0965], [0.5463, 0.4176, 0.8146]]
    a = st.tensor(values)
    a_in_row = print_internal(a).tolist()
    assert a_in_row == st.tensor([0.2949, 0.9608, 0.0965, 0.5463, 0.4176, 0.8146]).tolist()
    # Column-major: the transpose of a row-major (3, 2) copy, strides (1, 2).
    col = a.t().contiguous().t()
    assert col.stride() == (1, 2) and col.tolist() == a.tolist()
    a_in_col = print_internal(col).tolist()
    assert a_in_col == st.tensor([0.2949, 0.5463, 0.9608, 0.4176, 0.0965, 0.8146]).tolist()
    for i in range(2):
        for j in range(3):
            assert a[i][j].item() == a_in_row[i * a.shape[1] + j] == a_in_col[j * a.shape[0] + i]


def test_seed_000_stride_formula_and_print_internal():
    t = st.arange(0, 24).reshape(1, 2, 3, 4)
    assert t.tolist() == np.arange(24).reshape(1, 2, 3, 4).tolist()
    assert t.stride() == (24, 12, 4, 1)
    shape = t.shape
    assert t.stride() == tuple(math.prod(shape[k + 1:]) for k in range(len(shape)))
    internal = print_internal(t)
    assert internal.dtype == st.int64 and internal.tolist() == list(range(24))
    # A[i0][i1]... = A_internal[offset + sum(i_k * strides[k])], for views too.
    for v in (t, t[0, 1:, ::2], t.permute(3, 1, 2, 0), t.flip(2)):
        raw = v.untyped_storage().tolist(v.dtype)
        for idx in np.ndindex(*v.shape):
            at = v.storage_offset() + sum(i * s for i, s in zip(idx, v.stride()))
            assert v[idx].item() == raw[at]


def test_frombuffer_shares_and_checks_like_pytorch():
    buf = bytearray(np.arange(6, dtype=np.int32).tobytes())
    t = st.frombuffer(buf, dtype=st.int32)
    assert t.tolist() == list(range(6)) and not t.is_read_only()
    t[0] = 42
    assert np.frombuffer(buf, dtype=np.int32)[0] == 42
    part = st.frombuffer(buf, dtype=st.int32, count=2, offset=8)
    assert part.tolist() == [2, 3] and part.untyped_storage().nbytes() == 8
    assert st.frombuffer(b"\x01\x02", dtype=st.uint8).is_read_only()
    with pytest.raises(ValueError, match="does not implement Python buffer protocol"):
        st.frombuffer([1, 2], dtype=st.uint8)
    with pytest.raises(ValueError, match=r"both buffer length \(0\) and count \(-1\) must not be 0"):
        st.frombuffer(b"", dtype=st.uint8)
    with pytest.raises(ValueError, match=r"offset \(24 bytes\) must be non-negative"):
        st.frombuffer(buf, dtype=st.int32, offset=24)
    with pytest.raises(ValueError, match=r"buffer length \(22 bytes\) after offset \(2 bytes\) must be a multiple of element size \(4\)"):
        st.frombuffer(buf, dtype=st.int32, offset=2)
    with pytest.raises(ValueError, match=r"requested buffer length \(7 \* 4 bytes\)"):
        st.frombuffer(buf, dtype=st.int32, count=7)
    with pytest.raises(ValueError, match="not aligned"):
        st.frombuffer(buf, dtype=st.int32, count=1, offset=2)
    assert st.frombuffer(buf, dtype=st.float32, requires_grad=True).requires_grad


# ----- seed 001: "Tensor storage" (strides, metadata, contiguous, view vs reshape) ------


def test_seed_001_strides_and_metadata():
    a = st.rand(4, 3, 192, 640)
    assert a.stride() == (368640, 122880, 640, 1)
    t = st.ones(2, 3)
    # PyTorch prints torch.Size([2, 3]) and device(type='cpu'); strata gives a tuple and
    # the device's name.
    assert t.shape == (2, 3) and t.dtype == st.float32 and str(t.device) == "cpu"
    assert t.layout is st.strided
    assert isinstance(t.storage(), st.TypedStorage) and t.storage().data_ptr() == t.data_ptr()
    assert t.grad is None and t.requires_grad is False
    # The seed notes `tensor.version` does not exist; the counter is `_version`.
    assert not hasattr(t, "version")
    v = t._version
    t.add_(1)
    assert t._version == v + 1


def test_seed_001_contiguous_view_reshape_permute():
    x = st.arange(24).reshape(2, 3, 4)
    assert x.is_contiguous() and x.view(6, 4).is_contiguous() and x.reshape(4, 6).is_contiguous()
    assert x.view(6, 4).data_ptr() == x.data_ptr()
    p = x.permute(2, 0, 1)
    tr = x.transpose(0, 2)
    assert not p.is_contiguous() and not tr.is_contiguous()
    c = p.contiguous()
    assert c.is_contiguous() and c.data_ptr() != x.data_ptr() and c.tolist() == p.tolist()
    with pytest.raises(ValueError, match=r"view size is not compatible with input tensor's size and stride \(at least one dimension spans across two contiguous subspaces\)\. Use \.reshape\(\.\.\.\) instead\."):
        p.view(-1)
    r = p.reshape(-1)  # copies: the dims cannot be merged
    assert r.data_ptr() != x.data_ptr()
    assert r.tolist() == np.arange(24).reshape(2, 3, 4).transpose(2, 0, 1).reshape(-1).tolist()
    # permute reorders any number of dims; transpose swaps two.
    assert p.shape == (4, 2, 3) and tr.shape == (4, 3, 2)
    assert x.permute(0, 2, 1).tolist() == x.transpose(1, 2).tolist()


# ----- seed 002: "decoupling view from underlying storage" ----------------------------


def print_T(*xs):
    """The seed's `print_T`, for strata tensors and NumPy arrays: the facts it prints."""
    facts = []
    for x in xs:
        if isinstance(x, st.Tensor):
            facts.append((tuple(x.shape), x.storage_offset(), x.stride(), x.storage().data_ptr()))
        else:
            offset = (
                (x.__array_interface__["data"][0] - x.base.__array_interface__["data"][0]) // x.itemsize
                if x.base is not None
                else 0
            )
            facts.append((x.shape, offset, tuple((np.array(x.strides) // 8).tolist()), str(x.dtype)))
    return facts


def test_seed_002_row_major_stride():
    x = st.ones(3, 4, 5, 6)
    ndim = len(x.shape)
    x_stride = [1] * ndim
    for i in reversed(range(0, ndim - 1)):
        x_stride[i] = x_stride[i + 1] * x.shape[i + 1]
    assert x_stride == [120, 30, 6, 1] and x.stride() == (120, 30, 6, 1)


def test_seed_002_zero_copy_slicing_and_broadcast():
    x = st.arange(12).reshape(3, -1)
    (fx, fy) = print_T(x, x[1:2, 1:4])
    assert fx[:3] == ((3, 4), 0, (4, 1))
    assert fy[:3] == ((1, 3), 5, (4, 1)) and fy[3] == fx[3]
    assert x[1:2, 1:4].tolist() == [[5, 6, 7]]
    t = st.arange(24).reshape(2, 3, 4)
    x = st.arange(4)
    b = x.expand_as(t)
    (fx, fb) = print_T(x, b)
    assert fx[:3] == ((4,), 0, (1,))
    assert fb[:3] == ((2, 3, 4), 0, (0, 0, 1)) and fb[3] == fx[3]
    assert b.tolist() == [[[0, 1, 2, 3]] * 3] * 2
    assert st.broadcast_to(x, (2, 3, 4)).stride() == (0, 0, 1)


def test_seed_002_permute_by_as_strided():
    x = st.arange(24).reshape(2, 3, 4)
    perm = [2, 0, 1]
    newshape = (st.Tensor(tuple(x.shape)).int())[perm]
    newstride = (st.Tensor(x.stride()).int())[perm]
    p = x.as_strided(tuple(newshape), tuple(newstride), x.storage_offset())
    assert p.shape == (4, 2, 3) and p.stride() == (1, 12, 4)
    assert p.tolist() == x.permute(*perm).tolist() and p.data_ptr() == x.data_ptr()


def test_seed_002_flipping_with_negative_strides():
    n = np.arange(12).reshape(3, 4)
    facts = print_T(n, np.flip(n, axis=[0]), np.flip(n, axis=[1]))
    assert facts == [((3, 4), 0, (4, 1), "int64"), ((3, 4), 8, (-4, 1), "int64"), ((3, 4), 3, (4, -1), "int64")]
    # The seed's footnote: "numpy supports negative stride while pytorch doesn't" —
    # PyTorch's flip copies. strata flips without copying, as NumPy does: the same
    # offsets and strides over the same storage.
    x = st.arange(12).reshape(3, 4)
    for flipped, offset, stride, ref in (
        (x.flip(0), 8, (-4, 1), np.flip(n, axis=[0])),
        (x.flip(1), 3, (4, -1), np.flip(n, axis=[1])),
        (x[::-1], 8, (-4, 1), n[::-1]),
    ):
        assert (flipped.storage_offset(), flipped.stride()) == (offset, stride)
        assert flipped.untyped_storage() == x.untyped_storage()
        assert flipped.tolist() == ref.tolist()


# ----- seed 003: "storage" (typed storages, offsets, contiguous, NumPy) --------------


def test_seed_003_views_share_a_storage():
    points = st.tensor([[1, 2], [3, 4], [5, 6]], dtype=st.float)
    points2 = points.transpose(0, 1)
    # PyTorch 2 prints "[torch.storage.TypedStorage(dtype=torch.float32, device=cpu) of
    # size 6]" (the seed's older PyTorch printed "[torch.FloatStorage of size 6]").
    footer = "[strata.storage.TypedStorage(dtype=strata.float32, device=cpu) of size 6]"
    assert str(points.storage()) == " 1.0\n 2.0\n 3.0\n 4.0\n 5.0\n 6.0\n" + footer
    assert str(points2.storage()) == str(points.storage())
    points.zero_()
    assert str(points2.storage()) == " 0.0\n 0.0\n 0.0\n 0.0\n 0.0\n 0.0\n" + footer
    assert points2.tolist() == [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
    assert points.storage().data_ptr() == points2.storage().data_ptr()


def test_seed_003_offsets_and_reconstruction():
    points = st.tensor([[0, 1, 2], [3, 4, 5], [6, 7, 8]], dtype=st.float)
    points2 = points[1:3, 1:3]
    assert points2.tolist() == [[4.0, 5.0], [7.0, 8.0]]
    assert (points.shape, points.storage_offset(), points.stride()) == ((3, 3), 0, (3, 1))
    assert (points2.shape, points2.storage_offset(), points2.stride()) == ((2, 2), 4, (3, 1))
    assert points.storage().data_ptr() == points2.storage().data_ptr()
    assert points.storage().tolist() == [float(i) for i in range(9)]
    storage = points2.storage().tolist()
    shape, offset, stride = points2.shape, points2.storage_offset(), points2.stride()
    tensor = np.empty(shape)
    for i in range(shape[0]):
        for j in range(shape[1]):
            tensor[i, j] = storage[offset + i * stride[0] + j * stride[1]]
    assert tensor.tolist() == [[4.0, 5.0], [7.0, 8.0]]
    assert points.is_contiguous() and not points2.is_contiguous()
    points3 = points2.contiguous()
    assert points2.storage().tolist() == [float(i) for i in range(9)]
    assert str(points3.storage()) == (
        " 4.0\n 5.0\n 7.0\n 8.0\n[strata.storage.TypedStorage(dtype=strata.float32, device=cpu) of size 4]"
    )


def test_seed_003_numpy_without_copies():
    points = st.tensor([[0, 1, 2], [3, 4, 5], [6, 7, 8]], dtype=st.float)
    ptr = points.storage().data_ptr()
    a = points.numpy()
    ai = a.__array_interface__
    assert ai["data"] == (ptr, False)
    assert ai["strides"] is None and ai["typestr"] == "<f4" and ai["shape"] == (3, 3)
    assert ai["descr"] == [("", "<f4")] and ai["version"] == 3
    back = st.from_numpy(a)
    assert back.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0], [6.0, 7.0, 8.0]]
    assert back.storage().data_ptr() == ptr


# ----- seed 004: "a tour of PyTorch internals" (NumPy, storages, sharing, DLPack) ----


def test_seed_004_from_numpy_converts_strides_to_elements():
    arr = np.arange(12, dtype=np.float64).reshape(3, 4)[:, ::2]
    t = st.from_numpy(arr)
    assert t.stride() == tuple(s // arr.itemsize for s in arr.strides) == (4, 2)
    assert t.data_ptr() == arr.ctypes.data
    arr[0, 0] = -1.0
    assert t[0, 0].item() == -1.0


def test_seed_004_storage_is_dumb_about_its_contents():
    tensor_a = st.ones((3, 3))
    tensor_b = tensor_a.view(9)
    assert tensor_a.storage().data_ptr() == tensor_b.storage().data_ptr()


_PROCESS_B = textwrap.dedent(
    """
    import sys, warnings
    warnings.simplefilter("ignore")
    import strata as st
    tensor_a = st.Tensor()
    tuple_info = (sys.argv[1].encode(), sys.argv[2].encode(), int(sys.argv[3]))
    storage = st.Storage._new_shared_filename(*tuple_info)
    tensor_a = st.Tensor(storage).view((5, 5))
    print(tensor_a.tolist())
    tensor_a[4, 4] = 2.0  # process A sees it
    """
)


def test_seed_004_shared_memory_handle_by_hand():
    # PyTorch's `_share_filename_` moves a storage into a file-backed segment; strata's
    # named segments are its "file_system" strategy, so the translation selects it
    # before `share_memory_()` (under the default fd strategy the storage would go into
    # a memfd, which has no name: send that one with `share_fd()`).
    old = st.multiprocessing.get_sharing_strategy()
    st.multiprocessing.set_sharing_strategy("file_system")
    try:
        tensor_a = st.ones((5, 5))
        assert tensor_a.is_shared() is False
        tensor_a = tensor_a.share_memory_()
        assert tensor_a.is_shared() is True
        tensor_a_storage = tensor_a.storage()
        manager, name, size = tensor_a_storage._share_filename_()
        assert isinstance(manager, bytes) and isinstance(name, bytes) and size == 25
        r = subprocess.run(
            [sys.executable, "-c", _PROCESS_B, manager.decode(), name.decode(), str(size)],
            capture_output=True, text=True, timeout=120,
        )
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip() == str([[1.0] * 5] * 5)
        assert tensor_a[4, 4].item() == 2.0
    finally:
        st.multiprocessing.set_sharing_strategy(old)


def test_seed_004_dlpack():
    from strata.utils import dlpack

    t = st.ones((5, 5))
    dl = dlpack.to_dlpack(t)
    back = dlpack.from_dlpack(dl)
    assert back.data_ptr() == t.data_ptr() and back.tolist() == t.tolist()
    n = np.from_dlpack(t)
    assert n.ctypes.data == t.data_ptr()
    assert st.from_dlpack(n).data_ptr() == t.data_ptr()


def test_the_seeds_tour_runs():
    r = subprocess.run([sys.executable, "-m", "strata.seeds_tour"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    for fact in ("(24, 12, 4, 1)", "(368640, 122880, 640, 1)", "offset 5 stride (4, 1)",
                 "offset 8 stride (-4, 1)", "process B read", "[strata.storage.TypedStorage"):
        assert fact in r.stdout, fact
