"""The code's own calls: a module class built and called the way its repository's code does.

Before anything is guessed, :func:`own_calls` runs the code of the project that builds and calls
the classes of a file: the file's own ``if __name__ == "__main__":`` block, the scripts named
with ``--calls-from`` (or ``calls_from`` in the config), and the test and example functions of
the project's ``tests``/``examples`` folders whose source names the class, or takes a pytest
fixture that does (``examples``, ``testfuncs``). While
it runs, ``nn.Module.__init__`` and ``nn.Module.__call__`` are wrapped: the first construction
of each target class (its arguments as they were) and its first call (its inputs, copied before
the forward runs) are kept, and the run stops at the first call when there is one target, else
once every target is caught or a target caught already is called again (the second step of a
training loop never runs), or at the deadline. The check then replays that call on the instance
built (``replay``).

Running a user's code must not surprise them: it runs in a scratch working directory (files it
writes by a relative path land there and are deleted), with the network refused (``socket``
connections and name lookups raise), with nothing to read on stdin, its output captured, the
environment and the global state of Python's and torch's random generators and of torch's
settings (default dtype, grad mode, threads) restored afterwards, and within :data:`SECONDS`.
Whatever goes wrong while running it is a note, never a finding.
"""

from __future__ import annotations

import ast
import contextlib
import inspect
import io
import os
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import torch

from ..base.source import class_file, display_path, is_library_file, outer_user_frame
from .absent import AbsentPackage, NotInstalled, missing_package, standing_in
from .examples import is_main, package_base, usage_files
from .snippets import python_of
from .testfuncs import Fixtures, arguments, run_cases

#: seconds the code's own calls may run, all of a file's sources together
SECONDS = 30.0


@dataclass
class Captured:
    """A target's first call in its own code: the instance, what forward got (tensors copied
    before it ran), what the constructor got (None when it could not be read) and where."""

    instance: torch.nn.Module
    args: tuple
    kwargs: dict
    init: dict | None
    called_at: tuple[str, int] | None
    source: str

    def where(self) -> str:
        """``model.py:45, in its __main__ block``, ``tests/test_model.py:12``."""
        if self.called_at is None:
            return self.source
        at = f"{display_path(self.called_at[0])}:{self.called_at[1]}"
        if self.source.startswith("the __main__ block of "):
            shown = self.source.removeprefix("the __main__ block of ")
            return f"{at}, in its __main__ block" if at.startswith(shown + ":") else \
                f"{at}, run from the __main__ block of {shown}"
        return at if at.startswith(self.source + ":") else f"{at}, run from {self.source}"


@dataclass
class OwnCalls:
    """What running a file's own code found: a ``Captured`` by class key, and one line per
    source that ran (``tried``) or failed (``failed``), for the notes."""

    found: dict = field(default_factory=dict)
    tried: list = field(default_factory=list)
    failed: list = field(default_factory=list)

    def why_not(self, cls: type) -> str | None:
        """A note for a class its own code did not call, or None when no code was tried."""
        if not self.tried:
            return None
        ran = ", ".join(self.tried)
        why = f": {'; '.join(self.failed)}" if self.failed else ""
        return (f"its own code ({ran}) did not call {cls.__qualname__}{why}; checked with "
                f"inputs shapetrace chose")


class _Stop(BaseException):
    """Raised into the user's code once the calls wanted are caught (no ``except Exception``
    of the user's code keeps it running)."""


def class_key(cls: type) -> tuple[str, str] | None:
    """A class by its qualified name and file: the same class whether its file was imported as
    a target, run as ``__main__`` or imported by a test."""
    path = class_file(cls)
    return (cls.__qualname__, os.path.realpath(path)) if path else None


_RUNS: dict = {}


