"""A file that imports a package this machine does not have is still checked: the classes that
never use the package get their verdicts, each class that does is a target error naming the
package and the line, never a finding; a guarded import keeps the file's own fallback, and a
file whose top level needs the package says so as before."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import shapetrace as st
from shapetrace.drive.absent import AbsentPackage, NotInstalled, standing_in
from shapetrace.drive.targets import resolve_targets

DATA = Path(__file__).parent / "data" / "absent"
ROOT = Path(__file__).parent.parent


def _file_targets(path: Path) -> dict:
    """The JSON targets of ``python -m shapetrace path`` run in its folder, by class name."""
    out = subprocess.run([sys.executable, "-m", "shapetrace", str(path), "--format", "json",
                          "--no-trace"], capture_output=True, text=True, timeout=300, cwd=path.parent)
    return {t["target"].split("::")[-1]: t for t in json.loads(out.stdout)["targets"]}


def _results(name: str) -> dict:
    done = subprocess.run([sys.executable, "-m", "shapetrace", str(DATA / name), "--format", "json",
                           "--no-trace"], capture_output=True, text=True, cwd=ROOT, timeout=600)
    report = json.loads(done.stdout)
    return {t["target"].split("::")[-1]: t for t in report["targets"]}


@pytest.fixture(scope="module")
def blocks() -> dict:
    return _results("vision_blocks.py")


def test_every_class_of_the_file_gets_a_report(blocks):
    assert set(blocks) == {"Attention", "Block", "ScaledBlock", "TableMix", "Head", "ConfiguredHead"}


def test_code_handed_to_a_placeholder_is_read_as_nobody_s(blocks):
    error = blocks["ConfiguredHead"]["error"]
    assert error and "internal error" not in error, error


@pytest.mark.parametrize("cls", ["Attention", "Head"])
def test_a_class_that_never_uses_the_package_is_checked(blocks, cls):
    result = blocks[cls]
    assert result["error"] is None, result["error"]
    assert result["diagnostics"] == []
    assert any("not installed here" in n for n in result["notes"]), result["notes"]


@pytest.mark.parametrize("cls, named, line", [
    ("Block", "st_absent_layers.helpers.DropPath", "vision_blocks.py:41"),
    ("ScaledBlock", "st_absent_layers.helpers.LayerScale, a base of ScaledBlock", None),
    ("TableMix", "st_absent_registry.scales(...)", "vision_blocks.py:62"),
])
def test_a_class_that_uses_it_is_a_target_error_naming_it(blocks, cls, named, line):
    result = blocks[cls]
    assert result["diagnostics"] == []  # never a finding: the code runs where it is installed
    assert result["error"] and "which is not installed" in result["error"], result["error"]
    assert named in result["error"]
    assert "pip install st-absent-" in result["error"]
    if line is not None:
        assert line in result["error"]


def test_the_placeholders_leave_once_the_file_is_imported():
    targets = resolve_targets(str(DATA / "vision_blocks.py"), root=ROOT)
    assert [t.absent for t in targets][0] == ("st_absent_registry", "st_absent_layers")
    assert "st_absent_layers" not in sys.modules and "st_absent_registry" not in sys.modules
    with pytest.raises(ModuleNotFoundError):
        import st_absent_layers  # noqa: F401, pyflakes: the import is what is tested


def test_a_guarded_import_keeps_the_files_own_fallback():
    (target,) = resolve_targets(str(DATA / "guarded.py"), root=ROOT)
    assert target.absent == ()
    model = target.cls(8)
    assert model.fast is False  # the file's except branch ran: no placeholder stood in
    report = st.check(target.cls, target=target.display)
    assert report.targets[0].error is None and not report.diagnostics


def test_a_file_whose_top_level_needs_the_package_says_what_to_install():
    result = _results("needs_it.py")
    (only,) = result.values()
    assert "No module named 'st_absent_layers'" in only["error"]
    assert "pip install st-absent-layers" in only["error"]


def test_a_placeholder_refuses_every_use_after_the_import():
    with standing_in(["st_absent_demo"]):
        import st_absent_demo.ops as ops

        made = ops.kernel(3)  # while a file's top level runs: another placeholder
    assert isinstance(made, NotInstalled)
    with pytest.raises(AbsentPackage, match="st_absent_demo.ops.kernel"):
        assert ops.kernel(3)  # its result read: refused
    ops.kernel(3)  # a statement of its own, handed no tensor (a log): passed over
    with pytest.raises(AbsentPackage, match="st_absent_demo.ops.kernel"):
        ops.kernel(torch.ones(2))  # handed a tensor it could change: refused
    with pytest.raises(AbsentPackage):
        torch.ones(2) * made
    with pytest.raises(AbsentPackage):
        torch.matmul(torch.ones(2, 2), made)
    with pytest.raises(AbsentPackage):
        bool(made)
    assert "st_absent_demo" not in sys.modules


def test_a_course_s_own_targets_are_graded_as_the_file_imports():
    from shapetrace.base.errors import TargetError

    with pytest.raises(TargetError, match="No module named 'st_absent_registry'"):
        resolve_targets(str(DATA / "vision_blocks.py"), root=ROOT, stand_in=False)


@pytest.mark.parametrize("count", [8, 9])
def test_at_most_eight_packages_stand_in_for_one_file(tmp_path, count):
    """Eight packages not installed stand in; a ninth is past what one file may lack, and the
    file is a target error naming the first."""
    imports = "".join(f"import st_absent_many_{i}  # noqa: F401\n" for i in range(count))
    (tmp_path / "many.py").write_text(imports + (
        "import torch.nn as nn\n\n\nclass Plain(nn.Module):\n    def __init__(self, dim):\n"
        "        super().__init__()\n        self.proj = nn.Linear(dim, dim)\n\n"
        "    def forward(self, x):\n        return self.proj(x)\n"))
    out = subprocess.run([sys.executable, "-m", "shapetrace", str(tmp_path / "many.py"),
                          "--format", "json", "--no-trace"], capture_output=True, text=True,
                         timeout=300, cwd=tmp_path)
    (entry,) = json.loads(out.stdout)["targets"]
    if count == 8:
        assert entry["error"] is None and entry["target"].endswith("::Plain"), entry
    else:
        assert "No module named 'st_absent_many_0'" in entry["error"], entry


def test_a_src_layout_file_imports_its_siblings_by_the_package_s_name():
    """``src/tinypkg/model/blocks.py`` (no ``__init__.py`` anywhere) imports
    ``tinypkg.model.parts``: it is imported from the folder above its package."""
    path = Path(__file__).parent / "data" / "srclayout" / "src" / "tinypkg" / "model" / "blocks.py"
    (target,) = resolve_targets(f"{path}::GatedMix", root=ROOT)
    result = st.check(target.cls, target=target.display).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)


_PLAIN = ("class Plain(nn.Module):\n    def __init__(self, dim):\n        super().__init__()\n"
          "        self.proj = nn.Linear(dim, dim)\n\n    def forward(self, x):\n"
          "        return self.proj(x)\n\n\n")


def _installed_beside(tmp_path, monkeypatch, package: str, code: str, file: str, source_text: str) -> dict:
    """``package`` (``code``) installed in a site folder of its own, and the targets of the user
    file ``file`` (imports, then the class ``Plain``, then ``source_text``), by class name."""
    import shapetrace.base.source as source

    site = tmp_path / "site"
    (site / package).mkdir(parents=True)
    (site / package / "__init__.py").write_text(code)
    head, _, rest = source_text.partition("\n\n\n")
    (tmp_path / file).write_text(head + "\n\n\n" + _PLAIN + rest)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(source, "_INSTALLED", (*source._INSTALLED, str(site)))
    return {t.display.split("::")[-1]: t for t in resolve_targets(str(tmp_path / file), root=tmp_path)}


def test_an_installed_module_that_refuses_a_placeholder_stands_in_too(tmp_path, monkeypatch):
    """An installed library whose own import checks the missing package (a feature, where it
    was installed from: ``hasattr(board, '__file__')``) refuses the placeholder with an
    ImportError: that module stands in as well, the classes that never use it are checked, and
    one that does is a target error naming the package that is missing."""
    targets = _installed_beside(
        tmp_path, monkeypatch, "st_probe_logging",
        "import st_absent_board\n"
        "if not hasattr(st_absent_board, '__file__'):\n"
        "    raise ImportError('st_probe_logging needs st_absent_board 2.0 or above')\n"
        "def log(value):\n    return value\n", "logged.py",
        "import torch.nn as nn\nfrom st_probe_logging import log\n\n\n"
        "class Logged(Plain):\n    def forward(self, x):\n        return log(self.proj(x))\n")
    assert targets["Plain"].absent == ("st_absent_board", "st_probe_logging")
    assert "st_probe_logging" not in sys.modules  # it is importable again as it is installed
    plain = st.check(targets["Plain"].cls, target=targets["Plain"].display).targets[0]
    assert plain.error is None and not plain.diagnostics
    logged = st.check(targets["Logged"].cls, target=targets["Logged"].display).targets[0]
    assert logged.error and "'st_absent_board', which is not installed" in logged.error, logged.error
    assert "st_probe_logging.log" in logged.error and "logged.py:16" in logged.error


def test_a_dataclass_on_a_missing_base_says_what_it_needs(tmp_path):
    """A model-output dataclass built on a base of a package not installed has a constructor of
    its own (the dataclass's): building it is a target error naming the package, never an
    internal error."""
    (tmp_path / "outputs.py").write_text(
        "from dataclasses import dataclass\n\nimport torch\nfrom st_absent_outputs import ModelOutput\n\n\n"
        "@dataclass\nclass LayerOutput(ModelOutput):\n    hidden: torch.Tensor = None\n")
    (entry,) = _file_targets(tmp_path / "outputs.py").values()
    assert "internal error" not in entry["error"], entry["error"]
    assert "'st_absent_outputs', which is not installed" in entry["error"], entry["error"]


def test_a_name_the_installed_version_lacks_stands_in_alone(tmp_path, monkeypatch):
    """``from lib import old_name`` of an installed package whose version has no such name: the
    file is imported with that name standing in; a class that never uses it is checked, one
    that calls it is a target error naming the version, and a forward that fails inside that
    package (code written for its other version) is one too, never op-failed."""
    targets = _installed_beside(
        tmp_path, monkeypatch, "st_probe_versioned",
        "def settings(obj, name):\n    return object.__getattribute__(obj, name)\n", "versioned.py",
        "import torch.nn as nn\nfrom st_probe_versioned import retired_helper, settings\n\n\n"
        "class Retired(Plain):\n    def forward(self, x):\n        return retired_helper(self.proj(x))\n\n\n"
        "class Reads(Plain):\n    def forward(self, x):\n"
        "        return self.proj(x) * settings(self, 'gain')\n")
    assert targets["Plain"].absent == ("st_probe_versioned.retired_helper",)
    import st_probe_versioned

    assert not hasattr(st_probe_versioned, "retired_helper")  # the placeholder left the package
    results = {name: st.check(t.cls, target=t.display).targets[0] for name, t in targets.items()}
    assert results["Plain"].error is None and not results["Plain"].diagnostics
    assert "st_probe_versioned.retired_helper, which the version" in results["Retired"].error
    assert not results["Reads"].diagnostics, results["Reads"].diagnostics
    assert "written for another version of 'st_probe_versioned'" in results["Reads"].error
    assert "AttributeError" in results["Reads"].error


def test_a_registry_of_a_missing_package_keeps_the_classes_it_decorates(tmp_path):
    """``REGISTRY = Registry(...)``, ``REGISTRY.__doc__ = ...`` and ``@REGISTRY.register()`` at
    a file's top level, the registry a placeholder: the import finishes, and the decorated
    class is still the class, listed and checked."""
    (tmp_path / "registered.py").write_text(
        "import torch.nn as nn\nfrom st_absent_registry2 import Registry\n\n"
        "BLOCKS = Registry('BLOCKS')\nBLOCKS.__doc__ = 'blocks by name'\n\n\n"
        "@BLOCKS.register()\nclass Plain(nn.Module):\n    def __init__(self, dim):\n"
        "        super().__init__()\n        self.proj = nn.Linear(dim, dim)\n\n"
        "    def forward(self, x):\n        return self.proj(x)\n")
    (entry,) = _file_targets(tmp_path / "registered.py").values()
    assert entry["target"].endswith("::Plain") and entry["error"] is None, entry


def test_a_native_library_not_built_stands_in_and_a_gpu_is_asked_for(tmp_path):
    """``ctypes.CDLL('kernels/lib.so')`` at the top level, the library not built: the import
    finishes with a placeholder; a class that calls it is a target error saying to build it, one
    that asks for a CUDA stream says it needs a GPU (where there is none), never op-failed."""
    (tmp_path / "kernels.py").write_text(
        "import ctypes\n\nimport torch\nimport torch.nn as nn\n\n"
        "LIB = ctypes.CDLL('kernels/libmissing.so')\n\n\n" + _PLAIN +
        "class Fused(Plain):\n    def forward(self, x):\n        LIB.fused_linear(x.data_ptr())\n"
        "        return x\n\n\n"
        "class Streamed(Plain):\n    def forward(self, x):\n        torch.cuda.current_stream()\n"
        "        return self.proj(x)\n")
    targets = _file_targets(tmp_path / "kernels.py")
    assert targets["Plain"]["error"] is None and not targets["Plain"]["diagnostics"], targets["Plain"]
    fused = targets["Fused"]
    assert not fused["diagnostics"] and "native library kernels/libmissing.so (its fused_linear), which is not built" in fused["error"]
    streamed = targets["Streamed"]
    assert not streamed["diagnostics"], streamed["diagnostics"]
    if not torch.cuda.is_available():
        assert "needs a GPU" in streamed["error"], streamed["error"]


def test_class_keywords_of_a_missing_base_and_a_gpu_needed_to_import(tmp_path):
    """``class Config(BaseModel, frozen=True)`` on a base of a package not installed imports;
    a file whose top level asks for a CUDA device says it needs a GPU, not what stood in."""
    (tmp_path / "configured.py").write_text(
        "import torch.nn as nn\nfrom st_absent_models import BaseModel\n\n\n"
        "class Settings(BaseModel, frozen=True):\n    width: int = 8\n\n\n" + _PLAIN)
    targets = _file_targets(tmp_path / "configured.py")
    assert targets["Plain"]["error"] is None and not targets["Plain"]["diagnostics"], targets["Plain"]
    (tmp_path / "on_device.py").write_text(
        "import torch\nimport torch.nn as nn\nimport st_absent_tokens  # noqa: F401\n\n\n"
        "class Plain(nn.Module):\n    def __init__(self, dim, device=torch.cuda.current_device()):\n"
        "        super().__init__()\n        self.proj = nn.Linear(dim, dim)\n\n"
        "    def forward(self, x):\n        return self.proj(x)\n")
    (entry,) = _file_targets(tmp_path / "on_device.py").values()
    if not torch.cuda.is_available():
        assert "it needs a GPU to import" in entry["error"] and "st_absent_tokens" not in entry["error"], entry


def test_a_submodule_the_installed_version_lacks_stands_in_alone(tmp_path, monkeypatch):
    """``from lib._compat import inf`` of an installed package whose version has no such
    submodule (``torch._six``, removed since): that submodule stands in, a class that never
    uses it is checked, and one that does is a target error naming the version."""
    targets = _installed_beside(
        tmp_path, monkeypatch, "st_probe_moved", "VERSION = 2\n", "moved.py",
        "import torch.nn as nn\nfrom st_probe_moved._compat import inf\n\n\n"
        "class Clipped(Plain):\n    def forward(self, x):\n        return self.proj(x).clamp(max=inf)\n")
    assert targets["Plain"].absent == ("st_probe_moved._compat",)
    results = {name: st.check(t.cls, target=t.display).targets[0] for name, t in targets.items()}
    assert results["Plain"].error is None and not results["Plain"].diagnostics
    assert results["Clipped"].error and "st_probe_moved._compat" in results["Clipped"].error, \
        results["Clipped"].error
    assert "version" in results["Clipped"].error


def test_what_torch_removed_stands_in_as_it_was():
    """``torch._six``'s shims and ``_LinearWithBias`` (gone from torch 2) stand in as the values
    they were, not as placeholders: code written for torch 1.x is checked; nothing is left on
    torch afterwards."""
    import torch.nn.modules.linear as linear

    found = _results("removed_from_torch.py")
    for name in ("PatchEmbed", "OldAttention"):
        assert found[name]["error"] is None and found[name]["diagnostics"] == [], found[name]
    targets = {t.cls.__name__: t for t in resolve_targets(str(DATA / "removed_from_torch.py"), root=ROOT)}
    result = st.check(targets["OldAttention"].cls, target=targets["OldAttention"].display).targets[0]
    assert result.error is None and not result.diagnostics
    assert "torch._six" not in sys.modules and not hasattr(linear, "_LinearWithBias")
