"""Every file gets a report: files imported as their package imports them, a file that cannot be
imported reported as its target's error in every format, and one class's failure (shapetrace's
own included) kept to that class."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from shapetrace.frontends.cli import main

PACKAGED = Path(__file__).parent / "data" / "packaged"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main([*argv, "--no-trace"])
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys, *argv: str) -> tuple[int, dict, str]:
    code, out, err = run(capsys, *argv, "--format", "json")
    return code, json.loads(out), err


def write(path: Path, text: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return str(path)


@pytest.fixture(autouse=True)
def _forget_fixture_packages():
    """The fixture packages are imported under their own names: forget them after each test,
    so that every test imports them as a fresh run would."""
    yield
    for name in [n for n in sys.modules if n.split(".")[0] in ("tinylib", "heavyinit", "proj", "mypkg")]:
        sys.modules.pop(name, None)


# Files inside packages ------------------------------------------------------------------------


def test_file_with_relative_imports_is_checked_inside_its_package(capsys, monkeypatch):
    monkeypatch.chdir(PACKAGED.parent.parent.parent)  # the project root: paths as a user types
    target = "tests/data/packaged/tinylib/blocks/attention.py"
    code, report, _ = run_json(capsys, target)
    (result,) = report["targets"]
    assert result["target"] == f"{target}::SelfAttention"  # the path as given
    assert result["error"] is None
    assert result["ok"] and code == 0


def test_package_whose_init_fails_still_gives_the_file_its_siblings(capsys):
    """heavyinit/__init__.py imports a module that is not installed; mlp.py needs only its
    sibling activations.py, as the package's own tests would import it."""
    code, report, _ = run_json(capsys, str(PACKAGED / "heavyinit" / "mlp.py"))
    (result,) = report["targets"]
    assert result["error"] is None and result["ok"], result["error"]


def test_namespace_folders_under_a_marked_project(capsys, tmp_path):
    """No __init__.py anywhere, but a setup.py at the project root: relative imports resolve
    from there, and so do absolute imports of the project's own packages."""
    write(tmp_path / "setup.py", "")
    write(tmp_path / "proj" / "nn" / "helpers.py", """
        def double(x):
            return 2 * x
    """)
    write(tmp_path / "proj" / "util.py", """
        SCALE = 3
    """)
    target = write(tmp_path / "proj" / "nn" / "block.py", """
        from torch import nn
        from proj.util import SCALE
        from .helpers import double

        class Block(nn.Module):
            def __init__(self, n_embd):
                super().__init__()
                self.lin = nn.Linear(n_embd, n_embd)

            def forward(self, x):
                return double(self.lin(x)) * SCALE
    """)
    code, report, _ = run_json(capsys, target)
    (result,) = report["targets"]
    assert result["error"] is None and result["ok"], result["error"]


def test_two_files_of_one_namespace_project_in_one_run(capsys, tmp_path, monkeypatch):
    """Folders without __init__.py imported by their full names (``from proj.nn.helpers
    import ...``), two files of them in one run: the first file's imports are taken out of
    ``sys.modules`` after its check, the parent before its child, and the second file still
    imports its siblings (a namespace package's path read whole looks its parent up)."""
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "proj" / "nn" / "helpers.py", """
        from torch import nn

        class Mix(nn.Module):
            def __init__(self, n_embd):
                super().__init__()
                self.lin = nn.Linear(n_embd, n_embd)

            def forward(self, x):
                return self.lin(x)
    """)
    for name in ("first", "second"):
        write(tmp_path / "proj" / "nn" / f"{name}.py", """
            from torch import nn
            from proj.nn.helpers import Mix

            class Block(nn.Module):
                def __init__(self, n_embd):
                    super().__init__()
                    self.mix = Mix(n_embd)

                def forward(self, x):
                    return x + self.mix(x)
        """)
    code, report, _ = run_json(capsys, "proj/nn/first.py", "proj/nn/second.py")
    blocks = {r["target"]: r for r in report["targets"] if r["target"].endswith("::Block")}
    assert set(blocks) == {"proj/nn/first.py::Block", "proj/nn/second.py::Block"}
    for result in blocks.values():
        assert result["error"] is None and result["ok"], result["error"]


