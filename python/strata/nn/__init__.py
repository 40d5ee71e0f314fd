"""Neural-network modules (PyTorch's ``torch.nn``): :class:`Module` with parameters,
children, train/eval modes, state dicts and shared memory; the layers :class:`Linear`,
:class:`Conv2d`, :class:`ReLU`, :class:`GELU`, :class:`Sequential`, :class:`Flatten`,
:class:`Dropout`; :mod:`strata.nn.functional` and :mod:`strata.nn.init`."""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Iterator

import strata as _st
from strata import Tensor

from . import functional, init

__all__ = [
    "Conv2d",
    "Dropout",
    "Flatten",
    "GELU",
    "Linear",
    "Module",
    "Parameter",
    "ReLU",
    "Sequential",
    "functional",
    "init",
]


class Parameter(Tensor):
    """A tensor that is a module's parameter: a leaf that requires grad (by default),
    sharing ``data``'s storage."""

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True):
        if data is None:
            data = _st.empty(0)
        p = Tensor.__new__(cls, data, _alias=True)
        p.requires_grad_(requires_grad)
        return p

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __reduce_ex__(self, protocol):
        return (_rebuild_parameter, (self.detach(), self.requires_grad))


def _rebuild_parameter(data: Tensor, requires_grad: bool) -> Parameter:
    return Parameter(data, requires_grad)


