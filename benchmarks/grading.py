"""Grading N submissions with ``pytest -n 2`` and the plugin, against a bare grader that only
builds each module and runs one forward pass.

The submissions are the repository's own modules (``examples/*/{buggy,fixed}.py``,
``reference_models/m*.py`` and the test models), each copied as a student folder
``sub_NNN/attention.py`` into a temporary course repository whose ``pyproject.toml`` names
every one as a target (all its ``nn.Module`` classes, constructor arguments and inputs
inferred). Each target is graded against a solution with ``reference = ...``, which builds and
runs a second model: a buggy example against its ``fixed.py`` (the comparison finds where they
part), every other file against the repository's own copy of itself (the solution a correct
student matches). The bare grader imports the same files and, for every class, builds it at the
probe sizes and runs one forward, split over two processes like ``-n 2``; it imports only the
constructor and input inference it needs (``_spec``), not the checks, and finds the classes in
the module's namespace. Both are charged their
whole CPU time (children's ``getrusage``, which includes the xdist workers), imports and
start-up included. Goal: <= 1.3x.

    python benchmarks/grading.py [--submissions 144] [--no-reference] [--baseline DIR]
    python benchmarks/grading.py --course 150

``--course N`` grades a course as a class hands one in: N submissions of one exercise made from
the course template's starter (``examples/course``), most of them byte-identical copies of a
few versions (done right, the starter's jumbled heads, the residual slip, the solution itself,
and a copy done right with a comment of its own), each graded against the solution with every
check, ``pytest -n 2`` against a bare pytest grader: the same course's items as a plain test
that builds each student's module and runs one forward. It prints the CPU ratio and the cost per
submission. Goal: <= 1.5x.

A *minimal* grader does what the bare one does plus the least that the comparison and the
behaviour checks must do: build the solution's model and run it on the same inputs, and run
the student's model once more on changed inputs. Its ratio to the bare grader is how much of
the goal that work alone uses up.

It also runs the pytest session with every item deselected, to show how much of the cost is
start-up and collection (each xdist worker starts pytest and torch and reads the config's
targets; a target file is imported only by the worker that runs one of its items).
``--no-reference`` grades without the comparison. ``--baseline DIR`` grades the same course
with another shapetrace source tree too (e.g. ``git archive`` of an older commit unpacked in
DIR), in the same run, so that the two ratios share the machine's load.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCES = sorted([*REPO.glob("examples/*/buggy.py"), *REPO.glob("examples/*/fixed.py"),
                  *REPO.glob("reference_models/m[0-9]*.py"), REPO / "tests" / "rule_models.py",
                  REPO / "tests" / "models_basic.py", REPO / "tests" / "behaviour_models.py",
                  REPO / "tests" / "data" / "registry" / "models.py"])

BARE = '''
import importlib.util, sys, torch
from shapetrace.base.dims import Dims
from shapetrace.base.specs import make_input
from shapetrace.drive.infer import infer_init, infer_inputs

torch.set_num_threads(1)
built = ran = 0
minimal = sys.argv[1] == "--minimal"  # also a second model and one more forward per class
for i, path in enumerate(sys.argv[2:]):
    spec = importlib.util.spec_from_file_location(f"submission_{i}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    except Exception:
        continue
    # the classes the file defines, in the order its namespace holds them (no source parsing:
    # inspect.getsourcelines re-parses the whole file for every class)
    for cls in [v for v in list(vars(module).values()) if isinstance(v, type)
                and issubclass(v, torch.nn.Module) and v.__module__ == module.__name__]:
        try:
            dims = Dims()
            torch.manual_seed(0)
            model = cls(**infer_init(cls, dims, given={})).eval()
            built += 1
            generator = torch.Generator().manual_seed(0)
            args = [make_input(spec, dims, generator=generator)
                    for spec in infer_inputs(cls, dims)]
            with torch.no_grad():
                model(*args)
            if minimal:
                # the least the reference comparison does: a second model, run on the same
                # inputs; and the least a behaviour check does: one more forward, on inputs
                # changed where the output must not depend on them
                torch.manual_seed(0)
                solution = cls(**infer_init(cls, dims, given={})).eval()
                with torch.no_grad():
                    solution(*args)
                    model(*[a.flip(0) if a.is_floating_point() and a.ndim else a for a in args])
            ran += 1
        except Exception:
            pass
print(built, ran)
'''


def solution_of(source: Path) -> Path:
    """The solution a submission copied from ``source`` is graded against."""
    fixed = source.with_name("fixed.py")
    return fixed if source.name == "buggy.py" and fixed.exists() else source


def course(root: Path, n: int, reference: bool) -> list[Path]:
    files = []
    lines = ["[tool.pytest.ini_options]\n", "[tool.shapetrace]\n"]
    for i in range(n):
        source = SOURCES[i % len(SOURCES)]
        folder = root / f"sub_{i:03d}"
        folder.mkdir()
        shutil.copy(source, folder / "attention.py")
        files.append(folder / "attention.py")
        lines.append(f'\n[[tool.shapetrace.targets]]\ntarget = "sub_{i:03d}/attention.py"\n')
        if reference:
            lines.append(f'reference = "{solution_of(source)}"\n')
    (root / "pyproject.toml").write_text("".join(lines))
    return files


COURSE = REPO / "examples" / "course"
#: (version, how many of every 15 submissions): most of a class hands in a few versions
VERSIONS = [("attention_fixed.py", 6), ("attention.py", 4), ("attention_residual.py", 2),
            ("solution", 2), ("commented", 1)]
_INIT = '{ d_in = "C", d_out = "C", context_length = "L", dropout = 0.0, num_heads = "H" }'
BARE_TEST = '''
import importlib.util, sys
from pathlib import Path

import pytest
import torch

SUBMISSIONS = sorted(Path(__file__).parent.glob("sub_*/attention.py"))


@pytest.mark.parametrize("path", SUBMISSIONS, ids=lambda p: p.parent.name)
def test_builds_and_runs(path):
    spec = importlib.util.spec_from_file_location(f"bare_{path.parent.name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    torch.manual_seed(0)
    model = module.MultiHeadAttention(d_in=143, d_out=143, context_length=23, dropout=0.0,
                                      num_heads=11).eval()
    with torch.no_grad():
        model(torch.randn(5, 7, 143))
'''


def class_course(root: Path, n: int) -> list[Path]:
    """A course of ``n`` submissions of the course template's exercise, as a class hands them
    in (``VERSIONS``), graded against the solution; and the bare grader's test file."""
    shutil.copytree(COURSE / "solution", root / "solution")
    texts = {name: (COURSE / "student" / name).read_text() for name, _ in VERSIONS
             if name.endswith(".py")}
    texts["solution"] = (COURSE / "solution" / "attention.py").read_text()
    texts["commented"] = "# my solution, finally\n" + texts["attention_fixed.py"]
    cycle = [name for name, count in VERSIONS for _ in range(count)]
    lines = ["[tool.pytest.ini_options]\ntestpaths = [\".\"]\n", "[tool.shapetrace]\n",
             "dims = { B = 5, T = 7 }\n"]
    files = []
    for i in range(n):
        folder = root / f"sub_{i:03d}"
        folder.mkdir()
        (folder / "attention.py").write_text(texts[cycle[i % len(cycle)]])
        files.append(folder / "attention.py")
        lines.append(f'\n[[tool.shapetrace.targets]]\ntarget = "sub_{i:03d}/attention.py::'
                     f'MultiHeadAttention"\ninit = {_INIT}\ninputs = ["x=B,T,C"]\ncausal = true\n'
                     f'reference = "solution/attention.py::MultiHeadAttention"\npoints = 2\n')
    (root / "pyproject.toml").write_text("".join(lines))
    (root / "bare_grader_test.py").write_text(BARE_TEST)
    return files


