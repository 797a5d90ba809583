"""Building a module the way its own code would be called: keyword-only forwards, ..."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

DATA = Path(__file__).parent / "data" / "building"


def _json(target: str, *flags: str) -> dict:
    out = subprocess.run([sys.executable, "-m", "shapetrace", target, "--format", "json",
                          "--no-trace", *flags], capture_output=True, text=True, timeout=300)
    assert out.returncode in (0, 1), out.stderr
    (entry,) = json.loads(out.stdout)["targets"]
    return entry


def test_keyword_only_inputs_are_passed_by_keyword():
    entry = _json(f"{DATA / 'keyword_only.py'}::KeywordAttention")
    assert entry["error"] is None and entry["ok"], entry
    assert [d["rule"] for d in entry["diagnostics"] if d["severity"] == "error"] == []


def test_a_keyword_only_forward_with_a_bug_is_found():
    entry = _json(f"{DATA / 'keyword_only.py'}::KeywordAttentionBuggy")
    assert entry["error"] is None
    assert [d["rule"] for d in entry["diagnostics"] if d["severity"] == "error"] \
        == ["attention-scale"]
    assert "# BUG" in (DATA / "keyword_only.py").read_text().splitlines()[
        entry["diagnostics"][0]["line"] - 1]


def test_a_checked_instance_keeps_its_own_forward():
    import importlib.util

    import shapetrace as st

    spec = importlib.util.spec_from_file_location("keyword_only", DATA / "keyword_only.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    attention = module.KeywordAttention(11, 143)
    st.check(attention, inputs=["query=T,B,C", "key=S,B,C", "value=S,B,C"])
    assert "forward" not in attention.__dict__


def test_an_image_input_is_read_from_the_first_convolution():
    entry = _json(f"{DATA / 'images.py'}::ChannelGate")
    assert entry["error"] is None and entry["ok"], entry
    assert any("x read as an image (B, 32, 8, 8), the 32 channels its first convolution takes"
               in note for note in entry["notes"])


def test_an_image_module_with_a_bug_is_checked_as_an_image():
    clean = _json(f"{DATA / 'images.py'}::PixelAttention")
    assert clean["error"] is None and clean["ok"], clean
    entry = _json(f"{DATA / 'images.py'}::PixelAttentionBuggy")
    assert entry["error"] is None
    (found,) = [d for d in entry["diagnostics"] if d["severity"] == "error"]
    assert found["rule"] == "reshape-jumble"
    assert "# BUG" in (DATA / "images.py").read_text().splitlines()[found["line"] - 1]


def test_an_input_unpacked_to_five_sizes_is_read_as_a_volume():
    """``B, C, D, H, W = x.shape`` with no 3-D layer to say the channels: a volume of the
    width's channels, and the module runs on it."""
    entry = _json(f"{DATA / 'images.py'}::Volume")
    assert entry["error"] is None and entry["ok"], entry
    assert any(n.startswith("x read as a video (B, C, T, 8, 8), the width") for n in entry["notes"])


def test_an_image_read_at_the_constructors_own_size():
    """``img_size=16`` in the constructor sizes the image a (B, T, C) guess is read as."""
    entry = _json(f"{DATA.parent / 'styles' / 'vision.py'}::VisionTransformer")
    assert entry["error"] is None and entry["ok"], entry
    assert any("x read as an image (B, 3, 16, 16)" in note for note in entry["notes"])


