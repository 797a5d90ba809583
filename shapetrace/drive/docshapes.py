"""Input shapes the code's own documentation gives.

A forward's docstring (or its class's) often states what each input is:
``query (torch.Tensor): Query tensor (#batch, time1, size).``, ``- **x** (batch, time, dim)``,
``:param torch.Tensor tgt: (batch, time1, size)``, ``x: Tensor of shape [B, T, C]``. A line
that starts with the parameter's name and gives one shape in parentheses or brackets (on that
line, or on the lines indented under it) is read as that input's shape: each axis a word for
a size (``batch``, ``time``, ``size``, ``heads``), a number, or a sum of products of them
(``2*time1-1``: the relative positions of an espnet-style attention). ``time1`` is the
queries' length and ``time2`` the keys'.

Nothing is read where the words do not say it plainly: a shape with a word for no size
(``num_points``, ``To``), an image's height and width (left to the readings of images), a
parameter whose line says it holds integers, booleans or a mask, or a shape of one axis (a
lengths vector, read elsewhere from what the code does with it).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping

from ..base.names import MASK_INPUT, TOKEN_INPUTS, dim_of_word
from ..base.specs import InputSpec
from .input_reads import spec_from_name
from .layout import LAYOUT_RULES

#: a shape in parentheses or brackets, not a call's arguments (``x.view(B, T, C)``)
_GROUP = re.compile(r"(?<![\w.])[\(\[]([^()\[\]]*)[\)\]]")
#: what may come before the name on its line: a list mark, emphasis, ``:param TYPE``
_LEAD = re.compile(r"^\s*(?:[-*+]\s+)?(?::param\s+(?:[\w.\[\]]+\s+)?)?[`*]*")
#: words on a parameter's line (outside its shape) that say it is no float tensor of values
#: of its own: integers, booleans, a mask, lengths, token ids, weights made elsewhere
_NOT_VALUES = re.compile(r"\b(?:Long|Int|Bool|Byte)Tensor\b|\b(?:long|int|int64|int32|bool|boolean|"
                         r"indices|index|ids|mask|masks|padding|lengths|lens|weights|"
                         r"probs|probabilities|scores)\b", re.IGNORECASE)
#: words for a length that a docstring numbers: ``time1`` the queries', ``time2`` the keys'
_LENGTHS = ("time", "t", "len", "length", "seq", "seq_len", "l")
#: words for sizes in docstrings beyond those of shape unpackings (``base.names.DIM_WORDS``)
_WORDS = {
    **dict.fromkeys(("size", "d_model", "feat", "feats", "features", "feature", "hidden_size",
                     "embed_dim", "emb_dim", "model_dim", "n_embd", "adim", "channel",
                     "num_channels", "in_channels", "embedding_dim", "feature_dim", "feat_dim",
                     "hidden_dim", "d_embed", "embed_size", "embedding_size"), "C"),
    **dict.fromkeys(("lmax", "tmax", "t_max", "l_max", "max_len", "maxlen", "max_time",
                     "seq_length", "q_len", "len_q", "t_q", "tq", "num_tokens", "frames"), "T"),
    **dict.fromkeys(("k_len", "kv_len", "len_k", "t_k", "tk", "v_len", "src_len", "s_len",
                     "mem_len", "memory_len", "src_seq_len"), "S"),
    **dict.fromkeys(("d_v", "dv", "d_q", "dq", "d_value"), "d"),
}
#: one letter whose case says the size: ``D`` a model's width, ``L`` a sequence's length
_LETTERS = {"B": "B", "T": "T", "S": "S", "C": "C", "D": "C", "E": "C", "L": "T", "V": "V"}
_IMAGE = frozenset(("w", "width", "height", "img_h", "img_w"))
_BATCH_WORDS = frozenset(("b", "batch", "bs", "bsz", "batch_size", "n_batch", "nbatch"))


def documented_input(name: str, forward: Callable, owner: type | None,
                     dims: Mapping[str, int], named: InputSpec | None = None) -> InputSpec | None:
    """The shape the docstring of ``forward`` (then of ``owner``, its own) states for parameter
    ``name``, as a float input; else ``named``, the reading of its name (see the module's
    docstring). A documented shape that is the name's but for a length the name reads as
    another sequence's (``encoder_hidden_states``: (batch, seq_len, embed_dim), the source's
    length) is the name's: a length in words says nothing of which sequence it is."""
    if MASK_INPUT.search(name) or name in TOKEN_INPUTS:
        return named
    for doc in (inspect.getdoc(forward), owner.__doc__ if isinstance(owner, type) else None):
        if not doc:
            continue
        said = _said_of(name, inspect.cleandoc(doc).splitlines())
        if said is None:
            continue
        shape = _shape(said)
        if shape is None or not all(_known(d, dims) for d in shape):
            return named
        found = InputSpec(name, shape)
        return named if named is not None and _alike(named, found) else found
    return named


