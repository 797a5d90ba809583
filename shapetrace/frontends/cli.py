"""``python -m shapetrace``: the command line.

Parsing, ``--help``, ``--version`` and ``--rules`` do not import torch. Exit codes: 0 no
error-level finding, 1 at least one, 2 the command could not run (one line on stderr, no
traceback unless ``--debug``).

Formats come from the render layer's one table of exporters (``render.EXPORTERS``): ``--format``
names one, ``--output`` picks one by its suffix. Text to a terminal is printed on the terminal's
console (coloured unless ``NO_COLOR`` is set); everything else (pipes, ``--output``, JSON, HTML,
SVG) is the exporter's text, written once.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys

from .._version import __version__
from ..base.compat import quiet_numpy_warning
from ..base.errors import ShapetraceError, TargetError, UsageError
from ..base.source import shown_from
from ..drive.snippets import CALLS_FROM_SUFFIXES

_MIN_WIDTH, _MAX_WIDTH = 40, 1000  # --width

EPILOG = """\
targets:
  path/to/file.py              every nn.Module subclass defined in the file
  path/to/file.py::Name        one class
  package.module::Name         one class from an importable module
  path/to/notebook.ipynb       the classes a notebook's code cells define (::Name: one)
  path/to/script.py            a file without nn.Module subclasses (or any file with
                               --script) runs as a script, traced at its own sizes

examples:
  python -m shapetrace                                  the built-in demo
  python -m shapetrace attention.py
  python -m shapetrace attention.py::MultiHeadAttention --init d_in=C,d_out=C,num_heads=H
  python -m shapetrace gpt.py::GPT --input idx=B,T:long:V --dims T=11
  python -m shapetrace gpt.py::GPT --fake --dims B=1,T=2048,H=96,d=128 --init n_layer=96
  python -m shapetrace --config pyproject.toml --format html --output report.html
  python -m shapetrace student.py::MultiHeadAttention --reference solution.py::MultiHeadAttention

probe sizes (distinct primes, so every axis can be named):
  B=5 batch, T=7 time, S=17 second sequence, H=11 heads, d=13 head size,
  C=H*d=143 width, V=19 vocabulary, L=23 maximum length (block_size)