def test_two_students_packages_of_one_name_keep_their_own_siblings(tmp_path):
    """alice/mypkg and bob/mypkg, each attn.py importing ``.helpers``: each gets its own, in
    one process, in any order, with and without the pytest plugin's isolation."""
    from shapetrace.drive.isolation import Isolation
    from shapetrace.drive.targets import resolve_targets

    for student in ("alice", "bob"):
        write(tmp_path / student / "mypkg" / "__init__.py", "")
        write(tmp_path / student / "mypkg" / "helpers.py", f"WHO = {student!r}\n")
        write(tmp_path / student / "mypkg" / "attn.py", """
            from torch import nn
            from .helpers import WHO

            class Attn(nn.Module):
                who = WHO

                def forward(self, x):
                    return x
        """)
    for student in ("alice", "bob", "alice"):
        (target,) = resolve_targets(str(tmp_path / student / "mypkg" / "attn.py"))
        assert target.cls.who == student
    for name in [n for n in sys.modules if n.split(".")[0] == "mypkg"]:
        del sys.modules[name]
    for student in ("bob", "alice"):
        with Isolation():
            (target,) = resolve_targets(str(tmp_path / student / "mypkg" / "attn.py"))
        assert target.cls.who == student
    assert not [name for name in sys.modules if name.split(".")[0] == "mypkg"]


def test_bare_import_of_a_module_beside_the_files_folder(capsys, tmp_path):
    """``import utils`` in model/net.py, with utils.py in the folder above model/ (a repository
    whose scripts run from its root): found there."""
    write(tmp_path / "utils.py", """
        def halve(x):
            return x / 2
    """)
    target = write(tmp_path / "model" / "net.py", """
        from torch import nn
        import utils

        class Net(nn.Module):
            def __init__(self, n_embd):
                super().__init__()
                self.lin = nn.Linear(n_embd, n_embd)

            def forward(self, x):
                return utils.halve(self.lin(x))
    """)
    code, report, _ = run_json(capsys, target)
    assert report["targets"][0]["error"] is None, report["targets"][0]["error"]


def test_a_module_named_as_its_package_imports_the_package(capsys, tmp_path, monkeypatch):
    """``shifter/shifter.py`` importing ``shifter.rotary`` (the package, run from the project's
    root, which is on ``sys.path`` already): the package is found, not the file itself."""
    write(tmp_path / "shifter" / "__init__.py", "from shifter.shifter import Shifter\n")
    write(tmp_path / "shifter" / "rotary.py", """
        def turn(x):
            return x.flip(-1)
    """)
    target = write(tmp_path / "shifter" / "shifter.py", """
        from torch import nn
        from shifter.rotary import turn

        class Shifter(nn.Module):
            def __init__(self, n_embd):
                super().__init__()
                self.lin = nn.Linear(n_embd, n_embd)

            def forward(self, x):
                return turn(self.lin(x))
    """)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    code, report, _ = run_json(capsys, target)
    assert report["targets"][0]["error"] is None, report["targets"][0]["error"]


def test_loose_file_with_a_relative_import_still_says_how_to_import_it(capsys, tmp_path):
    target = write(tmp_path / "loose" / "attn.py", """
        from .helpers import nothing
    """)
    code, report, err = run_json(capsys, target)
    assert code == 2
    assert "no known parent package" in report["targets"][0]["error"]


# A file that cannot be imported: a report all the same -----------------------------------------


MISSING = """
    import torch
    import not_a_real_package_here

    WIDTH = int(not_a_real_package_here.width)  # the top level needs it: no import without it

    class Attention(torch.nn.Module):
        def forward(self, x):
            return x
"""


@pytest.mark.parametrize("fmt", ["json", "text", "html", "svg"])
def test_import_failure_is_a_report_in_every_format(capsys, tmp_path, fmt):
    target = write(tmp_path / "attn.py", MISSING)
    code, out, err = run(capsys, target, "--format", fmt)
    assert code == 2
    assert out.strip(), "a report, never an empty stdout"
    assert "not_a_real_package_here" in out
    assert err.count("\n") == 1 and "not_a_real_package_here" in err  # and one line on stderr
    if fmt == "json":
        (result,) = json.loads(out)["targets"]
        assert result["target"] == target and not result["ok"]
        assert "pip install not-a-real-package-here" in result["error"]


