"""The pytest plugin (entry point ``pytest11``): shapetrace checks as test items, for course CI.

Three ways in:

* **Targets.** ``[[tool.shapetrace.targets]]`` in the rootdir's ``pyproject.toml`` (or
  ``[[targets]]`` in ``shapetrace.toml``) become items ``shapetrace::<target>``, one per module
  class. The collector is added to the session's own collection (below), so ``-k``, ``-m``,
  ``--deselect``, ``--lf`` and pytest-xdist see them like any other test. A spec that cannot be
  resolved becomes one item, named after the spec, that fails with the one-line setup error.
* **Traced tests.** ``@pytest.mark.shapetrace(dims=..., causal=...)`` or ``--shapetrace`` (ini
  ``shapetrace = true``) runs the whole test call inside ``shapetrace.trace()``. The fixture
  ``shapetrace`` is the explicit form: the test traces only the blocks it names
  (``with shapetrace.trace(model): ...``) and can run full checks (``shapetrace.check(Cls)``).
* **Outputs.** ``--shapetrace-report=FILE`` (ini ``shapetrace_report``) writes every target and
  traced test in the format FILE's suffix selects from the render layer's exporters (the CLI's
  table); ``--shapetrace-gradescope=PATH`` writes Gradescope's ``results.json``; under GitHub
  Actions every finding is printed as a workflow command at the end of the session. All three
  live in ``frontends.pytest_outputs``.

An item fails on an error-level finding. Its failure message lists the findings and how to fix
them; a ``shapetrace trace`` report section shows the ops, plain text at the command line's
width (the terminal's, ``COLUMNS`` when set, else 100), so CI logs read like a terminal. A broken config is one failing item (``shapetrace::pyproject.toml``)
and a target that cannot be imported fails its own item; other tests run as usual. What a
target imports is kept out of ``sys.modules`` outside its own import and run (``drive.isolation``),
so a student's ``helpers.py`` never shadows the course's.

Collection: a ``pytest_make_collect_report`` wrapper appends the targets collector to the
Session's collect report whenever the run covers the rootdir (no path arguments, or a path
argument that is the rootdir or above it), so the targets are collected once per session in every
process (each xdist worker collects the same items) even when ``testpaths`` does not include the
rootdir. ``pytest pyproject.toml`` (or ``shapetrace.toml``) collects only the targets, through
``pytest_collect_file``. Narrowing the run to other paths (``pytest tests/test_x.py``) leaves
them out.

Importing this module imports neither torch nor rich: both load inside hooks, and only when the
session has targets, traced tests or output files. Results travel from xdist workers to the
controller as strings on the test reports (``frontends.pytest_outputs.attach``); only the controller
writes files. An item's records are released as soon as its report is made. Everything shown is
made by the render layer; this module is the pytest glue.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .pytest_state import STATE, PluginState, plugin_state, report_width
from .pytest_targets import older_objects_skipped
from .pytest_traced import (
    RECORDING,
    Recording,
    ShapetraceFixture,
    TracePlan,
    finish_quietly,
    trace_plan,
    trace_plan_or_fail,
)

_WRITER = "shapetrace-outputs"  # the name the outputs plugin is registered under

# --- options and per-session state -------------------------------------------------------------

def pytest_addoption(parser):
    group = parser.getgroup("shapetrace", "shapetrace: shape checks for attention code")
    group.addoption("--shapetrace", action="store_true", default=None, dest="shapetrace",
                    help="trace every test with shapetrace and fail those with error-level "
                         "findings (ini: shapetrace = true)")
    group.addoption("--shapetrace-report", metavar="FILE", default=None, dest="shapetrace_report",
                    help="write every shapetrace target and traced test to FILE, in the "
                         "format its suffix says: .json, .html, .svg or .txt "
                         "(ini: shapetrace_report)")
    group.addoption("--shapetrace-gradescope", metavar="PATH", default=None,
                    dest="shapetrace_gradescope",
                    help="write Gradescope's results.json to PATH: one test per target and "
                         "traced test, max_score from the target's points (default 1)")
    parser.addini("shapetrace", type="bool", default=False,
                  help="trace every test with shapetrace (like --shapetrace)")
    parser.addini("shapetrace_report", type="string", default="",
                  help="write the shapetrace report to this file, relative to the ini file")


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "shapetrace(dims=None, causal=None): trace this test with shapetrace and fail it on "
        "error-level findings; dims overrides probe sizes, causal declares intent for checks "
        "run through the shapetrace fixture")
    state = PluginState(config)
    config.stash[STATE] = state
    wanted = state.report_path or state.gradescope_path or state.annotate
    if wanted and not hasattr(config, "workerinput"):
        from .pytest_outputs import Outputs

        config.pluginmanager.register(Outputs(state), _WRITER)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """pytest-xdist: a worker writes at the width of the controller's terminal, and the workers
    share the checks they made (a folder of the controller's, removed when the session ends)."""
    state = plugin_state(node.config)
    if state is not None:
        node.workerinput["shapetrace_width"] = state.width
        if state.project_path is not None:
            node.workerinput["shapetrace_reuse"] = state.shared_folder()


def pytest_collection_finish(session):
    """Every item to be graded, known before any runs: ``results.json`` lists each of them even
    when it leaves no result (a crash, an interrupted session)."""
    writer = session.config.pluginmanager.get_plugin(_WRITER)
    if writer is None or writer.state.gradescope_path is None:
        return
    state = writer.state
    for item in session.items:
        if _graded(item):
            writer.expect(item.nodeid, getattr(item, "points", 1), _visibility(item, state))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node, ids):
    """pytest-xdist's controller collects nothing itself: the target items among the ids a
    worker collected are to be graded (a traced test is known once it reports)."""
    writer = node.config.pluginmanager.get_plugin(_WRITER)
    if writer is None or writer.state.gradescope_path is None:
        return
    for nodeid in ids:
        if nodeid.startswith("shapetrace::"):
            writer.expect(nodeid, *writer.state.grading_of(nodeid))