def grade_class(args, env: dict) -> None:
    pytest_args = ["-q", "-n", "2", "-p", "no:cacheprovider", "-p", "no:randomly",
                   "-p", "no:hypothesispytest", "-p", "no:anyio"]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        if args.keep:
            shutil.rmtree(args.keep, ignore_errors=True)
            root = args.keep
            root.mkdir(parents=True)
        class_course(root, args.course)
        bare = [sys.executable, "-m", "pytest", *pytest_args, "-p", "no:shapetrace",
                "bare_grader_test.py"]
        graded = [sys.executable, "-m", "pytest", *pytest_args, "pyproject.toml",
                  f"--shapetrace-gradescope={root / 'results.json'}"]
        cpu_of([bare + ["--co"]], root, env)  # bytecode caches filled; then measured
        cpu_of([graded + ["--co"]], root, env)
        bare_runs, runs = [], []
        for _ in range(args.rounds):  # alternated, so that both see the machine's load alike
            bare_runs.append(cpu_of([bare], root, env))
            runs.append(cpu_of([graded], root, env))
        (bare_cpu, bare_wall, (bare_out,)), (cpu, wall, (out,)) = _median(bare_runs), _median(runs)
    distinct = len({name for name, _ in VERSIONS})
    print(f"grading a class of {args.course} submissions of one exercise ({distinct} distinct "
          f"files, each against the solution with every check); medians of {args.rounds} runs")
    last = lambda text: text.strip().splitlines()[-1] if text.strip() else "(no output)"
    print(f"  bare pytest grader (build + one forward): {last(bare_out)}; {bare_cpu:.1f} s CPU, "
          f"{bare_wall:.1f} s wall, {1000 * bare_cpu / args.course:.0f} ms CPU a submission")
    print(f"  pytest -n 2 with shapetrace: {last(out)}; {cpu:.1f} s CPU, {wall:.1f} s wall, "
          f"{1000 * cpu / args.course:.0f} ms CPU a submission")
    print(f"    CPU ratio: {cpu / bare_cpu:.2f}x (goal: <= 1.5)   wall ratio: "
          f"{wall / bare_wall:.2f}x")


