"""``input-mutated``: a forward that changes a tensor the caller passed in as data.

``x += self.pos`` on the caller's ``x``, ``x.add_(...)``, ``x[:, 0] = 0``, ``mask.logical_not_()``:
the caller's tensor is altered, and a second call on it gives a different result. Each probe run
of the other checks gets fresh copies, so this is watched on the traced run itself:
:class:`MutationWatch` is the tracer's observer. It keeps a copy of every tensor argument and,
after each op, compares the argument with its copy; the first op after which they differ is
where the input was changed (views share storage, so ``x.view(...).add_(1)`` counts too).

What counts is the meaning, not the op: an argument is reported only when its values at the end
of the forward differ from those passed in (``x.clamp_(-1e4, 1e4)`` on values in range changes
nothing). Tensors passed in to be filled are expected to change and are never reported: an
argument named for a cache, a past, a state, a buffer or an output (``kv_cache``,
``layer_past``, ``state``, ``out``; ``hidden_states`` is data, and so is ``hidden`` or
``memory`` as forward's first argument: ``base.names.passed_to_fill``), and any tensor an op
wrote to as its ``out=``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..base.compat import disable_torch_function
from ..base.diagnostics import Diagnostic
from ..base.names import passed_to_fill
from ..base.ops import display_name
from ..base.records import OpRecord
from ..rules.registry import diagnostic


@dataclass
class _Watched:
    name: str
    tensor: Any
    before: Any
    filled: bool
    rec: OpRecord | None = None
    changed: bool = False


class MutationWatch:
    """An observer for ``shapetrace.trace(..., observer=...)`` that sees which op changed an
    argument of the forward. ``originals()`` are copies of the arguments as passed in."""

    def __init__(self, args: Sequence[Any], names: Sequence[str]):
        import torch

        self.watched: list[_Watched] = []
        self._copies: list[Any] = []
        for i, value in enumerate(args):
            if isinstance(value, torch.Tensor):
                before = value.detach().clone()
                self._copies.append(before)
                name = names[i] if i < len(names) else f"input {i}"
                self.watched.append(_Watched(name, value, before, passed_to_fill(name, i)))
            else:
                self._copies.append(value)
        self._pending = [w for w in self.watched if not w.filled]

    def originals(self) -> list[Any]:
        """The arguments as they were before the forward (fresh copies)."""
        import torch

        return [c.clone() if isinstance(c, torch.Tensor) else c for c in self._copies]

    def __call__(self, rec: OpRecord, outputs, args, kwargs) -> None:
        if not self._pending:
            return
        with disable_torch_function():
            out = kwargs.get("out") if kwargs else None
            for w in list(self._pending):
                if out is not None and _shares_storage(out, w.tensor):
                    w.filled = True  # written to as an out= buffer: meant to be filled
                    self._pending.remove(w)
                elif not _same(w.tensor, w.before):
                    w.rec, w.changed = rec, True
                    self._pending.remove(w)

    def diagnostics(self) -> list[Diagnostic]:
        """``input-mutated`` for each data argument whose values the forward changed."""
        found = []
        with disable_torch_function():
            for w in self.watched:
                if w.filled or _same(w.tensor, w.before):
                    continue
                found.append(_diagnostic(w.name, w.rec))
        return found


def _shares_storage(a: Any, b: Any) -> bool:
    import torch

    outs = a if isinstance(a, (tuple, list)) else (a,)
    try:
        ptr = b.untyped_storage().data_ptr()
        return any(isinstance(o, torch.Tensor) and o.untyped_storage().data_ptr() == ptr
                   for o in outs)
    except Exception:  # noqa: BLE001 - a tensor without storage (fake, meta)
        return False


def _same(a: Any, b: Any) -> bool:
    import torch

    try:
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        if a.is_floating_point() or a.is_complex():
            return bool(((a == b) | (a.isnan() & b.isnan())).all())
        return bool(torch.equal(a, b))
    except Exception:  # noqa: BLE001 - values that cannot be read (fake, meta): no claim
        return True


def _diagnostic(name: str, rec: OpRecord | None) -> Diagnostic:
    segment = rec.source if rec is not None and rec.site is not None else ""
    op = display_name(rec.op, segment) if rec is not None else None
    setitem = rec is not None and rec.op == "[]="
    where = (f" by writing into `{segment}`" if setitem else f" by `{segment}`") if segment else ""
    message = (f"forward changed its input `{name}` in place{where}: the caller's tensor is "
               f"altered, so what the caller holds after the call is not what it passed, and a "
               f"second call on it gives a different result")
    fixed = rewritten(segment, name) if not setitem else _cloned(segment)
    hint = (f"Make a new tensor instead of writing into the input: `{fixed}`." if fixed else
            f"Make a new tensor instead of writing into the input: an out-of-place op "
            f"(`{name} = {name} + ...`), or `{name} = {name}.clone()` before writing into it.")
    if rec is None or rec.site is None:
        module = (rec.module or None) if rec is not None else None
        return diagnostic("input-mutated", message, hint, module=module, argument=name)
    return diagnostic("input-mutated", message, hint, rec=rec, op=op, argument=name)


def _cloned(target: str) -> str:
    """For a write into ``x[:, 0]``: copy ``x`` first."""
    base = target.split("[", 1)[0].strip()
    return f"{base} = {base}.clone()` before `{target} = ..." if base.isidentifier() else ""


_AUGMENTED = re.compile(r"^\s*([A-Za-z_][\w.]*)\s*([-+*/@]|//)=\s*(.+?)\s*$")
_IN_PLACE_CALL = re.compile(r"^\s*([A-Za-z_][\w.]*)\.([a-z][a-z0-9_]*[a-z0-9])_\((.*)\)\s*$")


def rewritten(segment: str, name: str) -> str:
    """The line rewritten out of place: ``x += self.pos`` -> ``x = x + self.pos``,
    ``x.add_(y)`` -> ``x = x.add(y)``, ``x[:, 0] = 0`` -> ``x = x.clone(); x[:, 0] = 0``;
    "" when the segment is none of these."""
    text = segment.strip()
    m = _AUGMENTED.match(text)
    if m:
        target, op, value = m.groups()
        return f"{target} = {target} {op} {value}"
    m = _IN_PLACE_CALL.match(text)
    if m:
        target, method, rest = m.groups()
        return f"{target} = {target}.{method}({rest})"
    if "=" in text and "[" in text.split("=", 1)[0] and "==" not in text.split("=", 1)[0]:
        base = text.split("[", 1)[0].strip()
        if base.isidentifier():
            return f"{base} = {base}.clone(); {text}"
    return ""
