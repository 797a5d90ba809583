"""The op vocabulary: names, families, display names, argument readers. Written down once.

Every stage names ops the same way (``F.softmax``, ``Tensor.view``, ``@``) and asks the same
questions of them (is it a matmul? does it only move values around? which axis does it
reduce?). Those answers live here, and every other module imports them; none keeps its own copy.
This module imports nothing from torch at module level beyond what naming needs: it is plain
data about ops.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from .compat import NN_MODULE, public_namespace

# --- names --------------------------------------------------------------------------------------

#: Python operator methods and the symbol a student writes for them.
OPERATORS = {
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
    """The one name of a torch function: ``F.softmax``, ``Tensor.view``, ``torch.cat``, ``@``,
    ``[]``, ``Tensor.T``, ``nn.init.normal_``. Cached per function."""
    try:
        return _NAMES[func]
    except (KeyError, TypeError):
        pass
    result = _name(func)
    try:
        _NAMES[func] = result
    except TypeError:
        pass
    return result


def _name(func) -> str:
    name = getattr(func, "__name__", None) or repr(func)
    owner = getattr(func, "__self__", None)
    if name == "__get__" and owner is not None:  # Tensor.T, Tensor.shape ... getters
        return f"Tensor.{getattr(owner, '__name__', 'attribute')}"
    if name in OPERATORS:
        return OPERATORS[name]
    qual = getattr(func, "__qualname__", name) or name
    module = getattr(func, "__module__", None) or ""
    if qual.startswith(("TensorBase.", "_TensorBase.", "Tensor.")):
        return "Tensor." + qual.split(".", 1)[1]
    if module.startswith("torch.nn.functional") or module == NN_MODULE:
        return f"F.{name}"
    if module.startswith("torch.nn.init"):
        return f"nn.init.{name}"
    if qual.startswith("_VariableFunctionsClass.") or module in ("torch", "torch.functional"):
        return f"torch.{name}"
    sub = public_namespace(module)  # torch.fft.fft is torch._C._fft.fft_fft
    if sub is not None:
        return f"torch.{sub}.{name.removeprefix(sub + '_')}"
    if module.startswith("torch"):
        return f"{module}.{name}"
    return name


def base_name(op: str) -> str:
    """``Tensor.masked_fill_`` -> ``masked_fill_``; operators stay as they are."""
    return op.rsplit(".", 1)[-1]


_BINOPS = {ast.MatMult: "@", ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/",
           ast.FloorDiv: "//", ast.Pow: "**", ast.Mod: "%"}
_SYMBOL_FUNCS = {
    "@": {"matmul", "__matmul__", "__rmatmul__"}, "+": {"add", "__add__", "__radd__"},
    "-": {"sub", "__sub__", "__rsub__"}, "*": {"mul", "__mul__", "__rmul__"},
    "/": {"div", "true_divide", "__truediv__", "__rtruediv__"},
    "//": {"floor_divide", "__floordiv__"}, "**": {"pow", "__pow__", "__rpow__"},
    "%": {"remainder", "__mod__"},
}


def display_name(op: str, source: str = "") -> str:
    """The name to show for an op: its operator when the source writes one (``a @ b`` runs as
    ``Tensor.matmul`` but reads as ``@``), else its name."""
    if not source or op in _SYMBOL_FUNCS or "." not in op:
        return op
    base = base_name(op)
    if not any(base in funcs for funcs in _SYMBOL_FUNCS.values()):
        return op
    symbol = _source_binop(source.strip())
    if symbol is not None and base in _SYMBOL_FUNCS.get(symbol, ()):
        return symbol
    return op


def _source_binop(segment: str) -> str | None:
    try:
        node = ast.parse(segment, mode="eval").body
    except SyntaxError:
        return None
    if isinstance(node, ast.BinOp):
        return _BINOPS.get(type(node.op))
    return None


# --- families -------------------------------------------------------------------------------------

SOFTMAXES = frozenset({"F.softmax", "Tensor.softmax", "torch.softmax"})
SDPA = "F.scaled_dot_product_attention"
#: torch's whole multi-head attention (``nn.MultiheadAttention`` runs it): projections, scores,
#: masks, softmax and the weighted sum in one recorded op (the ops it runs are recorded after it).
MHA_FORWARD = "F.multi_head_attention_forward"
#: Two-operand products whose operands may be attention weights and values.
MATMULS = frozenset({"@", "Tensor.matmul", "torch.matmul", "torch.bmm", "Tensor.bmm", "torch.mm",
                     "Tensor.mm", "torch.baddbmm", "Tensor.baddbmm", "torch.addmm", "Tensor.addmm",
                     "torch.einsum"})
#: Products whose two operands are the first two inputs (no bias in front, not an einsum).
PLAIN_MATMULS = frozenset({"@", "Tensor.matmul", "torch.matmul", "torch.bmm", "Tensor.bmm",
                           "torch.mm", "Tensor.mm"})
#: Products with a bias operand first: ``addmm(bias, a, b)``.
BIASED_MATMULS = frozenset({"torch.addmm", "Tensor.addmm", "torch.baddbmm", "Tensor.baddbmm"})
EINSUMS = frozenset({"torch.einsum", "torch.functional.einsum"})
DROPOUTS = frozenset({"F.dropout", "torch.dropout", "Tensor.dropout", "F.dropout1d", "F.dropout2d",
                      "F.alpha_dropout", "F.feature_alpha_dropout"})
#: Draws of Gaussian noise: what a sampler or a noise injection adds on purpose, unlike a drop mask.
GAUSSIAN_DRAWS = frozenset({"torch.randn", "torch.randn_like", "torch.normal", "Tensor.normal_"})
#: Reshapes in the wide sense: the same elements in row-major order, new sizes.
RESHAPES = frozenset({"Tensor.view", "Tensor.reshape", "torch.reshape", "Tensor.flatten",
                      "torch.flatten", "Tensor.unflatten", "torch.unflatten", "Tensor.view_as",
                      "Tensor.reshape_as", "Tensor.unsqueeze", "torch.unsqueeze", "Tensor.squeeze",
                      "torch.squeeze"})
#: The reshapes that can jumble: they may split and merge axes.
SPLIT_MERGES = frozenset({"Tensor.view", "Tensor.reshape", "torch.reshape", "Tensor.view_as",
                          "Tensor.reshape_as", "Tensor.flatten", "torch.flatten",
                          "Tensor.unflatten", "torch.unflatten"})
EXPANDS = frozenset({"Tensor.expand", "Tensor.expand_as", "torch.broadcast_to",
                     "Tensor.broadcast_to"})
PERMUTES = frozenset({"Tensor.transpose", "torch.transpose", "Tensor.swapaxes", "torch.swapaxes",
                      "Tensor.swapdims", "Tensor.transpose_", "Tensor.T", "Tensor.t", "torch.t",
                      "Tensor.mT", "Tensor.permute", "torch.permute", "Tensor.movedim",
                      "torch.movedim", "Tensor.moveaxis"})
#: ``.T`` and friends: a reversal of every axis.
REVERSALS = frozenset({"Tensor.T", "Tensor.t", "torch.t"})
#: Casts and copies: an op that changes no value.
CASTS = frozenset({"Tensor.to", "Tensor.float", "Tensor.half", "Tensor.bfloat16", "Tensor.double",
                   "Tensor.type", "Tensor.type_as", "Tensor.contiguous", "Tensor.clone",
                   "torch.clone", "Tensor.detach"})
#: Ops that hand on a tensor's values without its gradient.
DETACHES = frozenset({"Tensor.detach", "torch.detach", "Tensor.data"})
#: Ops that change no value, only where it sits: followed through when tracing a tensor back.
MOVES = CASTS | DROPOUTS | RESHAPES | PERMUTES | EXPANDS | frozenset(
    {"[]", "Tensor.repeat_interleave", "torch.repeat_interleave", "Tensor.repeat"})
#: ops that cut a tensor into pieces along an axis, each piece its values as they were
SPLITS = frozenset({"Tensor.chunk", "torch.chunk", "Tensor.split", "torch.split", "Tensor.unbind",
                    "torch.unbind"})
#: The everyday moves (indexing, unsqueeze, view/reshape, expand, transpose/permute/mT, casts,
#: copies): followed back to tell whether two operands were cut from one tensor.
SIMPLE_MOVES = frozenset({"[]", "Tensor.unsqueeze", "torch.unsqueeze", "Tensor.view",
                          "Tensor.reshape", "Tensor.expand", "Tensor.transpose", "Tensor.permute",
                          "Tensor.mT", "Tensor.float", "Tensor.to", "Tensor.double",
                          "Tensor.contiguous", "Tensor.clone", "Tensor.detach"})
#: additions, however written (``a + b``, ``a.add(b)``, ``torch.add``, in place, reflected)
ADDS = frozenset({"+", "Tensor.add", "torch.add", "Tensor.add_", "+=", "Tensor.__radd__"})
MULS = frozenset({"Tensor.mul", "torch.mul", "*", "Tensor.mul_", "Tensor.multiply",
                  "torch.multiply"})
DIVS = frozenset({"Tensor.div", "torch.div", "/", "Tensor.div_", "Tensor.true_divide",
                  "torch.true_divide", "Tensor.divide", "torch.divide"})
MASKED_FILLS = frozenset({"Tensor.masked_fill", "Tensor.masked_fill_", "torch.masked_fill"})
WHERES = frozenset({"torch.where", "Tensor.where"})
#: Ops that keep every element of the followed operand at its position (up to broadcasting).
#: Ops whose outputs hold only their inputs' values and the values the call passes (a fill
#: value): they make no NaN or Inf of their own, whatever the fill (``masked_fill(m, -inf)``).
SELECTS_VALUES = MASKED_FILLS | WHERES | frozenset({
    "torch.full", "torch.full_like", "Tensor.new_full", "Tensor.fill_", "torch.fill", "F.pad"})
KEEPS_VALUES_IN_PLACE = MULS | DIVS | DROPOUTS | MASKED_FILLS | WHERES | CASTS | frozenset({
    "Tensor.add", "torch.add", "+", "Tensor.add_", "Tensor.sub", "torch.sub", "-", "Tensor.sub_",
    "torch.nan_to_num", "Tensor.nan_to_num", "Tensor.clamp", "torch.clamp", "Tensor.clamp_",
    "Tensor.clip", "torch.clip", "Tensor.tril", "torch.tril", "Tensor.triu", "torch.triu",
    "Tensor.tril_", "Tensor.triu_",
})
#: Ops that build or apply a triangular matrix (a causal mask, usually).
TRIANGULAR = frozenset({"torch.tril", "Tensor.tril", "torch.triu", "Tensor.triu", "Tensor.tril_",
                        "Tensor.triu_", "torch.tril_indices", "torch.triu_indices"})
#: Order comparisons (``arange[:, None] >= arange[None, :]`` builds a causal mask).
COMPARISONS = frozenset({"<", "<=", ">", ">=", "torch.lt", "torch.le", "torch.gt", "torch.ge",
                         "Tensor.lt", "Tensor.le", "Tensor.gt", "Tensor.ge"})
#: Distances between the rows of two operands (L2 attention's queries and keys).
DISTANCES = frozenset({"torch.cdist"})
#: Casts to integers or booleans (a mask said again as 0/1 or as True/False).
INTEGER_CASTS = frozenset({"Tensor.bool", "Tensor.long", "Tensor.int", "Tensor.byte"})
#: Equality tests (``keep == 0`` says a 0/1 mask again, the other way round).
EQUALITIES = frozenset({"==", "!=", "Tensor.eq", "Tensor.ne", "torch.eq", "torch.ne"})
#: Logical negations (``~mask``).
NEGATIONS = frozenset({"~", "Tensor.logical_not", "torch.logical_not", "Tensor.bitwise_not",
                       "torch.bitwise_not"})
#: Assignments that write into their first operand.
WRITES = frozenset({"[]=", "+=", "-=", "*=", "/=", "@=", "//=", "%=", "**=", "&=", "|=", "^="})
#: Elementwise arithmetic between operands (where both may be stretched by broadcasting).
ARITHMETIC_OPERATORS = frozenset({"+", "-", "*", "/", "**", "%", "//"})
ARITHMETIC_NAMES = frozenset({
    "add", "sub", "subtract", "rsub", "mul", "multiply", "div", "divide", "true_divide",
    "floor_divide", "pow", "float_power", "maximum", "minimum", "fmax", "fmin", "fmod",
    "remainder", "atan2", "arctan2", "hypot", "xlogy", "__rdiv__", "__rsub__", "__rpow__",
    "__rtruediv__", "__rmul__", "__radd__", "__rfloordiv__", "__rmod__"})
#: Base names of ops that reduce over a ``dim`` argument (all axes when it is left out).
REDUCTIONS = frozenset({
    "sum", "mean", "amax", "amin", "max", "min", "var", "std", "norm", "argmax", "argmin",
    "logsumexp", "prod", "any", "all", "median", "nansum", "nanmean", "count_nonzero", "var_mean",
    "std_mean", "aminmax"})
#: Base names of ops that mix values along one axis without removing it.
ALONG_AXIS = frozenset({"softmax", "log_softmax", "cumsum", "cumprod", "normalize", "softmin"})
#: Base names of ops that pick elements rather than compute from all of them.
PICKS = frozenset({"__getitem__", "[]", "select", "narrow", "index_select", "gather",
                   "take_along_dim", "unbind", "split", "chunk", "tensor_split"})


def cut_to_empty(records) -> bool:
    """Whether one of ``records`` cut an axis down to size 0 (``x[:, n:]`` of ``n`` tokens,
    a split past the end). A tensor made empty on purpose (``zeros(T, 0)``, a cache not filled
    yet) is not one."""
    return any(base_name(rec.op) in PICKS and rec.inputs and 0 not in rec.inputs[0].shape
               and any(0 in m.shape for m in rec.outputs if getattr(m, "shape", None) is not None)
               for rec in records)


#: Softmaxes in log space: normalise along one axis like a softmax.
LOG_SOFTMAXES = frozenset({"F.log_softmax", "Tensor.log_softmax", "torch.log_softmax"})
#: Norms over the trailing ``normalized_shape`` axes of their input.
TRAILING_NORMS = frozenset({"F.layer_norm", "torch.layer_norm", "F.rms_norm"})
#: Table lookups by integer index: an ``nn.Embedding`` and its functional form.
EMBEDDINGS = frozenset({"F.embedding", "torch.embedding"})
#: What a layer computes with its weight: ``nn.Linear``, ``nn.Conv2d``, ``nn.Embedding`` and
#: their functional forms.
LAYER_OPS = EMBEDDINGS | frozenset({
    "F.linear", "F.bilinear", "F.conv1d", "F.conv2d", "F.conv3d", "F.conv_transpose1d",
    "F.conv_transpose2d", "F.conv_transpose3d", "torch.addmm", "Tensor.addmm",
    # what a convolution layer's forward calls is recorded by torch's own name
    "torch.conv1d", "torch.conv2d", "torch.conv3d", "torch.conv_transpose1d",
    "torch.conv_transpose2d", "torch.conv_transpose3d"})
#: Base names of ops through which a position index reaches a tensor: building the indices,
#: looking them up in a table, or picking by them.
POSITION_OPS = PICKS | frozenset({"arange", "embedding"})
ELEMENTWISE_NAMES = frozenset({
    "add", "sub", "mul", "div", "true_divide", "floor_divide", "pow", "eq", "ne", "lt", "le",
    "gt", "ge", "logical_and", "logical_or", "logical_not", "logical_xor", "bitwise_and",
    "bitwise_or", "bitwise_not", "maximum", "minimum", "fmod", "remainder", "atan2",
    "relu", "gelu", "silu", "tanh", "sigmoid", "exp", "log", "sqrt", "rsqrt", "abs", "neg",
    "sin", "cos", "erf", "sign", "square", "reciprocal", "exp2", "log2", "log1p", "expm1",
    "floor", "ceil", "round", "trunc", "isfinite", "isnan", "isinf", "lerp", "addcmul",
    "addcdiv", "mish", "softplus", "elu", "leaky_relu", "hardtanh", "relu6", "selu", "celu",
    "glu", "softsign", "logsigmoid", "hardswish", "hardsigmoid", "gelu_", "relu_", "add_",
    "sub_", "mul_", "div_", "pow_", "exp_", "sqrt_", "neg_", "sigmoid_", "tanh_", "masked_fill",
    "float_power", "xlogy", "copysign", "heaviside", "polar", "angle", "conj", "positive",
    "sinh", "cosh", "asin", "acos", "atan", "frac", "nan_to_num", "sgn", "logit",
})
#: Ops whose output has the axes of their (first) input.
SAME_AXES = frozenset({
    "Tensor.contiguous", "Tensor.clone", "torch.clone", "Tensor.float", "Tensor.double",
    "Tensor.half", "Tensor.bfloat16", "Tensor.to", "Tensor.type", "Tensor.type_as",
    "Tensor.detach", "torch.detach", "Tensor.cpu", "Tensor.cuda", "Tensor.bool", "Tensor.long",
    "Tensor.int", "F.dropout", "torch.dropout", "Tensor.requires_grad_", "F.layer_norm",
    "torch.layer_norm", "F.rms_norm", "F.group_norm", "F.normalize", "F.softmax",
    "Tensor.softmax", "torch.softmax", "F.log_softmax", "Tensor.log_softmax",
    "torch.log_softmax", "torch.tril", "Tensor.tril", "torch.triu", "Tensor.triu",
    "Tensor.tril_", "Tensor.triu_", "Tensor.masked_fill", "Tensor.masked_fill_",
    "Tensor.cumsum", "torch.cumsum", "Tensor.zero_", "Tensor.fill_", "Tensor.copy_",
    "Tensor.uniform_", "Tensor.normal_", "F.dropout1d", "F.dropout2d", "F.alpha_dropout",
    "torch.zeros_like", "torch.ones_like", "torch.empty_like", "torch.full_like",
    "torch.rand_like", "torch.randn_like", "Tensor.new_zeros", "torch.nan_to_num",
    "Tensor.masked_scatter", "Tensor.clamp", "torch.clamp", "Tensor.clamp_", "Tensor.clip",
    "torch.clip", "Tensor.flip", "torch.flip", "Tensor.roll", "torch.roll", "Tensor.sort",
    "torch.sort", "Tensor.argsort", "torch.argsort", "Tensor.cummax", "Tensor.cumprod",
    "torch.cumprod", "Tensor.__abs__", "F.batch_norm", "F.instance_norm",
})
#: Random draws: data (a script's stand-in for inputs), not constants such as an ``arange``.
RANDOM_FACTORIES = frozenset({
    "torch.rand", "torch.randn", "torch.randint", "torch.rand_like", "torch.randn_like",
    "torch.randint_like", "torch.normal", "torch.randperm", "torch.bernoulli",
    "torch.multinomial", "Tensor.uniform_", "Tensor.normal_",
})
#: Base names of ops that can make a NaN or an Inf out of finite numbers. Products of two
#: tensors are among them (not layers' ``linear``): an overflowing ``q @ k`` is found where it is
#: made, not at the softmax it turns to NaN, for one sum over the product's output.
RISKY_NAMES = frozenset({
    "@", "matmul", "mm", "bmm", "einsum", "baddbmm",
    "softmax", "log_softmax", "softmin", "div", "div_", "true_divide", "__rdiv__", "__rtruediv__",
    "/", "floor_divide", "reciprocal", "reciprocal_", "log", "log_", "log2", "log10", "log1p",
    "sqrt", "sqrt_", "rsqrt", "pow", "pow_", "__rpow__", "**", "float_power", "exp", "exp_",
    "exp2", "expm1", "acos", "asin", "atanh", "acosh", "arccos", "arcsin", "std", "var",
    "std_mean", "var_mean", "logit", "erfinv", "prod", "cumprod", "logsumexp", "xlogy",
    "normalize", "cosine_similarity", "nll_loss", "cross_entropy", "kl_div", "mean",
})
#: Ops that return whatever was in memory: a NaN there is not one the user made.
UNINITIALISED = frozenset({"torch.empty", "torch.empty_like", "Tensor.new_empty",
                           "torch.empty_strided", "Tensor.resize_",
                           "Tensor.new"})  # x.new(B, n): sizes, memory never written
#: In-place ops that write every element whatever it held (``x.new(B, n).zero_()``): what they
#: return is made of their other operands, not of the memory they wrote into.
OVERWRITES = frozenset({"Tensor.zero_", "Tensor.fill_", "Tensor.copy_", "Tensor.uniform_",
                        "Tensor.normal_", "Tensor.random_", "Tensor.bernoulli_",
                        "Tensor.exponential_"})
#: Attribute reads and queries that make no tensor worth recording: only a use of their input.
PASSTHROUGH_NAMES = frozenset({
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
})
#: Getters that do make a new tensor (``x.T``): recorded, unlike ``x.shape``.
TENSOR_GETTERS = frozenset({"T", "mT", "H", "mH", "real", "imag"})

#: Passthroughs that read what a tensor is (its shape, dtype, device), not its values: code
#: that only asks these has not used the values (``B, T, C = q.shape``).
METADATA_NAMES = frozenset({
    "shape", "dtype", "device", "ndim", "is_cuda", "is_sparse", "is_quantized", "is_meta",
    "is_nested", "requires_grad", "layout", "names", "is_leaf", "_version", "output_nr",
    "is_mkldnn", "itemsize", "nbytes", "is_complex", "size", "dim", "numel", "is_contiguous",
    "stride", "storage_offset", "is_floating_point", "__len__", "element_size", "get_device",
    "has_names", "is_inference", "is_signed", "nelement", "is_pinned", "_is_view",
})

def is_passthrough(func) -> bool:
    """Whether calling ``func`` only reads something of its input (``x.shape``, ``x.size()``)."""
    name = getattr(func, "__name__", "")
    if name == "__get__":
        owner = getattr(func, "__self__", None)
        return getattr(owner, "__name__", "") not in TENSOR_GETTERS
    return name in PASSTHROUGH_NAMES


def is_arithmetic(op: str) -> bool:
    return op in ARITHMETIC_OPERATORS or base_name(op) in ARITHMETIC_NAMES

def reads_metadata_only(func) -> bool:
    """Whether a passthrough (:func:`is_passthrough`) reads only a tensor's shape, dtype or
    device, not its values."""
    name = getattr(func, "__name__", "")
    if name == "__get__":
        name = getattr(getattr(func, "__self__", None), "__name__", "")
    return name in METADATA_NAMES



# --- reading recorded arguments -------------------------------------------------------------------

def norm_dim(d, ndim: int) -> int:
    """A possibly negative axis index as a non-negative one."""
    d = int(d)
    return d + ndim if d < 0 else d


def ints(args) -> tuple[int, ...] | None:
    """``view(2, 3)`` / ``view((2, 3))`` / ``view(torch.Size)`` -> (2, 3)."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    try:
        return tuple(int(a) for a in args)
    except (TypeError, ValueError):
        return None


