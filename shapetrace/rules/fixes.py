"""The user's own line, rewritten: the corrected line a hint shows.

Every rewrite works on the source text of one physical line, located by the op's position
(line and columns) and checked with ``ast``: the piece replaced must parse as the expression the
op ran, and the rewritten line must parse again. When anything is not as expected (the op's
text spans lines, a call passes its sizes in a variable, the line does not parse), there is no
rewritten line: a hint without one is better than a wrong one.

A ``Fix`` replaces one physical line; pasting ``Fix.text`` over line ``Fix.line`` applies it.
"""

from __future__ import annotations

import ast
import io
import linecache
import tokenize
from typing import NamedTuple

from ..base.source import file_tree


class Fix(NamedTuple):
    line: int  # 1-based line in the user's file
    text: str  # the whole new line, indentation included
    more: bool = False  # the statement goes on over the next lines, which stay as they are

    def shown(self) -> str:
        """``49  q = q.reshape(B, T, H, d).transpose(1, 2)``, for a hint (without a comment)."""
        text = _without_comment(self.text).strip()
        if self.more:
            text += "...)" if text.endswith("(") else " ..."
        return f"{self.line}  {text}"

    def data(self) -> dict:
        return {"line": self.line, "text": self.text}


def _without_comment(line: str) -> str:
    try:
        for tok in tokenize.generate_tokens(io.StringIO(line).readline):
            if tok.type == tokenize.COMMENT:
                return line[:tok.start[1]].rstrip()
    except (tokenize.TokenError, SyntaxError):
        pass  # an open bracket at the end of the line: the comment, if any, came before
    return line


def with_fix(hint: str, fix: Fix | None) -> str:
    """The hint, ending with the corrected line when there is one."""
    if fix is None:
        return hint
    return f"{hint.rstrip('.')}: {fix.shown()}"


# --- locating the op's text -------------------------------------------------------------------

class Segment(NamedTuple):
    """The text an op ran, on one physical line: ``line[start:end]`` is ``node``'s source."""

    filename: str
    lineno: int
    line: str  # the physical line, without its newline
    start: int  # character offsets into ``line``
    end: int
    node: ast.expr  # the parsed text; its positions are relative to ``line[start:end]``

    @property
    def text(self) -> str:
        return self.line[self.start:self.end]

    def piece(self, node: ast.AST) -> str:
        """The source of a sub-node of ``node``, as the user wrote it."""
        return ast.get_source_segment(self.text, node) or ast.unparse(node)

    def offsets(self, node: ast.AST) -> tuple[int, int]:
        """Where a sub-node of ``node`` lies in ``line``."""
        text = self.text
        lines = text.split("\n")
        if node.lineno != 1 or node.end_lineno != 1 or len(lines) != 1:
            raise ValueError("spans lines")
        raw = text.encode()
        start = len(raw[:node.col_offset].decode(errors="replace"))
        end = len(raw[:node.end_col_offset].decode(errors="replace"))
        return self.start + start, self.start + end

    def replace(self, node: ast.AST, new: str) -> Fix | None:
        """The line with the text of ``node`` (a sub-node of ``self.node``) replaced by ``new``."""
        try:
            a, b = self.offsets(node)
        except ValueError:
            return None
        return checked(self.lineno, self.line[:a] + new + self.line[b:], self.filename)

    def insert_after(self, node: ast.AST, new: str) -> Fix | None:
        try:
            _, b = self.offsets(node)
        except ValueError:
            return None
        return checked(self.lineno, self.line[:b] + new + self.line[b:], self.filename)


def segment(rec) -> Segment | None:
    """The op's own text on its line, parsed; None when it cannot be pinned down exactly."""
    filename, lineno, col, end_col = rec.where
    if not filename or lineno is None or col is None or end_col is None:
        return None
    line = linecache.getline(filename, lineno).rstrip("\n")
    raw = line.encode()
    if not 0 <= col < end_col <= len(raw):
        return None
    start = len(raw[:col].decode(errors="replace"))
    end = len(raw[:end_col].decode(errors="replace"))
    try:
        node = ast.parse(line[start:end], mode="eval").body
    except SyntaxError:
        return None
    return Segment(filename, lineno, line, start, end, node)


