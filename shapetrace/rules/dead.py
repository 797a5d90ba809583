"""discarded-result by dataflow: values computed and never used, and layers never called.

A dead value (``analysis.liveness``: it reaches no output, no kept tensor, no write) is reported
when it is worth a finding: a layer's output (``self.to_q(x)``), a product (attention scores),
a softmax, an attention, or the first output of a module call (``out, cache = self.block(x)``
with ``out`` never read), and only when the user's code could not have used it on any path:
the variable that holds it is assigned again, or never read, before anything reads it
(``rules.statements``). It is reported at the line that computed it, saying what replaced it.

A plain layer (or an ``nn.Sequential`` of layers) of the model that was never called while its
owner ran, and whose parameters no op read (``record.layers``), is a warning, and only when the
owner's source names it nowhere but in its definition and in ``__init__``'s set-up of it
(``nn.init.zeros_(self.mlp[-1].weight)``): a layer used on another path (a cross-attention
branch, ``generate``) is named there, and says nothing.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ..analysis.facts import Analysis
from ..base.ops import (
    EMBEDDINGS,
    LAYER_OPS,
    LOG_SOFTMAXES,
    MATMULS,
    MOVES,
    RANDOM_FACTORIES,
    SDPA,
    SOFTMAXES,
    TRAILING_NORMS,
    base_name,
)
from ..base.records import ModuleReturn, OpRecord
from ..base.source import display_path, file_tree, source_segment
from .registry import diagnostic
from .statements import Binding, DeadStore, binding_at, dead_store, expression_at, reads_of

#: What a dead value is worth a finding for: what a layer computes, a product (attention
#: scores, the attention's output), a softmax, an attention, a norm (``x = self.norm(x)`` after
#: q, k and v were already projected from the x before it).
REPORTED = LAYER_OPS | MATMULS | SOFTMAXES | LOG_SOFTMAXES | {SDPA} | TRAILING_NORMS | {"F.group_norm"}


@dataclass
class _Culprit:
    """The value reported: a record's output, or a module call's output."""

    rec: OpRecord
    returned: ModuleReturn | None  # the call, for a module's output
    piece: int | None = None  # the output of a split, for a piece cut from a layer's output

    @property
    def where(self):
        return self.returned.where if self.returned is not None else self.rec.where

    @property
    def key(self):
        if self.returned is not None:
            return "call", self.returned.site
        return "op", self.rec.index, self.piece


def dead_value_findings(analysis: Analysis) -> list:
    """discarded-result for dead values: see the module's docstring."""
    if analysis.exception is not None or any(rec.error is not None for rec in analysis.records):
        return []  # the code after a failure never ran: what it would have read is unknown
    liveness = analysis.liveness
    consumers = analysis.graph.consumers
    found: dict = {}
    for rec, slot in liveness.dead_values():
        if consumers.get((rec.index, slot)):
            continue  # not where the value was dropped: a later op read it (and died)
        store = _dropped(analysis, rec, slot)
        for culprit in _culprits(analysis, rec, slot):
            # where the value was dropped says nothing (inside ``map(lambda t: ..., (q, k, v))``):
            # the culprit's own variable, never read on any path, does
            own = store if store is not None or culprit.returned is not None else \
                _dropped(analysis, culprit.rec, culprit.piece or 0)
            if own is not None and culprit.key not in found:
                found[culprit.key] = _finding(analysis, culprit, own)
    return [d for d in found.values() if d is not None]


def _dropped(analysis: Analysis, rec: OpRecord, slot: int) -> DeadStore | None:
    """How the user's code dropped the value that ``rec`` made (or that a module call
    returned): a dead store at its line, or None when the code may use it on another path."""
    binding = binding_of(analysis.records, rec, slot)
    if binding is None or (binding.name or "").startswith("_"):
        return None  # passed on to something the trace does not see, or dropped on purpose
    return dead_store(binding)


