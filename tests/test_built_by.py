"""A module argument built the way the project's own code builds it (a call of the class in
its file or its package handing it a module of the project's code, in place, by a name the
caller assigned, or as a list), and a constructor whose own divisibility check refuses the
probe width built again at an even one."""

from __future__ import annotations

import json
import textwrap

import torch.nn as nn

import shapetrace as st
from shapetrace.base.dims import Dims
from shapetrace.drive.infer import infer_inputs
from shapetrace.drive.targets import resolve_targets
from shapetrace.frontends.cli import main

LAYERS = '''
    import torch
    from torch import nn


    class Mixer(nn.Module):
        def __init__(self, dim, heads):
            super().__init__()
            self.heads = heads
            self.qkv = nn.Linear(dim, 3 * dim)

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.qkv(x).view(b, t, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
            w = (q @ k.transpose(-2, -1) / (c // self.heads) ** 0.5).softmax(-1)
            return (w @ v).transpose(1, 2).reshape(b, t, c)


    class Block(nn.Module):
        def __init__(self, mixer, dim):
            super().__init__()
            self.mixer = mixer
            self.norm = nn.LayerNorm(dim)

        def forward(self, x):
            return x + self.mixer(self.norm(x))


    class Stack(nn.Module):
        def __init__(self, blocks):
            super().__init__()
            self.blocks = nn.ModuleList(blocks)

        def forward(self, x):
            for block in self.blocks:
                x = block(x)
            return x
'''

MODEL = '''
    from torch import nn

    from .layers import Block, Mixer, Stack


    class Model(nn.Module):
        def __init__(self, vocab, dim, heads, depth, rate):
            super().__init__()
            self.embed = nn.Embedding(vocab, dim)
            layers = [Block(Mixer(dim, heads), dim) for _ in range(depth)]
            self.stack = Stack(layers)
            self.rate = rate

        def forward(self, idx):
            return self.stack(self.embed(idx))
'''


def _package(tmp_path):
    pkg = tmp_path / "proj"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "layers.py").write_text(textwrap.dedent(LAYERS))
    (pkg / "model.py").write_text(textwrap.dedent(MODEL))
    return pkg / "layers.py"


