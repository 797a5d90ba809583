"""positions-ignored: positions the forward makes that cannot move the output.

A forward that counts positions (``torch.arange`` over the sequence, or over a longer maximum
length) and turns them into a table (the sines and cosines of angles, rows looked up in an
embedding or a parameter) does so to tell tokens apart by where they sit: handed other positions,
it must answer differently. When it does not, although the table's values do move the output,
the table was applied where position makes no difference: cut to the batch size and spread along
the batch (each sample turned by one angle at every token, which q·k cancels), or turned the
same way for every token.

Judged by running the module three times, never from names: as it is; with the values of each
table made from positions changed (they must move the output, else the table is not used and
there is nothing to judge here); and with the positions shuffled (a seeded permutation of the
values ``arange`` returned). A finding when the tables move the output and the shuffled positions
do not. Only ``arange`` results that count from 0 by 1 and reach such a table are shuffled, and
only a module with an output per token is judged (a pooled output may sum positions away by
design: ``(tok + pos).mean(1)``).

Where the finding goes: the op that cut the table along its positions to a length other than
the sequence's (the batch size, the heads), read from a recorded run; else the op that made the
table.
"""

from __future__ import annotations

import torch
from torch import Tensor
from torch.overrides import TorchFunctionMode

from ..base.diagnostics import Diagnostic
from ..base.ops import EMBEDDINGS, op_name
from ..base.records import OpRecord
from ..base.source import display_path, resolve_site
from ..record.tensors import tensors_in
from ..rules.positions import basic_index
from ..rules.registry import diagnostic
from . import locate
from .probe import Probe
from .runs import flatten, relative_change
from .shuffle import orders

_TRIG = frozenset({"torch.sin", "Tensor.sin", "torch.cos", "Tensor.cos"})
_CUTS = frozenset({"[]", "Tensor.narrow", "torch.narrow"})
#: the tables must move the outputs by more than this (relative) to be in use
_MOVES = 1e-6
#: shuffled positions that move the outputs by no more than this leave them as they were
_SAME = 1e-9


def _positions(out) -> bool:
    """A 1-D ``arange`` result that counts from 0 by 1 (positions, not a range of values)."""
    if not isinstance(out, Tensor) or out.dim() != 1 or out.numel() < 1 or out.is_complex():
        return False
    n = out.numel()
    return bool(torch.equal(out.detach().to(torch.float64),
                            torch.arange(n, dtype=torch.float64, device=out.device)))


class _Marks:
    """Which tensors of a run descend from positions (by id, the tensors kept alive), and the
    ops that made tables of them: a sine or cosine, an embedding looked up, a float tensor of
    the module's indexed by them."""

    def __init__(self) -> None:
        self.of: dict[int, frozenset[int]] = {}  # id -> ordinals of the positions it comes from
        self.alive: list[Tensor] = []
        self.count = 0  # positions made so far, in order

    def origins(self, args, kwargs) -> frozenset[int]:
        found: frozenset[int] = frozenset()
        for t in tensors_in((args, kwargs)):
            got = self.of.get(id(t))
            if got:
                found = found | got
        return found

    def mark(self, outs, origins: frozenset[int]) -> None:
        for t in tensors_in(outs):
            self.of[id(t)] = origins
            self.alive.append(t)

    def made(self, out) -> None:
        self.mark(out, frozenset({self.count}))
        self.count += 1

    @staticmethod
    def table(name: str, args, origins_of) -> bool:
        """Whether an op named ``name`` makes a table of positions."""
        if name in _TRIG:
            return True
        if name in EMBEDDINGS:
            return bool(origins_of(args[:1], {}))
        if name == "[]" and len(args) >= 2 and isinstance(args[0], Tensor):
            return args[0].is_floating_point() and not origins_of(args[:1], {}) \
                and bool(origins_of(args[1:2], {}))
        return False


