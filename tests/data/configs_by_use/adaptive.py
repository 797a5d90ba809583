"""A norm that takes the norm it wraps as an argument, built by the model with one of torch's."""

import torch.nn as nn


class AdaptiveNorm(nn.Module):
    def __init__(self, d_model, norm):
        super().__init__()
        self.project = nn.Linear(d_model, 2 * d_model)
        self.norm = norm
        self.d_model = d_model

    def forward(self, x, embedding):
        weight, bias = self.project(embedding).split(self.d_model, dim=-1)
        return weight * self.norm(x) + bias


class Decoder(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.attn = nn.MultiheadAttention(d_model, n_heads, batch_first=True)
        self.norm = AdaptiveNorm(d_model, norm=nn.LayerNorm(d_model))

    def forward(self, x, embedding):
        return self.norm(x + self.attn(x, x, x, need_weights=False)[0], embedding)


class Seq2Seq(nn.Module):
    """A sequence-to-sequence wrapper around the torch transformer its caller builds."""

    def __init__(self, transformer, n_features):
        super().__init__()
        self.transf = transformer
        self.proj = nn.Linear(n_features, transformer.d_model)
        self.out = nn.Linear(transformer.d_model, n_features)

    def forward(self, x):
        source, target = x[:, :3], x[:, 3:]  # the first steps, then the ones to predict
        return self.out(self.transf(self.proj(source), self.proj(target)))


if __name__ == "__main__":
    layers = nn.Transformer(d_model=6, nhead=3, num_encoder_layers=1, num_decoder_layers=1,
                            dim_feedforward=20, batch_first=True)
    model = Seq2Seq(layers, n_features=2)
