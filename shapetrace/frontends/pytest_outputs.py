"""What the pytest plugin hands out besides pass/fail: the report file, Gradescope's
``results.json`` and GitHub Actions annotations (SPEC section 7).

Where an item ran (an xdist worker, or the one process) :func:`attach` turns its results into
plain strings on the test report: ``shapetrace_results`` (the exporter's entries),
``shapetrace_gradescope`` (one Gradescope test) and ``shapetrace_annotations`` (workflow
commands). Reports travel to the controller, where :class:`Outputs` gathers them and writes the
files at the end of the session. The item's records are released once its report is made.

Memory stays flat across a long session:

* a report entry holds a compact view of the trace: a training loop that runs the same ops
  step after step is shown once, with a note saying how many times it repeats
  (:func:`compact_trace`), and at most ``MAX_REPORT_OPS`` ops are kept;
* the controller streams entries to a spool file as they arrive and keeps only their offsets;
  the report is assembled from the spool when the session ends.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

MAX_HEADS = 48  # attention heatmaps kept per traced test, for an HTML report
MAX_REPORT_OPS = 3000  # ops of one trace kept in the report file, after folding repeated steps
MIN_REPEATS = 2  # a run of steps folds when the first step is followed by this many repeats
MIN_FOLDED = 50  # ... and folding saves at least this many ops


# --- where the item ran ------------------------------------------------------------------------

def new_trace(state, model=None, **options):
    """A ``Trace`` for a traced test. For an HTML report it also keeps one head of each
    attention's weights for the heatmaps, as ``check()`` does: a few hundred floats for the
    first call of each attention, at most ``MAX_HEADS`` per trace."""
    from ..report.trace import Trace

    exporter = getattr(state, "report_exporter", None)
    if exporter is None or exporter.extras is None:
        return Trace(model, **options)
    from ..record.heads import head_keeper

    heads: dict[int, list] = {}
    trace = Trace(model, observer=head_keeper(heads, limit=MAX_HEADS), **options)
    trace.head_weights = heads
    return trace


def attach(report, recording, state, *, points: float = 1, visibility: str | None = None) -> None:
    """Put the item's shapetrace outputs on its test report, as strings (they cross to the
    xdist controller). ``recording`` is the item's ``_Recording``; ``state`` the plugin's."""
    from ..render import failed_traces_text, results_text

    results = recording.results
    width = {"width": recording.width} if getattr(recording, "width", None) else {}
    if results:
        if recording.failed:
            section = failed_traces_text(results, max_ops=recording.max_ops, **width)
            if section:
                report.sections.append(("shapetrace trace", section))
        elif report.failed or any(r.diagnostics or getattr(r, "not_checked", ()) for r in results):
            report.sections.append(("shapetrace", results_text(results, max_ops=recording.max_ops,
                                                                **width)))
    if state is None:
        return
    if state.report_exporter is not None and results:
        exporter = state.report_exporter
        entries = [exporter.entry(compact_result(r), test=report.nodeid) for r in results]
        report.shapetrace_results = json.dumps(entries, allow_nan=False)
    if state.gradescope_path is not None:
        report.shapetrace_gradescope = json.dumps(gradescope_entry(
            report, results, points, visibility=visibility,
            findings=recording.findings_text() if results else ""))
    if state.annotate:
        from ..render.github import annotations

        found = annotations(results)
        if found:
            report.shapetrace_annotations = json.dumps([a.to_json() for a in found])


def gradescope_entry(report, results: list, points: float, *, visibility: str | None = None,
                     findings: str | None = None) -> dict:
    """The item as one Gradescope test: its verdict, and its findings as the output
    (``findings``: that text, when the caller has it)."""
    from ..render import results_text
    from .gradescope import gradescope_test

    if findings is None:
        findings = results_text(results, show_trace=False) if results else ""
    output = findings.strip()
    if report.failed and not any(not r.ok for r in results):  # the test failed by itself
        output = f"{output}\n\n{report.longreprtext}".strip()
    return gradescope_test(report.nodeid, passed=report.passed, points=points, output=output,
                           visibility=visibility)


def compact_result(result):
    """``result`` with its trace folded and capped for the report file (a shallow copy)."""
    if result.trace is None or len(result.trace.records) <= 1:
        return result
    import copy

    view, notes = compact_trace(result.trace, result.diagnostics)
    if view is result.trace:
        return result
    compact = copy.copy(result)  # the view's findings are the trace's own
    compact.trace, compact.notes = view, [*result.notes, *notes]
    return compact


class _TraceView:
    """Some of a trace's records, read like the ``Trace`` (renderers and ``to_json``)."""

    def __init__(self, trace, records: list, repeats: list | None = None):
        self._trace = trace
        self.records = records
        self.dims = trace.dims
        self.model = getattr(trace, "model", None)
        #: ``(first index, ops, times run)`` for each run of steps kept once (the HTML tree
        #: shows it as a loop)
        self.repeats = repeats or []
        kept = {rec.index for rec in records}
        self.spans = [s for s in getattr(trace, "spans", ())
                      if all(i in kept for i in range(s.start, s.end))]
        self.head_weights = {i: w for i, w in (getattr(trace, "head_weights", None) or {}).items()
                             if i in kept}

    def _analyse(self):
        return self._trace._analyse()

    def shape_of(self, meta) -> str:
        return self._trace.shape_of(meta)

    @property
    def diagnostics(self):
        return self._trace.diagnostics

    def to_json(self) -> list[dict]:
        from ..report.trace import Trace

        return Trace.to_json(self)


