"""Zero-copy interop of CUDA tensors: DLPack with torch, CuPy and JAX (both directions,
versioned and legacy capsules), the CUDA array interface (CuPy, Numba), pinned host memory
through DLPack, and CUDA IPC across a spawned process."""

from __future__ import annotations

import gc
import queue
import sys

import numpy as np
import pytest

import strata as st

R, C = 8, 12
VIEWS = {
    "contig": ((R, C), lambda t: t),
    "T": ((C, R), lambda t: t.T),
    "step": ((2 * R, 3 * C), lambda t: t[::2, 1::3]),
    "offset": ((R + 1, C + 2), lambda t: t[1:, 2:]),
}
DTYPES = [st.float32, st.float64, st.float16, st.bfloat16, st.int64, st.int32, st.uint8, st.bool]


def host_np(t):
    t = t.cpu() if t.is_cuda else t
    return (t.float() if t.dtype == st.bfloat16 else t).numpy().copy()


def cuda_view(rng, dtype, layout):
    shape, view = VIEWS[layout]
    base = st.from_numpy(np.array(rng.integers(0, 100, shape), dtype=np.float64)).to(dtype)
    g = base.cuda()
    return view(g), g


class Producer:
    """Forwards to ``t.__dlpack__``, forcing a legacy or a versioned capsule."""

    def __init__(self, t, versioned):
        self.t, self.versioned, self.calls = t, versioned, []

    def __dlpack__(self, stream=None, max_version=None, **kw):
        self.calls.append((stream, max_version))
        # A versioned capsule only for a consumer that asked for one (the standard's rule).
        asked = max_version is not None and tuple(max_version) >= (1, 0)
        return self.t.__dlpack__(stream=stream, max_version=(1, 0) if self.versioned and asked else None)

    def __dlpack_device__(self):
        return self.t.__dlpack_device__()


def torch_name(dtype):
    return str(dtype).removeprefix("strata.")  # the same names: float32, bfloat16, bool, ...


# ------------------------------------------------------------------------------ torch


@pytest.mark.parametrize("capsule", ["protocol", "legacy", "versioned"])
@pytest.mark.parametrize("layout", list(VIEWS))
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_strata_to_torch(dtype, layout, capsule, rng, torch):
    t, base = cuda_view(rng, dtype, layout)
    assert t.__dlpack_device__() == (2, 0)
    src = t if capsule == "protocol" else Producer(t, capsule == "versioned")
    x = torch.from_dlpack(src)
    assert str(x.device) == "cuda:0"
    assert str(x.dtype) == "torch." + torch_name(dtype)
    assert x.data_ptr() == t.data_ptr()
    assert tuple(x.shape) == tuple(t.shape) and x.stride() == t.stride()
    np.testing.assert_array_equal(x.float().cpu().numpy() if dtype == st.bfloat16 else x.cpu().numpy(), host_np(t))
    if dtype == st.bool:
        return
    # Writes are seen both ways (same memory).
    x.mul_(2)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(host_np(t), (x.float() if dtype == st.bfloat16 else x).cpu().numpy())
    t.add_(1)
    st.cuda.synchronize()
    np.testing.assert_array_equal((x.float() if dtype == st.bfloat16 else x).cpu().numpy(), host_np(t))


@pytest.mark.parametrize("capsule", ["protocol", "legacy", "versioned"])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int64", "uint8", "bool"])
def test_torch_to_strata(dtype, capsule, torch):
    tdt = getattr(torch, dtype)
    big = (torch.rand(16, 30, device="cuda") * 100).to(tdt)
    x = big[3:, 1::2].T  # offset and strides
    if capsule == "protocol":
        s = st.from_dlpack(x)
    elif capsule == "legacy":
        s = st.from_dlpack(torch.utils.dlpack.to_dlpack(x))
    else:
        try:
            cap = x.__dlpack__(max_version=(1, 0))
        except TypeError:
            pytest.skip("this torch cannot make versioned capsules")
        assert "dltensor_versioned" in repr(cap)
        s = st.from_dlpack(cap)
    assert s.is_cuda and s.device == "cuda:0" and str(s.dtype).removeprefix("strata.") == dtype
    assert s.data_ptr() == x.data_ptr()
    assert tuple(s.shape) == tuple(x.shape) and s.stride() == x.stride()
    want = x.float().cpu().numpy() if dtype == "bfloat16" else x.cpu().numpy()
    np.testing.assert_array_equal(host_np(s), want)
    if dtype == "bool":
        return
    s.mul_(3)
    st.cuda.synchronize()
    np.testing.assert_array_equal(host_np(s), (x.float() if dtype == "bfloat16" else x).cpu().numpy())
    x.sub_(1)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(host_np(s), (x.float() if dtype == "bfloat16" else x).cpu().numpy())


