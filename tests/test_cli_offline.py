"""``python -m shapetrace`` reads the Hugging Face hub offline unless the user said otherwise: a
constructor that loads weights by name fails at once instead of downloading or waiting on the
network."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

MODULE = textwrap.dedent('''
    import os
    import torch.nn as nn


    class Loaded(nn.Module):
        """Refuses to be built unless the hub is read as the test expects."""

        def __init__(self, d_model):
            super().__init__()
            if os.environ.get("HF_HUB_OFFLINE") != os.environ["EXPECTED_OFFLINE"]:
                raise RuntimeError("HF_HUB_OFFLINE=" + repr(os.environ.get("HF_HUB_OFFLINE")))
            self.proj = nn.Linear(d_model, d_model)

        def forward(self, x):
            return self.proj(x)
''')


def _run(tmp_path, **env):
    path = tmp_path / "loaded.py"
    path.write_text(MODULE)
    environ = {k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"}
    environ.update(env)
    return subprocess.run([sys.executable, "-m", "shapetrace", str(path), "--no-trace"], cwd=ROOT,
                          env=environ, capture_output=True, text=True, timeout=300)


def test_the_hub_is_read_offline_by_default(tmp_path):
    result = _run(tmp_path, EXPECTED_OFFLINE="1")
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_setting_of_the_users_own_is_kept(tmp_path):
    result = _run(tmp_path, HF_HUB_OFFLINE="0", EXPECTED_OFFLINE="0")
    assert result.returncode == 0, result.stdout + result.stderr