def test_module_arguments_are_built_as_the_package_builds_them(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    layers = _package(tmp_path)
    main([str(layers), "--format", "json", "--no-trace"])
    targets = {t["target"].split("::")[1]: t for t in json.loads(capsys.readouterr().out)["targets"]}
    for name in ("Mixer", "Block", "Stack"):
        assert targets[name]["error"] is None, targets[name]["error"]
        assert not [d for d in targets[name]["diagnostics"] if d["severity"] == "error"]
    assert any(n.startswith("mixer built as model.py:") and "Mixer(...)" in n
               for n in targets["Block"]["notes"]), targets["Block"]["notes"]
    assert any("Block(...) x 2" in n for n in targets["Stack"]["notes"]), targets["Stack"]["notes"]


class HalvedHeads(nn.Module):
    """Attends at half the width, and checks that its heads divide that half."""

    def __init__(self, dim, heads):
        super().__init__()
        assert (dim // 2) % heads == 0, "heads must divide the inner width"
        self.heads, self.inner = heads, dim // 2
        self.down, self.up = nn.Linear(dim, dim // 2), nn.Linear(dim // 2, dim)

    def forward(self, x):
        b, t, _ = x.shape
        h = self.down(x).view(b, t, self.heads, -1).transpose(1, 2)
        w = (h @ h.transpose(-2, -1)).softmax(-1)
        return self.up((w @ h).transpose(1, 2).reshape(b, t, self.inner))


def test_a_constructor_whose_own_divisibility_check_refuses_the_width_gets_an_even_one():
    result = st.check(HalvedHeads).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)
    assert any("C=176 (head size d=16)" in n for n in result.notes), result.notes


BLOCKS = '''
    import torch
    from torch import nn


    class Block(nn.Module):
        """A block whose attention the models build and hand in."""

        def __init__(self, attention, width):
            super().__init__()
            self.attention = attention
            self.norm = nn.LayerNorm(width)

        def forward(self, x, cross):
            return self.norm(x + self.attention(x, cross, cross))
'''

ATTENTION = '''
    from torch import nn


    class Attention(nn.Module):
        def __init__(self, width, heads):
            super().__init__()
            self.heads = heads
            self.q, self.kv = nn.Linear(width, width), nn.Linear(width, 2 * width)

        def forward(self, queries, keys, values):
            b, t, c = queries.shape
            s = keys.shape[1]
            q = self.q(queries).view(b, t, self.heads, -1).transpose(1, 2)
            k, v = (self.kv(keys).view(b, s, 2, self.heads, -1).permute(2, 0, 3, 1, 4))
            w = (q @ k.transpose(-2, -1) / (c // self.heads) ** 0.5).softmax(-1)
            return (w @ v).transpose(1, 2).reshape(b, t, c)
'''

# another model of the project with a class of its own named Block: its calls say nothing of
# the Block of blocks.py
OTHER = '''
    from torch import nn


    class Block(nn.Module):
        def __init__(self, width):
            super().__init__()
            self.proj = nn.Linear(width, width)

        def forward(self, x):
            return self.proj(x)


    class Other(nn.Module):
        def __init__(self, width):
            super().__init__()
            self.block = Block(nn.Identity())
'''

FORMER = '''
    from torch import nn

    from layered_parts.attention import Attention
    from layered_parts.blocks import Block


    class Former(nn.Module):
        def __init__(self, width, heads):
            super().__init__()
            self.block = Block(Attention(width, heads), width)

        def forward(self, x, cross):
            return self.block(x, cross)
'''


def test_a_module_argument_is_built_as_another_package_of_the_project_builds_it(capsys, tmp_path,
                                                                                 monkeypatch):
    """``layered_parts/`` defines the block, ``layered_models/`` builds it: the calls there say
    what its attention is (a file that names another class ``Block`` says nothing), and the input the
    block hands on to that attention's keys is read as keys."""
    monkeypatch.chdir(tmp_path)
    # package names no other test imports: a worker's sys.modules may hold a ``models``
    for folder, files in (("layered_parts", {"blocks.py": BLOCKS, "attention.py": ATTENTION}),
                          ("layered_models", {"a_other.py": OTHER, "former.py": FORMER})):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "__init__.py").write_text("")
        for name, text in files.items():
            (tmp_path / folder / name).write_text(textwrap.dedent(text))
    main([str(tmp_path / "layered_parts" / "blocks.py"), "--format", "json", "--no-trace"])
    (target,) = json.loads(capsys.readouterr().out)["targets"]
    assert target["error"] is None, target["error"]
    assert not [d for d in target["diagnostics"] if d["severity"] == "error"], target["diagnostics"]
    assert any(n.startswith("attention built as former.py:") and "Attention(...)" in n
               for n in target["notes"]), target["notes"]
    (block,) = resolve_targets(f"{tmp_path / 'layered_parts' / 'blocks.py'}::Block", root=tmp_path)
    assert [str(s) for s in infer_inputs(block.cls, Dims())] == ["x=B,T,C", "cross=B,S,C"]


SWITCHED = '''
    import torch
    from torch import nn


    class Pooled(nn.Module):
        """Mixes each position with the mean of all (mask_flag False) or of those before it."""

        def __init__(self, mask_flag=True, factor=5):
            super().__init__()
            self.mask_flag = mask_flag

        def forward(self, v):
            if self.mask_flag:
                return v.cumsum(dim=1) / torch.arange(1, v.shape[1] + 1)[:, None]
            return v.mean(dim=1, keepdim=True).expand_as(v)


    class Mixing(nn.Module):
        def __init__(self, inner, dim):
            super().__init__()
            self.inner = inner
            self.proj = nn.Linear(dim, dim)

        def forward(self, x):
            return x + self.proj(self.inner(x))
'''

SWITCHED_MODEL = '''
    from torch import nn

    from .layers import Mixing, Pooled


    class Encoder(nn.Module):
        def __init__(self, dim, depth):
            super().__init__()
            self.layers = nn.ModuleList(Mixing(Pooled(False, 3), dim) for _ in range(depth))

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return x
'''


def test_a_switch_the_project_writes_by_position_is_kept_when_it_builds_the_argument(tmp_path):
    """``Mixing(Pooled(False, 3), dim)``: the inner module is built on the project's path
    (``mask_flag=False``), not at its default (a running mean shapetrace would take for a
    causal module)."""
    from shapetrace.drive.infer import infer_init

    pkg = tmp_path / "switched"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "layers.py").write_text(textwrap.dedent(SWITCHED))
    (pkg / "model.py").write_text(textwrap.dedent(SWITCHED_MODEL))
    (target,) = resolve_targets(f"{pkg / 'layers.py'}::Mixing")
    init = infer_init(target.cls, Dims())
    assert init["inner"].mask_flag is False
