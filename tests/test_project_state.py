"""Layers sized by a project's module of settings that only the top model sets
(``settings.width = ...`` in its constructor, which then refuses the probe sizes by an assert of
its own): the settings that failed constructor left are not what the next class is built with.
Each class sees the project's module globals as the file left them, so the layers are honest
target errors (the setting is missing), never a finding on sizes no one chose together; a
forward that reads a setting nothing set for its check is one too, naming where it is set."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

SETTINGS = "# sizes the model sets when it is built\n"

MODEL = textwrap.dedent('''
    import torch
    import torch.nn as nn

    import settings

    EXTRA = 6


    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(settings.width, settings.width)

        def forward(self, x):
            return torch.relu(self.proj(x)) + x


    class Scorer(nn.Module):
        def forward(self, x):
            return torch.softmax(x @ x.transpose(-2, -1) / settings.width ** 0.5, dim=-1) @ x


    class Stack(nn.Module):
        def __init__(self, d_time, n_layers):
            super().__init__()
            self.inp = nn.Linear(d_time, d_time)
            self.layers = nn.ModuleList([Layer() for _ in range(n_layers)])

        def forward(self, x, attn_mask):
            x = self.inp(x)
            for layer in self.layers:
                x = layer(x)
            scores = (x @ x.transpose(-2, -1)).masked_fill(attn_mask, float("-inf"))
            return torch.softmax(scores / x.size(-1) ** 0.5, dim=-1) @ x


    class Model(nn.Module):
        def __init__(self, d_model, d_k, n_heads, n_layers=2):
            super().__init__()
            settings.width = d_model + EXTRA
            assert d_k * n_heads == settings.width
            self.stack = Stack(settings.width, n_layers)

        def forward(self, x):
            t = x.size(1)
            causal = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
            return self.stack(x, causal)
''')


def test_globals_a_failed_constructor_set_do_not_size_the_next_class(tmp_path):
    (tmp_path / "settings.py").write_text(SETTINGS)
    (tmp_path / "model.py").write_text(MODEL)
    done = subprocess.run([sys.executable, "-m", "shapetrace", "model.py", "--format", "json",
                           "--no-trace"], capture_output=True, text=True, timeout=600, cwd=tmp_path)
    targets = {t["target"].split("::")[-1]: t for t in json.loads(done.stdout)["targets"]}
    for name in ("Layer", "Scorer", "Stack", "Model"):
        errors = [d for d in targets[name]["diagnostics"] if d["severity"] == "error"]
        assert not errors, (name, errors)
    assert "width" in targets["Layer"]["error"], targets["Layer"]["error"]
    assert "width" in targets["Stack"]["error"], targets["Stack"]["error"]
    # read in forward, never set for the check: where the code sets it is named
    assert "settings.width" in targets["Scorer"]["error"] and "model.py:" in targets["Scorer"]["error"], \
        targets["Scorer"]["error"]
