"""Give a reference implementation the weights of the module it is compared with (SPEC 7).

Parameters are matched by state_dict key; when the keys differ, by shape in registration order,
preferring a parameter whose name says the same role (``query``/``q_proj``/``W_query`` are all
queries). A fused query/key/value weight (3n, m) on one side and three (n, m) weights on the
other are matched as one group whose layout is not known in advance, and so is a fused key/value
weight (2n, m) against two (``to_kv`` beside ``to_q``): the comparison tries each layout
(:data:`FUSED_LAYOUTS`) and the module is only said to differ when none agrees. A bias
that only one side has is zero in the comparison. Anything else that cannot be matched (other
shapes, other counts) is one :class:`TargetError` line, never a guess.
"""

from __future__ import annotations

import ast
import itertools
import re
from dataclasses import dataclass, field

import torch

from ..base.errors import TargetError
from ..base.names import WEIGHT_FILLERS, WEIGHT_ROLES

#: How a fused (3n, m) weight holds its three (n, m) parts: contiguous blocks in one of the six
#: orders (``qkv.split(n)``), or interleaved per head (``view(B, T, H, 3*d).chunk(3, -1)``) in
#: one of the six orders. A fused pair (2n, m) takes the order of its two parts within these.
FUSED_LAYOUTS = [(kind, order) for kind in ("blocks", "heads")
                 for order in itertools.permutations(range(3))]

def role(name: str) -> str | None:
    """The attention role a parameter's name says: ``q``, ``k``, ``v``, ``o``, ``qkv``, or None."""
    parts = name.lower().split(".")
    last = parts[-1]
    if last in ("weight", "bias") and len(parts) > 1:
        last = parts[-2]
    else:
        last = re.sub(r"_(weight|bias)$", "", last)
    return WEIGHT_ROLES.get(WEIGHT_FILLERS.sub("_", last).strip("_"))


def _is_bias(name: str, shape) -> bool:
    return len(shape) == 1 and name.lower().rsplit(".", 1)[-1].endswith("bias")


@dataclass
class _Fused:
    """One fused parameter on one side and its parts (three, or a key/value pair) on the other
    (by name)."""

    fused: str
    parts: list[str]
    fused_is_reference: bool


@dataclass
class WeightPlan:
    """How to load the reference, by parameter name: direct copies (reference name, student
    name), fused groups (their layout chosen per attempt), and parameters zeroed on either side
    (a bias only one side has). It applies to any copies of the two models."""

    copies: list[tuple[str, str]] = field(default_factory=list)
    fused: list[_Fused] = field(default_factory=list)
    zeroed: list[tuple[str, str]] = field(default_factory=list)  # (side, name)
    by_key: bool = True

    @property
    def layouts(self) -> list:
        return FUSED_LAYOUTS if self.fused else [None]

    def load(self, student: torch.nn.Module, reference: torch.nn.Module, layout,
             heads: int) -> None:
        """Write the student's weights into the reference (``layout`` for fused groups) and
        zero the biases only one side has."""
        mine, theirs = dict(student.named_parameters()), dict(reference.named_parameters())
        with torch.no_grad():
            for side, name in self.zeroed:
                (mine if side == "student" else theirs)[name].zero_()
            for dst, src in self.copies:
                theirs[dst].copy_(mine[src].to(theirs[dst].dtype))
            for group in self.fused:
                if group.fused_is_reference:
                    dst = theirs[group.fused]
                    dst.copy_(_join([mine[n].detach() for n in group.parts], layout, heads)
                              .to(dst.dtype))
                else:
                    parts = _split(mine[group.fused].detach(), layout, heads,
                                   len(group.parts))
                    for name, part in zip(group.parts, parts):
                        theirs[name].copy_(part.to(theirs[name].dtype))

    def describe(self) -> str:
        """How the weights were matched, for notes and hints."""
        how = "by state_dict key" if self.by_key else "by shape in order"
        extra = [f"your {g.fused} split into the reference's {', '.join(g.parts)}"
                 if not g.fused_is_reference else
                 f"your {', '.join(g.parts)} joined into the reference's {g.fused}"
                 for g in self.fused]
        extra += [f"{'your' if side == 'student' else 'the reference'} {name} set to zero"
                  for side, name in self.zeroed]
        return how + (f" ({'; '.join(extra)})" if extra else "")


def _order(layout, count: int) -> tuple[str, tuple[int, ...]]:
    """The layout of a group of ``count`` parts: a pair keeps its two parts' order in the
    triple's."""
    kind, order = layout
    return kind, tuple(i for i in order if i < count)


