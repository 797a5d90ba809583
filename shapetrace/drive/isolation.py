"""Keep a checked target's modules out of the course's own imports (SPEC section 7).

Importing ``student/attention.py`` puts the student's sibling ``helpers.py`` in ``sys.modules``
as ``helpers``; the course's ``tests/helpers.py`` would then import the student's copy, and a
correct test would fail. The pytest plugin therefore imports and runs each target inside
:class:`Isolation`: whatever user modules the target brought in are taken out of ``sys.modules``
afterwards (and the entries they replaced put back), ``sys.path`` is restored, and the target's
own modules are put back in place only while it runs (``inspect``, ``dataclasses`` and
``typing.get_type_hints`` look a class's module up by name).

Modules of Python itself, of installed packages and of shapetrace are left loaded: a library
imported for the first time (``einops``, a torch submodule) is shared by everyone, and removing
an extension module breaks its next import. Pure stdlib; importing it imports nothing heavy.
"""

from __future__ import annotations

import os
import sys

_MISSING = object()


_LIBRARY: tuple[str, ...] | None = None
_SEEN: dict[str, bool] = {}  # module file -> is it the user's (not a library's)


def _is_users(module) -> bool:
    """A module from the user's files: a file, or the folders of a namespace package (a
    ``models/`` without ``__init__.py``), outside every library directory."""
    global _LIBRARY
    filename = getattr(module, "__file__", None)
    if not filename or not isinstance(filename, str):
        return _namespace_of_users(module)
    known = _SEEN.get(filename)
    if known is None:
        known = _SEEN[filename] = not os.path.realpath(filename).startswith(_library())
    return known


def _library() -> tuple[str, ...]:
    global _LIBRARY
    if _LIBRARY is None:
        from .syspath import library_dirs  # Python's, installed packages', shapetrace's

        _LIBRARY = library_dirs()
    return _LIBRARY


def _namespace_of_users(module) -> bool:
    """A namespace package whose every folder is the user's."""
    from .syspath import package_folders  # as last computed: its parent may be gone by now

    try:
        folders = [os.path.realpath(p) + os.sep for p in package_folders(module)]
    except Exception:  # noqa: BLE001 - a path that cannot be read: not known to be the user's
        return False
    return bool(folders) and not any(f.startswith(_library()) for f in folders)


class Isolation:
    """Imports of one target, held apart from ``sys.modules``.

    >>> isolation = Isolation()
    >>> with isolation:             # import the target: what it brings in is kept here
    ...     targets = job.resolve()
    >>> with isolation:             # run it: its modules are back in place while it runs
    ...     result = job.check(target)

    Each ``with`` restores ``sys.modules`` (user modules only) and ``sys.path`` on exit.
    """

    def __init__(self):
        self.modules: dict[str, object] = {}  # the target's user modules, by name

    def __enter__(self) -> "Isolation":
        self._path = list(sys.path)
        self._before = dict(sys.modules)
        self._shadowed = {name: sys.modules.get(name, _MISSING) for name in self.modules}
        sys.modules.update(self.modules)
        return self

    def __exit__(self, *exc) -> bool:
        modules, before = sys.modules, self._before
        for name, module in list(modules.items()):
            old = before.get(name, _MISSING)
            if old is module or not _is_users(module):
                continue
            self.modules[name] = module
            if name in self._shadowed:
                old = self._shadowed[name]
            if old is _MISSING:
                del modules[name]
            else:
                modules[name] = old
        for name, old in before.items():  # entries the import dropped (a shadowed module)
            if name not in modules and _is_users(old):
                modules[name] = old
        for name, old in self._shadowed.items():
            if old is not _MISSING and modules.get(name) is not old:
                modules[name] = old
        sys.path[:] = self._path
        del self._before, self._shadowed, self._path
        return False


def users_modules() -> list:
    """The modules now loaded from the user's files (not Python's, a library's or shapetrace's)."""
    return [m for m in list(sys.modules.values()) if m is not None and _is_users(m)]
