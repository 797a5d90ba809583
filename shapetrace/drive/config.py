"""Read ``shapetrace.toml`` or ``[tool.shapetrace]`` in ``pyproject.toml`` (SPEC section 4).

```toml
[tool.shapetrace]
dims = { B = 5, T = 7 }
timeout = 60                       # seconds, for every target
own_calls = true                   # run the code's own calls first (false: guesses only)
calls_from = ["scripts/demo.py"]   # scripts that build and call the classes (run when named)

[[tool.shapetrace.targets]]
target = "student/attention.py::MultiHeadAttention"
init = { d_in = "C", d_out = "C", context_length = 16, dropout = 0.0, num_heads = "H" }
inputs = ["x=B,T,C"]
dims = { d = 8 }
causal = true
reference = "solution/attention.py::MultiHeadAttention"
points = 2
timeout = 10                       # seconds, this target's own
visibility = "after_published"     # Gradescope: when the student sees it (also at the top level)
own_calls = false                  # this target's own (also calls_from)
```
In ``shapetrace.toml`` the same keys sit at the top level (``[[targets]]``). Every mistake is
one :class:`UsageError` line naming the file and the key. Importing this module does not import
torch (the pytest plugin reads the config while collecting).
"""

from __future__ import annotations

import difflib
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from ..base.dims import Dims
from ..base.errors import ShapetraceError, UsageError
from ..base.specs import parse_input

CONFIG_NAMES = ("shapetrace.toml", "pyproject.toml")
_TOP_KEYS = ("dims", "targets", "timeout", "visibility", "own_calls", "calls_from")
_TARGET_KEYS = ("target", "init", "inputs", "dims", "causal", "reference", "points", "timeout",
                "visibility", "own_calls", "calls_from")
#: Gradescope's visibility values: when a graded test's result is shown to the student
VISIBILITIES = ("visible", "hidden", "after_due_date", "after_published")


@dataclass
class TargetConfig:
    """One ``[[targets]]`` entry. ``target`` is as written; file paths in it are relative to the
    config file's directory (pass ``Config.root`` to ``resolve_targets``). ``None`` means infer."""

    target: str
    init: dict | None = None
    inputs: list[str] | None = None
    dims: dict = field(default_factory=dict)
    causal: bool | None = None
    #: A TARGET to compare with at the same weights (relative to the config's directory).
    reference: str | None = None
    points: float = 1  # what the target is worth when graded (Gradescope's max_score)
    #: Seconds the target may run (its import, constructor and checks); None: the global one.
    timeout: float | None = None
    #: When Gradescope shows the result to the student (``VISIBILITIES``); None: the global one.
    visibility: str | None = None
    #: Whether the code's own calls run first; None: the global setting.
    own_calls: bool | None = None
    #: Scripts that build and call the target, relative to the config file's directory.
    calls_from: tuple = ()


@dataclass
class Config:
    """A loaded config: global ``dims``, the targets, the file and its directory (``root``)."""

    dims: dict
    targets: list[TargetConfig]
    path: Path
    root: Path
    timeout: float | None = None  # seconds, for every target without its own
    visibility: str | None = None  # Gradescope's, for every target (and traced test) without its own
    own_calls: bool = True  # run the code's own calls before guessing (``drive.owncalls``)
    calls_from: tuple = ()  # scripts for every target, relative to root

    def dims_for(self, target: TargetConfig) -> dict[str, int]:
        """The global dims overridden by the target's own."""
        return {**self.dims, **target.dims}

    def visibility_for(self, target: TargetConfig) -> str | None:
        """The target's own Gradescope visibility, else the global one (None: Gradescope's
        default, visible)."""
        return target.visibility if target.visibility is not None else self.visibility

    def own_calls_for(self, target: TargetConfig) -> bool:
        """The target's own ``own_calls``, else the global one."""
        return self.own_calls if target.own_calls is None else target.own_calls

    def calls_from_for(self, target: TargetConfig) -> tuple:
        """The scripts that call the target (the global ones, then its own), absolute."""
        return tuple(str((self.root / p).resolve()) for p in (*self.calls_from, *target.calls_from))

    def timeout_for(self, target: TargetConfig) -> float | None:
        """The target's own timeout, else the global one (None: no limit)."""
        return target.timeout if target.timeout is not None else self.timeout


