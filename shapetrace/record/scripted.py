"""TorchScript helpers seen as Python while recording.

A function compiled with ``@torch.jit.script`` runs as one compiled graph: its ops never reach
the tracer's torch-function mode, so a bug inside it (rotary angles applied along the wrong axis,
a mask built inverted) has no line. While a recording of a model runs, each ScriptFunction named
in the model's own source files (their module globals, and the globals of the functions swapped
in, so helpers calling helpers are seen too) is replaced by the Python function it was compiled
from; the compiled functions are put back when the recording ends, so code outside the trace
runs compiled as before. Library files (torch, installed packages) are left alone, and so is a
function whose Python would call another function than its compiled graph does (a helper
defined again after it was scripted).
"""

from __future__ import annotations

import sys
import weakref

from ..base.compat import all_modules, script_function_class, script_original
from ..base.source import is_library_file


class PythonScripts:
    """While entered, the ScriptFunctions the model's files name run as their Python."""

    def __init__(self, model):
        self.model = model
        self.swapped: list[tuple[dict, str, object]] = []

    def __enter__(self) -> PythonScripts:
        if self.model is None:
            return self
        names = _OWN_MODULES.get(self.model)
        if names is None:  # remembered per model: a trace is entered many times over one model
            names = {type(m).__module__ for m in all_modules(self.model)}
            names = _OWN_MODULES[self.model] = tuple(n for n in names if not _library(n))
        queue = [vars(sys.modules[n]) for n in names if n in sys.modules]
        seen: set[int] = set()
        compiled = script_function_class()
        while queue:
            space = queue.pop()
            if id(space) in seen or _library(space.get("__name__")):
                continue
            seen.add(id(space))
            for key, value in list(space.items()):
                if not isinstance(value, compiled):  # most names: settled by one isinstance
                    continue
                original = script_original(value)
                if original is None or _rebound_after(original):
                    continue
                self.swapped.append((space, key, value))
                space[key] = original
                queue.append(original.__globals__)
        return self

    def __exit__(self, *exc) -> None:
        for space, key, value in reversed(self.swapped):
            space[key] = value
        self.swapped = []


def _rebound_after(func) -> bool:
    """Whether a global name ``func`` calls is bound to a function its file defines after
    ``func`` (``modulate`` defined again further down): TorchScript compiled the one bound when
    ``func`` was scripted, and ``func``'s Python would call the later one. Such a function stays
    compiled."""
    code = func.__code__
    for name in code.co_names:
        target = getattr(func.__globals__.get(name), "__code__", None)
        if target is not None and target.co_filename == code.co_filename \
                and target.co_firstlineno > code.co_firstlineno:
            return True
    return False


_LIBRARY: dict[str, bool] = {}
#: model -> the names of the user's modules that define its classes
_OWN_MODULES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _library(name: str | None) -> bool:
    """Whether the module of that name is torch's, an installed package's or Python's
    (remembered: a trace is entered many times over the same few modules)."""
    if name is None:
        return False
    found = _LIBRARY.get(name)
    if found is None:
        module = sys.modules.get(name)
        filename = getattr(module, "__file__", None) or "<unknown>"
        found = _LIBRARY[name] = is_library_file(filename, installed_is_library=True)
    return found