def test_a_missing_module_of_the_users_own_is_not_called_a_package_to_install(capsys, tmp_path):
    write(tmp_path / "mylib" / "__init__.py", "")
    target = write(tmp_path / "attn.py", """
        import torch
        from mylib.nothere import helper

        class Attention(torch.nn.Module):
            def forward(self, x):
                return x
    """)
    code, report, _ = run_json(capsys, target)
    error = report["targets"][0]["error"]
    assert code == 2 and "mylib.nothere" in error and "pip install" not in error


def test_a_target_naming_no_file_stays_one_line(capsys):
    code, out, err = run(capsys, "no/such/file.py", "--format", "json")
    assert code == 2 and out == "" and "no such file" in err


# One class, one verdict ------------------------------------------------------------------------

TWO_CLASSES = """
    from torch import nn

    class First(nn.Module):
        def __init__(self, n_embd):
            super().__init__()
            self.lin = nn.Linear(n_embd, n_embd)

        def forward(self, x):
            return self.lin(x)

    class Second(nn.Module):
        def __init__(self, n_embd):
            super().__init__()
            self.lin = nn.Linear(n_embd, n_embd)

        def forward(self, x):
            return self.lin(x)
"""


def test_shapetrace_failing_on_one_class_leaves_the_others_checked(capsys, tmp_path, monkeypatch):
    from shapetrace.drive import check as check_module

    real = check_module.make_plan

    def failing_for_first(request):
        if request.display.endswith("::First"):
            raise KeyError("a reading shapetrace could not make")
        return real(request)

    monkeypatch.setattr(check_module, "make_plan", failing_for_first)
    target = write(tmp_path / "two.py", TWO_CLASSES)
    code, report, err = run_json(capsys, target)
    first, second = report["targets"]
    assert first["error"].startswith(f"internal error while checking {target}::First: KeyError")
    assert not first["ok"]
    assert second["error"] is None and second["ok"]
    assert code == 2
    assert "internal error while checking" in err


def test_internal_error_keeps_the_traceback_for_debug(tmp_path, monkeypatch):
    from shapetrace.drive import check as check_module

    def failing(request):
        raise KeyError("a reading shapetrace could not make")

    monkeypatch.setattr(check_module, "make_plan", failing)
    target = write(tmp_path / "two.py", TWO_CLASSES)
    with pytest.raises(KeyError):
        main([target, "--debug"])


def test_class_whose_constructor_crashes_beside_a_good_class(capsys, tmp_path):
    target = write(tmp_path / "mixed.py", """
        from torch import nn

        class Broken(nn.Module):
            def __init__(self, n_embd):
                super().__init__()
                raise RuntimeError("needs a checkpoint on disk")

            def forward(self, x):
                return x

        class Fine(nn.Module):
            def __init__(self, n_embd):
                super().__init__()
                self.lin = nn.Linear(n_embd, n_embd)

            def forward(self, x):
                return self.lin(x)
    """)
    code, report, _ = run_json(capsys, target)
    broken, fine = report["targets"]
    assert "needs a checkpoint on disk" in broken["error"]
    assert fine["error"] is None and fine["ok"]
    assert code == 2


def test_exit_called_by_one_class_is_that_class_s_error(capsys, tmp_path):
    target = write(tmp_path / "quitter.py", """
        import sys
        from torch import nn

        class Quits(nn.Module):
            def forward(self, x):
                sys.exit(3)

        class Stays(nn.Module):
            def __init__(self, n_embd):
                super().__init__()
                self.lin = nn.Linear(n_embd, n_embd)

            def forward(self, x):
                return self.lin(x)
    """)
    code, report, err = run_json(capsys, target)
    quits, stays = report["targets"]
    assert "called exit(3)" in quits["error"] and "__main__" in quits["error"]
    assert stays["error"] is None and stays["ok"]
    assert code == 2