class _Run(TorchFunctionMode):
    """One run that marks positions as they flow; ``shuffle`` the ordinals of positions to hand
    out in another order, ``noise`` to change the tables made of (those ordinals)."""

    def __init__(self, *, shuffle=frozenset(), noise=frozenset(), seed: int = 0):
        super().__init__()
        self.marks = _Marks()
        self.shuffle, self.noise = shuffle, noise
        self.gen = torch.Generator().manual_seed(seed)
        self.fed: set[int] = set()  # ordinals of positions that reached a table

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if func is torch.arange and _positions(out):
            if self.marks.count in self.shuffle and out.numel() > 1:
                out = out[orders(out.numel(), 1, seed=self.marks.count)[0].to(out.device)]
            self.marks.made(out)
            return out
        origins = self.marks.origins(args, kwargs)
        if not origins:
            return out
        if _Marks.table(op_name(func), args, self.marks.origins) and isinstance(out, Tensor) \
                and out.is_floating_point():
            self.fed |= origins
            if origins & self.noise:
                out = out * (1 + 0.5 * torch.randn(out.shape, generator=self.gen,
                                                   dtype=out.dtype).to(out.device))
        self.marks.mark(out, origins)
        return out


def _outputs(probe: Probe, mode: _Run, args=None) -> list[Tensor] | None:
    """The floating outputs of one run under ``mode`` (on ``args``, else the probe's), or None
    when the module cannot make it."""
    try:
        with torch.no_grad(), mode:
            out = probe.call(probe.args if args is None else args)
    except Exception:  # noqa: BLE001 - a run the module cannot make judges nothing
        return None
    finally:
        probe.restore_state()
    return [t for _, _, t in flatten(out) if t.is_floating_point()]


def _change(a: list[Tensor] | None, b: list[Tensor] | None) -> float | None:
    if a is None or b is None or len(a) != len(b) or not a:
        return None
    return max(relative_change(y, x) for x, y in zip(a, b))


def positions_ignored(probe: Probe) -> locate.Reader:
    """Positions made into tables that move the output, whose order never does, read from a
    recorded run (``locate.Reader``) for where the tables were made and cut."""
    marks = _Marks()
    tables: list[OpRecord] = []
    lengths: list[int] = []  # of each run of positions, in order
    along: list[bool] = []  # of each table: whether positions lie along an axis not its last
    cuts: list[tuple[OpRecord, int]] = []

    def keep(rec: OpRecord, outs: tuple, args: tuple, kwargs: dict) -> None:
        if rec.op == "torch.arange":
            if outs and _positions(outs[0]):
                marks.made(outs[0])
                lengths.append(outs[0].numel())
            return
        origins = marks.origins(args, kwargs)
        if not origins:
            return
        if _Marks.table(rec.op, args, marks.origins):
            tables.append(rec)
            shape = tuple(rec.outputs[0].shape) if rec.outputs else ()
            along.append(any(lengths[o] in shape[:-1] for o in origins if o < len(lengths)))
        elif rec.op in _CUTS and rec.outputs:
            mapping = basic_index(rec)
            src, out = rec.inputs[0], rec.outputs[0]
            short = [out.shape[j] for i, j in enumerate(mapping or ())
                     if j is not None and out.shape[j] < src.shape[i]]
            if len(short) == 1 and short[0] != probe.T:
                cuts.append((rec, short[0]))
        marks.mark(outs, origins)

    def judge(run: locate.Run) -> list[Diagnostic]:
        if not tables:
            return []
        watch = _Run()
        plain = _outputs(probe, watch)
        if not watch.fed or not any(probe.T in t.shape for t in plain or ()):
            return []  # no table; or no output per token (pooled: positions may sum away)
        moved = _change(plain, _outputs(probe, _Run(noise=frozenset(watch.fed), seed=1)))
        if moved is None or moved <= _MOVES:
            return []  # the tables themselves do not reach the output: nothing to judge here
        cut = cuts[0] if cuts else None
        made = _made_at(run.records, tables[0]) if cut is None else None
        if any(lengths[o] > 1 for o in watch.fed if o < len(lengths)):
            shuffled = _change(plain, _outputs(probe, _Run(shuffle=frozenset(watch.fed), seed=2)))
            if shuffled is not None and shuffled <= _SAME:
                return [_finding(probe, tables[0], cut, made=made)]
            return []  # the positions' order moves the output (or the run failed): said nothing
        # one position only: nothing to shuffle; the tokens reordered instead
        if any(along) and _equivariant(probe, plain):  # positions along rows, not features
            return [_finding(probe, tables[0], cut, tokens=True, made=made)]
        return []

    return locate.Reader(keep, judge)


