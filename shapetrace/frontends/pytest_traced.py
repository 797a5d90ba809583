"""Traced tests: a test run inside ``shapetrace.trace()`` (the marker, ``--shapetrace``) or using the
``shapetrace`` fixture, and the record of what shapetrace found for one test item.

``Recording`` collects an item's results (targets run, blocks traced, checks made) and fails
the item on an error-level finding; ``ShapetraceFixture`` is what the fixture hands a test;
``trace_plan`` reads how a test is to be traced from its marker and the options."""

from __future__ import annotations

import contextlib

import pytest

from .pytest_state import plugin_state

MAX_TEST_OPS = 300  # ops shown for a traced test in the failure section (targets show all)


MAX_TEST_OPS = 300  # ops shown for a traced test in the failure section (targets show all)
MARKER_KEYS = ("dims", "causal")


RECORDING = pytest.StashKey["Recording"]()


# --- traced tests ------------------------------------------------------------------------------

class Recording:
    """The shapetrace results of one test item: targets run, blocks traced, checks made."""

    def __init__(self, name: str, *, max_ops: int | None = MAX_TEST_OPS, width: int | None = None):
        self.name = name
        self.max_ops = max_ops
        self.width = width  # of the failure message and sections; None: 100 (a file's)
        self.results: list = []  # TargetResult
        self.failed = False  # shapetrace failed the item (vs. the test failing by itself)
        self._traces: list[tuple[str, object, bool]] = []  # (name, Trace, block raised)
        self._texts: dict[int, str] = {}  # width -> the findings as text, made once

    def findings_text(self, width: int | None = None) -> str:
        """The results' findings as plain text (no trace), at ``width``, made once for the
        failure message and Gradescope's output alike."""
        from ..render import FILE_WIDTH, results_text

        width = width or FILE_WIDTH
        if width not in self._texts:
            self._texts[width] = results_text(self.results, show_trace=False, width=width)
        return self._texts[width]

    def add_trace(self, trace, raised: bool, model=None) -> None:
        n = len(self._traces) + 1
        name = self.name if n == 1 else f"{self.name} (trace {n})"
        if model is not None:
            name += f" [{type(model).__name__}]"
        self._traces.append((name, trace, raised))

    def finish_traces(self) -> None:
        """Turn the recorded traces into results, running the rules on each."""
        from ..report.results import TargetResult

        for name, trace, raised in self._traces:
            diagnostics = trace.diagnostics
            if not raised:  # the code caught what an op raised (pytest.raises, a fallback)
                diagnostics = [d for d in diagnostics if not _about_failed_op(trace, d)]
            self.results.append(TargetResult(name, dims=trace.dims.as_dict(),
                                             diagnostics=diagnostics, trace=trace))
        self._traces.clear()

    def check(self) -> None:
        """Fail the item (``pytest.fail``, no traceback) when a result has an error."""
        from ..render import failure_text

        width = self.width or None
        message = failure_text(self.results, findings=self.findings_text(width),
                               **({"width": width} if width else {}))
        if message is not None:
            self.failed = True
            pytest.fail(message, pytrace=False)



def _about_failed_op(trace, diagnostic) -> bool:
    index = diagnostic.record
    return (diagnostic.rule in ("op-failed", "noncontiguous-view") and index is not None
            and index < len(trace.records) and trace.records[index].error is not None)