def test_torch_deleter_runs_once(torch):
    gc.collect()
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    for _ in range(3):
        x = torch.arange(1 << 20, device="cuda", dtype=torch.float32)
        s = st.from_dlpack(x)[::3]
        del x
        gc.collect()
        assert torch.cuda.memory_allocated() >= base + 4 * (1 << 20)  # strata keeps it alive
        want = float(sum(range(0, 1 << 20, 3)))
        assert s[5].item() == 15.0 and abs(s.sum().item() - want) <= 1e-6 * want  # a float32 sum
        del s
        gc.collect()
        torch.cuda.synchronize()
        assert torch.cuda.memory_allocated() == base  # released, once
    # A capsule that nobody consumes releases its tensor too.
    x = torch.ones(1 << 20, device="cuda")
    cap = x.__dlpack__()
    del x, cap
    gc.collect()
    assert torch.cuda.memory_allocated() == base


def test_strata_deleter_runs_once(torch):
    gc.collect()
    st.cuda.synchronize()
    base = st.cuda.memory_allocated()
    for capsule in ("protocol", "legacy", "versioned", "unconsumed"):
        t = st.arange(1 << 20, dtype=st.float32, device="cuda")
        if capsule == "unconsumed":
            caps = [t.__dlpack__(max_version=(1, 0)) for _ in range(3)] + [t.__dlpack__() for _ in range(3)]
            assert len(caps) == 6 and st.cuda.memory_allocated() >= base + 4 * (1 << 20)
            del t, caps
            gc.collect()
            assert st.cuda.memory_allocated() == base
            continue
        x = torch.from_dlpack(t if capsule == "protocol" else Producer(t, capsule == "versioned"))
        del t
        gc.collect()
        assert st.cuda.memory_allocated() >= base + 4 * (1 << 20)
        assert x[7].item() == 7.0
        del x
        gc.collect()
        st.cuda.synchronize()
        assert st.cuda.memory_allocated() == base, capsule


def test_capsule_consumed_once(torch):
    t = st.arange(10, dtype=st.int32, device="cuda")
    for cap in (t.__dlpack__(max_version=(1, 0)), t.__dlpack__()):
        u = st.from_dlpack(cap)
        assert u.data_ptr() == t.data_ptr() and u.tolist() == list(range(10))
        assert "used_dltensor" in repr(cap)
        with pytest.raises(ValueError):
            st.from_dlpack(cap)
    cap = t.__dlpack__()
    y = torch.utils.dlpack.from_dlpack(cap)
    assert y.data_ptr() == t.data_ptr()
    with pytest.raises(ValueError):
        st.from_dlpack(cap)


def test_bad_dlpack_requests(torch):
    t = st.arange(4, dtype=st.float32, device="cuda")
    with pytest.raises(BufferError):
        t.__dlpack__(dl_device=(2, 7))
    with pytest.raises(BufferError):
        t.__dlpack__(dl_device=(1, 0))  # no copy to the host without copy=True
    with pytest.raises(st.DeviceError):
        t.to("cuda:7")
    with pytest.raises(st.DeviceError):
        st.tensor([1.0]).cuda(7)
    # A CPU tensor exported to the host is fine; numpy() of a CUDA tensor is not.
    assert np.from_dlpack(st.arange(3)).tolist() == [0, 1, 2]
    with pytest.raises(TypeError, match="can't convert cuda:0 device type tensor to numpy"):
        np.asarray(t.numpy())


# ------------------------------------------------------------------------------ pinned


