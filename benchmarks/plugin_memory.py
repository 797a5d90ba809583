"""``pytest --shapetrace --shapetrace-report=r.html`` on short training tests: peak memory and
report size as the number of tests grows.

Each test trains a small GPT (benchmarks/overhead.py's) for ``--steps`` steps inside the traced
test call. pytest runs in a subprocess on a temporary project with 1 and then ``--tests`` such
tests; the child's peak RSS comes from ``getrusage``. Goals: memory flat across tests (peak with
N tests / peak with 1 <= 1.2), a report of a few hundred KB a test (not 16 MB), and a traced
session no slower than a few times the untraced one.

    python benchmarks/plugin_memory.py [--tests 8] [--steps 100] [--shapetrace PATH]

``--shapetrace PATH`` measures another copy of the package (a directory holding ``shapetrace/``)
to compare with.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

TEST = '''
import torch
import torch.nn.functional as F

from overhead import GPT


def test_training_{n}():
    torch.manual_seed({n})
    model = GPT(n_embd=32, n_head=4, n_layer=2, block_size=16)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    idx = torch.randint(0, 65, (2, 16))
    for _ in range({steps}):
        logits = model(idx)
        loss = F.cross_entropy(logits.flatten(0, 1), idx.flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert torch.isfinite(loss)
'''


def session(project: Path, package: Path, *args: str) -> tuple[float, float, int]:
    """(peak RSS in MiB, CPU seconds, report bytes) of one pytest run in a fresh process."""
    report = project / "r.html"
    report.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(package), str(HERE)])}
    env.pop("GITHUB_ACTIONS", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-p", "no:randomly", *args], cwd=project, env=env,
                          capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        sys.exit(f"pytest failed ({done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    size = report.stat().st_size if report.exists() else 0
    return after.ru_maxrss / 1024, cpu, size


def project(root: Path, tests: int, steps: int) -> Path:
    folder = root / f"tests{tests}"
    folder.mkdir()
    (folder / "pyproject.toml").write_text("[tool.pytest.ini_options]\n")
    for n in range(tests):
        (folder / f"test_train_{n}.py").write_text(TEST.format(n=n, steps=steps))
    return folder


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=8)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--shapetrace", type=Path, default=HERE.parent,
                        help="the directory holding the shapetrace package to measure")
    args = parser.parse_args()
    package = args.shapetrace.resolve()
    traced = ("--shapetrace", "--shapetrace-report=r.html")
    with tempfile.TemporaryDirectory() as tmp:
        one, many = project(Path(tmp), 1, args.steps), project(Path(tmp), args.tests, args.steps)
        start = time.perf_counter()
        bare_peak, bare_cpu, _ = session(many, package)
        peak1, _, size1 = session(one, package, *traced)
        peak, cpu, size = session(many, package, *traced)
        wall = time.perf_counter() - start
    n = args.tests
    print(f"pytest --shapetrace --shapetrace-report=r.html, {n} tests of {args.steps} training "
          f"steps (2-layer GPT, C=32, T=16, B=2), shapetrace from {package}  ({wall:.0f} s)")
    print(f"  peak RSS: untraced {bare_peak:.0f} MiB, traced 1 test {peak1:.0f} MiB, "
          f"{n} tests {peak:.0f} MiB")
    print(f"  peak with {n} tests / peak with 1: {peak / peak1:.2f}x   (goal: <= 1.2, flat)")
    print(f"  traced / untraced peak ({n} tests): {peak / bare_peak:.2f}x")
    print(f"  report: {size / 1024:.0f} KiB for {n} tests, {size / n / 1024:.0f} KiB a test "
          f"(1 test: {size1 / 1024:.0f} KiB)   (goal: a few hundred KiB a test)")
    print(f"  CPU: traced / untraced: {cpu / bare_cpu:.2f}x ({cpu:.1f} s vs {bare_cpu:.1f} s)")


if __name__ == "__main__":
    main()
