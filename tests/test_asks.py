"""When a constructor argument cannot be inferred, the target error gives an example that fits
it (a size, a small count, a list in a config file, a module no flag can make) and one command
line; the command it gives runs."""

from __future__ import annotations

import json
import shlex
import textwrap
from pathlib import Path

from shapetrace.frontends.cli import main


def write(path: Path, text: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return str(path)


def run_json(capsys, *argv: str) -> tuple[int, dict]:
    code = main([*argv, "--format", "json", "--no-trace"])
    return code, json.loads(capsys.readouterr().out)


CONV_BLOCK = """
    from torch import nn

    class ConvBlock(nn.Module):
        def __init__(self, hidden_channels, kernel_size):
            super().__init__()
            layer = getattr(nn, "Conv1d")  # a layer no reading of the source can name
            self.conv = layer(hidden_channels, hidden_channels, kernel_size,
                              padding=kernel_size // 2)

        def forward(self, x):
            return self.conv(x.transpose(1, 2)).transpose(1, 2)
"""


def test_sizes_and_counts_get_examples_and_a_command_that_runs(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "conv.py", CONV_BLOCK)
    code, report = run_json(capsys, "conv.py")
    error = report["targets"][0]["error"]
    assert code == 2
    # a kernel's size nothing sets is 3 (said in a note): the width alone is asked for
    assert "pass --init hidden_channels=C (C: probe sizes)" in error and "kernel_size" not in error
    command = error.split("; e.g. ")[-1]
    assert command == "python -m shapetrace conv.py::ConvBlock --init hidden_channels=C"
    argv = shlex.split(command)[3:]
    code, report = run_json(capsys, *argv)
    assert code == 0 and report["targets"][0]["error"] is None


STAGES = """
    from typing import Tuple

    from torch import nn

    class Stages(nn.Module):
        def __init__(self, dim, depths: Tuple[int, ...]):
            super().__init__()
            self.layers = nn.ModuleList(nn.Linear(dim, dim) for _ in range(sum(depths)))

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return x
"""


def test_a_tuple_argument_is_asked_for_in_a_config_file(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "stages.py", STAGES)
    code, report = run_json(capsys, "stages.py")
    error = report["targets"][0]["error"]
    assert "'depths' is a list or tuple, which --init cannot write" in error
    assert "shapetrace.toml" in error and "init = { depths = [...] }" in error
    assert "; e.g. python -m shapetrace" not in error  # no flag alone can give it
    write(tmp_path / "shapetrace.toml", """
        [[targets]]
        target = "stages.py::Stages"
        init = { dim = "C", depths = [1, 2] }
    """)
    code, report = run_json(capsys, "--config", "shapetrace.toml")
    assert code == 0 and report["targets"][0]["error"] is None


WRAPPER = """
    from torch import nn

    class Repeated(nn.Module):
        def __init__(self, encoder_layer, num_layers):
            super().__init__()
            self.layers = nn.ModuleList(encoder_layer for _ in range(num_layers))

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return x
"""


def test_a_module_argument_is_not_asked_for_as_a_flag(capsys, tmp_path):
    target = write(tmp_path / "wrapper.py", WRAPPER)
    code, report = run_json(capsys, target)
    error = report["targets"][0]["error"]
    assert "'encoder_layer' is a module, which no flag can make" in error
    assert "--init encoder_layer" not in error


PADDED = """
    from torch import nn

    class PaddedEncoder(nn.Module):
        def __init__(self, d_model, nhead):
            super().__init__()
            self.attn = nn.MultiheadAttention(d_model, nhead, batch_first=True)

        def forward(self, x, pad_mask):
            out, _ = self.attn(x, x, x, key_padding_mask=pad_mask)
            return out
"""


def test_a_padding_mask_is_made_in_its_own_shape(capsys, tmp_path):
    """A mask handed on as ``key_padding_mask`` is one flag per key of each sample: made so with
    nothing declared, as it is when declared."""
    target = write(tmp_path / "padded.py", PADDED)
    code, report = run_json(capsys, target)
    assert code == 0 and report["targets"][0]["error"] is None, report["targets"][0]["error"]
    code, report = run_json(capsys, target, "--input", "x=B,T,C", "--input", "pad_mask=B,T:bool")
    assert code == 0 and report["targets"][0]["error"] is None


PATCHES = """
    from torch import nn

    class PatchEmbed(nn.Module):
        def __init__(self, image_size, patch_size, dim):
            super().__init__()
            self.grid = image_size // patch_size
            self.proj = nn.Conv2d(3, dim, patch_size, stride=patch_size)

        def forward(self, img):
            return self.proj(img).flatten(2).transpose(1, 2)
"""


def test_image_and_patch_sizes_are_read_of_their_own_kind(capsys, tmp_path):
    target = write(tmp_path / "patches.py", PATCHES)
    code, report = run_json(capsys, target)
    (entry,) = report["targets"]
    # the image's side is read (16); the patch size nothing gives is a patch's side (2), never
    # a probe size
    assert entry["error"] is None and code == 0, entry["error"]
    assert any("patch_size=2, a patch's side" in n for n in entry["notes"]), entry["notes"]
    code, report = run_json(capsys, target, "--init", "image_size=32,patch_size=4,dim=C",
                            "--input", "img=B,3,32,32")
    assert code == 0 and report["targets"][0]["error"] is None


def test_no_command_is_offered_while_a_value_is_unknown(capsys, tmp_path):
    target = write(tmp_path / "wrap.py", """
        from torch import nn

        class Residual(nn.Module):
            def __init__(self, fn):
                super().__init__()
                self.fn = fn

            def forward(self, x):
                return self.fn(x) + x

        class Spectrogram(nn.Module):
            def __init__(self, n_mels):
                super().__init__()
                self.conv = getattr(nn, "Conv1d")(n_mels, 8, 3, padding=1)

            def forward(self, x):
                return self.conv(x)
    """)
    code, report = run_json(capsys, target)
    residual, spectrogram = (t["error"] for t in report["targets"])
    assert "'fn' is a module, which no flag can make" in residual
    assert "pass --init n_mels=VALUE" in spectrogram
    assert "python -m shapetrace" not in residual + spectrogram
