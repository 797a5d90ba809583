"""A decoder layer with padding masks for its own tokens and for the encoder's, handed to
attention sublayers, whose encoder memory shapetrace guesses at the decoder's length: the
masks are right."""

from typing import Optional

import torch
import torch.nn as nn


class SelfBlock(nn.Module):
    def __init__(self, d_model: int, num_heads: int):
        super().__init__()
        self.mha = nn.MultiheadAttention(d_model, num_heads, batch_first=True)
        self.norm = nn.LayerNorm(d_model)

    def forward(self, x: torch.Tensor, key_padding_mask: Optional[torch.Tensor] = None):
        h = self.norm(x)
        return x + self.mha(h, h, h, key_padding_mask=key_padding_mask, need_weights=False)[0]


class CrossBlock(nn.Module):
    def __init__(self, d_model: int, num_heads: int):
        super().__init__()
        self.mha = nn.MultiheadAttention(d_model, num_heads, batch_first=True)
        self.norm = nn.LayerNorm(d_model)

    def forward(self, x: torch.Tensor, y: torch.Tensor, key_padding_mask: Optional[torch.Tensor] = None):
        h = self.norm(x)
        return x + self.mha(h, y, y, key_padding_mask=key_padding_mask, need_weights=False)[0]


class DecoderLayer(nn.Module):
    def __init__(self, d_model: int, num_heads: int):
        super().__init__()
        self.self_attn = SelfBlock(d_model, num_heads)
        self.cross_attn = CrossBlock(d_model, num_heads)

    def forward(self, x: torch.Tensor, enc_output: torch.Tensor,
                dec_key_padding_mask: Optional[torch.Tensor] = None,
                enc_key_padding_mask: Optional[torch.Tensor] = None) -> torch.Tensor:
        """
        Args:
            x: the decoder's tokens, shape (batch_size, seq_len, d_model)
            enc_output: what the encoder made, shape (batch_size, seq_len, d_model)
            dec_key_padding_mask: True at the decoder's padding, shape (batch_size, seq_len)
            enc_key_padding_mask: True at the encoder's padding, shape (batch_size, seq_len)
        """
        x = self.self_attn(x, dec_key_padding_mask)
        return self.cross_attn(x, enc_output, enc_key_padding_mask)


class PooledDecoder(DecoderLayer):
    """Averages its output over every position, the padded ones too: counted padding."""

    def forward(self, x: torch.Tensor, enc_output: torch.Tensor,
                dec_key_padding_mask: Optional[torch.Tensor] = None,
                enc_key_padding_mask: Optional[torch.Tensor] = None) -> torch.Tensor:
        """
        Args:
            x: the decoder's tokens, shape (batch_size, seq_len, d_model)
            enc_output: what the encoder made, shape (batch_size, seq_len, d_model)
            dec_key_padding_mask: True at the decoder's padding, shape (batch_size, seq_len)
            enc_key_padding_mask: True at the encoder's padding, shape (batch_size, seq_len)
        """
        out = super().forward(x, enc_output, dec_key_padding_mask, enc_key_padding_mask)
        if dec_key_padding_mask is not None:
            out = out.masked_fill(dec_key_padding_mask[..., None], 0.0)
        return out.mean(dim=1)  # BUG: divides by every position