def checked(lineno: int, new_line: str, filename: str, more: bool = False) -> Fix | None:
    """A Fix, if the new line still parses in place of the old one.

    Only the statement that holds the line is parsed again, not the whole file: when the line
    lies in a simple statement with lines of its own (the usual case), the patched lines must
    parse as statements that start on the first of those lines, at the same indentation, and
    end on the last. Elsewhere (a compound statement's header, a decorator, a line shared with
    another statement) the whole patched file is parsed."""
    lines = linecache.getlines(filename)
    if not lines or lineno > len(lines):
        return None
    span = _own_lines(filename, lines, lineno)
    if span is not None:
        first, last = span
        patched = lines[first - 1:lineno - 1] + [new_line + "\n"] + lines[lineno:last]
        text = "".join(patched)
        indent = _indentation(text)
        if indent != _indentation(lines[first - 1]):
            return None  # the statement would move to another block
        try:
            body = ast.parse(text[len(indent):]).body
        except SyntaxError:
            return None
        if not body or any(stmt.lineno != 1 for stmt in body) \
                or body[-1].end_lineno != last - first + 1:
            return None  # ``a; b`` on the first line is fine, a statement on a later one is not
        return Fix(lineno, new_line, more)
    patched = lines[:lineno - 1] + [new_line + "\n"] + lines[lineno:]
    try:
        ast.parse("".join(patched))
    except SyntaxError:
        return None
    return Fix(lineno, new_line, more)


_BODIES = ("body", "orelse", "finalbody", "handlers", "cases")


def _own_lines(filename: str, lines: list[str], lineno: int) -> tuple[int, int] | None:
    """(first, last) lines of the simple statement that holds ``lineno``, when it starts its
    first line (after indentation) and ends its last one (before a comment), and lines of its
    own: patching them cannot change how the rest of the file parses. None otherwise."""
    tree = file_tree(filename)
    if tree is None:
        return None
    node: ast.AST = tree
    while True:
        inner = None
        for field in _BODIES:
            for child in getattr(node, field, None) or ():
                start = getattr(child, "lineno", None)
                if start is not None and start <= lineno <= child.end_lineno:
                    inner = child
                    break
            if inner is not None:
                break
        if inner is None:
            break
        node = inner
    if not isinstance(node, ast.stmt) or any(getattr(node, f, None) for f in _BODIES):
        return None  # no statement there, or a compound statement's header
    first, last = node.lineno, node.end_lineno
    head, tail = lines[first - 1].encode(), lines[last - 1].encode()
    if head[:node.col_offset].strip() or _code_after(tail[node.end_col_offset:].decode(
            errors="replace")):
        return None
    return first, last


def _indentation(line: str) -> str:
    return line[:len(line) - len(line.lstrip(" \t"))]


def _code_after(rest: str) -> bool:
    """Whether anything but a comment follows a statement on its last line (``; b``)."""
    rest = rest.strip()
    return bool(rest) and not rest.startswith("#")


