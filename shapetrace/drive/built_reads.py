"""Forward inputs read from the layer of the built module that forward first hands them to.

A name such as ``t_emb``, ``labels`` or ``h_BChw`` says nothing, and the constructor's own
code may size the layer that reads it from a value no name explains (``nn.Sequential(nn.SiLU(),
nn.Linear(t_emb_dim, out_channels))``). The module itself, built at the probe sizes on the meta
device (no memory, no values), knows: the first call in forward that takes the input as it came
(``self.t_emb_layers[0](t_emb)``) reaches a layer whose width is a number. Its kind gives the
input's shape:

- a linear map or a last-axis norm of width W: a vector per sample, (B, W), or (B, T, C) when W
  is the model's width and the module takes no images;
- a 1-D convolution of W channels: a signal (B, W, T); a 2-D one: an image (B, W, side, side),
  and so a 2-D batch or instance norm; a group norm of W channels: an image in a module that
  takes images, else a signal;
- an embedding of N entries: ids (B, T) below N (a class id per sample looks its row up all
  the same).

Activations, dropout and other layers without a width before it in a ``Sequential`` are passed
over; a module of the user's own, or anything unreadable, says nothing.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect

from ..base.specs import InputSpec
from .devices import on_meta
from .image_sides import IMAGE_SIDE, image_side
from .signals import takes_images
from .usage import _function_def, _tree



#: how many of the user's own modules an input is followed through to a layer of torch's
_DEPTH = 3


def spec_by_built(name: str, forward, model, dims, depth: int = _DEPTH,
                  side: int = IMAGE_SIDE, infer=None) -> InputSpec | None:
    """The spec of the input ``name`` read from the layer of ``model`` (built, on any device)
    that forward first hands it to; None when that is no layer of torch's with a width. An
    input handed to a module of the user's own (``self.norm1(x, s)``) is followed into that
    module's forward, as the parameter it is bound to there, and where no layer there says
    more, read as that module reads its own parameter checked alone (``infer``:
    ``infer.infer_inputs``: ``x_mark`` handed to an embedding of ``x``). ``side``: an image's."""
    import torch.nn as nn

    body = _function_def(_tree(getattr(forward, "__func__", forward)), "forward")
    if body is None or model is None:
        return None
    calls = sorted((node for node in ast.walk(body) if isinstance(node, ast.Call)
                    and _place(node, name) is not None), key=lambda n: (n.lineno, n.col_offset))
    for node in calls:
        layer = _reached(node.func, model)
        if layer is None:
            continue  # a helper or a function of torch's: read on, to the first layer
        place = _place(node, name)
        if not type(layer).__module__.startswith("torch.nn") \
                and not isinstance(layer, (nn.Sequential, nn.ModuleList)):
            if len(_roles(calls, name, model)) > 1:
                return None  # handed as queries to one module and as keys to another
            inner = _bound_name(layer, place) if depth > 1 else None
            spec = spec_by_built(inner, type(layer).forward, layer, dims, depth - 1, side, infer) \
                if inner is not None else None
            if spec is None and inner is not None and infer is not None:
                spec = _as_read_inside(type(layer), inner, dims, infer)
            return None if spec is None else dataclasses.replace(spec, name=name)
        if place != 0:
            return None  # a layer of torch's reads its input first; a second argument says little
        folded = _folded(name, layer, nn, side)
        if folded is not None:
            return folded
        layer = _first_sized(layer, nn)
        return None if layer is None else _spec(name, layer, nn, dims, takes_images(model), side)
    return None


def _as_read_inside(cls: type, name: str, dims, infer) -> InputSpec | None:
    """The spec ``cls``'s forward gives its own parameter ``name`` by its annotation or name,
    as when ``cls`` is checked alone; None when it reads none (or reads it as no tensor)."""
    try:
        specs = infer(cls, dims)
    except Exception:  # noqa: BLE001 - a forward whose inputs are not read says nothing
        return None
    return next((s for s in specs if isinstance(s, InputSpec) and s.name == name), None)


def _roles(calls, name: str, model) -> set:
    """The parameters the input ``name`` is bound to in the modules of the user's own that
    ``calls`` hand it to (one role, or several: no one reading)."""
    roles = set()
    for node in calls:
        layer = _reached(node.func, model)
        if layer is not None and not type(layer).__module__.startswith("torch.nn"):
            roles.add(_bound_name(layer, _place(node, name)))
    return roles