class ShapetraceFixture:
    """The ``shapetrace`` fixture: explicit tracing and checks inside a test.

    >>> def test_heads(shapetrace):
    ...     model = MultiHeadAttention(d_in=shapetrace.dims["C"], num_heads=shapetrace.dims["H"])
    ...     with shapetrace.trace(model):
    ...         model(shapetrace.input("x=B,T,C"))
    ...     shapetrace.check(MultiHeadAttention, init={"d_in": "C", "num_heads": "H"})

    Every traced block and check counts: the test fails when one has an error-level finding.
    Probe sizes come from ``[tool.shapetrace] dims`` and the test's marker, ``causal`` from the
    marker; ``check`` takes both per call too.
    """

    def __init__(self, recording: Recording, dims: dict, causal: bool | None, state=None):
        self._recording = recording
        self._state = state
        self._dims_overrides = dict(dims)
        self.causal = causal
        from ..base.dims import Dims

        self.dims = Dims(self._dims_overrides)

    @contextlib.contextmanager
    def trace(self, model=None):
        """``with shapetrace.trace(model) as t:`` records the block; ``t`` is a ``Trace``."""
        from .pytest_outputs import new_trace

        # names from the declared sizes, the model's config, or the probe sizes if it runs at
        # them (as for trace() itself): a test at its own sizes gets no guessed names
        recorded = new_trace(self._state, model, dims=dict(self._dims_overrides))
        raised = True
        try:
            with recorded:
                yield recorded
            raised = False
        finally:
            self._recording.add_trace(recorded, raised, model)

    def check(self, module, *, init=None, inputs=None, dims=None, causal=None):
        """``shapetrace.check`` at this test's probe sizes; returns the Report."""
        from ..drive.check import check

        report = check(module, init=init, inputs=inputs,
                       dims={**self._dims_overrides, **(dims or {})},
                       causal=self.causal if causal is None else causal)
        self._recording.results.extend(report.targets)
        return report

    def input(self, spec: str):
        """A tensor at the probe sizes: ``"x=B,T,C"``, ``"B,T,C"``, ``"idx=B,T:long:V"``."""
        from ..base.specs import make_input, parse_input

        text = spec if "=" in spec.split(":")[0] else f"x={spec}"
        return make_input(parse_input(text, self.dims), self.dims)

    @property
    def results(self) -> list:
        """The TargetResults recorded so far (checks; traced blocks once the test ends)."""
        return list(self._recording.results)



class TracePlan:
    def __init__(self, dims: dict, causal: bool | None, explicit: bool):
        self.dims = dims
        self.causal = causal
        self.explicit = explicit  # the test uses the fixture: it says what to trace



def trace_plan(item) -> TracePlan | None:
    """How to trace this test, or None when shapetrace is not asked to."""
    if getattr(item, "is_shapetrace_target", False):  # a config target: traced by itself
        return None
    state = plugin_state(item.config)
    marker = item.get_closest_marker("shapetrace")
    explicit = "shapetrace" in getattr(item, "fixturenames", ())
    if state is None or not (marker or explicit or state.trace_all):
        return None
    dims = state.global_dims()
    causal = None
    if marker is not None:
        from ..base.errors import UsageError

        if marker.args or set(marker.kwargs) - set(MARKER_KEYS):
            given = [repr(a) for a in marker.args]
            given += [k for k in marker.kwargs if k not in MARKER_KEYS]
            raise UsageError(f"@pytest.mark.shapetrace takes only dims= and causal=, got "
                             f"{', '.join(given)}")
        marker_dims = marker.kwargs.get("dims") or {}
        if not hasattr(marker_dims, "items"):
            raise UsageError(f"@pytest.mark.shapetrace(dims=...) must be a dict like "
                             f"{{'d': 8}}, got {marker_dims!r}")
        dims = {**dims, **dict(marker_dims.items())}
        causal = marker.kwargs.get("causal")
        if causal is not None and not isinstance(causal, bool):
            raise UsageError(f"@pytest.mark.shapetrace(causal=...) must be True, False or None, "
                             f"got {causal!r}")
    return TracePlan(dims, causal, explicit)



def trace_plan_or_fail(item) -> TracePlan | None:
    from ..base.errors import ShapetraceError

    try:
        return trace_plan(item)
    except ShapetraceError as exc:
        pytest.fail(f"shapetrace: {exc}", pytrace=False)



def finish_quietly(recording: Recording) -> None:
    """Analyse the traces of a test that failed by itself, never hiding its own error."""
    try:
        recording.finish_traces()
    except Exception as exc:  # pragma: no cover - a rule bug; the test's error matters more
        from ..report.results import TargetResult

        error = f"shapetrace could not analyse the trace: {exc}"
        recording.results.append(TargetResult(recording.name, error=error))
