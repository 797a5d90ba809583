"""Guessed inputs that did not fit: when the forward fails on inputs shapetrace guessed from
their names (another number of axes, an image where vectors were guessed, an einops pattern, a
shape unpacked into other sizes, the module's own check refusing them), the guess was wrong,
not the user's code: a target error asking for the inputs, never an op-failed finding."""

from __future__ import annotations

import ast
import inspect
import os
import re

import torch

from ..base.errors import failed_on_none, one_line
from ..base.ops import MOVES, SPLITS
from ..base.names import MASK_INPUT
from ..base.source import at_line, at_site, display_path
from ..report.results import TargetResult
from .asked import MET
from ..analysis.graph import made_from as _made_from
from .attempt import Attempt, moved_from
from .cross import reference_runs
from .config_fields import config_values
from .defaults_read import split_disagrees
from .devices import needs_gpu
from .chosen_values import chosen_size_failed, counted_failed, negative_size
from .asking import annotated_axis_failed, ask, got_past, why
from .refused import as_guessed as _as_guessed
from .refused import iterated, layer_refused, refused, varargs_left
from .signals import signal_refused, takes_images
from .setup_read import NO_ATTRIBUTE, sets_attribute, setter_of, unset_entry


def guess_failed(result: TargetResult, chosen: Attempt) -> bool:
    """When the forward failed at an op that read an inferred input as it came in (a ViT's
    ``x`` guessed as (B, T, C) and handed to a Conv2d), the guess was wrong, not the user's
    code: the run becomes a target error asking for the inputs, not an op-failed finding."""
    if annotated_axis_failed(result, chosen):
        return True
    if _unpack_failed(result, chosen) or _rank_failed(result, chosen) \
            or _image_failed(result, chosen) or _pattern_failed(result, chosen) \
            or refused(result, chosen) or layer_refused(result, chosen) \
            or _signal_failed(result, chosen) \
            or negative_size(result, chosen) or chosen_size_failed(result, chosen) or _emptied(result, chosen) or _dtype_failed(result, chosen) \
            or _mask_failed(result, chosen) \
            or _lengths_failed(result, chosen) or _ids_failed(result, chosen) \
            or _branch_failed(result, chosen) or _moved_failed(result, chosen) \
            or _unbuilt_failed(result, chosen) or _global_unset(result, chosen) \
            or _default_failed(result, chosen) \
            or _unset_failed(result, chosen) or _handed_on_failed(result, chosen) \
            or _config_none_failed(result, chosen) or split_disagrees(result, chosen) \
            or iterated(result, chosen) or counted_failed(result, chosen) \
            or varargs_left(result, chosen):
        got_past(result, chosen)
        return True
    rec = chosen.failed_op
    if rec is None:
        return False
    for arg, name in zip(chosen.args, chosen.names):
        if not isinstance(arg, torch.Tensor):
            continue
        if any(m.src is None and tuple(m.shape) == tuple(arg.shape) and m.dtype == arg.dtype
               for m in rec.inputs):
            return ask(result, f"{_as_guessed(name, arg)}, does not fit {rec.op}, the first op "
                               f"that reads it ({rec.error[0]}: {one_line(rec.error[1])})",
                       _example(name, arg, rec))
    return _made_failed(result, chosen)


def _made_failed(result: TargetResult, chosen: Attempt) -> bool:
    """Any other op that failed on values made from inputs shapetrace guessed (a style vector
    guessed as a sequence, through a linear layer, then viewed as one vector per sample), when
    a reading of the guess got the forward past that op (the failure moved with the guess): no
    verdict on the code; a target error that says where the forward failed, asking for the
    inputs. A failure every reading meets at the same op, or at an op on the module's own
    tensors alone, stays a finding."""
    rec = chosen.failed_op
    if rec is None or not rec.error or chosen.passed_by is None:
        return False
    records = chosen.trace.records
    found = [(name, arg) for name, arg in chosen.guessed if _made_from(rec.inputs, arg, records)]
    if not found:
        return False
    shown = ", ".join(_as_guessed(name, arg).removeprefix("input ") for name, arg in found)
    other = chosen.passed_by.split(":")[0]
    return ask(result, f"the forward failed at {rec.op}{_at(rec)} ({rec.error[0]}: "
                       f"{one_line(rec.error[1])}) on values made from input"
                       f"{'s' if len(found) > 1 else ''} {shown}; with {other}, it got past "
                       f"that op, so the failure depends on the guess")


