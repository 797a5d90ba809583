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
    "trace": ".report.trace",
    "Trace": ".report.trace",
    "OpRecord": ".base.records",
    "check": ".drive.check",
    "Diagnostic": ".report.results",
    "Report": ".report.results",
    "TargetResult": ".report.results",
    "Dims": ".base.dims",
    "RULES": ".rules.registry",
    "ShapetraceError": ".base.errors",
    "UsageError": ".base.errors",
    "TargetError": ".base.errors",
}


def load_ipython_extension(ipython):
    """``%load_ext shapetrace`` in a notebook: the ``%%shapetrace`` cell magic."""
    from .frontends.notebook import load_ipython_extension as load

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
