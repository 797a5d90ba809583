"""Convolutional code with nothing declared: channels and kernel sizes read from the layers the
constructor hands them to, a width a norm's groups divide, and a kernel size read again when
the first guess does not fit; none of it a finding."""

from __future__ import annotations

import torch
import torch.nn as nn

import shapetrace as st
from shapetrace.drive.asked import width_multiple
from shapetrace.drive.usage import KERNEL, meaning_by_use


def grouped(width):
    return nn.GroupNorm(num_groups=32, num_channels=width)


class GroupedBlock(nn.Module):
    """An image block whose norm splits its channels in 32 groups."""

    def __init__(self, in_channels, out_channels=None):
        super().__init__()
        out_channels = out_channels or in_channels
        self.norm = grouped(in_channels)
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)

    def forward(self, x):
        return x + self.conv(torch.relu(self.norm(x)))


class Smoother(nn.Module):
    """A (B, C, T) signal smoothed by a convolution padded to keep its length."""

    def __init__(self, channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv1d(channels, channels, kernel_size, padding=kernel_size // 2)
        self.proj = nn.Linear(channels, channels)

    def forward(self, x):
        return self.proj(x) + self.conv(x.transpose(1, 2)).transpose(1, 2)


class Unpadded(nn.Module):
    """A convolution of no padding beside a residual: only a kernel of 1 keeps the length."""

    def __init__(self, channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv1d(channels, channels, kernel_size)

    def forward(self, x):
        return x + self.conv(x.transpose(1, 2)).transpose(1, 2)


def test_channels_and_kernels_are_read_from_the_layers_they_are_handed_to():
    assert meaning_by_use(GroupedBlock, "in_channels") == "C"
    assert meaning_by_use(Smoother, "channels") == "C"
    assert meaning_by_use(Smoother, "kernel_size") == KERNEL


def test_the_width_asked_divisible_is_a_multiple_of_the_divisor():
    assert width_multiple("num_channels (1573) must be divisible by num_groups (32)", 143) == 32
    assert width_multiple("embed_dim must be divisible by 8 (got 143)", 143) == 16
    assert width_multiple("num_channels (20) must be divisible by num_groups (32)", 143) is None
    assert width_multiple("size mismatch", 143) is None


def test_a_block_whose_norm_groups_divide_its_width_is_checked():
    result = st.check(GroupedBlock).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)
    assert any("a width divisible by 32" in n for n in result.notes), result.notes
    assert any("in_channels read as the model width" in n for n in result.notes)


def test_a_kernel_size_handed_to_a_convolution_is_three():
    result = st.check(Smoother).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)
    assert any("kernel_size read as a kernel size (3)" in n for n in result.notes)


def test_a_kernel_that_does_not_fit_is_read_as_one_and_is_no_finding():
    result = st.check(Unpadded).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)
    assert any(n.startswith("kernel_size=1: with 3 the forward failed") for n in result.notes)


class Spectrum(nn.Module):
    """A (B, C, T) signal, channels first, into a 1-D convolution."""

    def __init__(self, n_mels, hidden_channels):
        super().__init__()
        self.conv = nn.Conv1d(n_mels, hidden_channels, 3, padding=1)

    def forward(self, x):
        return self.conv(x)


def test_a_signal_a_1d_convolution_takes_first_is_read_channels_first():
    result = st.check(Spectrum).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)
    assert any(n.startswith("x read as (B, 143, T), channels first") for n in result.notes), \
        result.notes


class Patches(nn.Module):
    def __init__(self, patch_size, dim):
        super().__init__()
        self.proj = nn.Conv2d(3, dim, patch_size, stride=patch_size)

    def forward(self, img):
        return self.proj(img).flatten(2).transpose(1, 2)


def test_a_size_handed_as_kernel_and_stride_is_no_free_kernel():
    assert meaning_by_use(Patches, "patch_size") is None


class ActivatedSignal(nn.Module):
    """A residual 1-D convolution over a signal activated first: the convolution never sees
    the input as it came."""

    def __init__(self, channels):
        super().__init__()
        self.conv = nn.Conv1d(channels, channels, 3, padding=1)

    def forward(self, x):
        return x + self.conv(torch.relu(x))


class NeverFits(nn.Module):
    """A 1-D convolution from 4 channels to its own width, added to its input: as vectors the
    convolution refuses the input, as a signal of 4 channels the sum does."""

    def __init__(self, channels):
        super().__init__()
        self.conv = nn.Conv1d(4, channels, 3, padding=1)
        self.channels = channels

    def forward(self, x):
        return self.conv(torch.relu(x)) + x


def test_a_signal_activated_before_its_convolution_is_read_channels_first():
    result = st.check(ActivatedSignal).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)
    assert any("channels first" in n for n in result.notes), result.notes


def test_a_signal_no_reading_fits_is_a_target_error_not_a_finding():
    result = st.check(NeverFits).targets[0]
    assert result.diagnostics == [] or all(d.severity != "error" for d in result.diagnostics)
    assert result.error is not None and "--input x=B,C,T" in result.error, result.error


class ChannelAttention(nn.Module):
    """Attention over the positions of a (B, C, ...) feature map, normalised by groups of
    channels first (a diffusion model's attention block, written here from scratch)."""

    def __init__(self, channels):
        super().__init__()
        self.norm = nn.GroupNorm(8, channels)  # 8 groups: a head size of 16 makes C divisible
        self.qkv = nn.Conv1d(channels, 3 * channels, 1)
        self.out = nn.Conv1d(channels, channels, 1)

    def forward(self, x):
        b, c, *grid = x.shape
        flat = x.reshape(b, c, -1)
        q, k, v = self.qkv(self.norm(flat)).chunk(3, dim=1)
        w = torch.softmax(q.transpose(1, 2) @ k / (c ** 0.5), dim=-1)
        y = self.out((w @ v.transpose(1, 2)).transpose(1, 2))
        return (flat + y).reshape(b, c, *grid)


def test_a_signal_a_channel_norm_takes_first_is_read_channels_first():
    """As vectors (B, T, C) the group norm refuses the input (its channels on axis 1): read as
    a signal (B, C, T), it runs, and is clean; no op-failed finding from the guess."""
    result = st.check(ChannelAttention).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)
    assert any("channels first, as the norm" in n for n in result.notes), result.notes
    assert any("a width divisible by 8" in n for n in result.notes), result.notes


def make_conv(rank, *args, **kwargs):
    """A convolution of the rank asked, its sizes handed on as they came."""
    layer = {1: nn.Conv1d, 2: nn.Conv2d}[rank]
    return layer(*args, **kwargs) if rank != 2 else nn.Conv2d(*args, **kwargs)


class Doubler(nn.Module):
    """An image doubled in side, then convolved: its width kept on self first, and handed to a
    helper of the project through its *args."""

    def __init__(self, channels, rank=2):
        super().__init__()
        self.channels = channels
        self.conv = make_conv(rank, self.channels, self.channels, 3, padding=1)

    def forward(self, x):
        return self.conv(torch.nn.functional.interpolate(x, scale_factor=2.0))


def test_channels_kept_on_self_and_handed_on_in_args_are_read():
    assert meaning_by_use(Doubler, "channels") == "C"
    result = st.check(Doubler).targets[0]
    assert result.error is None and result.ok, (result.error, result.diagnostics)
    assert any(n.startswith("channels read as the model width") for n in result.notes)
