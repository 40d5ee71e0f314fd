"""Reverse-mode automatic differentiation, with PyTorch's API.

The graph and the engine live in the Rust core (``strata::autograd``); this module adds
the Python-side API over them: grad-mode context managers, :func:`grad`,
:func:`backward`, custom ops through :class:`Function`, and :func:`gradcheck` /
:func:`gradgradcheck` (finite differences in float64).
"""

from __future__ import annotations

import functools
import itertools

from . import _strata
from ._errors import AutogradError
from ._strata import Tensor, is_grad_enabled

Node = _strata.Node

__all__ = [
    "Function",
    "FunctionCtx",
    "Node",
    "backward",
    "enable_grad",
    "grad",
    "gradcheck",
    "gradgradcheck",
    "is_grad_enabled",
    "no_grad",
    "set_grad_enabled",
]


class _GradMode:
    """A context manager and decorator that sets this thread's grad mode."""

    _mode = True

    def __enter__(self):
        self._prev = _strata._set_grad_enabled(self._mode)
        return self

    def __exit__(self, *exc):
        _strata._set_grad_enabled(self._prev)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with self.__class__():
                return fn(*args, **kwargs)

        return wrapped


class no_grad(_GradMode):
    """No graph is recorded inside (PyTorch's ``torch.no_grad``): for inference and for
    optimizer steps that update leaves in place."""

    _mode = False


class enable_grad(_GradMode):
    """Graphs are recorded inside, even within :class:`no_grad`."""

    _mode = True


class set_grad_enabled(_GradMode):
    """Sets grad mode on (``True``) or off at once; as a context manager, restores the
    previous mode on exit."""

    def __init__(self, mode: bool):
        self._mode = bool(mode)
        self._prev = _strata._set_grad_enabled(self._mode)

    def __enter__(self):
        return self

    def __call__(self, fn):
        mode = self._mode
        _strata._set_grad_enabled(self._prev)

        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with set_grad_enabled(mode):
                return fn(*args, **kwargs)

        return wrapped


def _as_tuple(x):
    if x is None:
        return ()
    if isinstance(x, Tensor):
        return (x,)
    return tuple(x)


def grad(
    outputs,
    inputs,
    grad_outputs=None,
    retain_graph=None,
    create_graph=False,
    allow_unused=None,
    materialize_grads=False,
):
    """The gradients of ``outputs`` with respect to ``inputs``, without touching any
    ``.grad`` (PyTorch's ``torch.autograd.grad``)."""
    outs = _as_tuple(outputs)
    ins = _as_tuple(inputs)
    gos = None if grad_outputs is None else list(_as_tuple(grad_outputs))
    if allow_unused is None:
        allow_unused = materialize_grads
    got = _strata._grad(outs, ins, gos, retain_graph, create_graph, allow_unused)
    if materialize_grads:
        from . import zeros_like

        got = tuple(g if g is not None else zeros_like(x) for g, x in zip(got, ins))
    return got


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Backward from several roots at once: each gradient is summed into the leaves'
    ``.grad`` (PyTorch's ``torch.autograd.backward``)."""
    roots = _as_tuple(tensors)
    gts = list(_as_tuple(grad_tensors)) if grad_tensors is not None else [None] * len(roots)
    if len(gts) != len(roots):
        raise AutogradError(
            f"grad_tensors has {len(gts)} entries but tensors has {len(roots)}"
        )
    if retain_graph is None:
        retain_graph = create_graph
    if len(roots) == 1:
        roots[0].backward(gts[0], retain_graph, create_graph, inputs)
        return
    # Several roots: one pass over their sum, each weighted by its gradient.
    from . import ones_like

    total = None
    for r, g in zip(roots, gts):
        if g is None:
            if r.numel() != 1:
                raise AutogradError("grad can be implicitly created only for scalar outputs")
            g = ones_like(r)
        term = (r * g).sum()
        total = term if total is None else total + term
    total.backward(None, retain_graph, create_graph, inputs)


class FunctionCtx:
    """The ``ctx`` a custom :class:`Function`'s ``forward`` and ``backward`` share."""

    def __init__(self):
        self._saved = ()
        self._versions = ()
        self._dirty = ()
        self._non_diff = ()
        self.needs_input_grad = ()

    def save_for_backward(self, *tensors):
        """Keeps ``tensors`` for ``backward`` (checked there for in-place writes)."""
        self._saved = tensors
        self._versions = tuple(t._version if isinstance(t, Tensor) else None for t in tensors)

    @property
    def saved_tensors(self):
        for t, v in zip(self._saved, self._versions):
            if isinstance(t, Tensor) and t._version != v:
                raise AutogradError(
                    "one of the variables needed for gradient computation has been "
                    f"modified by an inplace operation: [{t.dtype} {list(t.shape)}] is at "
                    f"version {t._version}; expected version {v} instead."
                )
        return self._saved

    def mark_dirty(self, *tensors):
        """Declares the inputs ``forward`` wrote in place."""
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors):
        """Declares outputs that carry no gradient (indices, masks)."""
        self._non_diff = tensors