def _example(name: str, arg: torch.Tensor, rec) -> str:
    """An example ``--input`` for an input that did not fit ``rec``: an image for a
    convolution, else the guess with its length set apart (``B,S,C``) or its width named."""
    if "conv" in rec.op or "pool" in rec.op:
        return f"--input {name}=B,3,32,32 for images"
    if arg.dim() == 3:
        return f"--input {name}=B,1,C for one query, or {name}=B,S,C for another length"
    return f"--input {name}={_LAYOUTS.get(arg.dim(), 'B,T,C')}"


#: what torch, einops and the user's own checks say when a tensor has another number of axes
_RANK = re.compile(r"number of dimensions|Expected \d+D|expected \d+D|Wrong shape: expected \d+ "
                   r"dims|dimensions? (?:of|in) (?:the )?input|(?:not enough|too many) values to "
                   r"unpack|dims? mismatch|Expected (?:3D|4D)|unbatched", re.I)


def _rank_failed(result: TargetResult, chosen: Attempt) -> bool:
    """The forward failed because an inferred input has another number of axes than the code
    wants (a permute of four axes, an einops pattern of four, an assertion on ``x.dim()``), in
    a module that works on images or on a layout the names cannot tell: the guess did not fit,
    a target error naming --input."""
    raised = chosen.raised
    if raised is None or not _RANK.search(str(raised)):
        return False
    guessed = chosen.guessed
    if not guessed:
        return False
    name, arg = guessed[0]
    wanted = re.search(r"expected (\d+) dims|Expected (\d+)D|expected (\d+)D", str(raised))
    rank = int(next(g for g in wanted.groups() if g)) if wanted else None
    example = (_LAYOUTS[rank] if rank in _LAYOUTS else
               "B,C,H,W" if takes_images(chosen.model) else "B,T,C or B,C,H,W")
    return ask(result, f"{_as_guessed(name, arg)}, does not have the number of axes the "
                       f"forward wants ({type(raised).__name__}: {one_line(raised)[:160]})",
               f"--input {name}={example}")


#: what Python says of a call that lacks an argument its callee requires
_MISSING_ARGUMENT = re.compile(r"missing \d+ required (?:positional|keyword-only) arguments?: (.+)")


def _handed_on_failed(result: TargetResult, chosen: Attempt) -> bool:
    """forward hands its ``**kwargs`` (or ``*args``) on to a callee (``PreNorm``: ``self.fn(x,
    **kwargs)``) that requires an argument shapetrace, knowing nothing of it, left out: the
    guess, not the code; a target error naming what the callee requires."""
    raised = chosen.raised
    found = _MISSING_ARGUMENT.search(str(raised)) if isinstance(raised, TypeError) else None
    try:
        kinds = {p.kind for p in inspect.signature(chosen.model.forward).parameters.values()}
    except (TypeError, ValueError, AttributeError):
        return False
    if found is None or not kinds & {inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL}:
        return False
    return ask(result, f"forward hands what it is given on (*args/**kwargs), and the callee "
                       f"requires {found.group(1)}, which shapetrace left out "
                       f"({one_line(raised)})")


def _emptied(result: TargetResult, chosen: Attempt) -> bool:
    """An op that failed on an empty tensor (an axis of size 0) that the forward made from
    guessed inputs none of which is empty (``torch.arange(N // (grid * grid) * grid * grid)``
    with a guessed length below ``grid * grid``): the guessed sizes are smaller than the code
    works with, which says nothing of the code."""
    rec, guessed = chosen.failed_op, chosen.guessed
    if rec is None or not guessed or any(0 in arg.shape for _, arg in guessed):
        return False
    empty = [m for m in rec.inputs if m.src is not None and 0 in tuple(m.shape)]
    if not empty:
        return False
    shown = ", ".join(_as_guessed(name, arg).removeprefix("input ") for name, arg in guessed)
    made = chosen.trace.records[empty[0]._made_by]
    return ask(result, f"the forward failed at {rec.op}{_at(rec)} ({rec.error[0]}: "
                       f"{one_line(rec.error[1])[:120]}) on an empty tensor {tuple(empty[0].shape)} "
                       f"it made{_at(made)} from inputs {shown}: the code wants other sizes than "
                       f"the guessed ones")


