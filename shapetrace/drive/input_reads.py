"""Forward inputs read from what the code does with them, where no annotation says.

- :func:`spec_from_name`: the spec a parameter's name gives (``x`` -> B, T, C; ``idx`` -> B, T
  long; ``context`` -> B, S, C; ``k`` beside ``q`` -> B, S, C).
- :func:`spec_by_receiver`: the spec the names of the parameters forward hands it to give
  (``self.cross(x, enc_out, enc_out)`` into ``forward(self, q, k, v)``).
- :func:`spec_by_layer`: the spec the first layer forward hands it to gives (``self.proj(seq)``
  with ``self.proj = nn.Linear(d_model, ...)``: (B, T, C)).
- :func:`value_input`: a forward argument that is no tensor (an offset, an optional state).
- rotary tables handed in, and the positions they are taken at: ``rotary_reads``.

All of it reads source (``ast``); nothing is run. Anything unreadable says nothing.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
from collections.abc import Mapping

from ..analysis.code import compared_with_none, demanded, never_read, only_tested, owner_class
from ..analysis.handed import handed, handed_levels
from ..base.names import (
    DATA_INPUTS,
    KEY_VALUE_INPUTS,
    OFFSET_INPUTS,
    MASK_INPUT,
    PADDING_INPUTS,
    QUERY_INPUTS,
    SIDE_INPUTS,
    SIZE_INPUTS,
    SOURCE_INPUTS,
    TIMESTEP_INPUTS,
    TIMESTEPS,
    TOKEN_INPUTS,
    dim_of_word,
    is_switch,
    size_of,
    special_token,
)
from ..base.specs import InputSpec, ValueInput
from .builtby import built_for
from .usage import _function_def, _reading_init, _tree, meaning_by_use


def spec_from_name(name: str, all_names: set[str]) -> InputSpec | None:
    """The spec an input's name gives (``x`` -> B,T,C; ``idx`` -> B,T long), read without the
    trailing underscore that keeps a name off a builtin or a keyword (``input_``, ``lambda_``)."""
    spec = _spec_from_word(_word(name), {_word(n) for n in all_names})
    return spec if spec is None or spec.name == name else dataclasses.replace(spec, name=name)


def as_tokens(specs: list[InputSpec], any_name: bool = False) -> list[InputSpec] | None:
    """``specs`` with the name-inferred embeddings (``src=B,T,C``) as token ids instead
    (``src=B,T:long``), or None when there is none: a name such as ``src``, ``x`` or ``tgt``
    holds ids in one model and vectors in another, and an embedding that was handed floats
    says which. ``any_name``: every input guessed as vectors, whatever its name (read only
    where an embedding refuses the floats)."""
    out, changed = [], False
    for spec in specs:
        if (isinstance(spec, InputSpec) and spec.dtype == "float" and spec.dims in (("B", "T", "C"), ("B", "S", "C"),
                                                    ("T", "B", "C"), ("S", "B", "C"))
                and (any_name or _word(spec.name) in DATA_INPUTS | SOURCE_INPUTS)):
            spec, changed = InputSpec(spec.name, spec.dims[:2], "long"), True
        elif any_name and isinstance(spec, InputSpec) and spec.dtype == "float" \
                and spec.dims in (("B", "T"), ("B", "S")) and spec.mask is None:
            # positions annotated as floats (``Float[Tensor, "batch seq"]`` on token ids): ids
            # where a table refuses them as floats
            spec, changed = InputSpec(spec.name, spec.dims, "long"), True
        out.append(spec)
    return out if changed else None


def _word(name: str) -> str:
    """``name`` without the trailing underscore that keeps it off a builtin (``input_``), and
    the queries, keys and values of the formula's capitals (``Q``, ``K``, ``V``) as their words."""
    word = name.rstrip("_") or name
    return word.lower() if word in ("Q", "K", "V") else word


def _spec_from_word(name: str, all_names: set[str]) -> InputSpec | None:
    if name in TOKEN_INPUTS:
        return InputSpec(name, ("B", "T"), "long")
    if name in SOURCE_INPUTS:
        return InputSpec(name, ("B", "S", "C"))
    if name in PADDING_INPUTS and all_names & TOKEN_INPUTS:
        return InputSpec(name, ("B", "T"), "long", 2)
    if name in KEY_VALUE_INPUTS and all_names & QUERY_INPUTS:
        return InputSpec(name, ("B", "S", "C"))
    if name in DATA_INPUTS:
        return InputSpec(name, ("B", "T", "C"))
    if name in TIMESTEP_INPUTS and (all_names & DATA_INPUTS or all(
            n == name or is_switch(n) or n in ("dtype", "device") for n in all_names)):
        return timestep_spec(name)  # beside the data, or alone (a timestep's embedding,
        # use_fp16=False or the dtype to embed in beside it)
    return None


