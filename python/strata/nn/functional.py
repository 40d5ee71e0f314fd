"""Neural-network functions over strata's differentiable ops (PyTorch's
``torch.nn.functional``): each is a composition of ops that record their own backward, so
no function here has a formula of its own."""

from __future__ import annotations

import strata as _st
from strata import Tensor

__all__ = [
    "conv2d",
    "cross_entropy",
    "dropout",
    "gelu",
    "linear",
    "log_softmax",
    "mse_loss",
    "nll_loss",
    "pad2d",
    "relu",
    "softmax",
]


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """``max(x, 0)``."""
    return input.relu_() if inplace else input.relu()


def gelu(input: Tensor) -> Tensor:
    """GELU, the erf form (PyTorch's default)."""
    return input.gelu()


def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``input @ weight.T + bias``."""
    out = input @ weight.T
    return out if bias is None else out + bias


def log_softmax(input: Tensor, dim: int) -> Tensor:
    """``x - logsumexp(x)`` along ``dim``: stable for large inputs (no exp of them)."""
    return input - input.logsumexp(dim, keepdim=True)


def softmax(input: Tensor, dim: int) -> Tensor:
    """``exp(x - logsumexp(x))`` along ``dim``."""
    return log_softmax(input, dim).exp()


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{reduction} is not a valid value for reduction")


def nll_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """The negative log-likelihood of class ``target[i]`` in row ``i`` of ``input``
    (log-probabilities, shape ``(N, C)``)."""
    if input.ndim != 2 or target.ndim != 1:
        raise ValueError(
            f"nll_loss expects input (N, C) and target (N,), got {tuple(input.shape)} and {tuple(target.shape)}"
        )
    if input.shape[0] != target.shape[0]:
        raise ValueError(
            f"Expected input batch_size ({input.shape[0]}) to match target batch_size ({target.shape[0]})."
        )
    rows = _st.arange(input.shape[0])
    picked = input[rows, target.long()]
    return _reduce(-picked, reduction)


def cross_entropy(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """``nll_loss(log_softmax(input, 1), target)``."""
    return nll_loss(log_softmax(input, 1), target, reduction)


def mse_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """The squared error ``(input - target)²``, reduced."""
    return _reduce((input - target).square(), reduction)


def dropout(input: Tensor, p: float = 0.5, training: bool = True) -> Tensor:
    """Zeroes each element with probability ``p`` and scales the rest by ``1/(1-p)``
    (identity when not training)."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0.0
    keep = (_st.rand(*input.shape, dtype=input.dtype) >= p).to(input.dtype)
    return input * keep * (1.0 / (1.0 - p))


def pad2d(input: Tensor, padding: int | tuple[int, int]) -> Tensor:
    """Zero padding of the last two dims (``padding`` rows and columns on each side)."""
    ph, pw = (padding, padding) if isinstance(padding, int) else padding
    if ph == 0 and pw == 0:
        return input
    *lead, h, w = input.shape
    out = _st.zeros(*lead, h + 2 * ph, w + 2 * pw, dtype=input.dtype)
    out[..., ph : ph + h, pw : pw + w] = input
    return out


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def conv2d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride=1,
    padding=0,
    dilation=1,
) -> Tensor:
    """2-d convolution (cross-correlation, as PyTorch) of ``input`` ``(N, C, H, W)`` with
    ``weight`` ``(O, C, kH, kW)``: the patches are a zero-copy strided view of the input
    (im2col by ``as_strided``), contracted with the weight by one matrix product."""
    if input.ndim != 4 or weight.ndim != 4:
        raise ValueError(
            f"conv2d expects a 4-d input and weight, got {input.ndim}-d and {weight.ndim}-d"
        )
    n, c, _, _ = input.shape
    o, wc, kh, kw = weight.shape
    if wc != c:
        raise ValueError(
            f"Given groups=1, weight of size {list(weight.shape)}, expected input{list(input.shape)} to have {wc} channels, but got {c} channels instead"
        )
    sh, sw = _pair(stride)
    dh, dw = _pair(dilation)
    x = pad2d(input, _pair(padding)).contiguous()
    _, _, h, w = x.shape
    oh = (h - dh * (kh - 1) - 1) // sh + 1
    ow = (w - dw * (kw - 1) - 1) // sw + 1
    if oh <= 0 or ow <= 0:
        raise ValueError(
            f"conv2d: the kernel ({kh}x{kw}, dilation {dh}x{dw}) is larger than the padded input ({h}x{w})"
        )
    s = x.stride()
    # (N, oh, ow, C, kh, kw): a view of x, each window where it lies.
    patches = x.as_strided(
        (n, oh, ow, c, kh, kw),
        (s[0], s[2] * sh, s[3] * sw, s[1], s[2] * dh, s[3] * dw),
        x.storage_offset(),
    )
    cols = patches.reshape(n * oh * ow, c * kh * kw)
    out = cols @ weight.reshape(o, c * kh * kw).T  # (N·oh·ow, O)
    if bias is not None:
        out = out + bias
    return out.reshape(n, oh, ow, o).permute(0, 3, 1, 2)