def pytest_unconfigure(config):
    writer = config.pluginmanager.get_plugin(_WRITER)
    if writer is not None:
        config.pluginmanager.unregister(writer, _WRITER)
    state = plugin_state(config)
    if state is not None:
        state.close()


def pytest_report_header(config):
    state = plugin_state(config)
    if state is None:
        return None
    parts = []
    if state.project_path is not None:
        if state.project_error is not None:
            parts.append(f"config error: {state.project_error}")
        else:
            n = len(state.project().targets)
            parts.append(f"{n} target{'s' if n != 1 else ''} from {state.project_path.name}")
    if state.trace_all:
        parts.append("tracing every test")
    if state.report_path is not None:
        parts.append(f"report to {state.report_shown}")
    if not parts:
        return None
    try:
        from ..base.dims import Dims

        sizes = " ".join(f"{k}={v}" for k, v in Dims(state.global_dims()).items())
    except Exception as exc:  # a bad size: collection says where
        sizes = f"invalid ({exc})"
    from .._version import __version__

    return f"shapetrace {__version__}: probe sizes {sizes}; " + "; ".join(parts)


# --- collecting the targets --------------------------------------------------------------------

@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector):
    report = yield
    if isinstance(collector, pytest.Session) and report.passed:
        state = plugin_state(collector.config)
        if state is not None and state.project_path is not None and state.covers_root():
            report.result.insert(0, ShapetraceTargets.from_parent(
                collector, path=state.project_path, name="shapetrace", nodeid="shapetrace"))
    return report


def pytest_collect_file(file_path, parent):
    state = plugin_state(parent.config)
    if state is None or state.project_path is None:
        return None
    if file_path == state.project_path and parent.session.isinitpath(file_path):
        return ShapetraceTargets.from_parent(parent, path=file_path, name="shapetrace",
                                             nodeid="shapetrace")
    return None