def test_pinned_dlpack_device_and_numpy():
    p = st.arange(24, dtype=st.float64).view(4, 6).pin_memory()
    assert p.__dlpack_device__() == (3, 0)
    assert st.arange(3).__dlpack_device__() == (1, 0)
    a = np.from_dlpack(p)
    assert a.ctypes.data == p.data_ptr()
    np.testing.assert_array_equal(a, np.arange(24.0).reshape(4, 6))
    a[1, 2] = -5.0
    assert p[1, 2].item() == -5.0
    v = np.from_dlpack(p.T[1:])
    assert v.ctypes.data == p.T[1:].data_ptr()
    np.testing.assert_array_equal(v, p.T[1:].numpy())
    back = st.from_dlpack(a)
    assert back.data_ptr() == p.data_ptr()


# ------------------------------------------------------------------------------ CuPy


@pytest.mark.parametrize("layout", list(VIEWS))
@pytest.mark.parametrize("dtype", [st.float32, st.float16, st.int64, st.uint8], ids=str)
def test_cupy_dlpack_and_cai(dtype, layout, rng, cupy):
    t, base = cuda_view(rng, dtype, layout)
    item = t.element_size()
    for how in ("dlpack", "asarray"):
        x = cupy.from_dlpack(t) if how == "dlpack" else cupy.asarray(t)
        assert x.data.ptr == t.data_ptr(), how
        assert x.shape == tuple(t.shape) and x.strides == tuple(s * item for s in t.stride()), how
        np.testing.assert_array_equal(cupy.asnumpy(x), host_np(t))
        x *= 2
        cupy.cuda.runtime.deviceSynchronize()
        np.testing.assert_array_equal(host_np(t), cupy.asnumpy(x))
        t.add_(1)
        st.cuda.synchronize()
        np.testing.assert_array_equal(cupy.asnumpy(x), host_np(t))
    cai = t.__cuda_array_interface__
    assert set(cai) >= {"shape", "typestr", "data", "version", "strides", "stream"}
    assert cai["version"] == 3 and cai["data"] == (t.data_ptr(), False)
    assert cai["shape"] == tuple(t.shape)
    assert cai["typestr"] == np.dtype({st.float32: "f4", st.float16: "f2", st.int64: "i8", st.uint8: "u1"}[dtype]).str
    if t.is_contiguous():
        assert cai["strides"] is None
    else:
        assert cai["strides"] == tuple(s * item for s in t.stride())
    assert isinstance(cai["stream"], int) and cai["stream"] != 0


