"""Constructor arguments read from what the constructor does with them, where no name, default
or call of the project's code gives a value: an image's side (``resolution``, ``img_size``), and
a collection the constructor tests sizes against (``if curr_res in attn_resolutions``, ``if ds in
attention_resolutions``: the levels of a U-Net that get attention). Each comes with a note.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ..base.names import BUILT_SIDE, IMAGE_SIZES, size_of
from .usage import _aliases, _function_def, _reading_init, _tree

#: how a note says a constructor argument was read from the layer the constructor hands it to
BY_USE = "from what the constructor hands it to"


def read_by_use(notes) -> set[str]:
    """The constructor arguments ``notes`` (a plan's) say were read from the layer the
    constructor hands them to (``field_size`` given to an ``nn.Linear``, read as the width),
    not from their own names: a guess like any value shapetrace chose."""
    return {note.split(" read as ", 1)[0] for note in notes if " read as " in note and BY_USE in note}

#: the sizes a collection the constructor tests membership in holds: every level of an image of
#: BUILT_SIDE, whether the code counts it by its side (16, 8, ...) or by its downsampling (1, 2, ...)
LEVELS = (1, 2, 4, 8, 16)


@dataclass(frozen=True)
class Read:
    value: object
    note: str


def _init_body(cls: type):
    """The parsed ``def`` of the constructor that reads ``cls``'s arguments, or None."""
    init = _reading_init(cls)
    return _function_def(_tree(init), init.__name__) if init is not None else None


def read_for(cls: type, name: str, dims=None) -> Read | None:
    """The value of ``cls``'s constructor argument ``name`` read from its use, or None."""
    keys = _vocabulary_keys(cls, name) if dims is not None and "V" in dims else None
    if keys is not None:  # len(word_to_idx), word_to_idx["<NULL>"]: a vocabulary of V words
        vocabulary = {key: i for i, key in enumerate(keys)}
        vocabulary.update((f"word{i}", i) for i in range(len(keys), dims["V"]))
        return Read(vocabulary, f"{name}: a vocabulary of V={dims['V']} words with the keys the "
                                f"constructor reads ({', '.join(map(repr, keys)) or 'none'}) first; "
                                f"give --init {name}=... to choose")
    if _kept_unread(cls, name):  # self.user_num = user_num, read nowhere: any value does
        return Read(None, f"{name}=None: the constructor keeps it and nothing reads it; give "
                          f"--init {name}=VALUE to choose")
    looked_up = _looked_up_in(cls, name)
    if looked_up is not None:  # getattr(nn, activation)(): the name of a layer of torch's
        return Read(looked_up, f"{name}={looked_up!r}, a name the constructor looks up in torch "
                               f"(getattr); give --init {name}=NAME to choose")
    if name in IMAGE_SIZES:
        return Read(BUILT_SIDE, f"{name}={BUILT_SIDE}, read as an image's side; give --init "
                                f"{name}=SIDE to choose")
    if _tested_in(cls, name):
        return Read(list(LEVELS), f"{name}={list(LEVELS)}: the constructor tests sizes against it "
                                  f"(`... in {name}`), so every level of a {BUILT_SIDE}-pixel image "
                                  f"is in it; give --init {name}=[...] to choose")
    return None


#: where a constructor looks a name up, and the one it is given there: a plain activation
_LOOKED_UP = {"nn": "ReLU", "torch.nn": "ReLU", "F": "relu", "torch.nn.functional": "relu",
              "torch": "relu"}


def _looked_up_in(cls: type, name: str) -> str | None:
    """The name to give an argument the constructor only looks up in torch's namespaces
    (``getattr(nn, activation)``), or None."""
    body = _init_body(cls)
    if body is None:
        return None
    local, _ = _aliases(body, name)
    found = None
    for node in ast.walk(body):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "getattr" \
                and len(node.args) >= 2 and isinstance(node.args[1], ast.Name) \
                and node.args[1].id in local:
            found = _LOOKED_UP.get(ast.unparse(node.args[0]))
            if found is None:
                return None
    return found


def _kept_unread(cls: type, name: str) -> bool:
    """Whether the constructor only stores argument ``name`` on ``self`` as it came and no code
    of the class or of its bases of the user's code reads that attribute (nor the argument
    otherwise)."""
    body = _init_body(cls)
    trees = [_tree(k) for k in cls.__mro__ if k is not object
             and not (k.__module__ or "").startswith(("torch", "builtins"))]
    if body is None or not trees or any(t is None for t in trees):
        return False
    local, attributes = _aliases(body, name)
    if not attributes:
        return False
    stored = {id(n.value) for n in ast.walk(body) if isinstance(n, ast.Assign)}
    if any(isinstance(n, ast.Name) and n.id in local and isinstance(n.ctx, ast.Load)
           and id(n) not in stored for n in ast.walk(body)):
        return False  # read in the constructor beside being kept
    return not any(isinstance(n, ast.Attribute) and n.attr in attributes
                   and isinstance(n.ctx, ast.Load) for tree in trees for n in ast.walk(tree))


def _vocabulary_keys(cls: type, name: str) -> list[str] | None:
    """The string keys the constructor reads from argument ``name`` (``d["<NULL>"]``,
    ``d.get("<START>")``) when it also takes its length (``len(d)``) and does nothing else
    with it: a vocabulary. None otherwise."""
    body = _init_body(cls)
    if body is None:
        return None
    local, _ = _aliases(body, name)
    keys: list[str] = []
    sized = False
    parents = {id(c): n for n in ast.walk(body) for c in ast.iter_child_nodes(n)}
    for node in ast.walk(body):
        if not (isinstance(node, ast.Name) and node.id in local and isinstance(node.ctx, ast.Load)):
            continue
        use = parents.get(id(node))
        if isinstance(use, ast.Call) and getattr(use.func, "id", None) == "len":
            sized = True
        elif isinstance(use, ast.Subscript) and isinstance(use.slice, ast.Constant) \
                and isinstance(use.slice.value, str):
            keys.append(use.slice.value)
        elif isinstance(use, ast.Attribute) and use.attr == "get" \
                and isinstance(call := parents.get(id(use)), ast.Call) and call.args \
                and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str):
            keys.append(call.args[0].value)
        elif not (isinstance(use, ast.Assign) and use.value is node):
            return None  # handed on, iterated, tested: what it is there is not this reading's
    return list(dict.fromkeys(keys)) if sized else None