def test_an_image_reading_that_fails_later_is_a_target_error_not_a_finding():
    out = subprocess.run([sys.executable, "-m", "shapetrace", f"{DATA / 'images.py'}::OddGridEmbed",
                          "--format", "json"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 2, out.stdout
    (entry,) = json.loads(out.stdout)["targets"]
    assert entry["diagnostics"] == [] and "--input" in entry["error"] and "'x'" in entry["error"]
    ok = _json(f"{DATA / 'images.py'}::OddGridEmbed", "--input", "x=B,3,28,28")
    assert ok["error"] is None and ok["ok"], ok


def test_an_image_of_a_fixed_grid_is_read_at_the_side_that_fits_it():
    found = _json(f"{DATA / 'images.py'}::FixedGridEmbed")
    assert found["error"] is None and found["ok"], found
    assert any("read at 32x32" in n for n in found["notes"]), found["notes"]


def test_paths_are_shown_as_given_when_the_forward_changes_directory(tmp_path):
    """A forward that calls os.chdir: the report names the file as the user gave it, and the
    next target (a relative path) is still found."""
    import os

    root = Path(__file__).parent.parent
    target = "tests/data/building/moves_dir.py::WandersOff"
    out = subprocess.run([sys.executable, "-m", "shapetrace", target, target.replace(
        "moves_dir.py::WandersOff", "keyword_only.py::KeywordAttention"), "--no-trace"],
        capture_output=True, text=True, timeout=300, cwd=root,
        env={**os.environ, "COLUMNS": "200"})
    assert out.returncode == 1, out.stderr
    assert "tests/data/building/moves_dir.py:17" in out.stdout
    assert "keyword_only.py::KeywordAttention" in out.stdout and "could not" not in out.stdout


def test_a_module_with_parameters_shaped_for_images_is_read_as_one():
    entry = _json(f"{DATA / 'images.py'}::ChannelNorm")
    assert entry["error"] is None and entry["ok"], entry
    assert any("x read as an image" in note for note in entry["notes"])


def test_an_input_whose_four_sizes_are_unpacked_is_read_with_its_width_last():
    """(B, P, N, C) is what the forward unpacks, and its linear layer takes the width last: the
    grid reading (B, 8, 8, C) runs it, with a note naming the flag; never an op-failed finding."""
    out = subprocess.run([sys.executable, "-m", "shapetrace",
                          f"{DATA / 'images.py'}::PatchesOfPixels", "--format", "json"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-2000:]
    (entry,) = json.loads(out.stdout)["targets"]
    assert entry["error"] is None and entry["diagnostics"] == []
    assert any("channels last" in n and "--input x=B,H,W,C" in n for n in entry["notes"]), entry["notes"]
    ok = _json(f"{DATA / 'images.py'}::PatchesOfPixels", "--input", "x=B,3,T,C")
    assert ok["error"] is None and ok["ok"], ok


def test_keys_and_values_read_as_long_as_the_queries():
    entry = _json(f"{DATA / 'same_length.py'}::ValuesMixedBack")
    assert entry["error"] is None and entry["ok"], entry
    assert any("keys, values read as long as the queries (T)" in note for note in entry["notes"])


def test_a_square_number_of_tokens_for_a_pattern_that_folds_a_grid():
    entry = _json(f"{DATA / 'patterns.py'}::GridMix")
    assert entry["error"] is None and entry["ok"], entry
    assert any("T=16, a square number of tokens" in note for note in entry["notes"])


def test_an_einops_pattern_that_wants_four_axes_reads_the_guess_as_an_image():
    out = subprocess.run([sys.executable, "-m", "shapetrace", f"{DATA / 'patterns.py'}::ChannelGate",
                          "--format", "json"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout
    (entry,) = json.loads(out.stdout)["targets"]
    assert entry["error"] is None and entry["diagnostics"] == []
    assert any(n.startswith("x read as an image (B, C, 8, 8)") for n in entry["notes"]), entry["notes"]
    ok = _json(f"{DATA / 'patterns.py'}::ChannelGate", "--input", "x=B,C,5,3")
    assert ok["error"] is None and ok["ok"], ok


def test_a_module_that_cuts_images_into_patches_is_not_fed_vectors():
    """``nn.Unfold`` takes an image: the guessed vectors are read as one, with the channels
    the linear layer after the unfold takes (27 features of 3x3 patches: 3 channels), and the
    module runs on the image given."""
    entry = _json(f"{DATA / 'images.py'}::PatchTokens")
    assert entry["error"] is None and entry["ok"], entry
    assert any(n.startswith("x read as an image (B, 3, 8, 8), the 3 channels its first layer after "
                            "its nn.Unfold takes") for n in entry["notes"]), entry["notes"]
    ok = _json(f"{DATA / 'images.py'}::PatchTokens", "--input", "x=B,3,8,8")
    assert ok["error"] is None and ok["ok"], ok


def test_an_image_read_from_the_einops_layer_that_cuts_it_into_patches():
    entry = _json(f"{DATA / 'images.py'}::PatchViT")
    assert entry["error"] is None and entry["ok"], entry
    side = next(int(n.split("=")[1].split(",")[0]) for n in entry["notes"] if n.startswith("image_size="))
    assert any(n.startswith(f"img read as (B, 3, {side}, {side}) from the layer forward first hands it to")
               for n in entry["notes"]), entry["notes"]


def test_an_image_module_no_image_runs_is_a_target_error():
    out = subprocess.run([sys.executable, "-m", "shapetrace", f"{DATA / 'images.py'}::OddGridEmbed",
                          "--format", "json"], capture_output=True, text=True, timeout=300)
    (entry,) = json.loads(out.stdout)["targets"]
    assert out.returncode == 2 and "which works on images" in entry["error"]


def test_an_image_read_at_the_side_a_settings_object_says():
    """A config of a plain class of its own (``config.image_size``) sizes the image too."""
    entry = _json(f"{DATA / 'images.py'}::SettingsPatchEmbed")
    assert entry["error"] is None and entry["ok"], entry
    assert any("pixel_values read as an image (B, 3, 48, 48)" in n for n in entry["notes"]), entry["notes"]
