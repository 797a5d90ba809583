"""Inferring what to build and what to feed it from the module's own code.

``infer_init(cls, dims)``: constructor keyword arguments from their names (``n_embd`` -> C,
``num_heads`` -> H, ``dropout`` -> 0.0: the vocabulary of ``base.names``), a config argument
made by a library style's adapter (``styles``). ``infer_inputs(cls, dims)``: forward's inputs
from its jaxtyping annotations, else its parameter names (``x`` -> B, T, C; ``idx`` -> token
ids), time-first when the forward's author says so (``layout``). Every size is a probe size, so
the trace can name each axis.
"""

from __future__ import annotations

import difflib
import inspect
import types
import weakref
from collections.abc import Callable, Mapping

import torch

from ..analysis.code import compared_with_none, demanded, never_read, only_switched, unpacked_into
from ..base.compat import absent_gpu
from ..base.errors import TargetError, UsageError, one_line
from ..base.names import (
    CAUSAL_FLAGS,
    CONFIG,
    DATA_INPUTS,
    DIM_MEANINGS,
    DIM_NAMES,
    DROPOUT,
    FFN,
    KV_HEADS,
    LAYER_INDEX,
    LAYER_INDICES,
    counts_layers,
    MASK_INPUT,
    OUTPUT_SIZES,
    SWITCH_DEFAULTS,
    TIMESTEP_INPUTS,
    UNSET_SIDES,
    is_switch_param,
    size_of,
    special_token,
    unprefixed,
    number_of,
    field_size,
)
from ..base.source import class_namespace, user_frame
from ..base.specs import InputSpec, ValueInput, resolve_init
from ..naming.hints import forward_hints, tensor_annotation
from .annotated import spec_from_annotation
from .torch_defaults import torch_default, torch_default_for_none
from .param_types import annotated_fields, int_tuple_length, none_allowed
from .asks import mask_axes
from .builtby import built_for, named_by_callers, passed_for, splatted_for
from .passed_read import note_filled, unset_fields_passed
from .docshapes import documented_input, documented_size
from .init_reads import BY_USE, per_stage, read_for, staged_heads
from .rotary_reads import complex_rotation_by_use, rotary_input
from .input_reads import (lengths_input, none_by_receiver, number_input, size_input, spec_by_layer,
                          spec_by_first_use, spec_by_unpacking, spec_like_sibling,
                          spec_by_receiver, spec_from_name, timestep_spec, value_input)
from .layout import swapped as _swapped
from .torch_reads import spec_by_torch_layer
from .masks import optional_mask, required_mask
from .einsum_reads import spec_by_einsum
from .layout import batch_first, code_layout, time_first
from .styles import annotated_config, config_source
from .kwargs_read import kwargs_base
from .config_fields import (ReadConfig, called, equal_fields, fields_read, read_as_object, same_named,
                            value_by_use)
from .usage import CHOSEN, DEVICE, DIVISOR, KERNEL, LAYER_COUNT, OUTPUT_FACTOR, handed_init, inherited_layer_size, slice_step, \
    meaning_by_use, without_self

# Inferring forward inputs ---------------------------------------------------------------------