def timestep_spec(name: str) -> InputSpec:
    """A diffusion timestep per sample (``forward(self, x, t)``): (B,) integers."""
    return InputSpec(name, ("B",), "long", TIMESTEPS)


def spec_by_receiver(name: str, forward, owner: type | None) -> InputSpec | None:
    """The input ``name`` no name of its own explains, read from the parameters of the user's
    code forward hands it to (``self.cross(x, e_outputs, e_outputs, mask)`` into ``forward(self,
    q, k, v, mask)``: keys and values, (B, S, C)): the spec the nearest receivers' names give,
    when they agree (``layer(src_seq)`` into a block's ``forward(self, x)``), else when every
    receiver whose name gives one agrees; None otherwise. One argument handed on as the queries
    and again as the keys of one call (``self.attn(h, h, h)``) is one sequence, T long."""
    levels = handed_levels(forward, name, owner, built=_built_class, restated=_copied)
    for depth in range(1, len(levels)):  # the nearest receivers whose names say something
        nearest = _specs(name, levels[depth])
        if nearest is None:
            return None
        if len(nearest) == 1:
            return next(iter(nearest))
        if len(nearest) > 1:
            as_queries = {dataclasses.replace(spec, dims=tuple("T" if d == "S" else d for d in spec.dims))
                          for spec in nearest}
            callers = [r for level in levels[:depth] for r in level]
            if len(as_queries) == 1 and any(_attends_to_itself(func, there) for func, there in callers):
                return next(iter(as_queries))
            break
    found = _specs(name, [r for level in levels[1:] for r in level])
    return next(iter(found)) if found is not None and len(found) == 1 else None


def _specs(name: str, receivers) -> set[InputSpec] | None:
    """The specs the names of ``receivers`` (function, parameter) give; None when a receiver
    cannot be read."""
    found: set[InputSpec] = set()
    for func, there in receivers:
        try:
            params = {q for q in inspect.signature(func).parameters if q != "self"}
        except (TypeError, ValueError):
            return None
        if there in DATA_INPUTS and func.__name__ != "forward":
            continue  # a helper's x or input (nonlinearity(x)) says nothing of what it is handed
        spec = spec_from_name(there, params)
        if spec is None and func.__name__ == "forward":  # token ids into the receiver's embedding
            spec = spec_by_layer(there, func, owner_class(func))  # (a width is read on the built
            spec = spec if spec is not None and spec.dtype == "long" else None  # module, exactly)
        if spec is not None:
            found.add(dataclasses.replace(spec, name=name))
    return found


def _attends_to_itself(func, name: str) -> bool:
    """Whether ``func`` hands ``name`` on as the first argument of a call and again as a later
    one (``self.attention_self(dec_inp, dec_inp, dec_inp, mask)``): queries and keys of one
    sequence."""
    func = getattr(func, "__func__", func)
    body = _function_def(_tree(func), getattr(func, "__name__", "forward"))
    if body is None:
        return False
    for node in ast.walk(body):
        if isinstance(node, ast.Call) and len(node.args) >= 2 and _copied(node.args[0], {name}) \
                and any(_copied(a, {name}) for a in node.args[1:]):
            return True
    return False


#: methods that return a copy of a tensor, its values unchanged
_COPIES = frozenset({"clone", "contiguous", "detach", "float"})


def _copied(node: ast.expr, names: set[str]) -> bool:
    """Whether ``node`` is one of ``names``, or a copy of one (``target_seq.clone()``)."""
    if isinstance(node, ast.Name):
        return node.id in names
    return isinstance(node, ast.Call) and not node.args and not node.keywords \
        and isinstance(node.func, ast.Attribute) and node.func.attr in _COPIES \
        and _copied(node.func.value, names)


