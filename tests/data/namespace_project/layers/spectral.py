"""A block mixing tokens in the frequency domain, with complex weights kept in float32 complex;
its widths are named for channels, and only the model that builds it says they are the width."""

import torch
import torch.nn as nn


class SpectralMixer(nn.Module):
    def __init__(self, in_channels, out_channels, modes=2):
        super().__init__()
        self.modes = modes
        scale = 1 / (in_channels * out_channels)
        self.weights = nn.Parameter(scale * torch.rand(in_channels, out_channels, modes,
                                                       dtype=torch.cfloat))

    def forward(self, x):
        B, T, C = x.shape
        spectrum = torch.fft.rfft(x.transpose(1, 2), dim=-1)  # (B, C, T // 2 + 1)
        out = torch.zeros(B, self.weights.shape[1], T // 2 + 1, dtype=torch.cfloat)
        kept = min(self.modes, spectrum.shape[-1])
        out[..., :kept] = torch.einsum("bix,iox->box", spectrum[..., :kept].to(torch.cfloat),
                                       self.weights[..., :kept])
        return torch.fft.irfft(out, n=T, dim=-1).transpose(1, 2)