def infer_inputs(cls_or_forward: type | Callable, dims: Mapping[str, int], *,
                 by_built: Callable | None = None) -> list[InputSpec]:
    """The inputs to pass to forward, in its positional order.

    Each parameter is read from its jaxtyping annotation (``Float[Tensor, "B T C"]``) when it
    has one, else from its name (``x`` -> B,T,C; ``idx`` -> B,T long; ``context`` -> B,S,C).
    Parameters with defaults are left out unless annotated with a tensor type; masks with
    defaults are always left out. Inference stops at the first parameter left out, so the list
    can be passed positionally. ``by_built(name, forward)``: a last reading, from the built
    module's layers (``built_reads``).
    """
    forward, owner = _forward_of(cls_or_forward)
    try:
        sig = inspect.signature(forward)
    except (TypeError, ValueError):
        raise TargetError(f"cannot read the signature of {owner}.forward") from None
    params = [p for p in sig.parameters.values()
              if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    if params and params[0].name == "self" and not inspect.ismethod(forward):
        params = params[1:]
    variadic = [("*" if p.kind is p.VAR_POSITIONAL else "**") + p.name
                for p in sig.parameters.values() if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    if variadic and not any(p.default is p.empty for p in params):
        raise UsageError(f"cannot infer the inputs of {owner}: its forward takes "
                         f"{'/'.join(variadic)}; give each input in order with "
                         f"--input NAME=DIMS, e.g. --input x=B,T,C")
    hints = forward_hints(forward, params)
    names = {p.name for p in params}
    klass = cls_or_forward if isinstance(cls_or_forward, type) else None

    specs: list[InputSpec] = []
    missing: list[str] = []
    suggestions: list[str] = []
    for p in params:
        annotation = tensor_annotation(hints.get(p.name))
        has_default = p.default is not p.empty and not (p.default is None and demanded(forward, p.name))
        if has_default and p.default is None and p.name in TIMESTEP_INPUTS and names & DATA_INPUTS:
            specs.append(timestep_spec(p.name))  # forward(x, t=None): the timestep its code reads
            suggestions.append(str(specs[-1]))
            continue
        if has_default and p.default is None and annotation is None \
                and (size := size_input(p, hints.get(p.name), forward, names, dims)) is not None:
            specs.append(size)  # forward(x, seq_len=None) whose code compares it as a number
            suggestions.append(str(size))
            continue
        if has_default and (annotation is None or MASK_INPUT.search(p.name)):
            mask = optional_mask(p.name, forward, specs, klass)
            if mask is None:
                break
            specs.append(mask)  # its code runs: a mask of the meaning forward reads in it
            suggestions.append(str(mask))
            continue
        if annotation is not None:
            spec = spec_from_annotation(p.name, annotation, dims, owner)
        else:  # a parameter annotated as a number is never a tensor (h: int beside w: int)
            sized = size_input(p, hints.get(p.name), forward, names, dims)
            number = hints.get(p.name) in (int, "int")
            spec = (number and sized) \
                or documented_input(p.name, forward, klass, dims, spec_from_name(p.name, names)) \
                or required_mask(p.name, forward, specs, klass) \
                or spec_by_torch_layer(p.name, forward, klass) \
                or value_input(p, hints.get(p.name), forward) or none_by_receiver(p.name, forward, klass) \
                or lengths_input(p.name, dims) \
                or rotary_input(p.name, names, dims) or complex_rotation_by_use(p.name, forward, klass, dims) \
                or sized or spec_by_receiver(p.name, forward, klass) or spec_by_layer(p.name, forward, klass) \
                or (by_built(p.name, forward) if by_built is not None else None) \
                or number_input(p, hints.get(p.name)) or spec_by_unpacking(p.name, forward) \
                or spec_by_einsum(p.name, forward, specs) \
                or spec_by_first_use(p.name, forward) or spec_like_sibling(p.name, forward, specs)
        if spec is None:
            missing.append(p.name)
            suggestions.append(str(InputSpec(p.name, mask_axes(forward, p.name), "bool"))
                               if MASK_INPUT.search(p.name)
                               else f"{p.name}=...")
        elif isinstance(spec, ValueInput):
            specs.append(spec)
            suggestions.append(f"{p.name}=...")
        else:
            if annotation is None and time_first(forward, [q.name for q in params],
                                                   cls_or_forward if isinstance(cls_or_forward, type) else None):
                spec = _swapped(spec)
            elif annotation is None and tuple(getattr(spec, "dims", ()))[:2] in (("T", "B"), ("S", "B")) \
                    and code_layout(forward, [q.name for q in params]) == {"batch-first"}:
                spec = batch_first(spec)  # a docstring's time-first shape the code's own reads outrank
            specs.append(spec)
            suggestions.append(str(spec))
    if missing:
        args = " ".join(f"--input {s}" for s in suggestions)
        which = ", ".join(repr(m) for m in missing)
        raise UsageError(f"cannot infer forward input{'s' if len(missing) > 1 else ''} {which} of "
                         f"{owner}: give every input in forward's order, e.g. {args}")
    return specs


def _forward_of(obj) -> tuple[Callable, str]:
    if isinstance(obj, type):
        forward = getattr(obj, "forward", None)
        owner = obj.__qualname__
        if forward is None or getattr(forward, "__name__", "") == "_forward_unimplemented":
            raise TargetError(f"{owner} defines no forward() method")
        return forward, owner
    if not inspect.isroutine(obj) and callable(getattr(obj, "forward", None)):
        obj = obj.forward  # a module instance
    owner = getattr(obj, "__qualname__", None) or type(obj).__qualname__
    owner = owner.rsplit(".forward", 1)[0] if owner.endswith(".forward") else owner
    return obj, owner


# Inferring constructor arguments --------------------------------------------------------------


def infer_init(cls: type, dims: Mapping[str, int], *,
               given: Mapping[str, object] | None = None,
               notes: list[str] | None = None) -> dict[str, object]:
    """Keyword arguments that build ``cls`` at the probe sizes ``dims``.

    Widths, heads, head sizes, lengths and vocabulary sizes come from parameter names (see
    SPEC section 4); dropout is 0.0 so the module is deterministic; other parameters with
    defaults keep them; a dtype nothing gives is the default one. ``given`` (``--init`` or a
    config's ``init``) takes precedence; its dim names are resolved. A config argument
    (``config``, ``cfg``: ``base.names.CONFIG``, or annotated with a config class) is made by
    the first library style that knows it (``styles``)."""
    given = resolve_init(given or {}, dims)
    owner = next((k.__qualname__ for k in cls.__mro__ if "<locals>" not in k.__qualname__),
                 cls.__qualname__)  # a class a decorator made in a function: the one it wraps
    try:
        handed = handed_init(cls)  # __init__(self, *args, **kwargs) handing all on to its base
        sig = inspect.signature(cls) if handed is None else without_self(handed)
    except (TypeError, ValueError):
        return dict(given)
    params = [p for p in sig.parameters.values()
              if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    takes_kwargs = any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())
    known = {p.name for p in params}
    for key in given:
        if key not in known and not takes_kwargs:
            close = difflib.get_close_matches(key, sorted(known), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f"; it takes {', '.join(sorted(known)) or 'none'}"
            raise UsageError(f"--init: {owner}() has no argument {key!r}{hint}")

    out: dict[str, object] = {}
    missing: list[str] = []
    beside: dict[str, object] = {}  # the other literals of a project's call a value came from
    handed_on = kwargs_base(cls) if takes_kwargs else None
    if handed_on is not None:  # Encoder(**kwargs) -> super().__init__(causal=False, **kwargs)
        base, set_there = handed_on
        try:
            base_params = [p for p in inspect.signature(base).parameters.values()
                           if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
                           and p.name not in set_there and p.name not in known]
        except (TypeError, ValueError):
            base_params = []
        params += [p for p in base_params
                   if p.default is p.empty or _infer_argument(p, dims) != p.default]
    elif takes_kwargs and not params and not issubclass(cls, torch.nn.Module):
        params = annotated_fields(cls)  # ModelArgs(**kwargs) setting its annotated fields
    for p in params:
        if p.name in given:
            value = given[p.name]
            if isinstance(value, Mapping):  # cfg.n_embd=C, or a nested table: some fields
                value = _config_with(cls, p, dims, value)
            out[p.name] = value
            continue
        value = MISSING if read_as_object(cls, p) else _infer_argument(p, dims)  # ``h.width``
        if (staged := per_stage(cls, p.name, value, notes)) is not None:  # depth=[2, 6, 4]
            value = staged
        elif value is None and (number := torch_default_for_none(cls, p, notes)) is not None:
            value = number  # output_padding=None handed to nn.ConvTranspose1d: torch's 0
        if value is not MISSING:
            out[p.name] = value
        elif p.name in CONFIG or annotated_config(cls, p) is not None:
            out[p.name] = config_argument(cls, p, dims)
            note_filled(unset_fields_passed(cls, p.name, out[p.name]), p.name, notes)
        elif (module := _module_annotation(cls, p)) is not None:
            out[p.name] = _build_module(module, cls, p, dims)
        elif (built := built_for(cls, p.name)) is not None:  # as the project's code builds it
            one = _build_module(built.cls, cls, p, dims, built.given)
            out[p.name] = one if built.count is None else \
                [one, *(_build_module(built.cls, cls, p, dims, built.given) for _ in range(built.count - 1))]
            if notes is not None:
                made = built.cls.__qualname__ + ("(...)" if built.count is None
                                                 else f"(...) x {built.count}")
                notes.append(f"{p.name} built as {built.where} builds it: {made} at the probe "
                             f"sizes; check from Python with init={{{p.name!r}: ...}} to choose")
        elif (said := documented_size(cls, p.name)) is not None:  # ``K: number of heads``
            out[p.name] = 2 if said[0] == LAYER_COUNT else dims[said[0]]
            if notes is not None:
                notes.append(f"{p.name} read as {said[1]}, as the class's docstring says; "
                             f"give --init {p.name}=VALUE to choose")
        elif (used := inherited_layer_size(cls, p.name) or _by_use(cls, p.name)) == DEVICE:
            out[p.name] = "cpu"
            if notes is not None:
                notes.append(f"{p.name}='cpu': where the constructor makes or moves tensors, "
                             f"{BY_USE}; give --init {p.name}=VALUE to choose")
        elif used is not None:
            out[p.name] = 2 if used in (LAYER_COUNT, OUTPUT_FACTOR, CHOSEN) else 3 if used == KERNEL \
                else 1 if used == DIVISOR else dims[used]
            if notes is not None:
                what = "a count of layers" if used == LAYER_COUNT else "a kernel size (3)" \
                    if used == KERNEL else "how many of the largest values topk keeps (2)" \
                    if used == CHOSEN else "a factor of an output's size only (2)" \
                    if used == OUTPUT_FACTOR else "a count other sizes are divided by only (1)" \
                    if used == DIVISOR else DIM_MEANINGS[used]
                notes.append(f"{p.name} read as {what}, {BY_USE}; "
                             f"give --init {p.name}=VALUE to choose")
        elif (named := named_by_callers(cls, p.name)) is not None and named[0] in dims:
            out[p.name] = dims[named[0]]  # FourierBlock(in_channels=configs.d_model): the width
            if notes is not None:
                notes.append(f"{p.name} read as {DIM_MEANINGS[named[0]]}, from the name of what "
                             f"{named[1]} passes; give --init {p.name}=VALUE to choose")
        elif p.default is p.empty and slice_step(cls, p.name):
            out[p.name] = 2  # Q[:, ::self.stride]: every other position
            if notes is not None:
                notes.append(f"{p.name}=2, a slice's step nothing sets (every other position "
                             f"kept); give --init {p.name}=VALUE to choose")
        elif p.name in UNSET_SIDES:  # a patch's, a window's side, a kernel's size
            out[p.name], what = UNSET_SIDES[p.name]
            if (sides := unpacked_into(cls, p.name)) > 1:  # ``H, W = self.input_resolution``
                out[p.name] = (out[p.name],) * sides
            if notes is not None:
                notes.append(f"{p.name}={out[p.name]}, {what} nothing sets; give --init "
                             f"{p.name}=VALUE to choose")
        elif (spread := splatted_for(cls, p.name)) is not None:  # Decoder(**decoder_config)
            out[p.name] = infer_init(spread, dims, notes=notes)
        elif (read := _config_from_reads(cls, p, dims)) is not None:
            out[p.name] = read  # a config by any name: the fields its code reads
            filled = unset_fields_passed(cls, p.name, read)
            if notes is not None:
                fields = read if isinstance(read, dict) else vars(read)
                shown = ", ".join(f"{k}={v!r}" for k, v in list(fields.items())[:8])
                more = ", ..." if len(fields) > 8 else ""
                notes.append(f"{p.name} made with the fields the code reads from it ({shown}"
                             f"{more}); give --init {p.name}.FIELD=VALUE to set one")
            note_filled(filled, p.name, notes)
        elif is_switch_param(p) or (p.default is p.empty and p.name.lstrip("_").lower()
                                    not in CAUSAL_FLAGS and only_switched(cls, p.name)):
            out[p.name] = True  # a switch nothing sets: on, so that the part it adds is checked
            if notes is not None:
                notes.append(f"{p.name} set True, a switch nothing sets (the part it turns on is "
                             f"checked); give --init {p.name}=False to check the module without")
        elif p.default is p.empty and p.name.lstrip("_").lower() in CAUSAL_FLAGS \
                and p.annotation in (p.empty, bool, "bool") and passed_for(cls, p.name) is None:
            out[p.name] = False  # a causal flag nothing sets: off, and causal-leak not judged
            if notes is not None:
                notes.append(f"{p.name}=False, a causal flag nothing sets (checked as a module that "
                             f"is not causal); give --init {p.name}=True to check its causal path")
        elif (passed := passed_for(cls, p.name)) is not None:  # as the project's code passes it
            out[p.name] = passed.value
            beside.update({k: v for k, v in passed.beside.items() if k not in beside})
            if notes is not None:
                shown = passed.value.__name__ if isinstance(passed.value, type) else repr(passed.value)
                notes.append(f"{p.name}={shown} as {passed.where} passes it; give --init "
                             f"{p.name}=VALUE to choose")
        elif (used := read_for(cls, p.name, dims)) is not None:  # an image's side, a set of levels
            out[p.name] = used.value
            if notes is not None:
                notes.append(used.note)
        elif p.default is p.empty and (default := torch_default(cls, p.name)) is not None:
            out[p.name] = default  # nn.LeakyReLU(alpha): torch's own default for it
            if notes is not None:
                notes.append(f"{p.name}={default!r}, the default of the torch argument the "
                             f"constructor hands it to; give --init {p.name}=VALUE to choose")
        elif inspect.isfunction(cls.__init__) and ((unread := never_read(cls.__init__, p.name))
                                                   or compared_with_none(cls.__init__, p.name)):
            out[p.name] = None  # tested for None: the constructor makes its own; or never read
            if notes is not None:
                made = "never reads it" if unread else "makes one then"
                notes.append(f"{p.name}=None: its constructor {made}; give --init to choose")
        elif none_allowed(p.annotation):  # ``cache_dir: str | None``: None, as its type says
            out[p.name] = None
            if notes is not None:
                notes.append(f"{p.name}=None, which its type allows; give --init {p.name}=VALUE to choose")
        else:
            missing.append(p.name)
    for p in params:  # ``input_resolution: Tuple[int, int]`` given one size: that size twice
        if p.name not in given and type(out.get(p.name)) is int \
                and (pair := int_tuple_length(p.annotation)) > 1:
            out[p.name] = (out[p.name],) * pair
    defaults = {p.name: p.default for p in params if p.default is not p.empty}
    switched = []  # the path that call takes (``input_layer=None``), not the default's
    for key, value in beside.items():  # passed with a value taken from the same call
        if key in out and key not in given and key in defaults:
            if (value is None or type(value) in (str, bool)) and value != defaults[key]:
                switched.append(f"{key}={value!r}")
            out[key] = value
    if switched and notes is not None:
        notes.append(f"{', '.join(switched)} as the same call passes; give --init to choose")
    out.update({key: value for key, value in given.items() if key not in out})
    staged_heads(params, out, given, dims, notes)  # num_heads=(3, 6, 12, 24) beside a probe width
    from .examples import by_example

    by_example(cls, params, out, missing, given, dims, notes, infer_inputs)
    if missing:
        from .asks import constructor_ask

        raise constructor_ask(cls, missing)
    return out


MISSING = object()


def _infer_argument(p: inspect.Parameter, dims: Mapping[str, int]) -> object:
    if p.default is p.empty and p.annotation in (torch.dtype, "torch.dtype"):  # compute_dtype
        return torch.get_default_dtype()
    if absent_gpu(p.default):  # device='cuda:0' on a machine without one: built on the CPU
        return torch.device("cpu") if isinstance(p.default, torch.device) else "cpu"
    return infer_value(p.name, p.default, dims, has_default=p.default is not p.empty)


def infer_value(name: str, default: object, dims: Mapping[str, int], *,
                has_default: bool = True) -> object:
    """The value a constructor argument (or a config field) named ``name`` takes at ``dims``:
    a size its name states, a layer count, dropout 0.0, else its default; ``MISSING`` when
    nothing says. A default that is a list or tuple (one value per stage) is kept."""
    if has_default and isinstance(default, (list, tuple)):
        return default
    if name in KV_HEADS:  # key/value heads divide the query heads, whatever the default
        fits = isinstance(default, int) and default > 0 and dims["H"] % default == 0
        return default if has_default and (fits or default is None) else dims["H"]
    if name in DIM_NAMES and name in dims and not has_default:  # __init__(self, V, d_model, h)
        return dims[name]
    dim = size_of(name, constructor=True)
    if dim is not None and has_default and name in OUTPUT_SIZES and type(default) is int:
        return default  # the author's own output width (``output_dim=2``: two angles), not C
    if dim is not None:
        return dims[dim]
    if name in FFN:
        return 4 * dims["C"]
    if counts_layers(name):
        return 2
    if name in LAYER_INDICES and not has_default:
        return LAYER_INDEX
    if has_default and isinstance(default, bool):
        return default  # use_dropout=True, bias=False: a switch, not a size
    if DROPOUT.search(name):
        return 0.0
    if has_default:
        return default
    if name in SWITCH_DEFAULTS:
        return SWITCH_DEFAULTS[name]
    if (token := special_token(name)) is not None:
        return token
    if (number := number_of(name)) is not None or (rest := unprefixed(name)) is None:
        return MISSING if number is None else number
    value = MISSING if rest in FFN else infer_value(rest, default, dims, has_default=False)
    return dims[dim] if value is MISSING and (dim := field_size(name)) else value  # lm_n_heads


def config_argument(cls: type, param: inspect.Parameter, dims: Mapping[str, int]) -> object:
    """The config object for ``param`` of ``cls`` at ``dims``, from the first library style
    that knows where its sizes are (``styles``): a class built from its constructor's names,
    or a dict copied with its sizes set; a :class:`TargetError` saying what to pass if none."""
    source = config_source(cls, param)
    owner = cls.__qualname__
    if source is None:
        read = _config_from_reads(cls, param, dims)
        if read is not None:
            return read
    if isinstance(source, type):
        try:
            kwargs = infer_init(source, dims)
        except TargetError as exc:
            raise TargetError(f"{owner}({param.name}: {source.__qualname__}): {exc}") from None
        try:
            return source(**kwargs)
        except Exception as exc:  # noqa: BLE001 - the config's own checks refusing the sizes
            site = user_frame(exc)
            shown = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
            raise TargetError(f"{owner}({param.name}: {source.__qualname__}({shown})) raised "
                              f"{type(exc).__name__}: {one_line(exc)}"
                              f"{f' at {site[0]}:{site[1]}' if site else ''}; give the config's "
                              f"fields with --init {param.name}.FIELD=VALUE (or sizes with --dims)"
                              ) from exc  # its cause read for the sizes it asks (an even width)
    if isinstance(source, Mapping):
        return {key: infer_value(key, value, dims)
                if isinstance(key, str) and isinstance(value, (int, float)) else value
                for key, value in source.items()}
    raise TargetError(
        f"cannot infer constructor argument {param.name!r} of {owner}: it is a config object; "
        f"annotate it with a dataclass ({param.name}: MyConfig) or give {owner} keyword "
        f"arguments and pass them with --init or a config file's init")


def _by_use(cls: type, name: str) -> str | None:
    """:func:`meaning_by_use`, but a maximum length the project's own code passes is its own."""
    used = meaning_by_use(cls, name)
    return None if used == "L" and passed_for(cls, name) is not None else used


def _config_with(cls: type, param: inspect.Parameter, dims: Mapping[str, int],
                 fields: Mapping[str, object]):
    """The config argument ``param`` of ``cls`` with ``fields`` set as given and the rest
    inferred as without them; ``fields`` itself (a dict) where nothing says what it is."""
    source = config_source(cls, param)
    if isinstance(source, type):
        try:
            return source(**infer_init(source, dims, given=fields))
        except TargetError as exc:
            raise TargetError(f"{cls.__qualname__}({param.name}: {source.__qualname__}): "
                              f"{exc}") from None
    if isinstance(source, Mapping):
        made = config_argument(cls, param, dims)
        return {**made, **fields}
    read = _config_from_reads(cls, param, dims)
    if isinstance(read, dict):
        return {**read, **fields}
    if read is not None:
        for key, value in fields.items():
            setattr(read, key, value)
        return read
    return dict(fields)


def _config_from_reads(cls: type, param: inspect.Parameter, dims: Mapping[str, int]):
    """A config object with the fields the code reads from ``param`` (``usage.fields_read``),
    each set from its name at ``dims`` (None where the code compares it with None or nothing
    says): a dict when every field is read by key, else a namespace. None when the code reads
    no width or head count from it, and neither its name nor its use says it is a config."""
    fields = fields_read(cls, param.name)
    if called(cls, param.name):
        return None  # one the class calls, ``self.transf(src, tgt)``, is a module: not a config
    if {field_size(name) for name in _leaf_names(fields)} & {"C", "H"}:
        return same_named(_config_of(fields, dims))
    if not fields:  # kept (``self.args = args``) or handed on, no field read: any object
        return types.SimpleNamespace() if param.name in CONFIG else None
    made = same_named(_config_of(fields, dims))  # no size read from it (``args.dropout`` alone)
    return made if (param.name in CONFIG or read_as_object(cls, param)) \
        and None not in _leaf_values(made) else None  # all known


def _leaf_values(config) -> list:
    values = config.values() if isinstance(config, dict) else vars(config).values()
    return [leaf for value in values for leaf in (
        _leaf_values(value) if isinstance(value, (dict, types.SimpleNamespace)) else [value])]


def _leaf_names(fields: Mapping) -> set[str]:
    return {name for name, f in fields.items() if not f.children} | {
        leaf for f in fields.values() if f.children for leaf in _leaf_names(f.children)}


def _config_of(fields: Mapping, dims: Mapping[str, int]):
    values = {name: _config_of(f.children, dims) if f.children else
              infer_value(name, f.default, dims, has_default=f.has_default)
              for name, f in fields.items()}
    values = equal_fields({name: value_by_use(fields[name], dims, name) if value is MISSING
                           else value for name, value in values.items()}, fields)
    nested = any(f.children for f in fields.values())
    if all(f.by_key for f in fields.values()) and not nested:
        return values
    if nested or any(f.by_key for f in fields.values()):
        return ReadConfig(values)  # read both ways: cfg.transformer["num_heads"], cfg.patches.get
    return types.SimpleNamespace(**values)


def _module_annotation(cls: type, param: inspect.Parameter) -> type | None:
    """The module class ``param`` is annotated with (``attn_layers: AttentionLayers``)."""
    import torch.nn as nn

    annotation = param.annotation
    if isinstance(annotation, str):
        annotation = class_namespace(cls).get(annotation)
    if isinstance(annotation, type) and issubclass(annotation, nn.Module) \
            and annotation is not nn.Module:
        return annotation
    return None


def _build_module(module: type, cls: type, param: inspect.Parameter, dims: Mapping[str, int],
                  given: Mapping[str, object] | None = None):
    """``param`` of ``cls`` built as its annotation's class at ``dims`` (``given``: what the
    project's call says, ``batch_first=True``): not when it would be too large to check here
    (a whole model's defaults, billions of parameters)."""
    from .devices import MAX_PARAMETERS, cpu_only, parameters_on_meta

    init = infer_init(module, dims, given=given)
    count = parameters_on_meta(module, init)
    if count is not None and count > MAX_PARAMETERS:
        raise TargetError(f"cannot build constructor argument {param.name!r} of {cls.__qualname__} "
                          f"as {module.__qualname__}: built as shapetrace would build it, it would "
                          f"have {count / 1e6:.0f}M parameters; pass --init {param.name}=...")
    try:
        with cpu_only([]):  # built as the module itself is: .cuda() left on the CPU
            built = module(**init)
    except Exception as exc:  # noqa: BLE001 - any failure of the user's constructor
        raise TargetError(f"cannot build constructor argument {param.name!r} of "
                          f"{cls.__qualname__} as {module.__qualname__}: "
                          f"{type(exc).__name__}: {exc}; pass --init {param.name}=...") from exc
    try:
        BUILT_WITH[built] = dict(init)
    except TypeError:  # a module that cannot be weakly referenced
        pass
    return built


#: a module shapetrace built for a constructor argument -> the arguments it was built with
BUILT_WITH: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def kernel_sizes(cls: type, init: Mapping[str, object], given: Mapping[str, object]) -> list[str]:
    """The constructor arguments guessed as a kernel size (``usage.KERNEL``)."""
    return [name for name, value in init.items() if name not in given and value == 3
            and meaning_by_use(cls, name) == KERNEL]