def assume_documented(diagnostics, model, specs, dims: Mapping[str, int]) -> set[str]:
    """Errors that depend on the layout (``LAYOUT_RULES``), in a run whose inputs were made in
    the shape a docstring gives and their names do not (``x`` time first), become warnings
    that say so: a docstring can be out of date, and the code may read its inputs otherwise.
    The names of the inputs whose shape, width included, a docstring states (up to which
    sequence a length is)."""
    cls = type(model)
    forward = getattr(cls, "forward", None)
    names = {s.name for s in specs if isinstance(s, InputSpec)}
    said = {s.name: documented_input(s.name, forward, cls, dims) for s in specs
            if isinstance(s, InputSpec) and forward is not None}
    stated = {s.name for s in specs if said.get(s.name) is not None and _alike(said[s.name], s)}
    read = [s for s in specs if said.get(s.name) == s and spec_from_name(s.name, names) != s]
    if not read:
        return stated
    shown = ", ".join(f"{s.name} ({', '.join(str(d) for d in s.dims)})" for s in read)
    for diag in diagnostics:
        if diag.rule in LAYOUT_RULES and diag.severity == "error":
            diag.severity = "warning"
            diag.message += (f" (assumed: {shown}, as the docstring gives {'them' if len(read) > 1 else 'it'}; "
                             f"a docstring can be out of date: give --input to check it as an error)")
    return stated


def _alike(a: InputSpec, b: InputSpec) -> bool:
    """The same shape, but for which sequence a length is."""
    return len(a.dims) == len(b.dims) and all(x == y or {x, y} == {"T", "S"}
                                              for x, y in zip(a.dims, b.dims))


def _said_of(name: str, lines: list[str]) -> str | None:
    """The inside of the first shape given on the line that starts with ``name`` (or on the
    lines indented under it); None when no line does, or that line says it is no values."""
    word = re.compile(rf"{re.escape(name)}(?![\w(])")
    for i, line in enumerate(lines):
        lead = _LEAD.match(line)
        if not word.match(line, lead.end()):
            continue
        if _NOT_VALUES.search(_outside(line)):
            return None
        indent = len(line) - len(line.lstrip())
        block = [line[lead.end() + len(name):]]
        for more in lines[i + 1:]:
            if more.strip() and len(more) - len(more.lstrip()) <= indent:
                break
            if _NOT_VALUES.search(_outside(more)):
                return None
            block.append(more)
        for text in block:
            for found in _GROUP.finditer(text):
                parts = _parts(found.group(1))
                if parts is not None:
                    return found.group(1)
        return None
    return None


def _outside(line: str) -> str:
    """``line`` without the shapes it gives (``(batch, time, size)``; ``(LongTensor)`` stays)."""
    return _GROUP.sub(lambda found: "" if _parts(found.group(1)) else found.group(0), line)


def _parts(inside: str) -> list[str] | None:
    parts = [p.strip() for p in re.split(r",|\s+[x×]\s+", inside)]
    if parts and not parts[-1]:
        parts.pop()  # (B, T,)
    return parts if len(parts) >= 2 and all(parts) else None