def binding_of(records: list[OpRecord], rec: OpRecord, slot: int) -> Binding | None:
    """The statement of the user's code that took the value ``rec`` made at ``slot`` (or that
    a module call returned), when that value is the statement's whole value (a name bound to
    it, or an expression statement); None otherwise (passed on to something else on its line,
    code outside any module, inside a library call, an installed file)."""
    returned = rec.outputs[slot].returned
    if returned is not None:
        if returned.site is None or returned.index == -1:
            return None  # called by library code, or inside a dict or a nested tuple
        filename, line, col, end_col = returned.where
        index = returned.index
    else:
        if rec.site is None or not rec.module \
                or rec.internal and not _returned_by_call(records, rec):
            return None  # outside any module (a script), or inside a library call
        filename, line, col, end_col = rec.where
        index = slot if len(rec.outputs) > 1 else None  # q, k, v = t.split(C, dim=-1)
    if filename is None or _installed(filename):
        return None
    return binding_at(filename, line, col, end_col, index)


def _returned_by_call(records: list[OpRecord], rec: OpRecord) -> bool:
    """Whether an op made inside a library function called on the user's line (an einops
    ``rearrange``) is the last that call made: the value it gave back."""
    later = records[rec.index + 1] if rec.index + 1 < len(records) else None
    return later is None or later.site is not rec.site


def _culprits(analysis: Analysis, rec: OpRecord, slot: int) -> list[_Culprit]:
    """The values worth a finding nearest to a dropped one, walking back through dead values;
    a module's output stops the walk (what the module does inside is its own business)."""
    liveness = analysis.liveness
    found: list[_Culprit] = []
    stack, seen = [(rec, slot)], set()
    while stack:
        r, s = stack.pop()
        if (r.index, s) in seen:
            continue
        seen.add((r.index, s))
        returned = r.outputs[s].returned
        if returned is not None:
            if _worth(analysis, r, s, returned):
                found.append(_Culprit(r, returned))
            continue
        if r.op in REPORTED and liveness.dead_record(r):
            found.append(_Culprit(r, None))
            continue
        if _piece_of_a_layer(analysis, r, s):
            found.append(_Culprit(r, None, s))
            continue
        for meta in r.inputs:
            if liveness.dead(meta):
                stack.append((analysis.records[meta.src[0]], meta.src[1]))
    return found


def _piece_of_a_layer(analysis: Analysis, rec: OpRecord, slot: int) -> bool:
    """A piece of a split whose other pieces are used, cut from what a layer computed
    (``q, k, v = self.qkv(x).split(C, dim=-1)`` with ``v`` never used)."""
    if len(rec.outputs) < 2 or base_name(rec.op) not in _SPLITS or not rec.inputs:
        return False
    meta = rec.inputs[0]
    while meta.src is not None:
        producer = analysis.records[meta.src[0]]
        if producer.op in LAYER_OPS:
            return True
        if producer.op not in MOVES or not producer.inputs:
            return False
        meta = producer.inputs[0]
    return False


_SPLITS = frozenset({"split", "chunk", "unbind", "tensor_split"})


def _worth(analysis: Analysis, rec: OpRecord, slot: int, returned: ModuleReturn) -> bool:
    """A module output worth a finding: the whole output of a module, or the first of the
    tuple a module of the user's returns (the others, attention weights or a cache, are often
    dropped on purpose), with something that is all dead behind it (a layer, a product, a
    softmax): an output that is only a slice of a live computation (an LSTM's outputs beside
    its last state) costs nothing."""
    if returned.site is None or returned.index not in (None, 0):
        return False
    if returned.index == 0 and returned.library:
        return False  # nn.LSTM's outputs, nn.MultiheadAttention's: the caller picks
    liveness = analysis.liveness
    stack, seen = [(rec, slot)], set()
    while stack:
        r, s = stack.pop()
        if (r.index, s) in seen or len(seen) > 10_000:
            continue
        seen.add((r.index, s))
        if r.op in REPORTED and liveness.dead_record(r):
            return True
        for meta in r.inputs:
            if liveness.dead(meta):
                stack.append((analysis.records[meta.src[0]], meta.src[1]))
    return False


def _installed(filename: str) -> bool:
    return "site-packages" in filename or "dist-packages" in filename


# --- the message ------------------------------------------------------------------------------

