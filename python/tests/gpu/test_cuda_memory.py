"""Host <-> device transfers, copy_ across devices, pinned memory, the caching allocator,
streams and events."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import strata as st

R, C = 6, 10
VIEWS = {
    "contig": ((R, C), lambda t: t),
    "T": ((C, R), lambda t: t.T),
    "flip": ((R, C), lambda t: t.flip(0)),
    "flip2": ((R, C), lambda t: t.flip(0, 1)),
    "step": ((2 * R, 3 * C + 1), lambda t: t[::2, 1::3]),
    "offset": ((R + 2, C + 3), lambda t: t[2:, 3:]),
    "expand": ((1, C), lambda t: t.expand(R, C)),
    "unsqueeze": ((R, C), lambda t: t.unsqueeze(1)),
    "permute3": ((2, 3, 10), lambda t: t.permute(2, 0, 1)),
    "diagonal": ((C, C), lambda t: t.diagonal()),
    "select": ((R, C), lambda t: t.select(1, 3)),
    "narrow": ((R, C), lambda t: t.narrow(1, 2, 5)),
    "0d": ((), lambda t: t),
    "empty": ((0, C), lambda t: t),
}
DTYPES = [st.float32, st.float64, st.float16, st.bfloat16, st.int64, st.int8, st.uint8, st.bool]


def host_np(t):
    t = t.cpu() if t.is_cuda else t
    return (t.float() if t.dtype == st.bfloat16 else t).numpy().copy()


def rand_tensor(rng, shape, dtype):
    a = np.asarray(rng.standard_normal(shape) * 50)
    t = st.from_numpy(np.array(a, dtype=np.float64, order="C"))
    return t.to(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("layout", list(VIEWS))
def test_round_trip_every_layout(layout, dtype, rng):
    shape, view = VIEWS[layout]
    base = rand_tensor(rng, shape, dtype)
    v = view(base)
    want = host_np(v)
    for move in (lambda t: t.cuda(), lambda t: t.cuda(0), lambda t: t.to("cuda"), lambda t: t.to("cuda:0"),
                 lambda t: t.to(device="cuda"), lambda t: t.to("cuda", non_blocking=True)):  # fmt: skip
        g = move(v)
        assert g.is_cuda and g.device == "cuda:0" and g.dtype == dtype and tuple(g.shape) == tuple(v.shape)
        back = g.cpu()
        assert back.device == "cpu" and not back.is_cuda
        np.testing.assert_array_equal(host_np(back), want)
        np.testing.assert_array_equal(host_np(g.to("cpu")), want)
        assert g.cuda() is g or g.cuda().data_ptr() == g.data_ptr()  # already there: no copy
    # The view taken on the device of a whole-base copy gives the same values.
    np.testing.assert_array_equal(host_np(view(base.cuda())), want)
    # .contiguous() on the device.
    gc_ = view(base.cuda()).contiguous()
    assert gc_.is_contiguous() and gc_.is_cuda
    np.testing.assert_array_equal(host_np(gc_), want)


@pytest.mark.parametrize("dtype", [st.float32, st.float16, st.int32])
def test_to_device_and_dtype(dtype, rng):
    base = rand_tensor(rng, (C, R), st.float64).T
    g = base.to("cuda", dtype)
    assert g.is_cuda and g.dtype == dtype
    np.testing.assert_array_equal(host_np(g), host_np(base.to(dtype)))
    h = g.to("cpu", st.float64)
    assert h.device == "cpu" and h.dtype == st.float64
    np.testing.assert_array_equal(host_np(h), host_np(base.to(dtype).to(st.float64)))


SRC_LAYOUTS = ["contig", "T", "step", "expand", "0d"]
DST_LAYOUTS = ["contig", "T", "step", "flip2", "offset"]


@pytest.mark.parametrize("non_blocking", [False, True])
@pytest.mark.parametrize("direction", ["h2d", "d2h", "d2d"])
@pytest.mark.parametrize("dst_layout", DST_LAYOUTS)
@pytest.mark.parametrize("src_layout", SRC_LAYOUTS)
def test_copy_across_devices(src_layout, dst_layout, direction, non_blocking, rng):
    sshape, sview = VIEWS[src_layout]
    dshape, dview = VIEWS[dst_layout]
    src_dev = "cpu" if direction == "h2d" else "cuda"
    dst_dev = "cpu" if direction == "d2h" else "cuda"
    for sdt, ddt in ((st.float32, st.float32), (st.float64, st.float16), (st.int64, st.float32), (st.float32, st.int32)):
        src_base = rand_tensor(rng, sshape, sdt)
        dst_base = rand_tensor(rng, dshape, ddt)
        # The reference: the same copy_ done all on the host.
        ref_base = dst_base.clone()
        dview(ref_base).copy_(sview(src_base))
        s = sview(src_base.to(src_dev))
        d_base = dst_base.to(dst_dev)
        d = dview(d_base)
        ptr = d.data_ptr()
        r = d.copy_(s, non_blocking=non_blocking)
        assert r.data_ptr() == ptr and r.device == d_base.device
        st.cuda.synchronize()
        # Only the view's elements changed; broadcasting and casting as on the host.
        np.testing.assert_array_equal(host_np(d_base), host_np(ref_base), err_msg=f"{sdt}->{ddt}")


def test_copy_mismatched_shapes_raise_like_cpu(rng):
    a = rand_tensor(rng, (3, 4), st.float32)
    b = rand_tensor(rng, (4, 3), st.float32)
    with pytest.raises(Exception) as err:
        a.clone().copy_(b)
    with pytest.raises(type(err.value)):
        a.cuda().copy_(b)
    with pytest.raises(type(err.value)):
        a.clone().copy_(b.cuda())
    # A copy between views of one CUDA storage that overlap is refused or exact, as on host.
    x = rand_tensor(rng, (10,), st.float32)
    try:
        x.clone()[1:].copy_(x.clone()[:-1])
    except Exception as e:  # noqa: BLE001
        with pytest.raises(type(e)):
            g = x.cuda()
            g[1:].copy_(g[:-1])
    else:
        h = x.clone()
        h[1:].copy_(h[:-1])
        g = x.cuda()
        g[1:].copy_(g[:-1])
        np.testing.assert_array_equal(host_np(g), host_np(h))


# ------------------------------------------------------------------------------ pinned


def test_pinned_memory(rng):
    a = rand_tensor(rng, (64, 33), st.float32)
    assert not a.is_pinned()
    p = a.pin_memory()
    assert p.is_pinned() and p.device == "cpu" and not p.is_cuda
    assert p.pin_memory() is p or p.pin_memory().data_ptr() == p.data_ptr()
    np.testing.assert_array_equal(p.numpy(), a.numpy())
    # A pinned tensor is an ordinary CPU tensor for ops and NumPy (zero-copy).
    np.testing.assert_allclose((p * 2 + 1).numpy(), a.numpy() * 2 + 1)
    n = p.numpy()
    n[0, 0] = 1234.5
    assert p[0, 0].item() == 1234.5
    assert p.T.is_pinned() and p[::2].is_pinned()  # views of pinned storage are pinned
    assert p.__dlpack_device__() == (3, 0)
    assert a.__dlpack_device__() == (1, 0)
    for dt in (st.float32, st.int64, st.uint8):
        e = st.empty(5, 7, dtype=dt, pin_memory=True)
        assert e.is_pinned() and e.dtype == dt and tuple(e.shape) == (5, 7)
        z = st.zeros(3, pin_memory=True)
        assert z.is_pinned() and z.tolist() == [0.0, 0.0, 0.0]
        o = st.ones(2, 2, dtype=dt, pin_memory=True)
        assert o.is_pinned() and o.sum().item() == 4


@pytest.mark.parametrize("layout", ["contig", "T", "step"])
def test_non_blocking_pinned_transfers(layout, rng):
    shape, view = VIEWS[layout]
    for i in range(5):
        base = rand_tensor(rng, shape, st.float32).pin_memory()
        src = view(base)
        g = src.to("cuda", non_blocking=True)
        g2 = st.empty(*src.shape, device="cuda")
        g2.copy_(src, non_blocking=True)
        out = st.empty(*src.shape, pin_memory=True)
        out.copy_(g * 2, non_blocking=True)
        st.cuda.synchronize()
        np.testing.assert_array_equal(host_np(g), src.numpy())
        np.testing.assert_array_equal(host_np(g2), src.numpy())
        np.testing.assert_array_equal(out.numpy(), src.numpy() * 2)
        back = g.to("cpu", non_blocking=True)
        st.cuda.synchronize()
        np.testing.assert_array_equal(back.numpy(), src.numpy())


# ------------------------------------------------------------------------------ allocator


def test_caching_allocator_reuse_and_stats():
    gc.collect()
    st.cuda.synchronize()
    n = 1 << 20  # 4 MiB of float32
    base_alloc = st.cuda.memory_allocated()
    x = st.empty(n, device="cuda")
    assert st.cuda.memory_allocated() >= base_alloc + 4 * n
    reserved = st.cuda.memory_reserved()
    assert reserved >= st.cuda.memory_allocated()
    ptr = x.data_ptr()
    del x
    gc.collect()
    assert st.cuda.memory_allocated() == base_alloc
    assert st.cuda.memory_reserved() == reserved  # the block stays cached
    ptrs = set()
    for _ in range(50):
        y = st.empty(n, device="cuda")
        ptrs.add(y.data_ptr())
        y.fill_(1.0)
        del y
        assert st.cuda.memory_reserved() == reserved
    assert ptr in ptrs  # the freed block was handed out again
    # Peak statistics.
    st.cuda.reset_peak_memory_stats()
    assert st.cuda.max_memory_allocated() == st.cuda.memory_allocated()
    big = [st.ones(n, device="cuda") for _ in range(3)]
    peak = st.cuda.max_memory_allocated()
    assert peak >= base_alloc + 3 * 4 * n
    del big
    gc.collect()
    assert st.cuda.memory_allocated() == base_alloc
    assert st.cuda.max_memory_allocated() == peak
    # empty_cache returns the cached blocks: reserved drops to what live tensors hold.
    keep = st.ones(1000, device="cuda")
    st.cuda.empty_cache()
    assert st.cuda.memory_reserved() < reserved
    assert st.cuda.memory_reserved() >= st.cuda.memory_allocated() > 0
    assert keep.sum().item() == 1000.0
    del keep
    gc.collect()
    st.cuda.empty_cache()
    assert st.cuda.memory_allocated() == base_alloc


def test_views_keep_storage_alive():
    gc.collect()
    before = st.cuda.memory_allocated()
    a = st.arange(1000, dtype=st.float32, device="cuda")
    v = a[10::7].T
    del a
    gc.collect()
    assert st.cuda.memory_allocated() > before
    assert v.tolist() == [float(i) for i in range(10, 1000, 7)]
    del v
    gc.collect()
    assert st.cuda.memory_allocated() == before


def test_out_of_memory_is_a_clean_error():
    with pytest.raises((st.ResourceError, MemoryError, RuntimeError)):
        st.empty(1 << 50, dtype=st.uint8, device="cuda")  # 1 PiB
    x = st.ones(4, device="cuda")  # the device is still usable
    assert x.sum().item() == 4.0


# ------------------------------------------------------------------------------ streams / events


def _busy(n=1 << 24, reps=20):
    """A long-running chain of kernels on the current stream, returning its tensor."""
    x = st.ones(n, device="cuda")
    for _ in range(reps):
        x.mul_(1.0001).add_(0.5)
    return x


def _busy_expected(reps=20):
    v = 1.0
    for _ in range(reps):
        v = np.float32(np.float32(v) * np.float32(1.0001)) + np.float32(0.5)
    return float(np.float32(v))


def test_current_and_default_streams():
    d = st.cuda.default_stream()
    assert d.cuda_stream == 0
    assert st.cuda.current_stream() == d
    s = st.cuda.Stream()
    assert isinstance(s.cuda_stream, int) and s.cuda_stream != 0
    with st.cuda.stream(s):
        assert st.cuda.current_stream() == s
        with st.cuda.stream(None):
            assert st.cuda.current_stream() == s
    assert st.cuda.current_stream() == d
    # The stream is restored when the block raises.
    with pytest.raises(ZeroDivisionError):
        with st.cuda.stream(s):
            1 / 0  # noqa: B018
    assert st.cuda.current_stream() == d


def test_ops_on_a_side_stream(rng):
    s = st.cuda.Stream()
    a = st.from_numpy(rng.standard_normal((512, 300)).astype(np.float32))
    with st.cuda.stream(s):
        g = a.cuda()
        r = (g.T @ g).sum(0) + g.sum(0)
        q = _busy()
    s.synchronize()
    assert s.query()
    want = (a.T @ a).sum(0) + a.sum(0)
    np.testing.assert_allclose(host_np(r), want.numpy(), rtol=1e-3, atol=1e-2)
    np.testing.assert_allclose(host_np(q[:5]), [_busy_expected()] * 5, rtol=1e-5)


def test_events_time_and_query():
    start, end = st.cuda.Event(enable_timing=True), st.cuda.Event(enable_timing=True)
    x = st.rand(2048, 2048, device="cuda")
    start.record()
    for _ in range(10):
        x = x @ x.T * 1e-3
    end.record()
    end.synchronize()
    assert end.query() and start.query()
    ms = start.elapsed_time(end)
    assert isinstance(ms, float) and 0.0 < ms < 60_000.0
    # Recording on an explicit stream; Stream.record_event; wait.
    s = st.cuda.Stream()
    e = st.cuda.Event()
    with st.cuda.stream(s):
        y = _busy()
    e.record(s)
    e2 = s.record_event()
    st.cuda.current_stream().wait_event(e)
    z = y[:3] * 2  # ordered after the side stream's work
    e2.synchronize()
    assert e2.query()
    np.testing.assert_allclose(host_np(z), [2 * _busy_expected()] * 3, rtol=1e-5)
    s.synchronize()
    assert s.query()


def test_wait_stream_orders_work():
    a, b = st.cuda.Stream(), st.cuda.Stream()
    for _ in range(3):
        with st.cuda.stream(a):
            x = _busy(1 << 24, 40)  # long: b would read stale data without the wait
        b.wait_stream(a)
        with st.cuda.stream(b):
            head = x[:1000].clone()
            total = x[: 1 << 20].sum()
        b.synchronize()
        np.testing.assert_allclose(host_np(head), [_busy_expected(40)] * 1000, rtol=1e-5)
        np.testing.assert_allclose(total.item(), _busy_expected(40) * (1 << 20), rtol=1e-4)
        a.synchronize()
    st.cuda.synchronize()
    assert a.query() and b.query()


def test_external_stream_wrap(torch):
    ts = torch.cuda.Stream()
    s = st.cuda.Stream(stream_ptr=ts.cuda_stream)
    assert s.cuda_stream == ts.cuda_stream
    with st.cuda.stream(s):
        g = st.arange(100, dtype=st.float32, device="cuda") * 3
    s.synchronize()
    assert ts.query()
    assert g.tolist() == [3.0 * i for i in range(100)]
