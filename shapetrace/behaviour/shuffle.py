"""The batch reordered, and side inputs changed one sample at a time (for ``batch-leak``).

Autograd sees only floating inputs. Two things it cannot see:

- whether a sample's output follows the sample when the batch is reordered. Rolling the batch by
  one place commutes with some wrong index maps: d2l's ``valid_lens.repeat(H)`` (where
  ``repeat_interleave(H)`` is meant) gives row ``b*H + h`` the length of sample
  ``(b*H + h) mod B``, which a roll by one cannot tell from the right one when H = 1 mod B
  (B=5, H=11). Seeded random derangements (every sample moves, not by a fixed shift) can;
- integer and boolean side inputs that carry a batch axis (lengths such as ``valid_lens``, a
  boolean padding mask): each sample of them is changed in turn, and every other sample's
  output must stay as it was.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor

from .probe import Probe, axes_of, group_index, normalise
from .results import RTOL, Dependency
from .runs import get, relative_change

#: How many seeded random reorderings of the batch the position check tries.
ORDERS = 3


def orders(B: int, count: int = ORDERS, seed: int = 0) -> list[Tensor]:
    """Up to ``count`` distinct derangements of ``range(B)`` (no sample keeps its place), seeded
    so that every run of the checks tries the same ones. New sample i is old sample order[i]."""
    if B < 2:
        return []
    gen = torch.Generator().manual_seed(seed)
    found: list[Tensor] = []
    identity = torch.arange(B)
    for _ in range(50 * count):
        order = torch.randperm(B, generator=gen)
        if (order == identity).any() or any(torch.equal(order, o) for o in found):
            continue
        found.append(order)
        if len(found) == count:
            break
    return found or [identity.roll(1)]


def reordered_args(probe: Probe, order: Tensor) -> list[Any]:
    """The positional inputs with the batch reordered: new sample i is old sample ``order[i]``."""
    args = list(probe.args)
    for i, role in enumerate(probe.roles):
        if role is not None and role.batch is not None and isinstance(args[i], Tensor):
            args[i] = args[i].index_select(role.batch, order)
    return args


def reordered_kwargs(probe: Probe, order: Tensor) -> dict[str, Any]:
    """Keyword tensors whose first axis has size B (an attention mask) follow the batch."""
    return {k: v.index_select(0, order) if isinstance(v, Tensor) and v.dim() and v.shape[0] == probe.B
            else v for k, v in probe.kwargs.items()}


def reorder_change(probe: Probe, reference) -> tuple[float | None, Tensor | None]:
    """The largest relative change of the outputs, reordered back, over the seeded reorderings
    of the batch, and the reordering that showed it (None when every output followed). The
    change is None when no output has one axis of the batch's size to reorder back (another
    axis as long as the batch, at a user's own sizes): nothing could be compared."""
    worst, shown, compared = 0.0, None, False
    for order in orders(probe.B):
        with torch.no_grad():
            out = probe.call(reordered_args(probe, order), reordered_kwargs(probe, order))
        for _, path in probe.paths:
            ref = get(reference, path)
            axis = axes_of(ref.shape, probe.dims).batch
            if axis is None:
                continue
            compared = True
            change = relative_change(get(out, path), ref.index_select(axis, order))
            if change > worst:
                worst, shown = change, order
    return (worst if compared else None), shown


# ---------------------------------------------------------------------------------------------
# Side inputs
# ---------------------------------------------------------------------------------------------


def side_inputs(probe: Probe) -> list[int]:
    """Positional inputs that are integer or boolean, carry a batch axis and are not token ids
    (those are followed through their embeddings, or token by token)."""
    out = []
    for i, role in enumerate(probe.roles):
        value = probe.args[i] if i < len(probe.args) else None
        if (role is None or role.batch is None or role.tokens or not isinstance(value, Tensor)
                or value.is_floating_point() or value.is_complex() or value.numel() == 0):
            continue
        out.append(i)
    return out


