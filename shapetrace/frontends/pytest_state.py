"""What the pytest plugin knows for one run (one per config, in ``config.stash``): the options
and ini values, the project's shapetrace config (read on first use), the report files and the
width of what it prints."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


class PluginState:
    """What the plugin knows for one pytest run (one per config, in ``config.stash``)."""

    def __init__(self, config: pytest.Config):
        self.config = config
        self.root = Path(config.rootpath)
        option = config.getoption("shapetrace")
        self.trace_all = bool(config.getini("shapetrace") if option is None else option)
        self.report_path, self.report_exporter = self._report_path(config)
        self.report_shown = shown(self.report_path) if self.report_path else None
        given = config.getoption("shapetrace_gradescope")
        self.gradescope_path = Path(config.invocation_params.dir) / given if given else None
        self.gradescope_shown = shown(self.gradescope_path) if given else None
        # findings as workflow commands in the log (as _render._annotations_gh.github_actions,
        # read here so that a session without shapetrace work loads no renderer)
        self.annotate = os.environ.get("GITHUB_ACTIONS", "").strip().lower() == "true"
        self._project = None
        self._project_error: str | None = None
        self._project_path: Path | None = None
        self._project_loaded = False
        self._reuse = None
        self._shared: str | None = None  # the controller's folder for its workers' checks
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
        path = config_in(self.root)
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

    def shared_folder(self) -> str:
        """A folder of this session's, for its xdist workers to share the checks they made
        (made on first use; ``close`` removes it)."""
        if self._shared is None:
            import tempfile

            self._shared = tempfile.mkdtemp(prefix="shapetrace-")
        return self._shared

    def close(self) -> None:
        if self._shared is not None:
            import shutil

            shutil.rmtree(self._shared, ignore_errors=True)
            self._shared = None

    @property
    def reuse(self):
        """The checks made by this process so far (``drive.reuse.Reuse``): a course's
        byte-identical submissions are re-run once."""
        if self._reuse is None:
            from ..drive.reuse import Reuse

            workerinput = getattr(self.config, "workerinput", None) or {}
            self._reuse = Reuse(shared=workerinput.get("shapetrace_reuse"))
        return self._reuse

    @property
    def default_visibility(self) -> str | None:
        """``visibility`` from the project config (Gradescope's, for every graded test)."""
        self._load_project()
        return self._project.visibility if self._project is not None else None

    def grading_of(self, nodeid: str) -> tuple[float, str | None]:
        """``(points, visibility)`` of a target item from its node id
        (``shapetrace::student/attention.py::MHA``), read from the project config: the entry
        naming that class, else the one naming its file."""
        self._load_project()
        if self._project is None:
            return 1, self.default_visibility
        location, _, name = nodeid.removeprefix("shapetrace::").partition("::")
        best = None
        for entry in self._project.targets:
            spec_location, _, spec_name = (p.strip() for p in entry.target.partition("::"))
            if spec_location == location and spec_name in ("", name):
                best = entry if best is None or spec_name else best
        if best is None:
            return 1, self.default_visibility
        return best.points, self._project.visibility_for(best)

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



STATE = pytest.StashKey[PluginState]()



def plugin_state(config: pytest.Config) -> PluginState | None:
    return config.stash.get(STATE, None)



def report_width(config: pytest.Config) -> int | None:
    state = plugin_state(config)
    return state.width if state is not None else None



def shown(path: Path) -> str:
    from ..base.source import display_path

    return display_path(str(path))



def config_in(root: Path) -> Path | None:
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