def movedim_order(src, dst, n: int) -> list[int]:
    """``order[j]`` = the input axis that output axis j comes from, for ``movedim(src, dst)``."""
    src = [src] if isinstance(src, int) else list(src)
    dst = [dst] if isinstance(dst, int) else list(dst)
    src = [norm_dim(s, n) for s in src]
    dst = [norm_dim(d, n) for d in dst]
    order: list[int | None] = [None] * n
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(i for i in range(n) if i not in src)
    return [o if o is not None else next(rest) for o in order]


def permutation(rec) -> list[int] | None:
    """For a transpose-like record, ``perm[j]`` = the input axis that output axis j comes from."""
    op = rec.op
    if op not in PERMUTES or not rec.inputs or not rec.outputs:
        return None
    n = rec.inputs[0].ndim
    perm = list(range(n))
    try:
        if op in REVERSALS:
            return perm[::-1]
        if op == "Tensor.mT":
            perm[-1], perm[-2] = perm[-2], perm[-1]
            return perm
        if op in ("Tensor.permute", "torch.permute"):
            order = ints(rec.args[1:] if len(rec.args) > 1 else (rec.kwargs.get("dims", ()),))
            if order is None or len(order) != n:
                return None
            return [norm_dim(i, n) for i in order]
        if op in ("Tensor.movedim", "torch.movedim", "Tensor.moveaxis"):
            return movedim_order(rec.arg(1, "source"), rec.arg(2, "destination"), n)
        a, b = norm_dim(rec.arg(1, "dim0", 0), n), norm_dim(rec.arg(2, "dim1", 1), n)
    except (TypeError, ValueError, IndexError, StopIteration):
        return None
    perm[a], perm[b] = perm[b], perm[a]
    return perm


