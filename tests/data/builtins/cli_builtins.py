"""PyTorch's attention modules and a sparse-MoE Hugging Face model, used the way courses use
them, for ``python -m shapetrace`` with every input inferred (run with --dims d=8,H=6)."""

import torch
import transformers as tf
from torch import nn


class SequenceFirstAttention(nn.Module):
    """nn.MultiheadAttention in its default (T, B, C) layout, with a learned key/value bias."""

    def __init__(self, d_model, n_head):
        super().__init__()
        self.mha = nn.MultiheadAttention(d_model, n_head, add_bias_kv=True, add_zero_attn=True)

    def forward(self, x):
        seq_len, batch_size, _ = x.shape
        mask = nn.Transformer.generate_square_subsequent_mask(seq_len)
        return self.mha(x, x, x, attn_mask=mask, need_weights=False)[0]


class PreNormGeluEncoder(nn.Module):
    def __init__(self, d_model, n_head):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d_model, n_head, 2 * d_model, dropout=0.0,
                                           activation="gelu", norm_first=True, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)

    def forward(self, x):
        mask = nn.Transformer.generate_square_subsequent_mask(x.size(1))
        return self.encoder(x, mask=mask, is_causal=True)


class Seq2Seq(nn.Module):
    def __init__(self, d_model, n_head):
        super().__init__()
        self.transformer = nn.Transformer(d_model, n_head, num_encoder_layers=1,
                                          num_decoder_layers=1, dim_feedforward=2 * d_model,
                                          dropout=0.0, batch_first=True)

    def forward(self, src, tgt):
        mask = self.transformer.generate_square_subsequent_mask(tgt.size(1))
        return self.transformer(src, tgt, tgt_mask=mask, tgt_is_causal=True)


class TinyMixtral(nn.Module):
    """Sparse mixture of experts (top-2 of 3), experts run one by one in Python."""

    def __init__(self, hidden_size, num_heads, head_dim, vocab_size):
        super().__init__()
        config = tf.MixtralConfig(hidden_size=hidden_size, num_attention_heads=num_heads,
                                  num_key_value_heads=2, head_dim=head_dim, num_hidden_layers=1,
                                  intermediate_size=2 * hidden_size, vocab_size=vocab_size,
                                  num_local_experts=3, num_experts_per_tok=2,
                                  experts_implementation="eager")
        self.model = tf.MixtralForCausalLM(config)

    def forward(self, input_ids):
        return self.model(input_ids).logits
