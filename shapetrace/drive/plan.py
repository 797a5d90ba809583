"""Building a target is planned, then attempted: the plan is data.

``make_plan(request)`` reads everything it can before anything runs: the constructor's keyword
arguments (given, inferred from their names, or made by a library style's adapter: ``styles``),
forward's inputs (given, or inferred from annotations and names: ``infer``) and the sizes.
``attempt.attempt(plan)`` then builds the module and runs it once, on a model, inputs and trace
of its own, so nothing shared is changed and put back.

A value shapetrace chose itself is a :class:`Guess` that carries its other readings: inputs
guessed as vectors may be token ids, ``num_tokens`` may be the sequence length rather than the
vocabulary (``base.names.READ_AGAIN``), an input guessed as vectors may be an image. When the first
attempt's forward fails at an op that reads a guessed value (or at a line that unpacks its
shape), the plan's next reading is attempted (:meth:`Plan.readings`); the first that runs
stands, with a note saying which reading it was.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .asked import INNER, MET
from ..base.dims import Dims
from ..base.errors import ShapetraceError, TargetError, UsageError
from ..base.names import (
    DIM_MEANINGS,
    KEY_VALUE_INPUTS,
    QUERY_INPUTS,
    READ_AGAIN,
)
from ..base.ops import MATMULS, next_prime
from ..base.specs import InputSpec, ValueInput, parse_input
from .guess import Guess
from .behind import inputs_read_by
from .probe_sizes import ProbeSizes
from .heads_read import HeadInputs
from .ids_read import at_embedding
from .image_sides import ImageInputs
from .passed_read import PassedValues


@dataclass(frozen=True)
class Request:
    """What ``check()`` was asked: the module (a class or an instance) and the user's settings.
    ``init`` and ``inputs`` are as given (None: inferred)."""

    module: Any
    dims: Dims
    display: str
    init: Mapping[str, Any] | None = None
    inputs: Sequence[Any] | None = None
    causal: bool | None = None
    fake: bool = False
    behaviour: bool = True
    seed: int = 0
    reference: Any = None
    #: checks already made in this run, for code handed in again (``reuse.Reuse``)
    reuse: Any = None

    @property
    def cls(self) -> type:
        return self.module if isinstance(self.module, type) else type(self.module)


@dataclass(frozen=True)
class Plan:
    """How to build and run the module once.

    ``init``: the constructor's keyword arguments (None for an instance); ``inputs``: forward's
    arguments in order, as specs or the caller's tensors; ``problem``: what could not be
    inferred about the inputs, raised once the module is built (a constructor that fails says
    so first); ``guesses``: the values shapetrace chose, with their other readings; ``note``:
    how this plan reads a guess differently from the first one.
    """

    request: Request
    init: dict[str, Any] | None
    inputs: tuple[Any, ...] = ()
    problem: ShapetraceError | None = None
    guesses: tuple[Guess, ...] = ()
    note: str = ""
    #: calls made before each forward: (module path, method, input specs) (``setup_read``)
    setup: tuple = ()
    #: the guess this plan reads another way (None for the first plan)
    reading_of: Guess | None = None
    #: how values were read from the module's own code (a config's fields, an example call)
    read_notes: tuple[str, ...] = ()
    #: constructor arguments a refusing constructor asked for (``none_defaults``), as pairs:
    #: kept when the plan is made again at other probe sizes
    built_as: tuple = ()

    @property
    def dims(self) -> Dims:
        return self.request.dims

    def accepts(self, attempt) -> bool:
        """Whether an attempt of this plan stands instead of the first one: it ran, or (for a
        guess that says so) it got past the op where the first reading failed."""
        if self.reading_of is not None and attempt.ran and (
                attempt.made_empty or not self.reading_of.stands(attempt, self)):
            return False  # a reading that empties an axis (x[:, 1000:] of 1000 tokens) checks nothing
        return attempt.ran or (self.reading_of is not None
                               and self.reading_of.settled_by(attempt, self))

    def readings(self, failed) -> Iterator[Plan]:
        """The plans that read a guess another way, for a first attempt (``failed``, an
        ``attempt.Attempt``) whose forward failed where it read that guess; each carries its
        note. Nothing when the failure reads no guess."""
        for guess in self.guesses:
            if guess.read_by(failed, self):
                yield from guess.others(self, failed)


@dataclass(frozen=True)
class AmbiguousSize(Guess):
    """A constructor argument whose name means different sizes in different codebases
    (``num_tokens``), guessed as its first reading."""

    name: str
    value: int
    others_: tuple[str, ...] = field(default=())  # the dims of its other readings

    def read_by(self, failed, plan: Plan) -> bool:
        op = failed.failed_op
        return op is not None and any(self.value in meta.shape for meta in op.inputs)

    def others(self, plan: Plan, failed) -> Iterator[Plan]:
        failed = failed.failed_op
        first = DIM_MEANINGS[READ_AGAIN[self.name][0]].split(" (")[0]
        for dim in self.others_:
            size = plan.dims.get(dim)
            if size is None or size == self.value:
                continue
            note = (f"{self.name} read as {DIM_MEANINGS[dim]}: as {first} it did not fit "
                    f"{failed.op}; give --init {self.name}=SIZE to choose")
            yield dataclasses.replace(plan, init={**plan.init, self.name: size}, guesses=(),
                                      note=note, reading_of=self)


@dataclass(frozen=True)
class ChosenSize(Guess):
    """A constructor value shapetrace chose that is no probe size (a window's side guessed 4,
    a count guessed 2), or a probe size read only from the layer the constructor hands it to
    (``field_size`` read as the width from its ``nn.Linear``), and met a probe size at the op
    that failed (``The size of tensor a (4) must match the size of tensor b (7)``, the
    ``win_size`` x ``win_size`` table of distances that a sequence's scores divide; a linear
    layer's ``mat1 and mat2 shapes cannot be multiplied (5x7 and 143x47)``): read as that size."""

    name: str
    value: int

    def read_by(self, failed, plan: Plan) -> bool:
        return self._met(failed, plan) is not None

    def _met(self, failed, plan: Plan) -> tuple[str, int] | None:
        op = failed.failed_op
        text = (op.error[1] or "") if op is not None and op.error else ""
        found = MET.search(text) or INNER.search(text)  # elementwise, or a product's inner sizes
        if found is None:
            return None
        sizes = {int(found.group(1)), int(found.group(2))}
        if self.value not in sizes or len(sizes) != 2:
            return None
        other = next(iter(sizes - {self.value}))
        dim = next((k for k in ("T", "S") if plan.dims.get(k) == other), None)
        return None if dim is None else (dim, other)

    def others(self, plan: Plan, failed) -> Iterator[Plan]:
        met = self._met(failed, plan)
        if met is None:
            return
        dim, size = met
        op = failed.failed_op
        note = (f"{self.name}={size}, the size of {dim} it met at {op.op}: as {self.value} it "
                f"did not fit; give --init {self.name}=VALUE to choose")
        yield dataclasses.replace(plan, init={**plan.init, self.name: size}, guesses=(),
                                  note=note, reading_of=self)


@dataclass(frozen=True)
class KernelSize(Guess):
    """A kernel size read from the convolution it is handed to, guessed 3: a forward that
    fails with it is run with 1 (a convolution of no padding keeps its length only then)."""

    name: str

    def read_by(self, failed, plan: Plan) -> bool:
        return failed.raised is not None

    def others(self, plan: Plan, failed) -> Iterator[Plan]:
        yield dataclasses.replace(plan, init={**plan.init, self.name: 1}, guesses=(),
                                  reading_of=self, note=f"{self.name}=1: with 3 the forward "
                                  f"failed; give --init {self.name}=VALUE to choose")


@dataclass(frozen=True)
class HiddenSize(Guess):
    """A hidden size guessed from its name as a feed-forward width (``hidden_dim`` -> 4*C) that
    may be the model's width itself (an additive attention's ``hidden_dim``): a linear layer of
    4*C inputs, or a norm over 4*C features, handed a tensor of width C says so. Its other
    readings stay open."""

    name: str
    value: int

    def read_by(self, failed, plan: Plan) -> bool:
        op = failed.failed_op
        inputs = op.inputs if op is not None else ()
        if len(inputs) > 1 and inputs[0].shape and inputs[0].shape[-1] == plan.dims["C"] and (
                op.op in ("F.linear", "F.bilinear") and inputs[1].shape[-1:] == (self.value,)
                or op.op in MATMULS and inputs[1].shape[-2:-1] == (self.value,)  # x @ W by hand
                or op.op == "F.layer_norm" and tuple(inputs[1].shape) == (self.value,)):
            return True
        met = MET.search(str(failed.raised)) if failed.raised is not None else None
        # a table of 4*C features added to a width-C tensor: (B, T, C) + (1, T, 4*C)
        return met is not None and {int(n) for n in met.groups()} == {plan.dims["C"], self.value}

    def others(self, plan: Plan, failed) -> Iterator[Plan]:
        note = (f"{self.name} read as the width (C): as 4*C it did not fit "
                f"{failed.failed_op.op}; give --init {self.name}=SIZE to choose")
        rest = tuple(g for g in plan.guesses if g is not self)
        yield dataclasses.replace(plan, init={**plan.init, self.name: plan.dims["C"]},
                                  guesses=rest, note=note, reading_of=self)


@dataclass(frozen=True)
class VectorInputs(Guess):
    """Inputs guessed from their names as vectors (``x``, ``src``, ``tgt`` -> B, T, C) that may
    be token ids: an embedding handed them as floats says so."""

    tokens: tuple[InputSpec, ...]
    #: read because the module embeds tokens, not at a failed embedding: stands only if it runs
    strict: bool = False
    #: inputs whose names say nothing (``txt_tokens``, guessed as vectors): read only where an
    #: embedding refuses them as floats
    at_embedding_only: bool = False

    def read_by(self, failed, plan: Plan) -> bool:
        names = [s.name for s in self.tokens]
        if self.at_embedding_only:  # or unpacked into (batch, length) by a module that embeds
            return at_embedding(failed) or (_embeds(failed.model) and failed.unpacked(2, names))
        return (at_embedding(failed) or (not failed.ran and _embeds(failed.model))
                or failed.unpacked(2, names))

    def others(self, plan: Plan, failed) -> Iterator[Plan]:
        op = failed.failed_op
        tokens = self.tokens
        if self.at_embedding_only and not at_embedding(failed):  # only those unpacked so
            tokens = tuple(t if failed.unpacked(2, [t.name]) else o
                           for t, o in zip(self.tokens, plan.inputs))
        names = ", ".join(s.name for s, o in zip(tokens, plan.inputs) if s != o)
        where = (op.op if op is not None else
                 f"the two sizes unpacked at line {failed.raised_at[1]}"
                 if failed.raised_at is not None else "the forward")
        kind = "vectors" if all(len(o.dims) == 3 for s, o in zip(tokens, plan.inputs)
                                if s != o and isinstance(o, InputSpec)) else "floats"
        note = (f"{names} read as token ids: as {kind} {'they' if ',' in names else 'it'} did "
                f"not fit {where}; give --input to choose")
        reading = self if at_embedding(failed) else dataclasses.replace(self, strict=True)
        # still open: masks, probe sizes (ids into rotary heads of an odd size), counts set over
        from .defaults_read import OverDefaults  # the constructor's defaults (a ratio's heads)
        from .rank_reads import StackedIds
        rest = tuple(g for g in plan.guesses if isinstance(g, (GuessedMasks, ProbeSizes, OverDefaults))) \
            + (StackedIds(tuple(t.name for t in tokens)),)  # ids of an axis more, last
        yield dataclasses.replace(plan, inputs=tokens, guesses=rest, note=note,
                                  reading_of=reading)

    def settled_by(self, attempt, plan: Plan) -> bool:
        """A failure past the embedding is the code's own, but a split by a count over its
        default, and an elementwise op whose operands of two ranks do not broadcast (the code
        lifted one to meet ids with an axis more than guessed: ``pe.unsqueeze(-2)`` beside the
        tracks of each position)."""
        from .defaults_read import OverDefaults
        return not self.strict and attempt.failed_op is not None and not at_embedding(attempt) \
            and not _ranks_unmet(attempt.failed_op) \
            and not any(g.read_by(attempt, plan) for g in plan.guesses if isinstance(g, OverDefaults))


def _ranks_unmet(op) -> bool:
    """Whether ``op`` failed broadcasting two operands of different ranks."""
    ranks = {len(m.shape) for m in op.inputs if getattr(m, "shape", None) is not None}
    return op.error is not None and len(op.inputs) == 2 and len(ranks) == 2 \
        and MET.search(op.error[1] or "") is not None


def _embeds(model) -> bool:
    """Whether ``model`` looks tokens up in an embedding table."""
    import torch.nn as nn

    return model is not None and any(isinstance(m, nn.Embedding) for m in model.modules())


@dataclass(frozen=True)
class SourceLength(Guess):
    """Keys and values guessed as a sequence of their own, (B, S, C): a module made for
    self-attention that takes them apart from the queries needs them as long as the queries.
    When the forward fails at an op that meets the two lengths, they are read at the queries'
    length."""

    names: tuple[str, ...]

    def read_by(self, failed, plan: Plan) -> bool:
        op, dims = failed.failed_op, plan.dims
        if op is None:
            return False
        sizes = {n for m in op.inputs for n in m.shape}
        return dims["S"] in sizes and dims["T"] in sizes and dims["S"] != dims["T"]

    def others(self, plan: Plan, failed) -> Iterator[Plan]:
        inputs = tuple(dataclasses.replace(spec, dims=tuple("T" if d == "S" else d
                                                            for d in spec.dims))
                       if isinstance(spec, InputSpec) and (spec.name in self.names or spec.mask)
                       else spec for spec in plan.inputs)  # a mask over the keys: as long too
        names = ", ".join(self.names)
        note = (f"{names} read as long as the queries (T): with a length of their own they did "
                f"not fit {failed.failed_op.op}; give --input to choose")
        masks = tuple(g for g in plan.guesses if isinstance(g, GuessedMasks))  # still open
        yield dataclasses.replace(plan, inputs=inputs, guesses=masks, note=note, reading_of=self)


@dataclass(frozen=True)
class GuessedMasks(Guess):
    """Masks given, with the meaning the code reads in them (``drive.masks``), so that mask
    code runs. When the forward fails, the shape guessed was not the module's: its other
    shapes (``masks.MASK_SHAPES``), then None where the code allows it, are read."""

    names: tuple[str, ...]
    shapes: bool = True  # whether its other shapes are read, or only None

    def read_by(self, failed, plan: Plan) -> bool:
        """The forward failed, and no reference runs on the same masks (with one that does,
        the failure is the submission's): it is run again without them, and that reading
        stands only if it runs."""
        from .cross import reference_runs

        return failed.raised is not None and not reference_runs(plan, failed.args)

    def others(self, plan: Plan, failed) -> Iterator[Plan]:
        from .masks import MASK_SHAPES

        read = inputs_read_by(failed, self.names)  # of two masks, the one the failing op read
        shaped = read if read and len(read) < len(self.names) else self.names
        rest = (GuessedMasks(tuple(n for n in self.names if n not in shaped)),) if shaped != self.names else ()
        names = ", ".join(shaped)
        where = failed.failed_op.op if failed.failed_op is not None else "the forward"
        for shape in MASK_SHAPES if self.shapes else ():  # one per batch row, over the keys, or broadcast over heads
            inputs = tuple(dataclasses.replace(s, dims=shape[:-1] + s.dims[-1:]) if isinstance(
                s, InputSpec) and s.name in shaped else s for s in plan.inputs)
            note = (f"{names} given as {'/'.join(str(i) for i in inputs if getattr(i, 'name', 0) in shaped)}"
                    f": the forward failed with the mask shape guessed first (at {where})")
            yield dataclasses.replace(plan, inputs=inputs, guesses=rest, reading_of=self, note=note)
        if not self.shapes:  # multiplied in: one value per position, that the code moves itself
            squeezed = self._per_position(plan, where)  # (``mask.unsqueeze(-1)``)
            if squeezed is not None:
                yield squeezed
        absent = self.absent(plan, failed, tested=False)
        if absent is not None:
            yield absent

    def _per_position(self, plan: Plan, where: str) -> Plan | None:
        """The plan with each multiplied mask given as one value per position, (B, T), its
        axis of size 1 dropped: code that moves the mask before it multiplies (``h *
        mask.unsqueeze(-1)``, ``mask[..., None]``) takes it so. None when none has one."""
        moved = [s for s in plan.inputs if isinstance(s, InputSpec) and s.name in self.names
                 and 1 in s.dims and set(s.dims) - {1} == {"B", "T"}]
        if not moved:
            return None
        inputs = tuple(dataclasses.replace(s, dims=("B", "T")) if s in moved else s
                       for s in plan.inputs)
        names = ", ".join(s.name for s in moved)
        note = (f"{names} given as one value per position, (B, T): with an axis of size 1 for the "
                f"values it multiplies the forward failed (at {where}); give --input "
                f"{moved[0].name}=B,T:mask-keep to choose")
        return dataclasses.replace(plan, inputs=inputs, guesses=(), reading_of=self, note=note)

    def stands(self, attempt, plan: Plan) -> bool:  # a mask whose shape pairs the samples
        return not attempt.pairs_samples(plan.dims["B"])  # (B, B, ...) is read another way

    def absent(self, plan: Plan, failed, *, tested: bool = True) -> Plan | None:
        """The plan with the masks None, where the code allows it (``masks.may_be_none``)."""
        from .masks import may_be_none

        if not may_be_none(plan.request.cls, self.names, tested=tested):
            return None
        names, where = ", ".join(self.names), getattr(failed.failed_op, "op", "the forward")
        inputs = tuple(ValueInput(spec.name, None) if isinstance(spec, InputSpec)
                       and spec.name in self.names else spec for spec in plan.inputs)
        return dataclasses.replace(plan, inputs=inputs, guesses=(), reading_of=self, note=(
            f"{names} left None: the forward failed with a mask of the shapes guessed (at {where})"
            f"; give --input {self.names[0]}=DIMS:mask-keep (or mask-drop, mask-add) to check it"))


def make_plan(request: Request) -> Plan:
    """The plan for ``request``: constructor arguments and inputs, each guess with its other
    readings. Raises :class:`~shapetrace.base.errors.TargetError` or ``UsageError`` when the
    constructor's arguments cannot be inferred (nothing is built yet)."""
    from .cross import assignment_masks
    from .infer import infer_init, infer_inputs, kernel_sizes
    from .per_head import sized_per_head
    from .init_reads import read_by_use
    from .input_reads import as_tokens
    from .input_reads import above, special_ids

    module, dims = request.module, request.dims
    guesses: list[Guess] = []
    read_notes: list[str] = []
    if isinstance(module, type):
        if not issubclass(module, _nn_module()):
            raise TargetError(f"{module.__qualname__} is not an nn.Module subclass")
        init = infer_init(module, dims, given=request.init or {}, notes=read_notes)
        for name, readings in READ_AGAIN.items():
            value = init.get(name)
            if name in (request.init or {}) or type(value) is not int \
                    or dims.get(readings[0]) != value:
                continue
            guesses.append(AmbiguousSize(name, value, readings[1:]))
        from ..base.names import FFN

        guesses += [KernelSize(name) for name in kernel_sizes(module, init, request.init or {})]
        for name, value in init.items():  # hidden_dim=4*C may be the width itself
            if name in FFN and name not in (request.init or {}) and value == 4 * dims["C"]:
                guesses.append(HiddenSize(name, value))
    elif isinstance(module, _nn_module()):
        if request.init:
            raise UsageError("init is only used when check() is given a class, not an instance")
        init = None
    else:
        raise UsageError(f"check() expects an nn.Module subclass or instance, got "
                         f"{type(module).__name__}")
    problem = None
    inputs: tuple[Any, ...] = ()
    if request.inputs is None:
        try:
            specs = infer_inputs(request.cls, dims)
        except ShapetraceError as exc:
            from .built_reads import inputs_by_built

            axis = getattr(exc, "axis", None)
            if axis is not None and not dims.strict and axis not in dims:
                return _with_axis(request, axis)

            read = inputs_by_built(module, init, dims, infer_inputs) \
                if isinstance(exc, UsageError) else None
            problem = exc if read is None else None
            if read is not None:
                specs = read[0]
                read_notes += read[1]
        if problem is None:
            inputs = tuple(specs)
            tokens = as_tokens(specs)
            if tokens is not None:
                guesses.insert(0, VectorInputs(tuple(tokens)))
            elif (tokens := as_tokens(specs, any_name=True)) is not None:
                guesses.insert(0, VectorInputs(tuple(tokens), at_embedding_only=True))
            vectors = tuple(s.name for s in specs if isinstance(s, InputSpec)
                            and s.dtype == "float" and len(s.dims) == 3 and s.dims[2] == "C")
            split = tuple(n for n in vectors if n in QUERY_INPUTS | KEY_VALUE_INPUTS)
            if split:
                guesses.append(HeadInputs(split))
            if vectors:
                guesses.append(ImageInputs(vectors))
            reals = tuple(s.name for s in specs if isinstance(s, InputSpec) and s.dtype == "float"
                          and s.high is None and s.mask is None)
            if reals:  # codes the forward casts to indices (calendar fields, categories)
                from .asserted import AssertedInputs
                from .ids_range import CastIndices

                from .state_reads import RecurrentState

                guesses += [CastIndices(reals), AssertedInputs(reals), RecurrentState(reals)]
            sources = tuple(s.name for s in specs if isinstance(s, InputSpec) and "S" in s.dims
                            and s.name in KEY_VALUE_INPUTS)
            if sources:
                guesses.append(SourceLength(sources))
            inputs = assignment_masks(inputs, request)
            per_head = sized_per_head(module, init, inputs, dims, request)
            if per_head is not None:
                inputs, note = per_head
                read_notes.append(note)
            # a mask multiplied into the values has their shape: it follows their readings,
            # and is left None last, where the code allows it
            masks = tuple(s.name for s in inputs if getattr(s, "mask", None) not in (None, "mul"))
            if masks:
                guesses.append(GuessedMasks(masks))
            multiplied = tuple(s.name for s in inputs if getattr(s, "mask", None) == "mul")
            if multiplied:
                guesses.append(GuessedMasks(multiplied, shapes=False))
    else:
        inputs = tuple(parse_input(i, dims) if isinstance(i, str) else i for i in request.inputs)
    reserved = special_ids(init, request.init or {})
    if reserved:  # token ids guessed above the special ones the module was built with
        inputs = above(inputs, reserved)
        guesses = [dataclasses.replace(g, tokens=above(g.tokens, reserved))
                   if isinstance(g, VectorInputs) else g for g in guesses]
    if isinstance(module, type):  # the project's own values, before other probe sizes
        guesses.append(PassedValues(frozenset(request.init or {})))
    free = frozenset({"T", "S", "d"} - set(dims.explicit))
    if free and not any(hasattr(getattr(i, "value", i), "shape") for i in request.inputs or ()):
        guesses.append(ProbeSizes(free, replan=replanned))
    if request.inputs is None and problem is None:  # fewer axes, or a default of None needed
        from .rank_reads import rank_guesses
        from .table_rows import table_guesses

        guesses += rank_guesses(getattr(request.cls, "forward", None), inputs) + table_guesses(inputs)
    if isinstance(module, type):  # a count set over the constructor's default, split by
        from .defaults_read import ModuleDefaults, OverDefaults, TiedDefaults
        from .setup_read import SetUpCall
        given = frozenset(request.init or {})
        sizes = set(dims.values())  # a value chosen that met a probe size: read as it, late
        by_use = read_by_use(read_notes)  # a probe size only the layer it is handed to chose
        guesses += [ChosenSize(name, value) for name, value in init.items()
                    if name not in given and name not in READ_AGAIN
                    and type(value) is int and value > 1 and (value not in sizes or name in by_use)]
        from .view_counts import ViewedCount

        chosen = tuple((name, value) for name, value in init.items()
                       if name not in given and type(value) is int and value > 1)
        guesses += [OverDefaults(given, replanned), TiedDefaults(given), ModuleDefaults(given, replanned),
                    SetUpCall()] + ([ViewedCount(chosen)] if chosen else [])
    return Plan(request, init, inputs, problem, tuple(guesses),
                read_notes=tuple(read_notes))


def replanned(plan: Plan, sizes: dict, keep: bool = True) -> Plan | None:
    """``plan`` made again with probe sizes ``sizes``, as read already (token ids; with
    ``keep``, a constructor value read as a dim at that dim's new size), or None."""
    given = {k: plan.dims[k] for k in plan.dims.explicit}
    try:
        again = make_plan(dataclasses.replace(plan.request, dims=Dims({**given, **sizes})))
    except ShapetraceError:
        return None
    inputs = plan.inputs if plan.reading_of is not None and len(plan.inputs) == len(again.inputs) \
        else again.inputs
    dims = {plan.dims[x]: again.dims[x] for x in ("C", "H", "d") if plan.dims[x] != again.dims[x]}
    init = None if again.init is None else {**again.init, **{
        k: dims[v] for k, v in (plan.init or {}).items()
        if keep and type(v) is int and v in dims and k in again.init}, **dict(plan.built_as)}
    return dataclasses.replace(again, inputs=inputs, init=init, built_as=plan.built_as)


def _with_axis(request: Request, axis: str) -> Plan:
    """The plan again with a size of its own for an axis forward's annotation names and no
    dimension stands for (``text: Int['b nt']``): a prime no other axis has, so it keeps its name."""
    dims = request.dims
    size = next_prime(max(v for k, v in dims.items() if k != "C") + 1, avoid=set(dims.values()))
    again = make_plan(dataclasses.replace(request, dims=Dims(
        {**{k: dims[k] for k in dims.explicit}, axis: size})))
    return dataclasses.replace(again, read_notes=again.read_notes + (
        f"{axis}={size}: {ANNOTATED_AXIS}; give --dims {axis}=... to choose",))


#: what the note of an axis sized by :func:`_with_axis` says of it
ANNOTATED_AXIS = "an axis forward's annotation names"


def _nn_module() -> type:
    import torch

    return torch.nn.Module
