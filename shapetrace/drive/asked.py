"""What a failure asks of the sizes: an even one (``divisible by 2``), a square number of
tokens (an einops pattern that folds them into a grid, the module's own check), and whether a
failure came from the module's own code rather than from an op of torch's."""

from __future__ import annotations

import ast
import linecache
import math
import re

from ..base.dims import Dims
from ..base.names import WINDOW_SIDES, dim_of_word
from ..base.source import file_tree, is_library_file

#: an even size for a head size that must be even (rotary pairs), no probe size's multiple
EVEN_HEAD_SIZE = 16
#: words of an error or a line that ask for an even size
EVEN_ASKED = re.compile(r"divisible by 2\b|multiple of 2\b|\beven\b|% ?2\b", re.I)
#: a size's divisor an error asks for: ``divisible by 8``, ``divisible by num_groups (32)``
DIVISOR_ASKED = re.compile(r"divisible by (?:\w+ )?\(?(\d+)\)?", re.I)


def width_multiple(text: str, width: int) -> int | None:
    """The head size that makes every width a constructor builds from ``width`` divisible as
    ``text`` (its error) asks, when the size refused is a multiple of the width (a GroupNorm of
    32 groups over 11 * 143 channels): the smallest multiple of :data:`EVEN_HEAD_SIZE` the
    divisor divides; None when nothing asks it, or the divisor is above 64."""
    import math

    asked = DIVISOR_ASKED.search(text)
    numbers = [int(n) for n in re.findall(r"\b\d+\b", text)]
    if asked is None or not any(n and n % width == 0 for n in numbers):
        return None
    divisor = int(asked.group(1))
    return math.lcm(EVEN_HEAD_SIZE, divisor) if 2 <= divisor <= 64 else None


def count_multiple(text: str, dims, free) -> tuple[str, int, str] | None:
    """The head count or head size a constructor's error asks for when it refused the probe's
    with a divisor of its own (``query_heads (11) must be divisible by kv_heads (4)``,
    ``head_dim (13) must be divisible by 8``): ``("H", twice the divisor)`` (so that a
    grouping is checked too) or ``("d", the smallest multiple of the even head size it
    divides)``, with why; None when nothing asks it, or for sizes not ``free``."""
    import math

    asked = DIVISOR_ASKED.search(text)
    numbers = {int(n) for n in re.findall(r"\b\d+\b", text)}
    divisor = int(asked.group(1)) if asked is not None else 0
    for name in ("H", "d"):
        size = dims.get(name)
        if name in free and size in numbers and 2 <= divisor <= 32 and size % divisor:
            size = 2 * divisor if name == "H" else math.lcm(EVEN_HEAD_SIZE, divisor)
            return name, size, "a multiple of a number of its own"
    return None


#: a check of a constructor's that a size is a square (``assert side * side == block_size``)
_SQUARED = re.compile(r"\b(\w+)\s*\*\s*\1\b\s*[!=]=|\*\*\s*\(?\s*0?\.5|\bsqrt\(|\bisqrt\(")


def square_asked(raised: BaseException, dims, free) -> tuple[str, int, str] | None:
    """The length a constructor's own check asks to be a square (``grid = int(block_size **
    0.5); assert grid * grid == block_size``: a square grid of tokens): ``("L", 16)``, or T when
    the check names a length T stands for; None otherwise."""
    from ..base.names import size_of
    from ..base.source import user_frame

    site = user_frame(raised)
    if site is None or not raised_by_check(site) or is_square(dims.get("L", 2)):
        return None
    line = linecache.getline(*site)
    if not _SQUARED.search(line):
        return None
    named = {size_of(word, constructor=True) for word in re.findall(r"[A-Za-z_]\w*", line)}
    name = next((n for n in ("L", "T") if n in free and n in named), None)
    return None if name is None else (name, SQUARE_LENGTH, "a square number of positions (a grid of tokens)")


#: two sizes an elementwise op could not broadcast: the sizes of tensor a and tensor b
MET = re.compile(r"size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\)")
#: an attention mask of a size of its own where another was due (torch's attention layers)
MASK_MET = re.compile(r"attn_mask is torch\.Size\(\[(\d+), (\d+)\]\), but should be \((\d+), (\d+)\)")
#: a view that the number of elements does not fill
VIEW_FAILED = re.compile(r"shape '\[([-\d, ]+)\]' is invalid for input of size (\d+)")
#: a convolution handed another number of channels than it was built for
_CHANNELS = re.compile(r"to have (\d+) channels, but got (\d+) channels"
                       r"|must be equal to input_size\. Expected (\d+), got (\d+)")  # a recurrent layer
#: a linear layer (or a product) handed rows of another width than it takes: the two inner
#: sizes of ``(rows x K1 and K2 x N)``, the rows and the outputs left out
INNER = re.compile(r"mat1 and mat2 shapes cannot be multiplied \(\d+x(\d+) and (\d+)x\d+\)")


