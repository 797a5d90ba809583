"""``--fake`` on GPT-3 175B: shapes of a model that no laptop can hold, checked in seconds.

Runs ``python -m shapetrace --fake`` on the nanoGPT-style GPT in ``gpt3.py`` at the GPT-3 175B
configuration (96 layers, C=12288, 96 heads of 128, T=2048, vocabulary 50257) in a subprocess,
the way a user would, and compares its wall time and peak resident memory with a subprocess
that only runs ``import torch``. Goals: at most 10 s wall, at most 300 MiB above bare torch.

    python benchmarks/fake_175b.py [--repeats 3] [--breakdown]

``--breakdown`` also times the phases in-process (imports, fake-tensor mode, build, trace and
rules, rendering) to show where the time goes.
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TARGET = f"{HERE / 'gpt3.py'}::GPT"
DIMS = "B=1,T=2048,H=96,d=128,V=50257"
INIT = "n_layer=96,block_size=T"
COMMAND = [sys.executable, "-m", "shapetrace", TARGET, "--fake", "--dims", DIMS, "--init", INIT]
BASELINE = [sys.executable, "-c", "import torch"]
PARAMETERS = 175_000_000_000  # 4 bytes each in float32: about 650 GiB if it were real

MAX_WALL_S = 10.0
MAX_EXTRA_MIB = 300.0


def measure(command: list[str], stdout) -> tuple[float, float, float, int]:
    """(wall seconds, CPU seconds, peak RSS in MiB, exit code) of one subprocess."""
    start = time.perf_counter()
    proc = subprocess.Popen(command, cwd=ROOT, stdout=stdout, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode()
    proc.stderr.close()
    if proc.returncode not in (0, 1):
        sys.exit(f"{' '.join(command)} failed ({proc.returncode}):\n{err}")
    cpu = usage.ru_utime + usage.ru_stime
    return wall, cpu, usage.ru_maxrss / 1024, proc.returncode  # ru_maxrss is in KiB on Linux


def breakdown() -> None:
    """Where the time goes, phase by phase, in this process."""
    phases = []
    t = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal t
        now = time.perf_counter()
        phases.append((name, now - t))
        t = now

    import torch  # noqa: F401

    lap("import torch")
    from shapetrace.drive.check import check_target
    from shapetrace.base.dims import parse_dims
    from shapetrace.record.fake import ShapesOnlyMode
    from shapetrace.render import make_console, print_report
    from shapetrace.report.results import Report
    from shapetrace.base.specs import parse_init
    from shapetrace.drive.targets import resolve_targets

    lap("import shapetrace")
    ShapesOnlyMode()
    lap("first FakeTensorMode (imports torch._dynamo)")
    (target,) = resolve_targets(TARGET)
    result = check_target(target.cls, init=parse_init(INIT), dims=parse_dims(DIMS), fake=True,
                          target=target.display)
    lap("build, trace and rules")
    if result.error:
        sys.exit(result.error)
    console = make_console(color=False, width=80, file=io.StringIO())
    print_report(Report([result]), console=console)
    lap(f"render {len(result.trace.records)} ops as text")
    for name, seconds in phases:
        print(f"  {name:<45} {seconds:6.2f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--breakdown", action="store_true", help="time the phases in-process")
    args = parser.parse_args()

    shown = " ".join(["python", *COMMAND[1:]]).replace(str(ROOT) + "/", "")
    print(f"shapetrace --fake on GPT-3 175B: {shown}")
    walls, cpus, peaks, base_walls, base_peaks = [], [], [], [], []
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.txt"
        for _ in range(args.repeats):
            base_wall, _, base_peak, _ = measure(BASELINE, subprocess.DEVNULL)
            base_walls.append(base_wall)
            base_peaks.append(base_peak)
            with report.open("w") as out:
                wall, cpu, peak, code = measure(COMMAND, out)
            walls.append(wall)
            cpus.append(cpu)
            peaks.append(peak)
        text = report.read_text()
    if "h.95" not in text or "could not run" in text:
        print(text[-2000:])
        sys.exit("the report does not cover all 96 layers")
    ops = sum(1 for line in text.splitlines() if line[:6].strip().isdigit())

    wall, cpu, peak, base = (statistics.median(walls), statistics.median(cpus), max(peaks),
                             max(base_peaks))
    extra = peak - base
    print(f"  report: {len(text.splitlines())} lines, {ops} ops traced, exit code {code}")
    print(f"  wall time:    {wall:6.2f} s   (median of {args.repeats}: "
          f"{', '.join(f'{w:.2f}' for w in walls)})   goal <= {MAX_WALL_S:.0f} s")
    print(f"  CPU time:     {cpu:6.2f} s   (bare `import torch`: "
          f"{statistics.median(base_walls):.2f} s wall)")
    print(f"  peak RSS:     {peak:6.0f} MiB (bare `import torch`: {base:.0f} MiB)")
    print(f"  above torch:  {extra:6.0f} MiB   goal <= {MAX_EXTRA_MIB:.0f} MiB "
          f"(the real weights would need {PARAMETERS * 4 / 2**30:,.0f} GiB)")
    load = max(load_before, os.getloadavg()[0])
    met = wall <= MAX_WALL_S and extra <= MAX_EXTRA_MIB
    print(f"  goals {'met' if met else 'NOT met'} on {os.cpu_count()} cores, load average {load:.1f}"
          + (" (a busy machine: wall times are inflated)" if load > (os.cpu_count() or 1) else ""))
    if args.breakdown:
        print("breakdown (in-process):")
        breakdown()
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
