"""A constructor argument that other counts are only divided by (a parallel degree, a number of
groups the heads are split into) is read as 1, the one count that divides every probe size,
with a note; beside any other use it says nothing of its own.

The modules are ours: a feed-forward and an attention sharded over ``model_parallel_size``
devices the way tensor-parallel inference code is written.
"""

from __future__ import annotations

import textwrap

import pytest

from resolved import cli_json

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

SOURCE = '''
import torch
import torch.nn as nn
import torch.nn.functional as F


class ShardedFeedForward(nn.Module):
    def __init__(self, model_parallel_size: int, dim: int, hidden_dim: int):
        super().__init__()
        assert hidden_dim % model_parallel_size == 0
        self.model_parallel_size = model_parallel_size
        self.up = nn.Linear(dim, hidden_dim // model_parallel_size)
        self.down = nn.Linear(hidden_dim // model_parallel_size, dim)

    def forward(self, x):
        y = self.down(F.gelu(self.up(x)))
        if self.model_parallel_size > 1:
            raise RuntimeError("needs a process group")
        return y


class ShardedAttention(nn.Module):
    def __init__(self, model_parallel_size: int, dim: int, n_heads: int):
        super().__init__()
        self.n_local_heads = n_heads // model_parallel_size
        self.head_dim = dim // n_heads
        self.qkv = nn.Linear(dim, 3 * self.n_local_heads * self.head_dim)
        self.out = nn.Linear(self.n_local_heads * self.head_dim, dim)

    def forward(self, x):
        B, T, _ = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_local_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(B, T, -1))


class Downsample(nn.Module):
    def __init__(self, layer_type, dim_in):
        super().__init__()
        if layer_type == "half":
            self.pool = nn.AvgPool1d(2)
        elif layer_type == "none":
            self.pool = nn.Identity()
        else:
            raise RuntimeError("unexpected downsample type %s" % layer_type)
        self.proj = nn.Linear(dim_in, dim_in)

    def forward(self, x):
        return self.proj(x)


class SlotGroups(nn.Module):
    """Its group count is an axis of forward's view, normalised over: 1 would collapse it."""

    def __init__(self, dim, n_slots, groups):
        super().__init__()
        assert n_slots % groups == 0
        self.groups, self.per = groups, n_slots // groups
        self.score = nn.Linear(dim, n_slots)

    def forward(self, x):
        B, T, C = x.shape
        return self.score(x).view(B, T, self.groups, self.per).softmax(dim=2).flatten(2)


class Stages(nn.Module):
    def __init__(self, stages: int, dim: int, budget: int = 12):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(dim, dim) for _ in range(stages)])
        self.per_stage = budget // stages

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x
'''


@pytest.fixture
def path(tmp_path):
    file = tmp_path / "sharded.py"
    file.write_text(textwrap.dedent(SOURCE))
    return file


@pytest.mark.parametrize("name", ["ShardedFeedForward", "ShardedAttention"])
def test_a_parallel_degree_is_read_as_one(capsys, path, name):
    code, report = cli_json(capsys, f"{path}::{name}")
    (target,) = report["targets"]
    assert target["error"] is None
    assert [d for d in target["diagnostics"] if d["severity"] != "info"] == []
    assert any(n.startswith("model_parallel_size read as a count other sizes are divided by "
                            "only (1)") and "--init model_parallel_size=VALUE" in n
               for n in target["notes"]), target["notes"]
    assert code == 0


def test_a_divisor_used_otherwise_too_is_read_by_that_use(path):
    import importlib.util

    from shapetrace.drive.usage import DIVISOR, LAYER_COUNT, meaning_by_use

    spec = importlib.util.spec_from_file_location("sharded_for_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert meaning_by_use(module.ShardedFeedForward, "model_parallel_size") == DIVISOR
    assert meaning_by_use(module.Stages, "stages") == LAYER_COUNT  # a range() count first
    assert meaning_by_use(module.Downsample, "layer_type") is None  # a string formatted with %
    assert meaning_by_use(module.SlotGroups, "groups") is None  # an axis of forward's view too
