"""The allocator's cache of freed blocks (Note [block cache] in storage/cache.rs): large
kernel outputs reuse freed blocks, values stay right, and the limit is the user's."""

import numpy as np
import pytest

import strata as st
from _isolated import assert_clean

MIB = 1 << 20


@pytest.fixture
def cache():
    old = st.set_cache_limit(256 * MIB)
    st.empty_cache()
    yield
    st.empty_cache()
    st.set_cache_limit(old)


def _arrays(seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((1024, 1024), dtype=np.float32)  # 4 MiB
    b = rng.standard_normal((1024, 1024), dtype=np.float32)
    return a, b


def test_info_reports_what_is_held(cache):
    info = st.cache_info()
    assert set(info) == {"bytes", "blocks", "limit", "hits", "misses", "min_block"}
    assert (info["bytes"], info["blocks"], info["limit"]) == (0, 0, 256 * MIB)
    a, b = _arrays()
    out = st.from_numpy(a) + st.from_numpy(b)
    del out
    info = st.cache_info()
    assert info["blocks"] == 1
    assert 4 * MIB <= info["bytes"] < 4 * MIB + 4096


def test_a_freed_output_is_reused_and_overwritten_whole(cache):
    a, b = _arrays(1)
    ta, tb = st.from_numpy(a), st.from_numpy(b)
    first = ta + tb
    ptr = first.data_ptr()
    np.testing.assert_array_equal(first.numpy(), a + b)
    del first
    hits = st.cache_info()["hits"]
    # Outputs of other ops and layouts land in the same block, computed in full.
    for make, want in [
        (lambda: ta * tb, a * b),
        (lambda: ta.flip(0).contiguous(), a[::-1]),
        (lambda: ta.T.contiguous(), a.T),
        (lambda: ta.T + tb, a.T + b),
        (lambda: ta[:, :1] + tb[:1, :], a[:, :1] + b[:1, :]),
    ]:
        out = make()
        assert out.data_ptr() == ptr
        np.testing.assert_array_equal(out.numpy(), want)
        del out
    assert st.cache_info()["hits"] == hits + 5


def test_an_exported_output_keeps_its_block(cache):
    a, b = _arrays(2)
    out = st.from_numpy(a) + st.from_numpy(b)
    view = np.asarray(out)  # NumPy holds the storage: the block is not free
    ptr = out.data_ptr()
    del out
    assert st.cache_info()["blocks"] == 0
    other = st.from_numpy(a) * 2.0
    assert other.data_ptr() != ptr
    np.testing.assert_array_equal(view, a + b)
    del view
    assert st.cache_info()["blocks"] == 1


def test_the_limit(cache):
    a, _ = _arrays(3)
    ta = st.from_numpy(a)
    assert st.set_cache_limit(6 * MIB) == 256 * MIB
    outs = [ta * float(i) for i in range(3)]
    del outs  # three 4 MiB blocks: one fits
    assert st.cache_info()["blocks"] == 1
    assert st.set_cache_limit(0) == 6 * MIB
    assert st.cache_info()["bytes"] == 0
    out = -ta
    del out
    assert st.cache_info()["blocks"] == 0
    # Below the smallest cached size, blocks are malloc's.
    st.set_cache_limit(256 * MIB)
    small = -ta[:8]
    del small
    assert st.cache_info()["blocks"] == 0


@pytest.mark.parametrize("bad", [-1, -(1 << 40)])
def test_a_negative_limit_is_refused(cache, bad):
    with pytest.raises(ValueError, match="set_cache_limit") as e:
        st.set_cache_limit(bad)
    assert isinstance(e.value, st.StrataError)
    assert st.cache_info()["limit"] == 256 * MIB


def test_a_non_integer_limit_is_refused(cache):
    with pytest.raises(TypeError):
        st.set_cache_limit("1G")
    with pytest.raises(OverflowError):
        st.set_cache_limit(1 << 70)


@pytest.mark.parametrize(
    "value, limit",
    [("64M", 64 * MIB), ("1048576", MIB), ("0", 0), ("lots", 1 << 30), ("-5", 1 << 30)],
)
def test_the_limit_from_the_environment(value, limit):
    # Read once per process, on the first large allocation or cache call: a fresh one.
    code = (
        "import strata as st; t = st.ones(1024, 1024) * 2.0; del t; "
        "i = st.cache_info(); print(i['limit'], i['blocks'])"
    )
    out = assert_clean(code, env={"STRATA_CACHE_LIMIT": value}).stdout.split()
    assert int(out[0]) == limit
    # A 4 MiB output is kept when the limit allows it (ones' own block too, when freed).
    assert (int(out[1]) > 0) == (limit >= 4 * MIB + 64)
