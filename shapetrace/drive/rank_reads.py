"""Inputs guessed with more axes than the module takes, and defaults the forward cannot run on.

A name such as ``x`` or ``emb`` is guessed a sequence (B, T, C). A timestep's sinusoidal
embedding takes one value per sample (``x.unsqueeze(1) * freqs``), an adaptive norm one vector
per sample (``self.linear(emb).chunk(6, dim=1)``): at (B, T, C) their forwards fail on sizes
shapetrace chose, not on a bug. When the forward fails, each guessed input is read again as a
vector per sample (B, C), then as a value per sample (B,) (a timestep guessed as integers, as
a float time (B,), then as its embedding (B, C)), and last as a vector per sample kept as a
sequence of one, (B, 1, C), that broadcasts over the positions it modulates; a reading stands
only if the forward then runs. And a parameter left at its default ``None`` that the forward needs all the same
(``def forward(self, x, emb=None)`` whose first line reads ``emb``) is passed as an input.

An einops pattern the forward applies says the axes it expects (``rearrange(x, "b h t d -> t b h
d")``): when einops refuses a guessed sequence, the input is read with the pattern's own axes,
each named by its letter (b, h, t or n, d, c), when every axis is one such word. So does a shape
the forward unpacks (``B, C, T = x.shape``: channels first; ``seqlen_sum, _ = x.shape``: a flat
row of tokens, (T, C)), each name read as the size it says (``_`` last: the width).
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

from ..base.errors import failed_on_none
import re

from ..base.names import TIMESTEPS, dim_of_word, size_of
from ..base.specs import InputSpec
from ..record.tensors import tensors_in
from .guess import Guess

#: the readings tried, in order: what each is called in the note
_FEWER = ((("B", "C"), "a vector per sample, (B, C)"), (("B",), "a value per sample, (B,)"))
#: and last, a vector per sample kept as a sequence of one, broadcast over the positions of the
#: data it conditions (``x * (1 + scale) + shift`` with ``scale`` of (B, 1, C))
_ONE_STEP = ((("B", 1, "C"), "a vector per sample as a sequence of one, (B, 1, C)"),)


@dataclass(frozen=True)
class FewerAxes(Guess):
    """``names``: inputs guessed from their names as sequences (B, T, C)."""

    names: tuple[str, ...]

    def read_by(self, failed, plan) -> bool:
        return failed.raised is not None

    def others(self, plan, failed) -> Iterator:
        where = _failed_at(failed)
        specs = {s.name: s for s in plan.inputs if isinstance(s, InputSpec)}
        for name in reversed(self.names):  # a condition usually follows the data it conditions
            was = specs.get(name)
            if was is None:
                continue
            # a timestep guessed as integers: a float time, then its embedding
            beside = was.dtype != "float" and any(
                n != name and tuple(sp.dims) == ("B", "T", "C") for n, sp in specs.items())
            # a sequence of one only for a condition (a timestep's embedding) beside the data it
            # conditions: the data itself at one position would get past any failure that more
            # positions show
            readings = (_FEWER if was.dtype == "float" else _FEWER[::-1]) + (_ONE_STEP if beside else ())
            for dims, what in readings:
                inputs = _replaced(plan.inputs, {name}, dims=dims, dtype="float", high=None)
                shown = ", ".join(str(d) for d in was.dims)
                ints = " integers" if was.dtype != "float" else ""
                note = (f"{name} read as {what}: as{ints} ({shown}{',' if len(was.dims) == 1 else ''}) "
                        f"the forward failed at {where}; give --input {name}=... to choose")
                # the other inputs' guesses stay open: a style vector read per sample may go
                # with data read channels first (``(1 + gamma) * self.norm(x)``)
                rest = tuple(g for g in plan.guesses if g.after_another_input)
                yield dataclasses.replace(plan, inputs=inputs, guesses=rest, note=note,
                                          reading_of=self)
        floats = [n for n in self.names if getattr(specs.get(n), "dtype", None) == "float"]
        if len(floats) > 1:  # an MLP over one vector per sample takes each of them so
            inputs = _replaced(plan.inputs, set(floats), dims=("B", "C"))
            note = (f"{', '.join(floats)} read as vectors per sample, (B, C): as (B, T, C) the "
                    f"forward failed at {where}; give --input to choose")
            yield dataclasses.replace(plan, inputs=inputs, guesses=(), note=note, reading_of=self)

    def stands(self, attempt, plan) -> bool:
        """A value or a vector per sample keeps the samples apart: a forward that pairs them
        (an op with the batch's size on two axes: ``queries @ keys.T`` of one sequence's tokens
        read as samples) reads that axis as something else, and the reading does not stand."""
        return not attempt.pairs_samples(plan.dims["B"])


@dataclass(frozen=True)
class _SequenceRead(Guess):
    """``names``: inputs after the first guessed as sequences (B, T, C) from what reads them (a
    layer's width), read as ``DIMS`` (``WHAT``) instead when the forward fails on them; the
    reading stands only if the forward then runs."""

    names: tuple[str, ...]
    DIMS: ClassVar[tuple] = ()
    WHAT: ClassVar[str] = ""

    def read_by(self, failed, plan) -> bool:
        return failed.raised is not None

    def others(self, plan, failed) -> Iterator:
        where = _failed_at(failed)
        specs = {s.name: s for s in plan.inputs if isinstance(s, InputSpec)}
        shown = ", ".join(str(d) for d in self.DIMS)
        for name in self.names:
            was = specs.get(name)
            if was is None or tuple(was.dims) != ("B", "T", "C"):
                continue
            inputs = _replaced(plan.inputs, {name}, dims=self.DIMS)
            note = (f"{name} read as {self.WHAT}, ({shown}): as (B, T, C) the forward failed at "
                    f"{where}; give --input {name}=... to choose")
            rest = tuple(g for g in plan.guesses if g.after_another_input)
            yield dataclasses.replace(plan, inputs=inputs, guesses=rest, note=note, reading_of=self)


@dataclass(frozen=True)
class PairAxes(_SequenceRead):
    """One vector per pair of positions (a graph's edge features beside its nodes, a pairwise
    bias: (B, T, T, C))."""

    DIMS: ClassVar[tuple] = ("B", "T", "T", "C")
    WHAT: ClassVar[str] = "one vector per pair of positions"


@dataclass(frozen=True)
class SharedAxes(_SequenceRead):
    """One table every sample shares (a position table handed in beside the data,
    ``pos_emb[:, :k_len]`` of shape (1, T, C), which the forward folds into its positions with
    ``p.view(-1, heads, d_head)``)."""

    DIMS: ClassVar[tuple] = (1, "T", "C")
    WHAT: ClassVar[str] = "one table every sample shares"


@dataclass(frozen=True)
class MoreAxes(Guess):
    """``names``: inputs read as one vector per sample, (B, k), from the layer forward hands
    them to (``nn.Linear(1, C)`` for a return-to-go), that may hold one such vector per
    position instead (B, T, k), as the sequences beside them do. Tried when the forward fails;
    the reading stands only if the forward then runs."""

    names: tuple[str, ...]

    def read_by(self, failed, plan) -> bool:
        return failed.raised is not None

    def others(self, plan, failed) -> Iterator:
        where = _failed_at(failed)
        specs = {s.name: s for s in plan.inputs if isinstance(s, InputSpec)}
        read = [n for n in self.names if n in specs and len(specs[n].dims) == 2
                and specs[n].dims[0] == "B"]
        if not read:
            return
        inputs = tuple(dataclasses.replace(s, dims=("B", "T", s.dims[1]))
                       if isinstance(s, InputSpec) and s.name in read else s for s in plan.inputs)
        shown = ", ".join(f"{n} (B, T, {specs[n].dims[1]})" for n in read)
        note = (f"{shown} read as one vector per position: as one per sample the forward "
                f"failed at {where}; give --input to choose")
        rest = tuple(g for g in plan.guesses if g.after_another_input)
        yield dataclasses.replace(plan, inputs=inputs, guesses=rest, note=note, reading_of=self)


#: what torch says when sizes do not fit: a view of another number of elements, a product of
#: other widths
_SIZES_UNFIT = re.compile(r"is invalid for input of size|shapes cannot be multiplied|was expecting "
                          r"embedding dimension")


@dataclass(frozen=True)
class GroupedAxes(Guess):
    """``names``: inputs guessed as sequences (B, T, C), read with one more axis before the
    positions, (B, N, T, C): a stack of sequences per sample (the rows of an alignment, the
    frames of a clip) that the forward folds or attends along. Tried after every other
    reading, when the forward fails; it stands only if the forward then runs and the new axis
    reaches an output (the module works on the stack, not on a stack it happens to absorb)."""

    names: tuple[str, ...]

    def read_by(self, failed, plan) -> bool:  # on the sizes first chosen only: a stack of
        # sequences at a length another reading asked for (T = 1001) is too large to try; and
        # only where sizes did not fit (a view of other sizes, a product of other widths), not
        # where a view met strides or a value was wrong
        return failed.raised is not None and "N" not in plan.dims \
            and getattr(plan, "reading_of", None) is None and bool(_SIZES_UNFIT.search(str(failed.raised)))

    def others(self, plan, failed) -> Iterator:
        specs = {s.name: s for s in plan.inputs if isinstance(s, InputSpec)}
        read = [n for n in self.names if n in specs
                and tuple(specs[n].dims) in (("B", "T", "C"), ("B", "S", "C"))]
        if not read:
            return
        request, size = _with_stack(plan, 11)
        where = _failed_at(failed)
        own = {n: specs[n].dims[1] for n in read}  # keys of their own length (S), then of T
        for lengths in (own, dict.fromkeys(read, "T")) if "S" in own.values() else (own,):
            inputs = tuple(dataclasses.replace(s, dims=("B", "N", lengths[s.name], "C"))
                           if isinstance(s, InputSpec) and s.name in lengths else s
                           for s in plan.inputs)
            shown = ", ".join(f"{n} (B, N, {t}, C)" for n, t in lengths.items())
            note = (f"{shown} read as a stack of sequences per sample, N={size}: as one sequence "
                    f"the forward failed at {where}; give --input to choose")
            yield dataclasses.replace(plan, request=request, inputs=inputs, guesses=(), note=note,
                                      reading_of=self)

    def stands(self, attempt, plan) -> bool:
        size = plan.dims.get("N")
        return size is not None and any(
            size in tuple(t.shape) for t in tensors_in(attempt.output))


@dataclass(frozen=True)
class StackedIds(Guess):
    """``names``: inputs read as token ids, one per position (B, T), that may hold several per
    position (the notes of a chord, the codebooks of an audio frame): a forward that embeds
    them and fails past the embedding where two operands of different ranks do not broadcast
    (a table lifted by an axis, ``pe.unsqueeze(-2)``, to meet embeddings of one axis more) is
    run with ids of (B, T, N), then (B, N, T). A reading stands only if the forward then runs
    and N reaches an output. A size of the module's own is never N."""

    names: tuple[str, ...]

    def read_by(self, failed, plan) -> bool:
        from .ids_read import at_embedding

        op = failed.failed_op
        ranks = {len(m.shape) for m in op.inputs if getattr(m, "shape", None) is not None} \
            if op is not None else set()
        return op is not None and op.error is not None and "N" not in plan.dims \
            and not at_embedding(failed) and len(ranks) == 2 and len(op.inputs) == 2 \
            and bool(_UNMET.search(str(op.error[1])))

    def others(self, plan, failed) -> Iterator:
        specs = {s.name: s for s in plan.inputs if isinstance(s, InputSpec)}
        read = [n for n in self.names if n in specs and tuple(specs[n].dims) == ("B", "T")
                and specs[n].dtype == "long"]
        if not read:
            return
        from .own_sizes import own_sizes  # never a size of the module's own (a count of 3)

        request, size = _with_stack(plan, 3, avoid=own_sizes(plan))
        where = _failed_at(failed)
        for axes in (("B", "T", "N"), ("B", "N", "T")):
            inputs = tuple(dataclasses.replace(s, dims=axes) if isinstance(s, InputSpec)
                           and s.name in read else s for s in plan.inputs)
            shown = ", ".join(f"{n} ({', '.join(axes)})" for n in read)
            note = (f"{shown} read as several token ids per position, N={size}: with one the "
                    f"forward failed at {where}; give --input to choose")
            masks = tuple(g for g in plan.guesses if type(g).__name__ == "GuessedMasks")
            yield dataclasses.replace(plan, request=request, inputs=inputs, guesses=masks,
                                      note=note, reading_of=self)  # masks of the ids, still open

    def stands(self, attempt, plan) -> bool:  # N, or the positions and ids flattened (T*N)
        size, dims = plan.dims.get("N"), plan.dims
        return size is not None and any(n == size or n % size == 0 and n // size in (dims["T"], dims["S"])
                                        for t in tensors_in(attempt.output) for n in t.shape)


#: operands that do not broadcast
_UNMET = re.compile(r"must match the size of tensor b")


@dataclass(frozen=True)
class InputWidth(Guess):
    """``names``: inputs guessed with the model's width (B, T, C). Where the forward fails
    combining one of them, at its own shape, with a weight of another probe size (``a_2 * (x -
    mean)`` of a norm built over ``d_k`` features, ``The size of tensor a (13) must match the
    size of tensor b (143)``), that input's features are read as that size: a source of keys
    narrower than the queries. Tried when the forward fails; it stands only if it then runs."""

    names: tuple[str, ...]

    def read_by(self, failed, plan) -> bool:  # beside another input that keeps the width:
        return len(self.names) > 1 and bool(self._widths(failed, plan))  # a lone input's width
        # is the model's, and a weight of another meeting it is the code's own bug

    def others(self, plan, failed) -> Iterator:
        for name, dim in self._widths(failed, plan):
            specs = {s.name: s for s in plan.inputs if isinstance(s, InputSpec)}
            was = specs[name]
            inputs = _replaced(plan.inputs, {name}, dims=(*was.dims[:-1], dim))
            note = (f"{name} read with {dim} features, ({', '.join(was.dims[:-1])}, {dim}): with "
                    f"C it did not fit {_failed_at(failed)}, a weight of {dim}; give --input "
                    f"{name}=... to choose")
            rest = tuple(g for g in plan.guesses if g is not self)
            yield dataclasses.replace(plan, inputs=inputs, guesses=rest, note=note, reading_of=self)

    def _widths(self, failed, plan) -> list[tuple[str, str]]:
        """(input, dim) for each guessed input of the failing op's shape, when the failure
        met the width C with the size of another dim."""
        from .asked import MET

        op, raised = failed.failed_op, failed.raised
        found = MET.search(str(raised)) if raised is not None and op is not None else None
        dims = plan.dims
        if found is None or "C" not in dims:
            return []
        sizes = {int(n) for n in found.groups()}
        if dims["C"] not in sizes or len(sizes) != 2:
            return []
        (other,) = sizes - {dims["C"]}
        dim = next((k for k, v in dims.items() if v == other and k not in ("B", "T", "S", "C")),
                   None)
        if dim is None:
            return []
        shapes = {tuple(m.shape) for m in op.inputs}
        return [(name, dim) for name, arg in failed.guessed
                if name in self.names and tuple(arg.shape) in shapes and arg.dim() >= 2]


@dataclass(frozen=True)
class IdRange(Guess):
    """``names``: integer inputs guessed from their names (token ids, a timestep) in [0, N).
    Code that shifts ids before it looks them up (``text + 1``, keeping row 0 for padding) runs
    past the table's end with the last of them: when an index goes out of range, the ids are
    read again one in from each end, [1, N - 1)."""

    names: tuple[str, ...]

    def read_by(self, failed, plan) -> bool:
        return isinstance(failed.raised, IndexError) and "out of range" in str(failed.raised)

    def others(self, plan, failed) -> Iterator:
        def narrowed(spec):
            high = plan.dims["V"] if spec.high in (None, "V") else spec.high
            if not isinstance(high, int) or high - 1 <= max(spec.low, 1):
                return spec
            return dataclasses.replace(spec, low=max(spec.low, 1), high=high - 1)

        inputs = tuple(narrowed(s) if isinstance(s, InputSpec) and s.name in self.names else s
                       for s in plan.inputs)
        if inputs == plan.inputs:
            return
        where = _failed_at(failed)
        names = ", ".join(self.names)
        note = (f"{names} read one in from each end of {'their' if len(self.names) > 1 else 'its'} "
                f"range: an index went out of range at {where}; give --input to choose")
        rest = tuple(g for g in plan.guesses if g is not self)  # sizes may still be read
        yield dataclasses.replace(plan, inputs=inputs, guesses=rest, note=note, reading_of=self)


def id_guesses(specs) -> tuple[str, ...]:
    """The integer inputs guessed from their names (ids, timesteps), not masks."""
    return tuple(s.name for s in specs if isinstance(s, InputSpec) and s.dtype == "long"
                 and s.mask is None)


@dataclass(frozen=True)
class NeededDefaults(Guess):
    """``names``: forward's parameters after the inputs, left at their default ``None``."""

    names: tuple[str, ...]

    def read_by(self, failed, plan) -> bool:
        return failed_on_none(failed.raised)

    def others(self, plan, failed) -> Iterator:
        from .input_reads import spec_from_name
        from .rotary_reads import rotary_input

        # the parameter the failure read while None (a wrapper's ``position_ids`` handed on to
        # the attention that rotates by them), the first of them when it names none
        name = next((n for n in self.names if n in failed.none_read), self.names[0])
        before = _left_before(failed.model, plan.inputs, name)  # None, as now
        if before is None:
            return
        names = {*(getattr(s, "name", None) for s in plan.inputs), *self.names}
        spec = rotary_input(name, names, plan.dims) or spec_from_name(name, names)
        named = isinstance(spec, InputSpec) and spec.name == name and (  # position ids: (B, T)
            tuple(spec.dims) != ("B", "T", "C") or spec.dtype != "float")  # of integers
        spec = spec if named else InputSpec(name, ("B", "T", "C"))
        shown = "(" + ", ".join(map(str, spec.dims)) + ")" + (f" of {spec.dtype}s" if spec.dtype != "float" else "")
        note = (f"{name} passed as an input {shown}: with its default None the forward failed "
                f"at {_failed_at(failed)}; give --input {name}=... to choose")
        after = self.names[self.names.index(name) + 1:]  # still open: another read None next
        rest = tuple(g for g in plan.guesses if g is not self and not isinstance(g, NeededDefaults)) \
            + ((NeededDefaults(after),) if after and named else ())
        yield dataclasses.replace(plan, inputs=(*plan.inputs, *before, spec), note=note, reading_of=self,
                                  guesses=rest if named else (FewerAxes((name,)),))


def _left_before(model, inputs, name: str) -> tuple | None:
    """The parameters of ``model``'s forward between the last of ``inputs`` and ``name``, each
    passed its default None (``attention_mask`` before ``position_ids``), so that ``name`` is
    passed in its own place; None when one of them has no default None."""
    from ..base.specs import ValueInput

    try:
        params = [p for p in inspect.signature(model.forward).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return ()
    order = [p.name for p in params]
    if name not in order:
        return ()
    start = len(inputs)
    between = params[start:order.index(name)]
    if any(p.default is not None for p in between):
        return None
    return tuple(ValueInput(p.name) for p in between)


#: the pattern einops names when it refuses a tensor
_EINOPS_PATTERN = re.compile(r'pattern "([^"]*?)\s*->')


@dataclass(frozen=True)
class PatternAxes(Guess):
    """``names``: float inputs shapetrace guessed, read with an einops pattern's axes."""

    names: tuple[str, ...]

    def read_by(self, failed, plan) -> bool:
        return bool(self._axes(failed))

    def others(self, plan, failed) -> Iterator:
        axes = self._axes(failed)
        specs = {s.name: s for s in plan.inputs if isinstance(s, InputSpec)}
        for name in self.names:
            if name in specs and tuple(specs[name].dims) != axes:
                inputs = _replaced(plan.inputs, {name}, dims=axes)
                note = (f"{name} read as ({', '.join(axes)}), the axes of the einops pattern the "
                        f"forward applies: as ({', '.join(specs[name].dims)}) einops refused it; "
                        f"give --input {name}=... to choose")
                yield dataclasses.replace(plan, inputs=inputs, guesses=(), note=note, reading_of=self)

    @staticmethod
    def _axes(failed) -> tuple[str, ...]:
        """The dims of the left side of the pattern einops refused, when each is a word for one."""
        raised = failed.raised
        if raised is None or "einops" not in type(raised).__module__.lower():
            return ()
        found = _EINOPS_PATTERN.search(str(raised))
        words = found.group(1).split() if found else []
        axes = tuple(dim_of_word(w) for w in words)
        if not words or None in axes or len(set(axes)) != len(axes) or "L" in axes:
            return ()
        return axes


@dataclass(frozen=True)
class UnpackedAxes(Guess):
    """``names``: float inputs shapetrace guessed, read with the axes the forward unpacks."""

    names: tuple[str, ...]

    def read_by(self, failed, plan) -> bool:
        return self._axes(failed) is not None

    def others(self, plan, failed) -> Iterator:
        name, axes = self._axes(failed)
        was = next(s for s in plan.inputs if isinstance(s, InputSpec) and s.name == name)
        shown = ", ".join(axes)
        new = [a for a in axes if a not in plan.dims]
        sized = ""
        if new:  # sizes no dim stands for (num_rows, seg_num): each an axis of its own size
            from ..base.dims import Dims
            from ..base.ops import next_prime

            dims = plan.dims
            taken = set(dims.values())
            added: dict[str, int] = {}
            for axis in new:
                added[axis] = next_prime(11, avoid=taken)
                taken.add(added[axis])
            request = dataclasses.replace(plan.request, dims=Dims(
                {**{k: dims[k] for k in dims.explicit}, **added}))
            plan = dataclasses.replace(plan, request=request)
            sized = "; " + ", ".join(f"{a}={n}" for a, n in added.items()) + ", sizes of their own"
        note = (f"{name} read as ({shown}{',' if len(axes) == 1 else ''}), the sizes the forward "
                f"unpacks from its shape{sized}: as ({', '.join(was.dims)}) it had another number; "
                f"give --input {name}=... to choose")
        yield dataclasses.replace(plan, inputs=_replaced(plan.inputs, {name}, dims=axes),
                                  guesses=(), note=note, reading_of=self)

    def _axes(self, failed) -> tuple[str, tuple[str, ...]] | None:
        """(input, dims) when the forward failed unpacking the shape of one of ``names`` into
        names that each say a size (``_`` last: the width)."""
        import ast
        import linecache

        raised, at = failed.raised, failed.raised_at
        if not isinstance(raised, ValueError) or at is None or "values to unpack" not in str(raised):
            return None
        try:
            tree = ast.parse(linecache.getline(at[0], at[1]).strip())
        except SyntaxError:
            return None
        node = tree.body[0] if tree.body else None
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Tuple)):
            return None
        value = node.value.func.value if isinstance(node.value, ast.Call) \
            and isinstance(node.value.func, ast.Attribute) and node.value.func.attr == "size" else \
            node.value.value if isinstance(node.value, ast.Attribute) and node.value.attr == "shape" else None
        if not isinstance(value, ast.Name) or value.id not in self.names:
            return None
        words = [t.id if isinstance(t, ast.Name) else None for t in node.targets[0].elts]
        axes = [_size_word(w) for w in words]
        if axes and words[-1] == "_" and axes[-1] is None and "C" not in axes:
            axes[-1] = "C"
        if {"B", "C"} <= set(axes):  # a size no word explains beside the batch and the width
            axes = [a if a is not None or not _own_axis(w) else w for a, w in zip(axes, words)]
        if not axes or None in axes or len(set(axes)) != len(axes) or {"H", "L"} & set(axes):
            return None  # an image's sides (h, w) are read as an image, not as heads
        return value.id, tuple(axes)


