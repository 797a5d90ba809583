"""One attempt at a plan (``plan``): build the module, make its inputs, run one forward traced.

:func:`attempt` returns an :class:`Attempt` that owns everything it made: the model, the
arguments, the trace with its rule findings and what the forward raised. A second attempt (the
plan read another way) makes its own, so choosing between them changes nothing shared.
"""

from __future__ import annotations

import ast
import inspect
import linecache
import re
from contextlib import nullcontext
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import torch

from ..analysis.graph import made_through
from ..base import specs
from ..base.dims import Dims
from ..base.errors import ShapetraceError, TargetError, drop_frames, failed_on_none, one_line
from ..base.ops import ARITHMETIC_NAMES, ARITHMETIC_OPERATORS, DROPOUTS, MOVES, TRAILING_NORMS, \
    cut_to_empty, ints
from ..base.records import OpRecord
from ..base.source import display_path, innermost_user_frame, none_parameters, user_frame
from ..behaviour.state import ModuleState
from ..record.built import building
from ..record.built import remember as remember_built
from ..record.fake import NeedsValuesError
from ..record.fastpath import FastPathWatch
from ..record.heads import head_keeper
from ..report.trace import Trace
from ..rules.failures import raised_findings
from .devices import MAX_PARAMETERS, cpu_only, note, parameter_budget, parameters_on_meta, remember
from .fit import allocation_failed, out_of_memory
from .absent import absent_in, constructing
from .asked import EVEN_ASKED
from .optional import missing_optional, needs_package
from .plan import Plan
from .unset import UnsetWatch, initialise
from .unset import note as unset_note


def moved_from(meta, arg: torch.Tensor, records, depth: int = 12, passing=MOVES) -> bool:
    """Whether ``meta`` is the input ``arg`` as it came in, or made from it by moves alone
    (by the ops of ``passing``)."""
    made, start = made_through(meta, records, passing, depth)
    return made is None and start is not None and tuple(start.shape) == tuple(arg.shape) \
        and start.dtype == arg.dtype


def _arithmetic(records):
    """``(record, operand, the other operand)`` for each arithmetic op of two tensors, both
    ways round."""
    for rec in records:
        base = rec.op.rpartition(".")[2]
        if rec.op not in ARITHMETIC_OPERATORS and base not in ARITHMETIC_NAMES:
            continue
        metas = [m for m in rec.inputs if getattr(m, "shape", None) is not None]
        if len(metas) == 2:
            yield rec, metas[0], metas[1]
            yield rec, metas[1], metas[0]


def _made_from_inputs(records, args):
    """A test of a tensor of the run: whether it was made, op by op, from the inputs ``args`` as
    they came in (one pass over ``records``)."""
    made: set[int] = set()

    def made_from_args(meta) -> bool:
        if meta._made_by is not None:
            return meta._made_by in made
        return any(tuple(meta.shape) == tuple(a.shape) and meta.dtype == a.dtype for a in args)

    for rec in records:
        if any(made_from_args(m) for m in rec.inputs):
            made.add(rec.index)
    return made_from_args


#: ops whose output keeps the width of what they read: moves, norms over the last axis, dropout
_WIDTH_KEPT = MOVES | TRAILING_NORMS | DROPOUTS