def own_calls(path: str, classes: list[type], *, calls_from=(), single: bool = False,
              seconds: float | None = None, absent=()) -> OwnCalls:
    """Run the code that builds and calls ``classes`` (all of the file at ``path``), once per
    run of shapetrace for the same file, classes and scripts (see the module's docstring).
    ``absent``: packages not installed that the file's import stood in for (``absent``), which
    stand in while its code runs too."""
    wanted = {k: c for c in classes if (k := class_key(c)) is not None}
    try:
        stamp = os.stat(path).st_mtime_ns
    except OSError:
        return OwnCalls()
    key = (os.path.realpath(path), stamp, tuple(sorted(wanted)), tuple(calls_from), single,
           tuple(absent))
    if key not in _RUNS:
        with standing_in(absent) if absent else contextlib.nullcontext():
            _RUNS[key] = _run_all(os.path.realpath(path), wanted, calls_from, single,
                                  seconds or SECONDS)
    return _RUNS[key]


def _run_all(path: str, wanted: dict, calls_from, single: bool, seconds: float) -> OwnCalls:
    from .deadline import TimedOut, deadline, supported

    out = OwnCalls()
    sources = _sources(path, wanted, calls_from)
    if not sources or not supported():  # nothing could stop a main block that never ends
        return out
    catcher = _Catcher(wanted, out.found, single)
    try:
        with deadline(seconds):
            for label, run in sources:
                if len(out.found) == len(wanted):
                    break
                out.tried.append(label)
                catcher.source = label
                problem = _run_standing(run, catcher, [Path(path).parent, Path(package_base(
                    os.path.dirname(path)))])
                if problem is not None:
                    out.failed.append(f"{label} {problem}")
    except TimedOut as exc:
        if exc.seconds != seconds:
            raise  # an enclosing deadline's: the target's own --timeout
        out.failed.append(f"stopped after {seconds:g} s")
    return out


def _sources(path: str, wanted: dict, calls_from) -> list:
    """``(label, run)`` for each piece of code to run, in order: the file's ``__main__`` block,
    the scripts named, the tests and examples that name a class."""
    out = []
    if _has_main(path):
        out.append((f"the __main__ block of {display_path(path)}",
                    lambda: _run_file(path, main=True)))
    for script in calls_from:
        out.append((display_path(script), lambda s=script: _run_file(s, main=True)))
    names = {q.split(".")[-1] for q, _ in wanted}
    for other in usage_files(os.path.dirname(path)):
        if os.path.realpath(other) == path:
            continue
        try:
            with open(other, encoding="utf-8") as handle:
                text = handle.read()
        except (OSError, UnicodeDecodeError):
            continue
        if any(name in text for name in names):
            out.append((display_path(other), lambda o=other, t=text: _run_usage(o, t, names, path)))
    return out


def _has_main(path: str) -> bool:
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError):
        return False
    return "__main__" in text and "__name__" in text


#: packages not installed that one source of the code's own calls may run without
_MOST_STANDING = 6


def _run_standing(run, catcher, folders) -> str | None:
    """Run one source (``_run_one``); when it stops at a package that is not installed (a test
    file's ``import torchvision``), again with that package standing in (``absent``)."""
    standing: list[str] = []
    while True:
        with standing_in(standing) if standing else contextlib.nullcontext():
            problem, raised = _run_one(run, catcher)
        missing = missing_package(raised, folders) if raised is not None else None
        if missing is None or missing in standing or len(standing) >= _MOST_STANDING:
            return problem
        standing.append(missing)


def _run_one(run, catcher) -> tuple[str | None, BaseException | None]:
    """Run one source inside the sandbox; why it stopped short (None: it ran, or stopped once
    the calls were caught) and what it raised."""
    from .deadline import TimedOut

    try:
        with _sandbox(), catcher:
            run()
    except _Stop:
        return None, None
    except TimedOut:
        raise
    except KeyboardInterrupt:
        raise
    except SystemExit as exc:
        return (None if exc.code in (None, 0) else f"called exit({exc.code})"), None
    except BaseException as exc:  # noqa: BLE001 - the user's code failed: a note, never a finding
        found = _user_site(exc.__traceback__)
        at = f" at {display_path(found[0])}:{found[1]}" if found else ""
        text = str(exc).strip().splitlines()[0][:120] if str(exc).strip() else ""
        return f"raised {type(exc).__name__}{': ' + text if text else ''}{at}", exc
    return None, None