def compact_trace(trace, diagnostics) -> tuple[object, list[str]]:
    """A view of ``trace`` with repeated steps shown once, and notes saying what was folded.

    A step is a run of records with the same ops, lines, modules and shapes as the run before
    it (a training loop's iterations, a generation loop's tokens); a record that a finding
    points at or that raised is never folded away.
    """
    records = trace.records
    flagged = {r for d in diagnostics for r in (d.record, *d.more_records) if r is not None}
    ids: dict = {}
    sigs = []
    for rec in records:
        if rec.index in flagged or rec.error:
            sigs.append(-1 - rec.index)  # unique: never part of a repeat
            continue
        site = rec.site  # one call site, resolved lazily; its code by identity (code objects
        key = (rec.op, site and (id(site[0]), site[1]), rec.module,  # of two files compare equal)
               tuple(getattr(m, "shape", None) for m in rec.inputs),
               tuple(getattr(m, "shape", None) for m in rec.outputs))
        sigs.append(ids.setdefault(key, len(ids)))
    kept, notes, runs = [], [], []
    for start, stop, period, repeats in _runs(sigs):
        kept.extend(records[start:start + period])
        if repeats:
            first = records[start]
            runs.append((first.index, period, repeats + 1))
            where = f"{first.file}:{first.line}" if first.file else first.op
            notes.append(f"trace folded: the {period} ops from {where} (op {start}) repeat "
                         f"{repeats} more times (ops {start + period} to {stop - 1}); shown once")
    if len(kept) > MAX_REPORT_OPS:
        notes.append(f"trace cut: the report keeps the first {MAX_REPORT_OPS} of {len(kept)} "
                     f"ops (after folding)")
        kept = kept[:MAX_REPORT_OPS]
    if len(kept) == len(records):
        return trace, []
    return _TraceView(trace, kept, runs), notes


def _runs(sigs: list[int]):
    """``(start, stop, period, repeats)`` covering ``sigs`` in order: a block of ``period``
    records followed by ``repeats`` identical copies (0 for records that do not repeat)."""
    n = len(sigs)
    following = [n] * n  # the next index with the same signature
    last: dict[int, int] = {}
    for i in range(n - 1, -1, -1):
        following[i] = last.get(sigs[i], n)
        last[sigs[i]] = i
    i = plain = 0
    while i < n:
        j = following[i]
        p = j - i
        if j + p * MIN_REPEATS <= n and sigs[j + p - 1] == sigs[i + p - 1] \
                and sigs[i:j] == sigs[j:j + p]:
            block = sigs[i:j]
            k = j + p
            while k + p <= n and sigs[k] == block[0] and sigs[k:k + p] == block:
                k += p
            repeats = (k - i) // p - 1
            if repeats >= MIN_REPEATS and p * repeats >= MIN_FOLDED:
                if plain < i:
                    yield plain, i, i - plain, 0
                yield i, k, p, repeats
                i = plain = k
                continue
        i += 1
    if plain < n:
        yield plain, n, n - plain, 0


# --- on the controller -------------------------------------------------------------------------

