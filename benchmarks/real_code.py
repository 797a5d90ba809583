"""shapetrace on whole files of public repositories, nothing declared, beside the primer.

The primer (``../shared/primer``) checks listed classes at pinned commits. This runs
``python -m shapetrace FILE --format json --no-trace`` over every file a pattern picks in a
repository mirrored as the primer mirrors them (``fetch github:owner/name`` puts a bare git
directory at ``.mirror/owner+name/repo`` beside the checkout), extracted with ``git archive``
into a temporary directory (nothing is copied into this project), and counts each module class
of each file as clean, a finding (an error-level finding: presumed a false alarm on public code
until a numeric check shows otherwise) or a target error (a module shapetrace could not build
or feed; its message names the flag). Files that define no module and run nothing are counted
apart ("nothing to check").

    python benchmarks/real_code.py                      # the repositories below
    python benchmarks/real_code.py --only vit-pytorch   # some, by name
    python benchmarks/real_code.py --show               # and a line per finding and error

The repositories and commits are ours to choose; add any. Without a mirror a repository is
skipped with a line saying how to fetch it.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MIRRORS = Path(os.environ.get("PRIMER_MIRROR", ROOT.parent / ".mirror"))

#: (owner/name, commit, patterns of files to check, folder to run from inside the archive)
REPOSITORIES = [
    ("xmu-xiaoma666/External-Attention-pytorch", "d75848e40233ed56fa503c888472bab8b17c568c",
     ["model/attention/*.py"], ""),
    ("hyunwoongko/transformer", "6328654", ["models/*/*.py"], ""),
    ("lucidrains/vit-pytorch", "69d24fe",
     [f"vit_pytorch/{name}.py" for name in (
         "vit", "simple_vit", "cait", "deepvit", "local_vit", "cvt", "t2t", "pit", "levit",
         "mobile_vit", "cross_vit", "xcit", "max_vit", "twins_svt", "vivit", "vit_1d",
         "simple_vit_1d", "nest", "crossformer", "regionvit")], ""),
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="*", default=None, help="repositories whose name contains one of these")
    parser.add_argument("--show", action="store_true", help="a line per finding and target error")
    parser.add_argument("--timeout", type=int, default=120, help="seconds per file")
    args = parser.parse_args(argv)
    totals = {"clean": 0, "finding": 0, "target error": 0, "nothing to check": 0}
    for repo, commit, patterns, folder in REPOSITORIES:
        if args.only and not any(o in repo for o in args.only):
            continue
        mirror = MIRRORS / repo.replace("/", "+") / "repo"
        if not mirror.is_dir():
            print(f"{repo}: no mirror at {mirror} (fetch github:{repo})")
            continue
        counts = _run(repo, mirror, commit, patterns, folder, args)
        print(f"{repo}@{commit[:7]}: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
        for key, value in counts.items():
            totals[key] += value
    print("real code: " + ", ".join(f"{v} {k}" for k, v in totals.items()))
    return 0


def _run(repo, mirror, commit, patterns, folder, args) -> dict[str, int]:
    counts = {"clean": 0, "finding": 0, "target error": 0, "nothing to check": 0}
    with tempfile.TemporaryDirectory() as tmp:
        tops = sorted({pattern.split("/")[0] for pattern in patterns if "/" in pattern})
        archive = subprocess.run(["git", "--git-dir", str(mirror), "archive", commit, "--", *tops],
                                 capture_output=True, check=False)  # only the folders checked
        subprocess.run(["tar", "x", "-C", tmp], input=archive.stdout, check=False,
                       capture_output=True)
        base = Path(tmp) / folder
        files = sorted(str(p.relative_to(base)) for p in base.rglob("*.py")
                       if any(fnmatch.fnmatch(str(p.relative_to(base)), pat) for pat in patterns))
        for file in files:
            env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
            try:
                out = subprocess.run([sys.executable, "-m", "shapetrace", file, "--format", "json",
                                      "--no-trace", "--timeout", str(args.timeout)],
                                     capture_output=True, text=True, cwd=base, env=env,
                                     timeout=args.timeout * 4)
                report = json.loads(out.stdout)
            except (subprocess.TimeoutExpired, json.JSONDecodeError):
                counts["target error"] += 1
                if args.show:
                    print(f"  error {file}: no report")
                continue
            for target in report["targets"]:
                errors = [d for d in target["diagnostics"] if d["severity"] == "error"]
                if target.get("error") and "nothing to check" in target["error"]:
                    counts["nothing to check"] += 1
                elif target.get("error"):
                    counts["target error"] += 1
                    if args.show:
                        print(f"  error {target['target']}: {target['error'][:200]}")
                elif errors:
                    counts["finding"] += 1
                    if args.show:
                        print(f"  finding {target['target']}: " + "; ".join(
                            f"{d['rule']}@{d['line']}" for d in errors))
                else:
                    counts["clean"] += 1
    return counts


if __name__ == "__main__":
    raise SystemExit(main())
