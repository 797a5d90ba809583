"""residual-missing: a transformer block whose input reaches its output only through its sublayers.

A block of attention and feed-forward carries its input around each sublayer: ``x + attn(x)``
(or ``norm(x + attn(x))``), then the same around the feed-forward. With the last projection of
every sublayer set to zero (the attention's output projection, the feed-forward's second layer:
each projection whose output reaches the block's output through no other projection, weights
and biases), each sublayer adds nothing and what is left is the skip path: the output is the
input, or the input normalised, scaled or gated, still a function of it. That holds for every
residual design (pre-norm, post-norm, gated, scaled, LayerScale, ReZero, parallel attention and
feed-forward, a skip that carries the projected queries). A block whose output, so zeroed, no
longer depends on its input has no such path: the sublayer's output was fed on alone (``x =
self.ff(self.attn(x))``), or the stream was multiplied by a sublayer's output instead of added
to it.

Which modules are blocks is read from a recorded run, by what the ops do, never by names:

- an attention: a softmax whose weights a product contracts with values, or torch's fused
  attention (``scaled_dot_product_attention``, ``multi_head_attention_forward``);
- a feed-forward: a projection whose input is an activation applied to another projection's
  output as it came (cut or moved only: a fused or gated projection's halves), not an
  attention's output gated by one (``self.to_out(out * sigmoid(self.to_gates(x)))``), and whose own
  output reaches the module's output through no other projection (an offset network that
  steers where a deformable attention samples is no feed-forward of the stream);
- every projection the module's input reaches first (through norms, reshapes, additions, before
  any other projection) feeds that attention's scores or values, or is a feed-forward's first:
  the input is the sublayers' own stream, not something projected elsewhere first (an input
  layer, a skip projection, a U-Net's first convolution), and the module's output has the
  input's shape.

Judged by two runs with those projections zeroed, the input changed between them (float64, one
thread); a module random in eval is not judged. Where the finding goes: the last op at which a
value that changed with the input produced one that did not (the product that cut the stream),
unless that op is a projection or an attention's product, where the stream simply ends: then the
op that made the output, or the line of the module's own forward that called the sublayer that
made it.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from ..base.diagnostics import Diagnostic
from ..base.ops import BIASED_MATMULS, EINSUMS, EMBEDDINGS, LAYER_OPS, MATMULS, MHA_FORWARD, \
    MOVES, SDPA, SOFTMAXES, SPLITS, TRAILING_NORMS, base_name
from ..base.records import OpRecord
from ..record.tensors import tensors_in
from ..rules.registry import diagnostic
from . import locate
from .probe import Probe
from .runs import flatten, relative_change, same

_PROJECTIONS = LAYER_OPS - EMBEDDINGS
_FUSED = frozenset({MHA_FORWARD})
_PRODUCTS = MATMULS | EINSUMS | BIASED_MATMULS
#: norms of a stream (over its features, or its channels), and what a norm written by hand
#: computes (``x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)``, ``x.var(-1)``)
_NORMS = TRAILING_NORMS | frozenset({"F.group_norm", "torch.group_norm", "F.batch_norm",
                                     "torch.batch_norm", "F.instance_norm", "torch.instance_norm",
                                     "F.normalize", "torch.rsqrt", "Tensor.rsqrt", "torch.var",
                                     "Tensor.var", "torch.std", "Tensor.std", "torch.var_mean"})
#: ops that hand a projection's output on as it is, cut or moved (a fused projection's chunks)
_PIECES = MOVES | SPLITS | frozenset({"Tensor.unflatten"})
_ACTIVATIONS = frozenset({
    "relu", "relu_", "gelu", "gelu_", "silu", "silu_", "tanh", "tanh_", "sigmoid", "sigmoid_",
    "mish", "softplus", "elu", "leaky_relu", "hardswish", "hardsigmoid", "glu", "relu6", "selu",
    "celu", "hardtanh", "logsigmoid", "softsign", "quick_gelu"})
#: outputs that moved by no more than this (relative) when the input changed did not move
_SAME = 1e-9
#: the tag of a nonlinearity of a projection (the others: ("x" | "p" | "l" | "w", index))
_ACT = ("act", None)


class _Stream:
    """What one recorded run says of the module's ops: which tensors come from the input as it
    came (``("x", i)``), from which projection (``("p", index)``), from a nonlinearity of a
    projection (``"act"``), or are attention weights (``("w", index)``); and what the module
    holds."""

    def __init__(self, probe: Probe) -> None:
        self.inputs = [(i, a) for i, a in enumerate(probe.args)
                       if isinstance(a, Tensor) and a.is_floating_point() and a.dim() >= 2]
        self.of: dict[int, frozenset] = {}
        self.alive: list[Tensor] = []
        self.first: set[int] = set()  # projections the input reaches first
        self.raw: set[int] = set()  # which inputs those were
        self.attending: set[int] = set()  # projections that feed scores or values
        self.attention = False
        #: a feed-forward's second projection -> its first ones (whose activation it reads)
        self.narrowing: dict[int, set[int]] = {}
        self.normalised = False  # whether a norm ran (a block normalises its stream)
        self.fresh: set[int] = set()  # ids of a projection's outputs, only cut or moved since
        self.weights: dict[int, list] = {}  # projection -> the parameters it computed with

    def tags(self, values) -> frozenset:
        found: set = set()
        for t in tensors_in(values):
            got = self.of.get(id(t))
            if got is None:
                got = self._input(t)
            found |= got
        return frozenset(found)

    def _input(self, t: Tensor) -> frozenset:
        for i, a in self.inputs:
            if t.shape == a.shape and t.dtype == a.dtype and torch.equal(t, a):
                self.of[id(t)] = got = frozenset({("x", i)})
                self.alive.append(t)
                return got
        return frozenset()

    def keep(self, rec: OpRecord, outs: tuple, args: tuple, kwargs: dict) -> None:
        op = rec.op
        fresh = False  # whether the outputs are a projection's, only cut or moved
        if op in _PROJECTIONS or op in _FUSED:
            tags = self.tags((args, kwargs)) if op in _FUSED else self.tags(args[:1])
            raw = _ids(tags, "x")
            if raw:
                self.first.add(rec.index)
                self.raw |= raw
            if op in _FUSED:
                self.attention = True
                self.attending.add(rec.index)
            elif _ACT in tags and _ids(tags, "p") and not _ids(tags, "w"):
                # an activation of a projection, not an attention's output gated by one
                self.narrowing[rec.index] = _ids(tags, "p")
            self.weights[rec.index] = [a for a in (*args[1:], *kwargs.values())
                                       if isinstance(a, nn.Parameter)]
            out = frozenset({("p", rec.index), ("l", rec.index)})
            fresh = op in _PROJECTIONS
        elif op == SDPA:
            self.attention = True
            tags = self.tags((args[:3], {k: v for k, v in kwargs.items()
                                         if k in ("query", "key", "value")}))
            self._attending(tags, rec)
            out = (tags - {_ACT}) | {("w", rec.index)}  # an attention's output, as weights' are
        elif op in SOFTMAXES:
            tags = self.tags(args[:1])
            self._attending(tags, rec)
            out = (tags - {_ACT}) | {("w", rec.index)}
        elif op in _PRODUCTS:
            operands = [self.tags(a) for a in args if isinstance(a, Tensor)]
            if any(_ids(tags, "w") for tags in operands):
                self.attention = True
                for tags in operands:
                    self._attending(tags, rec)
            out = frozenset().union(*operands) - {_ACT} if operands else frozenset()
        else:
            tags = self.tags((args, kwargs))
            if op in _NORMS:
                self.normalised = True
            first = args[0] if args and isinstance(args[0], Tensor) else None
            moved = first is not None and id(first) in self.fresh
            if base_name(op) in _ACTIVATIONS and moved:  # an activation of a projection's output
                tags = tags | {_ACT}
            fresh = moved and op in _PIECES
            out = tags
        for t in tensors_in(outs):
            if id(t) not in self.of:  # an op that ran others: what its last op made stands
                self.of[id(t)] = out
                self.alive.append(t)
                if fresh:
                    self.fresh.add(id(t))

    def _attending(self, tags: frozenset, rec: OpRecord) -> None:
        self.attending |= _ids(tags, "p")
        raw = _ids(tags, "x")  # the input itself as queries, keys or values
        if raw:
            self.first.add(rec.index)
            self.attending.add(rec.index)
            self.raw |= raw

    def block(self, output) -> bool:
        """Whether the module is a block: an attention, a norm, and a feed-forward whose second
        projection makes the output (an offset network that steers where the attention samples
        is no feed-forward of the stream; an attention's own projections are no feed-forward's
        second layer, whatever activation an input layer put before them), over the input as it
        came."""
        second = {n for n in self.narrowing if n not in self.attending}
        widening = set().union(*(self.narrowing[n] for n in second)) if second else set()
        return self.attention and self.normalised and bool(second & self.outputs(output)) \
            and bool(self.first) and self.first <= self.attending | widening \
            and self.stream(output) is not None

    def stream(self, output) -> int | None:
        """The input the block carries: the one of the output's shape, when one input is (a
        context a cross-attention reads beside it is another input of the block's)."""
        shapes = {tuple(t.shape) for t in tensors_in(output)}
        carried = [i for i, a in self.inputs if i in self.raw and tuple(a.shape) in shapes]
        return carried[0] if len(carried) == 1 else None

    def outputs(self, output) -> set[int]:
        """The sublayers' last projections: those whose output reaches ``output`` (the run's,
        as kept) through no other projection, the attention's own queries, keys and values
        aside (an attention without an output projection adds its values to the stream)."""
        last: set[int] = set()
        for t in tensors_in(output):
            last |= _ids(self.of.get(id(t), ()), "l")
        return last - self.attending