class Outputs:
    """Gathers what the items attached and writes the report file and ``results.json`` (the
    controller only, under xdist); prints the annotations at the end of the session."""

    def __init__(self, state):
        self.state = state
        self._spool = (tempfile.TemporaryFile("w+", encoding="utf-8")
                       if state.report_exporter is not None else None)
        self._entries: dict[str, tuple[int, int, int]] = {}  # nodeid -> offset, length, count
        self._gradescope: dict[str, dict] = {}  # nodeid -> test, arrival order
        self._annotations: dict = {}  # command -> Annotation, in arrival order
        #: nodeid -> (points, visibility) of every item to be graded, known at collection
        self._expected: dict[str, tuple[float, str | None]] = {}
        self._trouble: dict[str, str] = {}  # nodeid -> why it left no result (a crash)
        self.errors: list[str] = []

    def expect(self, nodeid: str, points: float, visibility: str | None) -> None:
        """``nodeid`` is to be graded: ``results.json`` lists it whatever happens."""
        self._expected.setdefault(nodeid, (points, visibility))

    def pytest_runtest_logreport(self, report):
        if report.when == "call":
            data = getattr(report, "shapetrace_results", None)
            if data and self._spool is not None:  # a rerun replaces the first try
                self._spool.seek(0, 2)
                offset = self._spool.tell()
                self._spool.write(data)
                self._entries[report.nodeid] = (offset, len(data), len(json.loads(data)))
        data = getattr(report, "shapetrace_gradescope", None)
        if data:
            self._gradescope[report.nodeid] = json.loads(data)
        elif report.failed and report.nodeid not in self._gradescope:  # a crash: no result came
            text = (report.longreprtext or "").strip()
            self._trouble.setdefault(report.nodeid, text.splitlines()[-1] if text else
                                     f"it failed during {report.when}")
        elif report.when == "teardown" and report.failed and report.nodeid in self._gradescope:
            from .gradescope import mark_failed

            self._gradescope[report.nodeid] = mark_failed(
                self._gradescope[report.nodeid], f"teardown failed:\n{report.longreprtext}")
        for data in json.loads(getattr(report, "shapetrace_annotations", None) or "[]"):
            from ..render.github import Annotation

            found = Annotation.from_json(data)
            self._annotations.setdefault(found.command(), found)

    def _stored_entries(self):
        """The entries back from the spool: targets first, then traced tests, each in the
        order their reports came."""
        order = sorted(self._entries, key=lambda nodeid: not nodeid.startswith("shapetrace::"))
        for nodeid in order:
            offset, length, _ = self._entries[nodeid]
            self._spool.seek(offset)
            text = self._spool.read(length)
            yield from json.loads(text)

    def pytest_sessionfinish(self, session, exitstatus):
        state = self.state
        if self._spool is not None:
            try:
                text = state.report_exporter.document(list(self._stored_entries()))
                _write(state.report_path, text)
            except OSError as exc:
                self.errors.append(f"report: cannot write {state.report_shown}: {exc.strerror}")
            finally:
                self._spool.close()
        if state.gradescope_path is not None:
            from .gradescope import write_results

            tests = sorted([*self._gradescope.values(), *self._not_graded(session, exitstatus)],
                           key=lambda t: not t["name"].startswith("shapetrace::"))
            try:
                write_results(state.gradescope_path, tests)
            except OSError as exc:
                self.errors.append(f"Gradescope results: cannot write "
                                   f"{state.gradescope_shown}: {exc.strerror}")

    def _not_graded(self, session, exitstatus) -> list[dict]:
        """The items to be graded that left no result, failed, each saying why."""
        import pytest

        from .gradescope import not_graded

        interrupted = int(exitstatus) == int(pytest.ExitCode.INTERRUPTED) \
            or bool(session.shouldstop) or bool(session.shouldfail)  # Ctrl-C, -x, --maxfail
        out = []
        for nodeid, (points, visibility) in self._expected.items():
            if nodeid in self._gradescope:
                continue
            why = self._trouble.get(nodeid) or (
                "the session was interrupted before it ran" if interrupted else "it did not run")
            out.append(not_graded(nodeid, why, points=points, visibility=visibility))
        return out

    def pytest_terminal_summary(self, terminalreporter):
        if self.state.annotate:  # at most 10 of each level (what GitHub shows), all in the summary
            from ..render.github import limited_commands, write_step_summary

            if self._annotations:
                terminalreporter.write_sep("-", "shapetrace annotations (GitHub Actions)")
                for command in limited_commands(self._annotations.values()):
                    terminalreporter.write_line(command)
            problem = write_step_summary(self._annotations.values())
            if problem:
                self.errors.append(problem)
        for error in self.errors:
            terminalreporter.write_sep("-", f"shapetrace {error}", red=True)
        state = self.state
        if state.report_exporter is not None and not any(e.startswith("report") for e in self.errors):
            n = sum(count for _, _, count in self._entries.values())
            counted = f"{n} result{'s' if n != 1 else ''}"
            terminalreporter.write_sep("-", f"shapetrace report ({counted}): {state.report_shown}")
        if state.gradescope_path is not None and not any(e.startswith("Gradescope") for e in self.errors):
            n = len(self._gradescope)
            terminalreporter.write_sep("-", f"shapetrace Gradescope results ({n} test"
                                            f"{'s' if n != 1 else ''}): {state.gradescope_shown}")


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