#: functions of one tensor that keep its shape, seen through on the way to a layer
_ELEMENTWISE = frozenset({"silu", "gelu", "relu", "sigmoid", "tanh", "mish", "elu", "leaky_relu",
                          "softplus", "swish"})


def _place(call: ast.Call, name: str) -> int | str | None:
    """Where ``call`` takes the input ``name`` as it came (or through an activation,
    ``self.linear(F.silu(t))``): its position, its keyword, or None."""
    for i, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            return None
        if _as_it_came(arg, name):
            return i
    for kw in call.keywords:
        if kw.arg is not None and _as_it_came(kw.value, name):
            return kw.arg
    return None


def _as_it_came(node: ast.expr, name: str) -> bool:
    while isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords \
            and isinstance(node.func, (ast.Attribute, ast.Name)) \
            and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id) in _ELEMENTWISE:
        node = node.args[0]
    return isinstance(node, ast.Name) and node.id == name


def _bound_name(layer, place: int | str) -> str | None:
    """The parameter of ``layer``'s forward that the argument at ``place`` is bound to."""
    try:
        params = [p for p in inspect.signature(type(layer).forward).parameters.values()][1:]
    except (TypeError, ValueError):
        return None
    if isinstance(place, str):
        return place if any(p.name == place for p in params) else None
    if place < len(params) and params[place].kind in (params[place].POSITIONAL_ONLY,
                                                      params[place].POSITIONAL_OR_KEYWORD):
        return params[place].name
    return None


def _reached(func: ast.expr, model):
    """The submodule ``self.a``, ``self.a.b`` or ``self.a[0]`` names in ``model``, or None."""
    path: list = []
    while True:
        if isinstance(func, ast.Subscript) and isinstance(func.slice, ast.Constant) \
                and isinstance(func.slice.value, int):
            path.append(func.slice.value)
            func = func.value
        elif isinstance(func, ast.Subscript) and isinstance(func.slice, ast.Name):
            path.append(0)  # self.layers[i] in a loop: the first, built as the others
            func = func.value
        elif isinstance(func, ast.Attribute):
            path.append(func.attr)
            func = func.value
        else:
            break
    if not (isinstance(func, ast.Name) and func.id == "self") or not path:
        return None
    found = model
    for step in reversed(path):
        try:
            found = found[step] if isinstance(step, int) else getattr(found, step)
        except (AttributeError, IndexError, KeyError, TypeError):
            return None
    import torch.nn as nn

    return found if isinstance(found, nn.Module) else None


#: layers without a width of their own that keep their input's shape (passed over in a Sequential)
_KEEPING = ("SiLU", "ReLU", "GELU", "Tanh", "Sigmoid", "LeakyReLU", "Mish", "ELU", "Softplus",
            "Dropout", "Identity", "Hardswish")


def _first_sized(layer, nn):
    for _ in range(8):
        if isinstance(layer, (nn.Sequential, nn.ModuleList)):
            children = list(layer.children())
            while children and type(children[0]).__name__ in _KEEPING \
                    and type(children[0]).__module__.startswith("torch.nn"):
                children = children[1:]
            if not children:
                return None
            layer = children[0]
            continue
        return layer if type(layer).__module__.startswith("torch.nn") else None
    return None


def _groups(side: str) -> list[list[str]] | None:
    """The axes of one side of an einops pattern, each a list of names (``(h p1)``: two)."""
    groups, inner = [], None
    for token in side.replace("(", " ( ").replace(")", " ) ").split():
        if token == "(":
            inner = []
        elif token == ")":
            if inner is None:
                return None
            groups.append(inner)
            inner = None
        elif inner is not None:
            inner.append(token)
        else:
            groups.append([token])
    return None if inner is not None else groups


