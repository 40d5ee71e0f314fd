"""A walk through the design write-ups strata started from (the five "seeds"), their
examples run on strata with strata's names: ``python -m strata.seeds_tour``.

Each section prints the facts its write-up prints from PyTorch — strides, offsets, data
pointers, which views share a storage, a handle passed by hand to a second process,
DLPack to and from NumPy — and checks them as it goes. Where strata answers differently
on purpose, the text says so (flipping is zero-copy here; PyTorch's ``flip`` copies).
``python/tests/test_seeds.py`` runs the same examples as tests.
"""

from __future__ import annotations

import ctypes
import math
import subprocess
import sys
import textwrap
import warnings

import strata as st


def section(title: str) -> None:
    print()
    print(f"== {title}")


def print_internal(t: st.Tensor) -> st.Tensor:
    """Seed 000's ``print_internal``: the raw storage, read back through ``frombuffer``."""
    raw = st.frombuffer(ctypes.string_at(t.data_ptr(), t.storage().nbytes()), dtype=t.dtype)
    print(raw)
    return raw


def print_T(*xs: st.Tensor) -> None:
    """Seed 002's ``print_T``: each view with its shape, offset, strides and storage."""
    for x in xs:
        print(f"{x}\n  shape {tuple(x.shape)} offset {x.storage_offset()} stride {x.stride()}, "
              f"data_ptr={x.storage().data_ptr():#x}")


_PROCESS_B = textwrap.dedent(
    """
    import sys, warnings
    warnings.simplefilter("ignore")
    import strata as st
    tuple_info = (sys.argv[1].encode(), sys.argv[2].encode(), int(sys.argv[3]))
    storage = st.Storage._new_shared_filename(*tuple_info)
    tensor_a = st.Tensor(storage).view((5, 5))
    print(tensor_a.sum().item())
    tensor_a[0, 0] = 5.0
    """
)


def main() -> None:
    warnings.simplefilter("ignore", UserWarning)  # t.storage() is deprecated in PyTorch

    section("seed 000: row-major storage, strides, print_internal")
    t = st.arange(0, 24).reshape(1, 2, 3, 4)
    print(t)
    print("t.stride() =", t.stride())
    assert t.stride() == (24, 12, 4, 1)
    assert t.stride() == tuple(math.prod(t.shape[k + 1:]) for k in range(t.ndim))
    raw = print_internal(t)
    assert raw.tolist() == list(range(24))

    section("seed 001: strides and a tensor's metadata")
    a = st.rand(4, 3, 192, 640)
    print("rand(4, 3, 192, 640).stride() =", a.stride())
    assert a.stride() == (368640, 122880, 640, 1)
    m = st.ones(2, 3)
    print(f"shape {m.shape}, dtype {m.dtype}, device {m.device}, layout {m.layout}, "
          f"grad {m.grad}, requires_grad {m.requires_grad}, _version {m._version}")
    p = st.arange(24).reshape(2, 3, 4).permute(2, 0, 1)
    print("permute(2, 0, 1).is_contiguous() =", p.is_contiguous())
    try:
        p.view(-1)
    except ValueError as e:
        print("view(-1) of it:", str(e).split(" (")[0])
    print("reshape(-1) copies:", p.reshape(-1).data_ptr() != p.data_ptr())

    section("seed 002: views are offset and strides over one storage")
    x = st.arange(12).reshape(3, -1)
    print_T(x, x[1:2, 1:4])
    assert (x[1:2, 1:4].storage_offset(), x[1:2, 1:4].stride()) == (5, (4, 1))
    print("broadcast:")
    print_T(st.arange(4).expand(2, 3, 4))
    perm = [2, 0, 1]
    x = st.arange(24).reshape(2, 3, 4)
    newshape = (st.Tensor(tuple(x.shape)).int())[perm]
    newstride = (st.Tensor(x.stride()).int())[perm]
    print("permute through as_strided:")
    print_T(x.as_strided(tuple(newshape), tuple(newstride), x.storage_offset()))
    print("flip: zero-copy here, with a negative stride, as NumPy does (PyTorch copies):")
    x = st.arange(12).reshape(3, 4)
    print_T(x.flip(0), x.flip(1))
    assert (x.flip(0).storage_offset(), x.flip(0).stride()) == (8, (-4, 1))

    section("seed 003: typed storages, offsets and contiguous copies")
    points = st.tensor([[1, 2], [3, 4], [5, 6]], dtype=st.float)
    points2 = points.transpose(0, 1)
    print("points storage", points.storage())
    print("points2 storage", points2.storage())
    points.zero_()
    print("after points.zero_(), points2 =", points2)
    print("same storage:", points.storage().data_ptr() == points2.storage().data_ptr())
    points = st.tensor([[0, 1, 2], [3, 4, 5], [6, 7, 8]], dtype=st.float)
    points2 = points[1:3, 1:3]
    print(f"points2 = points[1:3, 1:3]: offset {points2.storage_offset()} stride {points2.stride()}, "
          f"contiguous {points2.is_contiguous()}")
    print("points2.contiguous() storage", points2.contiguous().storage())
    n = points.numpy()
    print("points.numpy().__array_interface__['data'][0] == storage data_ptr:",
          n.__array_interface__["data"][0] == points.storage().data_ptr())

    section("seed 004: sharing a storage with another process by hand, DLPack")
    old = st.multiprocessing.get_sharing_strategy()
    st.multiprocessing.set_sharing_strategy("file_system")  # named segments: handles by name
    try:
        tensor_a = st.ones((5, 5))
        print("is_shared() before:", tensor_a.is_shared())
        tensor_a = tensor_a.share_memory_()
        print("is_shared() after share_memory_():", tensor_a.is_shared())
        info = tensor_a.storage()._share_filename_()
        print("storage()._share_filename_() =", info)
        r = subprocess.run(
            [sys.executable, "-c", _PROCESS_B, info[0].decode(), info[1].decode(), str(info[2])],
            capture_output=True, text=True, timeout=120, check=True,
        )
        print(f"process B read the sum {r.stdout.strip()} and wrote tensor_a[0, 0] = "
              f"{tensor_a[0, 0].item()}")
        assert tensor_a[0, 0].item() == 5.0
    finally:
        st.multiprocessing.set_sharing_strategy(old)
    from strata.utils import dlpack

    t = st.ones((5, 5))
    back = dlpack.from_dlpack(dlpack.to_dlpack(t))
    import numpy as np

    arr = np.from_dlpack(t)
    print("DLPack round trip shares memory:", back.data_ptr() == t.data_ptr(),
          "; NumPy through DLPack:", arr.ctypes.data == t.data_ptr())
    print("\nDone.")


if __name__ == "__main__":
    main()