def matmul_operands(rec) -> tuple[int, int] | None:
    """Input slots of the two multiplied operands of a product."""
    if rec.op in BIASED_MATMULS:
        return (1, 2) if len(rec.inputs) >= 3 else None
    return (0, 1) if len(rec.inputs) >= 2 else None


def softmax_dim(rec) -> tuple[int, bool] | None:
    """The axis a softmax normalises, and whether it was left implicit."""
    if not rec.inputs:
        return None
    n = rec.inputs[0].ndim
    dim = rec.arg(1, "dim")
    if dim is None:
        return (0 if n in (0, 1, 3) else 1), True  # torch's legacy choice
    try:
        return norm_dim(dim, n), False
    except (TypeError, ValueError):
        return None


def reduced_axes(rec) -> tuple[list[int], Any] | None:
    """The axes of its first input that a reduction (``REDUCTIONS``), an along-axis op
    (``ALONG_AXIS``) or a trailing norm (``TRAILING_NORMS``) runs over, non-negative, with the
    argument that named them: the ``dim`` as given (None: every axis) or, for a norm, its
    ``normalized_shape``. None for any other op, or when the axes cannot be read."""
    if not rec.inputs:
        return None
    n = rec.inputs[0].ndim
    op = rec.op
    if op in TRAILING_NORMS:
        shape = rec.arg(1, "normalized_shape")
        if shape is None:
            return None
        k = len(shape) if isinstance(shape, (tuple, list)) else 1
        return list(range(n - k, n)), shape
    base = base_name(op)
    if base not in REDUCTIONS and base not in ALONG_AXIS:
        return None
    if base == "normalize":  # F.normalize(x, p=2.0, dim=1)
        dim = rec.arg(2, "dim", 1)
    else:
        dim = rec.arg(1, "dim")
    if dim is None:
        return list(range(n)), None
    dims = [dim] if isinstance(dim, int) else dim
    if not n or not isinstance(dims, (tuple, list)) or not all(isinstance(d, int) for d in dims):
        return None
    return [d % n for d in dims], dim


