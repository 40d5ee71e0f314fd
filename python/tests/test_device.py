"""Devices: ``device=`` on every constructor, ``Tensor.to(device)``, the clear
``DeviceError`` for CUDA where no CUDA driver is found (CI), and the host-only checks of
the binding (NumPy/buffer/DLPack export, ``tolist``, printing, saving) on a storage that
reports ``cuda:0`` (made by a test hook; its bytes are host memory). The GPU itself is
tested in ``python/tests/gpu``; these tests skip where a GPU is present."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import strata as st
from _isolated import assert_clean

CUDA_TEXT = "is not available: no CUDA driver was found"

pytestmark = pytest.mark.skipif(
    st.cuda.is_available(), reason="a CUDA device is present (see python/tests/gpu)"
)


def _creators(device):
    """Every constructor that takes ``device=``, called with it."""
    x = st.ones(2, 3)
    return {
        "zeros": lambda: st.zeros(2, 3, device=device),
        "zeros_seq": lambda: st.zeros((2, 3), device=device),
        "ones": lambda: st.ones(2, 3, device=device),
        "empty": lambda: st.empty(2, 3, device=device),
        "full": lambda: st.full((2, 3), 1.5, device=device),
        "arange": lambda: st.arange(6, device=device),
        "linspace": lambda: st.linspace(0, 1, 5, device=device),
        "eye": lambda: st.eye(3, device=device),
        "rand": lambda: st.rand(2, 3, device=device),
        "randn": lambda: st.randn(2, 3, device=device),
        "tensor": lambda: st.tensor([[1.0, 2.0]], device=device),
        "zeros_like": lambda: st.zeros_like(x, device=device),
        "ones_like": lambda: st.ones_like(x, device=device),
        "empty_like": lambda: st.empty_like(x, device=device),
        "full_like": lambda: st.full_like(x, 2, device=device),
        "rand_like": lambda: st.rand_like(x, device=device),
        "randn_like": lambda: st.randn_like(x, device=device),
    }


@pytest.mark.parametrize("device", [None, "cpu", "cpu:0"])
def test_cpu_device_accepted_everywhere(device):
    plain = _creators(None)
    for name, make in _creators(device).items():
        t = make()
        assert t.device == "cpu", name
        if name not in ("rand", "randn", "rand_like", "randn_like"):
            np.testing.assert_array_equal(t.numpy(), plain[name]().numpy(), err_msg=name)


@pytest.mark.parametrize("device", ["cuda", "cuda:0", "cuda:1", "cuda:17"])
def test_cuda_device_is_a_clear_device_error(device):
    want = "cuda:0" if device == "cuda" else device
    for name, make in _creators(device).items():
        with pytest.raises(st.DeviceError) as info:
            make()
        text = str(info.value)
        assert f"device {want} {CUDA_TEXT}" in text, (name, text)
        assert "libcuda.so" in text
        assert isinstance(info.value, RuntimeError)
        assert isinstance(info.value, st.StrataError)


def test_device_error_class():
    assert issubclass(st.DeviceError, st.StrataError)
    assert issubclass(st.DeviceError, RuntimeError)
    assert "DeviceError" in st.__all__
    assert st.DeviceError.__module__ == "strata._errors"


@pytest.mark.parametrize(
    "bad",
    ["gpu", "CUDA", "", "cuda0", "mps", " cpu"],
)
def test_bad_device_string_names_the_text(bad):
    with pytest.raises(ValueError) as info:
        st.zeros(2, device=bad)
    assert str(info.value) == (
        f"device: Expected one of cpu, cuda device type at start of device string: {bad}"
    )


@pytest.mark.parametrize("bad", ["cuda:", "cuda:x", "cuda:-1", "cuda:1:2", "cuda:" + "9" * 30])
def test_bad_device_ordinal_names_the_text(bad):
    with pytest.raises(ValueError, match="Invalid device string"):
        st.arange(3, device=bad)
    with pytest.raises(ValueError, match="Invalid device string"):
        st.ones(2).to(bad)


@pytest.mark.parametrize("bad", [1.5, object(), b"cpu"])
def test_non_string_device_is_a_type_error(bad):
    with pytest.raises(TypeError, match="device must be a string"):
        st.zeros(2, device=bad)


def test_an_integer_device_is_that_cuda_device():
    # PyTorch: device=0 is cuda:0.
    with pytest.raises(st.DeviceError, match=f"device cuda:0 {CUDA_TEXT}"):
        st.zeros(2, device=0)
    with pytest.raises(st.DeviceError, match=f"device cuda:2 {CUDA_TEXT}"):
        st.ones(2).cuda(2)


def test_to_device():
    x = st.arange(6, dtype=st.float32)
    assert x.to("cpu") is not None and x.to("cpu").device == "cpu"
    assert x.to(device="cpu").dtype == st.float32
    assert x.to("cpu", st.float64).dtype == st.float64
    for call in (
        lambda: x.to("cuda"),
        lambda: x.to("cuda:1"),
        lambda: x.to(device="cuda"),
        lambda: x.to("cuda", st.float64),
        lambda: x.to(st.float64, device="cuda:0"),
    ):
        with pytest.raises(st.DeviceError, match=CUDA_TEXT):
            call()
    # Unchanged after the refusals.
    np.testing.assert_array_equal(x.numpy(), np.arange(6, dtype=np.float32))


def test_cuda_requests_never_crash():
    assert_clean(
        """