def _ids(tags, kind: str) -> set[int]:
    """The indices of the tags of one kind (``"p"``: the projections a value comes from)."""
    return {tag[1] for tag in tags if tag[0] == kind}


def residual_missing(probe: Probe) -> locate.Reader:
    """Whether the module, a transformer block, carries its input to its output past its
    sublayers, read from a recorded run (``locate.Reader``) for whether it is a block."""
    stream = _Stream(probe)

    def judge(run: locate.Run) -> list[Diagnostic]:
        if probe.reseed is not None or not stream.block(run.output):
            return []
        zeroed = [p for index in sorted(stream.outputs(run.output))
                  for p in stream.weights.get(index, ())]
        if not zeroed:
            return []
        arg = stream.stream(run.output)
        x = probe.args[arg]
        changed = list(probe.args)
        gen = torch.Generator().manual_seed(3)
        changed[arg] = x + torch.randn(x.shape, generator=gen, dtype=x.dtype).to(x.device)
        try:
            with torch.no_grad():
                for p in zeroed:
                    p.zero_()
            first = locate.record(probe, probe.args, grad=False, restore=False)
            second = locate.record(probe, changed, grad=False, restore=False)
        except Exception:  # noqa: BLE001 - a module that cannot run so is not judged
            return []
        finally:
            probe.restore_state()
        outs = [(t, u) for (_, _, t), (_, _, u) in zip(flatten(first.output), flatten(second.output))
                if t.is_floating_point() and t.shape == x.shape and u.shape == t.shape]
        if not outs or not all(bool(t.isfinite().all()) for t, _ in outs):
            return []
        if max(relative_change(u, t) for t, u in outs) > _SAME:
            return []  # the input reaches the output past the zeroed sublayers: a residual
        return [_finding(probe, first, second, x.shape)]

    return locate.Reader(stream.keep, judge)