def _plain(node: ast.AST) -> bool:
    """A name or a chain of attributes (``scores``, ``self.cache``): something assignable."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


# --- the rewrites -----------------------------------------------------------------------------

def assign_statement(rec, statement: ast.Expr) -> Fix | None:
    """``scores.masked_fill(m, -inf)`` -> ``scores = scores.masked_fill(m, -inf)``, for an
    expression statement (over one line or several) whose value is a method call."""
    call = statement.value
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute) \
            or not _plain(call.func.value):
        return None
    filename, lineno = rec.where[0], statement.lineno
    line = linecache.getline(filename, lineno).rstrip("\n")
    indent = line[:len(line) - len(line.lstrip())]
    target = ast.unparse(call.func.value)
    if not line.lstrip().startswith(target):
        return None
    more = statement.end_lineno != statement.lineno
    return checked(lineno, f"{indent}{target} = {line.lstrip()}", filename, more)


def _dot(seg: Segment, attribute: ast.Attribute) -> int | None:
    """Where, in ``seg.text``, the ``.`` before ``attribute``'s name is: the receiver is all
    the text before it, parentheses included (``(att @ v)`` of ``(att @ v).reshape(...)``)."""
    if attribute.end_lineno != 1 or seg.node.lineno != 1 or seg.node.col_offset != 0:
        return None
    raw = seg.text.encode()
    name_start = len(raw[:attribute.end_col_offset].decode(errors="replace")) - len(attribute.attr)
    dot = seg.text.rfind(".", 0, name_start)
    if dot < 0 or seg.text[dot + 1:name_start].strip():
        return None
    return dot


def receiver_text(seg: Segment) -> str | None:
    """``(att @ v)`` for ``(att @ v).reshape(B, T, C)`` or ``(att @ v).T``, as written."""
    node = seg.node
    attribute = node.func if isinstance(node, ast.Call) else node
    if not isinstance(attribute, ast.Attribute):
        return None
    dot = _dot(seg, attribute)
    return None if dot is None else seg.text[:dot].rstrip()


def call_parts(seg: Segment) -> tuple[ast.expr, str, list[ast.expr]] | None:
    """``x.view(a, b)`` -> (receiver node, "view", [a, b]); a single tuple or list argument
    counts as its elements. None for anything else (``torch.reshape(x, s)``, ``*sizes``)."""
    node = seg.node
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute) or node.keywords:
        return None
    args = node.args
    if len(args) == 1 and isinstance(args[0], (ast.Tuple, ast.List)):
        args = args[0].elts
    if any(isinstance(a, ast.Starred) for a in args):
        return None
    return node.func.value, node.func.attr, list(args)


def perm_call(order) -> str:
    """``.transpose(1, 2)`` for a swap of two axes, else ``.permute(...)``."""
    n = len(order)
    moved = [i for i, j in enumerate(order) if i != j]
    if len(moved) == 2:
        a, b = moved
        if (a, b) == (n - 2, n - 1) and n > 2:
            return ".transpose(-2, -1)"
        return f".transpose({a}, {b})"
    return f".permute({', '.join(map(str, order))})"


def reorder_call(seg: Segment, order, then: str) -> Fix | None:
    """``x.reshape(B, H, T, d)`` -> ``x.reshape(B, T, H, d)`` + ``then``: the user's own size
    expressions put in ``order``."""
    parts = call_parts(seg)
    if parts is None or len(parts[2]) != len(order):
        return None
    _, name, args = parts
    receiver = receiver_text(seg)
    if receiver is None:
        return None
    sizes = ", ".join(seg.piece(args[i]) for i in order)
    return seg.replace(seg.node, f"{receiver}.{name}({sizes}){then}")


def move_before_call(seg: Segment, order, contiguous: bool) -> Fix | None:
    """``(att @ v).reshape(B, T, C)`` -> ``(att @ v).transpose(1, 2).reshape(B, T, C)``."""
    receiver = receiver_text(seg) if call_parts(seg) is not None else None
    if receiver is None:
        return None
    rest = seg.text[_dot(seg, seg.node.func):]
    moved = perm_call(order) + (".contiguous()" if contiguous else "")
    return seg.replace(seg.node, f"{receiver}{moved}{rest}")


def with_receiver(seg: Segment, then: str) -> Fix | None:
    """The whole call or attribute replaced by its receiver and ``then``: ``x.reshape(T, B, C)``
    -> ``x.transpose(0, 1)``, ``k.transpose(1, 2)`` -> ``k.transpose(-2, -1)``."""
    receiver = receiver_text(seg)
    return None if receiver is None else seg.replace(seg.node, receiver + then)


def rename_method(seg: Segment, new_name: str) -> Fix | None:
    """``y.view(B, T, C)`` -> ``y.reshape(B, T, C)``."""
    node = seg.node
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
        return None
    dot = _dot(seg, node.func)
    if dot is None:
        return None
    text = seg.text
    rest = text[dot + 1:].lstrip()
    if not rest.startswith(node.func.attr):
        return None
    return seg.replace(node, f"{text[:dot]}.{new_name}{rest[len(node.func.attr):]}")


def swap_last_two(seg: Segment) -> Fix | None:
    """``k.T``, ``k.t()``, ``k.permute(3, 2, 1, 0)`` -> ``k.transpose(-2, -1)``."""
    return with_receiver(seg, ".transpose(-2, -1)")


def set_dim(seg: Segment, dim_text: str, method_slot: int, function_slot: int) -> Fix | None:
    """The ``dim`` argument of a call set to ``dim_text`` (added when left out):
    ``scores.softmax(dim=1)`` -> ``scores.softmax(dim=-1)``, ``F.softmax(s)`` ->
    ``F.softmax(s, dim=-1)``. ``method_slot``/``function_slot``: where dim goes positionally."""
    node = seg.node
    if not isinstance(node, ast.Call):
        return None
    for kw in node.keywords:
        if kw.arg == "dim":
            return seg.replace(kw.value, dim_text)
    method = isinstance(node.func, ast.Attribute) and ast.unparse(node.func.value) not in (
        "torch", "F", "nn.functional", "torch.nn.functional", "torch.special")
    slot = method_slot if method else function_slot
    if len(node.args) > slot:
        return seg.replace(node.args[slot], dim_text)
    if len(node.args) == slot and not any(isinstance(a, ast.Starred) for a in node.args):
        text = seg.text
        if not text.endswith(")"):
            return None
        sep = ", " if slot else ""
        return seg.replace(node, f"{text[:-1]}{sep}dim={dim_text})")
    return None


def constructor_of(rec) -> Segment | None:
    """Where the module that ran ``rec`` from library code (``F.softmax`` inside an
    ``nn.Softmax``) was built: the call on the right of ``self.<attribute> = ...`` in the class
    whose method is at the op's line, when it is the one such assignment there and fits on one
    line. ``<attribute>`` is the last part of the module's path (``Attention.softmax``)."""
    filename = rec.where[0]
    attribute = (rec.module or "").rsplit(".", 1)[-1]
    owner = _owner_class(rec)
    if owner is None or not attribute.isidentifier():
        return None
    found = _assigned(owner, attribute)
    if len(found) != 1 or not isinstance(found[0], ast.Call) or found[0].end_lineno != found[0].lineno:
        return None
    call = found[0]
    line = linecache.getline(filename, call.lineno).rstrip("\n")
    raw = line.encode()
    start = len(raw[:call.col_offset].decode(errors="replace"))
    end = len(raw[:call.end_col_offset].decode(errors="replace"))
    try:
        node = ast.parse(line[start:end], mode="eval").body
    except SyntaxError:
        return None
    return Segment(filename, call.lineno, line, start, end, node)


