"""weight-without-effect: a weight the forward reads that cannot move the output.

Every weight a forward computes with should reach its output: a layer whose result is dropped,
or a weight whose contribution is collapsed on the way (multiplied by zero, normalised away), is
trained for nothing. Judged by gradient, on one recorded float64 run: the backward of a random
projection of the outputs (and of tensors the forward keeps on the module, such as an auxiliary
loss) gives every parameter its gradient; a weight matrix read by an op that carries its values
on (its output has a gradient path back to it) whose gradient is exactly zero is a suspect, and
is confirmed when changing its values leaves the outputs as they were.

Before the run, every parameter gets a small random change, so that a gate or a projection
initialised to zero (ReZero, LayerScale, zero-initialised output layers: by design at
initialisation) does not hide what comes before it. Parameters the forward does not read (a
branch not taken, a cache path), read only under ``torch.no_grad()`` and frozen ones
(``requires_grad=False``) are not judged; vectors (biases and norm scales, which a softmax or a
norm after them may remove by design: a key bias) only where their value path is dropped (a
final norm whose result the head never reads); an embedding table counts as read as a whole, so rows of tokens absent from the input are not a finding. Weights that are not finite
(left unset by their constructor: ``torch.empty``'s stale memory), or gradients that overflow,
judge nothing: no finding from them.

The finding is at the line where the weight's value path ends: the op after which nothing that
depends on it reaches the output (the module call whose result was dropped, when that is where
it ended), or the op that removed its contribution.
"""

from __future__ import annotations

import ast
import sys
import warnings
from collections.abc import Iterable

import torch
from torch import Tensor

from ..analysis.graph import Graph
from ..base.ops import DETACHES, SDPA, SOFTMAXES, cut_to_empty, softmax_dim
from ..base.records import OpRecord, TraceData
from ..base.source import display_path, is_library_file
from ..record.tensors import tensors_in
from ..record.tracer import Recorder
from ..rules.dead import binding_of, placeholder
from ..rules.registry import diagnostic
from ..rules.statements import Binding, dead_store, returned_later, statement_at
from . import parts
from .probe import Probe
from .runs import flatten, fresh, math_sdpa, nudge_weights, relative_change

#: The most ops followed downstream of one weight to find where its value path ends.
_FOLLOW = 80
#: The most suspects confirmed by changing their values (one forward each).
_CONFIRM = 8


def weights_without_effect(probe: Probe, trainable: Iterable[str]) -> list:
    """``weight-without-effect`` findings, one per place where value paths end."""
    model = probe.model
    trainable = set(trainable)
    # a weight of no elements (a width of 0) holds nothing to move
    read = [(name, p) for name, p in model.named_parameters()
            if name in trainable and p.is_floating_point() and p.numel()]
    matrices = {name: p for name, p in read if p.dim() >= 2}
    # vectors (norm scales, biases) are judged only where their value path is dropped: a
    # softmax or a norm after them may remove them by design, but nothing drops them so
    vectors = {name: p for name, p in read if p.dim() == 1}
    if not matrices and not vectors:
        return []
    if not all(bool(p.isfinite().all()) for p in matrices.values()):
        return []  # a weight left unset (torch.empty, a reset_parameters that does nothing)
    params = {**matrices, **vectors}
    by_id = {id(p): name for name, p in params.items()}
    gen = torch.Generator().manual_seed(1)
    probe.restore_state()
    try:
        nudge_weights(model, gen)
        for p in params.values():
            p.requires_grad_(True)
        grads = _gradients(probe, params, gen)
        if grads is None or not all(g is None or bool(g.isfinite().all()) for g in grads.values()):
            return []  # no gradient, or one that overflowed: nothing to judge by
        found = parts.parts_without_effect(probe, matrices, grads) if matrices else []
        if all(g is not None and bool(g.ne(0).any()) for g in grads.values()):
            return found  # the usual case, settled by one plain forward and backward
        return found + _judge(probe, params, by_id, gen, set(vectors))
    finally:
        for p in params.values():
            p.requires_grad_(False)
            p.grad = None
        probe.restore_state()


