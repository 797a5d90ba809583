"""What to ask for when a constructor argument cannot be inferred: an example that fits it.

``--init hidden_channels=VALUE`` leaves the user to find out what a value looks like. The ask
instead reads each missing argument: a size (``C``, ``H``, ``V``, ``L`` by the words of its
name), a small count (``kernel_size=3``, ``n_layers=2``), a list or tuple (its default or
annotation: ``--init`` cannot write one, a config file can), or a module (no flag can make one:
the class that builds it is checked instead). :func:`constructor_ask` writes the message;
the job that checks the target adds the command line (``with_command``). Examples only: a value
here is never used to build anything.
"""

from __future__ import annotations

import ast
import inspect
import re
import textwrap

from ..base.errors import TargetError
from ..base.names import SOURCE_INPUTS

#: words of an argument's name, and the example value for it (first match wins)
_EXAMPLES = (
    (re.compile(r"im(a)?g(e)?_?(size|res)|resolution", re.I), "32"),
    (re.compile(r"patch", re.I), "4"),
    (re.compile(r"spa[tc]ial|grid|side", re.I), "4"),
    (re.compile(r"head_?(dim|size)|d_?head|dim_?head|d_?k\b", re.I), "d"),
    (re.compile(r"head", re.I), "H"),
    (re.compile(r"vocab|n_?tokens?\b|num_?classes|n_?classes", re.I), "V"),
    (re.compile(r"max_?(len|seq|pos)|block_?size|context|positions", re.I), "L"),
    (re.compile(r"kernel", re.I), "3"),
    (re.compile(r"layers?\b|depth|n_?blocks", re.I), "2"),
    (re.compile(r"dilation|stride|rate\b|groups", re.I), "1"),
    (re.compile(r"window", re.I), "4"),
    (re.compile(r"drop|^p_|prob", re.I), "0.0"),
    (re.compile(r"chan|dim|width|hidden|features|embed|d_model|size|units|^d_|_d$", re.I), "C"),
)


def constructor_ask(cls: type, missing: list[str]) -> TargetError:
    """The target error for ``missing`` constructor arguments of ``cls``, with an example of
    each that fits it; ``error.init_example`` holds the ``--init`` text (None when no flag can
    give them) for :func:`with_command`."""
    params = _parameters(cls)
    names = ", ".join(repr(m) for m in missing)
    plural = "s" if len(missing) > 1 else ""
    flags, in_file, modules = [], [], []
    for name in missing:
        kind = _kind(params.get(name))
        if kind == "module":
            modules.append(name)
        elif kind == "sequence":
            in_file.append(name)
        else:
            flags.append(f"{name}={_example(name)}")
    parts = []
    if flags:
        dims = sorted({f.split("=")[1] for f in flags} & {"C", "H", "d", "V", "L"})
        said = f" ({', '.join(dims)}: probe sizes)" if dims else ""
        parts.append(f"pass --init {','.join(flags)}{said}")
    if in_file:
        table = ", ".join(f"{n} = {_sequence_example(params.get(n))}" for n in in_file)
        parts.append(f"{' and '.join(repr(n) for n in in_file)} "
                     f"{'are lists or tuples' if len(in_file) > 1 else 'is a list or tuple'}, "
                     f"which --init cannot write: give {'them' if len(in_file) > 1 else 'it'} "
                     f"in a config file (shapetrace.toml: [[targets]] with init = {{ {table} }}, "
                     f"run with --config shapetrace.toml)")
    if modules:
        parts.append(f"{' and '.join(repr(n) for n in modules)} "
                     f"{'are modules' if len(modules) > 1 else 'is a module'}, which no flag "
                     f"can make: check the class that builds {cls.__qualname__} (its parent), "
                     f"or call shapetrace.check() on an instance from Python")
    error = TargetError(f"cannot infer constructor argument{plural} {names} of "
                        f"{cls.__qualname__}: {'; '.join(parts)}")
    complete = flags and not in_file and not modules and not any(
        f.endswith("=VALUE") for f in flags)
    error.init_example = ",".join(flags) if complete else None
    return error


