"""Stage 4, the rules: each family module turns an ``Analysis`` into Diagnostics.

The registry (``registry.RULES``) is the one table of rules (code, name, severity, summary,
explanation, a wrong and a right example); a rule read from the trace names its function there
(``check="reshape:check_jumble"``), and ``diagnostic()`` is the one way a finding is made.
Families: ``reshape`` (reshape-jumble), ``softmax`` (softmax-axis, unnormalized-attention),
``scale`` (attention-scale), ``broadcast`` (silent-broadcast), ``heads`` (head-grouping),
``failures`` (op-failed, noncontiguous-view, and a failure no op explains), ``misc``
(reversed-transpose, discarded-result, dim-collision), ``nonfinite`` (non-finite, at its cause),
``positions`` (position-axis), ``annotations`` (annotation-mismatch). ``fixes`` and
``scale_fixes`` write the corrected line a hint ends with;
``steps`` says at which step of a training run each finding was seen, and turns the run's NaN
and Inf into one non-finite finding. A rule that ``explains`` another (``Rule.explains``) keeps
the other's finding at its own line out of the report (``unexplained``): one bug, one finding.
``dead`` finds discarded-result by dataflow (dead values, layers never called) for ``misc``,
each confirmed by ``statements``, which reads the statement that binds a value.
Adding a rule is adding its row to the registry and its function to a family module.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from ..base.diagnostics import merge_repeats, merge_siblings
from .registry import RULES, Rule, diagnostic

if TYPE_CHECKING:
    from ..analysis.facts import Analysis

_checks: dict | None = None  # rule name -> function; the functions are fixed, so kept per process


def trace_checks() -> dict:
    """rule name -> check function, for every rule that names one, in registry order."""
    global _checks
    if _checks is None:
        found = {}
        for name, rule in RULES.items():
            if rule.check is None:
                continue
            family, _, function = rule.check.partition(":")
            module = importlib.import_module(f"{__name__}.{family}")
            found[name] = getattr(module, function)
        _checks = found
    return _checks


def run_trace_rules(analysis: Analysis, skip=(), step=None, key=None) -> list:
    """All trace-rule diagnostics, in trace order (ties in registry order), one per bug: the
    same rule at the same line in repeated modules is one finding with a count
    (``base.diagnostics.merge_repeats``; ``step``: a finding -> the kind of training step it
    is in, so that a bug seen again in another kind of step is not counted again), and the same
    mistake with the same fix on sibling lines is one finding with its ``lines``
    (``merge_siblings``). ``key``: the run's key in ``rules.memo`` (``findings_key``): the rules
    that read no values take the findings kept for it, or keep theirs there."""
    from .memo import keep, known

    diagnostics = []
    order = {name: i for i, name in enumerate(RULES)}
    kept = known(key, analysis) if key is not None else None
    found = {} if key is not None and kept is None else None
    for name, check in trace_checks().items():
        if name in skip:
            continue
        if kept is not None and name in kept:
            diagnostics.extend(kept[name])
            continue
        by_rule = list(check(analysis))
        if found is not None and not RULES[name].reads_values:
            found[name] = by_rule
        diagnostics.extend(by_rule)
    if found is not None:
        keep(key, found, analysis)
    diagnostics.sort(key=lambda d: (_place(d), order.get(d.rule, 99)))
    return merge_siblings(merge_repeats(diagnostics, step))


def unexplained(known: list, found) -> list:
    """The findings of ``found`` that none of ``known`` explains: a rule that ``explains``
    another (``Rule.explains``) has found the same bug when both name the same file and line
    (the line that made the wrong value, or the line where it was used)."""
    explained = {(name, *place) for d in known for place in _places(d)
                 for name in (RULES[d.rule].explains if d.rule in RULES else ())}
    return [d for d in found if not any((d.rule, *place) in explained for place in _places(d))]


def _places(d) -> list[tuple]:
    used = getattr(d, "used_at", None)
    return [(d.file, d.line)] + ([tuple(used)] if used else [])


def _place(d) -> int:
    return d.record if d.record is not None else 1 << 30


__all__ = ["RULES", "Rule", "diagnostic", "merge_repeats", "run_trace_rules", "trace_checks",
           "unexplained"]
