"""shapetrace: a shape-checking and tensor-tracing debugger for PyTorch attention code.

Importing this package does not import torch: the CLI's ``--help`` and the pytest plugin stay
fast. The public names below load their modules on first use.
"""

from ._version import __version__

__all__ = [
    "__version__",
    "trace",
    "check",
    "Trace",
    "OpRecord",
    "Diagnostic",
    "Report",
    "TargetResult",
    "Dims",
    "RULES",
    "ShapetraceError",
    "UsageError",
    "TargetError",
]

_LAZY = {
    "trace": "._trace",
    "Trace": "._trace",
    "OpRecord": "._records",
    "check": "._check",
    "Diagnostic": "._report",
    "Report": "._report",
    "TargetResult": "._report",
    "Dims": "._dims",
    "RULES": "._rules.registry",
    "ShapetraceError": "._errors",
    "UsageError": "._errors",
    "TargetError": "._errors",
}


def load_ipython_extension(ipython):
    """``%load_ext shapetrace`` in a notebook: the ``%%shapetrace`` cell magic."""
    from ._notebook import load_ipython_extension as load

    load(ipython)


def __getattr__(name):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'shapetrace' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
