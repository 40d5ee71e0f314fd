"""strata.nn and strata.optim against NumPy references, and training that frees its
graphs."""

import gc
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import strata as st
import strata.nn as nn
import strata.nn.functional as F
import strata.optim as optim
from strata.autograd import gradcheck

ROOT = Path(__file__).resolve().parents[2]


def arr(t):
    return np.asarray(t.detach().contiguous().numpy())


def t64(a, grad=False):
    return st.tensor(np.asarray(a, dtype=np.float64), requires_grad=grad)


def test_linear_forward_and_gradients():
    rng = np.random.default_rng(0)
    lin = nn.Linear(4, 3, dtype=st.float64)
    xv = rng.standard_normal((5, 4))
    y = lin(t64(xv))
    w, b = arr(lin.weight), arr(lin.bias)
    np.testing.assert_allclose(arr(y), xv @ w.T + b, rtol=1e-12)
    assert np.all(np.abs(w) <= 0.5) and np.all(np.abs(b) <= 0.5)  # U(±1/√4)
    y.sum().backward()
    np.testing.assert_allclose(arr(lin.weight.grad), np.ones((5, 3)).T @ xv, rtol=1e-12)
    np.testing.assert_allclose(arr(lin.bias.grad), np.full(3, 5.0))
    assert [n for n, _ in lin.named_parameters()] == ["weight", "bias"]
    assert isinstance(lin.weight, nn.Parameter) and lin.weight.is_leaf


def np_conv2d(x, w, b, stride, pad):
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    oh, ow = (h - kh) // stride + 1, (wd - kw) // stride + 1
    out = np.zeros((n, o, oh, ow))
    for i in range(oh):
        for j in range(ow):
            patch = x[:, :, i * stride : i * stride + kh, j * stride : j * stride + kw]
            out[:, :, i, j] = np.einsum("nchw,ochw->no", patch, w)
    return out + b[None, :, None, None]


@pytest.mark.parametrize("stride,pad", [(1, 0), (2, 1)])
def test_conv2d_matches_numpy_and_finite_differences(stride, pad):
    rng = np.random.default_rng(1)
    xv = rng.standard_normal((2, 3, 5, 6))
    conv = nn.Conv2d(3, 4, 3, stride=stride, padding=pad, dtype=st.float64)
    y = conv(t64(xv))
    want = np_conv2d(xv, arr(conv.weight), arr(conv.bias), stride, pad)
    assert tuple(y.shape) == want.shape
    np.testing.assert_allclose(arr(y), want, rtol=1e-10, atol=1e-12)
    x = t64(rng.standard_normal((1, 2, 4, 4)), grad=True)
    w = t64(rng.standard_normal((2, 2, 2, 2)), grad=True)
    b = t64(rng.standard_normal(2), grad=True)
    assert gradcheck(lambda x, w, b: F.conv2d(x, w, b, stride, pad), (x, w, b))


def test_log_softmax_is_stable_and_cross_entropy_matches_numpy():
    xv = np.array([[1000.0, 0.0, -1000.0], [1.0, 2.0, 3.0]])
    ls = F.log_softmax(t64(xv), 1)
    m = xv.max(1, keepdims=True)
    want = xv - m - np.log(np.exp(xv - m).sum(1, keepdims=True))
    np.testing.assert_allclose(arr(ls), want, rtol=1e-12)
    np.testing.assert_allclose(arr(F.softmax(t64(xv), 1)).sum(1), [1.0, 1.0])
    logits = t64(xv, grad=True)
    target = st.tensor([0, 2])
    loss = F.cross_entropy(logits, target)
    np.testing.assert_allclose(float(loss), -(want[0, 0] + want[1, 2]) / 2, rtol=1e-12)
    loss.backward()
    onehot = np.eye(3)[[0, 2]]
    np.testing.assert_allclose(arr(logits.grad), (np.exp(want) - onehot) / 2, rtol=1e-10, atol=1e-15)
    with pytest.raises(ValueError, match="to match target batch_size"):
        F.nll_loss(ls, st.tensor([0]))
    mse = F.mse_loss(t64([1.0, 2.0]), t64([0.0, 0.0]), reduction="sum")
    assert float(mse) == 5.0


def test_dropout_and_modes():
    st.manual_seed(0)
    d = nn.Dropout(0.5)
    x = st.ones(1000)
    y = d(x)
    kept = arr(y) != 0
    assert 400 < kept.sum() < 600 and np.all(arr(y)[kept] == 2.0)
    d.eval()
    assert np.all(arr(d(x)) == 1.0)
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.Dropout(1.5)


