"""Names that mean sizes: the constructor parameters, attributes and config keys students and
libraries give a model's width, heads, head size, length, vocabulary, layers and MLP width, and
the dim names annotations use (``batch`` -> B). Plain tables, read by constructor inference
(``_spec``), by the sizes a built model proves (``_proven``) and by annotation reading
(``_hints``).
"""

from __future__ import annotations

import re


def names(*names: str) -> frozenset[str]:
    return frozenset(names)


WIDTH = names("d_model", "n_embd", "n_embed", "embed_dim", "emb_dim", "embedding_dim", "dim",
              "hidden_size", "d_in", "d_out", "model_dim", "in_dim", "out_dim", "input_dim",
              "output_dim", "in_features", "out_features", "ndim", "normalized_shape",
              "embed_size", "emb_size", "d_embed", "features", "emb", "ninp")
HEADS = names("num_heads", "n_head", "n_heads", "heads", "nhead", "num_attention_heads", "h")
HEAD_SIZE = names("head_size", "head_dim", "d_k", "d_head", "d_v", "dim_head")
LENGTH = names("block_size", "context_length", "max_len", "max_seq_len", "max_length",
               "max_seq_length", "max_position_embeddings", "seq_len", "seq_length",
               "n_positions", "context_size", "n_ctx", "maxlen")
VOCAB = names("vocab_size", "n_vocab", "vocab", "src_vocab", "tgt_vocab", "src_vocab_size",
              "tgt_vocab_size", "ntoken", "n_token", "num_tokens", "num_embeddings")
LAYERS = names("n_layer", "num_layers", "n_layers", "depth", "num_hidden_layers", "nlayers")
FFN = names("ffn_dim", "d_ff", "hidden_dim", "intermediate_size", "dim_feedforward",
            "mlp_dim", "d_ffn", "ff_dim", "d_hid", "nhid", "d_hidden")
KV_HEADS = names("kv_heads", "n_kv_head", "n_kv_heads", "num_kv_heads", "num_key_value_heads")
DROPOUT = re.compile(r"(dropout|pdrop|drop_rate|drop_prob|dropout_rate|dropout_prob|dropout_p|p_drop)\Z")
CONFIG = names("config", "cfg", "conf", "configs", "hparams", "params", "args", "model_args",
               "model_config")

#: dim names in annotations that mean a shapetrace dim (looked up after an exact match)
DIM_ALIASES = {
    "b": "B", "batch": "B", "bs": "B", "batch_size": "B",
    "t": "T", "n": "T", "seq": "T", "seq_len": "T", "seqlen": "T", "time": "T", "tokens": "T",
    "s": "S", "src_len": "S", "source": "S", "seq_k": "S",
    "h": "H", "nh": "H", "heads": "H", "n_head": "H", "n_heads": "H", "num_heads": "H",
    "hs": "d", "dh": "d", "dk": "d", "d_k": "d", "d_head": "d", "head_size": "d", "head_dim": "d",
    "c": "C", "e": "C", "dim": "C", "d_model": "C", "embed": "C", "emb": "C", "n_embd": "C",
    "hidden": "C", "channels": "C",
    "v": "V", "vocab": "V", "vocab_size": "V",
}

#: attribute names whose int value is a dim's size. Narrower than the constructor names above:
#: ``nn.Linear.in_features`` or a ``dim`` attribute says nothing about the model width.
PROVING = (
    (names("d_model", "n_embd", "n_embed", "embed_dim", "hidden_size", "model_dim"), "C"),
    (names("num_heads", "n_head", "n_heads", "nhead", "num_attention_heads"), "H"),
    (names("head_size", "head_dim", "d_k", "d_head", "dim_head"), "d"),
    (names("block_size", "context_length", "max_position_embeddings", "n_positions",
            "max_seq_len", "n_ctx"), "L"),
    (VOCAB, "V"),
)
PROVING_NAMES = frozenset().union(*(names for names, _ in PROVING))
