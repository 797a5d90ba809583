"""Checks that refused the inputs shapetrace guessed before any op ran on them: the module's own
(an ``assert``, a ``raise`` under an ``if``) and those of torch's layers (``nn.LSTM``'s
``input.size(-1) must be equal to input_size``), and the Python code that iterates an input as
a container (``Graph(inputs)``, a dict of tensors). The guess did not fit what the code asks: a
target error naming --input, in the code's own words, never an op-failed finding."""

from __future__ import annotations

import ast
import inspect
import linecache
import os
import re

import torch

from ..analysis.code import parsed
from ..base.errors import one_line
from ..base.source import display_path, file_tree, is_library_file
from ..report.results import TargetResult
from .asked import raised_by_check
from .asking import ask
from .attempt import Attempt


def as_guessed(name: str, arg) -> str:
    """How a message names an input shapetrace guessed: ``input 'x', guessed ... as (5, 7, 143)``."""
    return f"input {name!r}, guessed from its name as ({', '.join(str(n) for n in arg.shape)})"


def refused(result: TargetResult, chosen: Attempt) -> bool:
    """The module's own check (an ``assert``, or a ``raise`` under an ``if``, of its code, not an
    op of torch's) refused guessed inputs: the guess did not fit what the code asks, a target error naming
    --input with the code's own words."""
    raised = chosen.raised
    guessed = chosen.guessed
    if raised is None or chosen.failed_op is not None or not raised_by_check(chosen.raised_at):
        return False
    if not guessed:  # called with every input at its default: the check asks for one
        left = _left_at_defaults(chosen)
        return bool(left) and ask(
            result, f"{type(chosen.model).__name__}'s own check refused a call with its inputs "
                    f"left at their defaults, {', '.join(left)} ({type(raised).__name__}: "
                    f"{one_line(raised)[:160]})")
    shown = "; ".join(f"{name} ({', '.join(str(n) for n in arg.shape)})" for name, arg in guessed)
    at = chosen.raised_at
    whose = f"{type(chosen.model).__name__}'s own check" if not is_library_file(
        at[0], installed_is_library=True) else \
        f"a check of a package it builds on ({os.path.basename(at[0])}:{at[1]})"
    return ask(result, f"{whose} refused the inputs guessed "
                       f"from their names, {shown} ({type(raised).__name__}: "
                       f"{one_line(raised)[:160]})")


def _left_at_defaults(chosen: Attempt) -> list[str]:
    """The forward's parameters a call without inputs given left at their default of None,
    when nothing was declared and no input was passed; else []."""
    if chosen.args or chosen.plan.request.inputs is not None:
        return []
    try:
        params = list(inspect.signature(type(chosen.model).forward).parameters.values())[1:]
    except (TypeError, ValueError):
        return []
    return [p.name for p in params if p.default is None]


def layer_refused(result: TargetResult, chosen: Attempt) -> bool:
    """One of torch's layers checked a guessed input handed to it as it came and refused it
    before any op ran (``self.lstm(x)``: ``input.size(-1) must be equal to input_size.
    Expected 144, got 143``, a size of the guess), or one of torch's functions refused it where
    it takes a number (``torch.linspace(-1., 1., steps=h)``: ``got (..., steps=Tensor)``): the
    guess did not fit, a target error."""
    raised, guessed, at = chosen.raised, chosen.guessed, chosen.raised_at
    if raised is None or chosen.failed_op is not None or not guessed or at is None:
        return False
    if isinstance(raised, TypeError) and "invalid combination of arguments" in str(raised) \
            and "Tensor" in str(raised):
        return _number_refused(result, chosen)
    if not _torch_file(chosen.raised_in):
        return False
    handed = _handed(at)
    sizes = {int(n) for n in re.findall(r"\d+", str(raised))}
    found = [(name, arg) for name, arg in guessed if name in handed and sizes & set(arg.shape)]
    if not found:
        return False
    name, arg = found[0]
    return ask(result, f"{as_guessed(name, arg)}, does not fit the layer it is handed to at "
                       f"{display_path(at[0])}:{at[1]} ({type(raised).__name__}: "
                       f"{one_line(raised)[:160]})")


