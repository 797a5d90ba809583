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

import contextlib
import json
import os
from pathlib import Path

import pytest

from .pytest_targets import older_objects_skipped

MAX_TEST_OPS = 300  # ops shown for a traced test in the failure section (targets show all)
MARKER_KEYS = ("dims", "causal")


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


class _PluginState:
    """What the plugin knows for one pytest run (one per config, in ``config.stash``)."""

    def __init__(self, config: pytest.Config):
        self.config = config
        self.root = Path(config.rootpath)
        option = config.getoption("shapetrace")
        self.trace_all = bool(config.getini("shapetrace") if option is None else option)
        self.report_path, self.report_exporter = self._report_path(config)
        self.report_shown = _shown(self.report_path) if self.report_path else None
        given = config.getoption("shapetrace_gradescope")
        self.gradescope_path = Path(config.invocation_params.dir) / given if given else None
        self.gradescope_shown = _shown(self.gradescope_path) if given else None
        # findings as workflow commands in the log (as _render._annotations_gh.github_actions,
        # read here so that a session without shapetrace work loads no renderer)
        self.annotate = os.environ.get("GITHUB_ACTIONS", "").strip().lower() == "true"
        self._project = None
        self._project_error: str | None = None
        self._project_path: Path | None = None
        self._project_loaded = False
        # the width of failure messages and report sections: the terminal pytest runs in
        # (measured now, while output is not captured), COLUMNS, else 100; xdist workers get
        # the controller's (pytest_configure_node)
        workerinput = getattr(config, "workerinput", None) or {}
        from ..base.width import default_width

        self.width = workerinput.get("shapetrace_width") or default_width()

    @staticmethod
    def _report_path(config: pytest.Config) -> tuple[Path | None, object]:
        """The report file and the exporter its suffix selects, or (None, None)."""
        given, where = config.getoption("shapetrace_report"), "--shapetrace-report"
        if given:
            path = Path(config.invocation_params.dir) / given
        else:
            given, where = config.getini("shapetrace_report"), "shapetrace_report"
            if not given:
                return None, None
            base = config.inipath.parent if config.inipath else Path(config.rootpath)
            path = base / given
        from ..render import UnknownFormat, exporter_for_path

        try:
            return path, exporter_for_path(path)
        except UnknownFormat as exc:
            raise pytest.UsageError(f"{where} {given}: {exc}") from None

    # The project's [tool.shapetrace] config, read on first use.
    @property
    def project_path(self) -> Path | None:
        self._load_project()
        return self._project_path

    @property
    def project_error(self) -> str | None:
        self._load_project()
        return self._project_error

    def project(self):
        """The loaded ``drive.config.Config``; raises ``UsageError`` when the file is wrong."""
        self._load_project()
        if self._project_error is not None:
            from ..base.errors import UsageError

            raise UsageError(self._project_error)
        return self._project

    def _load_project(self) -> None:
        if self._project_loaded:
            return
        self._project_loaded = True
        path = _config_in(self.root)
        if path is None:
            return
        from ..base.errors import ShapetraceError
        from ..base.source import display_path
        from ..drive.config import load_config

        self._project_path = path
        try:
            self._project = load_config(display_path(str(path)))  # messages name it as typed
        except ShapetraceError as exc:
            self._project_error = str(exc)

    def global_dims(self) -> dict:
        """``dims`` from the project config; traced tests start from them."""
        self._load_project()
        return dict(self._project.dims) if self._project is not None else {}

    def covers_root(self) -> bool:
        """Whether this run collects the rootdir, so the targets belong in it: no path arguments
        (``testpaths`` or the invocation directory), or one that is the rootdir or above it."""
        config = self.config
        if config.args_source != pytest.Config.ArgsSource.ARGS:
            return True
        base = Path(config.invocation_params.dir)
        for arg in config.args:
            path = (base / arg.split("::")[0]).resolve()
            if path == self.root or path in self.root.parents:
                return True
        return False


_STATE = pytest.StashKey[_PluginState]()
_WRITER = "shapetrace-outputs"
_RECORDING = pytest.StashKey["_Recording"]()