def _noun(analysis: Analysis, culprit: _Culprit) -> str:
    rec, returned = culprit.rec, culprit.returned
    if culprit.piece is not None:
        return f"piece {culprit.piece} of the projection"
    if returned is not None and not returned.library:
        return "the output of"
    op = rec.op
    if op in EMBEDDINGS:
        return "the embedding lookup"
    if op.startswith("F.conv"):
        return "the convolution"
    if op in LAYER_OPS:
        return "the projection"
    if op in SOFTMAXES:
        return "the softmax"
    if op in LOG_SOFTMAXES:
        return "the log-softmax"
    if op == SDPA:
        return "the attention"
    if op in MATMULS:
        if any(r.op in SOFTMAXES for r, _ in analysis.graph.consumers.get((rec.index, 0), ())):
            return "the attention scores"
        return "the product"
    return "the result of"


def _text(culprit: _Culprit) -> str:
    filename, line, col, end_col = culprit.where
    if filename is None or line is None:
        return culprit.rec.op
    if culprit.returned is None and culprit.rec.source:
        return culprit.rec.source.strip()
    node = expression_at(filename, line, col, end_col)
    if node is not None:
        return ast.unparse(node)
    return source_segment(filename, line, col, end_col).strip() or culprit.rec.op


def _finding(analysis: Analysis, culprit: _Culprit, store: DeadStore):
    filename, line, _, _ = culprit.where
    if filename is None or line is None:
        return None
    replaced = store.replaced_by
    shared = _shared_input(*culprit.where, replaced, store.binding.name) \
        if replaced is not None and store.binding.name is not None else None
    why, hint = _why(culprit, store, shared)
    message = f"{_noun(analysis, culprit)} {_text(culprit)} is computed and never used: {why}"
    returned = culprit.returned
    sibling = _sibling_read(filename, line, replaced, store.binding.name)
    made_at = None
    if shared is not None:
        # q = query.view(...) after q = self.q_proj(query): the new q is made from what the
        # projection read, at the line that should have read the projection
        made_at = (display_path(filename), replaced.lineno)
    if sibling is not None:  # v = k.reshape(...) after q, k, v = ...: the line that replaced it
        name = store.binding.name
        made_at = (display_path(filename), replaced.lineno)
        message = (f"{name} is made from {sibling} at line {replaced.lineno} "
                   f"({ast.unparse(replaced).strip()}), not from {name}: " + message)
        hint = (f"Make {name} from {name} at line {replaced.lineno} (not from {sibling}), or "
                f"delete line {line} if its {name} is not needed.")
    return diagnostic("discarded-result", message, hint, rec=culprit.rec, made_at=made_at,
                      file=display_path(filename), line=line,
                      module=(returned.caller if returned is not None else culprit.rec.module)
                      or None,
                      op=returned.kind if returned is not None else None,
                      statement="dataflow",
                      replaced_at=replaced.lineno if replaced is not None else None)


def _why(culprit: _Culprit, store: DeadStore, source: str | None) -> tuple[str, str]:
    """What became of the value, and the hint: in the user's names, with the line that
    replaced it and what that line made the new value from (``source``: what it read that the
    dead value read too, :func:`_shared_input`)."""
    filename, line, col, end_col = culprit.where
    binding, replaced = store.binding, store.replaced_by
    name, at = binding.name, binding.statement.lineno
    if name is None:
        node = expression_at(filename, line, col, end_col)
        first = node.args[0] if isinstance(node, ast.Call) and node.args else None
        if at != line:
            return (f"what it went into at line {at} is dropped",
                    "Assign the result and use it where it belongs, or delete the line.")
        if isinstance(first, ast.Name):
            return ("its result is dropped", f"Assign the result where it belongs "
                    f"({first.id} = {_text(culprit)}), or delete the line.")
        return "its result is dropped", "Assign the result and use it where it belongs, " \
                                        "or delete the line."
    into = name if at == line else f"it becomes {name} at line {at}, and {name}"
    hint = f"Use {name} where it was meant to go, or delete line {line} if it is not needed."
    if replaced is None and store.mapped_at is not None:
        mapped = store.mapped_at
        return (f"{into} is only passed through map() at line {mapped.lineno} onto a name of its "
                f"own that nothing reads afterwards", hint)
    if replaced is None:
        return f"{into} is never read afterwards", hint
    why = (f"{into} is assigned again at line {replaced.lineno} "
           f"({ast.unparse(replaced).strip()}) before anything reads it")
    if source is None:
        return why, hint
    why += (f": the new {name} is made from {source}, which {_text(culprit)} read, so line "
            f"{line} has no effect")
    hint = (f"Make the new {name} at line {replaced.lineno} from {name} rather than from "
            f"{source}, or delete line {line} if the step is not needed.")
    return why, hint