def _torch_file(filename: str | None) -> bool:
    return bool(filename) and os.sep + "torch" + os.sep in filename


def _number_refused(result: TargetResult, chosen: Attempt) -> bool:
    """A guessed tensor handed, as it came, where one of torch's functions takes a number."""
    at = chosen.raised_at
    handed = _handed(at)
    found = [(name, arg) for name, arg in chosen.guessed if name in handed]
    if not found:
        return False
    name, arg = found[0]
    return ask(result, f"{as_guessed(name, arg)}, is handed at {display_path(at[0])}:{at[1]} to a "
                       f"function that takes a number there ({one_line(chosen.raised)[:160]})")


def _handed(at) -> set[str]:
    """The names the line ``at`` hands to a call as arguments."""
    try:
        tree = ast.parse(linecache.getline(at[0], at[1]).strip())
    except SyntaxError:
        return set()
    return {a.id for node in ast.walk(tree) if isinstance(node, ast.Call)
            for a in (*node.args, *(k.value for k in node.keywords)) if isinstance(a, ast.Name)}


#: ops that hand the items of a tensor to Python code that iterates it (``dict(x)``, ``for a in x``)
_ITERATED = frozenset({"Tensor.unbind", "Tensor.__iter__"})


def iterated(result: TargetResult, chosen: Attempt) -> bool:
    """The forward iterated an inferred input as a container (``Graph(inputs)``, a dict of a
    graph's tensors, given one tensor: ``dict(x)`` walks its rows) and its own Python code then
    raised (a ValueError, a TypeError), not an op of torch's: the guess was wrong, a target
    error. So too when an op of torch's failed on what was made of the items of an input the
    forward walked item by item (``for e in fields``, ``fields[i]`` for two indices or more):
    code that takes a list of per-field tensors, handed one tensor."""
    if _walked_items_failed(result, chosen):
        return True
    raised = chosen.raised
    records = chosen.trace.records if chosen.trace is not None else []
    if not isinstance(raised, (TypeError, ValueError)) or chosen.failed_op is not None or not records:
        return False
    last = records[-1]
    if last.op not in _ITERATED or not last.inputs:
        return False
    meta = last.inputs[0]
    while meta.src is not None and records[meta.src[0]].op in _ITERATED:  # its items iterated too
        meta = records[meta.src[0]].inputs[0]
    if meta.src is not None:
        return False
    for arg, name in zip(chosen.args, chosen.names):
        if isinstance(arg, torch.Tensor) and tuple(arg.shape) == tuple(meta.shape):
            return ask(result, f"{as_guessed(name, arg)}, is iterated by the forward at "
                               f"{last.file}:{last.line}, which then raised "
                               f"{type(raised).__name__}: {one_line(raised)}; it takes a "
                               f"container of tensors (a list, a tuple, a dict), not one tensor")
    return False


