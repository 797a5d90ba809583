"""Harness stubs for the bugs28 corpus (our own code): probes that build a class from plain sizes,
and stand-ins for packages the extracted files import but that are not installed (or that would pull
in the rest of their framework). Runs inside run.py with probe, PERMISSIVE and EMPTY defined."""
HARNESS = {}

# dbiir/UER-py: uer/layers/embeddings.py imports uer.layers.layer_norm (extracted beside it). The
# package __init__ files are replaced by empty ones (uer/layers/__init__ imports every embedding).
# The probe builds WordSinusoidalposEmbedding's `args` namespace from plain sizes (dropout off, the
# embedding layer norm kept) and calls forward(src, seg) with seg None (the class ignores it).
HARNESS["b28_uer"] = {
    "uer/__init__.py": EMPTY,
    "uer/layers/__init__.py": EMPTY,
    "probe_uer_embedding.py": probe('''import types
from uer.layers.embeddings import WordSinusoidalposEmbedding


class UERSinusoidalEmbedding(WordSinusoidalposEmbedding):
    """UER's word + sinusoidal position embedding with its args namespace built from plain sizes"""
    def __init__(self, emb_size, vocab_size):
        super().__init__(types.SimpleNamespace(emb_size=emb_size, dropout=0.0, remove_embedding_layernorm=False),
                         vocab_size)

    def forward(self, src):
        return super().forward(src, None)'''),
}

# allenai/allennlp: pytorch_transformer_wrapper.py imports Seq2SeqEncoder (whose module pulls in
# allennlp.common's registry and its dependencies), allennlp.nn.util (extracted; it imports only
# allennlp.common.checks) and the `overrides` package (not installed). Our stand-ins:
# Seq2SeqEncoder is an nn.Module whose `register(name)` decorator returns the class unchanged;
# ConfigurationError is a plain exception; `overrides` returns the method it decorates. The probe
# at the root imports the wrapper as its package does.
HARNESS["b28_allennlp"] = {
    "allennlp/__init__.py": EMPTY,
    "allennlp/common/__init__.py": EMPTY,
    "allennlp/common/checks.py": '''"""stand-in for allennlp.common.checks: the exception class only"""
class ConfigurationError(Exception):
    pass
''',
    "allennlp/modules/__init__.py": EMPTY,
    "allennlp/modules/seq2seq_encoders/__init__.py": EMPTY,
    "allennlp/modules/seq2seq_encoders/seq2seq_encoder.py": '''"""stand-in for allennlp's Seq2SeqEncoder: an nn.Module with a do-nothing register decorator"""
import torch.nn as nn


class Seq2SeqEncoder(nn.Module):
    @classmethod
    def register(cls, name, **kwargs):
        return lambda subclass: subclass
''',
    "allennlp/nn/__init__.py": EMPTY,
    "@/overrides.py": '''"""stand-in for the overrides package: the decorator returns its argument"""
def overrides(method):
    return method
''',
    "probe_allennlp_transformer.py": probe(
        "from allennlp.modules.seq2seq_encoders.pytorch_transformer_wrapper import PytorchTransformer"),
}

# facebookresearch/fairseq: transformer_layer.py imports fairseq.utils (which imports
# fairseq.modules and their circular imports) and fairseq.modules (whose __init__ imports every
# module). multihead_attention.py, layer_norm.py and incremental_decoding_utils.py are extracted;
# our fairseq.utils holds the two helpers the layer and the attention call (softmax in float32,
# get_activation_fn), our fairseq.modules __init__ imports only LayerNorm and MultiheadAttention.
# The probe builds the layer's argparse namespace from plain sizes (post-norm, dropout off) and
# takes (x, attn_mask): the padding mask is None (fairseq's encoder passes None when nothing is
# padded), the attention mask is the layer's own 1-means-masked-out (T, T) mask.
HARNESS["b28_fairseq"] = {
    "fairseq/__init__.py": EMPTY,
    "fairseq/utils.py": '''"""stand-in for fairseq.utils: the two helpers the extracted layer and attention call"""
import torch
import torch.nn.functional as F


def softmax(x, dim, onnx_trace=False):
    return F.softmax(x, dim=dim, dtype=torch.float32)


def get_activation_fn(activation="relu"):
    return {"relu": F.relu, "gelu": F.gelu, "tanh": torch.tanh, "linear": lambda x: x}[activation]
''',
    "fairseq/modules/__init__.py": '''"""stand-in for fairseq.modules' __init__: the two classes the encoder layer imports"""
from .layer_norm import LayerNorm
from .multihead_attention import MultiheadAttention
''',
    "probe_fairseq_layer.py": probe('''import argparse
from fairseq.modules.transformer_layer import TransformerEncoderLayer


class FairseqEncoderLayer(TransformerEncoderLayer):
    """fairseq's encoder layer with its args namespace built from plain sizes (post-norm, dropout off);
    no padding mask, the (T, T) attention mask passed through"""
    def __init__(self, embed_dim, heads, ffn_dim):
        super().__init__(argparse.Namespace(encoder_embed_dim=embed_dim, encoder_attention_heads=heads,
                                            encoder_ffn_embed_dim=ffn_dim, attention_dropout=0.0, dropout=0.0,
                                            activation_fn="relu", encoder_normalize_before=False))

    def forward(self, x, attn_mask):
        return super().forward(x, None, attn_mask)'''),
}

