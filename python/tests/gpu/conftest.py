"""The CUDA test suite: skipped as a whole where strata has no usable CUDA device.

Every test here needs a GPU. On a machine without one (CI) the ``cuda_required`` autouse
fixture skips each test before it runs, and nothing in these modules touches CUDA (or
imports torch, CuPy, JAX or Numba) at collection time, so collection itself never fails.
Third-party oracles are fixtures that ``pytest.importorskip`` their library.
"""

from __future__ import annotations

import gc
import os
import sys
import zlib

import pytest

import strata as st

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:  # _ipc_child must be importable in spawned children too
    sys.path.insert(0, _HERE)


def _cuda_reason() -> str | None:
    try:
        if not st.cuda.is_available():
            return "strata.cuda.is_available() is False"
        if st.cuda.device_count() < 1:
            return "strata.cuda.device_count() == 0"
    except Exception as e:  # a broken driver must skip, not error, in CI
        return f"strata.cuda unusable: {type(e).__name__}: {e}"
    return None


_REASON = _cuda_reason()


@pytest.fixture(autouse=True)
def cuda_required():
    if _REASON is not None:
        pytest.skip(_REASON)
    yield
    # Surface asynchronous kernel faults in the test that caused them.
    st.cuda.synchronize()


@pytest.fixture(scope="session")
def torch():
    if _REASON is not None:
        pytest.skip(_REASON)
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA device")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return torch


@pytest.fixture(scope="session")
def cupy():
    if _REASON is not None:
        pytest.skip(_REASON)
    cp = pytest.importorskip("cupy")
    try:
        if cp.cuda.runtime.getDeviceCount() < 1:
            pytest.skip("cupy sees no CUDA device")
    except Exception as e:
        pytest.skip(f"cupy unusable: {e}")
    return cp


@pytest.fixture(scope="session")
def jax():
    if _REASON is not None:
        pytest.skip(_REASON)
    # JAX preallocates most of the GPU by default; strata and torch share this process.
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    jax = pytest.importorskip("jax")
    pytest.importorskip("jax.dlpack")
    try:
        gpus = jax.devices("gpu")
    except Exception as e:
        pytest.skip(f"jax has no GPU backend: {e}")
    if not gpus:
        pytest.skip("jax has no GPU device")
    return jax


@pytest.fixture(scope="session")
def numba_cuda():
    if _REASON is not None:
        pytest.skip(_REASON)
    pytest.importorskip("numba")
    cuda = pytest.importorskip("numba.cuda")
    try:
        if not cuda.is_available():
            pytest.skip("numba.cuda is not available")
    except Exception as e:
        pytest.skip(f"numba.cuda unusable: {e}")
    return cuda


@pytest.fixture
def rng(request):
    """A NumPy generator seeded from the test's id, so every test is reproducible."""
    np = pytest.importorskip("numpy")
    seed = zlib.crc32(request.node.nodeid.encode())
    return np.random.default_rng(seed)


@pytest.fixture
def no_leak():
    """Checks that the test leaves strata's CUDA memory_allocated() where it found it."""
    gc.collect()
    st.cuda.synchronize()
    before = st.cuda.memory_allocated()
    yield before
    gc.collect()
    st.cuda.synchronize()
    assert st.cuda.memory_allocated() == before


def pytest_collection_modifyitems(config, items):
    """``STRATA_GPU_SHARD=i/n`` keeps every n-th test from the i-th (0-based), so that the
    GPU check can run the suite as n processes at once (``scripts/gpu_check.sh``)."""
    shard = os.environ.get("STRATA_GPU_SHARD")
    if not shard:
        return
    i, n = (int(x) for x in shard.split("/"))
    if not 0 <= i < n:
        raise pytest.UsageError(f"STRATA_GPU_SHARD={shard}: want i/n with 0 <= i < n")
    keep = [item for k, item in enumerate(items) if k % n == i]
    config.hook.pytest_deselected(items=[item for k, item in enumerate(items) if k % n != i])
    items[:] = keep