exit codes: 0 no error found, 1 errors found, 2 could not run
"""


def _width(text: str) -> int:
    try:
        width = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of columns, got {text!r}") from None
    if width < _MIN_WIDTH:
        raise argparse.ArgumentTypeError(f"{width} columns is too narrow (at least {_MIN_WIDTH})")
    if width > _MAX_WIDTH:
        raise argparse.ArgumentTypeError(f"{width} columns is too wide (at most {_MAX_WIDTH})")
    return width


def _seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not seconds > 0 or seconds == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return seconds


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage error in one line (the full usage is one --help away)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="shapetrace",
        description="Trace a PyTorch module at named probe sizes and catch the attention bugs\n"
                    "that raise nothing. With no target, runs a demo.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("targets", nargs="*", metavar="TARGET", help="what to check (see below)")
    p.add_argument("--init", action="append", default=None, metavar="KEY=VALUE[,...]",
                   help="constructor keyword arguments, repeatable; VALUE is a dim name, int, "
                        "float, true/false, none or a string; cfg.n_embd=C sets a field of a "
                        "config argument (default: inferred from parameter names)")
    p.add_argument("--input", action="append", default=None, metavar="NAME=DIMS[:DTYPE[:HIGH]]",
                   help="a forward argument, repeatable, in positional order: x=B,T,C  "
                        "idx=B,T:long:V  mask=T,T:bool (default: from annotations or names)")
    p.add_argument("--dims", metavar="NAME=SIZE[,...]",
                   help="override or add probe sizes, e.g. d=8 or K=29")
    causal = p.add_mutually_exclusive_group()
    causal.add_argument("--causal", dest="causal", action="store_const", const=True, default=None,
                        help="declare the modules causal (decoders)")
    causal.add_argument("--no-causal", dest="causal", action="store_const", const=False,
                        help="declare the modules not causal (encoders)")
    p.add_argument("--format", default=None, metavar="FMT",
                   help="text (default; coloured on a terminal), json, html or svg "
                        "(default with --output: from its extension)")
    p.add_argument("--output", "-o", metavar="FILE", help="write the report to FILE")
    p.add_argument("--script", action="store_true",
                   help="run each file as a script (as __main__, at its own sizes) instead of "
                        "checking its nn.Module classes; files without any run so anyway")
    p.add_argument("--fake", action="store_true",
                   help="shapes only, on fake tensors: no values, no memory; value-based "
                        "rules are skipped")
    p.add_argument("--reference", metavar="TARGET",
                   help="compare with a reference implementation at the same weights and "
                        "inputs (reference-mismatch); overrides the config's reference")
    p.add_argument("--config", metavar="FILE",
                   help="shapetrace.toml or a pyproject.toml with [tool.shapetrace]")
    p.add_argument("--timeout", type=_seconds, default=None, metavar="SECONDS",
                   help="stop a target still running after SECONDS (an endless loop in forward) "
                        "and report it as a target error (exit 2); overrides the config's "
                        "timeout")
    p.add_argument("--calls-from", action="append", default=[], metavar="PATH",
                   help="a script, a README's Python blocks or a notebook's code cells that "
                        "build and call the classes, run (sandboxed, stopped at the first call) "
                        "to check them with the inputs it passes; repeatable. "
                        "The file's own __main__ block and the tests/examples that name a class "
                        "are run anyway")
    p.add_argument("--no-own-calls", dest="own_calls", action="store_false",
                   help="never run the code's own calls (__main__ block, tests, examples, "
                        "named scripts): build and feed each class from inferred arguments")
    p.add_argument("--no-trace", action="store_true", help="show findings only, not every op")
    p.add_argument("--width", type=_width, default=None, metavar="COLUMNS",
                   help="text width (default: COLUMNS or the terminal's; 100 for files and "
                        "when there is no terminal)")
    p.add_argument("--rules", action="store_true", help="list the rules and exit")
    p.add_argument("--version", action="version", version=f"shapetrace {__version__}")
    p.add_argument("--debug", action="store_true", help="show tracebacks for errors")
    return p


def main(argv: list[str] | None = None) -> int:
    quiet_numpy_warning()
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        with shown_from(os.getcwd()):  # paths as given, whatever a forward does to the cwd
            return _main(args)
    except ShapetraceError as exc:
        if args.debug:
            original = getattr(exc, "original", None)  # the user's own exception, if any
            if original is not None:
                raise original
            raise
        _fail(str(exc))
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a bug in shapetrace itself: still one line, unless --debug
        if args.debug:
            raise
        _fail(f"internal error: {type(exc).__name__}: {_first_line(str(exc))} "
              f"(rerun with --debug for the traceback, and please report it)")
        return 2


def _fail(message: str) -> None:
    from ..render import safe_text

    print(f"shapetrace: error: {safe_text(message, newlines=False)}", file=sys.stderr)


def _first_line(text: str) -> str:
    text = text.strip()
    return text.splitlines()[0] if text else ""


def _main(args) -> int:
    args.exporter = _exporter(args)
    if args.output:
        # absolute before any user code runs: a forward that calls os.chdir must not move it
        args.output = os.path.abspath(args.output)
        _check_writable(args.output)
        _check_not_input(args.output, _input_files(args))
    if args.rules:
        return _print_rules(args)
    if not args.targets and not args.config:
        return _demo(args)
    with _stdout_to_stderr():  # nothing the user's code prints may mix into the report
        try:
            jobs = _imported(args)
            if args.output:  # a package.module::Name target is a file only known once imported
                _check_not_input(args.output, [_source_file(getattr(target, "cls", None))
                                               for _, target, _ in jobs])
            results = _check_all(jobs, args)
        except SystemExit as exc:  # sys.exit() in the user's constructor or forward
            raise TargetError(f"the checked code called exit({exc.code}); put script code under "
                              f"if __name__ == '__main__':") from exc
    return _report(results, args)


@contextlib.contextmanager
def _stdout_to_stderr():
    """Point ``sys.stdout``, ``sys.__stdout__`` and file descriptor 1 at stderr while the user's
    code runs (``print``, ``sys.__stdout__.write``, ``os.write(1, ...)``), and restore all three
    before the report is written."""
    saved_stdout, saved_dunder = sys.stdout, sys.__stdout__
    for stream in (sys.stdout, sys.__stdout__):
        with contextlib.suppress(Exception):
            stream.flush()
    try:
        saved_fd = os.dup(1)
    except OSError:  # no file descriptor 1: only the Python streams can be moved
        saved_fd = None
    else:
        try:
            os.dup2(2, 1)
        except OSError:  # no file descriptor 2
            os.close(saved_fd)
            saved_fd = None
    sys.stdout = sys.__stdout__ = sys.stderr
    try:
        yield
    finally:
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        sys.stdout, sys.__stdout__ = saved_stdout, saved_dunder
        if saved_fd is not None:
            os.dup2(saved_fd, 1)
            os.close(saved_fd)


def _input_files(args) -> list[str]:
    """The files the command reads that ``--output`` must not overwrite: the config file and
    the file of every file target (from the command line and from the config)."""
    files = [args.config] if args.config else []
    files += [spec.partition("::")[0].strip() for spec in [*args.targets, args.reference or ""]]
    if args.config:
        with contextlib.suppress(ShapetraceError):  # a bad config is reported when it is loaded
            from ..drive.config import load_config

            config = load_config(args.config)
            files += [os.path.join(config.root, t.target.partition("::")[0].strip())
                      for t in config.targets]
    return files


def _source_file(cls) -> str | None:
    module = sys.modules.get(getattr(cls, "__module__", None) or "")
    return getattr(module, "__file__", None)


def _check_not_input(output: str, files) -> None:
    """``--output`` must never be a file that the command reads (a target or the config)."""
    for path in files:
        try:  # an output that does not exist yet is no file being read
            same = bool(path) and os.path.samefile(output, path)
        except OSError:
            same = False
        if same:
            raise UsageError(f"--output {output} is {path}, a file being checked or the config: "
                             f"refusing to overwrite it; choose another file")


def _exporter(args):
    """The exporter named by ``--format``, else the one ``--output``'s suffix selects (text when
    no exporter has the suffix)."""
    from ..render import UnknownFormat, exporter_for_path, exporter_named

    try:
        if args.format is not None:
            return exporter_named(args.format)
        return exporter_for_path(args.output or "", default="text")
    except UnknownFormat as exc:
        raise UsageError(str(exc)) from None


def _check_writable(path: str) -> None:
    """Fail before running anything when ``--output`` cannot be written."""
    if os.path.isdir(path):
        raise UsageError(f"cannot write {path}: it is a directory")
    folder = os.path.dirname(path) or "."
    if not os.path.isdir(folder):
        raise UsageError(f"cannot write {path}: no such directory {folder}")
    if not os.access(folder, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise UsageError(f"cannot write {path}: permission denied")


def _demo(args) -> int:
    if any(v for v in (args.init, args.input, args.dims, args.reference)):
        raise UsageError("--init/--input/--dims/--reference need a TARGET or --config")
    if not args.exporter.painted or args.fake:
        flag = "--fake" if args.fake else f"--format {args.exporter.name}"
        raise UsageError(f"{flag} needs a TARGET or --config (the demo has no {flag[2:]} mode)")
    if args.exporter.extras is not None:  # HTML: the report page, as for targets
        from .demo import export

        _write(export(args.exporter, show_trace=not args.no_trace), args)
        return 0
    from .demo import show

    _paint(lambda console: show(console=console), args)
    return 0


def _jobs(args) -> list[tuple]:
    """(Job, Target, Isolation) for every module class to check, in order: each target is
    imported apart from the others (two copies of one package, in two folders, are each
    their own), its modules put back while it is checked."""
    from ..base.dims import Dims, parse_dims
    from ..base.specs import parse_input, parse_inits
    from ..drive.jobs import Job, command_line_jobs, jobs_from_config, resolved

    dim_items = [item.strip() for item in (args.dims or "").split(",")]
    if args.dims is not None and not all(dim_items[:-1] if len(dim_items) > 1 else dim_items):
        raise UsageError(f"--dims: empty item in {args.dims!r} (two commas in a row, or a leading "
                         f"comma)")
    cli_dims = parse_dims(args.dims) if args.dims else {}
    cli_init = parse_inits(args.init) if args.init else None
    if args.input:
        known = Dims(cli_dims)
        for text in args.input:  # a malformed --input is one usage error, before any import
            parse_input(text, known)
    calls_from = tuple(_script_path(p) for p in args.calls_from)
    jobs = []
    if args.config:
        from ..drive.config import load_config

        config = load_config(args.config)
        jobs += jobs_from_config(config, dims=cli_dims, causal=args.causal,
                                 reference=args.reference, timeout=args.timeout,
                                 own_calls=args.own_calls, calls_from=calls_from)
        if not config.targets and not args.targets:
            raise UsageError(f"{args.config}: no targets configured")
    if args.reference and (args.fake or args.script):
        raise UsageError("--reference compares a module's values: it cannot run with --fake or --script")
    if args.script and (args.init or args.input or args.fake):
        raise UsageError("--init/--input/--fake apply to nn.Module targets, not --script")
    # a target that cannot be imported is its own target error (a report, exit 2) and every
    # other target still runs; a single target string naming no file is one line
    alone = not args.config and len(args.targets) == 1
    found = [_apart(lambda job=job: resolved(job)) for job in jobs]
    cli_jobs = [Job(spec, init=cli_init, inputs=args.input, dims=cli_dims, causal=args.causal,
                    reference=args.reference, timeout=args.timeout, own_calls=args.own_calls,
                    calls_from=calls_from, stand_in=True) for spec in args.targets]
    found += [_apart(lambda job=job: command_line_jobs([job], script=args.script, dims=cli_dims,
                                                       alone=alone)) for job in cli_jobs]
    return [triple for triples in found for triple in triples]


def _apart(resolve) -> list[tuple]:
    """``resolve()``'s ``(job, target)`` pairs, with the isolation their imports were made in."""
    from ..drive.isolation import Isolation

    isolation = Isolation()
    with isolation:
        pairs = resolve()
    return [(job, target, isolation) for job, target in pairs]