#: what torch says when an op is handed floats where it takes integers (or the other way)
_DTYPE = re.compile(r"[Ee]xpected (?:dtype|scalar type)|expected .*(?:Long|Int)\b|must be .*integer|"
                    r"only integer tensors|dtype int(?:32|64)")


def _dtype_failed(result: TargetResult, chosen: Attempt) -> bool:
    """An op that refused the dtype of values made from an input shapetrace guessed (a target
    of token ids guessed as floats, handed through a packing to ``scatter``): the guess was
    wrong, a target error naming the input."""
    rec = chosen.failed_op
    if rec is None or not _DTYPE.search(rec.error[1] or ""):
        return False
    records = chosen.trace.records
    found = [n for n, a in chosen.guessed if a.is_floating_point() and _made_from(rec.inputs, a, records)]
    if not found:
        return False
    which = " or ".join(repr(n) for n in found)  # inputs of one shape cannot be told apart
    return ask(result, f"input {which}, guessed from {'its name' if len(found) == 1 else 'their names'} "
                       f"as floats, does not fit {rec.op} ({rec.error[0]}: "
                       f"{one_line(rec.error[1])}): it may hold integers",
               f"--input {found[-1]}=B,T:long")


#: what torch says of two sizes that do not meet
_SIZES = re.compile(r"must match the size|cannot be broadcast|shape mismatch|not broadcastable", re.I)


def _mask_failed(result: TargetResult, chosen: Attempt) -> bool:
    """An op whose sizes did not meet, reading a value made from a mask whose shape
    shapetrace guessed (a ``memory_mask`` guessed (T, S) as ``nn.Transformer`` takes it, that
    the code reads per sample): the mask's shape is the guess, a target error naming it."""
    rec = chosen.failed_op
    if rec is None or chosen.plan.request.inputs is not None \
            or not _SIZES.search(rec.error[1] or ""):
        return False
    records = chosen.trace.records
    found = [(n, a) for n, a in chosen.guessed if MASK_INPUT.search(n) and a.dim() >= 2
             and _made_from(rec.inputs, a, records)]
    if not found or reference_runs(chosen.plan, chosen.args):
        return False  # a reference that runs on the guess confirms it: the failure is the code's
    name, arg = found[0]
    return ask(result, f"{_as_guessed(name, arg)}, does not fit {rec.op}{_at(rec)} "
                       f"({rec.error[0]}: {one_line(rec.error[1])}), nor did the other shapes a "
                       f"mask is given in", f"--input {name}=B,S:mask-keep (or the shape the "
                       f"code reads)")


def _ids_failed(result: TargetResult, chosen: Attempt) -> bool:
    """An index out of range at an op that reads a value made from integers shapetrace chose
    (ids shifted before they are looked up, ``text + 1``): the range is the guess's, a target
    error naming the input."""
    rec = chosen.failed_op
    if rec is None or not isinstance(chosen.raised, IndexError) or "out of range" not in str(chosen.raised):
        return False
    records = chosen.trace.records
    found = [(n, a) for n, a in chosen.guessed if not a.is_floating_point() and _made_from(rec.inputs, a, records)]
    if not found:
        return False
    name, arg = found[0]
    return ask(result, f"{_as_guessed(name, arg)} with values in [{int(arg.min())}, "
                       f"{int(arg.max()) + 1}), does not fit {rec.op} ({one_line(chosen.raised)}): "
                       f"the code may shift its ids or keep rows of the table",
               f"--input {name}=B,T:long:N with N the number of ids it takes")


def _branch_failed(result: TargetResult, chosen: Attempt) -> bool:
    """A name the forward sets only on a path the guessed inputs did not take (``if len(shape)
    == 4: B, C, H, W = shape``, read after it): the guess chose the path, a target error."""
    raised = chosen.raised
    guessed = chosen.guessed
    if not isinstance(raised, UnboundLocalError) or not guessed:
        return False
    name, arg = guessed[0]
    return ask(result, f"{_as_guessed(name, arg)}: the forward read a name it sets only on "
                       f"another path ({one_line(raised)}), one the code takes for inputs of "
                       f"another shape")