def changed_sample(value: Tensor, batch: int, sample: int) -> Tensor:
    """``value`` with one sample changed: a boolean mask flips its last element, an integer
    (a length) moves by one, down where it can so that it stays a valid length."""
    changed = value.clone()
    part = changed.select(batch, sample)
    if changed.dtype == torch.bool:
        flat = part.reshape(-1)
        if part.dim() == 0:
            changed.select(batch, sample).copy_(~part)
        else:
            last = [s - 1 for s in part.shape]
            part[tuple(last)] = ~flat[-1]
        return changed
    part.copy_(torch.where(part > 0, part - 1, part + 1))
    return changed


def side_pairs(probe: Probe, reference, rtol: float = RTOL) -> list[Dependency]:
    """How each output sample depends on each sample of the integer and boolean side inputs,
    found by changing one sample at a time (B forwards per side input)."""
    # an output with no one axis of the batch's size ((B, B, C): a sample against a sample, or
    # another size equal to B) has no row per sample to hold a dependency: it says nothing
    outputs = [(label, get(reference, path), path) for label, path in probe.paths]
    outputs = [(label, ref) for label, ref, path in outputs
               if axes_of(ref.shape, probe.dims).batch is not None]
    paths = {label: path for label, path in probe.paths}
    pairs: list[Dependency] = []
    if side_inputs(probe) and outputs:
        # an output that differs on a second call with nothing changed (weights a dropout
        # drew, returned beside the output) depends on chance, not on another sample
        with torch.no_grad():
            again = probe.call(probe.args)
        outputs = [(label, ref) for label, ref in outputs
                   if _same_again(get(again, paths[label]), ref)]
    for arg in side_inputs(probe):
        role = probe.roles[arg]
        value = probe.args[arg]
        n_in = value.shape[role.batch]
        strength = [torch.zeros(probe.B, n_in, dtype=torch.float64) for _ in outputs]
        for sample in range(n_in):
            args = list(probe.args)
            args[arg] = changed_sample(value, role.batch, sample)
            with torch.no_grad():
                out = probe.call(args)
            for k, (label, ref) in enumerate(outputs):
                got = get(out, paths[label])
                if got.shape != ref.shape:
                    continue
                delta = _difference(got, ref)
                index, n = group_index(delta.shape, axes_of(delta.shape, probe.dims), "batch",
                                       probe.B, probe.T)
                strength[k][:n, sample] += torch.zeros(n, dtype=torch.float64).scatter_add_(
                    0, index.reshape(-1), delta.reshape(-1).to(torch.float64))
        pairs.extend(Dependency(label, role.name, role.stream, normalise(s), None, rtol)
                     for (label, _), s in zip(outputs, strength))
    return pairs


def _same_again(got, ref) -> bool:
    return got.shape == ref.shape and not bool(_difference(got, ref).gt(0).any())


def first_side_leak(probe: Probe, pairs: Sequence[Dependency]) -> tuple[int, int, Tensor] | None:
    """(positional input, sample, that input with the sample changed) for the first side-input
    sample that another sample's output depends on, or None."""
    by_name = {probe.roles[i].name: i for i in side_inputs(probe)}
    for p in pairs:
        grid, arg = p.batch, by_name.get(p.source)
        if grid is None or arg is None or grid.shape[0] != grid.shape[1]:
            continue
        leaks = (grid & ~torch.eye(*grid.shape, dtype=torch.bool)).nonzero().tolist()
        if leaks:
            sample = leaks[0][1]
            role = probe.roles[arg]
            return arg, sample, changed_sample(probe.args[arg], role.batch, sample)
    return None


def _difference(got: Tensor, ref: Tensor) -> Tensor:
    """|got - ref| where both are finite, 1 where only one is (a NaN that spread counts), 0
    where both are the same non-finite value."""
    got, ref = got.to(torch.float64), ref.to(torch.float64)
    same = (got == ref) | (got.isnan() & ref.isnan())
    finite = got.isfinite() & ref.isfinite()
    delta = torch.where(finite, (got - ref).abs(), torch.ones_like(got))
    return torch.where(same, torch.zeros_like(got), delta)


def mixing_samples(pairs: Sequence[Dependency]) -> bool:
    """Whether some output sample depends on another sample of a side input."""
    for p in pairs:
        grid = p.batch
        if grid is not None and grid.shape[0] == grid.shape[1]:
            if bool((grid & ~torch.eye(*grid.shape, dtype=torch.bool)).any()):
                return True
    return False
