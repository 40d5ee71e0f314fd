"""Optimizers (PyTorch's ``torch.optim``): :class:`SGD` (momentum, dampening, weight
decay, Nesterov), :class:`Adam` and :class:`AdamW`. Each step updates the parameters in
place under ``no_grad``, so parameters in shared memory are updated for every process
that maps them (Hogwild)."""

from __future__ import annotations

import math

import strata as _st

__all__ = ["Adam", "AdamW", "Optimizer", "SGD"]


class Optimizer:
    """Holds parameter groups (``lr`` and the other options per group) and per-parameter
    state."""

    def __init__(self, params, defaults: dict):
        self.defaults = defaults
        self.state: dict[int, dict] = {}
        params = list(params)
        if not params:
            raise ValueError("optimizer got an empty parameter list")
        groups = params if isinstance(params[0], dict) else [{"params": params}]
        self.param_groups = []
        for g in groups:
            group = dict(defaults)
            group.update(g)
            group["params"] = list(group["params"])
            self.param_groups.append(group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        for g in self.param_groups:
            for p in g["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    p.grad.zero_()

    def _state(self, p) -> dict:
        return self.state.setdefault(id(p), {})

    def step(self, closure=None):
        loss = None
        if closure is not None:
            with _st.enable_grad():
                loss = closure()
        with _st.no_grad():
            for g in self.param_groups:
                for p in g["params"]:
                    if p.grad is None:
                        continue
                    state = self._state(p)
                    if p.is_complex():
                        # As PyTorch: a complex parameter steps as its real pairs (Adam's
                        # second moments per part, never complex squares).
                        self._update(_st.view_as_real(p), _st.view_as_real(p.grad), g, state)
                    else:
                        self._update(p, p.grad, g, state)
        return loss

    def _update(self, p, grad, group, state) -> None:
        raise NotImplementedError


class SGD(Optimizer):
    """Stochastic gradient descent, PyTorch's update:
    ``b = μ·b + (1−dampening)·g``; ``p −= lr·(g + μ·b if nesterov else b)``."""

    def __init__(self, params, lr: float = 1e-3, momentum: float = 0.0, dampening: float = 0.0,
                 weight_decay: float = 0.0, nesterov: bool = False, maximize: bool = False):
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov, maximize=maximize))

    def _update(self, p, grad, group, state) -> None:
        d = -grad if group["maximize"] else grad
        if group["weight_decay"]:
            d = d + p * group["weight_decay"]
        mu = group["momentum"]
        if mu:
            st = state
            buf = st.get("momentum_buffer")
            if buf is None:
                buf = st["momentum_buffer"] = d.clone()
            else:
                buf.mul_(mu).add_(d * (1 - group["dampening"]))
            d = d + buf * mu if group["nesterov"] else buf
        p.sub_(d * group["lr"])


class Adam(Optimizer):
    """Adam (``weight_decay`` added to the gradient, as PyTorch's Adam)."""

    _decoupled = False

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, amsgrad: bool = False):
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not (0.0 <= betas[0] < 1.0 and 0.0 <= betas[1] < 1.0):
            raise ValueError(f"Invalid beta parameters: {betas}")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad))

    def _update(self, p, grad, group, state) -> None:
        lr, (b1, b2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        if wd:
            if self._decoupled:
                p.mul_(1 - lr * wd)
            else:
                grad = grad + p * wd
        st = state
        if not st:
            st["step"] = 0
            st["exp_avg"] = _st.zeros_like(p)
            st["exp_avg_sq"] = _st.zeros_like(p)
            if group["amsgrad"]:
                st["max_exp_avg_sq"] = _st.zeros_like(p)
        st["step"] += 1
        t = st["step"]
        m, v = st["exp_avg"], st["exp_avg_sq"]
        m.mul_(b1).add_(grad * (1 - b1))
        v.mul_(b2).add_(grad * grad * (1 - b2))
        if group["amsgrad"]:
            vmax = st["max_exp_avg_sq"]
            vmax.copy_(vmax.maximum(v))
            v = vmax
        bc1 = 1 - b1**t
        bc2 = 1 - b2**t
        denom = (v / bc2).sqrt() + eps
        p.sub_(m / denom * (lr / bc1))


class AdamW(Adam):
    """Adam with decoupled weight decay (``p *= 1 − lr·wd`` before the step); PyTorch's
    default ``weight_decay`` of 0.01."""

    _decoupled = True

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad)