def fixed_width_of(raised: BaseException | None, dims: Dims, free, *, linear: bool = False) -> int | None:
    """The width a module's code fixes itself (a table of 512 features, a convolution of 80
    mel channels set from a module-level constant; with ``linear``, a linear layer of the 256
    features its callers pass) where it meets the probe width: the failure names C and a size no
    probe size makes. None otherwise, or when the caller chose a size."""
    if raised is None or "d" not in free or {"C", "H"} & set(getattr(dims, "explicit", ())):
        return None
    text = str(raised)
    found = MET.search(text) or _CHANNELS.search(text) or (INNER.search(text) if linear else None)
    if found is None:
        return None
    sizes = {int(n) for n in found.groups() if n is not None}
    if dims["C"] not in sizes or len(sizes) != 2:
        return None
    (size,) = sizes - {dims["C"]}
    widths = (dims["C"], dims["d"], dims["H"])
    if not 1 < size <= 8192 or size in dims.values() or any(size % p == 0 for p in widths) \
            or abs(2 * size - dims["C"]) <= 1:
        return None  # made from the probe width (4*C, C//2, H*d'): the module's own arithmetic
    return size


#: a check on the size of the last axis (the features): ``x.shape[-1]``, ``x.size(-1)``
_FEATURES = re.compile(r"\.shape\[-1\]|\.size\(-1\)|\.size\(dim=-1\)")


