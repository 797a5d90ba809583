"""Rules over the trace: each family module turns records into Diagnostics.

A family module (``reshape.py``, ``failures.py``, ...) defines ``CHECKS``: a dict from rule name
(as listed in ``registry.RULES``) to a function ``check(trace) -> Iterable[Diagnostic]``.
Family modules are found by name in this package, so adding a rule is adding its metadata to the
registry and its function to a family module.
"""

from __future__ import annotations

import importlib
import pkgutil

from .registry import RULES, Rule, diagnostic

_checks_cache: dict | None = None


def trace_checks() -> dict:
    """rule name -> check function, for every trace rule that has one."""
    global _checks_cache
    if _checks_cache is None:
        found = {}
        for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
            if info.name == "registry" or info.name.startswith("_"):
                continue
            module = importlib.import_module(f"{__name__}.{info.name}")
            for name, fn in getattr(module, "CHECKS", {}).items():
                if name not in RULES:
                    raise KeyError(f"{module.__name__} defines a check for unknown rule {name!r}")
                found[name] = fn
        _checks_cache = {name: found[name] for name in RULES if name in found}
    return _checks_cache


def run_trace_rules(trace, skip=()) -> list:
    """All trace-rule diagnostics, in trace order (ties in registry order)."""
    trace._analyse()
    diagnostics = []
    order = {name: i for i, name in enumerate(RULES)}
    for name, check in trace_checks().items():
        if name in skip:
            continue
        diagnostics.extend(check(trace))
    diagnostics.sort(key=lambda d: (d.data.get("index", 1 << 30), order.get(d.rule, 99)))
    return diagnostics


__all__ = ["RULES", "Rule", "diagnostic", "run_trace_rules", "trace_checks"]