def load_config(path: str | Path) -> Config:
    """Read and check a config file; raise UsageError naming the file and key on any mistake."""
    path = Path(path)
    shown = str(path)
    if not path.is_file():
        raise UsageError(f"config file not found: {shown}")
    try:
        with path.open("rb") as f:
            data = tomllib.load(f)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{shown}: invalid TOML: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{shown}: cannot read: {exc}") from None

    prefix = ""
    if path.name == "pyproject.toml" or set(data) == {"tool"}:
        table = data.get("tool", {}).get("shapetrace") if isinstance(data.get("tool"), dict) else None
        if table is None:
            raise UsageError(f"{shown}: no [tool.shapetrace] table")
        prefix = "tool.shapetrace."
        data = table
    if not isinstance(data, dict):
        raise UsageError(f"{shown}: {prefix.rstrip('.')} must be a table")
    return _Reader(shown, prefix).config(data, path)


def find_config(start_dir: str | Path) -> Path | None:
    """The nearest ``shapetrace.toml``, or ``pyproject.toml`` with ``[tool.shapetrace]``, in
    ``start_dir`` or its parents, up to the repository root (a directory holding ``.git``)."""
    directory = Path(start_dir).resolve()
    for folder in (directory, *directory.parents):
        candidate = folder / "shapetrace.toml"
        if candidate.is_file():
            return candidate
        candidate = folder / "pyproject.toml"
        if candidate.is_file() and _has_shapetrace_table(candidate):
            return candidate
        if (folder / ".git").exists() or (folder / ".hg").exists():
            return None
    return None


def _has_shapetrace_table(path: Path) -> bool:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return "tool.shapetrace" in text  # broken, but meant for us: load_config will say where
    tool = data.get("tool")
    return isinstance(tool, dict) and "shapetrace" in tool