def with_command(message: str, exception: BaseException | None, display: str) -> str:
    """``message`` with one command line that gives what it asks for, when it asks for
    ``--init`` values alone (``constructor_ask``)."""
    example = getattr(exception, "init_example", None)
    if not example or "::" not in display:
        return message
    return f"{message}; e.g. python -m shapetrace {display} --init {example}"


def _parameters(cls: type) -> dict[str, inspect.Parameter]:
    try:
        return dict(inspect.signature(cls).parameters)
    except (TypeError, ValueError):
        return {}


def _kind(param: inspect.Parameter | None) -> str:
    """``"module"``, ``"sequence"`` (a list or tuple) or ``"value"``, from the parameter's
    default and annotation."""
    if param is None:
        return "value"
    default, annotation = param.default, param.annotation
    if isinstance(default, (list, tuple)) and default:
        return "sequence"
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "") \
        or str(annotation)
    if param.annotation is not param.empty:
        if isinstance(annotation, type):
            from torch import nn

            if issubclass(annotation, nn.Module):
                return "module"
            if issubclass(annotation, (list, tuple)):
                return "sequence"
        if re.search(r"\b(Module|nn\.Module)\b", str(text)) and "Optional" not in str(text):
            return "module"
        if re.search(r"\b([Tt]uple|[Ll]ist|Sequence)\b", str(annotation)):
            return "sequence"
    if (re.search(r"(^|_)(layer|block|module)$", param.name) and param.name not in (
            "n_layer", "num_layer")) or param.name in ("fn", "net", "model"):
        return "module"  # a wrapped module (Residual(fn), PreNorm(dim, fn))
    return "value"


def _example(name: str) -> str:
    for pattern, value in _EXAMPLES:
        if pattern.search(name):
            return value
    return "VALUE"


def _sequence_example(param: inspect.Parameter | None) -> str:
    default = getattr(param, "default", None)
    if isinstance(default, (list, tuple)) and default:
        return "[" + ", ".join(repr(v) if not isinstance(v, str) else f'"{v}"'
                               for v in default) + "]"
    return "[...]"


#: keyword arguments of torch's attention whose masks have a shape of their own
_MASK_KEYWORDS = {"key_padding_mask": ("B", "T"), "src_key_padding_mask": ("B", "T"),
                  "tgt_key_padding_mask": ("B", "T"), "memory_key_padding_mask": ("B", "S")}


def mask_axes(forward, name: str) -> tuple[str, ...]:
    """The axes of a mask argument for an example, from where the forward hands it: a padding
    mask (``key_padding_mask=mask``, one flag per key: batch by keys) or else a mask over
    queries and keys, (T, T)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(forward)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return ("T", "T")
    for call in ast.walk(tree):
        for node in call.keywords if isinstance(call, ast.Call) else ():
            if node.arg in _MASK_KEYWORDS and isinstance(node.value, ast.Name) and node.value.id == name:
                if node.arg == "key_padding_mask" and _keys_of_source(call, tree):
                    return ("B", "S")  # one flag per key of a source sequence (memory, context)
                return _MASK_KEYWORDS[node.arg]
    return ("T", "T")


def _keys_of_source(call: ast.Call, tree: ast.AST) -> bool:
    """Whether the keys or values of an attention ``call`` are made from an input read as a
    source sequence of its own (``memory``, ``context``), directly or through one local."""
    given = [k.value for k in call.keywords if k.arg in ("key", "value")] + list(call.args[1:3])
    assigned = {t.id: node.value for node in ast.walk(tree) if isinstance(node, ast.Assign)
                for t in node.targets if isinstance(t, ast.Name)}
    names = {n.id for expr in given for n in ast.walk(expr) if isinstance(n, ast.Name)}
    names |= {n.id for name in list(names) if name in assigned
              for n in ast.walk(assigned[name]) if isinstance(n, ast.Name)}
    return bool(names & SOURCE_INPUTS)