class ShapetraceTargets(pytest.Collector):
    """The targets of the project's shapetrace config.

    The tree follows the ``::`` in the ids: ``shapetrace`` > ``student/attention.py`` >
    ``MultiHeadAttention``, so ``shapetrace::student/attention.py::MultiHeadAttention`` parses
    back to the same node (pytest compares ids by their segments). A plain Collector rather than
    a ``pytest.File``: ``--lf`` skips File collectors whose path did not fail last time, and
    these ids are not file paths.
    """

    def collect(self):
        groups: dict[str, dict[str, dict]] = {}  # location -> item name -> item arguments
        direct: dict[str, dict] = {}  # specs with no "::" that could not be resolved

        def add(where: dict, name: str, **kwargs) -> None:
            unique, n = name, 1
            while unique in where:
                n += 1
                unique = f"{name} ({n})"
            where[unique] = kwargs

        state = plugin_state(self.config)
        if state.project_error is not None:  # a broken config fails its one item, not the run
            path = state.project_path
            yield _child(self, path.name, kind=ShapetraceSetupError, spec="the shapetrace config",
                         error=state.project_error, points=1)
            return
        import torch  # noqa: F401 - every target needs it: loaded first, its objects are older

        from .pytest_targets import item_arguments

        kinds = {"item": ShapetraceItem, "error": ShapetraceSetupError}
        with older_objects_skipped():  # importing targets makes many objects
            for where, name, kind, kwargs in item_arguments(state.project()):
                add(groups.setdefault(where, {}) if where else direct, name, kind=kinds[kind],
                    **kwargs)
        for name, kwargs in direct.items():
            yield _child(self, name, **kwargs)
        for location, members in groups.items():
            yield ShapetraceTargetGroup.from_parent(self, name=location, members=members,
                                                    nodeid=f"{self.nodeid}::{location}")

    def repr_failure(self, excinfo):
        from ..base.errors import ShapetraceError

        if isinstance(excinfo.value, ShapetraceError):
            return f"shapetrace: {excinfo.value}"
        return super().repr_failure(excinfo)


class ShapetraceTargetGroup(pytest.Collector):
    """The targets in one file or module (``student/attention.py``)."""

    def __init__(self, *, members: dict[str, dict], **kwargs):
        super().__init__(**kwargs)
        self.members = members

    def collect(self):
        for name, kwargs in self.members.items():
            yield _child(self, name, **kwargs)


def _child(parent, name: str, *, kind, **kwargs):
    return kind.from_parent(parent, name=name, nodeid=f"{parent.nodeid}::{name}", **kwargs)


class _TargetItemBase(pytest.Item):
    is_shapetrace_target = True  # checked by itself, never traced as a test

    def __init__(self, *, name: str, parent, **kwargs):
        super().__init__(name=name, parent=parent, **kwargs)
        self.add_marker("shapetrace")

    def reportinfo(self):
        return self.path, None, self.nodeid

    def repr_failure(self, excinfo, style=None):
        # Findings and setup errors come as pytest.fail(pytrace=False): the message alone. An
        # unexpected exception is shown from runtest on, not through pytest's own frames.
        if not isinstance(excinfo.value, pytest.fail.Exception):
            code = type(self).runtest.__code__
            cut = excinfo.traceback.cut(path=Path(code.co_filename),
                                        firstlineno=code.co_firstlineno - 1)
            if cut:
                excinfo.traceback = cut
        return super().repr_failure(excinfo, style=style)


class ShapetraceItem(_TargetItemBase):
    """One module class from the config, checked like ``python -m shapetrace``. Its modules
    are in ``sys.modules`` only while it runs (``isolation``, shared by a file's classes)."""

    def __init__(self, *, job, target, isolation, points=1, visibility=None, lazy=None, **kwargs):
        super().__init__(**kwargs)
        self.job = job
        self.target = target  # None until its file is imported (``lazy``: where and which)
        self.isolation = isolation
        self.points = points
        self.visibility = visibility
        self.lazy = lazy

    def runtest(self):
        from ..report.results import TargetResult

        recording = Recording(self.nodeid, max_ops=None, width=report_width(self.config))
        self.stash[RECORDING] = recording
        with self.isolation:
            target, error = (self.target, None) if self.lazy is None else \
                self.lazy[0].target(self.lazy[1])
            reuse = plugin_state(self.config).reuse  # this process's checks made so far
            recording.results.append(_checked(self.job, target, reuse) if error is None else
                                     TargetResult(self.job.spec, error=error))
        recording.check()