def test_an_extension_of_the_project_that_is_not_built_says_so(capsys, tmp_path):
    write(tmp_path / "fastpath" / "__init__.py", "from .fastpath.core import kernel\n")
    write(tmp_path / "fastpath" / "setup.py", "")
    write(tmp_path / "fastpath" / "core.pyx", "")
    target = write(tmp_path / "model.py", """
        import torch
        import fastpath

        class Model(torch.nn.Module):
            def forward(self, x):
                return x
    """)
    code, report, _ = run_json(capsys, target)
    error = report["targets"][0]["error"]
    assert code == 2 and "not built" in error and "setup.py" in error
    assert "pip install" not in error


def test_a_relative_import_past_a_folder_without_init(capsys, tmp_path):
    """``from ..functions import act`` in models/ops/modules/attn.py, where ops/ has no
    ``__init__.py`` (a namespace folder inside the models package): imported as its package
    does, from above that folder."""
    write(tmp_path / "models" / "__init__.py", "")
    write(tmp_path / "models" / "ops" / "functions" / "__init__.py", """
        def act(x):
            return x.relu()
    """)
    write(tmp_path / "models" / "ops" / "modules" / "__init__.py", "")
    target = write(tmp_path / "models" / "ops" / "modules" / "attn.py", """
        from torch import nn
        from ..functions import act

        class Mixer(nn.Module):
            def __init__(self, n_embd):
                super().__init__()
                self.lin = nn.Linear(n_embd, n_embd)

            def forward(self, x):
                return act(self.lin(x))
    """)
    code, report, _ = run_json(capsys, target)
    assert report["targets"][0]["error"] is None, report["targets"][0]["error"]


def test_a_package_half_imported_before_a_missing_one_is_imported_anew(capsys, tmp_path):
    """A file of a package whose ``__init__`` imports it back, through a namespace subpackage
    (ops/ without ``__init__.py``) that needs a compiled extension not built here: each try
    stops at another missing package, and the next imports the package anew (no subpackage left
    behind without its parent)."""
    write(tmp_path / "models" / "__init__.py", "from .detr import build\n")
    write(tmp_path / "models" / "detr.py", """
        from .deformable import Deformable

        def build(n_embd):
            return Deformable(n_embd)
    """)
    write(tmp_path / "models" / "ops" / "functions" / "__init__.py", """
        import st_absent_kernels_ext

        def act(x):
            return x.relu()
    """)
    write(tmp_path / "models" / "ops" / "modules" / "__init__.py", "from .attn import Mixer\n")
    write(tmp_path / "models" / "ops" / "modules" / "attn.py", """
        from torch import nn
        from ..functions import act

        class Mixer(nn.Module):
            def __init__(self, n_embd):
                super().__init__()
                self.lin = nn.Linear(n_embd, n_embd)

            def forward(self, x):
                return self.lin(x)
    """)
    target = write(tmp_path / "models" / "deformable.py", """
        import st_absent_vision
        from torch import nn
        from models.ops.modules import Mixer

        class Deformable(nn.Module):
            def __init__(self, n_embd):
                super().__init__()
                self.mix = Mixer(n_embd)

            def forward(self, x):
                return x + self.mix(x)
    """)
    code, report, _ = run_json(capsys, target)
    assert report["targets"][0]["error"] is None, report["targets"][0]["error"]


def test_a_version_check_of_a_package_standing_in_passes(capsys, tmp_path):
    target = write(tmp_path / "checked.py", """
        import st_absent_vision
        from torch import nn

        if float(st_absent_vision.__version__[:3]) < 0.5:
            raise ImportError("st_absent_vision 0.5 or later is needed")

        class Plain(nn.Module):
            def __init__(self, n_embd):
                super().__init__()
                self.lin = nn.Linear(n_embd, n_embd)

            def forward(self, x):
                return self.lin(x)
    """)
    code, report, _ = run_json(capsys, target)
    assert report["targets"][0]["error"] is None, report["targets"][0]["error"]