def none_by_receiver(name: str, forward, owner: type | None) -> ValueInput | None:
    """None for an input forward only hands on (every read of it is an argument of a call)
    to code that tests it with ``is None`` and does not demand it (``self.inner(q, k, v,
    attn_mask)`` into ``if attn_mask is None: ...``): a value the code it lands in allows."""
    body = _function_def(_tree(getattr(forward, "__func__", forward)), "forward")
    if body is None:
        return None
    handed_on = {id(a) for node in ast.walk(body) if isinstance(node, ast.Call)
                 for a in (*node.args, *(k.value for k in node.keywords))}
    reads = [n for n in ast.walk(body) if isinstance(n, ast.Name) and n.id == name
             and isinstance(n.ctx, ast.Load)]
    if not reads or any(id(n) not in handed_on for n in reads):
        return None
    receivers = list(handed(forward, name, owner, built=_built_class))[1:]
    if any(demanded(func, there) for func, there in receivers):
        return None
    tested = any(compared_with_none(func, there) for func, there in receivers)
    return ValueInput(name, None) if tested else None


def lengths_input(name: str, dims) -> InputSpec | None:
    """The true lengths of a padded batch (``lengths``, ``src_lens``, ``input_lengths``,
    ``key_value_sequence_lengths``): one per sample, every sequence whole (T), so that nothing
    is padding and no row is masked out entirely."""
    lowered = name.lower()
    if not (lowered.endswith("lengths") or lowered.endswith("_lens") or lowered == "lens"):
        return None
    return InputSpec(name, ("B",), "long", high=dims["T"] + 1, low=dims["T"])


#: torch's layers that read their input's last axis as a width: the parameter that sizes it
#: a 1-D convolution's input is first guessed (B, T, C) as well: the convolution refuses it,
#: and it is read channels first (``signals.signal_reading``) with the other sequences
_WIDTH_LAYERS = {"Linear": "in_features", "LayerNorm": "normalized_shape", "RMSNorm": "normalized_shape",
                 "Conv1d": "in_channels"}


def spec_by_layer(name: str, forward, owner: type | None) -> InputSpec | None:
    """The input ``name`` no name explains, read from the first layer forward hands it to as
    it came (``self.cast(seq)``, ``self.norm(seq)``): (B, T, C) when the constructor built that
    layer (``self.cast = nn.Linear(d_model, ...)``) with a width from an argument that states or
    is used as the model width; token ids (B, T) into an ``nn.Embedding``. None otherwise."""
    init = _reading_init(owner) if isinstance(owner, type) else None
    body = _function_def(_tree(getattr(forward, "__func__", forward)), "forward")
    init_body = _function_def(_tree(init), "__init__") if init is not None else None
    if body is None or init_body is None:
        return None
    built = _built_in(_init_bodies(owner) or [init_body], _layers_built)
    params = [a.arg for a in init_body.args.args[1:]]
    positional = init_body.args.args[1:]
    defaulted = {a.arg for a, d in zip(positional[len(positional) - len(init_body.args.defaults):],
                                       init_body.args.defaults)
                 if not (isinstance(d, ast.Constant) and d.value is None)}
    params = [p for p in params if p not in defaulted]  # a width of its own: the built layer says
    calls = sorted((node for node in ast.walk(body)
                    if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Name)
                    and node.args[0].id == name), key=lambda n: (n.lineno, n.col_offset))
    for node in calls:
        attr = _self_attribute(node.func)
        if attr is None:
            continue  # torch.equal(seq, other), a helper: read on, to the first layer
        layer = built.get(attr)
        if layer is None:
            return None
        kind, width = layer
        if kind == "Embedding":  # a table of the vocabulary: tokens; of anything else, the built
            vocabulary = isinstance(width, ast.Name) and (
                size_of(width.id, constructor=True) == "V"  # or a count read as one by use:
                or owner is not None and meaning_by_use(owner, width.id) == "V")  # n_items
            return InputSpec(name, ("B", "T"), "long") if vocabulary else None  # layer says
        if isinstance(width, ast.Name) and width.id in params and owner is not None and (
                size_of(width.id, constructor=True) == "C" or meaning_by_use(owner, width.id) == "C"):
            return InputSpec(name, ("B", "T", "C"))
        return None
    return None


def _init_bodies(owner: type | None) -> list:
    """The ``__init__`` definitions of ``owner`` and of its bases of the user's code, the class
    itself first (a subclass that calls ``super().__init__`` builds its layers there)."""
    from ..analysis.code import own_init

    if not isinstance(owner, type):
        return []
    found = []
    for klass in owner.__mro__:
        if (klass.__module__ or "").startswith(("torch", "builtins")):
            break
        init = own_init(klass)
        body = _function_def(_tree(init), "__init__") if init is not None else None
        if body is not None:
            found.append(body)
    return found