def _default_failed(result: TargetResult, chosen: Attempt) -> bool:
    """forward failed on None (``seq_len > self.cached`` with ``seq_len=None``) while
    arguments of its were left at their default None, or passed None by shapetrace (an input
    its code tests with ``is None`` before it reads it elsewhere), or at an op that read an
    argument left at an empty default (``pos_emb=torch.empty(0)``, a stand-in for a value the
    caller passes): a value its callers pass, not a bug of the code; a target error naming them."""
    raised = chosen.raised
    try:
        params = inspect.signature(chosen.model.forward).parameters.values()
    except (TypeError, ValueError):
        return False
    if not failed_on_none(raised) and not _asked_for_none(chosen.failed_op) \
            and not _NUMBER_FOR_TENSOR.search(str(raised)):
        rec = chosen.failed_op
        empty = [p.name for p in params if isinstance(p.default, torch.Tensor) and p.default.numel() == 0
                 and p.name not in chosen.names and rec is not None
                 and _made_from(rec.inputs, p.default, chosen.trace.records)]
        return bool(empty) and ask(result, f"forward failed at {rec.op}{_at(rec)} ({rec.error[0]}: "
                                             f"{one_line(rec.error[1])}) on {', '.join(empty)} left at "
                                             f"an empty default: a value its callers pass")
    left = [p.name for p in params if p.default is None and p.name not in chosen.names]
    if chosen.plan.request.inputs is None:  # and those shapetrace itself passed as None
        left += [n for n, a in zip(chosen.names, chosen.args) if a is None and n in
                 {p.name for p in params}]
    if any(p.kind is p.VAR_KEYWORD for p in params):
        # a module inside read an argument of its own left None, one that the forward's
        # ``**kwargs`` would have handed on had its callers passed it
        left += [n for n in chosen.none_read if n not in left]
    if not left:
        return False
    on = "a number made for an input left None" if _NUMBER_FOR_TENSOR.search(str(raised)) else "None"
    return ask(result, f"forward failed on {on} ({one_line(raised)}"
                       f"{at_site(chosen.raised_at)}) with "
                       f"{', '.join(left)} left None: a value its callers pass")


#: an op handed a plain number where it takes a tensor: what ``default(edges, 0)`` makes of an
#: input left None (``all_edges = default(edges, 0) + default(adj_mat, 0)``)
_NUMBER_FOR_TENSOR = re.compile(r"must be Tensor, not (?:int|float|bool)\b")


def _asked_for_none(rec) -> bool:
    """Whether ``rec`` failed asking for an argument it was handed as None: its error names
    the keyword (``Need attn_mask if specifying the is_causal hint``, with ``attn_mask=None``),
    a value left out, not a bug of the code that called it."""
    if rec is None or rec.error is None:
        return False
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", rec.error[1]))
    return any(value is None and name in words for name, value in rec.kwargs.items())


def _config_none_failed(result: TargetResult, chosen: Attempt) -> bool:
    """forward failed on None while a config object shapetrace made for the constructor holds
    fields it left None (nothing said their values: ``cfg.lm_rms_eps``): the guess, not the
    code; a target error naming the fields to give."""
    if not failed_on_none(chosen.raised):
        return False
    guessed = set(chosen.plan.init or {}) - set(chosen.plan.request.init or {})
    left = [f"{name}.{field}" for name, value in (chosen.built_with or {}).items()
            if name in guessed for field, held in config_values(value).items() if held is None]
    if not left:
        return False
    result.error = (f"forward failed on None ({one_line(chosen.raised)}{at_site(chosen.raised_at)}) "
                    f"with config fields nothing sets left None: {', '.join(left[:6])}; give them "
                    f"with --init {left[0]}=VALUE (or init in the config)")
    result.diagnostics = []
    return True


def _unbuilt_failed(result: TargetResult, chosen: Attempt) -> bool:
    """forward read an attribute its constructor sets only on a path the guessed constructor
    arguments did not take (``if config.kind == "a": self.attn = ...``): the guess chose the
    path, a target error asking for the arguments."""
    raised = chosen.raised
    found = NO_ATTRIBUTE.search(str(raised)) if isinstance(raised, AttributeError) else None
    request = chosen.plan.request
    guessed = set(chosen.plan.init or {}) - set(request.init or {})
    if found is None or not guessed or chosen.model is None:
        return False
    owner = next(iter(_owners(chosen, found.group(1))), None)
    if owner is None or not sets_attribute(owner, found.group(2)):
        return False
    shown = ", ".join(sorted(guessed))
    result.error = (f"forward read self.{found.group(2)}, which {owner.__qualname__}'s "
                    f"constructor sets only on some paths, and the arguments shapetrace guessed "
                    f"({shown}) took another ({one_line(raised)}); give the constructor's "
                    f"arguments with --init NAME=VALUE (or init in the config)")
    result.diagnostics = []
    return True