def _finding(probe: Probe, first: locate.Run, second: locate.Run, shape) -> Diagnostic:
    cut = _cut(first, second)
    made = next((r for r in reversed(first.records) if r.line is not None and any(
        tuple(m.shape) == tuple(shape) for m in r.outputs)), None)
    stopped = cut is not None and cut.op not in _PROJECTIONS | _PRODUCTS | _FUSED | {SDPA}
    rec = cut if stopped else made
    if rec is None:
        rec = first.records[-1] if first.records else None
    name = probe.root
    if stopped:
        where = (f"`{cut.op}` here stops it: with the sublayers' outputs set to zero, what "
                 f"reaches this op from the input no longer reaches the output (a product with a "
                 f"sublayer's output is zero where a sum would carry the stream)")
    else:
        where = ("the input is fed to the sublayers and nothing else: the sublayer called here "
                 "takes the stream, and only its output goes on" if cut is not None else
                 "the input is fed to the sublayers and nothing else: no path around them reaches "
                 "the output made here")
    message = (f"{name} is a transformer block (attention and a feed-forward over its input) whose "
               f"output, with the last projection of each sublayer set to zero, no longer depends "
               f"on its input: no residual path carries the input around the sublayers; {where}")
    hint = ("Add each sublayer's output to the stream it read: `x = x + self.attn(self.norm1(x))`, "
            "`x = x + self.mlp(self.norm2(x))` (or `x = self.norm1(x + self.attn(x))`).")
    file = line = made_at = None
    if not stopped and rec is not None:  # made inside a sublayer: the line that called it
        file, line = locate.called_at(probe, first, rec)
    if not stopped and cut is not None:  # the sublayer the stream went into and no further: its
        made_at = locate.called_at(probe, first, cut)  # output replaced the stream there
        if made_at[1] is None and cut.line is not None:  # a torch layer called there itself
            made_at = (cut.file, cut.line)
    return diagnostic("residual-missing", message, hint, rec=rec, file=file, line=line,
                      module=name if line is not None else None,
                      made_at=made_at if made_at != (file, line) else None)


def _cut(first: locate.Run, second: locate.Run) -> OpRecord | None:
    """The last op that a value changed with the input reached and whose outputs did not change."""
    if len(first.records) != len(second.records) or any(
            a.op != b.op for a, b in zip(first.records, second.records)):
        return None
    a_out = {s.rec.index: s.outputs for s in first.steps}
    b_out = {s.rec.index: s.outputs for s in second.steps}

    def moved(index: int) -> bool:
        a, b = a_out.get(index), b_out.get(index)
        if a is None or b is None or len(a) != len(b):
            return False
        return any(not same(s, t) for s, t in zip(a, b))

    found = None
    for rec in first.records:
        if rec.index not in a_out or moved(rec.index) or rec.line is None:
            continue
        if any(m._made_by is not None and moved(m._made_by) for m in rec.inputs):
            found = rec
    return found