def _own_axis(word: str | None) -> bool:
    """Whether an unpacked name can be an axis of its own (``num_rows``, ``seg_num``): a name of
    the code's, not ``_``, nor one letter an image's side or a dim would take (``h``, ``w``)."""
    return bool(word) and word.isidentifier() and len(word.strip("_")) > 1 \
        and word.lower() not in ("height", "width")


def _size_word(word: str | None) -> str | None:
    """The dim a name of an unpacked size says: the whole name, else one of its words
    (``seqlen_sum``: T)."""
    if not word or word == "_":
        return None
    return dim_of_word(word) or next((d for part in word.split("_") if (d := dim_of_word(part))), None)


def _with_stack(plan, least: int, avoid=frozenset()):
    """``(request, N)``: the plan's request with an axis N of its own for a stack, the first
    prime from ``least`` no probe size (and none of ``avoid``) has, beside the sizes the caller
    gave."""
    from ..base.dims import Dims
    from ..base.ops import next_prime

    dims = plan.dims
    size = next_prime(least, avoid=set(dims.values()) | set(avoid))
    return dataclasses.replace(plan.request, dims=Dims(
        {**{k: dims[k] for k in dims.explicit}, "N": size})), size


def _failed_at(failed) -> str:
    """Where an attempt failed, for a note: the op, else the line, else its first use."""
    if failed.failed_op is not None:
        return failed.failed_op.op
    return f"line {failed.raised_at[1]}" if failed.raised_at is not None else "its first use"