def _state(config: pytest.Config) -> _PluginState | None:
    return config.stash.get(_STATE, None)


def _width(config: pytest.Config) -> int | None:
    state = _state(config)
    return state.width if state is not None else None


def _shown(path: Path) -> str:
    from ..base.source import display_path

    return display_path(str(path))


def _config_in(root: Path) -> Path | None:
    """``shapetrace.toml``, else a ``pyproject.toml`` with ``[tool.shapetrace]``, in ``root``."""
    if (root / "shapetrace.toml").is_file():
        return root / "shapetrace.toml"
    pyproject = root / "pyproject.toml"
    try:
        if b"shapetrace" not in pyproject.read_bytes():
            return None  # the common case: no need to import the config reader
    except OSError:
        return None
    from ..drive.config import find_config

    found = find_config(root)
    return found if found is not None and found.parent == root.resolve() else None


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "shapetrace(dims=None, causal=None): trace this test with shapetrace and fail it on "
        "error-level findings; dims overrides probe sizes, causal declares intent for checks "
        "run through the shapetrace fixture")
    state = _PluginState(config)
    config.stash[_STATE] = state
    wanted = state.report_path or state.gradescope_path or state.annotate
    if wanted and not hasattr(config, "workerinput"):
        from .pytest_outputs import Outputs

        config.pluginmanager.register(Outputs(state), _WRITER)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """pytest-xdist: a worker writes at the width of the controller's terminal."""
    state = _state(node.config)
    if state is not None:
        node.workerinput["shapetrace_width"] = state.width


def pytest_unconfigure(config):
    writer = config.pluginmanager.get_plugin(_WRITER)
    if writer is not None:
        config.pluginmanager.unregister(writer, _WRITER)


def pytest_report_header(config):
    state = _state(config)
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
        state = _state(collector.config)
        if state is not None and state.project_path is not None and state.covers_root():
            report.result.insert(0, ShapetraceTargets.from_parent(
                collector, path=state.project_path, name="shapetrace", nodeid="shapetrace"))
    return report


def pytest_collect_file(file_path, parent):
    state = _state(parent.config)
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

        state = _state(self.config)
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

    def __init__(self, *, job, target, isolation, points=1, lazy=None, **kwargs):
        super().__init__(**kwargs)
        self.job = job
        self.target = target  # None until its file is imported (``lazy``: where and which)
        self.isolation = isolation
        self.points = points
        self.lazy = lazy

    def runtest(self):
        from ..report.results import TargetResult

        recording = _Recording(self.nodeid, max_ops=None, width=_width(self.config))
        self.stash[_RECORDING] = recording
        with self.isolation:
            target, error = (self.target, None) if self.lazy is None else \
                self.lazy[0].target(self.lazy[1])
            recording.results.append(self.job.check(target) if error is None else
                                     TargetResult(self.job.spec, error=error))
        recording.check()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """A target item runs with the older objects skipped by the garbage collector."""
    if not isinstance(item, _TargetItemBase):
        return (yield)
    with older_objects_skipped():
        return (yield)


class ShapetraceSetupError(_TargetItemBase):
    """A target spec that names nothing runnable: fails with the one-line reason."""

    def __init__(self, *, spec: str, error: str, points=1, **kwargs):
        super().__init__(**kwargs)
        self.spec = spec
        self.error = error
        self.points = points

    def runtest(self):
        from ..report.results import TargetResult

        recording = _Recording(self.nodeid, max_ops=None, width=_width(self.config))
        self.stash[_RECORDING] = recording
        recording.results.append(TargetResult(self.spec, error=self.error))
        recording.check()


# --- traced tests ------------------------------------------------------------------------------

class _Recording:
    """The shapetrace results of one test item: targets run, blocks traced, checks made."""

    def __init__(self, name: str, *, max_ops: int | None = MAX_TEST_OPS, width: int | None = None):
        self.name = name
        self.max_ops = max_ops
        self.width = width  # of the failure message and sections; None: 100 (a file's)
        self.results: list = []  # TargetResult
        self.failed = False  # shapetrace failed the item (vs. the test failing by itself)
        self._traces: list[tuple[str, object, bool]] = []  # (name, Trace, block raised)

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

        message = failure_text(self.results, **({"width": self.width} if self.width else {}))
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

    def __init__(self, recording: _Recording, dims: dict, causal: bool | None, state=None):
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