def _built_in(bodies: list, read) -> dict:
    """What ``read`` finds in each constructor of ``bodies`` (a class's first, then its bases'),
    a subclass's over its bases'."""
    built: dict = {}
    for body in reversed(bodies):
        built.update(read(body))
    return built


def _self_calls(init_body: ast.AST):
    """``(attr, call)`` for each ``self.attr = <call>(...)`` in a constructor."""
    for node in ast.walk(init_body):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.value, ast.Call) \
                and (attr := _self_attribute(node.targets[0])) is not None:
            yield attr, node.value


def _torch_layers_built(init_body: ast.AST) -> dict[str, str]:
    """``self.attr = nn.Layer(...)`` in the constructor: attr -> the layer's name in ``nn``."""
    out: dict[str, str] = {}
    for attr, call in _self_calls(init_body):
        if isinstance(call.func, ast.Attribute):
            out[attr] = call.func.attr if attr not in out else ""
    return out


def _built_class(cls: type, param: str) -> type | None:
    """The module class the project's code builds ``cls``'s argument ``param`` as, or None."""
    found = built_for(cls, param)
    return found.cls if found is not None and found.count is None else None


def _self_attribute(func: ast.expr) -> str | None:
    """``x`` of ``self.x`` or ``self.x[i]``."""
    if isinstance(func, ast.Subscript):
        func = func.value
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
        return func.attr
    return None


def _layers_built(init_body: ast.AST) -> dict[str, tuple[str, ast.expr | None]]:
    """``self.attr = nn.Linear(width, ...)`` in the constructor: attr -> (layer, width)."""
    out: dict[str, tuple[str, ast.expr | None]] = {}
    for attr, call in _self_calls(init_body):
        func = call.func
        kind = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if kind not in (*_WIDTH_LAYERS, "Embedding"):
            continue
        width = next((k.value for k in call.keywords if k.arg == _WIDTH_LAYERS.get(kind)), None)
        if width is None and call.args:
            width = call.args[0]
        out[attr] = (kind, width) if attr not in out else ("", None)  # built twice: unread
    return out


def _plain_tensor(hint) -> bool:
    """No annotation, or one that says only "a tensor" (``Tensor``, ``Optional[Tensor]``)."""
    if hint is None:
        return True
    import torch

    if hint is torch.Tensor or hint in ("Tensor", "torch.Tensor"):
        return True
    args = getattr(hint, "__args__", None) or ()
    return bool(args) and all(a is torch.Tensor or a is type(None) for a in args)


def value_input(p: inspect.Parameter, hint, forward) -> ValueInput | None:
    """A forward argument that is no tensor: an integer offset into the sequence
    (``start_pos: int``) is 0, a ``dtype`` float32 and a ``device`` the CPU; an input whose name
    says nothing that forward tests with ``is None`` (``if last_attn is None: last_attn =
    ...``) is None, and so is one its code never reads; one it only tests for truth (``if train
    and ...``) is False."""
    if p.name in OFFSET_INPUTS and hint in (None, int, "int"):
        return ValueInput(p.name, 0)
    if p.name in ("dtype", "device") and p.default is p.empty:  # where and in what to compute
        import torch

        return ValueInput(p.name, torch.float32 if p.name == "dtype" else "cpu")
    if never_read(forward, p.name):
        return ValueInput(p.name, None)  # an argument its code ignores
    if _plain_tensor(hint) and compared_with_none(forward, p.name) and not demanded(forward, p.name):
        return ValueInput(p.name, None)
    if hint in (None, bool, "bool") and only_tested(forward, p.name):
        return ValueInput(p.name, False)  # a switch (``if train and ...``): off, as in eval
    if _optional_number(hint):  # ``subbatch_size: Optional[int]``: None, as its type allows
        return ValueInput(p.name, None)
    return None


def _optional_number(hint) -> bool:
    """Whether an annotation takes None or plain numbers only (``Optional[int]``)."""
    import typing

    args = set(typing.get_args(hint))
    return type(None) in args and bool(args - {type(None)}) and args - {type(None)} <= {int, float, bool}


def number_input(p: inspect.Parameter, hint) -> ValueInput | None:
    """A required forward argument whose annotation takes a plain number beside a tensor
    (``timestep: Union[torch.Tensor, float, int]``): the number 1, which the annotation allows
    and no size of the data can be mistaken for."""
    import typing

    import torch

    args = set(typing.get_args(hint))
    if p.default is p.empty and torch.Tensor in args and args & {int, float}:
        return ValueInput(p.name, 1)
    return None