def _sibling_read(filename, line: int, replaced: ast.stmt | None, name: str | None) -> str | None:
    """The name bound beside ``name`` by the statement at ``line`` (``q, k, v = qkv.split(...)``)
    that the statement replacing ``name`` reads instead of it (``v = k.reshape(...)``), or None."""
    value = getattr(replaced, "value", None)
    tree = file_tree(filename)
    if value is None or name is None or tree is None:
        return None
    siblings: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and node.lineno == line:
            for target in node.targets:
                if isinstance(target, (ast.Tuple, ast.List)):
                    siblings |= {e.id for e in target.elts if isinstance(e, ast.Name)}
    if name not in siblings:
        return None
    reads = reads_of(value)
    return next((r for r in reads if r in siblings and r != name), None) if name not in reads else None


def _shared_input(filename, line, col, end_col, replaced: ast.stmt, name: str) -> str | None:
    """A variable the dead value was computed from that the replacing line reads too (``x``
    for ``q = self.to_q(x)`` replaced by ``q = x.view(...)``), or None."""
    node = expression_at(filename, line, col, end_col)
    value = getattr(replaced, "value", None)
    if node is None or value is None:
        return None
    later = set(reads_of(value))
    for read in reads_of(node):
        if read not in ("self", name) and read in later:
            return read
    return None


# --- placeholders never read -------------------------------------------------------------------

def placeholder(rec: OpRecord) -> bool:
    """Whether ``rec`` made a value from nothing but sizes: an allocation or a constant
    (``torch.zeros(B, T, C)``, ``torch.empty(...)``, ``torch.zeros_like(q)``, ``x.new_zeros``),
    reading no tensor but for its shape. A dead one is a starter's placeholder, not a lost
    computation."""
    if not rec.outputs:
        return False
    name = rec.op
    return not rec.inputs or name.endswith("_like") or name.startswith("Tensor.new_")


def made_from_sizes(records: list[OpRecord], rec: OpRecord, depth: int = 8) -> bool:
    """Whether every value ``rec`` read was made, in this run, from sizes alone (``pos =
    torch.arange(T).unsqueeze(0)``): no input, weight or buffer of the module reaches it, so a
    dead one loses nothing the module computes."""
    if placeholder(rec):
        return rec.op not in RANDOM_FACTORIES  # random values are data, not sizes
    if depth == 0 or not rec.outputs:
        return False
    return all(m._made_by is not None and made_from_sizes(records, records[m._made_by], depth - 1)
               for m in rec.inputs)


def placeholder_finding(rec: OpRecord, source: str, variable: str, statement: ast.stmt):
    """A note for a placeholder assigned and never read (``out = torch.zeros_like(query)``
    left from a starter): nothing is lost, the line can go."""
    plain = placeholder(rec)  # else made from sizes by ops of its own (``arange(T).unsqueeze(0)``)
    made = "a placeholder" if plain else "made from sizes alone (no input or weight reaches it) and"
    line = statement.lineno
    message = (f"{variable} = {source} is {made} never read ({variable} is not read "
               f"after line {line}): nothing is computed there, so nothing is lost")
    hint = (f"Delete line {line} (left from the starter code, it has no effect)." if plain else
            f"Delete line {line}, or use {variable} where it was meant to go (it has no effect now).")
    return diagnostic("discarded-result", message, hint, rec=rec, variant="placeholder",
                      statement="placeholder")


# --- layers never called ----------------------------------------------------------------------