def _global_unset(result: TargetResult, chosen: Attempt) -> bool:
    """forward read an attribute of one of the project's modules that the project's code sets
    elsewhere (``settings.d_k = d_k`` in a parent's constructor, read by every layer it builds):
    checked alone, nothing set it, which says nothing of the code; a target error naming where
    it is set."""
    import sys

    from ..base.source import file_tree
    from .isolation import users_modules

    raised = chosen.raised
    found = _MODULE_ATTRIBUTE.search(str(raised)) if isinstance(raised, AttributeError) else None
    module = sys.modules.get(found.group(1)) if found is not None else None
    if module is None:
        return False
    for user in users_modules():
        path = getattr(user, "__file__", None)
        tree = file_tree(path) if path else None
        for node in ast.walk(tree) if tree is not None else ():
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
            if any(isinstance(t, ast.Attribute) and t.attr == found.group(2) and isinstance(t.value, ast.Name)
                   and vars(user).get(t.value.id) is module for t in targets):
                result.error = (f"forward read {found.group(1)}.{found.group(2)}, which the project's "
                                f"code sets elsewhere ({display_path(path)}:{node.lineno}) and nothing "
                                f"set for this check ({one_line(raised)}); check the class that sets "
                                f"it, or give the module's setting before the check")
                result.diagnostics = []
                return True
    return False


#: what Python says of an attribute a module does not have
_MODULE_ATTRIBUTE = re.compile(r"module '([\w.]+)' has no attribute '(\w+)'")


def machine_failed(result: TargetResult, chosen: Attempt) -> bool:
    """The forward failed for the machine it runs on, not its code, whatever the inputs: it
    needs a GPU, a package it imports is not installed, or an installed one is of another
    version than the code was written for; a target error naming what it needs."""
    if needs_gpu(chosen.raised):
        result.error, result.diagnostics = (f"forward needs a GPU, which this machine does not have "
                                            f"({one_line(chosen.raised)}{at_site(chosen.raised_at)}): "
                                            f"check it on a machine with CUDA"), []
        return True
    return _import_failed(result, chosen) or _version_failed(result, chosen)


def _import_failed(result: TargetResult, chosen: Attempt) -> bool:
    """forward imports a package that is not installed (``from flash_attn import ...`` inside
    it)."""
    raised = chosen.raised
    if not isinstance(raised, ModuleNotFoundError) or not raised.name:
        return False
    package = raised.name.partition(".")[0]
    result.error = (f"forward imports '{raised.name}', which is not installed"
                    f"{at_site(chosen.raised_at)}: pip install "
                    f"{package.replace('_', '-')}, then check it again")
    result.diagnostics = []
    return True


#: what Python says of a call with a keyword its callee does not take
_UNEXPECTED = re.compile(r"(\w+)\.forward\(\) got an unexpected keyword argument '(\w+)'")


def _version_failed(result: TargetResult, chosen: Attempt) -> bool:
    """forward calls a module of an installed package (not torch) with a keyword that
    package's version does not take (``RotaryEmbedding.forward() got an unexpected keyword
    argument 'cache_key'``): the code was written for another version. A keyword torch does
    not take stays the code's failure."""
    raised = chosen.raised
    found = _UNEXPECTED.search(str(raised)) if isinstance(raised, TypeError) else None
    if found is None or chosen.model is None:
        return False
    owner = next(iter(_owners(chosen, found.group(1))), None)
    where = inspect.getsourcefile(owner) if owner is not None else None
    package = (owner.__module__ or "").partition(".")[0] if owner is not None else ""
    caller = _torch_parent(chosen.model, owner) if owner is not None and where \
        and "site-packages" not in where else None
    if caller is not None:
        result.error = (f"torch's {caller} calls {found.group(1)} of this code with "
                        f"'{found.group(2)}', which its forward does not take: the code was "
                        f"written for another version of torch than {torch.__version__}; run it "
                        f"with that one")
        result.diagnostics = []
        return True
    if not where or "site-packages" not in where or package in ("torch", "shapetrace"):
        return False
    result.error = (f"forward calls {found.group(1)} of the installed package '{package}' "
                    f"with '{found.group(2)}', which that version does not take"
                    f"{at_site(chosen.raised_at)}: the code was written for another version of "
                    f"{package}; install that one")
    result.diagnostics = []
    return True


