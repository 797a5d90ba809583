"""``not-implemented``: a forward that is still the starter's, decided by dataflow.

A module whose forward raises ``NotImplementedError`` in the user's own code, or that has
parameters, reads none of them, and returns ``None``, one of its inputs unchanged, or a tensor
made from nothing but sizes (``torch.empty``, ``torch.zeros_like(x)``: an allocation or a
constant) has not been written yet. That is one finding at the line, the same in every run
(what decides it is where the output comes from, never its values, so uninitialised memory
cannot change it), and the checks that re-run the module or compare it with a reference are
not made: they would only repeat it in other words.

A module without parameters (a mask maker returning ``torch.ones(T, T).tril()``, an identity),
one that reads any of its parameters, or one whose copy run in training mode computes an output
(the identity only in eval) is never called unfinished here. A base class whose subclasses in
the user's code write forward (``def forward(self, x): pass`` left to them) is not unfinished
either: it is a target error that names them (:func:`written_below`).
"""

from __future__ import annotations

import ast
import copy
import inspect
import math

import torch

from ..base.diagnostics import Diagnostic
from ..base.source import display_path, file_tree, is_library_file
from ..record.tensors import tensors_in
from ..rules.dead import placeholder
from ..rules.registry import diagnostic
from .asked import raised_under_if

_HINT = ("Write forward: compute the output from the inputs with the module's layers (a "
         "placeholder the starter code returns is no answer).")


def unfinished(attempt) -> Diagnostic | None:
    """The ``not-implemented`` finding for an attempt (``drive.attempt.Attempt``), or None."""
    raised = attempt.raised
    if raised is not None:
        at = attempt.raised_at
        if isinstance(raised, NotImplementedError) and at is not None \
                and not is_library_file(at[0], installed_is_library=True) \
                and not raised_under_if(at):  # a guard on what forward is handed: written
            return diagnostic("not-implemented", f"forward raises NotImplementedError at line "
                              f"{at[1]}: it is not written yet", _HINT,
                              file=display_path(at[0]), line=at[1], op="NotImplementedError")
        return None
    model = attempt.model
    if not isinstance(model, torch.nn.Module) or not _reads_no_parameter(model, attempt.trace):
        return None
    what = _placeholder(attempt)
    if what is None or _handed_back(what[0]) and _written_for_training(attempt):
        return None
    text, file, line = what
    return diagnostic("not-implemented", f"forward returns {text}, and reads none of the "
                      f"module's parameters: it is not written yet", _HINT,
                      file=file, line=line, op="return")


def written_below(cls: type) -> list[str]:
    """The names of the subclasses of ``cls`` in the user's code that define their own
    forward: ``cls`` is then a base whose forward is left to them (``def forward(self, x):
    pass`` in a ``DPT_base``), not a module left unwritten."""
    found, seen = [], set()
    todo = list(type.__subclasses__(cls)) if isinstance(cls, type) else []
    while todo:
        sub = todo.pop(0)
        if sub in seen:
            continue
        seen.add(sub)
        code = getattr(vars(sub).get("forward"), "__code__", None)
        if code is not None and not is_library_file(code.co_filename, installed_is_library=True):
            found.append(sub.__name__)
        todo.extend(type.__subclasses__(sub))
    return found


def _handed_back(text: str) -> bool:
    """Whether the placeholder is None or an input unchanged (not a new allocation)."""
    return text == "None" or text.startswith("its input")


def _written_for_training(attempt) -> bool:
    """Whether a copy of the module, run in training mode on the same inputs, returns something
    other than its inputs or None: a forward that is the identity only in eval (noise or a
    drop path taken only while ``self.training``) is written."""
    try:
        model = copy.deepcopy(attempt.model).train()
        with torch.no_grad(), torch.random.fork_rng(devices=[]):
            output = model(*attempt.args)
    except Exception:  # noqa: BLE001 - a copy that cannot be made or run says nothing
        return False
    tensors = list(tensors_in(output))
    return bool(tensors) and not all(any(t is a for a in attempt.args) for t in tensors)


def _reads_no_parameter(model: torch.nn.Module, trace) -> bool:
    """Whether the module has parameters and no op read one: none ran inside it, or every
    parameter sits in a layer that was never called and whose weights no op read
    (``TraceData.unread_layers``)."""
    total = sum(p.numel() for p in model.parameters())
    if total == 0:
        return False
    if not any(rec.module for rec in trace.records):
        return True  # no op ran inside the module at all
    unread = sum(sum(math.prod(s) for s in layer.shapes) for layer in trace.unread_layers)
    return unread == total


def _placeholder(attempt) -> tuple[str, str | None, int | None] | None:
    """``(what the forward returns, file, line)`` when it is a placeholder, else None."""
    output = attempt.output
    tensors = list(tensors_in(output))
    if not tensors:
        if output is None:
            file, line = _last_line(attempt.model)
            return "None", file, line
        return None
    inputs = [(a, n) for a, n in zip(attempt.args, attempt.names) if isinstance(a, torch.Tensor)]
    given = [next((n for a, n in inputs if t is a), None) for t in tensors]
    if all(n is not None for n in given):
        file, line = _last_line(attempt.model)
        return f"its input {given[0]} unchanged", file, line
    if not any(n is not None for n in given) and _returned_allocation(attempt.trace):
        return _allocation_place(attempt.trace)
    return None


def _root_outputs(trace) -> list:
    return [(rec, meta) for rec in trace.records for meta in rec.outputs
            if meta.returned is not None and meta.returned.caller == ""
            and meta.returned.site is None]


def _returned_allocation(trace) -> bool:
    """Whether every tensor the module returned was made, op by op, from allocations alone:
    no op on the way read a tensor from outside the trace (an input, a parameter, a buffer)
    for more than its size."""
    outputs = _root_outputs(trace)
    if not outputs:
        return False
    records = trace.records
    stack, seen = [rec.index for rec, _ in outputs], set()
    while stack:
        index = stack.pop()
        if index in seen:
            continue
        seen.add(index)
        rec = records[index]
        if rec.error is not None:
            return False
        for meta in rec.inputs:
            if meta.src is None:
                if not placeholder(rec):  # an op reading only its size: zeros_like
                    return False
            else:
                stack.append(meta.src[0])
    return True


def _allocation_place(trace) -> tuple[str, str | None, int | None]:
    rec = _root_outputs(trace)[0][0]
    made = rec.source.strip() or rec.op
    return f"{made} (line {rec.line}), a tensor made from nothing but sizes", rec.file, rec.line


def _last_line(model) -> tuple[str | None, int | None]:
    """The file and the line of the last statement of the module's forward (its ``pass``)."""
    forward = getattr(type(model), "forward", None)
    code = getattr(forward, "__code__", None)
    if code is None:
        return None, None
    filename = code.co_filename
    tree = file_tree(filename)
    if tree is None:
        try:
            return display_path(filename), inspect.getsourcelines(forward)[1]
        except (OSError, TypeError):
            return display_path(filename), code.co_firstlineno
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                and node.name == code.co_name \
                and min([node.lineno, *(d.lineno for d in node.decorator_list)]) \
                == code.co_firstlineno:
            return display_path(filename), node.body[-1].lineno
    return display_path(filename), code.co_firstlineno
