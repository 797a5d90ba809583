"""Recording: every tensor op inside a block, with its source line and module path.

A ``TorchFunctionMode`` sees each op at the level a student writes it (``F.linear``,
``Tensor.view``, ``@``), and global module hooks say which module ran it. Records keep metadata
only (shapes, dtypes, contiguity, the non-tensor arguments), never the tensors, so activations
are not kept alive. Naming the axes is done afterwards, in ``_provenance``.
"""

from __future__ import annotations

import math
import os
import types
import warnings
import weakref
from typing import Any

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

from ._source import resolve_site, source_segment, user_site
from ._report import display_path

Tensor = torch.Tensor
_OWN_DIR = os.path.dirname(os.path.abspath(__file__))


class TensorMeta:
    """What shapetrace keeps of one tensor flowing through an op."""

    __slots__ = ("shape", "dtype", "contiguous", "src", "value", "axes", "ref", "used")

    def __init__(self, t: Tensor, src):
        self.shape: tuple[int, ...] = tuple(t.shape)
        self.dtype = t.dtype
        self.contiguous: bool = t.is_contiguous()
        self.src = src  # (record index, output slot) of the op that made it, or None
        self.value = None  # the number, for one-element tensors (scales, fill values)
        self.axes = None  # provenance, filled in by _provenance
        self.ref = None  # weakref while tracing, then whether it was still alive at the end
        self.used = 0

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self):
        return f"TensorMeta({self.shape}, {self.dtype})"


class TensorArg:
    """Stands in for the i-th tensor operand inside recorded arguments."""

    __slots__ = ("index",)

    def __init__(self, index: int):
        self.index = index

    def __repr__(self):
        return f"<tensor {self.index}>"


# TensorArgs are only ever read, so the recorder hands out one per index rather than a new
# object for every operand of every op (fewer objects for the garbage collector to walk).
_TENSOR_ARGS = tuple(TensorArg(i) for i in range(16))


def _tensor_arg(index: int) -> TensorArg:
    return _TENSOR_ARGS[index] if index < 16 else TensorArg(index)


class OpRecord:
    """One op of the trace."""

    __slots__ = ("index", "func", "op", "site", "module", "internal", "inputs", "args", "kwargs",
                 "outputs", "error", "warnings", "notes", "_where")

    def __init__(self, index, func, site, module, internal, op: str | None = None):
        self.index = index
        self.func = func
        self.op: str = op if op is not None else op_name(func)  # "F.softmax", "@", "Tensor.view"
        self.site = site
        self.module: str = module
        self.internal: bool = internal  # called from torch/helper code rather than the user's
        self.inputs: list[TensorMeta] = []
        self.args: tuple = ()
        self.kwargs: dict = {}
        self.outputs: list[TensorMeta] = []
        self.error: tuple[str, str] | None = None  # (exception type, message)
        self.warnings: list[str] = []
        self.notes: dict | None = None  # analysis results (e.g. the reshape check)
        self._where = None

    @property
    def where(self) -> tuple[str | None, int | None, int | None, int | None]:
        if self._where is None:
            if self.site is None:
                self._where = (None, None, None, None)
            else:
                self._where = resolve_site(*self.site)
        return self._where

    @property
    def file(self) -> str | None:
        return display_path(self.where[0])

    @property
    def line(self) -> int | None:
        return self.where[1]

    @property
    def source(self) -> str:
        filename, line, col, end_col = self.where
        if filename is None:
            return ""
        return source_segment(filename, line, col, end_col)

    def arg(self, position: int, name: str | None = None, default=None):
        """A recorded argument by position or keyword (tensors come back as TensorArg)."""
        if name is not None and name in self.kwargs:
            return self.kwargs[name]
        if position < len(self.args):
            return self.args[position]
        return default

    def __repr__(self):
        return f"<OpRecord {self.index} {self.op} {[m.shape for m in self.inputs]} -> {[m.shape for m in self.outputs]}>"


# --- op names ---------------------------------------------------------------------------------

