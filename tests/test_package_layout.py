"""The package's layout, read from its source (docs/architecture.md): the stages are
subpackages, each says what it is, each imports only itself and earlier stages (module-level and
function-level imports alike), the import graph has no cycle, and no module is long."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "shapetrace"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _graph() -> dict[str, set[str]]:
    files = {_module_name(p): p for p in PACKAGE.rglob("*.py")}

    def known(name: str) -> str | None:
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name or None

    edges: dict[str, set[str]] = {m: set() for m in files}
    for mod, path in files.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    origin = ".".join(base + ([node.module] if node.module else []))
                else:
                    origin = node.module or ""
                targets = [f"{origin}.{a.name}" for a in node.names]
            else:
                continue
            for target in targets:
                found = known(target)
                if found and found != mod and found != "shapetrace":
                    edges[mod].add(found)
    return edges


def _cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One cycle as a path of module names, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: finished
    path: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        path.append(m)
        for n in sorted(edges[m]):
            if state.get(n) == 1:
                return path[path.index(n):] + [n]
            if n not in state and (found := visit(n)):
                return found
        path.pop()
        state[m] = 2
        return None

    for m in sorted(edges):
        if m not in state and (found := visit(m)):
            return found
    return None


def test_the_import_graph_has_no_cycle():
    cycle = _cycle(_graph())
    assert cycle is None, " -> ".join(cycle or [])


def test_the_cycle_finder_sees_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def _reaches(edges: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for n in edges[todo.pop()]:
            if n not in seen:
                seen.add(n)
                todo.append(n)
    return seen


#: The stages, in the order data flows through them: each may import itself and earlier ones.
STAGES = ("base", "record", "naming", "analysis", "rules", "behaviour", "render", "report",
          "drive", "frontends")
#: What may sit at the top of the package: the public surface, ``python -m`` and the version.
TOP_LEVEL = {"shapetrace", "shapetrace.__main__", "shapetrace._version"}


def _stage(module: str) -> int | None:
    parts = module.split(".")
    return STAGES.index(parts[1]) if len(parts) > 1 and parts[1] in STAGES else None


def _late_imports(edges: dict[str, set[str]]) -> list[tuple[str, str]]:
    """(module, what it imports) for every import of a later stage."""
    return sorted((module, imported) for module, targets in edges.items() for imported in targets
                  if _stage(module) is not None and _stage(imported) is not None
                  and _stage(imported) > _stage(module))


def test_stages_import_only_themselves_and_earlier_stages():
    late = _late_imports(_graph())
    assert not late, "\n".join(f"{m} imports {i}" for m, i in late)


def test_every_module_belongs_to_a_stage():
    loose = sorted(m for m in _graph() if _stage(m) is None and m not in TOP_LEVEL)
    assert not loose, loose


@pytest.mark.parametrize("stage", STAGES)
def test_every_stage_says_what_it_is(stage):
    init = PACKAGE / stage / "__init__.py"
    doc = ast.get_docstring(ast.parse(init.read_text()))
    assert doc and len(doc.split()) >= 20, f"{init}: a docstring that says what the stage is"


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines())


def test_the_stages_hold_the_code():
    files = list(PACKAGE.rglob("*.py"))
    top = [p for p in files if p.parent == PACKAGE]
    inside = sum(_lines(p) for p in files if p.parent != PACKAGE)
    assert len(top) <= 8, sorted(p.name for p in top)
    assert inside / sum(_lines(p) for p in files) >= 0.85


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_is_long(path):
    assert _lines(path) <= 600, f"{path}: split it by concern"


def test_the_stage_checker_sees_a_late_import():
    edges = {"shapetrace.rules.registry": {"shapetrace.render.console", "shapetrace.base.ops"},
             "shapetrace.render.console": {"shapetrace.rules.registry"}}
    assert _late_imports(edges) == [("shapetrace.rules.registry", "shapetrace.render.console")]