def test_cupy_to_strata_and_refcount(cupy):
    a = cupy.arange(200, dtype=cupy.float32).reshape(10, 20)[2:, ::3]
    base = sys.getrefcount(a)
    s = st.from_dlpack(a)
    assert s.is_cuda and s.data_ptr() == a.data.ptr
    assert s.stride() == tuple(x // 4 for x in a.strides)
    np.testing.assert_array_equal(host_np(s), cupy.asnumpy(a))
    assert sys.getrefcount(a) >= base
    s.mul_(-1)
    st.cuda.synchronize()
    np.testing.assert_array_equal(host_np(s), cupy.asnumpy(a))
    assert float(a[0, 0]) == -40.0
    del s
    gc.collect()
    assert sys.getrefcount(a) == base  # the producer's reference was dropped exactly once
    # The strata tensor keeps CuPy's memory alive after CuPy lets go.
    b = cupy.full((1 << 20,), 3, dtype=cupy.int32)
    s = st.from_dlpack(b)
    del b
    gc.collect()
    assert s.sum().item() == 3 * (1 << 20)


def test_cai_refuses_cpu_and_bf16():
    with pytest.raises(AttributeError):
        st.arange(3).__cuda_array_interface__  # noqa: B018
    with pytest.raises(TypeError):
        st.ones(3, dtype=st.bfloat16, device="cuda").__cuda_array_interface__  # noqa: B018


# ------------------------------------------------------------------------------ Numba


@pytest.mark.parametrize("layout", ["contig", "T", "step"])
def test_numba_as_cuda_array(layout, rng, numba_cuda):
    t, base = cuda_view(rng, st.float32, layout)
    d = numba_cuda.as_cuda_array(t)
    assert d.__cuda_array_interface__["data"][0] == t.data_ptr()
    assert d.shape == tuple(t.shape) and d.strides == tuple(s * 4 for s in t.stride())
    np.testing.assert_array_equal(d.copy_to_host(), host_np(t))
    t.mul_(0.5)
    st.cuda.synchronize()
    np.testing.assert_array_equal(d.copy_to_host(), host_np(t))
    if t.is_contiguous():  # a write through Numba lands in the strata tensor
        new = np.arange(t.numel(), dtype=np.float32).reshape(tuple(t.shape))
        d.copy_to_device(new)
        numba_cuda.synchronize()
        np.testing.assert_array_equal(host_np(t), new)


# ------------------------------------------------------------------------------ JAX


@pytest.mark.parametrize("dtype", [st.float32, st.int32, st.bfloat16, st.float16], ids=str)
def test_jax_both_ways(dtype, rng, jax):
    import jax.numpy as jnp

    t, _ = cuda_view(rng, dtype, "contig")
    want = host_np(t)
    for src in (t, Producer(t, True), Producer(t, False)):
        x = jax.dlpack.from_dlpack(src) if hasattr(jax.dlpack, "from_dlpack") else jnp.from_dlpack(src)
        assert x.shape == tuple(t.shape)
        assert "cuda" in str(list(x.devices())[0]).lower() or "gpu" in str(list(x.devices())[0]).lower()
        np.testing.assert_array_equal(np.asarray(x.astype(jnp.float32) if dtype == st.bfloat16 else x), want)
        if x.unsafe_buffer_pointer() != t.data_ptr():
            pytest.fail("jax copied the strata buffer instead of sharing it")
    gpu = jax.devices("gpu")[0]
    j = jax.device_put(jnp.arange(96, dtype=jnp.float32).reshape(8, 12) * 2, gpu)
    s = st.from_dlpack(j)
    assert s.is_cuda and s.data_ptr() == j.unsafe_buffer_pointer()
    np.testing.assert_array_equal(host_np(s), np.asarray(j))
    r = (s * 2 + 1).sum(1)
    np.testing.assert_array_equal(host_np(r), (np.asarray(j) * 2 + 1).sum(1))
    del j
    gc.collect()
    assert s[3, 4].item() == 2.0 * (3 * 12 + 4)  # strata keeps JAX's buffer alive


# ------------------------------------------------------------------------------ IPC


def _get(q, what):
    try:
        msg = q.get(timeout=90)
    except queue.Empty:
        pytest.fail(f"no {what!r} message from the child within 90 s")
    if msg[0] == "error":
        pytest.fail("child failed:\n" + msg[1])
    assert msg[0] == what, msg
    return msg


def test_ipc_spawn_shares_cuda_memory():
    import multiprocessing as mp

    import _ipc_child

    ctx = mp.get_context("spawn")
    inbox, outbox = ctx.Queue(), ctx.Queue()
    host = np.arange(12 * 16, dtype=np.float32).reshape(12, 16)
    base = st.from_numpy(host.copy()).cuda()
    view = base[1:, 3:][::2, ::3].T  # a non-contiguous view with an offset
    assert view.storage_offset() == 19 and not view.is_contiguous()
    proc = ctx.Process(target=_ipc_child.child, args=(inbox, outbox), daemon=True)
    proc.start()
    try:
        inbox.put((view, view.tolist(), view.stride(), view.storage_offset()))
        _, info = _get(outbox, "wrote")
        assert info["device"] == "cuda:0" and info["is_cuda"]
        assert info["shape"] == tuple(view.shape)
        assert info["layout_ok"], info
        assert info["values_ok"], info
        # The child's in-place write (-2 *) is seen here, on exactly the view's elements.
        want = host.copy()
        want[1:, 3:][::2, ::3] *= -2
        np.testing.assert_array_equal(base.cpu().numpy(), want)
        # And the parent's write is seen there.
        view.add_(1000)
        st.cuda.synchronize()
        inbox.put("parent wrote")
        _, seen = _get(outbox, "seen")
        assert seen == view.tolist()
        second = base[2:4, 5:]
        inbox.put(second)
        _, vals, delta = _get(outbox, "second")
        assert vals == second.tolist()
        assert delta == second.data_ptr() - view.data_ptr()  # one mapping of one storage
        _get(outbox, "done")
        proc.join(60)
        assert proc.exitcode == 0
    finally:
        if proc.is_alive():
            proc.kill()
            proc.join(10)
    # The sender's tensor is untouched by the child's exit.
    np.testing.assert_array_equal(base.cpu().numpy()[0], host[0])