_OPERATORS = {
    "__matmul__": "@", "__rmatmul__": "@", "__mul__": "*", "__rmul__": "*",
    "__truediv__": "/", "__rtruediv__": "/", "__div__": "/", "__floordiv__": "//",
    "__add__": "+", "__radd__": "+", "__sub__": "-", "__rsub__": "-", "__pow__": "**",
    "__rpow__": "**", "__neg__": "-x", "__eq__": "==", "__ne__": "!=", "__lt__": "<",
    "__le__": "<=", "__gt__": ">", "__ge__": ">=", "__and__": "&", "__or__": "|",
    "__invert__": "~", "__xor__": "^", "__mod__": "%", "__getitem__": "[]",
    "__setitem__": "[]=", "__iadd__": "+=", "__isub__": "-=", "__imul__": "*=",
    "__itruediv__": "/=", "__imatmul__": "@=", "__abs__": "abs",
}
_NAMES: dict[Any, str] = {}


def op_name(func) -> str:
    try:
        return _NAMES[func]
    except (KeyError, TypeError):
        pass
    name = getattr(func, "__name__", None) or repr(func)
    owner = getattr(func, "__self__", None)
    if name == "__get__" and owner is not None:  # Tensor.T, Tensor.shape ... getters
        result = f"Tensor.{owner.__name__}"
    elif name in _OPERATORS:
        result = _OPERATORS[name]
    else:
        qual = getattr(func, "__qualname__", name)
        module = getattr(func, "__module__", None) or ""
        if qual.startswith(("TensorBase.", "Tensor.")):
            result = "Tensor." + qual.split(".", 1)[1]
        elif module.startswith("torch.nn.functional") or module == "torch._C._nn":
            result = f"F.{name}"
        elif qual.startswith("_VariableFunctionsClass.") or module == "torch":
            result = f"torch.{name}"
        elif module.startswith("torch.functional"):
            result = f"torch.{name}"
        elif module.startswith("torch._C._"):  # torch.fft.fft is torch._C._fft.fft_fft
            sub = module[len("torch._C._"):]
            result = f"torch.{sub}.{name.removeprefix(sub + '_')}"
        elif module.startswith("torch"):
            result = f"{module}.{name}"
        else:
            result = name
    try:
        _NAMES[func] = result
    except TypeError:
        pass
    return result


# Calls that never create a tensor worth recording; they only count as uses of their input.
_PASSTHROUGH_NAMES = {
    "shape", "dtype", "device", "ndim", "is_cuda", "is_sparse", "is_quantized", "is_meta",
    "is_nested", "requires_grad", "grad_fn", "layout", "names", "is_leaf", "grad", "data",
    "_version", "output_nr", "_base", "is_mkldnn", "itemsize", "nbytes", "is_complex",
    "size", "dim", "numel", "is_contiguous", "stride", "storage_offset", "is_floating_point",
    "__len__", "__repr__", "__format__", "__hash__", "__bool__", "item", "tolist", "__index__",
    "__int__", "__float__", "element_size", "get_device", "data_ptr", "untyped_storage",
    "has_names", "is_set_to", "__iter__", "__reversed__", "__contains__", "__array__",
    "is_inference", "is_signed", "register_hook", "retain_grad", "_is_view", "numpy",
    "__reduce_ex__", "__deepcopy__", "__getstate__", "__setstate__", "nelement",
    "__dlpack__", "is_pinned", "__array_wrap__", "_typed_storage", "storage",
}


def _is_passthrough(func) -> bool:
    name = getattr(func, "__name__", "")
    if name == "__get__":
        owner = getattr(func, "__self__", None)
        return getattr(owner, "__name__", "") not in {"T", "mT", "H", "mH", "real", "imag"}
    return name in _PASSTHROUGH_NAMES


# Functions whose Python body is made of ops a student would write: run it with the mode on, so
# nn.MultiheadAttention shows its F.linear / view / bmm / softmax rather than one opaque call.
def _transparent(func):
    g = dict(func.__globals__)
    g["has_torch_function"] = lambda *a, **k: False
    g["has_torch_function_unary"] = lambda *a, **k: False
    g["has_torch_function_variadic"] = lambda *a, **k: False
    inner = types.FunctionType(func.__code__, g, func.__name__, func.__defaults__, func.__closure__)
    inner.__kwdefaults__ = func.__kwdefaults__
    return inner