def _equivariant(probe: Probe, plain: list[Tensor]) -> bool:
    """Whether reordering the query tokens of every input only reorders the outputs the same
    way, as a module that knows no position does: a seeded permutation along each input's time
    axis, undone along each output's one axis of the sequence's length."""
    T = probe.T
    moved = [i for i, (arg, role) in enumerate(zip(probe.args, probe.roles))
             if role is not None and role.stream == "query" and role.time is not None
             and isinstance(arg, Tensor) and arg.dim() > role.time and arg.shape[role.time] == T]
    if not moved or T < 3 or any(t.shape.count(T) != 1 for t in plain):
        return False
    order = orders(T, 1, seed=3)[0]
    args = list(probe.args)
    for i in moved:
        args[i] = args[i].index_select(probe.roles[i].time, order.to(args[i].device))
    out = _outputs(probe, _Run(), args)
    if out is None or len(out) != len(plain):
        return False
    back = [t.index_select(t.shape.index(T), order.to(t.device)) for t in plain]
    change = _change(back, out)
    return change is not None and change <= _SAME


def _made_at(records: list[OpRecord], table: OpRecord) -> tuple[str, int] | None:
    """``(file, line)`` of the user's line that called the module which returned what the
    table was made of (``self.rotary_embed(q.shape[-2])``: where its length was chosen)."""
    todo, seen = list(table.inputs), set()
    while todo and len(seen) < 40:
        meta = todo.pop()
        made = meta._made_by
        if made is None or made in seen or not 0 <= made < len(records):
            continue
        seen.add(made)
        returned = getattr(meta, "returned", None)
        if returned is not None and returned.site is not None:
            filename, line, _, _ = resolve_site(*returned.site)
            return display_path(filename), line
        todo.extend(records[made].inputs)
    return None


def _finding(probe: Probe, table: OpRecord, cut: tuple[OpRecord, int] | None,
             tokens: bool = False, made: tuple[str, int] | None = None) -> Diagnostic:
    asked, made = made, f"`{table.source or table.op}` (line {table.line})"
    if tokens:
        where = (f"; the table is cut along its positions to {cut[1]} rows at line {cut[0].line}, "
                 f"not to the sequence's {probe.T}") if cut is not None else ""
        message = (f"the positions turned into a table at {made} cannot tell tokens apart: with "
                   f"the tokens reordered, every output is reordered the same way and is "
                   f"otherwise the same, though changing the table's values moves it{where}")
        hint = ("Make the table one row per token, from the sequence's length (in (B, T, H, d) "
                "that is .shape[1]), and apply it along the tokens' axis")
        if cut is None and asked is not None:  # where the table's positions were asked for
            message += f"; the table was asked for at line {asked[1]}"
            return diagnostic("positions-ignored", message, hint, rec=table, made_at=asked)
        return diagnostic("positions-ignored", message, hint, rec=cut[0] if cut else table)
    if cut is not None:
        rec, rows = cut
        what = {probe.B: " (the batch size)"}.get(rows, "")
        message = (f"the positions turned into a table at {made} cannot move the output: "
                   f"shuffled, every output stays the same, though changing the table's values "
                   f"moves it. The table is cut along its positions to {rows} rows{what} here, "
                   f"not to the sequence's {probe.T}: the rows it keeps meet the data along "
                   f"another axis, where one position is the same for every token")
        hint = ("Cut the table to the sequence length and line its positions up with the tokens' "
                "axis (a table made for (T, B, ...) tensors needs them moved there first)")
        return diagnostic("positions-ignored", message, hint, rec=rec)
    message = (f"the positions turned into a table at {made} cannot move the output: shuffled, "
               f"every output stays the same, though changing the table's values moves it: the "
               f"table is applied where a token's position makes no difference")
    hint = ("Apply the table along the tokens' axis, each position's row to its token (rotary: "
            "to q and k, with their positions on the axis the table's rows run along)")
    if asked is not None:
        message += f"; the table was asked for at line {asked[1]}"
    return diagnostic("positions-ignored", message, hint, rec=table, made_at=asked)
