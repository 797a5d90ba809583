"""What the behaviour checks return: dependency grids, and the findings of one module."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor

from ..base.diagnostics import Diagnostic, Skip

#: A dependency counts when it exceeds RTOL times the largest one (float64; see the package docs).
RTOL = 1e-6
#: Outputs of a permuted batch must match the permuted outputs to this relative tolerance.
PERMUTATION_RTOL = 1e-6


@dataclass
class Dependency:
    """How one output depends on one source (an input, or the embedding of a token input).

    ``batch_strength`` is (B_out, B_in): how strongly output sample b reads input sample b'.
    ``time_strength`` is (T_out, T_in): how strongly the output elements whose latest time
    coordinate is t read input position t' (None when the output or the source has no time
    axis). Each is normalised to a maximum of 1; a dependency counts above ``rtol``.
    """

    output: str
    source: str
    stream: str
    batch_strength: Tensor | None
    time_strength: Tensor | None
    rtol: float = RTOL

    @property
    def batch(self) -> Tensor | None:
        """(B_out, B_in) booleans, or None when the source has no batch axis."""
        return None if self.batch_strength is None else self.batch_strength > self.rtol

    @property
    def time(self) -> Tensor | None:
        """(T_out, T_in) booleans for a time-aligned (query) source, else None."""
        if self.time_strength is None or self.stream != "query":
            return None
        return self.time_strength > self.rtol


@dataclass
class DependencyResult:
    """Which output (sample, position) depends on which input (sample, position)."""

    B: int
    T: int
    pairs: list[Dependency] = field(default_factory=list)
    #: Why the dependencies could not be worked out (then ``pairs`` is empty).
    reason: str | None = None

    @property
    def batch_grid(self) -> Tensor | None:
        """(B, B) booleans over every output and source: output sample row, input sample column."""
        return _any([p.batch for p in self.pairs
                     if p.batch is not None and p.batch.shape == (self.B, self.B)])

    @property
    def time_grid(self) -> Tensor | None:
        """(T, T) booleans over the time-aligned sources: output position row, input column."""
        return _any([p.time for p in self.pairs
                     if p.time is not None and p.time.shape == (self.T, self.T)])

    def batch_leaks(self) -> list[tuple[int, int]]:
        """(output sample, input sample) pairs across samples that are used."""
        grid = self.batch_grid
        if grid is None:
            return []
        off = grid & ~torch.eye(grid.shape[0], grid.shape[1], dtype=torch.bool)
        return [tuple(ix) for ix in off.nonzero().tolist()]

    def causal_leaks(self) -> list[tuple[int, int]]:
        """(output position, later input position) pairs that are used."""
        grid = self.time_grid
        if grid is None:
            return []
        future = torch.ones_like(grid).triu(1)
        return [tuple(ix) for ix in (grid & future).nonzero().tolist()]


def _any(grids: list[Tensor]) -> Tensor | None:
    if not grids:
        return None
    out = grids[0].clone()
    for g in grids[1:]:
        out |= g
    return out


def looks_causal(dep: DependencyResult) -> bool:
    """True when the time-aligned dependencies are lower triangular and some output position
    depends on an earlier one (a position-wise module is not "causal in practice")."""
    grid = dep.time_grid
    if grid is None or grid.shape[0] < 2:
        return False
    return not bool(grid.triu(1).any()) and bool(grid.tril(-1).any())


#: the checks that re-run the module
RERUNS = ("nondeterministic-eval", "batch-leak", "causal-leak")


@dataclass
class BehaviourResult:
    """Everything the behaviour checks found for one module."""

    diagnostics: list[Diagnostic] = field(default_factory=list)
    dependency: DependencyResult | None = None
    #: Observations that are not findings, e.g. "the module is causal in practice".
    notes: list[str] = field(default_factory=list)
    #: Checks that could not run, and why: as lines for the report's notes (``skipped``) and
    #: as data (``skips``: which rules, the reason), added together by :meth:`skip`.
    skipped: list[str] = field(default_factory=list)
    skips: list[Skip] = field(default_factory=list)
    #: Whether the causal-leak check could run (an input with a time axis, dependencies known):
    #: when no intent was given, the caller says that it was not checked.
    causal_checkable: bool = False
    #: The note among ``notes`` that says the module is causal in practice, or "".
    causal_note: str = ""

    def skip(self, checks: tuple[str, ...], reason: str, note: str | None = None) -> None:
        """``checks`` (rule names) did not run because of ``reason``; ``note`` is the line the
        report shows (``"<checks> not checked: <reason>"`` unless given)."""
        self.skips.append(Skip(tuple(checks), reason))
        self.skipped.append(note or f"{' and '.join(checks)} not checked: {reason}")