def _script_path(path: str) -> str:
    """A ``--calls-from`` script, a README or a notebook, absolute (the code it runs may change
    the working directory)."""
    full = os.path.abspath(os.path.expanduser(path))
    if not os.path.isfile(full) or not full.lower().endswith(CALLS_FROM_SUFFIXES):
        raise UsageError(f"--calls-from: no such Python file, README or notebook: {path} "
                         f"(a {', '.join(CALLS_FROM_SUFFIXES)} file)")
    return full


def _imported(args) -> list[tuple]:
    """The (job, target) pairs, importing the target files (each job within its timeout:
    ``--timeout``, else the config's)."""
    from ..drive import check, script  # noqa: F401 - shapetrace's own imports: not a target's time

    return _jobs(args)


def _check_all(jobs: list, args) -> list:
    """Every target checked by its job (a module's or a script's), each within its timeout; the
    checks that re-run a module are made once for code handed in more than once."""
    from ..drive.reuse import Reuse

    reuse = Reuse()
    results = []
    for job, target, isolation in jobs:
        with isolation:  # the target's own modules back in place while it is checked
            result = job.check(target, fake=args.fake, reuse=reuse)
        if result.error and args.debug:
            exc = result.exception
            raise getattr(exc, "original", None) or exc or ShapetraceError(result.error)
        results.append(result)
    return results