def test_module_structure_and_state_dict(tmp_path):
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Flatten(), nn.Linear(8, 2))
    names = [n for n, _ in model.named_parameters()]
    assert names == ["0.weight", "0.bias", "3.weight", "3.bias"]
    assert len(list(model.children())) == 4 and len(model) == 4
    model.eval()
    assert not any(m.training for m in model.modules())
    model.train()
    path = tmp_path / "model.safetensors"
    st.safetensors.save_file({k: v.contiguous() for k, v in model.state_dict().items()}, path)
    other = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Flatten(), nn.Linear(8, 2))
    other.load_state_dict(st.safetensors.load_file(path))
    x = st.randn(3, 4)
    np.testing.assert_array_equal(arr(model(x)), arr(other(x)))
    with pytest.raises(RuntimeError, match="missing keys"):
        other.load_state_dict({})
    model(x).sum().backward()
    assert all(p.grad is not None for p in model.parameters())
    model.zero_grad()
    assert all(p.grad is None for p in model.parameters())
    model.share_memory()
    assert all(p.is_shared() for p in model.parameters())


def np_sgd(p, grads, lr, momentum, dampening, wd, nesterov):
    buf = None
    for g in grads:
        d = g + wd * p
        if momentum:
            buf = d.copy() if buf is None else momentum * buf + (1 - dampening) * d
            d = d + momentum * buf if nesterov else buf
        p = p - lr * d
    return p


@pytest.mark.parametrize(
    "kw",
    [
        dict(lr=0.1),
        dict(lr=0.1, momentum=0.9),
        dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01),
        dict(lr=0.05, momentum=0.5, dampening=0.1),
    ],
)
def test_sgd_matches_numpy(kw):
    rng = np.random.default_rng(3)
    p0 = rng.standard_normal(5)
    grads = [rng.standard_normal(5) for _ in range(4)]
    p = nn.Parameter(t64(p0))
    opt = optim.SGD([p], **kw)
    for g in grads:
        p.grad = t64(g)
        opt.step()
    want = np_sgd(p0, grads, kw["lr"], kw.get("momentum", 0), kw.get("dampening", 0),
                  kw.get("weight_decay", 0), kw.get("nesterov", False))
    np.testing.assert_allclose(arr(p), want, rtol=1e-12)


@pytest.mark.parametrize("cls,wd", [(optim.Adam, 0.0), (optim.Adam, 0.1), (optim.AdamW, 0.1)])
def test_adam_matches_numpy(cls, wd):
    rng = np.random.default_rng(4)
    p0 = rng.standard_normal(6)
    grads = [rng.standard_normal(6) for _ in range(5)]
    p = nn.Parameter(t64(p0))
    opt = cls([p], lr=0.01, weight_decay=wd)
    for g in grads:
        p.grad = t64(g)
        opt.step()
    q, m, v = p0.copy(), np.zeros(6), np.zeros(6)
    for t, g in enumerate(grads, 1):
        if cls is optim.AdamW:
            q = q * (1 - 0.01 * wd)
        else:
            g = g + wd * q
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        q = q - 0.01 * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-8)
    np.testing.assert_allclose(arr(p), q, rtol=1e-10)


def _rss_kib():
    with open(f"/proc/{os.getpid()}/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def _live_tensors():
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, st.Tensor))


def test_training_loop_frees_its_graphs():
    st.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    opt = optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x, y = st.randn(64, 16), st.arange(64) % 4

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return float(loss)

    first = step()
    for _ in range(200):
        step()
    tensors, rss = _live_tensors(), _rss_kib()
    for _ in range(1000):
        last = step()
    assert last < first
    assert _live_tensors() <= tensors + 2
    assert _rss_kib() - rss < 4096, "RSS grew by more than 4 MiB over 1000 steps"


def test_hogwild_example_trains_the_shared_model():
    r = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "hogwild.py")],
        capture_output=True, text=True, timeout=300,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("after:")][0]
    acc = float(line.split("accuracy")[1].split("%")[0])
    assert acc >= 95.0, r.stdout
    r = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "hogwild.py"), "--quick", "--start-method", "spawn"],
        capture_output=True, text=True, timeout=300,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert "after:" in r.stdout, r.stdout
