"""Checks made once for code handed in many times: a course's byte-identical submissions.

Most of a class starts from the same starter file, so many submissions are copies of a few
versions. Every target is still imported, built and traced on its own (its findings name its
own file and lines), but the expensive checks that re-run the module (the behaviour checks, the
reference comparison) give the same answer for the same code, sizes and settings: a
:class:`Reuse` made for one run (a command line, a pytest session, an xdist worker) keeps their
findings, notes and skips by what they depend on, and hands them to the next target whose
code is byte for byte the same, with the first target's paths rewritten to its own.

What they depend on (:func:`Reuse.key`): the content of every file of the user's code that ran
in the traced forward (and the class's own file), the class's name, the constructor arguments
and inputs as given, the sizes, the causal declaration, the seed, and the reference (its class
and the content of its file). Only classes are reused, never an instance (its weights are its
own), and nothing under ``--fake``.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import re
import tempfile
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from pathlib import Path

from .._version import __version__
from ..base.diagnostics import Diagnostic, Skip
from ..base.source import class_file, is_library_file


@dataclass
class Done:
    """What the checks that re-run a module found: findings, notes, skips, and the display
    path of each of the user's files they were found in, by the file's content."""

    findings: list[Diagnostic] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    skips: list[Skip] = field(default_factory=list)
    paths: dict[str, str] = field(default_factory=dict)  # content digest -> display path


class Reuse:
    """The checks made in one run, by what they depend on (at most ``limit`` of them in
    memory). With ``shared`` (a folder only this run writes to: the pytest-xdist controller
    makes one for its workers), each is also written there, so the workers of one session
    check a file once between them."""

    def __init__(self, limit: int = 256, shared: str | os.PathLike | None = None):
        self.limit = limit
        self.shared = Path(shared) if shared else None
        self._done: OrderedDict[tuple, Done] = OrderedDict()
        self._once: dict[tuple, object] = {}
        self.hits = 0

    def once(self, key: tuple, make):
        """``make()``, made once in this run for ``key`` (the solution every student is
        compared with, found once)."""
        if key not in self._once:
            self._once[key] = make()
        return self._once[key]

    def key(self, request, trace, part: str, model=None) -> tuple | None:
        """What ``part`` ("behaviour", "reference") of checking ``request``'s class depends
        on, or None when it cannot be reused (an instance, ``--fake``, code with no file).
        ``model``: the module as built, whose classes' files count too (a constructor in
        another file that builds a mask the forward only hands to torch)."""
        if not isinstance(request.module, type) or request.fake or any(
                not isinstance(i, str) for i in request.inputs or ()):
            return None  # an instance, fake tensors, or tensors of the caller's own
        files = _files_that_ran(request.module, trace, model)
        if files is None:
            return None
        reference = _reference_key(request.reference) if part == "reference" else None
        if part == "reference" and reference is None:
            return None
        return (part, __version__, request.module.__qualname__, tuple(sorted(files.values())),
                _frozen(request.init), _frozen(request.inputs), tuple(request.dims.items()),
                request.causal, request.seed, reference)

    def get(self, key: tuple | None, trace) -> Done | None:
        """The checks made for ``key``, their paths rewritten to the files ``trace`` ran."""
        if key is None:
            return None
        done = self._done.get(key)
        if done is None:
            done = self._read(key)
            if done is None:
                return None
            self._keep(key, done)
        self._done.move_to_end(key)
        here = _files_that_ran_paths(trace)
        paths = {old: here[digest] for digest, old in done.paths.items()
                 if digest in here and here[digest] != old}
        self.hits += 1
        return Done([_moved(d, paths) for d in done.findings],
                    [_moved_text(n, paths) for n in done.notes],
                    [Skip(s.checks, _moved_text(s.reason, paths)) for s in done.skips])

    def put(self, key: tuple | None, trace, done: Done) -> None:
        if key is None:
            return
        kept = Done([_moved(d, {}) for d in done.findings], list(done.notes), list(done.skips),
                    _files_that_ran_paths(trace))
        self._keep(key, kept)
        self._write(key, kept)

    def _keep(self, key: tuple, done: Done) -> None:
        self._done[key] = done
        if len(self._done) > self.limit:
            self._done.popitem(last=False)

    def _path(self, key: tuple) -> Path | None:
        if self.shared is None:
            return None
        return self.shared / (hashlib.sha1(repr(key).encode()).hexdigest() + ".pickle")

    def _read(self, key: tuple) -> Done | None:
        path = self._path(key)
        if path is None:
            return None
        try:
            with open(path, "rb") as fh:
                found = pickle.load(fh)  # written by this session's own processes
        except (OSError, EOFError, pickle.UnpicklingError, AttributeError, TypeError):
            return None
        return found if isinstance(found, Done) else None

    def _write(self, key: tuple, done: Done) -> None:
        path = self._path(key)
        if path is None:
            return
        try:  # whole or not at all: another worker may read it at once
            with tempfile.NamedTemporaryFile("wb", dir=self.shared, delete=False) as fh:
                pickle.dump(done, fh)
            os.replace(fh.name, path)
        except (OSError, pickle.PicklingError, TypeError, AttributeError):
            return


def _files_that_ran_paths(trace) -> dict:
    """content digest -> display path, for the user's files whose code ran in ``trace``."""
    first: dict[str, object] = {}  # each file once, with a record of it
    for rec in trace.records:
        if rec.site is not None:
            first.setdefault(rec.site[0].co_filename, rec)
    out = {}
    for filename, rec in first.items():
        digest = _digest(filename)
        if digest is not None:
            out.setdefault(digest, rec.file)
    return out


