"""Modules whose sizes and inputs are read where their own code hands them on: a constructor
that builds its layers in a helper method, a style vector handed through a block of the
file's own to the linear layer that reads it, a norm whose one size is a bare ``d``, a
modulation whose forward fails on a guessed input that another reading gets past, config
fields read by their use, an attribute set on one path only, a switch whose part needs more,
and a config class that checks the sizes itself."""

import dataclasses

import torch
import torch.nn as nn


class SplitBuildBlock(nn.Module):
    """Widths handed to a helper method that builds the layers (``_make(width_in, width_out)``)."""

    def __init__(self, width_in, width_out):
        super().__init__()
        self.skip = width_in != width_out
        self._make(width_in, width_out)

    def _make(self, width_in, width_out):
        self.first = nn.Linear(width_in, width_in)
        self.second = nn.Linear(width_in, width_out)
        if self.skip:
            self.project = nn.Linear(width_in, width_out, bias=False)

    def forward(self, x):
        shortcut = self.project(x) if self.skip else x
        return shortcut + self.second(torch.relu(self.first(x)))


class StyleScale(nn.Module):
    """A scale and shift per channel, made from a style vector by a linear layer."""

    def __init__(self, style_width, channels):
        super().__init__()
        self.to_scale_shift = nn.Linear(style_width, 2 * channels)

    def forward(self, h, style):
        scale, shift = self.to_scale_shift(style).unsqueeze(1).chunk(2, dim=-1)
        return h * (1 + scale) + shift


class StyledBlock(nn.Module):
    """Hands its style vector on to a block of its own: the vector's width is read there."""

    def __init__(self, channels, style_width=24):
        super().__init__()
        self.inner = nn.Linear(channels, channels)
        self.styled = StyleScale(style_width, channels)

    def forward(self, h, style):
        return self.styled(self.inner(h), style)


class BareNorm(nn.Module):
    """An RMS norm whose one size is called ``d``: the width of what it normalises."""

    def __init__(self, d):
        super().__init__()
        self.gain = nn.Parameter(torch.ones(d))
        self.scale = d ** -0.5

    def forward(self, x):
        return self.gain * x / (x.norm(dim=-1, keepdim=True) * self.scale + 1e-8)


class DecayGate(nn.Module):
    """Multiplies a sequence by a per-channel decay of a time value per sample, (B, 1, 1)
    against (1, 1, C): a time guessed as one value per sample does not fit, one read as a
    vector per sample gets past it."""

    def __init__(self, d_model):
        super().__init__()
        self.rates = nn.Parameter(torch.linspace(0.1, 1.0, d_model)[None, None])

    def forward(self, t, x):
        return x * torch.exp(-t * self.rates)


class FixedWidthHead(nn.Module):
    """A bug whatever the inputs: the head reads a width of 64 written as a number."""

    def __init__(self, d_model):
        super().__init__()
        self.inner = nn.Linear(d_model, d_model)
        self.head = nn.Linear(64, d_model)

    def forward(self, x):
        return self.head(self.inner(x))


class KindSwitched(nn.Module):
    """Builds its mixer by a kind named in its config; a kind it does not know builds none."""

    def __init__(self, config):
        super().__init__()
        self.norm = nn.LayerNorm(config.n_embd)
        if config.mixer == "linear":
            self.mix = nn.Linear(config.n_embd, config.n_embd)
        elif config.mixer == "conv":
            self.mix = nn.Conv1d(config.n_embd, config.n_embd, 3, padding=1)
        assert config.inner % config.n_head == 0
        self.inner = nn.Linear(config.n_embd, config.inner)
        self.back = nn.Linear(config.inner, config.n_embd)

    def forward(self, x):
        return x + self.back(self.inner(self.mix(self.norm(x))))


class TwoPaths(nn.Module):
    """Sets its projection only when told to: nothing says which, and forward reads it."""

    def __init__(self, dim, variant=None):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        if variant:
            self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        return self.proj(self.norm(x))


class OptionalBias(nn.Module):
    """A relative bias turned on by a switch nothing sets, which then needs its bucket count."""

    def __init__(self, dim, use_rel_bias: bool, buckets=None):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.use_rel_bias = use_rel_bias
        if use_rel_bias:
            assert buckets is not None, "a relative bias needs its number of buckets"
            self.bias = nn.Embedding(buckets, 1)

    def forward(self, x):
        out = self.proj(x)
        if self.use_rel_bias:
            out = out + self.bias.weight.sum()
        return out


@dataclasses.dataclass
class EightHeads:
    d_model: int
    n_heads: int

    def __post_init__(self):
        assert self.n_heads % 8 == 0, "heads in groups of eight"


class UsesEight(nn.Module):
    """Its config class checks the head count itself."""

    def __init__(self, config: EightHeads):
        super().__init__()
        self.proj = nn.Linear(config.d_model, config.d_model)

    def forward(self, x):
        return self.proj(x)


class LengthsCutPerSample(nn.Module):
    """Runs its convolutions on each sample cut to its length: ``lens`` is tested with ``is
    None`` where the output is padded, and read unguarded where each sample is cut."""

    def __init__(self, channels=24):
        super().__init__()
        self.conv = nn.Conv1d(channels, channels, 3, padding=1)

    def forward(self, context, lens):
        out = [self.conv(context[b:b + 1, :, :lens[b]])[0].transpose(0, 1)
               for b in range(context.size(0))]
        if lens is not None:
            return nn.utils.rnn.pad_sequence(out, batch_first=True)
        return torch.stack(out)


class ChannelsCutPerSample(nn.Module):
    """Convolves each sample, channels first, cut to its length: a width of its own default."""

    def __init__(self, n_channels=24):
        super().__init__()
        self.conv = nn.Conv1d(n_channels, n_channels, 5, padding=2)

    def forward(self, x, in_lens):
        outs = [self.conv(x[b:b + 1, :, :int(in_lens[b])]) for b in range(x.size(0))]
        return torch.cat([o[..., :1] for o in outs])