@dataclass
class Attempt:
    """A plan built and run once: the model, its arguments and their names, the constructor's
    keyword arguments, the trace (its findings so far: the trace rules' and what the forward
    raised), what the forward raised (its frames dropped), the watch for writes into the
    arguments, and notes."""

    plan: Plan
    model: Any
    args: list
    names: list[str]
    built_with: dict | None
    trace: Trace
    raised: BaseException | None = None
    watch: Any = None
    notes: list[str] = field(default_factory=list)
    #: ``(file, line)`` in the user's code where the forward raised, or None
    raised_at: tuple[str, int] | None = None
    #: the file of the innermost frame the forward raised in (a library's, or the user's)
    raised_in: str | None = None
    #: the parameters of the innermost user frame that held None and were read on the line
    #: that raised (a child's ``mask=None`` a wrapper's ``**kwargs`` never passed)
    none_read: tuple[str, ...] = ()
    #: what the forward returned (None also when it raised)
    output: Any = None
    #: for a forward that failed: the note of a reading of its guesses under which the forward
    #: got past the op that failed and failed later, else None
    passed_by: str | None = None
    #: where and how that reading's forward failed later (``tnt.py:161 (RuntimeError: ...)``)
    passed_to: str | None = None
    #: ``(meta, name)`` of each input as the trace first met it: which input a value came from,
    #: where two inputs have one shape
    inputs_read: list = field(default_factory=list)

    def input_named(self, meta) -> str | None:
        """The name of the input ``meta`` (a value from outside the run) is, or None."""
        return next((name for m, name in self.inputs_read if m is meta), None)

    @property
    def ran(self) -> bool:
        """Whether the forward returned."""
        return self.trace.exception is None

    @property
    def failed_op(self) -> OpRecord | None:
        """The last op that raised in a forward that ended in an exception, or None."""
        if self.trace.exception is None:
            return None
        return next((r for r in reversed(self.trace.records) if r.error is not None), None)

    def got_past(self, failed: Attempt) -> bool:
        """Whether this forward got past the op where ``failed`` (another attempt) failed: it
        ran that op (the same op at the same line) without raising more times than ``failed``
        did before it raised there."""
        op = failed.failed_op
        if op is None:  # it raised on a line of no op (``b, c, h, w = x.shape``): this one
            # failed elsewhere, after more ops
            return (failed.raised_at is not None and self.raised_at is not None
                    and self.raised_at != failed.raised_at
                    and len(self.trace.records) > len(failed.trace.records))

        def passes(attempt: Attempt) -> int:
            return sum(1 for r in attempt.trace.records if r.error is None and r.op == op.op
                       and r.line == op.line and r.file == op.file)

        return passes(self) > passes(failed)

    def failure_site(self) -> str | None:
        """Where and how the forward failed: ``tnt.py:161 (RuntimeError: ...)``, or None."""
        if self.raised is None or self.raised_at is None:
            return None
        return (f"{display_path(self.raised_at[0])}:{self.raised_at[1]} "
                f"({type(self.raised).__name__}: {one_line(self.raised)[:120]})")

    @property
    def made_empty(self) -> bool:
        """Whether the forward cut an axis down to size 0 (``x[:, n:]`` of ``n`` tokens): a
        run that checks nothing there. A tensor made empty on purpose (``zeros(T, 0)`` for a
        cache not filled yet) is not one."""
        return cut_to_empty(self.trace.records)

    def unpacked(self, expected: int, names) -> bool:
        """Whether the forward raised unpacking ``expected`` sizes from the shape of one of the
        inputs ``names`` that has another number (``B, C, H, W = x.shape`` given a 3-D ``x``)."""
        raised, at = self.raised, self.raised_at
        if not isinstance(raised, ValueError) or at is None:
            return False
        found = _UNPACK.search(str(raised))
        if found is None:
            return False
        line = linecache.getline(at[0], at[1])
        if int(found.group(1)) - _beside_shape(line) != expected:
            return False
        given = dict(zip(self.names, self.args))
        return any(re.search(rf"\b{re.escape(n)}\s*\.\s*(shape\b|size\s*\()", line)
                   and isinstance(given.get(n), torch.Tensor) and given[n].dim() != expected
                   for n in names)

    def unpacked_names(self) -> list[str | None]:
        """The names the line the forward raised at unpacks a shape into (``num_rows, num_cols,
        batch_size, embed_dim = x.size()``), None for a target that is not a plain name; [] when
        that line is no such unpacking."""
        at = self.raised_at
        if not isinstance(self.raised, ValueError) or at is None:
            return []
        try:
            node = ast.parse(linecache.getline(at[0], at[1]).strip()).body[0]
        except (SyntaxError, IndexError):
            return []
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Tuple)):
            return []
        return [t.id if isinstance(t, ast.Name) else None for t in node.targets[0].elts]

    def pattern_wants(self, expected: int, names) -> bool:
        """Whether an einops pattern refused the input: its left side names ``expected`` plain
        axes (``"b c h w -> b (h w) c"``) and one of the inputs ``names`` has another number."""
        raised = self.raised
        if raised is None or type(raised).__name__ != "EinopsError":
            return False
        found = _PATTERN.search(str(raised))
        if found is None or len(found.group(1).split()) != expected or "(" in found.group(1):
            return False
        given = dict(zip(self.names, self.args))
        return any(isinstance(given.get(n), torch.Tensor) and given[n].dim() != expected
                   for n in names)

    def permute_wants(self, expected: int, names) -> bool:
        """Whether the op that failed is a permute of ``expected`` axes that read one of the
        inputs ``names`` as it came in, with another number of axes (``x.permute(0, 2, 3, 1)``
        of an image, given a (B, T, C) guess)."""
        rec = self.failed_op
        if rec is None or rec.op.rpartition(".")[2] != "permute" or not self.reads_input(rec, names):
            return False
        dims = ints(rec.args[1:] if len(rec.args) > 1 else (rec.kwargs.get("dims", ()),))
        return dims is not None and len(dims) == expected and rec.inputs[0].ndim != expected

    @property
    def guessed(self) -> list[tuple[str, torch.Tensor]]:
        """``(name, tensor)`` of each tensor input of the attempt."""
        return [(name, arg) for arg, name in zip(self.args, self.names)
                if isinstance(arg, torch.Tensor) and not name.startswith("input ")]

    def reads_moved_input(self, rec: OpRecord | None) -> bool:
        """Whether ``rec`` read an input of the attempt as it came in, or made from it by moves,
        norms over its last axis and dropout alone (no layer of the module changed its width
        yet: ``self.attn(F.rms_norm(x, (x.size(-1),)))``)."""
        records = self.trace.records
        return rec is not None and any(moved_from(meta, arg, records, passing=_WIDTH_KEPT)
                                       for _, arg in self.guessed for meta in rec.inputs)

    def reads_input(self, rec: OpRecord, names) -> bool:
        """Whether ``rec`` read one of the inputs ``names`` as it came in."""
        given = [a for a, n in zip(self.args, self.names) if n in names
                 and isinstance(a, torch.Tensor)]
        return any(m.src is None and tuple(m.shape) == tuple(a.shape) and m.dtype == a.dtype
                   for m in rec.inputs for a in given)

    @cached_property
    def broadcast_up(self) -> int | None:
        """The number of axes (four or five) of a per-channel tensor of the module's own
        (``(1, C, 1, 1, 1)``) that raised a computed value to more axes by broadcasting (a
        (B, T, C) guess times a video block's scale): the module works on values of that many
        axes. None when no arithmetic did so."""
        for _, own, other in _arithmetic(self.trace.records):
            if own.src is None and len(own.shape) in (4, 5) \
                    and len(own.shape) > len(other.shape) \
                    and own.shape[0] == 1 and sum(n != 1 for n in own.shape) == 1 \
                    and len(other.shape) >= 2 and not self._given(own):
                return len(own.shape)
        return None

    def raised_by(self, names) -> bool:
        """Whether arithmetic on a value made from the inputs ``names`` (tables shapetrace made)
        gave a result of more axes than the other operand, itself not made from them: the
        tables lifted the values they apply to (a (1, T, d) table the code lifts again)."""
        tables = [arg for name, arg in self.guessed if name in names]
        if not tables:
            return False
        records = self.trace.records
        from_tables = _made_from_inputs(records, tables)
        return any(rec.outputs and len(getattr(rec.outputs[0], "shape", ())) > len(other.shape) >= 3
                   and from_tables(own) and not from_tables(other)
                   for rec, own, other in _arithmetic(records))

    def _given(self, meta) -> bool:
        return any(isinstance(a, torch.Tensor) and tuple(a.shape) == tuple(meta.shape)
                   for a in self.args)

    def pairs_samples(self, batch: int) -> bool:
        """Whether an op of the run made a value with the batch's size on two axes (a mask of
        one shape broadcast against scores of another, ``(B, 1, T, T)`` with ``(B, T, T)``)."""
        return any(sum(1 for n in m.shape if n == batch) > 1
                   for rec in self.trace.records for m in rec.outputs
                   if getattr(m, "shape", None) is not None)

    @property
    def given_tensors(self) -> bool:
        """Whether the caller passed tensors of their own (at their own sizes)."""
        return any(isinstance(a, torch.Tensor) and n.startswith("input ")
                   for a, n in zip(self.args, self.names))


