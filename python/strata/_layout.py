"""``strata.strided`` and its type, ``strata.layout``: PyTorch's ``torch.layout``.

A strata tensor is always a strided view of a storage (dtype, shape, signed strides,
offset), so ``tensor.layout`` is always ``strata.strided``; the object exists so that
code written against PyTorch's metadata (``t.layout == torch.strided``) reads the same.
"""

from __future__ import annotations

__all__ = ["layout", "strided"]


class layout:
    """A tensor's memory layout. strata has one: :data:`strided`."""

    __slots__ = ("_name",)
    _made: dict[str, "layout"] = {}

    def __new__(cls, name: str):
        if name not in ("strided",):
            raise ValueError(f"layout: strata has only the strided layout, got {name!r}")
        known = cls._made.get(name)
        if known is None:
            known = cls._made[name] = super().__new__(cls)
            known._name = name
        return known

    def __repr__(self) -> str:
        return f"strata.{self._name}"

    def __reduce__(self):
        # Unpickles as the one object, so `is` comparisons survive a pickle.
        return (layout, (self._name,))


strided = layout("strided")
