"""The type stubs (python/strata/__init__.pyi) cover the runtime API: every public name of
the package, every public Tensor / dtype / UntypedStorage attribute, and the stub parses."""

from __future__ import annotations

import ast
import pathlib

import pytest

import strata as st

STUB = pathlib.Path(st.__file__).with_name("__init__.pyi")


@pytest.fixture(scope="module")
def stub_tree():
    return ast.parse(STUB.read_text(), filename=str(STUB))


def _defined(body):
    names = set()
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.ImportFrom):
            names.update(a.asname or a.name for a in node.names)
        elif isinstance(node, ast.If):
            names |= _defined(node.body) | _defined(node.orelse)
    return names


def _class(tree, name):
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return node
    raise AssertionError(f"class {name} missing from the stub")


def test_stub_declares_every_public_name(stub_tree):
    defined = _defined(stub_tree.body)
    public = {n for n in dir(st) if not n.startswith("_")} - {"annotations", "tour"}
    missing = sorted(public - defined)
    assert not missing, missing
    assert set(st.__all__) <= defined


def test_stub_all_matches_runtime(stub_tree):
    for node in stub_tree.body:
        if isinstance(node, ast.Assign) and any(
            getattr(t, "id", None) == "__all__" for t in node.targets
        ):
            assert ast.literal_eval(node.value) == st.__all__
            return
    raise AssertionError("__all__ missing from the stub")


@pytest.mark.parametrize("cls", ["Tensor", "dtype", "UntypedStorage"])
def test_stub_declares_every_class_attribute(stub_tree, cls):
    node = _class(stub_tree, cls)
    defined = _defined(node.body)
    runtime = getattr(st, cls)
    wanted = {n for n in dir(runtime) if not n.startswith("__") or n in vars(runtime)}
    wanted -= {
        "__doc__",
        "__module__",
        "__new__",
        "__dict__",
        "__weakref__",
        "__init__",
        "__str__",
        "__hash__",
        "__reduce__",
    }
    wanted -= {n for n in wanted if n.startswith("__") and n not in vars(runtime)}
    if cls != "Tensor":
        wanted -= {"__lt__", "__le__", "__gt__", "__ge__"}  # PyO3 slots that only refuse
    missing = sorted(n for n in wanted if n not in defined)
    assert not missing, missing
