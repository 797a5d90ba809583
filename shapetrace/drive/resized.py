"""The probe sizes a failed run asks for: what ``probe_sizes.ProbeSizes`` tries next.

shapetrace's probe sizes are odd primes and a sequence length of its own. A module may need
another: an even head size for rotary pairs, a square number of tokens for a grid, the length a
table or a kernel was built for, a width its own code fixes, as many heads as a count its
constructor keeps at its default. Each is read from the error of the run that failed.
"""

from __future__ import annotations

import re

from .asked import (EVEN_HEAD_SIZE, INNER, MASK_MET, MET, SQUARE_ASKED, SQUARE_LENGTH, VIEW_FAILED, fixed_width_of,
                    grid_pattern, grid_view, halved_size, is_square, length_asked, raised_by_check,
                    window_tokens)
from ..base.records import module_at
from .defaults_read import constructor_defaults


def resized(failed, plan, free: frozenset) -> tuple[str, int, str] | None:
    """The probe size a failed run asks for, as ``(name, size, why)`` (see ``probe_sizes.ProbeSizes``), or
    None: the size a failing view, check, table or kernel says the module needs."""
    op, raised = failed.failed_op, failed.raised
    halved = halved_size(raised, plan.dims, free, failed.raised_at)
    if halved is not None:  # the error names the halves of an odd head size: before all else
        return halved
    if raised is not None and "T" in free and window_tokens(plan.init) not in (None, plan.dims["T"]):
        return "T", window_tokens(plan.init), "the tokens of the grid or window the module is built for"
    if raised is not None and "T" in free and (asked := length_asked(failed.raised_at)):
        return "T", asked, "the length the code's own check asks for"
    if raised is not None and "T" in free and not is_square(plan.dims["T"]):
        if grid_pattern(raised) or grid_view(raised, op, plan.dims["T"]):  # 'b (h w) c'
            return "T", SQUARE_LENGTH, "a square number of tokens, as the pattern folds them"
        if SQUARE_ASKED.search(str(raised)) and raised_by_check(failed.raised_at):
            return "T", SQUARE_LENGTH, "a square number of tokens, as the code asks"
    fixed = (MET.search(str(raised)) or MASK_MET.search(str(raised))) \
        if raised is not None and "T" in free else None  # a mask of its own length too
    sizes = {int(n) for n in fixed.groups()} if fixed is not None else set()
    if plan.dims["T"] in sizes:
        (size,) = sizes - {plan.dims["T"]} or {0}  # a length the module fixed itself
        if 1 < size <= 4096 and size not in plan.dims.values() and not _of_probes(size, plan.dims):
            return "T", size, "the length of a table the module builds at a size of its own"
        if size == plan.dims.get("L") and "L" not in plan.dims.explicit:  # max_len rows, uncut:
            return "T", size, "the length of the table built for the maximum length"  # chosen T
    if sizes and _built_for_longest(sizes, plan.dims):
        return "T", plan.dims["L"], "the maximum length, which the module's tables are built for"
    kernel = _KERNEL.search(str(raised)) if raised is not None and "T" in free else None
    if kernel is not None:  # a convolution as tall as the maximum length: (max_len, 1) kernels
        sides = [int(n) for n in kernel.group(1).split(" x ")]
        spans = [int(n) for n in kernel.group(2).split(" x ")]
        for side, span in zip(sides, spans):
            if side == plan.dims["T"] and span > side and span == plan.dims.get("L") \
                    and "L" not in plan.dims.explicit:
                return "T", span, "as long as the convolution's kernel, built for the maximum length"
    inner = INNER.search(str(raised)) if raised is not None and "T" in free else None
    if inner is not None and int(inner.group(1)) == plan.dims["T"] != plan.dims.get("L") \
            and int(inner.group(2)) == plan.dims.get("L") and "L" not in plan.dims.explicit \
            and failed.reads_moved_input(op):  # nn.Linear(seq_len, d_model) over the time axis
        return "T", plan.dims["L"], "the length its layers over the time axis are built for"
    # a linear layer's width is the module's own only where it reads the guessed input as
    # it came (moved at most): after a layer of the module, a width of its own is its bug
    fixed_width = fixed_width_of(raised, plan.dims, free, linear=failed.reads_moved_input(op))
    if fixed_width is not None:
        return "C", fixed_width, "the width the module's own code fixes (a constant, or a size its callers pass)"
    if op is None or raised is None or op.op not in _RESHAPES:
        return None
    found = VIEW_FAILED.search(str(raised))
    if found is None:
        return None
    target = [int(n) for n in found.group(1).split(",") if n.strip()]
    numel = int(found.group(2))
    dims = plan.dims
    if -1 in target:  # (..., -1, 2): the pairs of rotary positions need an even head size
        known = 1
        for n in target:
            known *= n if n != -1 else 1
        if numel % known and numel % 2 and dims["d"] % 2 and "d" in free \
                and target[-1] == 2:
            return "d", EVEN_HEAD_SIZE, "an even head size: its features are taken in pairs"
        longest = dims.get("L")
        if numel % known and "T" in free and longest in target and longest != dims["T"] \
                and "L" not in dims.explicit and (numel // dims["T"] * longest) % known == 0 \
                and any(dims["T"] in m.shape for m in op.inputs):
            # ``view(-1, heads, self.seq_len, width)``: a module built for sequences of the
            # length its constructor was given
            return "T", longest, "the length the module was built for, which its view asks for"
        return None
    if 0 in target and "T" in free and any(dims["T"] in m.shape for m in op.inputs):
        # sides worked out from the length came out 0 (``H = W = int(sqrt(T // 32))``): the
        # sequence is too short for the grid the code folds it into: one with sides of 4
        constants = 1
        for n in target:
            constants *= n if n and n not in dims.values() else 1
        new = constants * 4 ** target.count(0)
        if dims["T"] < new <= 4096:
            return "T", new, "a length the grid the forward folds it into can hold"
    wanted = 1
    for n in target:
        wanted *= n
    kept = _kept_count(target, plan, op)
    if kept is not None and not {"H", "C"} & dims.explicit:
        return "H", kept, "the count of heads the constructor keeps as its own default"
    kept = _count_of_layer(target, plan, op, failed.model)
    if kept is not None and not {"H", "C"} & dims.explicit:
        return "H", kept[1], (f"the count of heads the layer that splits the width keeps at its "
                              f"constructor's default ({kept[0]})")
    head = _fixed_head_size(target, plan, op)
    if head is not None and "d" in free and not {"H", "C"} & dims.explicit:  # the width: d free
        return "C", head * dims["H"], (f"whole heads of the head size the code fixes ({head}: "
                                       f"its heads are counted as the width // {head})")
    for name in ("T", "S"):  # the sequence must be as long as what the view asks for
        size = dims[name]
        if name in free and (wanted * size) % numel == 0 and numel % size == 0:
            new = wanted * size // numel
            if new != size and 1 < new <= 4096 and any(size in m.shape for m in op.inputs):
                return name, new, f"the sequence length {failed.failed_op.op} asks for"
    return None


def _built_for_longest(sizes: set[int], dims) -> bool:
    """Whether two sizes that met at an op, neither a probe size, are what the input's length
    and the maximum length each become (``T // 2 + 1`` frequencies against a filter of
    ``L // 2 + 1``): a module whose tables are built for inputs of the maximum length. The
    reading stands only if the forward then runs."""
    L = dims.get("L")
    return L is not None and "L" not in dims.explicit and dims["T"] != L and len(sizes) == 2 \
        and not sizes & set(dims.values())


def _of_probes(size: int, dims) -> bool:
    """Whether ``size`` is the batch times a sequence's length (B*T: a batch folded into the
    positions by a guessed input's ``view(-1, ...)``), not a length of the module's own."""
    batch = dims.get("B")
    return batch is not None and any(dims.get(n) is not None and batch * dims[n] == size
                                     for n in ("T", "S"))


def _count_of_layer(target: list[int], plan, op, model) -> tuple[str, int] | None:
    """``("h=4", 4)``: a count a layer keeps at its constructor's default (an attention its
    parent builds as ``Attention(width)``, its ``h=4`` heads left as they are) that its view
    splits the width by, when the width shapetrace chose does not divide by it: (B, T, C)
    viewed as (B, T, 4, C // 4). The default tells the count from the head size the width
    made (C // 4), which the view holds beside it. None otherwise, or when the count is one of
    the probe sizes."""
    width = plan.dims["C"]
    if model is None or not op.inputs or op.inputs[0].shape[-1] != width:
        return None
    layer = module_at(model, op.module)
    if layer is None:
        return None
    defaults = constructor_defaults(type(layer))
    kept = {value for value in vars(layer).values() if type(value) is int}
    for n in target:
        if 1 < n <= 64 and width % n and width // n in target and n not in plan.dims.values() \
                and n in kept:
            name = next((k for k, v in defaults.items() if type(v) is int and v == n), None)
            if name is not None:
                return f"{name}={n}", n
    return None


def _kept_count(target: list[int], plan, op) -> int | None:
    """A count the view splits the width by that the constructor kept at its own default
    (``head: int = 8`` that no name says is the heads' count), when the width shapetrace chose
    does not divide by it: (B, T, C) viewed as (B, T, 8, C // 8). None otherwise."""
    init, cls = plan.init, plan.request.module
    width = plan.dims["C"]
    if not init or not isinstance(cls, type) or not op.inputs or op.inputs[0].shape[-1] != width:
        return None
    defaults = constructor_defaults(cls)
    for name, value in init.items():
        if type(value) is int and 1 < value <= 64 and value == defaults.get(name) \
                and width % value and value in target and width // value in target \
                and value not in plan.dims.values():
            return value
    return None


def _fixed_head_size(target: list[int], plan, op) -> int | None:
    """A head size the code fixes and divides the width by to count its heads (``head_dim =
    64; heads = width // head_dim``), when the width shapetrace chose does not divide by it:
    (B, T, C) viewed as (B, T, C // 64, 64) holds fewer features than C. None otherwise."""
    width = plan.dims["C"]
    if not op.inputs or op.inputs[0].shape[-1] != width:
        return None
    probes = set(plan.dims.values())
    for count, size in zip(target, target[1:]):
        if 1 < size <= 256 and width % size and count == width // size and size not in probes \
                and size != width and count > 0:
            return size
    return None


#: what torch says of a convolution whose kernel is larger than its input
_KERNEL = re.compile(r"padded input size per channel: \(([\d x]+)\)\. Kernel size: \(([\d x]+)\)")

#: the ops that ask for a shape
_RESHAPES = frozenset({"Tensor.view", "Tensor.reshape", "torch.reshape", "Tensor.unflatten",
                       "torch.unflatten"})