def built_line(rec) -> int | None:
    """The line of the user's class (the one whose method is at ``rec``'s line) that built
    the module ``rec`` ran in from library code, or the nearest module above it that class
    built itself (``self.encoder = nn.TransformerEncoderLayer(...)`` for the attention inside
    it), over as many lines as the call takes; None when no one assignment says."""
    owner = _owner_class(rec)
    for attribute in reversed((rec.module or "").split(".")) if owner is not None else ():
        found = _assigned(owner, attribute)
        if found:
            return found[0].lineno if len(found) == 1 and isinstance(found[0], ast.Call) else None
    return None


def _owner_class(rec) -> ast.ClassDef | None:
    """The innermost class of the user's file whose source holds ``rec``'s line, for an op run
    from library code; None otherwise."""
    filename, lineno = rec.where[0], rec.line
    if not rec.internal or not filename or lineno is None:
        return None
    tree = file_tree(filename)
    owner = None
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.ClassDef) and node.lineno <= lineno <= (node.end_lineno or 0):
            if owner is None or node.lineno > owner.lineno:
                owner = node
    return owner


def _assigned(owner: ast.ClassDef, attribute: str) -> list[ast.expr]:
    """The values ``self.<attribute> = ...`` assigns in ``owner``."""
    return [node.value for node in ast.walk(owner)
            if isinstance(node, ast.Assign) and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Attribute) and node.targets[0].attr == attribute
            and isinstance(node.targets[0].value, ast.Name) and node.targets[0].value.id == "self"]


def binop_sides(seg: Segment) -> tuple[ast.expr, ast.expr, ast.operator] | None:
    node = seg.node
    if isinstance(node, ast.BinOp):
        return node.left, node.right, node.op
    return None
