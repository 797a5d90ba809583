"""A language model whose token ids are annotated as floats (a slip in the annotation only),
looked up in a table indexed by hand."""

from __future__ import annotations

import torch
import torch.nn as nn
from jaxtyping import Float
from torch import Tensor


class Table(nn.Module):
    def __init__(self, num_embeddings, embedding_dim):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(num_embeddings, embedding_dim) * 0.02)

    def forward(self, token_ids):
        return self.weight[token_ids]


class AnnotatedLM(nn.Module):
    def __init__(self, vocab_size, d_model):
        super().__init__()
        self.embedding = Table(vocab_size, d_model)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size)

    def forward(self, in_indices: Float[Tensor, "batch seq_len"]) -> Float[Tensor, "batch seq_len vocab"]:
        return self.head(self.norm(self.embedding(in_indices)))


class ScaledFeatures(nn.Module):
    """A (batch, seq) input of real values, annotated as floats and used as such."""

    def __init__(self, d_model):
        super().__init__()
        self.proj = nn.Linear(1, d_model)

    def forward(self, values: Float[Tensor, "batch seq_len"]) -> Float[Tensor, "batch seq_len d"]:
        return self.proj(values.unsqueeze(-1))