def _report(results: list, args) -> int:
    from ..report.results import Report

    report = Report(results)
    _emit(report, args)
    _annotate(results, args)
    failed = [r for r in results if r.error]
    for r in failed:
        _fail(f"{r.target}: {r.error}")
    if failed:
        return 2
    return 0 if report.ok else 1


def _emit(report, args) -> None:
    show_trace = not args.no_trace
    console = _terminal(args)
    if console is not None:
        from ..render import print_report

        print_report(report, console=console, show_trace=show_trace)
        return
    _write(args.exporter.export(report, width=_export_width(args), show_trace=show_trace), args)


def _annotate(results: list, args) -> None:
    """Under GitHub Actions, the findings as workflow commands (inline annotations), at most
    10 of each level, the most important first: on stdout after the report, or on stderr when
    stdout carries a JSON/HTML/SVG report (the runner reads both; a machine-readable stream
    stays parseable). The whole list goes to the job summary (``GITHUB_STEP_SUMMARY``)."""
    from ..render.github import annotations, github_actions, limited_commands, write_step_summary

    if not github_actions():
        return
    found = annotations(results)
    stream = sys.stderr if args.exporter.name != "text" and not args.output else sys.stdout
    for command in limited_commands(found):
        stream.write(command + "\n")
    stream.flush()
    problem = write_step_summary(found)
    if problem:
        _fail(problem)


def _paint(paint, args) -> None:
    """Run ``paint(console)`` on the terminal, or have the exporter record it.

    Text that does not go to a terminal (a pipe, a CI log, ``--output``) is plain, without
    trailing spaces, as wide as ``--width``, else (pipes) ``COLUMNS`` or the terminal's width,
    else 100 columns.
    """
    console = _terminal(args)
    if console is not None:
        paint(console)
        return
    _write(args.exporter.record(paint, width=_export_width(args)), args)


def _export_width(args) -> int:
    """``--width``; for a file 100 columns; for a pipe ``COLUMNS`` or the terminal's, else 100."""
    from ..render import FILE_WIDTH, default_width

    return args.width or (FILE_WIDTH if args.output else default_width())


def _terminal(args):
    """The terminal's console when the output is text for a terminal (also under FORCE_COLOR;
    rich honours NO_COLOR), else None."""
    if args.exporter.name != "text" or args.output:
        return None
    from ..render import make_console

    console = make_console(width=args.width)
    return console if console.is_terminal else None


def _write(text: str, args) -> None:
    if not args.output:
        sys.stdout.write(text)
        return
    try:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        raise UsageError(f"cannot write {args.output}: {exc.strerror}") from None


def _print_rules(args) -> int:
    from ..rules.registry import RULES

    if not args.exporter.painted:
        rules = [{"code": r.code, "rule": r.name, "severity": r.severity, "summary": r.summary,
                  "needs_values": r.needs_values} for r in RULES.values()]
        _write(json.dumps(rules, indent=2, allow_nan=False) + "\n", args)
        return 0
    if args.exporter.name == "html":  # a page of its own, like the report's
        from ..render.html import rules_page

        _write(rules_page(RULES.values()), args)
        return 0
    from ..render import rules_renderable

    table = rules_renderable(RULES.values())
    _paint(lambda console: console.print(table), args)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
