import torch
from torch import nn


class MHASeqFirst(nn.Module):
    """(T, B, C) layout, key padding mask."""
    def __init__(self, d_model, nhead):
        super().__init__()
        self.mha = nn.MultiheadAttention(d_model, nhead)

    def forward(self, x, pad):
        return self.mha(x, x, x, key_padding_mask=pad)[0]


class MHAKdimVdim(nn.Module):
    def __init__(self, d_model, nhead):
        super().__init__()
        self.mha = nn.MultiheadAttention(d_model, nhead, kdim=29, vdim=31, batch_first=True)

    def forward(self, x, key, value):
        return self.mha(x, key, value)[0]


class MHABiasKVZeroAttn(nn.Module):
    def __init__(self, d_model, nhead):
        super().__init__()
        self.mha = nn.MultiheadAttention(d_model, nhead, add_bias_kv=True, add_zero_attn=True,
                                         batch_first=True)

    def forward(self, x):
        return self.mha(x, x, x)[0]


class MHABiasKVCausal(nn.Module):
    def __init__(self, d_model, nhead):
        super().__init__()
        self.mha = nn.MultiheadAttention(d_model, nhead, add_bias_kv=True, add_zero_attn=True,
                                         batch_first=True)

    def forward(self, x):
        T = x.size(1)
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
        return self.mha(x, x, x, attn_mask=mask)[0]


class MHABoolMaskCausal(nn.Module):
    def __init__(self, d_model, nhead):
        super().__init__()
        self.mha = nn.MultiheadAttention(d_model, nhead, batch_first=True)

    def forward(self, x):
        T = x.size(1)
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
        return self.mha(x, x, x, attn_mask=mask, is_causal=True)[0]


class MHAFloatMaskCausal(nn.Module):
    def __init__(self, d_model, nhead):
        super().__init__()
        self.mha = nn.MultiheadAttention(d_model, nhead, batch_first=True)

    def forward(self, x):
        T = x.size(1)
        mask = nn.Transformer.generate_square_subsequent_mask(T)
        out, w = self.mha(x, x, x, attn_mask=mask, need_weights=True, average_attn_weights=False)
        return out


class MHAPerHeadWeights(nn.Module):
    def __init__(self, d_model, nhead):
        super().__init__()
        self.mha = nn.MultiheadAttention(d_model, nhead, batch_first=True)

    def forward(self, x):
        out, w = self.mha(x, x, x, need_weights=True, average_attn_weights=False)
        return out + w.mean(dim=1).sum(-1, keepdim=True)


class Mha3DMask(nn.Module):
    def __init__(self, d_model, nhead):
        super().__init__()
        self.nhead = nhead
        self.mha = nn.MultiheadAttention(d_model, nhead, batch_first=True)

    def forward(self, x):
        B, T, _ = x.shape
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool), 1).expand(B * self.nhead, T, T)
        return self.mha(x, x, x, attn_mask=mask)[0]


class EncNormFirstGelu(nn.Module):
    def __init__(self, d_model, nhead):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d_model, nhead, 2 * d_model, dropout=0.0,
                                           activation="gelu", norm_first=True, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)

    def forward(self, x, pad):
        return self.enc(x, src_key_padding_mask=pad)


class EncCausal(nn.Module):
    def __init__(self, d_model, nhead):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d_model, nhead, 2 * d_model, dropout=0.0, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)

    def forward(self, x):
        mask = nn.Transformer.generate_square_subsequent_mask(x.size(1))
        return self.enc(x, mask=mask, is_causal=True)


class DecCausal(nn.Module):
    def __init__(self, d_model, nhead):
        super().__init__()
        layer = nn.TransformerDecoderLayer(d_model, nhead, 2 * d_model, dropout=0.0,
                                           batch_first=True, norm_first=True)
        self.dec = nn.TransformerDecoder(layer, 2)

    def forward(self, x, context, mem_pad):
        T, S = x.size(1), context.size(1)
        mask = nn.Transformer.generate_square_subsequent_mask(T)
        mem_mask = torch.zeros(T, S)
        return self.dec(x, context, tgt_mask=mask, tgt_is_causal=True,
                        memory_key_padding_mask=mem_pad, memory_mask=mem_mask)


class FullTransformer(nn.Module):
    def __init__(self, d_model, nhead):
        super().__init__()
        self.tf = nn.Transformer(d_model, nhead, num_encoder_layers=1, num_decoder_layers=1,
                                 dim_feedforward=2 * d_model, dropout=0.0, batch_first=True)

    def forward(self, src, tgt):
        mask = self.tf.generate_square_subsequent_mask(tgt.size(1))
        return self.tf(src, tgt, tgt_mask=mask, tgt_is_causal=True)


class FullTransformerSeqFirst(nn.Module):
    def __init__(self, d_model, nhead):
        super().__init__()
        self.tf = nn.Transformer(d_model, nhead, num_encoder_layers=1, num_decoder_layers=1,
                                 dim_feedforward=2 * d_model, dropout=0.0)

    def forward(self, src, tgt):
        mask = nn.Transformer.generate_square_subsequent_mask(tgt.size(0))
        return self.tf(src, tgt, tgt_mask=mask)