class _Reader:
    """Checks each key, building messages like ``pyproject.toml: tool.shapetrace.dims.B ...``."""

    def __init__(self, shown: str, prefix: str):
        self.shown = shown
        self.prefix = prefix

    def error(self, key: str, message: str) -> UsageError:
        return UsageError(f"{self.shown}: {self.prefix}{key} {message}")

    def config(self, data: dict, path: Path) -> Config:
        self.unknown_keys(data, _TOP_KEYS, "")
        dims = self.dims(data.get("dims", {}), "dims")
        raw_targets = data.get("targets", [])
        if not isinstance(raw_targets, list) or not all(isinstance(t, dict) for t in raw_targets):
            array = f"[[{self.prefix}targets]]"
            raise self.error("targets", f"must be an array of tables, written {array}")
        targets = [self.target(entry, i, dims) for i, entry in enumerate(raw_targets)]
        return Config(dims=dims, targets=targets, path=path, root=path.resolve().parent,
                      timeout=self.timeout(data.get("timeout"), "timeout"),
                      visibility=self.visibility(data.get("visibility"), "visibility"),
                      own_calls=self.switch(data.get("own_calls", True), "own_calls"),
                      calls_from=self.paths(data.get("calls_from", []), "calls_from"))

    def target(self, entry: dict, index: int, global_dims: dict) -> TargetConfig:
        name = entry.get("target")
        key = f"targets[{index}]"
        if name is None:
            raise self.error(key, "has no 'target' key; add target = \"path/to/file.py::Name\"")
        if not isinstance(name, str) or not name.strip():
            raise self.error(f"{key}.target", f"must be a non-empty string, got {name!r}")
        self.unknown_keys(entry, _TARGET_KEYS, f"{key}.")

        dims = self.dims(entry.get("dims", {}), f"{key}.dims")
        try:
            merged = Dims({**global_dims, **dims})
        except ShapetraceError as exc:
            raise self.error(f"{key}.dims", f"is invalid: {exc}") from None

        init = entry.get("init")
        if init is not None:
            if not isinstance(init, dict):
                raise self.error(f"{key}.init", f"must be a table of constructor arguments, got {_kind(init)}")
            for arg in init:
                if not arg.isidentifier():
                    raise self.error(f"{key}.init", f"has {arg!r}, which is not a valid argument name")

        inputs = entry.get("inputs")
        if inputs is not None:
            if not isinstance(inputs, list) or not all(isinstance(s, str) for s in inputs):
                raise self.error(f"{key}.inputs", f"must be a list of strings like [\"x=B,T,C\"], got {inputs!r}")
            for i, text in enumerate(inputs):
                try:
                    parse_input(text, merged)
                except UsageError as exc:
                    raise self.error(f"{key}.inputs[{i}]", f"is invalid: {exc}") from None

        causal = entry.get("causal")
        if causal is not None and not isinstance(causal, bool):
            raise self.error(f"{key}.causal", f"must be true or false, got {causal!r}")
        reference = entry.get("reference")
        if reference is not None and (not isinstance(reference, str) or not reference.strip()):
            raise self.error(f"{key}.reference", f"must be a TARGET string like "
                                                 f"\"solution/attention.py::Name\", got {reference!r}")
        points = entry.get("points", 1)
        if isinstance(points, bool) or not isinstance(points, (int, float)) or points < 0:
            raise self.error(f"{key}.points", f"must be a number of points >= 0, got {points!r}")
        return TargetConfig(target=name.strip(), init=init, inputs=inputs, dims=dims, causal=causal,
                            reference=reference.strip() if reference else None, points=points,
                            timeout=self.timeout(entry.get("timeout"), f"{key}.timeout"),
                            visibility=self.visibility(entry.get("visibility"),
                                                       f"{key}.visibility"),
                            own_calls=self.switch(entry.get("own_calls"), f"{key}.own_calls"),
                            calls_from=self.paths(entry.get("calls_from", []),
                                                  f"{key}.calls_from"))

    def visibility(self, value: object, key: str) -> str | None:
        """One of Gradescope's visibility values, or None when not given."""
        if value is None:
            return None
        if value not in VISIBILITIES:
            close = difflib.get_close_matches(str(value), VISIBILITIES, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise self.error(key, f"must be one of {', '.join(VISIBILITIES)}, got {value!r}"
                                  f"{'; ' + hint.rstrip() if hint else ''}")
        return value

    def switch(self, value: object, key: str) -> bool | None:
        """true or false, or None when not given."""
        if value is not None and not isinstance(value, bool):
            raise self.error(key, f"must be true or false, got {value!r}")
        return value

    def paths(self, value: object, key: str) -> tuple:
        """A list of script paths (relative to the config file's directory)."""
        if not isinstance(value, list) or not all(isinstance(p, str) and p.strip()
                                                  for p in value):
            raise self.error(key, f"must be a list of script paths like [\"scripts/demo.py\"], "
                                  f"got {value!r}")
        return tuple(p.strip() for p in value)

    def timeout(self, value: object, key: str) -> float | None:
        """A number of seconds, positive and finite, or None when not given."""
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not 0 < value < float("inf"):
            raise self.error(key, f"must be a positive number of seconds, got {value!r}")
        return float(value)

    def dims(self, value: object, key: str) -> dict[str, int]:
        if not isinstance(value, dict):
            raise self.error(key, f"must be a table of NAME = SIZE, e.g. {{ B = 5, T = 7 }}, got {_kind(value)}")
        for name, size in value.items():
            if not name.isidentifier():
                raise self.error(key, f"has {name!r}, which is not a valid dimension name")
            if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
                raise self.error(f"{key}.{name}", f"must be a positive integer, got {size!r}")
        return dict(value)

    def unknown_keys(self, table: dict, allowed: tuple[str, ...], key: str) -> None:
        for name in table:
            if name not in allowed:
                close = difflib.get_close_matches(name, allowed, n=1)
                hint = f"did you mean {close[0]!r}?" if close else f"expected one of {', '.join(allowed)}"
                raise self.error(f"{key}{name}", f"is not a known key; {hint}")


def _kind(value: object) -> str:
    return {dict: "a table", list: "an array", str: "a string", bool: "a boolean",
            int: "an integer", float: "a float"}.get(type(value), type(value).__name__)