def _user_site(tb):
    found = None
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if not is_library_file(name, installed_is_library=True):
            found = (name, tb.tb_lineno)
        tb = tb.tb_next
    return found


def _module_name(path: str, tag: str) -> str:
    import hashlib

    digest = hashlib.sha1(path.encode()).hexdigest()[:10]
    stem = "".join(c if c.isalnum() else "_" for c in os.path.basename(path)[:-3])
    return f"_shapetrace_{tag}_{stem}_{digest}"


#: the name under which a main block's statements ask whether to pass over what they raised
_PASSED_OVER = "__shapetrace_passed_over__"


class NetworkRefused(OSError):
    """The network, refused while a module's own code runs (``_sandbox``)."""


def _passer():
    """``passed_over(exc, binds)``: whether a statement of a main block that raised ``exc`` is
    passed over: it used a package not installed here (a placeholder of one, handed to torch
    too: ``torch.LongTensor(dataset.targets)``) or the network (a download), as it would have on
    the user's machine, or a name that only a statement passed over would have bound
    (``binds``: the names the statement binds, remembered when it is passed over)."""
    unbound: set[str] = set()

    def passed_over(exc: BaseException, binds: tuple) -> bool:
        seen, cause = set(), exc
        while cause is not None and id(cause) not in seen:
            if isinstance(cause, (AbsentPackage, NetworkRefused)) or (
                    type(cause) is NameError and getattr(cause, "name", None) in unbound) or (
                    isinstance(cause, (TypeError, RuntimeError)) and NotInstalled.__name__ in str(cause)):
                unbound.update(binds)
                return True
            seen.add(id(cause))
            cause = cause.__cause__ or cause.__context__
        return False

    return passed_over


class _MainTrue(ast.NodeTransformer):
    """``if __name__ == "__main__":`` at the top of a module, made true: the file runs under a
    module name of its own (its classes keep a module ``inspect`` can find) and its main block
    runs as ``python file.py`` would run it. A statement of the block that uses a package not
    installed here (a plot, a progress bar: ``absent``) or the network (a download of weights)
    is passed over, as if it had run on the user's machine, and the block goes on to the
    statements after it."""

    def visit_Module(self, node):
        for stmt in node.body:
            if isinstance(stmt, ast.If) and is_main(stmt.test):
                stmt.test = ast.copy_location(ast.Constant(True), stmt.test)
                stmt.body = [_passing_absent(inner) for inner in stmt.body]
        return node


def _passing_absent(stmt: ast.stmt) -> ast.stmt:
    # try: STMT / except Exception as e: if not passed_over(e, (names STMT binds)): raise
    caught = "__shapetrace_raised__"
    binds = ast.Tuple([ast.Constant(name) for name in sorted(_bound_by(stmt))], ast.Load())
    asked = ast.Call(ast.Name(_PASSED_OVER, ast.Load()), [ast.Name(caught, ast.Load()), binds], [])
    reraise = ast.If(ast.UnaryOp(ast.Not(), asked), [ast.Raise()], [])
    handler = ast.ExceptHandler(type=ast.Name("Exception", ast.Load()), name=caught, body=[reraise])
    guarded = ast.Try(body=[stmt], handlers=[handler], orelse=[], finalbody=[])
    return ast.fix_missing_locations(ast.copy_location(guarded, stmt))


def _bound_by(stmt: ast.stmt) -> set[str]:
    """The names a statement binds at its own level (assigned, imported, defined, looped over)."""
    names = set()
    for node in ast.walk(stmt):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).partition(".")[0] for a in node.names)
    return names


