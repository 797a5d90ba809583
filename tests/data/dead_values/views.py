"""A view of an einsum's output, whose memory layout is the kernel's choice: on this run's real
tensors the einsum gives a non-contiguous tensor and the view raises (a fact); on fake tensors
(--fake) the layout is torch's prediction for one backend (a warning that says so). A view after
a transpose fails on every backend."""

import torch
import torch.nn as nn


class EinsumThenView(nn.Module):
    INIT = {"width": "C", "heads": "H"}
    INPUTS = ["x=B,T,C"]

    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        weights = (torch.einsum("bhqd,bhkd->bhqk", q, k) * (C // self.heads) ** -0.5).softmax(-1)
        mixed = torch.einsum("bhqk,bhkd->bqhd", weights, v)
        return mixed.view(B, T, C)  # <- einsum-view


class TransposeThenView(EinsumThenView):
    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        weights = (torch.einsum("bhqd,bhkd->bhqk", q, k) * (C // self.heads) ** -0.5).softmax(-1)
        mixed = torch.einsum("bhqk,bhkd->bhqd", weights, v).transpose(1, 2)
        return mixed.view(B, T, C)  # <- transpose-view