class _Plan:
    def __init__(self, dims: dict, causal: bool | None, explicit: bool):
        self.dims = dims
        self.causal = causal
        self.explicit = explicit  # the test uses the fixture: it says what to trace


def _plan(item) -> _Plan | None:
    """How to trace this test, or None when shapetrace is not asked to."""
    if isinstance(item, _TargetItemBase):
        return None
    state = _state(item.config)
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
    return _Plan(dims, causal, explicit)


def _plan_or_fail(item) -> _Plan | None:
    from ..base.errors import ShapetraceError

    try:
        return _plan(item)
    except ShapetraceError as exc:
        pytest.fail(f"shapetrace: {exc}", pytrace=False)


@pytest.fixture
def shapetrace(request):
    """Trace blocks of this test (``with shapetrace.trace(model):``) and run checks
    (``shapetrace.check(Module, init=...)``); error-level findings fail the test."""
    plan = _plan_or_fail(request.node) or _Plan({}, None, True)
    recording = _Recording(request.node.nodeid, width=_width(request.config))
    request.node.stash[_RECORDING] = recording
    try:
        return ShapetraceFixture(recording, plan.dims, plan.causal, _state(request.config))
    except Exception as exc:  # bad dims in the config or marker
        pytest.fail(f"shapetrace: {exc}", pytrace=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    if _state(item.config) is None or isinstance(item, _TargetItemBase):
        return (yield)
    plan = _plan_or_fail(item)
    if plan is None:
        return (yield)
    if plan.explicit:
        recording = item.stash.get(_RECORDING, None)
        try:
            result = yield
        except BaseException:
            if recording is not None:
                _finish_quietly(recording)
            raise
        if recording is not None:
            recording.finish_traces()
            recording.check()
        return result

    from ..base.errors import ShapetraceError
    from .pytest_outputs import new_trace

    try:
        trace = new_trace(_state(item.config), dims=plan.dims)
    except ShapetraceError as exc:
        pytest.fail(f"shapetrace: {exc}", pytrace=False)
    recording = _Recording(item.nodeid, width=_width(item.config))
    item.stash[_RECORDING] = recording
    try:
        with trace:
            result = yield
    except BaseException:
        recording.add_trace(trace, raised=True)
        _finish_quietly(recording)
        raise
    recording.add_trace(trace, raised=False)
    recording.finish_traces()
    recording.check()
    return result


def _finish_quietly(recording: _Recording) -> None:
    """Analyse the traces of a test that failed by itself, never hiding its own error."""
    try:
        recording.finish_traces()
    except Exception as exc:  # pragma: no cover - a rule bug; the test's error matters more
        from ..report.results import TargetResult

        error = f"shapetrace could not analyse the trace: {exc}"
        recording.results.append(TargetResult(recording.name, error=error))


# --- reports ---------------------------------------------------------------------------------

@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if call.when == "call":
        recording = item.stash.get(_RECORDING, None)
        if recording is not None:
            from .pytest_outputs import attach

            attach(report, recording, _state(item.config), points=getattr(item, "points", 1))
            # the records go with the report: nothing of the trace outlives the item's call
            del item.stash[_RECORDING]
            recording.results = []
    elif call.when == "setup" and report.failed and _graded(item):
        # a traced test whose fixtures failed never runs: it still counts, as failed
        from .pytest_outputs import gradescope_entry

        report.shapetrace_gradescope = json.dumps(gradescope_entry(report, [], 1))
    return report


def _graded(item) -> bool:
    state = _state(item.config)
    if state is None or state.gradescope_path is None:
        return False
    try:
        return isinstance(item, _TargetItemBase) or _plan(item) is not None
    except Exception:  # a marker mistake: the item fails, and is graded
        return True