_TRANSPARENT = {F.multi_head_attention_forward: _transparent(F.multi_head_attention_forward)}


# --- the mode ---------------------------------------------------------------------------------

class _Recorder(TorchFunctionMode):
    def __init__(self, trace: "Trace"):
        super().__init__()
        self.trace = trace
        self.live: dict[int, tuple] = {}  # id(tensor) -> (weakref, (record index, slot), meta)
        self.funcs: dict[Any, tuple] = {}  # func -> (kind, name, code, transparent body)
        self.current: OpRecord | None = None
        self.found_non_finite = False
        # record index -> ops from the nearest softmax, kept for records within
        # _SOFTMAX_DEPTH of one: the weight probe walks back only from operands listed here.
        self.near_softmax: dict[int, int] = {}

    def _lookup(self, t: Tensor):
        """``(weakref, (record index, slot), meta)`` of the recorded output ``t`` is, or None."""
        entry = self.live.get(id(t))
        if entry is not None and entry[0]() is t:
            return entry
        return None

    def _meta_in(self, t: Tensor) -> TensorMeta:
        entry = self.live.get(id(t))  # self._lookup, inline: this runs for every operand
        if entry is not None and entry[0]() is t:
            entry[2].used += 1
            meta = TensorMeta(t, entry[1])
        else:
            meta = TensorMeta(t, None)
        if t.numel() == 1 and not t.is_meta and _has_value(t):
            try:
                meta.value = t.item()
            except Exception:  # data-dependent under fake tensors, or not a number
                meta.value = None
        return meta

    def _describe(self, func) -> tuple:
        """What the hot path needs to know about a function, worked out once per trace:
        ``(kind, op name, code, transparent body)``. ``kind`` holds the bit flags below."""
        name = op_name(func)
        if _is_passthrough(func):
            kind = _PASSTHROUGH
        else:
            kind = (_MULTIPLIES if name in _WEIGHT_OPS else 0) \
                | (_RISKY if name.rsplit(".", 1)[-1] in _RISKY_NAMES else 0) \
                | (_UNINITIALISED if name in _UNINITIALISED_OPS else 0) \
                | (_SOFTMAX if name in _SOFTMAX_OPS else 0)
        described = (kind, name, getattr(func, "__code__", None), _TRANSPARENT.get(func))
        try:
            self.funcs[func] = described
        except TypeError:
            pass
        return described

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if kwargs is None:
            kwargs = {}
        try:
            kind, name, code, inner = self.funcs[func]
        except (KeyError, TypeError):
            kind, name, code, inner = self._describe(func)
        if kind & _PASSTHROUGH:
            if args and isinstance(args[0], Tensor):
                entry = self._lookup(args[0])
                if entry is not None:
                    entry[2].used += 1
            return func(*args, **kwargs)

        trace = self.trace
        site = user_site(1, code)
        if site is None:
            rec = OpRecord(len(trace.records), func, None, trace._module, False, name)
        else:
            rec = OpRecord(len(trace.records), func, site[:2], trace._module, site[2], name)
        inputs = rec.inputs
        stripped = []
        # Whether the call may pass an inf or a nan itself (x * -inf, a -inf fill value): a float
        # that is one, a container that may hold one, or a one-element tensor's value. Only then
        # is the call scanned for them, after the op.
        numbers = False
        for a in args:  # the common cases inline: this runs for every op
            if isinstance(a, Tensor):
                stripped.append(_tensor_arg(len(inputs)))
                meta = self._meta_in(a)
                inputs.append(meta)
                if meta.value is not None:
                    numbers = True
            elif isinstance(a, (list, tuple)):
                stripped.append(self._strip(a, inputs))
                if not _ints_only(a):
                    numbers = True
            else:
                if type(a) is float and not math.isfinite(a):
                    numbers = True
                stripped.append(a)
        rec.args = tuple(stripped)
        if kwargs:
            rec.kwargs = {}
            for k, v in kwargs.items():
                if type(v) in _PLAIN:  # dim=, dtype=, eps=: kept as given
                    if type(v) is float and not math.isfinite(v):
                        numbers = True
                elif isinstance(v, Tensor):
                    v = self._strip(v, inputs)
                    if inputs[-1].value is not None:
                        numbers = True
                else:  # a list of tensors, sizes or fill values
                    v = self._strip(v, inputs)
                    numbers = True
                rec.kwargs[k] = v
        trace.records.append(rec)
        previous, self.current = self.current, rec
        try:
            if inner is not None:
                with self:
                    result = inner(*args, **kwargs)
            else:
                result = func(*args, **kwargs)
        except BaseException as exc:
            rec.error = (type(exc).__name__, str(exc))
            raise
        finally:
            self.current = previous
        outs, half = self._outputs(rec, result, args)
        if not outs:
            if not inputs and trace.records[-1] is rec:
                trace.records.pop()  # no tensor in or out: torch._C._set_grad_enabled and the like
            return result
        if kind & _SOFTMAX:
            self.near_softmax[rec.index] = 0
        elif self.near_softmax:
            self._note_near_softmax(rec)
        # Values are looked at only where the op can make a NaN or an Inf (see _probe_finite).
        probe_finite = (kind & _RISKY or numbers or half) and not kind & _UNINITIALISED \
            and not self.found_non_finite
        if probe_finite or kind & _MULTIPLIES:
            # The probes' own ops must not reach an enclosing trace.
            with torch._C.DisableTorchFunction():
                if probe_finite:
                    self._probe_finite(rec, outs, args, kwargs, kind)
                if kind & _MULTIPLIES:
                    self._probe_weights(rec, args, kwargs)
        return result

    def _note_near_softmax(self, rec: OpRecord) -> None:
        """Enters ``rec`` in ``near_softmax`` when one of its inputs is within reach of a
        softmax. Kept as ops are recorded, so that a matmul operand far from every softmax (q,
        k, v, an MLP weight) is settled by one lookup rather than by _after_softmax's walk."""
        near, hops = self.near_softmax, _SOFTMAX_DEPTH
        for meta in rec.inputs:
            if meta.src is not None:
                h = near.get(meta.src[0])
                if h is not None and h < hops:
                    hops = h
        if hops < _SOFTMAX_DEPTH:
            near[rec.index] = hops + 1

    # --- value probes: the few facts about values that the value-based rules need -----------

    def _probe_weights(self, rec: OpRecord, args, kwargs) -> None:
        """For unnormalized-attention: operands of a matmul-like op that come from a softmax a
        few ops back, how far they are from summing to 1 over each of their last two axes, and
        their minimum: ``rec.notes["weight_sums"][input index] = (minimum, {axis: deviation})``."""
        records = self.trace.records
        tensors = None
        for i, meta in enumerate(rec.inputs):
            if meta.src is None or meta.src[0] not in self.near_softmax \
                    or not _after_softmax(records, meta.src[0]):
                continue
            if tensors is None:
                tensors = _operands(args, kwargs)
            if i >= len(tensors):
                break
            sums = _weight_sums(tensors[i])
            if sums is not None:
                if rec.notes is None:
                    rec.notes = {}
                rec.notes.setdefault("weight_sums", {})[i] = sums

    def _probe_finite(self, rec: OpRecord, outs, args, kwargs, kind: int) -> None:
        """For non-finite: the first op whose outputs hold a NaN (or an Inf) that none of its
        inputs held, in ``rec.notes["non_finite"]``. Outputs are looked at (one sum each) only
        where something can appear: ops such as softmax, div, log, sqrt, exp; half precision;
        a non-finite number in the call (``x * -inf``). Only when an output is not finite are the
        op's inputs looked at, while they still exist; after the first finding nothing is."""
        literal = _non_finite_literals(rec)
        if not (kind & _RISKY or literal or _half(rec.outputs)):
            return
        found = None
        for slot, t in enumerate(outs):
            state = _finiteness(t, only_nan="inf" in literal)
            if state is None:
                continue
            nan, inf = state
            if nan and "nan" not in literal:
                found = slot, "NaN"
                break
            if inf and "inf" not in literal:
                found = slot, "Inf"
                break
        if found is None:
            return
        self.found_non_finite = True  # from here on, everything downstream may be non-finite
        in_nan = in_inf = False
        for t in _operands(args, kwargs):
            state = _finiteness(t)
            if state is not None:
                in_nan, in_inf = in_nan or state[0], in_inf or state[1]
        slot, what = found
        if in_nan or (what == "Inf" and in_inf):
            return  # it came in with the inputs: made upstream, by an op not looked at
        if rec.notes is None:
            rec.notes = {}
        rec.notes["non_finite"] = {"kind": what, "slot": slot,
                                   "where": _first_index(outs[slot], what)}

    def _strip(self, a, inputs: list):
        if isinstance(a, Tensor):
            inputs.append(self._meta_in(a))
            return _tensor_arg(len(inputs) - 1)
        if isinstance(a, (list, tuple)) and a and any(isinstance(x, Tensor) for x in a):
            return type(a)(self._strip(x, inputs) for x in a) if type(a) in (list, tuple) else \
                tuple(self._strip(x, inputs) for x in a)
        return a

    def _outputs(self, rec: OpRecord, result, args) -> tuple[tuple, bool]:
        """Records the tensors an op returned: ``(those tensors, whether one is half precision)``."""
        if isinstance(result, Tensor):
            outs = (result,)
        elif isinstance(result, (tuple, list)):
            outs = tuple(r for r in result if isinstance(r, Tensor))
        elif result is None and rec.func is Tensor.__setitem__ and args and isinstance(args[0], Tensor):
            outs = (args[0],)  # x[...] = y writes into x
        else:
            return (), False
        live = self.live
        half = False
        for slot, t in enumerate(outs):
            meta = TensorMeta(t, None)
            meta.ref = weakref.ref(t)
            if t.numel() == 1 and not t.is_meta and _has_value(t) and not t.requires_grad:
                try:
                    meta.value = t.item()
                except Exception:
                    meta.value = None
            rec.outputs.append(meta)
            live[id(t)] = (meta.ref, (rec.index, slot), meta)
            if meta.dtype in _HALF:
                half = True
        return outs, half