def _torch_parent(model, owner: type) -> str | None:
    """The name of a torch module class that holds a layer of ``owner`` (``nn.TransformerEncoder``
    holding copies of the user's encoder layer, which torch calls with its own keywords), or
    None."""
    for parent in model.modules():
        if not type(parent).__module__.startswith("torch."):
            continue
        held = [*parent.children()]
        held += [m for c in held if isinstance(c, (torch.nn.ModuleList, torch.nn.Sequential))
                 for m in c.children()]
        if any(type(m) is owner for m in held):
            return f"nn.{type(parent).__name__}"
    return None


def _unset_failed(result: TargetResult, chosen: Attempt) -> bool:
    """forward read an attribute that only another method of its class sets
    (``self.causal_mask``, made by ``setup_caches()``): a module meant to be set up by a call
    before its forward; a target error naming that method."""
    raised = chosen.raised
    found = NO_ATTRIBUTE.search(str(raised)) if isinstance(raised, AttributeError) else None
    unset = next(((o, f"self.{found.group(2)}", s) for o in _owners(chosen, found.group(1))
                  if (s := setter_of(o, found.group(2))) is not None), None) \
        if found and chosen.model is not None else None
    unset = unset or unset_entry(raised, chosen.raised_at, chosen.model)  # self.samples['weight']
    if unset is None:
        return False
    owner, read, setter = unset
    result.error = (f"forward read {read}, which only {owner.__qualname__}.{setter}() sets "
                    f"({type(raised).__name__}: {one_line(raised)}): the module is set up by that "
                    f"call before its forward; check the set-up instance from Python "
                    f"(shapetrace.check(model, inputs=...)), or give inputs that take a path "
                    f"without it (--input)")
    result.diagnostics = []
    return True


def _owners(chosen: Attempt, name: str) -> list[type]:
    """The classes of the built model's modules that an error message names by ``name``, in the
    order the model holds them."""
    return list(dict.fromkeys(type(m) for m in chosen.model.modules() if type(m).__name__ == name))


#: what torch says when the sizes of two operands do not go together
_SIZES_MET = re.compile(r"must match the size|cannot be multiplied|shapes cannot|"
                        r"size mismatch|doesn't match the broadcast shape|"
                        r"expected input with shape|to have \d+ channels, but got|"
                        r"was expecting embedding dimension of \d+, but got", re.I)


def _moved_failed(result: TargetResult, chosen: Attempt) -> bool:
    """An op whose sizes did not go together, fed the guessed input only moved or reshaped (no
    layer of the module read it yet: ``x.flatten(2)`` then a table of 196 positions, or a
    parameter shaped ``(1, C, 1)`` times ``x``): the guess's shape, not the code, a target
    error naming --input."""
    rec = chosen.failed_op
    if rec is None or not rec.error or not _SIZES_MET.search(rec.error[1] or ""):
        return False
    records = chosen.trace.records
    for name, arg in chosen.guessed:
        if any(moved_from(meta, arg, records, passing=MOVES | SPLITS) for meta in rec.inputs):
            return ask(result, f"{_as_guessed(name, arg)}, does not fit {rec.op}"
                               f"{_at(rec)} ({rec.error[0]}: {one_line(rec.error[1])}), which "
                               f"reads it only moved or reshaped",
                       _example(name, arg, rec))
    return False


def _at(rec) -> str:
    return at_line(rec.file, rec.line)