def _load(path: str, *, main: bool, tag: str, also=()):
    """The file at ``path`` executed as a new module (its main block run when ``main``), with
    its folder, its package's base and the folders ``also`` on ``sys.path``; the module."""
    import types

    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(python_of(path, handle.read()), path)  # a README's or notebook's code
    if main:
        tree = _MainTrue().visit(tree)
    code = compile(tree, path, "exec", dont_inherit=True)
    name = _module_name(path, tag)
    module = types.ModuleType(name)
    module.__file__ = path
    setattr(module, _PASSED_OVER, _passer())
    sys.modules[name] = module  # dataclasses and inspect look their module up
    folder = os.path.dirname(path)
    base = package_base(folder)
    if base != folder:  # a module of a package: its relative imports find its siblings
        module.__package__ = os.path.relpath(folder, base).replace(os.sep, ".")
    for entry in dict.fromkeys((base, folder, *also)):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    exec(code, module.__dict__)  # noqa: S102 - the user's own code, as python runs it
    return module


def _run_file(path: str, *, main: bool) -> None:
    saved = sys.argv
    sys.argv = [path]
    try:
        _load(path, main=main, tag="owncall")
    finally:
        sys.argv = saved


def _run_usage(path: str, text: str, names: set, home: str) -> None:
    """A test or example file: run as a script (its main block too), then each of its
    functions named ``test*`` or ``example*``/``demo*`` (and ``test*`` methods of its
    ``unittest.TestCase`` classes) whose source names a class, in file order, each with
    ``tmp_path``/``tmpdir`` a scratch folder and nothing else required.
    ``home``: the file of the classes, whose package's base is on ``sys.path`` with the
    project's folder."""
    saved = sys.argv
    sys.argv = [path]
    try:
        project = os.path.dirname(os.path.dirname(path))  # above tests/ or examples/
        module = _load(path, main=True, tag="owncall_usage",
                       also=(package_base(os.path.dirname(home)), project))
    finally:
        sys.argv = saved
    fixtures = Fixtures(module, text, path,
                        lambda conftest: _load(conftest, main=False, tag="owncall_conftest"))
    for node in ast.parse(text).body:
        if isinstance(node, ast.ClassDef):
            run_cases(getattr(module, node.name, None), node, text, names)
        elif _names_one(node, text, names, fixtures):
            func = getattr(module, node.name, None)
            kwargs = arguments(func, fixtures)
            if kwargs is not None:
                try:
                    func(**kwargs)
                except Exception:  # noqa: BLE001 - this test failed before a call: the next
                    continue
    fixtures.close()