# Argument types that are never a tensor nor hold one (dim=, keepdim=, dtype=, eps=).
_PLAIN = frozenset({int, float, bool, str, type(None), torch.dtype})


def _ints_only(a: list | tuple) -> bool:
    """Sizes and dims, the usual lists in a call: no inf or nan can hide in them."""
    for x in a:
        if type(x) is not int:
            return False
    return True


def _is_fake(t: Tensor) -> bool:
    return type(t).__name__ == "FakeTensor"


def _has_value(t: Tensor) -> bool:
    """Real tensors have values; fake ones only when made from a constant (``torch.tensor(13.)``)."""
    return not _is_fake(t) or getattr(t, "constant", None) is not None


# Kinds of function, worked out once per function and trace (bit flags).
_PASSTHROUGH = 1  # makes no tensor worth recording (x.shape, x.size()): only a use of its input
_MULTIPLIES = 2  # a matmul-like op: also probe operands that may be attention weights
_RISKY = 4  # can make NaN or Inf out of finite numbers (0/0, log 0, exp overflow, 0 * inf)
_UNINITIALISED = 8  # torch.empty and the like: whatever was in memory, not a NaN the user made
_SOFTMAX = 16  # the weight probe looks at matmul operands a few ops after one of these
_RISKY_NAMES = frozenset({
    "softmax", "log_softmax", "softmin", "div", "div_", "true_divide", "__rdiv__", "__rtruediv__",
    "/", "floor_divide", "reciprocal", "reciprocal_", "log", "log_", "log2", "log10", "log1p",
    "sqrt", "sqrt_", "rsqrt", "pow", "pow_", "__rpow__", "**", "float_power", "exp", "exp_",
    "exp2", "expm1", "acos", "asin", "atanh", "acosh", "arccos", "arcsin", "std", "var",
    "std_mean", "var_mean", "logit", "erfinv", "prod", "cumprod", "logsumexp", "xlogy",
    "normalize", "cosine_similarity", "nll_loss", "cross_entropy", "kl_div", "mean",
})
_HALF = (torch.float16, torch.bfloat16)
_UNINITIALISED_OPS = frozenset({"torch.empty", "torch.empty_like", "Tensor.new_empty",
                                "torch.empty_strided", "Tensor.resize_"})
