"""Speech-style modules (written for these tests): signals (B, C, T), channels first, and a
float 0/1 mask (B, 1, T) multiplied into them, a norm that moves the channels last, attention
over 1-D convolutions. Nothing declared: each is built and called from its own code. One is
wrong, marked ``# BUG``."""

import math
import torch
import torch.nn as nn
import torch.nn.functional as F


class ChannelNorm(nn.Module):
    def __init__(self, channels, eps=1e-5):
        super().__init__()
        self.channels = channels
        self.gamma = nn.Parameter(torch.ones(channels))
        self.beta = nn.Parameter(torch.zeros(channels))

    def forward(self, x):
        x = x.transpose(1, -1)
        x = F.layer_norm(x, (self.channels,), self.gamma, self.beta, 1e-5)
        return x.transpose(1, -1)


class ConvFeedForward(nn.Module):
    def __init__(self, in_channels, out_channels, filter_channels, kernel_size, p_dropout=0.0):
        super().__init__()
        self.conv_1 = nn.Conv1d(in_channels, filter_channels, kernel_size, padding=kernel_size // 2)
        self.conv_2 = nn.Conv1d(filter_channels, out_channels, kernel_size, padding=kernel_size // 2)
        self.drop = nn.Dropout(p_dropout)

    def forward(self, x, x_mask):
        x = self.conv_1(x * x_mask)
        x = self.drop(torch.relu(x))
        return self.conv_2(x * x_mask) * x_mask


class ConvSelfAttention(nn.Module):
    def __init__(self, channels, out_channels, n_heads, p_dropout=0.0):
        super().__init__()
        self.n_heads = n_heads
        self.k_channels = channels // n_heads
        self.conv_q = nn.Conv1d(channels, channels, 1)
        self.conv_k = nn.Conv1d(channels, channels, 1)
        self.conv_v = nn.Conv1d(channels, channels, 1)
        self.conv_o = nn.Conv1d(channels, out_channels, 1)

    def forward(self, x, c, attn_mask=None):
        q, k, v = self.conv_q(x), self.conv_k(c), self.conv_v(c)
        b, d, t_s = k.shape
        t_t = q.size(2)
        q = q.view(b, self.n_heads, self.k_channels, t_t).transpose(2, 3)
        k = k.view(b, self.n_heads, self.k_channels, t_s).transpose(2, 3)
        v = v.view(b, self.n_heads, self.k_channels, t_s).transpose(2, 3)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.k_channels)
        if attn_mask is not None:
            scores = scores.masked_fill(attn_mask == 0, -1e4)
        out = scores.softmax(-1) @ v
        out = out.transpose(2, 3).contiguous().view(b, d, t_t)
        return self.conv_o(out)


class SignalEncoder(nn.Module):
    def __init__(self, hidden_channels, filter_channels, n_heads, n_layers, kernel_size=1):
        super().__init__()
        self.attn = nn.ModuleList(ConvSelfAttention(hidden_channels, hidden_channels, n_heads)
                                  for _ in range(n_layers))
        self.norm1 = nn.ModuleList(ChannelNorm(hidden_channels) for _ in range(n_layers))
        self.ffn = nn.ModuleList(ConvFeedForward(hidden_channels, hidden_channels, filter_channels, kernel_size)
                                 for _ in range(n_layers))
        self.norm2 = nn.ModuleList(ChannelNorm(hidden_channels) for _ in range(n_layers))

    def forward(self, x, x_mask):
        attn_mask = x_mask.unsqueeze(2) * x_mask.unsqueeze(-1)
        x = x * x_mask
        for attn, n1, ffn, n2 in zip(self.attn, self.norm1, self.ffn, self.norm2):
            x = n1(x + attn(x, x, attn_mask))
            x = n2(x + ffn(x, x_mask))
        return x * x_mask


class WidthScaledAttention(ConvSelfAttention):
    def forward(self, x, c, attn_mask=None):
        q, k, v = self.conv_q(x), self.conv_k(c), self.conv_v(c)
        b, d, t_s = k.shape
        t_t = q.size(2)
        q = q.view(b, self.n_heads, self.k_channels, t_t).transpose(2, 3)
        k = k.view(b, self.n_heads, self.k_channels, t_s).transpose(2, 3)
        v = v.view(b, self.n_heads, self.k_channels, t_s).transpose(2, 3)
        scores = q @ k.transpose(-2, -1) / math.sqrt(d)  # BUG
        if attn_mask is not None:
            scores = scores.masked_fill(attn_mask == 0, -1e4)
        out = scores.softmax(-1) @ v
        out = out.transpose(2, 3).contiguous().view(b, d, t_t)
        return self.conv_o(out)


class PaddedFeedForward(nn.Module):
    """Pads its signal along time itself before each convolution (causal padding)."""

    def __init__(self, in_channels, filter_channels, kernel_size):
        super().__init__()
        self.kernel_size = kernel_size
        self.conv_1 = nn.Conv1d(in_channels, filter_channels, kernel_size)
        self.conv_2 = nn.Conv1d(filter_channels, in_channels, kernel_size)

    def pad(self, x):
        return F.pad(x, [self.kernel_size - 1, 0])

    def forward(self, x, x_mask):
        x = torch.relu(self.conv_1(self.pad(x * x_mask)))
        return self.conv_2(self.pad(x * x_mask)) * x_mask


class SignalDecoder(nn.Module):
    """Causal self-attention over its own signal, then attention to an encoder's output ``h``,
    read whole."""

    def __init__(self, hidden_channels, n_heads):
        super().__init__()
        self.self_attn = ConvSelfAttention(hidden_channels, hidden_channels, n_heads)
        self.cross_attn = ConvSelfAttention(hidden_channels, hidden_channels, n_heads)
        self.norm = ChannelNorm(hidden_channels)

    def forward(self, x, x_mask, h, h_mask):
        T = x_mask.size(2)
        causal = torch.ones(T, T).tril()[None, None]
        x = x * x_mask
        x = self.norm(x + self.self_attn(x, x, causal))
        x = self.norm(x + self.cross_attn(x, h, h_mask.unsqueeze(2) * x_mask.unsqueeze(-1)))
        return x * x_mask