def _folded(name: str, layer, nn, side: int) -> InputSpec | None:
    """The input of a ``Sequential`` that first rearranges it with an einops pattern that cuts
    patches (``'b c (h p1) (w p2) -> b (h w) (p1 p2 c)'``, then a layer of width
    ``p1 * p2 * c``): its first axis the batch, each axis cut into patches a multiple of the
    patch (``side`` when the patch divides it), the one axis left named by the layer after it
    (the channels: the width over the patch). None for any other pattern."""
    if not isinstance(layer, nn.Sequential) or len(layer) < 2:
        return None
    pattern, lengths = getattr(layer[0], "pattern", None), getattr(layer[0], "axes_lengths", None)
    if not isinstance(pattern, str) or "->" not in pattern:
        return None
    lengths = dict(lengths or ())
    left, right = (_groups(part) for part in pattern.split("->"))
    after = _first_sized(nn.Sequential(*list(layer)[1:]), nn)
    width = after.in_features if isinstance(after, nn.Linear) else \
        after.normalized_shape[0] if isinstance(after, nn.LayerNorm) and len(after.normalized_shape) == 1 \
        else None
    if not left or not right or width is None or len(left[0]) != 1 or len(left) < 3:
        return None
    free = [g[0] for g in left[1:] if len(g) == 1 and g[0] not in lengths]
    last = right[-1]
    known = 1
    for axis in last:
        known *= lengths.get(axis, 1)
    if len(free) != 1 or free[0] not in last or width % known:
        return None
    lengths[free[0]] = width // known  # the channels the patches' width leaves
    dims: list = ["B"]
    for group in left[1:]:
        unknown = [a for a in group if a not in lengths]
        size = 1
        for axis in group:
            size *= lengths.get(axis, 1)
        if len(unknown) > 1:
            return None
        dims.append(size * (max(1, side // size) if unknown else 1))
    return InputSpec(name, tuple(dims))


def _spec(name: str, layer, nn, dims, images: bool, side: int) -> InputSpec | None:
    if "Lazy" in type(layer).__name__ or isinstance(getattr(layer, "weight", None),
                                                    nn.parameter.UninitializedParameter):
        return None  # a lazy layer learns its width from its first input: it says nothing
    def width(size: int):
        return "C" if size == dims["C"] else size

    def vector(size: int) -> InputSpec:
        # a module of images reads a vector per sample (a timestep's or a class's embedding)
        if size == dims["C"] and not images:
            return InputSpec(name, ("B", "T", "C"))
        return InputSpec(name, ("B", width(size)))

    if isinstance(layer, nn.Linear):
        return vector(layer.in_features)
    if isinstance(layer, (nn.LayerNorm, getattr(nn, "RMSNorm", nn.LayerNorm))):
        shape = tuple(layer.normalized_shape or ())
        return vector(shape[0]) if len(shape) == 1 else None
    if isinstance(layer, nn.Conv1d):
        return InputSpec(name, ("B", width(layer.in_channels), "T"))
    if isinstance(layer, nn.Conv2d):
        return InputSpec(name, ("B", width(layer.in_channels), side, side))
    if isinstance(layer, (nn.BatchNorm2d, nn.InstanceNorm2d)):
        return InputSpec(name, ("B", width(layer.num_features), side, side))
    if isinstance(layer, nn.GroupNorm):  # channels first: an image's, or a signal's
        channels = width(layer.num_channels)
        return InputSpec(name, ("B", channels, side, side) if images else ("B", channels, "T"))
    if isinstance(layer, nn.Embedding):  # ids below the table's size
        high = None if layer.num_embeddings == dims["V"] else layer.num_embeddings
        return InputSpec(name, ("B", "T"), "long", high)
    return None


def inputs_by_built(module, init: dict | None, dims, infer) -> tuple[list, list[str]] | None:
    """``(specs, notes)`` of forward's inputs with the names nothing else explains read from
    the built module's layers (``infer``: ``infer.infer_inputs``): ``module`` an instance, or a
    class built with ``init`` on the meta device. None when it cannot be built there or an
    input stays unread."""
    import torch.nn as nn

    if isinstance(module, nn.Module):
        model, cls = module, type(module)
    elif init is not None:
        model, cls = built_on_meta(module, init), module
    else:
        return None
    if model is None:
        return None
    read: dict[str, InputSpec] = {}

    def by_built(name: str, forward):
        spec = spec_by_built(name, forward, model, dims, side=image_side(init or {}), infer=infer)
        if spec is not None:
            read[name] = spec
        return spec

    try:
        specs = infer(cls, dims, by_built=by_built)
    except Exception:  # noqa: BLE001 - still unread: the first error stands
        return None
    notes = [f"{spec.name} read as ({', '.join(str(d) for d in spec.dims)}"
             f"{',' if len(spec.dims) == 1 else ''}) from the layer "
             f"forward first hands it to; give --input {spec} (or another shape) to choose"
             for spec in read.values()]
    return specs, notes


def built_on_meta(cls: type, init: dict):
    """``cls(**init)`` built on the meta device (no memory, no values), or None when it cannot
    be built there."""
    if not inspect.isclass(cls):
        return None
    try:
        with on_meta():
            return cls(**init)
    except Exception:  # noqa: BLE001 - a constructor that cannot run on meta: nothing read
        return None
