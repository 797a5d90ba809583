"""A constructor argument whose fields the code reads (``h.dense_channel``) is an object with
those fields whatever its name says: ``h`` is not read as a head count there, and the module is
built from the sizes its fields are handed to. An argument multiplied into a product that sizes a
layer's output (``hidden = channels * expansion``) is a factor of that output, stored on self or
not."""

from __future__ import annotations

import types

import torch.nn as nn

import shapetrace as st
from shapetrace.drive.infer import infer_init

DIMS = {"B": 5, "T": 7, "H": 11, "d": 13, "C": 143, "V": 19, "L": 23}


class ConvFront(nn.Module):
    def __init__(self, h, in_channel):
        super().__init__()
        self.conv = nn.Conv2d(in_channel, h.dense_channel, (1, 1))
        self.norm = nn.InstanceNorm2d(h.dense_channel, affine=True)

    def forward(self, x):
        return self.norm(self.conv(x))


class HeadsByName(nn.Module):
    """``h`` used as a number: still a head count."""

    def __init__(self, dim, h):
        super().__init__()
        self.attn = nn.MultiheadAttention(dim, h, batch_first=True)

    def forward(self, x):
        return self.attn(x, x, x)[0]


class CalledH(nn.Module):
    """``h`` called: a module, never a config."""

    def __init__(self, h):
        super().__init__()
        self.h = h

    def forward(self, x):
        return self.h(x)


def test_an_argument_whose_fields_are_read_is_a_config_of_those_fields():
    init = infer_init(ConvFront, DIMS)
    assert isinstance(init["h"], types.SimpleNamespace)
    assert init["h"].dense_channel == DIMS["C"]
    result = st.check(ConvFront).targets[0]
    assert result.error is None, result.error
    assert any("h made with the fields the code reads" in n for n in result.notes)


def test_a_name_still_reads_where_no_field_is_read():
    assert infer_init(HeadsByName, DIMS)["h"] == DIMS["H"]


def test_an_argument_the_class_calls_is_not_made_a_config():
    from shapetrace.drive.config_fields import read_as_object
    import inspect

    param = inspect.signature(CalledH).parameters["h"]
    assert not read_as_object(CalledH, param)


class MlpStoredProduct(nn.Module):
    def __init__(self, channels, expansion, drop):
        super().__init__()
        self.dim2 = channels * expansion
        self.fc1 = nn.Linear(channels, self.dim2)
        self.fc2 = nn.Linear(self.dim2, channels)
        self.drop = nn.Dropout(drop)

    def forward(self, x):
        return self.fc2(self.drop(self.fc1(x).relu()))


class MlpLocalProduct(nn.Module):
    def __init__(self, channels, expansion, drop):
        super().__init__()
        hidden = channels * expansion
        self.fc1 = nn.Linear(channels, hidden)
        self.fc2 = nn.Linear(hidden, channels)
        self.drop = nn.Dropout(drop)

    def forward(self, x):
        return self.fc2(self.drop(self.fc1(x).relu()))


def test_a_factor_of_a_named_product_that_sizes_an_output_is_read_so():
    for cls in (MlpStoredProduct, MlpLocalProduct):
        init = infer_init(cls, DIMS)
        assert init["channels"] == DIMS["C"] and init["expansion"] == 2, init
        result = st.check(cls).targets[0]
        assert result.error is None, result.error


class Planner(nn.Module):
    """Sizes the code computes with from a config's fields nothing else names."""

    def __init__(self, config):
        super().__init__()
        self.joined = config.state_dim + config.action_dim + 1
        self.emb = nn.Embedding(config.vocab_size * self.joined, config.n_embd)
        self.attn = nn.MultiheadAttention(config.n_embd, config.n_head, batch_first=True)

    def forward(self, idx):
        x = self.emb(idx)
        return self.attn(x, x, x)[0]


class GoalPlanner(Planner):
    """Its parent reads the config: the fields it reads are this class's too."""

    def __init__(self, config):
        super().__init__(config)
        self.goal = nn.Embedding(config.vocab_size, config.n_embd)


class CutByCount(Planner):
    """A forward that fits only sequences as long as a count in the config."""

    def __init__(self, config):
        super().__init__(config)
        self.per_step = config.state_dim

    def forward(self, idx):
        x = self.emb(idx)
        return x.reshape(x.shape[0], -1, self.per_step, x.shape[-1])


def test_fields_the_code_adds_are_counts_and_a_parent_s_reads_count_too():
    for cls in (Planner, GoalPlanner):
        init = infer_init(cls, DIMS)
        config = init["config"]
        assert config.state_dim == config.action_dim == 3, vars(config)
        result = st.check(cls).targets[0]
        assert result.error is None, result.error


def test_a_forward_a_chosen_count_does_not_fit_is_a_target_error_naming_it():
    result = st.check(CutByCount).targets[0]
    assert result.error is not None and "config.state_dim=3" in result.error
    assert not [d for d in result.diagnostics if d.severity == "error"]


class Stage(nn.Module):
    def __init__(self, h, depth=2):
        super().__init__()
        self.convs = nn.ModuleList(nn.Conv1d(h.channels, h.channels, 3, padding=1) for _ in range(depth))

    def forward(self, x):
        for conv in self.convs:
            x = x + conv(x)
        return x


class Front(nn.Module):
    """Hands ``h`` on, and reads counts of it (``h.n_fft // 2 + 1``)."""

    def __init__(self, h):
        super().__init__()
        self.stage = Stage(h)
        self.out = nn.Conv1d(h.channels, h.n_fft // 2 + 1, 1)

    def forward(self, x):
        return self.out(self.stage(x))


def test_a_config_handed_on_by_the_name_h_is_not_a_head_count():
    for cls in (Stage, Front):
        notes: list = []
        init = infer_init(cls, DIMS, notes=notes)
        assert isinstance(init["h"], types.SimpleNamespace), (init, notes)
        assert init["h"].channels == DIMS["C"]
    assert infer_init(Front, DIMS)["h"].n_fft == 3