def build(plan: Plan, mode=None) -> tuple[Any, list, list[str], dict | None]:
    """``(model, args, names, constructor keyword arguments)`` for ``plan``, under ``mode`` (a
    fake or measuring mode, or None). A constructor that raises is a :class:`TargetError` that
    names the arguments and the user's line."""
    from ..behaviour.runs import seed as seed_all

    request = plan.request
    seed_all(request.seed)
    if plan.init is not None:
        cls = request.module
        chosen = mode is None and set(plan.init) - set(request.init or {})
        if chosen:
            _not_too_big(cls, plan)
        sites: list = []
        watch = UnsetWatch() if mode is None else nullcontext()
        made: list = []
        try:
            with cpu_only(sites), parameter_budget(cls.__qualname__) if chosen else nullcontext(), \
                    watch, constructing(), building(made) if mode is None else nullcontext():
                model = cls(**plan.init)
        except NeedsValuesError as exc:  # under --fake: say where the constructor read a value
            raise NeedsValuesError(f"{cls.__qualname__}(){_where(exc)}: {exc}") from None
        except (ShapetraceError, KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # GeneratorExit or a BaseException of the user's own too
            if (absent := absent_in(exc)) is not None:
                raise absent from None
            shown = ", ".join(f"{k}={v!r}" for k, v in plan.init.items())
            raise TargetError(f"{cls.__qualname__}({shown}) raised {type(exc).__name__}: "
                              f"{one_line(exc)}{_where(exc)}{_odd_size(exc, plan.dims)}") from exc
        remember(model, sites)
        remember_built(model, made)
        if mode is None:
            initialise(model, watch.unset(model))
    else:
        model = request.module
    model.eval()
    if plan.problem is not None:
        raise plan.problem
    generator = torch.Generator().manual_seed(request.seed) if mode is None else None
    model_dtype = _weights_dtype(model)
    args, names = [], []
    for i, spec in enumerate(plan.inputs):
        if isinstance(spec, torch.Tensor):
            args.append(spec)
            names.append(f"input {i}")
        elif isinstance(spec, specs.ValueInput):
            args.append(spec.value)
            names.append(spec.name)
        else:
            made = specs.make_input(spec, plan.dims, generator=generator)
            if request.inputs is None and spec.dtype == "float" and model_dtype is not None:
                made = made.to(model_dtype)  # guessed: in the dtype its weights are kept in
            args.append(made)
            names.append(spec.name)
    if request.inputs is not None:
        args, names = _in_forward_order(model, args, names)
    _by_keyword(model, names)
    if plan.setup:  # calls of its own that set the module up before each forward
        from .setup_read import SetUpFirst

        calls = tuple((path, method, [s.value if isinstance(s, specs.ValueInput)
                                      else specs.make_input(s, plan.dims, generator=generator) for s in made])
                      for path, method, made in plan.setup)
        model.forward = SetUpFirst(model, model.forward, calls)
    return model, args, names, plan.init


def _weights_dtype(model):
    """The floating dtype most of ``model``'s weights are kept in, when it is not float32 (a
    model built in bfloat16, its norms' scales in float32 beside them); else None."""
    if not isinstance(model, torch.nn.Module):
        return None
    counts: dict = {}
    for p in model.parameters():
        if p.is_floating_point() and not torch.nn.parameter.is_lazy(p):
            counts[p.dtype] = counts.get(p.dtype, 0) + p.numel()
    most = max(counts, key=counts.get) if counts else None
    return most if most is not None and most != torch.float32 else None


def _not_too_big(cls, plan: Plan) -> None:
    """Raises a :class:`TargetError` when ``cls`` built with the arguments shapetrace chose
    would have more than :data:`MAX_PARAMETERS` parameters (a U-Net whose base width was read
    as the probe width, multiplied per level): counted on the meta device. A constructor that
    cannot run there says nothing."""
    count = parameters_on_meta(cls, plan.init)
    if count is not None and count > MAX_PARAMETERS:
        shown = ", ".join(f"{k}={v!r}" for k, v in plan.init.items())
        raise TargetError(f"{cls.__qualname__}({shown}) would have {count / 1e6:.0f}M parameters "
                          f"at the sizes shapetrace chose, too many to check here; give smaller "
                          f"sizes with --init (or --dims)")


def _innermost_file(tb) -> str | None:
    found = None
    while tb is not None:
        found = tb.tb_frame.f_code.co_filename
        tb = tb.tb_next
    return found


def _by_keyword(model, names: list[str]) -> None:
    """Inputs that are keyword-only parameters of forward (``def forward(self, *, query, key,
    value)``) passed by name: every caller runs ``model(*args)``, so the instance's ``forward``
    takes the inputs in order and hands on those by keyword (``preserved`` removes it after the
    check, as any attribute the run adds)."""
    forward = getattr(model, "forward", None)
    func = getattr(forward, "__func__", None)
    if func is None or getattr(forward, "__self__", None) is not model:
        return
    try:
        signature = inspect.signature(forward)
    except (TypeError, ValueError):
        return
    keyword = {p.name for p in signature.parameters.values() if p.kind is p.KEYWORD_ONLY}
    if not keyword or not keyword & set(names):
        return
    first = next(i for i, n in enumerate(names) if n in keyword)
    if any(n not in keyword for n in names[first:]):
        return  # a positional input after a keyword-only one: not a call this can make
    model.forward = _ByKeyword(model, func, first, tuple(names[first:]), signature)


class _ByKeyword:
    """``forward`` taking its keyword-only inputs in order. It holds its module, so that a deep
    copy of the module (the behaviour checks run a float64 copy) calls the copy."""

    def __init__(self, module, func, first: int, named: tuple, signature):
        self.module, self.func, self.first, self.named = module, func, first, named
        self.__signature__ = signature

    def __call__(self, *args, **kwargs):
        first = self.first
        return self.func(self.module, *args[:first], **dict(zip(self.named, args[first:])),
                         **kwargs)


def attempt(plan: Plan, *, mode=None, watch: bool = True, skip=()) -> Attempt:
    """Build ``plan`` and run one forward under a trace of its own. ``watch``: watch for writes
    into the arguments (``input-mutated``; needs values). ``skip``: rules left out."""
    model, args, names, built_with = build(plan, mode)
    watcher = None
    if watch:
        from ..behaviour.mutation import MutationWatch

        watcher = MutationWatch(args, names)
    heads: dict[int, list] = {}
    keep = head_keeper(heads)
    given_by_id = {id(a): n for a, n in zip(args, names) if isinstance(a, torch.Tensor)}
    inputs_read: list = []  # (meta, name): the inputs as the trace first met them
    met: set[int] = set()

    def observe(rec, outs, op_args, op_kwargs) -> None:
        keep(rec, outs, op_args, op_kwargs)
        if watcher is not None:
            watcher(rec, outs, op_args, op_kwargs)
        for meta in rec.inputs:  # while tracing, a meta from outside holds its tensor weakly
            if meta._made_by is None and id(meta) not in met:
                met.add(id(meta))
                ref = meta.ref
                name = given_by_id.get(id(ref())) if callable(ref) else None
                if name is not None:
                    inputs_read.append((meta, name))

    dims = plan.dims
    given = any(isinstance(a, torch.Tensor) and n.startswith("input ") for a, n in zip(args, names))
    # tensors the caller passed come at their own sizes: name them as trace() does, from the
    # dims given and what the model proves (probe names only if they came at probe sizes)
    trace = Trace(model, dims={k: dims[k] for k in dims.explicit} if given else dims,
                  skip=skip, observer=observe)
    raised = output = None
    sites: list = []
    # the state as built, put back after this first forward: what a forward leaves for the next
    # call (a table cached from the first call) is what ``stateful-forward`` compares against
    built = ModuleState(model, parameters=False) if mode is None and isinstance(model, torch.nn.Module) \
        else None  # under --fake there are no values to put back (stateful-forward needs them)
    with torch.no_grad(), FastPathWatch(model) as fast:
        try:
            with cpu_only(sites), trace:  # the device mode below the recorder
                output = model(*args)
        except NeedsValuesError as exc:  # under --fake: the module cannot run without values
            raise NeedsValuesError(f"forward{_where(exc)}: {exc}") from None
        except (KeyboardInterrupt, SystemExit):  # the command line explains an exit() itself
            raise
        except BaseException as exc:  # the user's forward raised (a BaseException of their
            if out_of_memory(exc):    # own, GeneratorExit too): a finding, unless the sizes
                where = _in(exc)      # did not fit, or the code needs a package not installed
                drop_frames(exc)
                raise allocation_failed(exc, dims, where) from None
            absent = absent_in(exc)  # a name of a package that is not installed, used
            if absent is not None:
                drop_frames(exc)
                raise absent from None
            missing = missing_optional(exc)
            if missing is not None:
                drop_frames(exc)
                raise TargetError(needs_package(*missing)) from None
            raised = exc
    trace.head_weights = heads
    if built is not None:
        built.restore()
    raised_at = raised_in = None
    none_read = ()
    if raised is not None:  # what the rules did not explain, read while its frames exist
        trace.add(raised_findings(trace.records, raised, trace.diagnostics))
        found = innermost_user_frame(raised.__traceback__, installed_is_library=False)
        raised_at = (found[0], found[1]) if found else None
        raised_in = _innermost_file(raised.__traceback__)
        if failed_on_none(raised):
            none_read = none_parameters(raised.__traceback__)
        drop_frames(raised)
    done = Attempt(plan, model, args, names, built_with, trace, raised, watcher,
                   raised_at=raised_at, raised_in=raised_in if raised is not None else None,
                   output=output, none_read=none_read, inputs_read=inputs_read)
    if fast.note:
        done.notes.append(fast.note)
    if on_cpu := note(model, sites):
        done.notes.append(on_cpu)
    if unset := unset_note(model):
        done.notes.append(unset)
    return done


def _in_forward_order(model, args: list, names: list) -> tuple[list, list]:
    """Declared inputs placed by their names: ``--input input_features=... --input
    decoder_input_ids=...`` on ``forward(input_features, attention_mask=None,
    decoder_input_ids=None)`` passes the ids third, with the mask's default second, instead of
    handing them to ``attention_mask``. Left as given unless every input is named after one of
    forward's positional parameters and every parameter skipped has a default."""
    if not names or any(n.startswith("input ") for n in names) or len(set(names)) != len(names):
        return args, names
    try:
        params = [p for p in inspect.signature(model.forward).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return args, names
    position = {p.name: i for i, p in enumerate(params)}
    if any(n not in position for n in names):
        return args, names
    given = dict(zip(names, args))
    last = max(position[n] for n in names)
    placed, placed_names = [], []
    for p in params[:last + 1]:
        if p.name in given:
            placed.append(given[p.name])
        elif p.default is not p.empty:
            placed.append(p.default)
        else:
            return args, names  # a required parameter nobody declared: as given
        placed_names.append(p.name)
    return placed, placed_names


_UNPACK = re.compile(r"(?:not enough|too many) values to unpack \(expected (\d+)")


def _beside_shape(line: str) -> int:
    """How many of the names a line unpacks come from beside a starred shape
    (``b, _, h, w, p = *x.shape, self.patch_size``: one): not sizes of the input."""
    try:
        tree = ast.parse(line.strip())
    except SyntaxError:
        return 0
    node = tree.body[0] if tree.body else None
    if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Tuple)
            and any(isinstance(e, ast.Starred) for e in node.value.elts)):
        return 0
    return sum(not isinstance(e, ast.Starred) for e in node.value.elts)