def _checked(job, target, reuse):
    """The job's result for ``target``; an error inside shapetrace itself is the target's error
    in one line (in the item, the report file and Gradescope's output), never a traceback
    through shapetrace's code shown to the student."""
    from ..report.results import TargetResult

    try:
        return job.check(target, reuse=reuse)
    except Exception as exc:  # noqa: BLE001 - shapetrace's own failure, not the student's
        text = str(exc).strip().splitlines()
        return TargetResult(job.spec, exception=exc,
                            error=f"shapetrace failed while checking it ({type(exc).__name__}: "
                                  f"{text[0] if text else ''}); this is shapetrace's error, not "
                                  f"a finding about the code: report it to the course staff")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """A target item runs with the older objects skipped by the garbage collector."""
    if not isinstance(item, _TargetItemBase):
        return (yield)
    with older_objects_skipped():
        return (yield)


class ShapetraceSetupError(_TargetItemBase):
    """A target spec that names nothing runnable: fails with the one-line reason."""

    def __init__(self, *, spec: str, error: str, points=1, visibility=None, **kwargs):
        super().__init__(**kwargs)
        self.spec = spec
        self.error = error
        self.points = points
        self.visibility = visibility

    def runtest(self):
        from ..report.results import TargetResult

        recording = Recording(self.nodeid, max_ops=None, width=report_width(self.config))
        self.stash[RECORDING] = recording
        recording.results.append(TargetResult(self.spec, error=self.error))
        recording.check()


@pytest.fixture
def shapetrace(request):
    """Trace blocks of this test (``with shapetrace.trace(model):``) and run checks
    (``shapetrace.check(Module, init=...)``); error-level findings fail the test."""
    plan = trace_plan_or_fail(request.node) or TracePlan({}, None, True)
    recording = Recording(request.node.nodeid, width=report_width(request.config))
    request.node.stash[RECORDING] = recording
    try:
        return ShapetraceFixture(recording, plan.dims, plan.causal, plugin_state(request.config))
    except Exception as exc:  # bad dims in the config or marker
        pytest.fail(f"shapetrace: {exc}", pytrace=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    if plugin_state(item.config) is None or isinstance(item, _TargetItemBase):
        return (yield)
    plan = trace_plan_or_fail(item)
    if plan is None:
        return (yield)
    if plan.explicit:
        recording = item.stash.get(RECORDING, None)
        try:
            result = yield
        except BaseException:
            if recording is not None:
                finish_quietly(recording)
            raise
        if recording is not None:
            recording.finish_traces()
            recording.check()
        return result

    from ..base.errors import ShapetraceError
    from .pytest_outputs import new_trace

    try:
        trace = new_trace(plugin_state(item.config), dims=plan.dims)
    except ShapetraceError as exc:
        pytest.fail(f"shapetrace: {exc}", pytrace=False)
    recording = Recording(item.nodeid, width=report_width(item.config))
    item.stash[RECORDING] = recording
    try:
        with trace:
            result = yield
    except BaseException:
        recording.add_trace(trace, raised=True)
        finish_quietly(recording)
        raise
    recording.add_trace(trace, raised=False)
    recording.finish_traces()
    recording.check()
    return result


# --- reports ---------------------------------------------------------------------------------

@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if call.when == "call":
        recording = item.stash.get(RECORDING, None)
        if recording is not None:
            from .pytest_outputs import attach

            state = plugin_state(item.config)
            attach(report, recording, state, points=getattr(item, "points", 1),
                   visibility=_visibility(item, state))
            # the records go with the report: nothing of the trace outlives the item's call
            del item.stash[RECORDING]
            recording.results = []
    elif call.when == "setup" and report.failed and _graded(item):
        # a traced test whose fixtures failed never runs: it still counts, as failed
        from .pytest_outputs import gradescope_entry

        report.shapetrace_gradescope = json.dumps(gradescope_entry(
            report, [], 1, visibility=_visibility(item, plugin_state(item.config))))
    return report


def _visibility(item, state) -> str | None:
    """Gradescope's visibility of the item's result: the target's own, else the project's."""
    own = getattr(item, "visibility", None)
    return own if own is not None else (state.default_visibility if state is not None else None)


def _graded(item) -> bool:
    state = plugin_state(item.config)
    if state is None or state.gradescope_path is None:
        return False
    try:
        return isinstance(item, _TargetItemBase) or trace_plan(item) is not None
    except Exception:  # a marker mistake: the item fails, and is graded
        return True