def _replaced(specs, names, **changes) -> tuple:
    """``specs`` with those of ``names`` changed (``dataclasses.replace``)."""
    return tuple(dataclasses.replace(s, **changes) if isinstance(s, InputSpec) and s.name in names
                 else s for s in specs)


def rank_guesses(forward, specs) -> list:
    """The guesses of this module for a plan whose inputs ``specs`` were inferred."""
    needed = defaults_after(forward, specs)
    ids = id_guesses(specs)
    sequences = sequence_guesses(specs)
    floats = tuple(s.name for s in specs if isinstance(s, InputSpec) and s.mask is None and s.dtype == "float")
    vectors = tuple(s.name for s in specs if isinstance(s, InputSpec) and s.mask is None
                    and s.dtype == "float" and len(s.dims) == 2 and s.dims[0] == "B"
                    and any(isinstance(o, InputSpec) and tuple(o.dims[:2]) == ("B", "T")
                            and len(o.dims) == 3 for o in specs))
    stacked = tuple(s.name for s in specs if isinstance(s, InputSpec) and s.dtype == "long"
                    and tuple(s.dims) == ("B", "T"))
    return ([NeededDefaults(needed)] if needed else []) + ([IdRange(ids)] if ids else []) \
        + ([StackedIds(stacked)] if stacked else []) \
        + ([MoreAxes(vectors)] if vectors else []) \
        + ([PatternAxes(floats), UnpackedAxes(floats)] if floats else []) \
        + ([FewerAxes(sequences)] if sequences else []) \
        + ([PairAxes(sequences[1:]), SharedAxes(sequences[1:])] if len(sequences) > 1 else []) \
        + ([InputWidth(sequences)] if sequences else []) \
        + ([GroupedAxes(sequences)] if sequences else [])


def sequence_guesses(specs) -> tuple[str, ...]:
    """The inputs guessed as sequences (B, T, C) or (B, S, C) from their names, and timesteps
    guessed as one integer per sample (which may be the timestep's embedding)."""
    return tuple(s.name for s in specs if isinstance(s, InputSpec) and s.mask is None and (
        (s.dtype == "float" and tuple(s.dims) in (("B", "T", "C"), ("B", "S", "C")))
        or (s.dtype == "long" and tuple(s.dims) == ("B",) and s.high == TIMESTEPS)))


def defaults_after(forward, specs) -> tuple[str, ...]:
    """Forward's parameters after the inputs ``specs`` whose default is None and whose name
    says no size and no mask (a tensor it may need)."""
    try:
        params = [p for p in inspect.signature(forward).parameters.values()
                  if p.name != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    except (TypeError, ValueError):
        return ()
    given = {getattr(s, "name", None) for s in specs}
    return tuple(p.name for p in params if p.name not in given and p.default is None
                 and size_of(p.name) is None and "mask" not in p.name.lower())