#: an einops pattern in its error: its left side
_PATTERN = re.compile(r'pattern "([^"-]*?)\s*->')


def _odd_size(exc: BaseException, dims: Dims) -> str:
    """The way out for a constructor that refused an odd probe size (sinusoidal or rotary
    positions need an even width: Whisper's ``d_model``), when its message asks for an even
    size and names one: which ``--dims`` gives it one. A hint only; nothing is decided on it."""
    text = str(exc)
    if not EVEN_ASKED.search(text):
        return ""
    named = [n for n, size in dims.items() if size % 2 and re.search(rf"\b{size}\b", text)]
    if not named:
        return ""
    name = named[0]
    if name == "C" and "C" not in dims.explicit and "H" in dims and "d" in dims:
        change = f"--dims d=8, which makes C={dims['H'] * 8}"
    else:
        change = f"--dims {name}={dims[name] + 1}"
    return (f" (the probe sizes are odd primes and {name}={dims[name]} is odd: give it an even "
            f"size, e.g. {change})")


def _in(exc: BaseException) -> str:
    site = user_frame(exc) or (exc.__cause__ is not None and user_frame(exc.__cause__))
    return f" in {site[0]}:{site[1]}" if site else ""


def _where(exc: BaseException) -> str:
    site = user_frame(exc)
    return f" at {site[0]}:{site[1]}" if site else ""
