"""Scripts with the classic bugs, one per block; each line marked ``# BUG: rule``."""

import math

import torch
import torch.nn.functional as F

torch.manual_seed(0)
B, T, C, H = 2, 6, 24, 4
d = C // H
x = torch.randn(B, T, C)
W_q, W_k, W_v = (torch.randn(C, C) / math.sqrt(C) for _ in range(3))

q = (x @ W_q).view(B, T, H, d).transpose(1, 2)
k = (x @ W_k).view(B, T, H, d).transpose(1, 2)
v = (x @ W_v).view(B, T, H, d).transpose(1, 2)

scores = q @ k.transpose(-2, -1) / math.sqrt(d)
tril = torch.tril(torch.ones(T, T))
scores.masked_fill(tril == 0, float("-inf"))  # BUG: discarded-result
weights = F.softmax(scores, dim=-2)  # BUG: softmax-axis
out = (weights @ v).view(B, T, C)  # BUG: reshape-jumble
print(out.shape)

single = x @ W_q
wrong = single @ single.T  # BUG: reversed-transpose
