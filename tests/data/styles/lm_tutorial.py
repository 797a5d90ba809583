"""The framework's own language-model tutorial: time-first tensors, a (max_len, 1, d_model)
positional buffer, nn.TransformerEncoder with a square subsequent mask passed as ``src_mask``."""

import math

import torch
import torch.nn as nn


class TutPositionalEncoding(nn.Module):
    INIT = {"d_model": "C", "dropout": 0.0, "max_len": 64}
    INPUTS = ["x=T,B,C"]

    def __init__(self, d_model, dropout=0.1, max_len=5000):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, 1, d_model)
        pe[:, 0, 0::2] = torch.sin(position * div_term)
        pe[:, 0, 1::2] = torch.cos(position * div_term[: d_model // 2])
        self.register_buffer("pe", pe)

    def forward(self, x):
        """
        Arguments:
            x: Tensor, shape ``[seq_len, batch_size, embedding_dim]``
        """
        x = x + self.pe[: x.size(0)]
        return self.dropout(x)


class TutTransformerModel(nn.Module):
    INIT = {"ntoken": "V", "d_model": "C", "nhead": "H", "d_hid": 32, "nlayers": 2, "dropout": 0.0}
    INPUTS = ["src=T,B:long:V"]

    def __init__(self, ntoken, d_model, nhead, d_hid, nlayers, dropout=0.5):
        super().__init__()
        self.model_type = "Transformer"
        self.pos_encoder = TutPositionalEncoding(d_model, dropout)
        encoder_layers = nn.TransformerEncoderLayer(d_model, nhead, d_hid, dropout)
        self.transformer_encoder = nn.TransformerEncoder(encoder_layers, nlayers,
                                                         enable_nested_tensor=False)
        self.embedding = nn.Embedding(ntoken, d_model)
        self.d_model = d_model
        self.linear = nn.Linear(d_model, ntoken)
        self.init_weights()

    def init_weights(self):
        initrange = 0.1
        self.embedding.weight.data.uniform_(-initrange, initrange)
        self.linear.bias.data.zero_()
        self.linear.weight.data.uniform_(-initrange, initrange)

    def forward(self, src, src_mask=None):
        """
        Arguments:
            src: Tensor, shape ``[seq_len, batch_size]``
            src_mask: Tensor, shape ``[seq_len, seq_len]``

        Returns:
            output Tensor of shape ``[seq_len, batch_size, ntoken]``
        """
        src = self.embedding(src) * math.sqrt(self.d_model)
        src = self.pos_encoder(src)
        if src_mask is None:
            src_mask = nn.Transformer.generate_square_subsequent_mask(len(src))
        output = self.transformer_encoder(src, src_mask)
        output = self.linear(output)
        return output


class TutBatchFirstMixup(nn.Module):
    """Batch-first tokens fed to a time-first positional buffer through a transpose and back."""

    INIT = {"ntoken": "V", "d_model": "C", "nhead": "H"}
    INPUTS = ["src=B,T:long:V"]

    def __init__(self, ntoken, d_model, nhead):
        super().__init__()
        self.embedding = nn.Embedding(ntoken, d_model)
        self.pos_encoder = TutPositionalEncoding(d_model, 0.0, 64)
        layer = nn.TransformerEncoderLayer(d_model, nhead, 4 * d_model, 0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
        self.head = nn.Linear(d_model, ntoken)

    def forward(self, src):
        x = self.embedding(src).transpose(0, 1)
        x = self.pos_encoder(x).transpose(0, 1)
        mask = nn.Transformer.generate_square_subsequent_mask(src.size(1))
        return self.head(self.encoder(x, mask=mask, is_causal=True))


# --- buggy twins ------------------------------------------------------------------------------

class TutPositionsOverBatch(nn.Module):
    """Batch-first data added to the time-first buffer: position b goes to sample b."""

    BUG = "position-axis"
    INIT = {"ntoken": "V", "d_model": "C"}
    INPUTS = ["src=B,T:long:V"]

    def __init__(self, ntoken, d_model):
        super().__init__()
        self.embedding = nn.Embedding(ntoken, d_model)
        self.pos_encoder = TutPositionalEncoding(d_model, 0.0, 64)
        self.linear = nn.Linear(d_model, ntoken)

    def forward(self, src):
        x = self.embedding(src)
        x = x + self.pos_encoder.pe[: x.size(0)]  # BUG
        return self.linear(x)


class TutForgotSrcMask(nn.Module):
    BUG = "causal-leak"
    #: with nothing declared, its causal flag is a default the code never reads: no intent
    UNDECLARED = "causal-leak not checked"
    INIT = {"ntoken": "V", "d_model": "C", "nhead": "H", "causal": True}
    INPUTS = ["src=T,B:long:V"]

    def __init__(self, ntoken, d_model, nhead, causal=True):
        super().__init__()
        self.causal = causal
        self.embedding = nn.Embedding(ntoken, d_model)
        layer = nn.TransformerEncoderLayer(d_model, nhead, 32, 0.0)
        self.transformer_encoder = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
        self.linear = nn.Linear(d_model, ntoken)

    def forward(self, src, src_mask=None):
        """src: Tensor, shape ``[seq_len, batch_size]``"""
        output = self.transformer_encoder(self.embedding(src), src_mask)  # BUG
        return self.linear(output)


class OldTutPositionalEncoding(nn.Module):
    """The older tutorial's encoding: no docstring, the table cut to x's first axis."""

    INIT = {"d_model": "C", "dropout": 0.0, "max_len": 64}
    INPUTS = ["x=T,B,C"]

    def __init__(self, d_model, dropout=0.1, max_len=5000):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term[: d_model // 2])
        pe = pe.unsqueeze(0).transpose(0, 1)
        self.register_buffer("pe", pe)

    def forward(self, x):
        x = x + self.pe[: x.size(0), :]
        return self.dropout(x)