class Function:
    """A custom differentiable op: subclass with static ``forward(ctx, *args)`` and
    ``backward(ctx, *grad_outputs)`` (one gradient, or ``None``, per argument of
    ``forward``), and call ``MyOp.apply(*args)``. The outputs ``apply`` returns carry the
    history; an input ``forward`` wrote in place and returned (``ctx.mark_dirty``) is
    returned as itself, its ``grad_fn`` now the function's node, as PyTorch does."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("a Function subclass must define forward")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("a Function subclass must define backward")

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = FunctionCtx()
        ctx.needs_input_grad = tuple(
            isinstance(a, Tensor) and a.requires_grad for a in args
        )
        tensor_args = [a for a in args if isinstance(a, Tensor)]
        with no_grad():
            out = cls.forward(ctx, *args, **kwargs)
        tracked = is_grad_enabled() and any(t.requires_grad for t in tensor_args)
        if not tracked:
            return out
        for d in ctx._dirty:
            if d.is_leaf and d.requires_grad:
                raise AutogradError(
                    "a leaf Variable that requires grad is being used in an in-place operation."
                )
        single = isinstance(out, Tensor)
        outs = [out] if single else list(out)
        non_diff = {id(t) for t in ctx._non_diff}
        picks = [
            i
            for i, o in enumerate(outs)
            if isinstance(o, Tensor) and id(o) not in non_diff and o.dtype.is_floating_point
        ]
        positions = [i for i, a in enumerate(args) if isinstance(a, Tensor)]

        def run_backward(grads, needs):
            # An output that received no gradient arrives as zeros (PyTorch's default,
            # materialized grads).
            res = cls.backward(ctx, *grads)
            if not isinstance(res, tuple):
                res = (res,)
            if len(res) < len(args):
                raise AutogradError(
                    f"function {cls.__name__}Backward returned an incorrect number of "
                    f"gradients (expected {len(args)}, got {len(res)})"
                )
            return tuple(res[i] for i in positions)

        recorded = _strata._record_function(
            cls.__name__ + "Backward", tensor_args, [outs[i] for i in picks], run_backward
        )
        dirty = {id(d) for d in ctx._dirty}
        for i, t in zip(picks, recorded):
            if id(outs[i]) in dirty:
                _strata._take_history(outs[i], t)  # the input object itself carries it
            else:
                outs[i] = t
        return outs[0] if single else tuple(outs)


def _flat_values(t):
    return [complex(v) if t.is_complex() else float(v)
            for v in t.detach().contiguous().reshape(-1).tolist()]


def _perturbed(t, i, delta):
    flat = t.detach().contiguous().reshape(-1).clone()
    flat[i] = flat[i].item() + delta
    return flat.reshape(t.shape)


def gradcheck(
    func,
    inputs,
    *,
    eps=1e-6,
    atol=1e-5,
    rtol=1e-3,
    raise_exception=True,
    nondet_tol=0.0,
):
    """Compares the gradients autograd computes for ``func`` at ``inputs`` (float64 or
    complex128 tensors; those that require grad are checked) with central finite
    differences, output element by output element (the full Jacobian). Complex numbers as
    PyTorch: an output's real and imaginary parts are checked apart (gradient outputs 1
    and 1j), and the gradient of a complex input ``z = x + iy`` is compared with
    ``∂/∂x + i·∂/∂y`` of that part. Returns True, or raises :class:`AutogradError` naming
    the first mismatch (False with ``raise_exception=False``)."""
    from . import tensor as _tensor

    inputs = _as_tuple(inputs)
    outs = _as_tuple(func(*inputs))
    checked = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    for oi, out in enumerate(outs):
        if not out.requires_grad:
            continue
        # (gradient output, the part of the output it selects)
        parts = [(1.0, "real"), (1j, "imag")] if out.is_complex() else [(None, "real")]
        n_out = out.numel()
        for j in range(n_out):
            sel = out.reshape(-1)[j]
            for weight, part in parts:
                go = None if weight is None else _tensor(weight, dtype=out.dtype)
                analytic = grad(sel, [inputs[i] for i in checked], go, retain_graph=True,
                                allow_unused=True)
                for k, i in enumerate(checked):
                    x = inputs[i]
                    a_vals = (
                        _flat_values(analytic[k]) if analytic[k] is not None
                        else [0.0] * x.numel()
                    )
                    # (direction of the perturbation, the component of the gradient)
                    dirs = [(1.0, "real"), (1j, "imag")] if x.is_complex() else [(1.0, "real")]
                    for e in range(x.numel()):
                        for unit, comp in dirs:
                            vals = []
                            for d in (eps, -eps):
                                # With grad mode on and the probe requiring grad like the
                                # input, so that a function that itself differentiates
                                # (gradgradcheck's) runs as it does for the analytic pass.
                                args = list(inputs)
                                args[i] = _perturbed(x, e, d * unit).requires_grad_(
                                    x.requires_grad)
                                v = _as_tuple(func(*args))[oi].reshape(-1)[j].item()
                                vals.append(complex(v).imag if part == "imag" else
                                            complex(v).real)
                            numeric = (vals[0] - vals[1]) / (2 * eps)
                            a = complex(a_vals[e])
                            a = a.imag if comp == "imag" else a.real
                            if abs(a - numeric) > atol + rtol * abs(numeric):
                                if not raise_exception:
                                    return False
                                what = "" if part == "real" and not out.is_complex() else (
                                    f" ({part} part of the output)")
                                into = "" if not x.is_complex() else (
                                    f" ({comp} part of the input)")
                                raise AutogradError(
                                    f"Jacobian mismatch for output {oi} with respect to input "
                                    f"{i},\nelement {e} of the input{into}, {j} of the "
                                    f"output{what}: numerical {numeric!r}, analytical {a!r}"
                                )
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  raise_exception=True):
    """:func:`gradcheck` of the first derivatives: checks the second derivatives of
    ``func`` (the backward pass, built with ``create_graph=True``)."""
    from . import randn_like

    inputs = _as_tuple(inputs)
    outs = _as_tuple(func(*inputs))
    if grad_outputs is None:
        grad_outputs = tuple(
            randn_like(o).requires_grad_() for o in outs
        )
    grad_outputs = _as_tuple(grad_outputs)
    n = len(inputs)
    checked = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]

    def first(*args):
        xs, gos = args[:n], args[n:]
        ys = _as_tuple(func(*xs))
        gs = grad(ys, [xs[i] for i in checked], gos, create_graph=True, allow_unused=True)
        return tuple(g for g in gs if g is not None)

    return gradcheck(
        first,
        tuple(itertools.chain(inputs, grad_outputs)),
        eps=eps,
        atol=atol,
        rtol=rtol,
        raise_exception=raise_exception,
    )