def _walked_items_failed(result: TargetResult, chosen: Attempt) -> bool:
    """An op failed on tensors made from the items of a guessed input that the forward walked as
    a container: iterated, or indexed by two plain integers or more, each item taken whole."""
    failed = chosen.failed_op
    if failed is None or chosen.trace is None:
        return False
    records = chosen.trace.records
    walks: dict[int, list[int]] = {}  # id of an input from outside -> the records taking items
    indices: dict[int, set] = {}
    for rec in records:
        if not rec.inputs or rec.inputs[0].src is not None:
            continue
        if rec.op in _ITERATED:
            walks.setdefault(id(rec.inputs[0]), []).append(rec.index)
            indices.setdefault(id(rec.inputs[0]), set()).add(None)
        elif rec.op == "[]" and len(rec.args) == 2 and type(rec.args[1]) is int:
            walks.setdefault(id(rec.inputs[0]), []).append(rec.index)
            indices.setdefault(id(rec.inputs[0]), set()).add(rec.args[1])
    walked = {index for key, found in walks.items() if len(indices[key]) >= 2 or None in indices[key]
              for index in found}
    if not walked or not _made_from(failed, records, walked):
        return False
    for rec_index in sorted(walked):
        meta = records[rec_index].inputs[0]
        for arg, name in zip(chosen.args, chosen.names):
            if isinstance(arg, torch.Tensor) and tuple(arg.shape) == tuple(meta.shape):
                where = records[rec_index]
                return ask(result, f"{as_guessed(name, arg)}, is taken item by item by the forward "
                                   f"at {where.file}:{where.line}, and {failed.op} then failed on "
                                   f"what was made of its items ({failed.error[0]}: "
                                   f"{one_line(failed.error[1])}); it takes a container of "
                                   f"tensors (a list, a tuple), not one tensor")
    return False


def _made_from(rec, records, sources: set[int]) -> bool:
    """Whether ``rec`` reads, through any chain of records, an output of one in ``sources``."""
    seen: set[int] = set()
    stack = [m.src[0] for m in rec.inputs if m.src is not None]
    while stack:
        index = stack.pop()
        if index in sources:
            return True
        if index in seen:
            continue
        seen.add(index)
        stack.extend(m.src[0] for m in records[index].inputs if m.src is not None)
    return False


def varargs_left(result: TargetResult, chosen: Attempt) -> bool:
    """The constructor takes positional arguments by ``*args`` (``Transpose(*dims)``), which
    shapetrace cannot give and left empty, and the forward then failed: the missing arguments,
    not the code; a target error saying how the project's code builds the class, when a call
    of it with plain arguments says."""
    request = chosen.plan.request
    cls = request.module if isinstance(request.module, type) else None
    if cls is None or chosen.raised is None:
        return False
    try:
        params = inspect.signature(cls.__init__).parameters.values()
    except (TypeError, ValueError):
        return False
    star = next((p.name for p in params if p.kind is p.VAR_POSITIONAL), None)
    if star is None or not _kept(cls, star):
        return False
    raised = chosen.raised
    example = _built_with_literals(cls)
    result.error = (f"{cls.__name__} takes its positional arguments as *{star}, which shapetrace "
                    f"cannot give (it left them empty), and its forward then failed "
                    f"({type(raised).__name__}: {one_line(raised)[:120]}); check an instance "
                    f"from Python" + (f", as {example[1]} builds it: shapetrace.check({example[0]})"
                                      if example else ": shapetrace.check(" + cls.__name__ + "(...))"))
    result.diagnostics = []
    return True


def _kept(cls: type, name: str) -> bool:
    """Whether ``cls``'s constructor keeps its argument ``name`` on the module (``self.dims =
    dims``, ``self.dims, self.contiguous = dims, contiguous``), not only hands it on."""
    tree = parsed(cls.__init__)
    for node in ast.walk(tree) if tree is not None else ():
        if not isinstance(node, ast.Assign) \
                or not any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node.value)):
            continue
        if any(isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
               for target in node.targets for t in ast.walk(target)):
            return True
    return False


def _built_with_literals(cls: type) -> tuple[str, str] | None:
    """``("Transpose(1, 2)", "file:line")``: the first call of ``cls`` in its own file whose
    arguments are all plain numbers, strings or booleans; None when none is."""
    try:
        filename = inspect.getsourcefile(cls)
    except TypeError:
        return None
    tree = file_tree(filename)
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id == cls.__name__ and node.args \
                and all(isinstance(a, ast.Constant) for a in [*node.args, *(k.value for k in node.keywords)]) \
                and all(k.arg is not None for k in node.keywords):
            return ast.unparse(node), f"{display_path(filename)}:{node.lineno}"
    return None