def _projection(probe: Probe, out, gen):
    """A random projection of the outputs and of the tensors the run kept on the module (an
    auxiliary loss), or None when nothing has a gradient. A buffer the run wrote is a cache for
    a later call, not an output: a weight that feeds only it is confirmed over two calls."""
    every_param = {id(p) for p in probe.model.parameters()}
    ends = [t for _, _, t in flatten(out) if t.is_floating_point() and t.requires_grad]
    ends += [t for _, value in probe._state.changed(buffers=False) for t in tensors_in(value)
             if isinstance(t, Tensor) and t.is_floating_point() and t.requires_grad
             and id(t) not in every_param]  # the parameters changed on purpose are not kept values
    if not ends:
        return None
    return sum((t.nan_to_num(0.0, 0.0, 0.0) * torch.randn(t.shape, generator=gen, dtype=t.dtype))
               .sum() for t in ends)


def _gradients(probe: Probe, params, gen) -> dict[str, Tensor | None] | None:
    """Every weight's gradient from the outputs, on an untraced run; None when nothing has a
    gradient to take."""
    args, kwargs = fresh(probe.args), fresh(probe.kwargs)
    with torch.enable_grad(), math_sdpa(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = probe.model(*args, **kwargs)
        total = _projection(probe, out, gen)
    if total is None:
        return None
    grads = torch.autograd.grad(total, list(params.values()), allow_unused=True)
    return dict(zip(params, grads))


def _judge(probe: Probe, params, by_id, gen, vectors: set = frozenset()) -> list:
    reads: dict[str, list[OpRecord]] = {}  # each op that read each weight, the first first
    outs_of: dict[int, list[Tensor]] = {}

    def keep(rec: OpRecord, outs: tuple, op_args: tuple, op_kwargs: dict) -> None:
        outs_of[rec.index] = [t for t in outs if isinstance(t, Tensor)]
        if not torch.is_grad_enabled() or not any(t.requires_grad for t in outs_of[rec.index]):
            return
        for t in tensors_in((op_args, op_kwargs)):
            name = by_id.get(id(t))
            if name is not None:
                reads.setdefault(name, []).append(rec)

    trace = TraceData(probe.dims)
    recorder = Recorder(trace, probe.model, root=probe.root, probes=False, observer=keep)
    probe.restore_state(weights=False)  # as the gradients' run began
    args, kwargs = fresh(probe.args), fresh(probe.kwargs)
    with torch.enable_grad(), math_sdpa(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with recorder:
            out = probe.model(*args, **kwargs)
    if not reads or cut_to_empty(trace.records):
        return []  # an axis cut to nothing carries no gradient: such a run says nothing here
    total = _projection(probe, out, gen)
    if total is None:
        return []
    names = list(reads)
    grads = torch.autograd.grad(total, [params[n] for n in names], retain_graph=True,
                                allow_unused=True)
    by_index = {rec.index: rec for rec in trace.records}
    # a weight applied to a constant made from sizes (a state not given yet: zeros on a first
    # call) has no effect in this call by design, not by a slip
    suspects = sorted((n for n, g in zip(names, grads) if (g is None or not bool(g.ne(0).any()))
                       and not _fed_constant(by_index, reads[n][0])), key=lambda n: n in vectors)
    if not suspects:
        return []
    graph = Graph(trace.records)
    # where each value path ends, while the graph still holds the run (a confirming run below
    # changes the weights in place)
    ends_of = {n: _path_end(graph, trace.records, outs_of, reads[n], params[n])
               for n in suspects[:_CONFIRM]}
    found: dict[tuple, list[str]] = {}
    for name, end in ends_of.items():
        if end is None or name in vectors and end[0] != "dropped":
            continue
        if _no_effect(probe, params[name], gen):
            found.setdefault(end, []).append(name)
    findings = (_finding(probe, trace.records, end, names, reads) for end, names in found.items())
    return [d for d in findings if d is not None]


def _fed_constant(by_index: dict[int, OpRecord], rec: OpRecord) -> bool:
    """Whether ``rec`` (the op that read a weight) also reads a value made from nothing but
    sizes (``x.new_zeros(B, T)``), directly or through ops of one input (an unsqueeze)."""
    for meta in rec.inputs:
        src = by_index.get(meta.src[0]) if meta.src is not None else None
        for _ in range(6):
            if src is None:
                break
            if placeholder(src):
                return True
            if len(src.inputs) != 1 or src.inputs[0].src is None:
                break
            src = by_index.get(src.inputs[0].src[0])
    return False


def _no_effect(probe: Probe, param: Tensor, gen) -> bool:
    """Whether changing ``param``'s values leaves every output as it was, on a first call and on
    the call after it (which reads what the first kept for it: a cache, a memory)."""
    reference = _two_calls(probe)
    if reference is None:
        return False  # a module that cannot run twice as it is: not judged
    saved = param.detach().clone()
    try:
        with torch.no_grad():
            param.add_(torch.randn(param.shape, generator=gen, dtype=param.dtype)
                       * (float(param.abs().mean()) or 1.0))
        changed = _two_calls(probe, len(reference))
    finally:
        with torch.no_grad():
            param.copy_(saved)
    if changed is None or len(changed) != len(reference):
        return False
    for out, ref in zip(changed, reference):
        a = [t for _, _, t in flatten(ref) if t.is_floating_point()]
        b = [t for _, _, t in flatten(out) if t.is_floating_point()]
        if len(a) != len(b) or not all(x.shape == y.shape and relative_change(y, x) <= _NONE
                                       for x, y in zip(a, b)):
            return False
    return True


def _two_calls(probe: Probe, calls: int = 2) -> list | None:
    """The outputs of ``calls`` calls in a row from the state as taken (one where the second
    cannot run as the first did), or None when the first cannot run."""
    probe.restore_state(weights=False)
    outs = []
    with torch.no_grad(), math_sdpa(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(calls):
            try:
                outs.append(probe.model(*fresh(probe.args), **fresh(probe.kwargs)))
            except Exception:  # noqa: BLE001 - judged by the calls that ran
                break
    probe.restore_state(weights=False)
    return outs or None


#: the most a weight changed by its own size may move the outputs (float64) and still be said to
#: have no effect: rounding alone (a bias a norm takes out again), far below any effect a weight
#: has by design, however weak (a query over near-uniform weights moves them by 1e-8)
_NONE = 1e-12


def _depends(outs: list[Tensor], param: Tensor, gen) -> bool:
    live = [t for t in outs if t.is_floating_point() and t.requires_grad]
    if not live:
        return False
    total = sum((t.nan_to_num(0.0, 0.0, 0.0) * torch.randn(t.shape, generator=gen, dtype=t.dtype))
                .sum() for t in live)
    (g,) = torch.autograd.grad(total, [param], retain_graph=True, allow_unused=True)
    return g is not None and bool(g.ne(0).any())


def _path_end(graph: Graph, records: list[OpRecord], outs_of, reads: list[OpRecord],
              param: Tensor):
    """``("dropped", rec)``: the last op on the weight's value path (from every op that read
    it), whose result nothing that reaches the output reads; or ``("collapsed", rec)``: the op
    that read a value carrying the weight and returned one that does not; None for a weight
    reduced to one number and then multiplied by zero (``out + 0 * self.spare.weight.sum()``,
    so that a distributed wrapper sees every parameter used). Values are followed through
    ``detach`` (a straight-through estimator: ``x + (quantized - x).detach()`` carries the
    codebook's values on, not its gradient)."""
    gen = torch.Generator().manual_seed(2)
    start = reads[0]
    carrying = {rec.index for rec in reads}
    valued: set[int] = set()  # past a detach: carrying the weight's values, not its gradient
    followed = 0
    collapsed = None
    for rec in records[start.index + 1:]:
        if followed >= _FOLLOW:
            break
        if any(m.src is not None and m.src[0] in valued for m in rec.inputs) \
                or rec.op in DETACHES and any(m.src is not None and m.src[0] in carrying
                                              for m in rec.inputs):
            valued.add(rec.index)
            continue
        if not any(m.src is not None and m.src[0] in carrying for m in rec.inputs):
            continue
        followed += 1
        if _depends(outs_of.get(rec.index, []), param, gen):
            carrying.add(rec.index)
        elif collapsed is None and any(t.is_floating_point() for t in outs_of.get(rec.index, [])):
            collapsed = rec
    ends = carrying | valued
    # where a branch ends (its result read by nothing on the path): one its caller binds and
    # never reads, by a slip, before the latest (a commitment term dropped as ``_`` on purpose)
    read_on = {m.src[0] for r in records if r.index in ends for m in r.inputs if m.src is not None}
    slipped = [i for i in sorted(ends) if i not in read_on and _dead_result(records, records[i])]
    end = slipped[-1] if slipped else max(ends)
    last = next(r for r in records if r.index == end)
    if collapsed is not None and collapsed.index > start.index and not _dropped_after(graph, last) \
            and not valued:
        if any(m.src is not None and m.src[0] in carrying and not m.shape for m in collapsed.inputs):
            return None  # a weight summed to a number and multiplied away: touched on purpose
        if _over_one_key(collapsed):
            return None  # one key at these sizes (an image downsampled to one pixel): says nothing
        return ("collapsed", collapsed.index)
    return ("dropped", last.index)


def _over_one_key(rec: OpRecord) -> bool:
    """Whether ``rec`` is attention over a single key, or a softmax over an axis of size 1: its
    weights are 1 whatever the queries and keys, at sizes where the code's own lengths (an
    image's pixels after downsampling) came to one."""
    if rec.op == SDPA:
        return len(rec.inputs) >= 2 and len(rec.inputs[1].shape) >= 2 and rec.inputs[1].shape[-2] == 1
    axis = softmax_dim(rec) if rec.op in SOFTMAXES else None
    return axis is not None and rec.inputs[0].shape[axis[0]] == 1


def _dead_result(records: list[OpRecord], rec: OpRecord) -> bool:
    """Whether the caller binds ``rec``'s result, one of several a module call returns, to a
    name of its own that its code never reads afterwards (``quantized, indices, _ =
    self.vq(latents)``, then ``self.decode(latents)``): dropped by a slip, not left aside."""
    for slot in range(len(rec.outputs)):
        binding = binding_of(records, rec, slot)
        if binding is not None and binding.name and not binding.name.startswith("_") \
                and dead_store(binding) is not None:
            return True
    return False


def _side_output(records: list[OpRecord], rec: OpRecord) -> bool:
    """Whether ``rec``'s result (the last value carrying a weight) is an output the forward
    returns only when asked (``return out, agent_out`` after ``if not return_agents: return
    out``): the user's code binds it to a name a later ``return`` hands back, with nothing
    after it but its own layer reading the values it was made from. A later op that reads
    those values instead (``return self.head(h)`` beside ``embeddings = self.norm(h)``) says
    the result was meant to be used there."""
    bound = False
    for slot in range(len(rec.outputs)):
        binding = binding_of(records, rec, slot)
        if binding is not None and dead_store(binding) is None and returned_later(binding):
            bound = True
    return bound and _taken_again(records, rec) is None


def _taken_again(records: list[OpRecord], rec: OpRecord) -> OpRecord | None:
    """The first op after ``rec`` (the last op of a module call, or an op of the user's) that
    reads a value the call took (``self.decode(latents)`` after ``self.vq(latents)``): where
    the call's result may have been meant. None when nothing reads them again."""
    first, last = _call_span(records, rec)
    made = {m.src for r in records[first:last + 1] for m in r.inputs
            if m.src is not None and m.src[0] < first}
    return next((r for r in records[last + 1:] if not placeholder(r)
                 and any(m.src in made for m in r.inputs)), None)


def _call_span(records: list[OpRecord], rec: OpRecord) -> tuple[int, int]:
    """The indices of the first and the last op of the module call that returned ``rec``'s
    result (``rec``'s own index twice for a result no module call returned)."""
    returned = next((m.returned for m in rec.outputs if m.returned is not None), None)
    if returned is None:
        return rec.index, rec.index
    inside = returned.module + "."

    def within(r: OpRecord) -> bool:
        return r.module == returned.module or r.module.startswith(inside)

    first = last = rec.index
    while first > 0 and within(records[first - 1]):
        first -= 1
    while last + 1 < len(records) and within(records[last + 1]):
        last += 1
    return first, last


def _dropped_after(graph: Graph, rec: OpRecord) -> bool:
    return not any(graph.consumers.get((rec.index, slot)) for slot in range(len(rec.outputs)))


def _finding(probe: Probe, records: list[OpRecord], end: tuple, names: list[str], reads):
    kind, index = end
    rec = next(r for r in records if r.index == index)
    first = reads[names[0]][0]
    weights = ", ".join(f"`{n}`" for n in names)
    one = len(names) == 1
    read_at = f" (read at {first.file}:{first.line})" if first.site is not None else ""
    place = {"rec": rec}
    returned = next((m.returned for m in rec.outputs if m.returned is not None
                     and m.returned.site is not None), None)
    if kind == "dropped" and any(m.returned is not None and m.returned.index is not None
                                 for m in rec.outputs) and not _dead_result(records, rec):
        return None  # one of several results a module returns, left unused by its caller
    outer = None
    if kind == "dropped" and returned is not None:
        # a helper function handed the result back, and its caller dropped it
        outer = _dropped_by_caller(probe, returned, *returned.where[:2])
    if kind == "dropped" and outer is None and _side_output(records, rec):
        return None  # returned when the forward is asked to (a flag): this call did not ask
    if kind == "dropped" and returned is not None:
        filename, line = outer or returned.where[:2]
        place = {"rec": rec, "file": display_path(filename), "line": line,
                 "module": returned.caller or None}
        called = f"`{returned.module.split('.')[-1] or returned.kind}` ({returned.kind})"
        how = (f"{'its' if one else 'their'} value path ends at the call of {called} at "
               f"{display_path(filename)}:{line}, whose result never reaches the output"
               if outer is None else
               f"{'its' if one else 'their'} value path ends at the call at "
               f"{display_path(filename)}:{line}, which hands back the result of {called} "
               f"(called at {display_path(returned.where[0])}:{returned.where[1]}) and whose "
               f"result never reaches the output")
        again = _taken_again(records, rec)
        if again is not None and again.site is not None:
            how += (f"; what that call took is read again at {again.file}:{again.line} "
                    f"(`{again.source or again.op}`), where its result may have been meant")
    elif kind == "dropped":
        how = (f"{'its' if one else 'their'} value path ends at `{rec.source or rec.op}` at {rec.file}:{rec.line}, whose "
               f"result never reaches the output")
    else:
        how = (f"`{rec.source or rec.op}` at {rec.file}:{rec.line} reads a value that depends on "
               f"{'it' if one else 'them'} and returns one that does not")
    message = (f"{weights}{read_at} cannot move the output: {'its' if one else 'their'} gradient "
               f"from the outputs is exactly zero and changing {'its' if one else 'their'} values "
               f"leaves every output as it was; {how}")
    hint = ("use the result (add it to the stream, return it, or pass it on), or remove the layer "
            "if it is not meant to be there")
    return diagnostic("weight-without-effect", message, hint, **place, weights=names, end=kind)


def _dropped_by_caller(probe: Probe, returned, filename: str, line: int) -> tuple[str, int] | None:
    """Where a module call's result is dropped when the call sits in a plain helper function
    that hands it back (``return fn(x)``, ``out = fn(x); return out``) and a caller of the helper
    drops what it returns: ``(file, line)`` of that caller's call, from one run with a hook on
    the module that reads the Python stack of its call; None when the call's own line drops it."""
    path = returned.module.split(".", 1)[1] if "." in returned.module else ""
    try:
        module = probe.model.get_submodule(path)
    except AttributeError:
        return None
    chains: list[list[tuple[str, int, str]]] = []

    def hook(_module, _args):
        if chains:
            return
        frame, chain = sys._getframe(1), []
        while frame is not None:
            code = frame.f_code
            if not is_library_file(code.co_filename) and not code.co_filename.startswith("<"):
                chain.append((code.co_filename, frame.f_lineno, code.co_name))
            frame = frame.f_back
        chains.append(chain)

    handle = module.register_forward_pre_hook(hook)
    try:
        _two_calls(probe, 1)
    finally:
        handle.remove()
    chain = chains[0] if chains else []
    if not chain or (chain[0][0], chain[0][1]) != (filename, line):
        return None
    at = 0
    while at + 1 < len(chain) and chain[at][2] != "forward" and _hands_back(*chain[at][:2]):
        at += 1
    if at == 0:
        return None
    # a forward that binds what the helper returned and returns it later (when asked): a side
    # output of this call, as one bound in the forward itself is
    return None if _hands_back(*chain[at][:2]) else chain[at][:2]


def _hands_back(filename: str, line: int) -> bool:
    """Whether the statement at ``filename:line`` returns the value made on it: a ``return`` of
    it, or a name bound to it that a later ``return`` hands back."""
    found = statement_at(filename, line)
    if found is None:
        return False
    function, statement = found
    if isinstance(statement, ast.Return):
        return statement.value is not None
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1 \
            and isinstance(statement.targets[0], ast.Name):
        return returned_later(Binding(statement, function, statement.targets[0].id, statement.value))
    return False