# pytorch/text: torchtext/models/roberta/modules.py imports torch only; the package __init__ files
# are replaced by empty ones (torchtext's own loads its C++ extension).
HARNESS["b28_torchtext"] = {
    "torchtext/__init__.py": EMPTY,
    "torchtext/models/__init__.py": EMPTY,
    "torchtext/models/roberta/__init__.py": EMPTY,
}

# asteroid-team/asteroid: masknn/attention.py imports masknn.norms and masknn.activations
# (extracted), asteroid.utils.has_arg (the utils package __init__ imports parser and data helpers:
# our stand-in defines has_arg with inspect), asteroid.dsp.overlap_add.DualPathProcessing (used by
# DPTransformer only: a name-only stand-in), and norms/activations import asteroid.complex_nn
# (used only for complex variants: permissive). utils/torch_utils.py is extracted.
HARNESS["b28_asteroid"] = {
    "asteroid/__init__.py": EMPTY,
    "asteroid/masknn/__init__.py": EMPTY,
    "asteroid/complex_nn.py": PERMISSIVE,
    "asteroid/utils/__init__.py": '''"""stand-in for asteroid.utils' __init__: has_arg only"""
import inspect


def has_arg(fn, name):
    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
''',
    "asteroid/dsp/__init__.py": EMPTY,
    "asteroid/dsp/overlap_add.py": '''"""stand-in for asteroid.dsp.overlap_add: the name only (the probed layer does not chunk)"""
import torch.nn as nn


class DualPathProcessing(nn.Module):
    def __init__(self, *args, **kwargs):
        raise RuntimeError("stand-in")
''',
}

# OpenGVLab/LLaMA-Adapter: imagebind_LLM/llama/llama.py imports torch only; the package __init__
# (tokenizer, ImageBind adapter) is replaced by an empty one. The probe drives Attention the way the
# file's Transformer.forward drives it while generating: the prompt (all but the last token) with
# the causal mask at start_pos 0, then the last token alone at start_pos T-1 with mask None (what
# Transformer.forward passes for seqlen 1), keys and values read back from the KV cache; it returns
# both outputs, concatenated over time. Its train() keeps the KV cache on the CPU (the original
# allocates it with .cuda() when switched to eval). LoRA off (w_lora=False), bias tuning on.
HARNESS["b28_llama_adapter"] = {
    "imagebind_LLM/llama/__init__.py": EMPTY,
    "imagebind_LLM/probe_llama_adapter.py": probe('''import torch
import torch.nn as nn
from llama.llama import Attention, ModelArgs, precompute_freqs_cis


class LlamaAdapterDecodeStep(Attention):
    """imagebind_LLM's Attention run as a prompt (causal mask, start_pos 0) and then one decoding step
    (the last token, start_pos T-1, mask None) through its KV cache; the two outputs concatenated"""
    def __init__(self, dim, n_heads, max_seq_len, max_batch_size):
        super().__init__(ModelArgs(dim=dim, n_heads=n_heads, max_seq_len=max_seq_len,
                                   max_batch_size=max_batch_size, w_lora=False))

    def train(self, mode=True):
        nn.Module.train(self, mode)
        shape = (self.args.max_batch_size, self.args.max_seq_len, self.n_local_heads, self.head_dim)
        self.cache_k = None if mode else torch.zeros(shape)
        self.cache_v = None if mode else torch.zeros(shape)
        return self

    def forward(self, x):
        T = x.shape[1]
        freqs_cis = precompute_freqs_cis(self.head_dim, T).to(x.device)
        mask = torch.triu(torch.full((1, 1, T - 1, T - 1), float("-inf"), device=x.device), diagonal=1).type_as(x)
        prompt = super().forward(x[:, :-1], 0, freqs_cis[:-1], mask)
        step = super().forward(x[:, -1:], T - 1, freqs_cis[-1:], None)
        return torch.cat([prompt, step], dim=1)'''),
}
