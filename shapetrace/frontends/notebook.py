"""Jupyter: ``%load_ext shapetrace``, the ``%%shapetrace`` cell magic, and rich HTML display.

IPython is imported only here, and only when a notebook loads the extension: ``import
shapetrace`` never imports it. The HTML is the HTML report's own (``_render.EXPORTERS["html"]``),
cut to its ``<body>`` (``render.notebook``), so a notebook shows what the report file shows.

``%%shapetrace [--dims B=2,T=10] [--causal | --no-causal] [--width N] [--no-trace]`` runs the
cell under ``shapetrace.trace(dims=...)`` at the cell's own sizes (script mode, ``drive.script``),
then shows the trace and the findings below the cell. Module classes the cell defines are also
checked at the probe sizes, as ``python -m shapetrace`` checks a file's classes (``--causal``
declares them causal).
"""

from __future__ import annotations

import argparse
import shlex


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="%%shapetrace", add_help=False)
    p.add_argument("--dims", default=None)
    causal = p.add_mutually_exclusive_group()
    causal.add_argument("--causal", dest="causal", action="store_const", const=True, default=None)
    causal.add_argument("--no-causal", dest="causal", action="store_const", const=False)
    p.add_argument("--width", type=int, default=None)
    p.add_argument("--no-trace", action="store_true")
    return p


def shapetrace_magic(line: str, cell: str, ipython=None):
    """The ``%%shapetrace`` cell magic (see the module's docstring)."""
    from IPython import get_ipython
    from IPython.display import display

    from ..base.dims import parse_dims
    from ..base.errors import ShapetraceError
    from ..drive.script import run_traced
    from ..report.results import Report

    ipython = ipython or get_ipython()
    try:
        args = _parser().parse_args(shlex.split(line))
        dims = parse_dims(args.dims) if args.dims else {}
    except (SystemExit, ShapetraceError) as exc:
        message = exc if isinstance(exc, ShapetraceError) else "usage: %%shapetrace " \
            "[--dims NAME=SIZE,...] [--causal | --no-causal] [--width N] [--no-trace]"
        print(f"shapetrace: error: {message}")
        return None
    before = set(ipython.user_ns)

    # %magics and !commands inside the cell; one empty line first for the %%shapetrace line, so
    # that line numbers are the cell's own
    code = "\n" + ipython.transform_cell(cell)
    filename = ipython.compile.cache(code)  # in linecache: the trace shows the cell's lines

    def run():
        exec(compile(code, filename, "exec"), ipython.user_ns)  # noqa: S102 - the user's cell

    results = [run_traced(run, "cell", dims=dims, what="the cell")]
    results += _check_new_classes(ipython.user_ns, before, dims, args.causal, results[0])
    report = Report(results)
    from ..render import plain_text, report_renderable
    from ..render.notebook import report_html

    width = args.width or 100
    text = plain_text(report_renderable(report, width=width, show_trace=not args.no_trace),
                      width=width)
    display({"text/plain": text, "text/html": report_html(report, show_trace=not args.no_trace)},
            raw=True)
    return None


def _check_new_classes(namespace: dict, before: set, dims: dict, causal, cell_result) -> list:
    """The nn.Module subclasses the cell defined, checked at the probe sizes; one that cannot be
    built from inferred arguments is a note on the cell's result, not a failure."""
    import torch

    from ..drive.check import check_target

    out = []
    for name, value in list(namespace.items()):
        if name in before or not isinstance(value, type) or name.startswith("_"):
            continue
        if not issubclass(value, torch.nn.Module) or value.__module__ != "__main__":
            continue
        result = check_target(value, dims=dims, causal=causal, target=name)
        if result.error:
            cell_result.notes.append(f"{name} was not checked at the probe sizes: {result.error}")
        else:
            out.append(result)
    return out


def load_ipython_extension(ipython) -> None:
    """``%load_ext shapetrace``: registers ``%%shapetrace``."""
    ipython.register_magic_function(
        lambda line, cell: shapetrace_magic(line, cell, ipython), "cell", "shapetrace")