def _join(parts, layout, heads):
    kind, order = _order(layout, len(parts))
    ordered = [parts[i] for i in order]
    if kind == "blocks":
        return torch.cat(ordered)
    n = ordered[0].shape[0]
    rest = ordered[0].shape[1:]
    return torch.stack([p.reshape(heads, n // heads, *rest) for p in ordered], 1) \
        .reshape(len(parts) * n, *rest)


def _split(fused, layout, heads, count: int = 3):
    kind, order = _order(layout, count)
    n = fused.shape[0] // count
    if kind == "blocks":
        chunks = fused.split(n)
    else:
        rest = fused.shape[1:]
        grouped = fused.reshape(heads, count, n // heads, *rest)
        chunks = [grouped[:, j].reshape(n, *rest) for j in range(count)]
    out = [None] * count
    for slot, i in enumerate(order):
        out[i] = chunks[slot]
    return out


def _params(model: torch.nn.Module) -> list[tuple[str, torch.nn.Parameter]]:
    return list(model.named_parameters())


class SharedWeights(TargetError):
    """The weights cannot be matched because one module of the student's stands at several
    places (``[Head(...)] * n``): every copy shares its weights. ``file``/``line``: where the
    container is assigned, when found."""

    def __init__(self, message: str, file: str | None, line: int | None):
        super().__init__(message)
        self.file, self.line = file, line


def plan_weights(student: torch.nn.Module, reference: torch.nn.Module, *, heads: int,
                 names: tuple[str, str]) -> WeightPlan:
    """Match the student's parameters to the reference's; raise TargetError when they cannot
    be (SharedWeights when the student's model holds one module at several places). ``names``
    are the two display names, for the error."""
    try:
        return _plan(student, reference, heads)
    except _Unmatched as exc:
        shared = _shared(student)
        if shared:
            raise _shared_weights(student, shared, exc.reason) from None
        raise _unmatched(names, exc.reason, _params(student), _params(reference)) from None


class _Unmatched(Exception):
    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def _shared(model: torch.nn.Module) -> list[list[str]]:
    """The paths of each module with parameters that stands at more than one place, the
    outermost first (``heads.0, heads.1`` before the layers inside them)."""
    places: dict[int, list[str]] = {}
    for path, module in model.named_modules(remove_duplicate=False):
        if path and any(True for _ in module.parameters()):
            places.setdefault(id(module), []).append(path)
    shared = [paths for paths in places.values() if len(paths) > 1]
    return sorted(shared, key=lambda paths: paths[0].count("."))


def _shared_weights(model: torch.nn.Module, shared: list[list[str]], reason: str):
    from ..base.source import class_file, display_path, file_tree

    paths = shared[0]
    container = paths[0].split(".")[0]
    shown = ", ".join(paths[:3]) + (", ..." if len(paths) > 3 else "")
    message = (f"{shown} are one and the same module: every copy shares its weights (a list "
               f"made as [module] * n holds the same module n times), so the {len(paths)} "
               f"copies compute the same thing and the reference's separate weights have no "
               f"counterpart ({reason})")
    filename = class_file(type(model))
    tree = file_tree(filename) if filename else None
    line = None
    owners = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)
              and n.name == type(model).__name__] if tree is not None else []
    for node in (n for owner in owners for n in ast.walk(owner)):
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Attribute) and t.attr == container for t in node.targets):
            line = node.lineno
            break
    return SharedWeights(message, display_path(filename) if filename else None, line)


def _plan(student: torch.nn.Module, reference: torch.nn.Module, heads: int) -> WeightPlan:
    mine, theirs = _params(student), _params(reference)
    plan = WeightPlan()
    if [n for n, _ in mine] == [n for n, _ in theirs] or \
            {n for n, _ in mine} == {n for n, _ in theirs}:
        by_name = dict(mine)
        if all(by_name[n].shape == p.shape for n, p in theirs):
            plan.copies = [(n, n) for n, _ in theirs]
            return plan
    plan.by_key = False
    used: set[int] = set()  # the student's parameters taken
    taken: set[int] = set()  # the reference's
    for group in _fused_groups(mine, theirs, used, taken, heads):
        plan.fused.append(group)
    for j, (name, param) in enumerate(theirs):
        if j in taken:
            continue
        found = _pick(mine, used, name, param.shape)
        if found is not None:
            used.add(found)
            plan.copies.append((name, mine[found][0]))
        elif _is_bias(name, param.shape):
            plan.zeroed.append(("reference", name))
        else:
            raise _Unmatched(f"the reference's {name} {_shape(param)}")
    for i, (name, param) in enumerate(mine):
        if i in used:
            continue
        if _is_bias(name, param.shape):
            plan.zeroed.append(("student", name))
            continue
        raise _Unmatched(f"your {name} {_shape(param)}")
    return plan