_WEIGHT_OPS = frozenset({"Tensor.matmul", "torch.matmul", "@", "torch.bmm", "Tensor.bmm",
                         "torch.baddbmm", "Tensor.baddbmm", "torch.einsum", "torch.mm", "Tensor.mm"})
_SOFTMAX_OPS = frozenset({"F.softmax", "Tensor.softmax", "torch.softmax"})


_SOFTMAX_DEPTH = 6


def _after_softmax(records: list[OpRecord], index: int, depth: int = _SOFTMAX_DEPTH,
                   budget: int = 16) -> bool:
    """Whether record ``index`` is a softmax or descends from one within ``depth`` ops."""
    stack, seen = [(index, 0)], set()
    while stack and len(seen) < budget:
        idx, level = stack.pop()
        if idx in seen:
            continue
        seen.add(idx)
        rec = records[idx]
        if rec.op in _SOFTMAX_OPS:
            return True
        if level < depth:
            stack.extend((m.src[0], level + 1) for m in rec.inputs if m.src is not None)
    return False


def _half(metas: list[TensorMeta]) -> bool:
    """Whether one of the tensors is float16 or bfloat16."""
    for meta in metas:
        if meta.dtype in _HALF:
            return True
    return False


def _operands(args, kwargs) -> list[Tensor]:
    """The tensors of a call in the order ``_Recorder._strip`` numbers them."""
    out: list[Tensor] = []
    for a in args:
        _collect_tensors(a, out)
    for v in kwargs.values():
        _collect_tensors(v, out)
    return out