def size_input(p: inspect.Parameter, hint, forward, names: set[str], dims) -> ValueInput | None:
    """A forward argument that is a size of the data, by its name, when forward uses it as a
    number (``torch.arange(L)``, ``x.reshape(B, H, W, C)``) and never as a tensor: ``L`` the
    sequence length T, ``B`` the batch size; a height and a width given together one row of T,
    ``H=1, W=T``, which fits tokens of any length as an image of H*W of them."""
    if hint not in (None, int, "int") or p.default not in (p.empty, None) \
            or (p.default is None and compared_with_none(forward, p.name)):
        return None  # a default of its own, or None that forward tests for
    size = None
    if p.name in SIZE_INPUTS:
        size = dims[SIZE_INPUTS[p.name]]
    for height, width in SIDE_INPUTS:
        if {height, width} <= names and p.name in (height, width):
            size = 1 if p.name == height else dims["T"]
    if size is None or not (hint in (int, "int") or used_as_number(forward, p.name)):
        return None
    return ValueInput(p.name, size)


def used_as_number(forward, name: str) -> bool:
    """Whether forward uses its argument ``name`` as a number (in arithmetic, a comparison, or
    as an argument of a call) and never as a tensor (no attribute, method or index of it, and
    not handed to a layer the module holds: ``self.affine(w)``, where ``affine`` is no method
    of the class)."""
    body = _function_def(_tree(getattr(forward, "__func__", forward)), "forward")
    if body is None:
        return False
    cls = owner_class(forward)
    number = False
    for node in ast.walk(body):
        if isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(node.value, ast.Name) \
                and node.value.id == name:
            return False  # L.shape, L.view(...), L[0]: a tensor
        operands = []
        if isinstance(node, ast.BinOp):
            operands = [node.left, node.right]
        elif isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
        elif isinstance(node, ast.Call):
            operands = [*node.args, *(kw.value for kw in node.keywords)]
            if cls is not None and _held_layer(node.func, cls) \
                    and any(isinstance(o, ast.Name) and o.id == name for o in operands):
                return False
        elif isinstance(node, (ast.Tuple, ast.List)):
            operands = list(node.elts)
        number |= any(isinstance(o, ast.Name) and o.id == name for o in operands)
    return number


def _held_layer(func: ast.expr, cls: type) -> bool:
    """Whether a call's function is ``self.<name>`` where the class defines no ``<name>``: a
    layer the module holds (set in its constructor), not one of its methods."""
    return isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
        and func.value.id == "self" and not hasattr(cls, func.attr)


def special_ids(init, given: Mapping[str, object]) -> int:
    """One more than the largest special token id (``pad_idx=0``, ``sos_idx=1``) shapetrace
    chose for the constructor, or 0."""
    ids = [value for key, value in (init or {}).items()
           if key not in given and isinstance(value, int) and special_token(key) == value]
    return max(ids) + 1 if ids else 0


def above(specs, low: int) -> tuple:
    """Integer inputs drawn from ``low`` up (token ids above the special ones)."""
    return tuple(dataclasses.replace(s, low=low)
                 if isinstance(s, InputSpec) and s.dtype in ("long", "int") and s.high is None
                 else s for s in specs)


def spec_by_unpacking(name: str, forward, depth: int = 2) -> InputSpec | None:
    """An input no name explains whose sizes forward unpacks: a tensor with the axes the
    unpacked names say (``B, H, T, d = y.shape``: (B, H, T, d)), or, when they do not all name
    a dim (``b, c, t, h, w = video.shape``), guessed as vectors (B, T, C) for the readings of
    its axes to take up (an image, a video, fewer axes), as a guess from a name would be. An
    input forward hands on whole to a method of its class (``return self.forecast(x_enc,
    ...)``) is read in that method too."""
    cls = owner_class(forward)
    for func, there in handed(forward, name, cls, depth=depth):  # forward itself first
        if func is forward or func is getattr(forward, "__func__", None) \
                or getattr(cls, func.__name__, None) is func:  # a method of its class
            spec = _unpacked(there, _tree(func))
            if spec is not None:
                return dataclasses.replace(spec, name=name)
    return None