def _pick(mine, used, name, shape) -> int | None:
    """The student's parameter for the reference's ``name``: same key, then same role, then
    one of unknown role; never one whose name says another role (a key for a query)."""
    free = [i for i, (n, p) in enumerate(mine) if i not in used and p.shape == shape]
    if not free:
        return None
    wanted = role(name)
    for test in (lambda n: n == name,
                 lambda n: wanted is not None and role(n) == wanted and _kind(n) == _kind(name),
                 lambda n: role(n) is None or wanted is None):
        for i in free:
            if test(mine[i][0]):
                return i
    return None


def _kind(name: str) -> str:
    return "bias" if "bias" in name.rsplit(".", 1)[-1].lower() else "weight"


def _fused_groups(mine, theirs, used, taken, heads):
    """Fused (3n, ...) parameters on one side that stand for three (n, ...) on the other, then
    fused (2n, ...) key/value pairs that stand for two: the shapes one side has more of than
    the other, three (or two) parts per fused parameter."""
    from collections import Counter

    for roles in ("qkv", "kv"):
        count = len(roles)
        count_mine = Counter(tuple(p.shape) for i, (_, p) in enumerate(mine) if i not in used)
        count_theirs = Counter(tuple(p.shape) for j, (_, p) in enumerate(theirs) if j not in taken)
        for fused_side, fused_count, part_count, is_ref in (
                (theirs, count_theirs, count_mine, True), (mine, count_mine, count_theirs, False)):
            parts_side, fused_used, parts_used = (mine, taken, used) if is_ref else \
                (theirs, used, taken)
            for shape in list(fused_count):
                if not shape or shape[0] % count or (shape[0] // count) % heads:
                    continue
                part = (shape[0] // count, *shape[1:])
                extra = fused_count[shape] - part_count.get(shape, 0)
                spare = part_count.get(part, 0) - fused_count.get(part, 0)
                while extra > 0 and spare >= count:
                    if roles == "kv" and not _named(parts_side, parts_used, part, roles):
                        break  # a pair only where the names say which is the key and the value
                    fused = _choose(fused_side, fused_used, shape, (roles,))
                    parts = [_choose(parts_side, parts_used, part, (r,)) for r in roles]
                    fused_used.add(fused)
                    parts_used.update(parts)
                    yield _Fused(fused_side[fused][0], [parts_side[i][0] for i in parts], is_ref)
                    extra -= 1
                    spare -= count


def _named(side, taken, shape, roles: str) -> bool:
    """Whether ``side`` has a free parameter of ``shape`` named for each of ``roles``."""
    free = {role(n) for i, (n, p) in enumerate(side) if i not in taken and tuple(p.shape) == shape}
    return set(roles) <= free


def _choose(side, taken, shape, roles) -> int:
    """The first free parameter of ``shape`` with one of ``roles``, else the first free one of
    unknown role, else the first free one that is not an output projection."""
    free = [i for i, (n, p) in enumerate(side) if i not in taken and tuple(p.shape) == shape]
    for test in (lambda n: role(n) in roles, lambda n: role(n) is None, lambda n: role(n) != "o",
                 lambda n: True):
        for i in free:
            if test(side[i][0]):
                taken.add(i)  # so the next part is another parameter; the caller keeps it taken
                return i
    raise AssertionError("counted shapes promised a free parameter")  # pragma: no cover


def _shape(p) -> str:
    return "(" + ", ".join(str(s) for s in p.shape) + ")"


def _unmatched(names, first: str, mine, theirs) -> TargetError:
    student, reference = names
    count = lambda ps: sum(p.numel() for _, p in ps)  # noqa: E731
    same = " (as many values, in other shapes)" if count(mine) == count(theirs) else ""
    return TargetError(
        f"cannot give the reference {reference} the weights of {student}: {first} has no "
        f"counterpart (yours: {len(mine)} parameters, {count(mine)} values; the reference's: "
        f"{len(theirs)} parameters, {count(theirs)} values{same}); store the weights in the "
        f"reference's shapes, or name the parameters alike")