def test_a_folder_its_files_import_by_its_own_name_is_their_package(capsys, tmp_path):
    """``model/`` without __init__.py, its files importing ``model.utils`` and holding a
    ``model/model.py``: the folder is their package, which model.py does not shadow."""
    write(tmp_path / "model" / "utils.py", """
        SCALE = 3
    """)
    write(tmp_path / "model" / "model.py", """
        from model.utils import SCALE
    """)
    target = write(tmp_path / "model" / "encoder.py", """
        from torch import nn
        from model.utils import SCALE

        class Encoder(nn.Module):
            def __init__(self, n_embd):
                super().__init__()
                self.lin = nn.Linear(n_embd, n_embd)

            def forward(self, x):
                return self.lin(x) * SCALE
    """)
    code, report, _ = run_json(capsys, f"{target}::Encoder")
    (result,) = report["targets"]
    assert result["error"] is None and result["ok"], result["error"]


def test_a_file_that_parses_its_arguments_on_import_reads_its_own_defaults(capsys, tmp_path):
    """``args = parser.parse_args()`` at a file's top reads the file's own (empty) argument
    list, as ``python file.py`` gives it, never shapetrace's flags; one that requires an
    argument still stops its import, said as such."""
    target = write(tmp_path / "trainer.py", """
        import argparse
        from torch import nn

        parser = argparse.ArgumentParser()
        parser.add_argument("--lr", type=float, default=1e-3)
        args = parser.parse_args()

        class Head(nn.Module):
            def __init__(self, n_embd):
                super().__init__()
                self.lin = nn.Linear(n_embd, n_embd)

            def forward(self, x):
                return self.lin(x)
    """)
    code, report, err = run_json(capsys, target, "--no-trace")
    (head,) = report["targets"]
    assert head["error"] is None and head["ok"]
    required = write(tmp_path / "needs_args.py", """
        import argparse
        from torch import nn

        parser = argparse.ArgumentParser()
        parser.add_argument("--data", required=True)
        args = parser.parse_args()

        class Head(nn.Module):
            def forward(self, x):
                return x
    """)
    code, report, err = run_json(capsys, required)
    assert "called exit(2)" in report["targets"][0]["error"]


def test_a_forward_whose_own_check_asks_for_an_input_left_at_its_default_is_asked_for(capsys, tmp_path):
    """A forward whose inputs all default to None and whose code refuses a call without one was
    called without inputs by shapetrace: a target error asking for them, never an op-failed
    finding; where the code says which it demands one of (``if input_ids is None and
    inputs_embeds is None: raise``, or ``if``/``elif`` branches on each ending in ``else:
    raise``), the first of them is given and the module is checked."""
    target = write(tmp_path / "hub_style.py", """
        from torch import nn

        class Nested(nn.Module):
            def __init__(self, vocab_size=32, hidden_size=16):
                super().__init__()
                self.embed = nn.Embedding(vocab_size, hidden_size)
                self.proj = nn.Linear(hidden_size, hidden_size)

            def forward(self, input_ids=None, inputs_embeds=None):
                if input_ids is None:
                    if inputs_embeds is None:
                        raise ValueError("You have to specify either input_ids or inputs_embeds")
                h = self.embed(input_ids) if inputs_embeds is None else inputs_embeds
                return self.proj(h)

        class EitherOne(Nested):
            def forward(self, input_ids=None, inputs_embeds=None):
                if input_ids is None and inputs_embeds is None:
                    raise ValueError("You have to specify either input_ids or inputs_embeds")
                h = self.embed(input_ids) if inputs_embeds is None else inputs_embeds
                return self.proj(h)

        class Branches(Nested):
            def forward(self, input_ids=None, inputs_embeds=None):
                if input_ids is not None and inputs_embeds is not None:
                    raise ValueError("not both")
                elif input_ids is not None:
                    h = self.embed(input_ids)
                elif inputs_embeds is not None:
                    h = inputs_embeds
                else:
                    raise ValueError("You have to specify either input_ids or inputs_embeds")
                return self.proj(h)
    """)
    code, report, err = run_json(capsys, target, "--no-trace")
    nested, either, branches = report["targets"]
    assert not [d for d in nested["diagnostics"] if d["severity"] == "error"]
    assert "left at their defaults" in nested["error"] and "input_ids" in nested["error"]
    for checked in (either, branches):
        assert checked["error"] is None and checked["ok"], checked["error"]
