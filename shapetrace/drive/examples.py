"""The file's own example call: an ``if __name__ == "__main__":`` block that builds the class and
calls it (``x = torch.randn(50, 49, 512)``, ``m = AFT(d_model=512, n=49)``, ``m(x)``), or a
test or example of its project that does.

Its sizes are the author's, not probe sizes, but they say how the constructor's arguments and
the inputs' axes relate: ``n=49`` beside an input of 49 tokens says ``n`` is the sequence length
(its default fixes it, and any other length fails). :func:`example_of` reads the block (nothing
is run); :func:`sizes_by_example` turns what it says into dims: an argument whose example value
is the size of an input axis takes that axis's dim, and the inputs take the example's shapes with
each size a dim where one is known.

This reading is the fallback: before anything is guessed, ``owncalls`` runs the same code (the
main block, the tests and examples that name the class) and ``replay`` checks the call it makes;
it finds that code with :func:`usage_files` and :func:`package_base` here.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache

from ..base.errors import TargetError, UsageError
from ..base.names import DIM_MEANINGS, size_of
from ..base.source import class_file

_MAKERS = frozenset({"randn", "rand", "zeros", "ones", "empty", "randint", "full"})


@dataclass
class Example:
    """What the example block passes: constructor arguments that are literal numbers, by name
    (positional ones by position), and the shapes of the tensors the instance is called with."""

    init: dict = field(default_factory=dict)
    init_positional: list = field(default_factory=list)
    inputs: list = field(default_factory=list)  # a tuple of ints per tensor argument, or None
    token_inputs: set = field(default_factory=set)  # positions made with randint


def example_of(cls: type) -> Example | None:
    """The first call of ``cls`` (built, then called) in its file's main block, else in the
    tests and examples of its project (a ``tests``/``examples`` folder beside its package or
    file, each test function and script read whole), or None."""
    path = class_file(cls)
    if not path:
        return None
    try:
        stamp = os.stat(path).st_mtime_ns
    except OSError:
        return None
    for body in _main_blocks(path, stamp):
        found = _read(body, cls.__name__)
        if found is not None:
            return found
    for other in usage_files(os.path.dirname(os.path.realpath(path))):
        try:
            other_stamp = os.stat(other).st_mtime_ns
        except OSError:
            continue
        for body in _bodies(other, other_stamp, cls.__name__):
            found = _read(body, cls.__name__)
            if found is not None:
                return found
    return None


#: folders of a project that call its modules the way their authors mean
_USAGE_FOLDERS = ("tests", "test", "examples", "example")
#: how many files of those folders are read
_USAGE_FILES = 100


@lru_cache(maxsize=16)
def usage_files(folder: str) -> tuple[str, ...]:
    """The Python files of the tests and examples folders beside ``folder``'s package (the
    folder above its outermost ``__init__.py``), or beside ``folder`` itself."""
    root = package_base(folder)
    found: list[str] = []
    for base in dict.fromkeys((root, folder)):
        for name in _USAGE_FOLDERS:
            top = os.path.join(base, name)
            for directory, dirs, files in os.walk(top):
                dirs[:] = [d for d in dirs if not d.startswith((".", "__"))]
                found += [os.path.join(directory, f) for f in sorted(files) if f.endswith(".py")]
                if len(found) >= _USAGE_FILES:
                    return tuple(found[:_USAGE_FILES])
    return tuple(found)


def package_base(folder: str) -> str:
    """The folder above the outermost package that holds ``folder`` (``folder`` itself when it
    holds no ``__init__.py``): where ``import package.module`` finds its modules."""
    while os.path.isfile(os.path.join(folder, "__init__.py")):
        folder = os.path.dirname(folder)
    return folder


@lru_cache(maxsize=256)
def _bodies(path: str, stamp: int, name: str) -> tuple:
    """The statement lists of ``path`` that may call ``name``: each function's body and the
    module's own, when its text names ``name`` at all."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        if name not in text:
            return ()
        tree = ast.parse(text)
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return ()
    bodies = [node.body for node in ast.walk(tree)
              if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
    return tuple(bodies) + (tree.body,)


@lru_cache(maxsize=64)
def _main_blocks(path: str, stamp: int) -> tuple:
    """The bodies of the ``if __name__ == "__main__":`` blocks of the file at ``path`` (as of
    ``stamp``, its modification time): a file whose text has none is not parsed."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        if "__main__" not in text:
            return ()
        tree = ast.parse(text)
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return ()
    return tuple(block.body for block in tree.body
                 if isinstance(block, ast.If) and is_main(block.test))


def is_main(test) -> bool:
    """Whether an ``if`` test is ``__name__ == "__main__"``."""
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name)
            and test.left.id == "__name__" and len(test.comparators) == 1
            and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value == "__main__")


def _read(body: list, name: str) -> Example | None:
    tensors: dict[str, tuple] = {}
    tokens: set[str] = set()
    built: dict[str, Example] = {}
    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            target, value = node.targets[0].id, node.value
            shape = _shape_of(value)
            if shape is not None:
                tensors[target] = shape
                if _maker(value) == "randint":
                    tokens.add(target)
            elif isinstance(value, ast.Call) and _callee(value) == name:
                built[target] = _literals(value)
    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        if not isinstance(node, ast.Call):
            continue
        example = None
        if isinstance(node.func, ast.Name) and node.func.id in built:
            example = built[node.func.id]
        elif isinstance(node.func, ast.Call) and _callee(node.func) == name:
            example = _literals(node.func)
        if example is None:
            continue
        for i, arg in enumerate(node.args):
            shape = tensors.get(arg.id) if isinstance(arg, ast.Name) else _shape_of(arg)
            example.inputs.append(shape)
            if isinstance(arg, ast.Name) and arg.id in tokens:
                example.token_inputs.add(i)
        return example
    return None


def _callee(call: ast.Call) -> str | None:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr \
        if isinstance(func, ast.Attribute) else None


def _maker(call) -> str | None:
    return _callee(call) if isinstance(call, ast.Call) else None


def _ints(nodes) -> tuple | None:
    out = []
    for node in nodes:
        if isinstance(node, ast.Constant) and type(node.value) is int:
            out.append(node.value)
        else:
            return None
    return tuple(out)


def _shape_of(value) -> tuple | None:
    """The shape of ``torch.randn(50, 49, 512)``, ``torch.randint(0, 10, (2, 8))``."""
    if not isinstance(value, ast.Call) or _maker(value) not in _MAKERS:
        return None
    args = value.args
    if _maker(value) == "randint":
        sized = [a for a in args if isinstance(a, (ast.Tuple, ast.List))]
        return _ints(sized[0].elts) if sized else None
    if _maker(value) == "full":
        args = args[:1]
    if len(args) == 1 and isinstance(args[0], (ast.Tuple, ast.List)):
        return _ints(args[0].elts)
    return _ints(args) if args else None


def _literals(call: ast.Call) -> Example:
    example = Example()
    for arg in call.args:
        example.init_positional.append(arg.value if isinstance(arg, ast.Constant) else None)
    for kw in call.keywords:
        if kw.arg is not None and isinstance(kw.value, ast.Constant):
            example.init[kw.arg] = kw.value.value
    return example


def axis_sizes(example: Example, guessed: list) -> dict[int, str]:
    """The example's sizes named by the dims of the inputs guessed from their names: size ->
    dim, where every input that has the size at some axis agrees (and no other dim shares it)."""
    named: dict[int, set] = {}
    for shape, spec in zip(example.inputs, guessed):
        dims = getattr(spec, "dims", None)
        if shape is None or dims is None or len(shape) != len(dims):
            continue
        for size, dim in zip(shape, dims):
            if isinstance(dim, str) and dim.isidentifier():
                named.setdefault(size, set()).add(dim)
    return {size: next(iter(d)) for size, d in named.items() if len(d) == 1}


def by_example(cls: type, params: list, out: dict, missing: list, given: Mapping,
               dims: Mapping[str, int], notes: list[str] | None, infer_inputs) -> None:
    """What the file's example call (``examples``) says: an argument whose example value is the
    size of an input axis (``n=49`` beside 49 tokens) takes that axis's dim, over its default;
    an argument nothing else sizes takes the example's value (a flag, a ratio, a count).
    ``infer_inputs``: ``infer.infer_inputs``, for the inputs a guess gives."""
    example = example_of(cls)
    if example is None:
        return
    values = dict(example.init)
    for p, value in zip(params, example.init_positional):
        if value is not None:
            values.setdefault(p.name, value)
    try:
        guessed = infer_inputs(cls, dims)
    except (TargetError, UsageError):
        guessed = []
    sizes = axis_sizes(example, guessed)
    for p in params:
        if p.name in given or p.name not in values:
            continue
        value = values[p.name]
        named = size_of(p.name, constructor=True)
        if type(value) is int and value in sizes and sizes[value] in dims \
                and (named is None or named == sizes[value]):
            if out.get(p.name) == dims[sizes[value]]:
                continue  # what its name said already
            out[p.name] = dims[sizes[value]]
            why = f"read as {DIM_MEANINGS[sizes[value]]}: the example call passes {value}"
        elif p.name in missing and value is not None:
            out[p.name] = value
            why = f"{value!r} as in the example call"
        else:
            continue
        if notes is not None:
            notes.append(f"{p.name} {why}; give --init {p.name}=VALUE to choose")
        if p.name in missing:
            missing.remove(p.name)
