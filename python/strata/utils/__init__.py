"""Utilities under PyTorch's ``torch.utils`` spellings: :mod:`strata.utils.dlpack`."""

from . import dlpack

__all__ = ["dlpack"]