def unread_layer_findings(analysis: Analysis):
    """discarded-result warnings for plain layers never used: see the module's docstring."""
    if analysis.exception is not None or any(rec.error is not None for rec in analysis.records):
        return
    dims = analysis.dims
    calls = _layer_calls(analysis)
    copies, twice = _repeated_siblings(calls), _called_twice(calls)
    for layer in analysis.unread_layers:
        place = _definition(layer)
        if place is None:
            continue
        filename, statement, target, guard = place
        shapes = " and ".join(_shape(shape, dims) for shape in layer.shapes)
        defined = ast.unparse(statement).strip()
        message = (f"{defined} is never used: forward never calls {target} and no op reads its "
                   f"weights {shapes}, so they get no gradient and stay as initialised")
        hint = f"Call {target} where its output belongs (y = {target}(y)), or delete the layer."
        line = statement.lineno
        # a sibling of its shapes called on one input again (``k = self.w_q(x)``), or, failing
        # that, called at two places while it is called at none (the feed-forward's pre-norm
        # calling the attention's): the call after the first is the one meant for it
        key = (layer.owner, layer.shapes)
        repeated = copies.get(key) if guard is None else None
        how = "called on the same input more than once"
        if not repeated and guard is None and len(twice.get(key, ())) == 1:
            repeated, how = twice[key], f"called at two places and {target} at none"
        if repeated:
            sibling, call = repeated.pop(0)
            others = ", ".join(str(n) for n in sorted({r.line for r in calls[(layer.owner, sibling)]
                                                         if r.line is not None}))
            message += (f" (defined at line {line}); {sibling}, a layer of the same shapes, is "
                        f"{how} (lines {others}): the call at line {call.line} "
                        f"(`{call.source or call.op}`) computes what {target} was built for")
            hint = f"Call {target} at line {call.line} in place of {sibling}."
            yield diagnostic("discarded-result", message, hint, rec=call, layer=layer.path,
                             statement="repeated-sibling")
            continue
        if guard is not None:  # its only use sits under a test that is never true: that line
            message += (f"; its use is under `if {ast.unparse(guard.test)}:` at line "
                        f"{guard.lineno}, which is never true, and it is defined at line {line}")
            hint = f"Make the test at line {guard.lineno} able to be true, or delete the layer."
            line = guard.lineno
        yield diagnostic("discarded-result", message, hint, variant="unused-layer",
                         file=display_path(filename), line=line,
                         module=layer.owner, op=layer.kind, layer=layer.path)


def _layer_calls(analysis: Analysis) -> dict[tuple[str, str], list]:
    """Every call of each layer (a projection, a convolution, an embedding, a norm) of its
    owner's code, by ``(owner, "self.<layer>")``, in the order they ran."""
    calls: dict[tuple[str, str], list] = {}
    for rec in analysis.records:
        owner, _, attribute = (rec.module or "").rpartition(".")
        if (rec.op in LAYER_OPS or rec.op in TRAILING_NORMS) and owner and rec.inputs:
            calls.setdefault((owner, f"self.{attribute}"), []).append(rec)
    return calls


def _repeated_siblings(calls: dict) -> dict:
    """For each owner, the layers (not norms) it calls more than once on one input
    (``self.Wq(x)`` for q, k and v): ``(owner, shapes) -> [(sibling, repeated call), ...]``,
    the calls after the first in the order they ran. A layer never called beside such a
    sibling is the one those calls meant."""
    found: dict[tuple, list] = {}
    for (owner, sibling), recs in calls.items():
        if recs[0].op not in LAYER_OPS:
            continue
        shapes = tuple(tuple(m.shape) for m in recs[0].inputs[1:])
        seen: set[int] = set()
        for rec in recs:
            if id(rec.inputs[0]) in seen:
                found.setdefault((owner, shapes), []).append((sibling, rec))
            seen.add(id(rec.inputs[0]))
    return found