def _files_that_ran(cls: type, trace, model=None) -> dict | None:
    """display path -> content digest of the class's file, of the user's files of every class
    ``model`` and its submodules are made of (their constructors ran), and of every user file
    whose code ran in ``trace``; None when one of them cannot be read."""
    own = class_file(cls)
    digests = {}
    for filename in {own, *_built_from(model),
                     *(rec.site[0].co_filename for rec in trace.records if rec.site)}:
        digest = _digest(filename)
        if digest is None:
            return None
        digests[filename] = digest
    return digests


def _built_from(model) -> set[str]:
    """The user's files of the classes ``model`` and its submodules are instances of, and of
    their bases: the constructors that built what the checks run."""
    if model is None or not hasattr(model, "modules"):
        return set()
    classes = {cls for sub in model.modules() for cls in type(sub).__mro__}
    files = {class_file(cls) for cls in classes}
    return {f for f in files if f and not is_library_file(f)}


def _digest(filename: str | None) -> str | None:
    if not filename or filename.startswith("<"):
        return None
    try:
        with open(filename, "rb") as fh:
            return hashlib.sha1(fh.read()).hexdigest()
    except OSError:
        return None


def _reference_key(reference) -> tuple | None:
    """The reference's class and the content of its file (None for an instance)."""
    module = getattr(reference, "module", reference)
    if not isinstance(module, type):
        return None
    digest = _digest(class_file(module))
    return (module.__qualname__, digest) if digest is not None else None


def _frozen(value):
    """A hashable copy of constructor arguments or input specs."""
    if value is None:
        return None
    if isinstance(value, dict):
        return tuple(sorted((k, repr(v)) for k, v in value.items()))
    return tuple(repr(v) for v in value)


def _moved_text(text: str, paths: dict[str, str]) -> str:
    for old, new in paths.items():
        text = re.sub(rf"(?<![\w./-]){re.escape(old)}(?![\w/-])", new.replace("\\", r"\\"), text)
    return text


def _moved(d: Diagnostic, paths: dict[str, str]) -> Diagnostic:
    """``d`` found in another copy of the code: its file, message and hint name this one's."""
    if not paths:
        return replace(d, data=dict(d.data), modules=list(d.modules), lines=list(d.lines),
                       more_records=list(d.more_records))
    return replace(d, file=paths.get(d.file, d.file), message=_moved_text(d.message, paths),
                   hint=_moved_text(d.hint, paths), data=dict(d.data), modules=list(d.modules),
                   lines=list(d.lines), more_records=list(d.more_records))