def _collect_tensors(a, out: list[Tensor]) -> None:
    # A module-level function, not a closure that calls itself: such a closure is a reference
    # cycle, and would keep the operands (attention weights, values) alive until the garbage
    # collector came round.
    if isinstance(a, Tensor):
        out.append(a)
    elif isinstance(a, (list, tuple)) and a and any(isinstance(x, Tensor) for x in a):
        for x in a:
            _collect_tensors(x, out)


def _values(t: Tensor) -> Tensor:
    """The tensor to reduce in a probe: detached when autograd tracks it, so that the probe
    adds nothing to the graph (and one op less, as under no_grad, when it does not)."""
    return t.detach() if t.requires_grad else t


def _finiteness(t: Tensor, only_nan: bool = False) -> tuple[bool, bool | None] | None:
    """(holds a NaN, holds an Inf) for a floating tensor with values, else None. Two cheap
    reductions at most: a sum, finite unless some element is not (or it overflows), then the
    minimum and maximum, which a NaN turns into NaN and an Inf into +-inf.

    ``only_nan``: the caller asks about NaN alone (the call passed an inf itself, as
    ``masked_fill(mask, -inf)`` does, so an Inf is expected); a sum that is not NaN rules a NaN
    out, and the Inf half of the answer is None."""
    if not t.is_floating_point() or t.is_meta or _is_fake(t) or t.numel() == 0:
        return None
    try:
        x = _values(t)
        total = x.sum().item()
        if math.isfinite(total):
            return False, False
        if only_nan and not math.isnan(total):
            return False, None
        low, high = (v.item() for v in torch.aminmax(x))
        if math.isnan(low) or math.isnan(high):
            return True, False  # whether an Inf is there too no longer matters downstream
        return False, math.isinf(low) or math.isinf(high)
    except Exception:  # under a functorch transform, or a tensor subclass without values
        return None


def _first_index(t: Tensor, kind: str) -> list[int] | None:
    try:
        with torch.no_grad():
            x = t.detach()
            bad = torch.isnan(x) if kind == "NaN" else torch.isinf(x)
            found = torch.nonzero(bad)
            return found[0].tolist() if len(found) else None
    except Exception:
        return None


def _non_finite_literals(rec: OpRecord) -> set[str]:
    """"inf" / "nan" when the call itself passes such a number (a -inf fill value, a full())."""
    found: set[str] = set()
    values = [*rec.args, *rec.kwargs.values()] if rec.kwargs else list(rec.args)
    values += [meta.value for meta in rec.inputs]
    for a in values:
        if type(a) is float:
            if a != a:
                found.add("nan")
            elif a in (math.inf, -math.inf):
                found.add("inf")
        elif isinstance(a, (list, tuple)):
            values.extend(a)  # nested sizes or fill values; the loop reaches them too
    return found