def _tested_in(cls: type, name: str) -> bool:
    """Whether the constructor reads ``name`` only as the collection of an ``in`` test."""
    body = _init_body(cls)
    if body is None:
        return False
    local, attributes = _aliases(body, name)

    def is_it(node) -> bool:
        return (isinstance(node, ast.Name) and node.id in local) or (
            isinstance(node, ast.Attribute) and node.attr in attributes
            and isinstance(node.value, ast.Name) and node.value.id == "self")

    tested = other = False
    for node in ast.walk(body):
        if isinstance(node, ast.Compare) and len(node.ops) == 1 \
                and isinstance(node.ops[0], ast.In) and is_it(node.comparators[0]):
            tested = True
        elif isinstance(node, ast.Call) and any(is_it(a) for a in node.args):
            other = True  # handed on: what it is there is that code's
    return tested and not other


def per_stage(cls: type, name: str, chosen: object, notes: list[str] | None = None):
    """The list (or tuple) the project's code passes as ``name`` where its name reads as one size
    (``depth=[2, 6, 4]``, ``heads=[2, 4, 8]``: one value per stage) and the constructor indexes,
    sums, measures or loops over it, with a note; None otherwise. A number there would fail
    (``sum(depth)``: 'int' object is not iterable)."""
    if type(chosen) is not int or not _as_sequence(cls, name):
        return None
    from .builtby import passed_for

    passed = passed_for(cls, name)
    if passed is None or not isinstance(passed.value, (list, tuple)) or not passed.value:
        return None
    if notes is not None:
        notes.append(f"{name}={passed.value!r} as {passed.where} passes it, one per stage; give "
                     f"--init {name}=[...] to choose")
    return passed.value


def _as_sequence(cls: type, name: str) -> bool:
    """Whether the constructor reads ``name`` as a sequence: ``name[i]``, ``len(name)``,
    ``sum(name)``, ``for x in name``, ``zip(name, ...)``."""
    body = _init_body(cls)
    if body is None:
        return False
    local, _ = _aliases(body, name)
    for node in ast.walk(body):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) \
                and node.value.id in local and not isinstance(node.slice, ast.Slice):
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in ("len", "sum", "zip", "enumerate", "max", "min") \
                and any(isinstance(a, ast.Name) and a.id in local for a in node.args):
            return True
        if isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.iter, ast.Name) \
                and node.iter.id in local:
            return True
    return False


def staged_heads(params: list, out: dict, given, dims, notes: list[str] | None = None) -> None:
    """Head counts per stage kept from their default (``num_heads=(3, 6, 12, 24)``) beside a
    width the probe chose (``embed_dim=96`` made C): the width would not divide into them.
    Scaled to start at the probe's H, in the default's ratios (``(11, 22, 44, 88)``), each
    stage keeps the head size it had at the defaults' width: ``out`` is changed, with a note.
    A width kept from a default of its own, or heads whose ratios are not whole, say nothing."""
    widths = [p for p in params if p.name not in given and size_of(p.name, constructor=True) == "C"
              and type(p.default) is int and out.get(p.name) == dims["C"] != p.default]
    if not widths:
        return
    for p in params:
        counts = p.default
        if p.name in given or size_of(p.name, constructor=True) != "H" \
                or not isinstance(counts, (list, tuple)) or out.get(p.name) is not counts \
                or not counts or not all(type(h) is int and h > 0 for h in counts) \
                or any(h % counts[0] for h in counts):
            continue
        out[p.name] = type(counts)(dims["H"] * h // counts[0] for h in counts)
        if notes is not None:
            notes.append(f"{p.name}={out[p.name]!r}: its default {counts!r} in the probe's heads, "
                         f"so that {widths[0].name}={dims['C']} divides into them; give --init "
                         f"{p.name}=[...] to choose")
