"""A project's test functions run as pytest and unittest run them, for the code's own calls
(``owncalls``): a ``test*`` function with the pytest fixtures it takes (the test file's own and
those of the ``conftest.py`` beside it, each made once, a ``yield`` fixture up to its ``yield``),
and the ``test*`` methods of a ``unittest.TestCase`` between its ``setUp`` and ``tearDown``."""

from __future__ import annotations

import ast
import contextlib
import inspect
import os
import tempfile


class Fixtures:
    """The pytest fixtures a test file's functions can take: the file's own and those of the
    ``conftest.py`` beside it, found by their ``fixture`` decorator and made as pytest makes
    them (each fixture's own fixtures first; a ``yield`` fixture up to its ``yield``, finished
    by :meth:`close`), once per file. A fixture that needs anything else (``request``) is
    not made."""

    def __init__(self, module, text: str, path: str, load):
        self.found: dict[str, tuple] = {}  # name -> (function, its source)
        self.made: dict[str, object] = {}
        self.open: list = []  # generators of yield fixtures, to finish
        conftest = os.path.join(os.path.dirname(path), "conftest.py")
        sources = [(module, text)]
        if os.path.isfile(conftest):
            try:
                with open(conftest, encoding="utf-8") as handle:
                    shared = handle.read()
                sources.insert(0, (load(conftest), shared))
            except Exception:  # noqa: BLE001 - a conftest that does not load gives nothing
                pass
        for owner, source in sources:
            for node in ast.parse(source).body:
                if isinstance(node, ast.FunctionDef) and any(
                        "fixture" in ast.unparse(d) for d in node.decorator_list):
                    func = _unwrapped(getattr(owner, node.name, None))
                    if func is not None:
                        self.found[node.name] = (func, ast.get_source_segment(source, node) or "")

    def names(self, name: str, wanted: set, seen: frozenset = frozenset()) -> bool:
        """Whether fixture ``name``'s source, or a fixture it takes, names one of ``wanted``."""
        if name not in self.found or name in seen:
            return False
        func, source = self.found[name]
        return any(w in source for w in wanted) or any(
            self.names(n, wanted, seen | {name}) for n in inspect.signature(func).parameters)

    def make(self, name: str, seen: frozenset = frozenset()):
        """The value of fixture ``name``; ``_NO_VALUE`` when it cannot be made."""
        if name in self.made:
            return self.made[name]
        if name not in self.found or name in seen:
            return _NO_VALUE
        func = self.found[name][0]
        kwargs = arguments(func, self, seen | {name})
        value = _NO_VALUE
        if kwargs is not None:
            try:
                value = func(**kwargs)
                if inspect.isgenerator(value):
                    self.open.append(value)
                    value = next(value)
            except Exception:  # noqa: BLE001 - a fixture that fails gives nothing
                value = _NO_VALUE
        self.made[name] = value
        return value

    def close(self) -> None:
        for generator in reversed(self.open):
            with contextlib.suppress(Exception):
                generator.close()
        self.open.clear()


_NO_VALUE = object()


def _unwrapped(fixture):
    """The function a ``@pytest.fixture`` decorated (pytest 8.4 wraps it in an object)."""
    unwrap = getattr(fixture, "_get_wrapped_function", None)
    func = unwrap() if callable(unwrap) else getattr(fixture, "__wrapped__", fixture)
    return func if inspect.isfunction(func) else None


def run_cases(cls, node: ast.ClassDef, text: str, names: set) -> None:
    """The ``test*`` methods of a ``unittest.TestCase`` class whose source (its ``setUp``
    too) names a class, each between its ``setUp`` and ``tearDown``."""
    import unittest

    segment = ast.get_source_segment(text, node) or ""
    if not (isinstance(cls, type) and issubclass(cls, unittest.TestCase)) or \
            not any(name in segment for name in names):
        return
    for method in node.body:
        if not isinstance(method, ast.FunctionDef) or not method.name.startswith("test"):
            continue
        try:
            case = cls(method.name)
            case.setUp()
            try:
                getattr(case, method.name)()
            finally:
                case.tearDown()
        except Exception:  # noqa: BLE001 - this test failed before a call: try the next
            continue


def arguments(func, fixtures: Fixtures | None = None, seen: frozenset = frozenset()) -> dict | None:
    """What a test function needs: a scratch folder for ``tmp_path``/``tmpdir``, and the
    pytest fixtures of its file (``fixtures``); None when it needs anything else (a fixture
    shapetrace cannot give) or is no plain function."""
    from pathlib import Path

    if not inspect.isfunction(func) or inspect.iscoroutinefunction(func):
        return None
    out = {}
    for name, param in inspect.signature(func).parameters.items():
        if param.default is not param.empty or param.kind in (param.VAR_POSITIONAL,
                                                               param.VAR_KEYWORD):
            continue
        if name in ("tmp_path", "tmpdir"):
            out[name] = Path(tempfile.mkdtemp(dir=os.getcwd()))
            continue
        value = fixtures.make(name, seen) if fixtures is not None else _NO_VALUE
        if value is _NO_VALUE:
            return None
        out[name] = value
    return out