class Module:
    """Base class of the layers: assigning a :class:`Parameter` or a :class:`Module` to an
    attribute registers it (``parameters()``, ``children()``, ``state_dict()``)."""

    def __init__(self) -> None:
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "training", True)

    # ----- registration -----

    def __setattr__(self, name: str, value) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign before Module.__init__() call")
        for d in (self._parameters, self._buffers, self._modules):
            d.pop(name, None)
        if isinstance(value, Parameter):
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._modules[name] = value
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name: str):
        d = self.__dict__
        for key in ("_parameters", "_buffers", "_modules"):
            if key in d and name in d[key]:
                return d[key][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for d in (self._parameters, self._buffers, self._modules):
            if name in d:
                del d[name]
                return
        object.__delattr__(self, name)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Registers ``param`` (``None``: an absent optional parameter) as ``name``."""
        if param is None:
            self._parameters[name] = None
        else:
            setattr(self, name, param)

    def register_buffer(self, name: str, tensor: Tensor | None) -> None:
        """Registers a tensor that is state but not a parameter (saved in state dicts)."""
        self._buffers[name] = tensor

    def add_module(self, name: str, module: Module | None) -> None:
        """Registers a child module."""
        self._modules[name] = module

    # ----- traversal -----

    def named_parameters(self, prefix: str = "", recurse: bool = True) -> Iterator[tuple[str, Parameter]]:
        """``(name, parameter)`` pairs, children's prefixed with their names; each
        parameter once."""
        seen = set()
        mods = self.named_modules(prefix) if recurse else [(prefix, self)]
        for mp, m in mods:
            for n, p in m._parameters.items():
                if p is None or id(p) in seen:
                    continue
                seen.add(id(p))
                yield (f"{mp}.{n}" if mp else n), p

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """Every parameter, children's included."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "") -> Iterator[tuple[str, Tensor]]:
        for mp, m in self.named_modules(prefix):
            for n, b in m._buffers.items():
                if b is not None:
                    yield (f"{mp}.{n}" if mp else n), b

    def buffers(self) -> Iterator[Tensor]:
        for _, b in self.named_buffers():
            yield b

    def named_children(self) -> Iterator[tuple[str, Module]]:
        for n, m in self._modules.items():
            if m is not None:
                yield n, m

    def children(self) -> Iterator[Module]:
        for _, m in self.named_children():
            yield m

    def named_modules(self, prefix: str = "") -> Iterator[tuple[str, Module]]:
        """This module and every descendant, each once."""
        seen = set()

        def walk(m: Module, p: str):
            if id(m) in seen:
                return
            seen.add(id(m))
            yield p, m
            for n, c in m.named_children():
                yield from walk(c, f"{p}.{n}" if p else n)

        yield from walk(self, prefix)

    def modules(self) -> Iterator[Module]:
        for _, m in self.named_modules():
            yield m

    def apply(self, fn) -> Module:
        """Calls ``fn`` on every child (recursively), then on this module."""
        for c in self.children():
            c.apply(fn)
        fn(self)
        return self

    # ----- modes and state -----

    def train(self, mode: bool = True) -> Module:
        """Sets training mode (dropout active) here and in every child."""
        for m in self.modules():
            object.__setattr__(m, "training", bool(mode))
        return self

    def eval(self) -> Module:
        """``train(False)``."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clears the parameters' gradients (``None``, or zeros in place)."""
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                p.grad.zero_()

    def share_memory(self) -> Module:
        """Moves every parameter and buffer into shared memory, in place (Hogwild): worker
        processes then update the same parameters."""
        for p in self.parameters():
            p.share_memory_()
        for b in self.buffers():
            b.share_memory_()
        return self

    def state_dict(self, prefix: str = "") -> OrderedDict:
        """Parameters and buffers by name, detached (they share the modules' storage)."""
        out = OrderedDict()
        for n, p in self.named_parameters(prefix):
            out[n] = p.detach()
        for n, b in self.named_buffers(prefix):
            out[n] = b.detach()
        return out

    def load_state_dict(self, state_dict, strict: bool = True):
        """Copies the tensors of ``state_dict`` into the parameters and buffers of the same
        names, in place. With ``strict``, missing and unexpected keys are an error."""
        own = dict(self.named_parameters())
        own.update(self.named_buffers())
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        if strict and (missing or unexpected):
            raise RuntimeError(
                f"Error(s) in loading state_dict for {type(self).__name__}: "
                f"missing keys {missing}, unexpected keys {unexpected}"
            )
        with _st.no_grad():
            for k, v in state_dict.items():
                if k not in own:
                    continue
                if tuple(own[k].shape) != tuple(v.shape):
                    raise RuntimeError(
                        f"size mismatch for {k}: copying a param with shape {list(v.shape)} "
                        f"from checkpoint, the shape in current model is {list(own[k].shape)}."
                    )
                own[k].copy_(v)
        return missing, unexpected

    # ----- calling -----

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"Module [{type(self).__name__}] is missing the required \"forward\" function")

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__}({self.extra_repr()}"]
        kids = list(self.named_children())
        if not kids:
            return lines[0] + ")"
        for n, m in kids:
            sub = repr(m).replace("\n", "\n  ")
            lines.append(f"  ({n}): {sub}")
        return "\n".join(lines) + "\n)"


class Linear(Module):
    """``y = x @ weight.T + bias``, initialised as PyTorch's (uniform in ±1/√in)."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, dtype=None):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        dt = dtype or _st.float32
        self.weight = Parameter(_st.empty(out_features, in_features, dtype=dt))
        if bias:
            self.bias = Parameter(_st.empty(out_features, dtype=dt))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1.0 / math.sqrt(self.in_features) if self.in_features > 0 else 0.0
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input: Tensor) -> Tensor:
        return functional.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Conv2d(Module):
    """2-d convolution over ``(N, C, H, W)`` inputs (see :func:`functional.conv2d`)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 dilation=1, bias: bool = True, dtype=None):
        super().__init__()
        kh, kw = (kernel_size, kernel_size) if isinstance(kernel_size, int) else tuple(kernel_size)
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = (kh, kw)
        self.stride, self.padding, self.dilation = stride, padding, dilation
        dt = dtype or _st.float32
        self.weight = Parameter(_st.empty(out_channels, in_channels, kh, kw, dtype=dt))
        if bias:
            self.bias = Parameter(_st.empty(out_channels, dtype=dt))
        else:
            self.register_parameter("bias", None)
        fan_in = in_channels * kh * kw
        bound = 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input: Tensor) -> Tensor:
        return functional.conv2d(input, self.weight, self.bias, self.stride, self.padding, self.dilation)

    def extra_repr(self) -> str:
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, padding={self.padding}")


class ReLU(Module):
    def forward(self, input: Tensor) -> Tensor:
        return input.relu()


class GELU(Module):
    def forward(self, input: Tensor) -> Tensor:
        return input.gelu()


class Flatten(Module):
    """Flattens dims ``start_dim..end_dim`` (by default all but the batch dim)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input: Tensor) -> Tensor:
        return input.flatten(self.start_dim, self.end_dim)


class Dropout(Module):
    """Zeroes elements with probability ``p`` while training (see
    :func:`functional.dropout`)."""

    def __init__(self, p: float = 0.5):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p

    def forward(self, input: Tensor) -> Tensor:
        return functional.dropout(input, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"


class Sequential(Module):
    """The given modules applied in order."""

    def __init__(self, *modules: Module):
        super().__init__()
        for i, m in enumerate(modules):
            self.add_module(str(i), m)

    def forward(self, input):
        for m in self.children():
            input = m(input)
        return input

    def __getitem__(self, i: int) -> Module:
        return list(self.children())[i]

    def __len__(self) -> int:
        return len(self._modules)
