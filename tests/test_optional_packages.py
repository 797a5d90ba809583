"""A forward that needs a package its file imports only when it can (``drive/optional.py``):
a target error naming the package, never a finding against the code; a NameError of the
code's own (a typo) stays the code's error."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap

import pytest

from shapetrace.drive.optional import missing_optional, optional_imports

SOURCE = '''
import torch
import torch.nn as nn

try:
    import fastattn_not_installed_anywhere
    from fastattn_not_installed_anywhere.ops import fused as fused_kernel
except ImportError:
    print("no fastattn: the slow path only")

try:
    import json as _json_is_there
except (ImportError, OSError):
    _json_is_there = None


class FastOrSlow(nn.Module):
    """Attention that takes the installed kernel unless told otherwise."""

    def __init__(self, dim, heads=4, mode="kernel"):
        super().__init__()
        self.heads, self.mode = heads, mode
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        if self.mode == "kernel":
            y = fastattn_not_installed_anywhere.ops.attention(q, k, v)
        elif self.mode == "fused":
            y = fused_kernel(q, k, v)
        else:
            w = (q @ k.transpose(-2, -1) / (c // self.heads) ** 0.5).softmax(-1)
            y = w @ v
        return self.out(y.transpose(1, 2).reshape(b, t, c))


class Typo(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        return self.proj(x) + bias_not_defined_anywhere
'''


@pytest.fixture()
def module(tmp_path):
    path = tmp_path / "fast_or_slow.py"
    path.write_text(SOURCE)
    spec = importlib.util.spec_from_file_location("fast_or_slow_under_test", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _raised(fn):
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the exception is what is looked at
        return exc
    raise AssertionError("expected the forward to raise")


def test_the_imports_a_file_makes_only_when_it_can_are_read(module):
    found = optional_imports(module.__file__)
    assert found["fastattn_not_installed_anywhere"] == "fastattn_not_installed_anywhere"
    assert found["fused_kernel"] == "fastattn_not_installed_anywhere.ops"
    assert found["_json_is_there"] == "json"
    assert "torch" not in found and "nn" not in found


def test_a_name_its_failed_import_left_unbound_is_a_missing_package(module):
    import torch

    x = torch.randn(2, 5, 8)
    exc = _raised(lambda: module.FastOrSlow(8)(x))
    assert missing_optional(exc) == ("fastattn_not_installed_anywhere",
                                     "fastattn_not_installed_anywhere")
    exc = _raised(lambda: module.FastOrSlow(8, mode="fused")(x))
    assert missing_optional(exc) == ("fused_kernel", "fastattn_not_installed_anywhere.ops")
    assert module.FastOrSlow(8, mode="math")(x).shape == x.shape  # the other path runs


def test_a_typo_stays_the_codes_own_error(module):
    import torch

    exc = _raised(lambda: module.Typo(8)(torch.randn(2, 5, 8)))
    assert isinstance(exc, NameError) and missing_optional(exc) is None
    assert missing_optional(ValueError("x")) is None


def test_the_command_line_names_the_package_instead_of_a_finding(tmp_path):
    path = tmp_path / "fast_or_slow.py"
    path.write_text(textwrap.dedent(SOURCE))
    out = subprocess.run([sys.executable, "-m", "shapetrace", f"{path}::FastOrSlow", "--format",
                          "json", "--no-trace"], capture_output=True, text=True, cwd=tmp_path)
    report = json.loads(out.stdout)
    (target,) = report["targets"]
    assert not [d for d in target["diagnostics"] if d["severity"] == "error"]
    assert target["error"] and "fastattn_not_installed_anywhere" in target["error"]
    assert "pip install fastattn-not-installed-anywhere" in target["error"]
    out = subprocess.run([sys.executable, "-m", "shapetrace", f"{path}::Typo", "--format",
                          "json", "--no-trace"], capture_output=True, text=True, cwd=tmp_path)
    (target,) = json.loads(out.stdout)["targets"]
    assert [d["rule"] for d in target["diagnostics"] if d["severity"] == "error"] == ["op-failed"]
