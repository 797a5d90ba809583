"""``python -m shapetrace``: the command line.

Parsing, ``--help``, ``--version`` and ``--rules`` do not import torch. Exit codes: 0 no
error-level finding, 1 at least one, 2 the command could not run (one line on stderr, no
traceback unless ``--debug``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from ._errors import ShapetraceError, UsageError
from ._version import __version__

FORMATS = ("text", "json", "html", "svg")

EPILOG = """\
targets:
  path/to/file.py              every nn.Module subclass defined in the file
  path/to/file.py::Name        one class
  package.module::Name         one class from an importable module

examples:
  python -m shapetrace                                  the built-in demo
  python -m shapetrace attention.py
  python -m shapetrace attention.py::MultiHeadAttention --init d_in=C,d_out=C,num_heads=H
  python -m shapetrace gpt.py::GPT --input idx=B,T:long:V --dims T=11
  python -m shapetrace --config pyproject.toml --format html --output report.html

probe sizes (distinct primes, so every axis can be named):
  B=5 batch, T=7 time, S=17 second sequence, H=11 heads, d=13 head size,
  C=H*d=143 width, V=19 vocabulary, L=23 maximum length (block_size)

exit codes: 0 no error found, 1 errors found, 2 could not run
"""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="shapetrace",
        description="Trace a PyTorch module at named probe sizes and catch the attention bugs "
                    "that raise nothing. With no target, runs a demo.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("targets", nargs="*", metavar="TARGET", help="what to check (see below)")
    p.add_argument("--init", metavar="KEY=VALUE[,...]",
                   help="constructor keyword arguments; VALUE is a dim name, int, float, "
                        "true/false, none or a string (default: inferred from parameter names)")
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
    p.add_argument("--format", default="text", metavar="FMT",
                   help="text (default; coloured on a terminal), json, html or svg")
    p.add_argument("--output", "-o", metavar="FILE", help="write the report to FILE")
    p.add_argument("--fake", action="store_true",
                   help="shapes only, on fake tensors: no values, no memory; value-based "
                        "rules are skipped")
    p.add_argument("--config", metavar="FILE",
                   help="shapetrace.toml or a pyproject.toml with [tool.shapetrace]")
    p.add_argument("--no-trace", action="store_true", help="show findings only, not every op")
    p.add_argument("--width", type=int, default=None, help="text width (default: the terminal's)")
    p.add_argument("--rules", action="store_true", help="list the rules and exit")
    p.add_argument("--version", action="version", version=f"shapetrace {__version__}")
    p.add_argument("--debug", action="store_true", help="show tracebacks for errors")
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return _main(args)
    except ShapetraceError as exc:
        if args.debug:
            raise
        print(f"shapetrace: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


def _main(args) -> int:
    if args.format not in FORMATS:
        raise UsageError(f"unknown format {args.format!r}: use one of {', '.join(FORMATS)}")
    if args.rules:
        return _print_rules(args)
    if not args.targets and not args.config:
        if any(v for v in (args.init, args.input, args.dims)):
            raise UsageError("--init/--input/--dims need a TARGET or --config")
        from ._demo import run

        return run()
    jobs = _jobs(args)
    return _run_jobs(jobs, args)


def _jobs(args) -> list[tuple]:
    """(Job, Target) for every module class to check, in order."""
    from ._dims import parse_dims
    from ._jobs import Job, jobs_from_config
    from ._spec import parse_init

    cli_dims = parse_dims(args.dims) if args.dims else {}
    cli_init = parse_init(args.init) if args.init else None
    jobs = []
    if args.config:
        from ._config import load_config

        config = load_config(args.config)
        jobs += jobs_from_config(config, dims=cli_dims, causal=args.causal)
        if not config.targets and not args.targets:
            raise UsageError(f"{args.config}: no targets configured")
    jobs += [Job(spec, init=cli_init, inputs=args.input, dims=cli_dims, causal=args.causal)
             for spec in args.targets]
    return [(job, target) for job in jobs for target in job.resolve()]


def _run_jobs(jobs: list[tuple], args) -> int:
    from ._report import Report

    results = []
    for job, target in jobs:
        result = job.run(target, fake=args.fake)
        if result.error and args.debug:
            raise ShapetraceError(result.error)
        results.append(result)
    report = Report(results)
    _emit(report, args)
    failed = [r for r in results if r.error]
    for r in failed:
        print(f"shapetrace: error: {r.target}: {r.error}", file=sys.stderr)
    if failed:
        return 2
    return 0 if report.ok else 1


def _emit(report, args) -> None:
    fmt = args.format
    if fmt == "json":
        text = json.dumps(report.to_json(), indent=2) + "\n"
    elif fmt in ("html", "svg"):
        from ._render import export

        text = export(report, fmt, width=args.width or 100)
    else:
        text = None
    if args.output:
        if text is None:
            from ._render import export

            text = export(report, "text", width=args.width or 100)
        try:
            with open(args.output, "w", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as exc:
            raise UsageError(f"cannot write {args.output}: {exc.strerror}") from None
        return
    if text is not None:
        sys.stdout.write(text)
        return
    from ._render import make_console, print_report

    console = make_console(width=args.width)
    print_report(report, console=console, show_trace=not args.no_trace)


def _print_rules(args) -> int:
    from ._rules.registry import RULES

    if args.format == "json":
        print(json.dumps([{"code": r.code, "rule": r.name, "severity": r.severity,
                           "summary": r.summary} for r in RULES.values()], indent=2))
        return 0
    from rich.table import Table

    from ._render import SEVERITY_STYLES, make_console

    table = Table(box=None, pad_edge=False, show_header=True, header_style="bold")
    table.add_column("code")
    table.add_column("rule")
    table.add_column("severity")
    table.add_column("what it catches")
    for r in RULES.values():
        table.add_row(r.code, r.name, f"[{SEVERITY_STYLES[r.severity]}]{r.severity}[/]", r.summary)
    make_console(width=args.width).print(table)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
