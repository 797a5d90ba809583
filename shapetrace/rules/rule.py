"""What a rule is: its code, name, severity, summary, explanation, a wrong and a right example,
its kind and the function that reads it from a trace (``registry`` lists them)."""

from __future__ import annotations

from dataclasses import dataclass
from textwrap import dedent


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    severity: str  # the default severity; a rule may emit a milder one (attention-scale)
    summary: str
    explanation: str
    wrong: str
    right: str
    kind: str = "trace"  # "trace" | "behaviour" | "runtime" (raised while running)
    needs_values: bool = False  # skipped under --fake
    #: Reads the value probes (weight sums, NaN, Inf): run on every trace; others' are reused (rules.memo).
    reads_values: bool = False
    #: Milder findings of the same rule, by name: attention-scale's "unscaled" is a warning.
    variants: tuple[tuple[str, str], ...] = ()
    #: The function that reads the rule out of a trace: "family:function" in shapetrace.rules.
    check: str | None = None
    #: Rules whose finding at the same line is this one's bug seen another way (position-axis
    #: explains the batch-leak its table cut by the batch makes): one bug, one finding.
    explains: tuple[str, ...] = ()

    def severity_of(self, variant: str | None = None) -> str:
        if variant is None:
            return self.severity
        if variant not in dict(self.variants):
            raise KeyError(f"rule {self.name} has no variant {variant!r}")
        return dict(self.variants)[variant]


def _r(code, name, severity, summary, explanation, wrong, right, **kw) -> Rule:
    return Rule(code, name, severity, summary, dedent(explanation).strip(), dedent(wrong).strip(),
                dedent(right).strip(), **kw)
