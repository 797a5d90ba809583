"""Rotary tables handed to forward, made as rotary code makes them, and the positions they are
taken at: ``cos``/``sin`` (1, T, d), complex rotations (T, d/2) for ``freqs_cis`` or for an input
of any name that the code multiplies with pairs made by ``torch.view_as_complex``, and position
ids (B, T) for ``position_ids``. The code is read with ``ast``; nothing is run.
"""

from __future__ import annotations

import ast

import torch

from ..analysis.handed import handed
from ..base.specs import InputSpec, ValueInput
from .usage import _function_def, _tree


#: positions handed to forward as ids per sample, (B, T) as Hugging Face's ``position_ids`` (and
#: the ``token_positions`` of course code that follows it)
#: (``positions`` and ``input_pos`` are one flat row in inference engines: not read)
POSITION_IDS = frozenset(("position_ids", "pos_ids", "token_positions"))
#: complex rotations, one per position and pair of a head's features (Meta's ``freqs_cis``)
COMPLEX_ROTARY = frozenset(("freqs_cis", "freqs_complex"))


def rotary_input(name: str, names: set[str], dims):
    """A rotary table forward takes, made at the probe sizes as rotary code makes it: ``cos``
    and ``sin`` (both taken) of each position's angles, (1, T, d) with the halves repeated
    (``rotate_half`` code); complex rotations (T, d/2) for ``freqs_cis``; position ids (B, T)
    for ``position_ids``. None for any other name. A table does not follow the batch: the
    same for every sample, as the code's own is."""
    if name in ("cos", "sin") and {"cos", "sin"} <= names:
        angles = _angles(dims)
        table = torch.cat((angles, angles, angles[:, :dims["d"] % 2]), dim=-1)[None]
        return ValueInput(name, table.cos() if name == "cos" else table.sin())
    if name in COMPLEX_ROTARY:  # an odd head size fails the code's pairing: an even one is tried
        return _rotations(name, dims)
    if name in POSITION_IDS:
        return InputSpec(name, ("B", "T"), "long", "T")
    return None


def _angles(dims):
    """Each position's angle for each pair of a head's features, (T, d/2)."""
    T, d = dims["T"], dims["d"]
    inv = 1.0 / 10000 ** (torch.arange(0, d // 2, dtype=torch.float32) * 2 / max(d, 2))
    return torch.arange(T, dtype=torch.float32)[:, None] * inv


def _rotations(name: str, dims) -> ValueInput:
    """Complex rotations (T, d/2) handed in as ``name``."""
    angles = _angles(dims)
    return ValueInput(name, torch.polar(torch.ones_like(angles), angles))


def complex_rotation_by_use(name: str, forward, owner: type | None, dims):
    """Complex rotations (T, d/2), as :func:`rotary_input` makes for ``freqs_cis``, for an input
    of any name that forward, or a function it hands the input to, multiplies with a value made
    by ``torch.view_as_complex`` (``x_complex * freq_complex``): the rotary table of code that
    rotates in complex numbers. None for anything else."""
    for func, param in handed(forward, name, owner):
        body = _function_def(_tree(func), getattr(func, "__name__", ""))
        if body is not None and _rotates(body, param):
            return _rotations(name, dims)
    return None


def _rotates(body, param: str) -> bool:
    """Whether ``body`` multiplies ``param`` (or a name made from it) with a value made by
    ``torch.view_as_complex``."""
    def made_by_complex(node) -> bool:
        return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                   and n.func.attr == "view_as_complex" for n in ast.walk(node))

    def names(node) -> set[str]:
        return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}

    ours, complex_ = {param}, set()
    for node in ast.walk(body):  # ``freqs = freqs.unsqueeze(0)``, ``x_c = torch.view_as_complex(...)``
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            if made_by_complex(node.value):
                complex_.add(node.targets[0].id)
            elif names(node.value) & ours:
                ours.add(node.targets[0].id)
    for node in ast.walk(body):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            sides = (node.left, node.right)
            for one, other in (sides, sides[::-1]):
                if names(one) & ours and not names(one) & complex_ and (
                        names(other) & complex_ or made_by_complex(other)):
                    return True
    return False