import strata as st
for dev in ["cuda", "cuda:0", "cuda:3"]:
    for make in (
        lambda: st.zeros(1 << 62, device=dev),
        lambda: st.full((3,), 1, device=dev),
        lambda: st.tensor([1, 2], device=dev),
        lambda: st.arange(10, device=dev),
        lambda: st.ones(2).to(dev),
    ):
        try:
            make()
        except st.DeviceError:
            pass
        else:
            raise SystemExit("no DeviceError for " + dev)
"""
    )


@pytest.fixture
def fake():
    t = st._strata._fake_cuda_tensor(6)
    assert t.device == "cuda:0"
    return t


def _refused(call, op, exc=None):
    with pytest.raises(exc or st.DeviceError) as info:
        call()
    text = str(info.value)
    assert text.startswith(op) and "cuda:0" in text, text
    return text


def test_host_only_operations_refuse_a_cuda_storage(fake, tmp_path):
    _refused(fake.tolist, "tolist")
    _refused(fake.item if fake.numel() == 1 else fake[0].item, "get")
    # PyTorch's TypeError, saying to copy to the host first.
    _refused(fake.numpy, "can't convert cuda:0 device type tensor to numpy", TypeError)
    _refused(lambda: np.asarray(fake), "")
    _refused(lambda: memoryview(fake), "__getbuffer__")
    _refused(lambda: fake.__array_interface__, "__array_interface__")
    _refused(lambda: fake.__dlpack__(), "to_dlpack")
    _refused(lambda: np.from_dlpack(fake), "to_dlpack")
    _refused(fake.explain, "explain")
    _refused(lambda: repr(fake), "format")
    _refused(lambda: str(fake), "format")
    _refused(lambda: float(fake[0]), "get")
    _refused(fake.share_memory_, "share_memory_")
    _refused(lambda: pickle.dumps(fake), "")
    _refused(lambda: st.save(fake, tmp_path / "x.npy"), "npy save")
    assert not (tmp_path / "x.npy").exists()
    _refused(
        lambda: st.safetensors.save_file({"a": fake}, str(tmp_path / "x.st")),
        "safetensors save",
    )
    # Metadata needs no host access.
    assert (fake.shape, fake.stride(), fake.dtype) == ((6,), (1,), st.float32)
    assert fake.__dlpack_device__() == (2, 0)
    assert st.ones(1).__dlpack_device__() == (1, 0)


def test_compute_on_a_cuda_storage_is_refused(fake):
    for name, call in {
        "sum": lambda: fake.sum(),
        "mean": lambda: fake.mean(0),
        "cumsum": lambda: fake.cumsum(0),
        "argmax": lambda: fake.argmax(),
        "max": lambda: fake.max(),
        "fill_": lambda: fake.fill_(1),
        "copy": lambda: fake.clone(),
        "matmul": lambda: fake.matmul(fake),
        "sort": lambda: fake.sort(),
        "argsort": lambda: fake.argsort(),
        "searchsorted": lambda: st.searchsorted(fake, fake),
    }.items():
        _refused(call, name)
    cpu = st.ones(6)
    # copy_ crosses devices (PyTorch's); without a driver it is refused.
    with pytest.raises(st.DeviceError, match=CUDA_TEXT):
        cpu.copy_(fake)
    with pytest.raises(st.DeviceError, match="Expected all tensors to be on the same device"):
        cpu.add_(fake)
    np.testing.assert_array_equal(cpu.numpy(), np.ones(6, np.float32))


def test_cuda_namespace_without_a_driver():
    assert st.cuda.is_available() is False
    assert st.cuda.device_count() == 0
    for call in (
        st.cuda.synchronize,
        st.cuda.memory_allocated,
        st.cuda.memory_reserved,
        st.cuda.max_memory_allocated,
        st.cuda.Stream,
        st.cuda.current_stream,
        lambda: st.cuda.Event(enable_timing=True),
        lambda: st.ones(3).pin_memory(),
        lambda: st.empty(3, pin_memory=True),
        lambda: st.ones(3).cuda(),
        lambda: st.from_dlpack(st.ones(3), device="cuda"),
    ):
        with pytest.raises(st.DeviceError, match=CUDA_TEXT):
            call()
    # empty_cache has nothing to free and is no error; host tensors are not pinned.
    st.cuda.empty_cache()
    assert st.ones(2).is_pinned() is False and st.ones(2).is_cuda is False
    with pytest.raises(AttributeError, match="non-CUDA tensor"):
        st.ones(2).__cuda_array_interface__