def _unpacked(name: str, tree) -> InputSpec | None:
    for node in ast.walk(tree) if tree is not None else ():
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Tuple) and len(node.targets[0].elts) >= 2):
            continue
        value = node.value
        if isinstance(value, ast.Call) and not value.args:  # x.size()
            value = value.func
        if isinstance(value, ast.Attribute) and value.attr in ("shape", "size") \
                and isinstance(value.value, ast.Name) and value.value.id == name:
            words = [e.id if isinstance(e, ast.Name) else "" for e in node.targets[0].elts]
            named = [dim_of_word(w) for w in words]
            if all(named) and len(set(named)) == len(named) and named[0] == "B":
                return InputSpec(name, tuple(named))
            return InputSpec(name, ("B", "T", "C"))
    return None


def spec_by_first_use(name: str, forward) -> InputSpec | None:
    """An input no name explains whose first use in forward gives each sample one value a new
    axis (``number.unsqueeze(1) * self.freqs``, ``t[:, None]``, ``t.view(t.size(0), 1)``): a
    value per sample, (B,), made as a diffusion timestep is. None for any other first use."""
    tree = _tree(forward)
    if tree is None or MASK_INPUT.search(name):  # a mask given an axis is no timestep
        return None
    parents = {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    reads = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == name
             and isinstance(n.ctx, ast.Load)]
    if not reads:
        return None
    first = min(reads, key=lambda n: (n.lineno, n.col_offset))
    use = parents.get(id(first))
    call = parents.get(id(use)) if isinstance(use, ast.Attribute) else None
    if isinstance(call, ast.Call) and call.func is use and _one_more_axis(use.attr, call.args):
        return timestep_spec(name)
    if isinstance(use, ast.Subscript) and use.value is first:
        parts = use.slice.elts if isinstance(use.slice, ast.Tuple) else [use.slice]
        kinds = ["none" if isinstance(p, ast.Constant) and p.value is None
                 else "all" if isinstance(p, ast.Slice) and p.lower is p.upper is p.step is None
                 else "other" for p in parts]
        if kinds[:1] == ["all"] and "other" not in kinds and kinds.count("all") == 1 \
                and "none" in kinds:
            return timestep_spec(name)  # t[:, None], t[:, None, None, None]
    return None


def spec_like_sibling(name: str, forward, specs) -> InputSpec | None:
    """An input no name explains that forward combines, as it came, with an input read already
    (``specs``) elementwise (``x + res``, ``x - res``) or side by side along the features
    (``torch.cat((x, res), dim=-1)``): a value of that input's shape, (``res`` beside ``x``:
    a residual). None for any other use."""
    tree = _tree(forward)
    known = {s.name: s for s in specs if isinstance(s, InputSpec) and s.dtype == "float"}
    if tree is None or not known:
        return None
    for node in ast.walk(tree):
        pairs: list = []
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
            pairs = [(node.left, node.right), (node.right, node.left)]
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "cat" and node.args \
                and isinstance(node.args[0], (ast.Tuple, ast.List)) and _last_axis(node):
            parts = node.args[0].elts
            pairs = [(a, b) for a in parts for b in parts if a is not b]
        for mine, other in pairs:
            if isinstance(mine, ast.Name) and mine.id == name and isinstance(other, ast.Name) \
                    and other.id in known and other.id != name:
                return dataclasses.replace(known[other.id], name=name)
    return None


def _last_axis(call: ast.Call) -> bool:
    """Whether a ``torch.cat`` call joins along the last axis (``dim=-1``)."""
    dim = next((k.value for k in call.keywords if k.arg == "dim"), call.args[1] if len(call.args) > 1 else None)
    return isinstance(dim, ast.UnaryOp) and isinstance(dim.op, ast.USub) \
        and isinstance(dim.operand, ast.Constant) and dim.operand.value == 1


def _one_more_axis(method: str, args: list[ast.expr]) -> bool:
    """Whether ``x.method(*args)`` on a vector gives it a trailing axis of one: ``unsqueeze(1)``,
    ``unsqueeze(-1)``, ``view(n, 1)``, ``reshape(-1, 1)``."""
    numbers = [a.value if isinstance(a, ast.Constant) else
               -a.operand.value if isinstance(a, ast.UnaryOp) and isinstance(a.op, ast.USub)
               and isinstance(a.operand, ast.Constant) else None for a in args]
    if method == "unsqueeze":
        return numbers in ([1], [-1])
    return method in ("view", "reshape") and len(args) == 2 and numbers[1] == 1 \
        and numbers[0] in (-1, None)