def _names_one(node, text: str, names: set, fixtures: Fixtures | None = None) -> bool:
    """Whether ``node`` is a test or example function whose source names one of ``names``, or
    which takes a pytest fixture that does (``def test_shape(model, images)``)."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or \
            not node.name.startswith(("test", "example", "demo")):
        return False
    segment = ast.get_source_segment(text, node) or ""
    return any(name in segment for name in names) or (
        fixtures is not None and any(fixtures.names(a.arg, names) for a in node.args.args))


class _Catcher:
    """``nn.Module.__init__`` and ``__call__`` wrapped while the user's code runs: the first
    construction and call of each wanted class kept in ``found``, and ``_Stop`` raised once
    the run has given what is wanted."""

    def __init__(self, wanted: dict, found: dict, single: bool):
        self.wanted, self.found, self.single = wanted, found, single
        self.keys: dict = {}  # type -> its class key
        self.built: dict = {}  # id(instance) -> constructor arguments
        self.depth = 0
        self.source = ""
        self.stopped = False
        self.here: set = set()  # the classes caught by the code running now

    def key(self, cls: type):
        if cls not in self.keys:
            self.keys[cls] = class_key(cls) if cls.__module__ != "torch" and \
                not cls.__module__.startswith("torch.") else None
        return self.keys[cls]

    def __enter__(self):
        self.here = set()
        module = torch.nn.Module
        self.saved = (module.__dict__["__init__"], module.__dict__["__call__"])
        init, call = self.saved
        catcher = self

        def __init__(self, *args, **kwargs):
            init(self, *args, **kwargs)
            if catcher.key(type(self)) in catcher.wanted and id(self) not in catcher.built:
                catcher.built[id(self)] = _constructed(self, sys._getframe(1))

        def __call__(self, *args, **kwargs):
            key = catcher.key(type(self))
            if key not in catcher.wanted:
                return call(self, *args, **kwargs)
            if catcher.stopped or (catcher.depth == 0 and key in catcher.here):
                catcher.stopped = True  # called again: the loop around the first call
                raise _Stop
            if key not in catcher.found:
                catcher.here.add(key)
                catcher.found[key] = Captured(
                    self, _copied(args), _copied(kwargs), catcher.built.get(id(self)),
                    outer_user_frame(sys._getframe(1), installed_is_library=True), catcher.source)
                if catcher.single or len(catcher.found) == len(catcher.wanted):
                    catcher.stopped = True
                    raise _Stop
            catcher.depth += 1
            try:
                return call(self, *args, **kwargs)
            finally:
                catcher.depth -= 1

        module.__init__, module.__call__ = __init__, __call__
        return self

    def __exit__(self, *exc):
        torch.nn.Module.__init__, torch.nn.Module.__call__ = self.saved
        self.depth, self.stopped = 0, False
        return False


def _constructed(instance, frame) -> dict | None:
    """The arguments of the outermost ``__init__`` running for ``instance`` (its class's own
    constructor), by name, as they are when ``nn.Module.__init__`` is reached."""
    outer = None
    while frame is not None and frame.f_code.co_name == "__init__":
        names = frame.f_code.co_varnames
        if not names or frame.f_locals.get(names[0]) is not instance:
            break
        outer, frame = frame, frame.f_back
    if outer is None:
        return None
    info = inspect.getargvalues(outer)
    out = {name: info.locals[name] for name in info.args[1:] if name in info.locals}
    if info.keywords and isinstance(info.locals.get(info.keywords), dict):
        out.update(info.locals[info.keywords])
    if info.varargs and info.locals.get(info.varargs):
        return None  # positional extras: no names to rebuild it by
    return out


def _copied(value):
    """Tensors copied (the forward may write into them), containers rebuilt, the rest kept."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, (list, tuple)) and type(value) in (list, tuple):
        return type(value)(_copied(v) for v in value)
    if isinstance(value, dict) and type(value) is dict:
        return {k: _copied(v) for k, v in value.items()}
    return value


@contextlib.contextmanager
def _sandbox():
    """A scratch working directory, no network, no stdin, output captured; the working
    directory, ``sys.path``, the environment, Python's and torch's random state and torch's
    global settings restored afterwards."""
    import random
    import socket

    saved_cwd, saved_path, saved_env = os.getcwd(), sys.path[:], dict(os.environ)
    saved_random = random.getstate()
    saved_torch = (torch.get_rng_state(), torch.get_default_dtype(), torch.is_grad_enabled(),
                   torch.get_num_threads())
    patched = [(socket.socket, "connect"), (socket.socket, "connect_ex"),
               (socket, "create_connection"), (socket, "getaddrinfo")]
    saved_net = [(owner, name, getattr(owner, name)) for owner, name in patched]

    def refused(*args, **kwargs):
        raise NetworkRefused("network access is refused while shapetrace runs a module's own code")

    with tempfile.TemporaryDirectory(prefix="shapetrace-owncall-", ignore_cleanup_errors=True) \
            as scratch:
        os.chdir(scratch)
        for owner, name, _ in saved_net:
            setattr(owner, name, refused)
        stdin = sys.stdin
        sys.stdin = io.StringIO("")
        try:
            with contextlib.redirect_stdout(io.StringIO()), \
                    contextlib.redirect_stderr(io.StringIO()):
                yield
        finally:
            sys.stdin = stdin
            for owner, name, value in saved_net:
                setattr(owner, name, value)
            os.chdir(saved_cwd)
            sys.path[:] = saved_path
            if dict(os.environ) != saved_env:
                os.environ.clear()
                os.environ.update(saved_env)
            random.setstate(saved_random)
            rng, dtype, grad, threads = saved_torch
            torch.set_rng_state(rng)
            torch.set_default_dtype(dtype)
            torch.set_grad_enabled(grad)
            torch.set_num_threads(threads)