def _weight_sums(t: Tensor) -> tuple[float, dict[int, float]] | None:
    """(minimum, {axis: the largest |sum - 1| over the slices along it that do not sum to 0})
    for the last two axes, the ones a matmul or an attention einsum contracts."""
    if t.ndim == 0 or not t.is_floating_point() or t.is_meta or _is_fake(t) or t.numel() == 0:
        return None
    try:
        x = _values(t)
        if x.dtype in (torch.float16, torch.bfloat16):
            x = x.float()
        axes = range(max(x.ndim - 2, 0), x.ndim)
        sums = [x.sum(dim=axis) for axis in axes]
        # The extremes of each axis's sums and the minimum, read back in one go.
        extremes = [v for s in sums for v in torch.aminmax(s)]
        *extremes, minimum = torch.stack([*extremes, x.amin()]).tolist()
        deviations = {}
        for axis, s, low, high in zip(axes, sums, extremes[::2], extremes[1::2]):
            if low > 1e-6 or high < -1e-6:
                # No slice sums to 0, so the largest |sum - 1| is at one of the extremes.
                deviations[axis] = max(abs(low - 1), abs(high - 1))
                continue
            off = (s - 1).abs().masked_fill(s.abs() <= 1e-6, 0.0)  # fully masked rows are 0
            deviations[axis] = off.max().item()
        return minimum, deviations
    except Exception:  # under a functorch transform, or a tensor subclass without values
        return None


# --- the public context manager ---------------------------------------------------------------

