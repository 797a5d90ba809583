"""Module-level configuration set to the probe sizes as a file loads (SPEC section 4).

nanoGPT's ``gpt.py`` and the lecture notes keep their sizes at the top of the file
(``n_embd = 384``, ``n_head = 6``, ``block_size = 256``, ``dropout = 0.2``,
``vocab_size = len(chars)``) and the classes read these globals when they are built. Left as
they are, the classes come out at 384 wide and the probe inputs at 143: a correct file would
fail. So before the file runs, each such assignment of a number is rewritten to the probe size
(``head_size = n_embd // n_head`` then computes the probe head size too); one that is not a
number (``vocab_size = len(chars)``) is set after the file ran, before any class is built. The
file's top-level loops and bare calls (a training loop, ``print(generate(...))``) are left out:
they are the script around the model, not the model.

When the file's own sizes do not fit the probe sizes' relations (``head_size = 16`` with
``n_embd = 384``, ``n_head = 6``; or ``--dims C=384`` with H=11), no size is rewritten: the
file runs at its own sizes, named only from its own configuration (``own_dims``) and the
probe B and T, and every other size is a number.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..base.names import DROPOUT, STATED

#: module-level names -> the dim they hold: the names that state a size (``base.names.STATED``)
CONFIG_NAMES = STATED


def _dropout(name: str) -> bool:
    return bool(DROPOUT.search(name))


@dataclass
class ModuleConfig:
    """What to do with one file: a rewritten tree, or its own sizes."""

    tree: ast.Module  # the file to run: sizes rewritten, the script around the model left out
    later: dict[str, object] = field(default_factory=dict)  # names set after the file ran
    own_dims: dict[str, int] | None = None

    def finish(self, module) -> None:
        for name, value in self.later.items():
            if name in vars(module) and isinstance(vars(module)[name], int):
                setattr(module, name, value)
        if self.own_dims is not None:
            module.__shapetrace_own_dims__ = dict(self.own_dims)


def _assigned(node) -> tuple[str, ast.expr] | None:
    if isinstance(node, ast.Assign) and len(node.targets) == 1 \
            and isinstance(node.targets[0], ast.Name):
        return node.targets[0].id, node.value
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value:
        return node.target.id, node.value
    return None


def _number(value: ast.expr) -> int | float | None:
    if isinstance(value, ast.Constant) and isinstance(value.value, (int, float)) \
            and not isinstance(value.value, bool):
        return value.value
    return None


def config_at(source: str, dims: Mapping[str, int], *,
              tree: ast.Module | None = None) -> ModuleConfig | None:
    """How to load ``source`` with its module-level sizes at ``dims``; None when it has none.
    ``tree``: ``source`` already parsed, which this may rewrite."""
    if tree is None:
        try:
            tree = ast.parse(source)
        except SyntaxError:
            return None
    literal: dict[str, tuple[ast.Constant, object]] = {}  # name -> (node, its number)
    computed: set[str] = set()
    for node in tree.body:
        found = _assigned(node)
        if found is None:
            continue
        name, value = found
        if name in CONFIG_NAMES or _dropout(name):
            number = _number(value)
            if number is None:
                computed.add(name)
            else:
                literal[name] = (value, number)
    sized = {n for n in literal if n in CONFIG_NAMES} | {n for n in computed if n in CONFIG_NAMES}
    if not sized:
        return None
    own = {CONFIG_NAMES[n]: v for n, (_, v) in literal.items()
           if n in CONFIG_NAMES and isinstance(v, int)}
    tree.body = [node for node in tree.body if not script_statement(node)]
    if not _fits(own, dims):
        return ModuleConfig(tree, own_dims=own)
    for name, (node, _) in literal.items():
        node.value = 0.0 if _dropout(name) else dims[CONFIG_NAMES[name]]
    later = {n: dims[CONFIG_NAMES[n]] for n in computed if CONFIG_NAMES.get(n) in ("V", "L")}
    return ModuleConfig(tree, later)


def _fits(own: Mapping[str, int], dims: Mapping[str, int]) -> bool:
    """Whether the file's literal sizes keep, at the probe sizes, the relations they had:
    C = H*d when all three are given, and C divisible by H."""
    c, h, d = own.get("C"), own.get("H"), own.get("d")
    if c is not None and h is not None:
        if c % h:
            return False
        if d is not None and d * h != c:
            return False  # head_size = 16 with n_embd = 384, n_head = 6: not the probe H*d
    if "L" in own and own["L"] < 2:
        return False
    if "C" in own and "H" in own and dims["C"] % dims["H"]:
        return False  # --dims C=384 with H=11: the head size would be 384 // 11, a stray 34
    return dims["C"] == dims["H"] * dims["d"] or not ({"H", "d"} <= own.keys())


def script_statement(node: ast.stmt) -> bool:
    """A top-level statement that runs the script around the model: a loop, a bare call."""
    if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
        return True
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