def halved_size(raised: BaseException | None, dims: Dims, free,
                raised_at: tuple[str, int] | None = None) -> tuple[str, int, str] | None:
    """An even head size, and with it an even width, for a forward that split an odd one in
    halves (``x.chunk(2, -1)``, ``d // 2``, the two halves of rotary positions) and failed
    where the halves meet: its error names both half sizes (6 and 7 of d=13), or the odd size
    beside the one its halves rounded up make again (13 and 14: ``arange(0, d, 2)`` doubled) or
    rounded down (12 and 13: ``d // 2`` cosines and sines),
    or a view of a half size that the odd size does not fill, or the module's own check that
    a size is even (``assert embed_dim % 2 == 0`` at ``raised_at``). None otherwise, or when
    the caller chose d."""
    if raised is None or "d" not in free or {"d", "C"} & set(getattr(dims, "explicit", ())):
        return None
    text = str(raised)
    numbers = numbers_in(text)
    line = linecache.getline(*raised_at) if raised_at else ""
    asked = re.search(r"%\s*2\s*[!=]=", line)
    if raised_at and raised_by_check(raised_at) and dims.get("d", 2) % 2 \
            and (asked or _FEATURES.search(line)):
        # ``assert embed_dim % 2 == 0``, or a check on the features' size, which the code
        # rounds to pairs (``assert ro_dim <= x.shape[-1]``, ``ro_dim`` twice the cosines of
        # an odd size)
        return ("d", EVEN_HEAD_SIZE, "an even head size (and width): the module's own check "
                + ("asks for an even size" if asked else "refused the odd one"))
    view = VIEW_FAILED.search(text)
    for name in ("d", "C"):
        size = dims.get(name)
        if not size or size % 2 == 0:
            continue
        half = size // 2
        wanted = [int(n) for n in view.group(1).split(",") if n.strip()] if view else []
        if {half, half + 1} <= numbers or {size, size + 1} <= numbers or {2 * half, size} <= numbers \
                or (half in wanted and 2 in wanted):
            return ("d", EVEN_HEAD_SIZE, f"an even head size (and width): the forward splits "
                    f"{'the head size' if name == 'd' else 'the width'} {size} in halves")
        # a part of the size and twice a part half as large, which an odd size rounds apart
        # (C // 4 inputs of a layer fed sines and cosines of C // 8 frequencies)
        part = next((m for m in (4, 8) if size // m != 2 * (size // (2 * m))
                     and {size // m, 2 * (size // (2 * m))} <= numbers), None)
        if part is not None and EVEN_HEAD_SIZE % (2 * part) == 0:
            return ("d", EVEN_HEAD_SIZE, f"a head size (and width) that divides evenly: the "
                    f"forward takes {size} // {part} and twice {size} // {2 * part}, which differ")
    return None


#: a sequence length that folds into a square grid (4 x 4) and is no probe size
SQUARE_LENGTH = 16
_GRID = re.compile(r"pattern \"?'?[^\"'>]*\((\w+) (\w+)\)[^\"'>]*->")


def grid_pattern(raised: BaseException) -> bool:
    """Whether ``raised`` is an einops error on a pattern that folds an axis into a grid
    (``b (h w) c -> b c h w``)."""
    return "einops" in type(raised).__module__.lower() and bool(_GRID.search(str(raised)))


def grid_view(raised: BaseException, op, tokens: int) -> bool:
    """Whether ``raised`` is a view or reshape that folded ``tokens`` into a grid of sides
    ``int(sqrt(tokens))`` (``x.view(B, C, H, W)`` with ``H = W = int(math.sqrt(L))``): the code
    wants a square number of tokens."""
    folds = op is not None and ("reshape" in op.op or "view" in op.op)
    found = VIEW_FAILED.search(str(raised)) if folds else None
    side = int(tokens ** 0.5)
    target = [int(n) for n in found.group(1).split(",") if n.strip()] if found else []
    return side > 1 and any(a == b == side for a, b in zip(target, target[1:]))


#: the module's own check asking for a square number (``int(n ** 0.5) ** 2 != n: raise ...``)
SQUARE_ASKED = re.compile(r"\bsquare\b", re.I)


def raised_by_check(raised_at: tuple[str, int] | None) -> bool:
    """Whether a forward's exception came from a check of the module's own code on what it was
    given (``raised_at``: the user's file and line): an ``assert``, or a ``raise`` under an
    ``if`` (a ``NotImplementedError`` too: ``if not isinstance(x, PackedSequence): raise
    NotImplementedError`` guards what it is handed), not an op of torch's that failed, nor a
    forward that always raises (a bare ``NotImplementedError`` left by a starter is
    ``not-implemented``'s)."""
    tree = _user_tree(raised_at)
    if tree is None:
        return False
    return any(isinstance(node, ast.Assert) or guarded(tree, node)
               for node in _checks_at(tree, raised_at[1]))


def guarded(tree: ast.AST, node: ast.AST) -> bool:
    """Whether ``node`` of ``tree`` sits under an ``if`` of its function."""
    parents: dict[ast.AST, ast.AST] = {}
    for parent in ast.walk(tree):
        for child in ast.iter_child_nodes(parent):
            parents[child] = parent
    up = parents.get(node)
    while up is not None and not isinstance(up, (ast.FunctionDef, ast.AsyncFunctionDef)):
        if isinstance(up, ast.If):
            return True
        up = parents.get(up)
    return False


def raised_under_if(raised_at: tuple[str, int] | None) -> bool:
    """Whether the ``raise`` at ``raised_at`` (the user's file and line) sits under an ``if``."""
    tree = _user_tree(raised_at)
    return tree is not None and any(isinstance(node, ast.Raise) and guarded(tree, node)
                                    for node in _checks_at(tree, raised_at[1]))


def length_asked(raised_at: tuple[str, int] | None) -> int | None:
    """The length an ``assert`` of the module's own code that failed asks for, by a name for a
    sequence's length (``assert seq_len == 1``: a decoder that takes one token at a time with
    its cache); None for any other check."""
    tree = _user_tree(raised_at)
    for node in _checks_at(tree, raised_at[1]) if tree is not None else ():
        test = node.test if isinstance(node, ast.Assert) else None
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq):
            left, right = test.left, test.comparators[0]
            if isinstance(left, ast.Constant):
                left, right = right, left
            word = left.id if isinstance(left, ast.Name) else getattr(left, "attr", None)
            if word and dim_of_word(word) == "T" and isinstance(right, ast.Constant) \
                    and type(right.value) is int and 1 <= right.value <= 4096:
                return right.value
    return None


def _user_tree(raised_at: tuple[str, int] | None):
    """The parsed file of ``raised_at`` when it is code the module runs of its own, or of an
    installed package it builds on (``isab_pytorch``'s assert on how it is called is a check
    like the user's own); None for torch's and Python's."""
    if not raised_at or is_library_file(raised_at[0]):
        return None
    return file_tree(raised_at[0])


def _checks_at(tree: ast.AST, line: int):
    """The ``assert`` and ``raise`` statements of ``tree`` that span ``line`` (a statement over
    several lines is placed at any of them)."""
    return [node for node in ast.walk(tree) if isinstance(node, (ast.Assert, ast.Raise))
            and node.lineno <= line <= (node.end_lineno or node.lineno)]


def is_square(n: int) -> bool:
    return int(n ** 0.5) ** 2 == n


def window_tokens(init) -> int | None:
    """The number of tokens in one window of the module's window side (an int, or the sides of
    a plane's or a volume's window), when its constructor was given one: a window attention's
    table of relative offsets is made for exactly that many; None otherwise. A grid of all the
    tokens the module is built for (``input_resolution``: the forward checks ``L == H * W``)
    comes first."""
    side = next((init[n] for n in ("input_resolution", *WINDOW_SIDES) if n in (init or {})), None)
    if type(side) is int and side > 1:
        return side * side
    if isinstance(side, (tuple, list)) and len(side) == 2 and all(type(v) is int and v > 0 for v in side):
        return side[0] * side[1]
    if isinstance(side, (tuple, list)) and len(side) == 3 and all(type(v) is int and v > 0 for v in side) \
            and math.prod(side) <= _VOLUME_TOKENS:
        return math.prod(side)
    return None


#: the most tokens of a volume's window read as the length: a larger one (7 x 7 x 7) makes every
#: run of a whole 3-D model (the parent a block is checked in) too slow to try
_VOLUME_TOKENS = 128


def numbers_in(text: str) -> set[int]:
    """The whole numbers an error message names (142 of "5x142" too)."""
    return {int(n) for n in re.findall(r"(?<!\d)\d+(?!\d)", text)}