def _shape(inside: str) -> tuple | None:
    parts = _parts(inside)
    if parts is None:
        return None
    words = [w.lower().lstrip("#") for p in parts for w in re.findall(r"[#\w]+", p)]
    if any(w in _IMAGE for w in words):
        return None  # an image: its height and width are read elsewhere
    heads = any(w in ("h", "heads", "n_head", "n_heads", "num_heads", "nh") for w in words)
    batch = any(w in _BATCH_WORDS for w in words)
    shape = []
    for part in parts:
        axis = _axis(part, batch=batch, heads=heads)
        if axis is None:
            return None
        shape.append(axis)
    lengths = [a for a in shape if a in ("T", "S")]
    if not any(a in ("C", "d") or isinstance(a, int) and a > 1 for a in shape[1:]) \
            or len(lengths) > 1 and "C" not in shape and "d" not in shape:
        return None  # (B, T): token ids or values; (B, T, S): weights made elsewhere
    return tuple(shape)


def _axis(part: str, *, batch: bool, heads: bool) -> str | int | None:
    """One axis: a number, a size's word, or a sum of products of them (``2*time1-1``); words
    apart make one name (``src seq len``: ``src_seq_len``, ``batch size``: ``batch_size``)."""
    words = part.split()
    if len(words) > 1 and all(w.isidentifier() for w in words):
        return _word("_".join(words), batch=batch, heads=heads)
    text = part.replace(" ", "")
    if text.isdigit():
        return int(text) if int(text) > 0 else None
    out = []
    for piece in re.split(r"([*+-])", text):
        if piece in ("*", "+", "-"):
            out.append(piece)
            continue
        if piece.isdigit():
            out.append(piece)
            continue
        dim = _word(piece, batch=batch, heads=heads)
        if dim is None:
            return None
        out.append(dim)
    if not out or out[0] in "*+-" or out[-1] in "*+-":
        return None
    return "".join(out)


def _word(word: str, *, batch: bool, heads: bool) -> str | None:
    word = word.lstrip("#")
    if word == "N":
        return "T" if batch else "B"  # (B, N, C): tokens; (N, C) and torch's (S, N, E): samples
    if word in ("d", "h"):
        return {"d": "d", "h": "H"}[word] if heads or word == "h" else "C"
    if word in _LETTERS:
        return _LETTERS[word]
    lower = word.lower()
    numbered = re.fullmatch(r"([a-z_]+?)_?([12])", lower)
    if numbered is not None and numbered.group(1) in _LENGTHS:
        return "T" if numbered.group(2) == "1" else "S"
    return _WORDS.get(lower) or dim_of_word(lower)


def _known(axis, dims: Mapping[str, int]) -> bool:
    if isinstance(axis, int):
        return True
    return all(p.isdigit() or p in dims for p in re.split(r"[*+-]", axis))


__all__ = ["assume_documented", "documented_input"]


#: what a constructor argument's line in a docstring says it is, and the size that is
_SAID = (
    (re.compile(r"\bnumber of (?:attention |self-attention )?heads\b|\bheads? count\b"),
     "H", "the number of heads (H)"),
    (re.compile(r"\b(?:dimension|dim|size) of (?:each|every|one) (?:attention )?(?:head|output)s?\b"
                r"|\bper head\b"), "d", "the head size (d)"),
    (re.compile(r"\bnumber of (?:\w+ )?(?:layers|blocks)\b"), "layers", "a count of layers"),
)


def documented_size(cls: type, name: str) -> tuple[str, str] | None:
    """``(dim or "layers", words)`` for a constructor argument whose line in the class's (or
    its constructor's) docstring says what it is (``K: number of attention heads``), or None.
    Only a line that starts with the argument's name and says one of these plainly is read."""
    texts = [inspect.getdoc(cls) or "", inspect.getdoc(getattr(cls, "__init__", None)) or ""]
    lead = re.compile(_LEAD.pattern + re.escape(name) + r"[`*]*\s*(?:\([^)]*\))?\s*[:\-]\s*(.*)")
    for line in (line for text in texts for line in text.splitlines()):
        found = lead.match(line)
        if found is None:
            continue
        said = found.group(1).lower()
        for pattern, dim, words in _SAID:
            if pattern.search(said):
                return dim, words
    return None
