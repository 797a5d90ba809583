"""The chapter-3 walk-through with a student's slips, each line marked ``# BUG: rule``."""

import torch

torch.manual_seed(123)
inputs = torch.rand(6, 3)
W_query, W_key, W_value = (torch.nn.Parameter(torch.rand(3, 2)) for _ in range(3))
queries, keys, values = inputs @ W_query, inputs @ W_key, inputs @ W_value
attn_scores = queries @ keys.T
attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)

mask_simple = torch.tril(torch.ones(6, 6))
masked_simple = attn_weights * mask_simple  # BUG: unnormalized-attention
context = masked_simple @ values
print(context)

mask = torch.triu(torch.ones(6, 6), diagonal=1)
attn_scores.masked_fill(mask.bool(), -torch.inf)  # BUG: discarded-result
weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=0)  # BUG: softmax-axis
print(weights @ values)