_EINSUM_TERM = re.compile(r"[A-Za-z]|\.\.\.")


def einsum_terms(rec) -> tuple[list[str], str] | None:
    """The operand terms and the output term of a recorded ``torch.einsum`` call
    (``"bqhd,bkhd->bhqk"`` -> ``(["bqhd", "bkhd"], "bhqk")``), with the implicit output filled in."""
    eq = rec.arg(0, "equation")
    if not isinstance(eq, str):
        return None
    eq = eq.replace(" ", "")
    if "->" in eq:
        lhs, rhs = eq.split("->")
    else:
        lhs = eq
        letters = [c for c in lhs if c.isalpha()]
        rhs = ("..." if "..." in lhs else "") + "".join(
            sorted(c for c in set(letters) if letters.count(c) == 1))
    terms = lhs.split(",")
    if len(terms) != len(rec.inputs):
        return None
    return terms, rhs


def einsum_tokens(term: str) -> list[str]:
    """``"b...hd"`` -> ``["b", "...", "h", "d"]``."""
    return _EINSUM_TERM.findall(term)


def einsum_letters(term: str, ndim: int) -> list[str] | None:
    """One letter per axis of an operand; the axes under ``...`` get ``"."``."""
    if "..." in term:
        head, tail = term.split("...", 1)
        n_ell = ndim - len(head) - len(tail)
        if n_ell < 0:
            return None
        return list(head) + ["."] * n_ell + list(tail)
    return list(term) if len(term) == ndim else None


# --- numbers --------------------------------------------------------------------------------------

def is_prime(n: int) -> bool:
    if n < 2:
        return False
    i = 2
    while i * i <= n:
        if n % i == 0:
            return False
        i += 1
    return True


def next_prime(n: int, avoid=()) -> int:
    """The smallest prime >= n that is not in ``avoid``."""
    n = max(n, 2)
    while not is_prime(n) or n in avoid:
        n += 1
    return n