def _median(runs: list[tuple]) -> tuple:
    """The run with the median CPU time."""
    return sorted(runs, key=lambda run: run[0])[len(runs) // 2]


def cpu_of(commands: list[list[str]], cwd: Path, env: dict) -> tuple[float, float, list[str]]:
    """(CPU seconds of the children, wall seconds, their stdouts), the commands run at once."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    procs = [subprocess.Popen(c, cwd=cwd, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for c in commands]
    outs = [p.communicate()[0] for p in procs]
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, outs


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--submissions", type=int, default=144)
    parser.add_argument("--no-reference", dest="reference", action="store_false",
                        help="grade without the comparison with a solution")
    parser.add_argument("--baseline", type=Path,
                        help="a second shapetrace source tree to grade with in the same run")
    parser.add_argument("--keep", type=Path, help="build the course repository here and keep it")
    parser.add_argument("--course", type=int, metavar="N",
                        help="grade a class of N submissions made from the course template's "
                             "starter against a bare pytest grader (goal <= 1.5x)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="with --course: runs of each grader, alternated (the medians count)")
    args = parser.parse_args()

    def env_for(tree: Path) -> dict:
        env = {**os.environ, "OMP_NUM_THREADS": "1",
               "PYTHONPATH": os.pathsep.join([str(tree), os.environ.get("PYTHONPATH", "")])}
        env.pop("GITHUB_ACTIONS", None)
        # as installed: bytecode caches written and read (PYTHONDONTWRITEBYTECODE recompiles
        # torch in every process), and no pytest plugins of a development environment
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        return env

    env = env_for(REPO)
    if args.course:
        grade_class(args, env)
        return
    pytest_args = ["-q", "-n", "2", "-p", "no:cacheprovider", "-p", "no:randomly",
                   "-p", "no:hypothesispytest", "-p", "no:anyio"]
    graders = [("this tree", env)]
    if args.baseline:
        graders.append((f"baseline {args.baseline}", env_for(args.baseline.resolve())))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        if args.keep:
            shutil.rmtree(args.keep, ignore_errors=True)
            root = args.keep
            root.mkdir(parents=True)
        files = course(root, args.submissions, args.reference)
        halves = [[str(f) for f in files[0::2]], [str(f) for f in files[1::2]]]
        # a first run of each fills the bytecode caches; the second is measured
        cpu_of([[sys.executable, "-c", BARE, "--bare", *files_[:1]] for files_ in halves], root,
               env)
        for _, grader_env in graders:
            cpu_of([[sys.executable, "-m", "pytest", *pytest_args, "--co"]], root, grader_env)
        bare_cpu, bare_wall, outs = cpu_of(
            [[sys.executable, "-c", BARE, "--bare", *half] for half in halves], root, env)
        minimal_cpu, _, _ = cpu_of(
            [[sys.executable, "-c", BARE, "--minimal", *half] for half in halves], root, env)
        built = sum(int(o.split()[-2]) for o in outs)
        ran = sum(int(o.split()[-1]) for o in outs)
        graded = []
        for name, grader_env in graders:
            cpu, wall, (out,) = cpu_of([[sys.executable, "-m", "pytest", *pytest_args]], root,
                                       grader_env)
            # the same session with every item deselected: start-up and collection only
            floor, _, _ = cpu_of([[sys.executable, "-m", "pytest", *pytest_args, "-k",
                                   "no_such_item"]], root, grader_env)
            graded.append((name, cpu, wall, out, floor))
    print(f"grading {args.submissions} submissions ({len(SOURCES)} distinct files)"
          f"{' with the reference comparison' if args.reference else ''}")
    print(f"  bare grader (build + one forward, 2 processes): {built} modules built, {ran} ran; "
          f"{bare_cpu:.1f} s CPU, {bare_wall:.1f} s wall")
    print(f"  minimal grader (the same, plus a solution's model built and run on the same inputs"
          f" and one more forward, the least the reference comparison and a behaviour check "
          f"do): {minimal_cpu:.1f} s CPU, {minimal_cpu / bare_cpu:.2f}x the bare grader")
    for name, cpu, wall, out, floor in graded:
        summary = out.strip().splitlines()[-1] if out.strip() else "(no output)"
        print(f"  pytest -n 2 with shapetrace ({name}): {summary}; {cpu:.1f} s CPU, "
              f"{wall:.1f} s wall")
        print(f"    of which start-up and collection (no item run): {floor:.1f} s CPU, "
              f"{floor / bare_cpu:.2f}x the bare grader")
        print(f"    CPU ratio: {cpu / bare_cpu:.2f}x (goal: <= 1.3)   wall ratio: "
              f"{wall / bare_wall:.2f}x")


if __name__ == "__main__":
    main()