def _called_twice(calls: dict) -> dict:
    """``(owner, weight shapes) -> [(layer, its call at the later line)]`` for each layer of an
    owner called from two lines or more of its code (on different inputs)."""
    found: dict[tuple, list] = {}
    for (owner, sibling), recs in calls.items():
        lines = sorted({r.line for r in recs if r.line is not None})
        if len(lines) >= 2:
            shapes = tuple(tuple(m.shape) for m in recs[0].inputs[1:])
            later = next(r for r in recs if r.line == lines[-1])
            found.setdefault((owner, shapes), []).append((sibling, later))
    return found


def _shape(shape: tuple[int, ...], dims) -> str:
    labels = [dims.label(s) for s in shape] if dims is not None else [str(s) for s in shape]
    return f"({labels[0]},)" if len(labels) == 1 else "(" + ", ".join(labels) + ")"


#: Ways to reach a submodule without writing its name as an attribute.
_DYNAMIC = frozenset({"getattr", "setattr", "hasattr", "delattr", "children", "named_children",
                      "_modules", "__dict__", "vars", "get_submodule"})


def _definition(layer):
    """``(file, statement, its target)`` of ``self.<attribute> = <call>`` when the owner's
    classes name the attribute nowhere else and reach submodules no other way, and no code in
    their files reaches it through another object (``self.attn.proj``); None when in doubt."""
    attribute = layer.attribute
    found = guard = None
    for filename in layer.files:
        tree = file_tree(filename)
        if tree is None:
            return None
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and node.value == attribute:
                return None  # getattr(model, "proj"), a key of a state dict
            if isinstance(node, ast.Attribute) and node.attr == attribute \
                    and not isinstance(node.ctx, ast.Store) and not _is_self(node.value):
                return None  # reached from outside its owner
        for owner in (n for n in ast.walk(tree)
                      if isinstance(n, ast.ClassDef) and n.name in layer.classes):
            never = _never_run(owner)
            # what ``__init__`` reads of the layer sets it up (``nn.init.zeros_(self.proj[0]
            # .weight)``): whether a forward calls it, the run said
            setup = _init_reads(owner, attribute)
            for node in ast.walk(owner):
                if id(node) in setup:
                    continue
                if id(node) in never:  # under ``if self.pos_emb and False:``: never read
                    if isinstance(node, ast.Attribute) and node.attr == attribute and guard is None:
                        guard = never[id(node)]
                    continue
                if isinstance(node, ast.Name) and node.id in _DYNAMIC:
                    return None
                if isinstance(node, ast.Attribute):
                    if node.attr in _DYNAMIC:
                        return None
                    if node.attr == attribute and not isinstance(node.ctx, ast.Store):
                        return None  # read somewhere: another path may call it
                if isinstance(node, (ast.Assign, ast.AnnAssign)):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    for target in targets:
                        if isinstance(target, ast.Attribute) and target.attr == attribute:
                            if isinstance(node.value, ast.Constant) and node.value.value is None:
                                continue  # ``self.pos_emb = None`` on the path without it
                            if not isinstance(node.value, ast.Call):
                                return None  # set to something else too (a shared layer)
                            if found is None:
                                found = (filename, node, ast.unparse(target))
    return None if found is None else (*found, guard)


def _init_reads(owner: ast.ClassDef, attribute: str) -> set[int]:
    """The ids of the reads of ``self.<attribute>`` in ``owner``'s ``__init__``."""
    found: set[int] = set()
    for item in owner.body:
        if isinstance(item, ast.FunctionDef) and item.name == "__init__":
            found.update(id(n) for n in ast.walk(item) if isinstance(n, ast.Attribute)
                         and n.attr == attribute and _is_self(n.value)
                         and not isinstance(n.ctx, ast.Store))
    return found


def _never_run(tree: ast.AST) -> dict[int, ast.If]:
    """The ids of the nodes of ``tree`` in a branch no run takes, each with its ``if``: the
    test and the body of an ``if`` whose test is false whatever is read (``if False:``, ``if
    0:``, ``if x and False:``)."""
    def false(test) -> bool:
        if isinstance(test, ast.Constant):
            return not test.value
        return isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) \
            and any(false(v) for v in test.values)

    found: dict[int, ast.If] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and false(node.test):
            for part in (node.test, *node.body):
                found.update((id(n), node) for n in ast.walk(part))
    return found


def _is_self(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"