def _lengths_failed(result: TargetResult, chosen: Attempt) -> bool:
    """Two lengths shapetrace chose apart (T for the queries, S for keys and values guessed as
    a sequence of their own) that the forward met and could not match, whatever it was read
    as (a module of one length, an additive attention of one query): both sizes are the
    guess's, so the failure is no verdict on the code; a target error asking for the inputs.
    Not when a reference named for the module runs at those lengths: a cross-attention."""
    raised, dims = chosen.raised, chosen.plan.dims
    found = MET.search(str(raised)) if raised is not None else None
    if found is None or dims["T"] == dims["S"] \
            or {int(n) for n in found.groups()} != {dims["T"], dims["S"]}:
        return False
    sources = [spec.name for spec in chosen.plan.inputs if "S" in getattr(spec, "dims", ())]
    if not sources:
        return False
    if reference_runs(chosen.plan, chosen.args):
        return False  # the reference takes keys of their own length: the failure is the module's
    rec = chosen.failed_op
    where = f" at {rec.op}" if rec is not None else ""
    return ask(result, f"inputs {', '.join(repr(n) for n in sources)}, guessed from their names "
                       f"as a sequence of their own (S={dims['S']}), do not fit the queries' "
                       f"length (T={dims['T']}){where} ({why(chosen)}), nor read at the "
                       f"queries' length", "--input query=B,1,C for one query")


def _image_failed(result: TargetResult, chosen: Attempt) -> bool:
    """A module that works on images (``takes_images``), given an input guessed as vectors
    (B, T, C) that did not run as vectors nor as an image: a target error naming --input."""
    vectors = [(n, a) for n, a in chosen.guessed if a.dim() == 3 and a.is_floating_point()]
    if chosen.ran or not vectors or not takes_images(chosen.model):
        return False
    name, arg = vectors[0]
    return ask(result, f"{_as_guessed(name, arg)}, does not fit {type(chosen.model).__name__}, "
                       f"which works on images, and no image shapetrace tried ran it either "
                       f"({why(chosen)})", f"--input {name}=B,C,H,W")


def _signal_failed(result: TargetResult, chosen: Attempt) -> bool:
    """Inputs guessed as vectors (B, T, C) that a 1-D convolution refused, as they came or
    through elementwise ops, and that no reading as a signal (B, C, T) ran either."""
    names = tuple(n for n, a in chosen.guessed if a.dim() == 3 and a.is_floating_point())
    if chosen.ran or not names or not signal_refused(chosen, names):
        return False
    return ask(result, f"input {names[0]!r}, guessed from its name, does not fit "
                       f"{chosen.failed_op.op} as (B, T, C) nor as a signal, channels first "
                       f"({why(chosen)})", f"--input {names[0]}=B,C,T")


def _pattern_failed(result: TargetResult, chosen: Attempt) -> bool:
    """An einops pattern that the guessed inputs did not fit (its axes, its groups): a target
    error naming the pattern and --input."""
    raised = chosen.raised
    guessed = chosen.guessed
    if raised is None or not guessed or not _from_einops(raised, chosen.raised_in):
        return False
    name, arg = guessed[0]
    return ask(result, f"{_as_guessed(name, arg)}, does not fit an einops pattern of the "
                       f"forward ({why(chosen)})", tail=", and --dims for sizes the pattern needs")


def _from_einops(raised: BaseException, raised_in: str | None) -> bool:
    """Whether einops raised it (its own error, or a KeyError deep in its recipes)."""
    return "einops" in type(raised).__module__.lower() or (
        raised_in is not None and f"{os.sep}einops{os.sep}" in raised_in)


#: an example layout for an input of each rank
_LAYOUTS = {1: "B", 2: "B,C", 3: "B,T,C", 4: "B,C,H,W", 5: "B,C,D,H,W"}


def _unpack_failed(result: TargetResult, chosen: Attempt) -> bool:
    """The forward unpacked another number of sizes from an inferred input's shape than it has
    (``B, C, H, W = x.shape`` given a (B, T, C) guess): the guess was wrong, a target error."""
    for arg, name in zip(chosen.args, chosen.names):
        if not isinstance(arg, torch.Tensor) or name.startswith("input "):
            continue
        for expected in range(1, 7):
            if expected != arg.dim() and chosen.unpacked(expected, (name,)):
                file, line = chosen.raised_at
                return ask(result, f"{_as_guessed(name, arg)}, does not fit "
                                   f"{display_path(file)}:{line}, which unpacks {expected} sizes "
                                   f"from its shape",
                           f"--input {name}={_LAYOUTS.get(expected, 'B,C,H,W')}")
    return False