class Trace:
    """The ops recorded inside a ``with shapetrace.trace(...)`` block.

    ``records`` are in execution order. ``diagnostics`` are the rule findings, computed when the
    block exits (or on first access).
    """

    def __init__(self, model: torch.nn.Module | None = None, *, dims=None, rules: bool = True,
                 root: str | None = None):
        from ._dims import Dims

        self.model = model
        self.dims = dims if isinstance(dims, Dims) else Dims(dims)
        self.records: list[OpRecord] = []
        self.returned: list[TensorMeta] = []
        self._run_rules = rules
        self._diagnostics = None
        self._module_stack: list[str] = []
        self._module_objs: list[torch.nn.Module] = []
        self._module = ""  # the innermost running module's path: _module_stack[-1], or ""
        self._names: dict[int, str] = {}
        self._root = root
        if model is not None:
            prefix = root or type(model).__name__
            for name, m in model.named_modules():
                self._names.setdefault(id(m), f"{prefix}.{name}" if name else prefix)
        self._recorder: _Recorder | None = None
        self._handles = []
        self._saved_showwarning = None
        self._analysed = False
        self.cache: dict = {}  # analysis results shared by rules (e.g. the consumer graph)
        self.exception: BaseException | None = None

    # context manager
    def __enter__(self) -> "Trace":
        if self._recorder is not None:
            raise RuntimeError("a shapetrace.trace() block cannot be entered twice")
        from torch.nn.modules import module as nn_module

        self._recorder = _Recorder(self)
        self._handles.append(nn_module.register_module_forward_pre_hook(self._pre_hook))
        self._handles.append(nn_module.register_module_forward_hook(self._post_hook, always_call=True))
        self._saved_showwarning = warnings.showwarning
        warnings.showwarning = self._showwarning
        try:
            self._recorder.__enter__()
        except BaseException:
            self._cleanup()
            raise
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            self._recorder.__exit__(exc_type, exc, tb)
        finally:
            self._cleanup()
        self.exception = exc
        self._finish()
        return False

    def _cleanup(self):
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
        if self._saved_showwarning is not None and warnings.showwarning == self._showwarning:
            warnings.showwarning = self._saved_showwarning
        self._module_stack.clear()
        self._module_objs.clear()
        self._module = ""

    def _finish(self):
        recorder = self._recorder
        if recorder is None:
            return
        for rec in self.records:
            for meta in rec.outputs:
                ref = meta.ref
                meta.ref = ref is not None and ref() is not None
        recorder.live.clear()
        recorder.funcs.clear()
        recorder.near_softmax.clear()
        # The trace keeps its recorder (a trace is entered once); without the link back, a
        # dropped trace is freed at once rather than left, with every record, to the garbage
        # collector.
        recorder.trace = None

    # hooks
    def _module_name(self, module: torch.nn.Module) -> str:
        name = self._names.get(id(module))
        if name is None:
            if self._module_objs:
                parent, parent_name = self._module_objs[-1], self._module_stack[-1]
                for child_name, child in parent.named_children():
                    self._names.setdefault(id(child), f"{parent_name}.{child_name}")
                name = self._names.get(id(module))
            if name is None:
                name = type(module).__name__
                self._names[id(module)] = name
        return name

    def _pre_hook(self, module, args):
        self._module = self._module_name(module)
        self._module_stack.append(self._module)
        self._module_objs.append(module)

    def _post_hook(self, module, args, output):
        if self._module_objs and self._module_objs[-1] is module:
            self._module_stack.pop()
            self._module_objs.pop()
            self._module = self._module_stack[-1] if self._module_stack else ""
        recorder = self._recorder
        if recorder is None or output is None:
            return
        for t in (output,) if isinstance(output, Tensor) else _tensors_in(output):
            entry = recorder._lookup(t)
            if entry is not None:
                entry[2].used += 1

    def _showwarning(self, message, category, filename, lineno, file=None, line=None):
        rec = self._recorder.current if self._recorder is not None else None
        if rec is not None:
            rec.warnings.append(f"{category.__name__}: {message}")
            if filename and filename.startswith(_OWN_DIR) and rec.site is not None:
                filename, lineno = rec.where[0], rec.where[1]
        if self._saved_showwarning is not None:
            self._saved_showwarning(message, category, filename, lineno, file, line)

    # results
    def _analyse(self):
        if self._analysed:
            return
        self._analysed = True
        from ._provenance import annotate

        annotate(self)

    @property
    def diagnostics(self):
        if self._diagnostics is None:
            self._analyse()
            if self._run_rules:
                from ._rules import run_trace_rules

                self._diagnostics = run_trace_rules(self)
            else:
                self._diagnostics = []
        return self._diagnostics

    def shape_of(self, meta: TensorMeta) -> str:
        self._analyse()
        from ._provenance import format_axes

        return format_axes(meta.axes, self.dims) if meta.axes is not None else str(tuple(meta.shape))

    def to_json(self) -> list[dict]:
        self._analyse()
        out = []
        for rec in self.records:
            item = {
                "op": rec.op,
                "module": rec.module,
                "file": rec.file,
                "line": rec.line,
                "source": rec.source,
                "inputs": [self.shape_of(m) for m in rec.inputs],
                "outputs": [self.shape_of(m) for m in rec.outputs],
            }
            if rec.error:
                item["error"] = f"{rec.error[0]}: {rec.error[1]}"
            if rec.warnings:
                item["warnings"] = list(rec.warnings)
            out.append(item)
        return out

    def print(self, console=None, **options) -> None:
        from ._render import print_trace

        print_trace(self, console=console, **options)

    def __len__(self):
        return len(self.records)

    def __iter__(self):
        return iter(self.records)


def _tensors_in(obj, depth: int = 0):
    if isinstance(obj, Tensor):
        yield obj
    elif depth < 3 and isinstance(obj, (tuple, list)):
        for x in obj:
            yield from _tensors_in(x, depth + 1)
    elif depth < 3 and isinstance(obj, dict):
        for x in obj.values():
            yield from _tensors_in(x, depth + 1)


def trace(model: torch.nn.Module | None = None, *, dims=None, rules: bool = True) -> Trace:
    """Record every tensor op run inside the ``with`` block.

    >>> with trace(model) as t:
    ...     y = model(x)
    >>> t.print()

    ``model`` is optional: it only gives modules their attribute paths (``blocks.0.attn``).
    ``dims`` overrides probe sizes used to name axes (``{"B": 5, "T": 7}``).
    """
    return Trace(model, dims=dims, rules=rules)
