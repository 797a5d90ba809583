"""Reference attention models: from averaging previous tokens to a tiny GPT, one idea per file.

Read them in order; each file adds one idea to the one before:

=========================  ============================================================
file                       idea
=========================  ============================================================
m01_average                average of previous tokens: loop, tril matmul, masked softmax
m02_simple_attention       dot-product self-attention without weights
m03_head                   one head: W_q, W_k, W_v, scaled by 1/sqrt(head_size)
m04_causal_attention       the causal mask as a registered buffer, dropout on the weights
m05_multi_head_wrapper     multi-head as a list of heads, concatenated, projected
m06_multi_head             multi-head with weight splits: split_heads / merge_heads
m07_fused_qkv              one (3C x C) projection for q, k and v
m08_einsum                 the same with einsum and named axes
m09_cross_attention        queries from x (B, T, C), keys and values from context (B, S, C)
m10_sdpa                   F.scaled_dot_product_attention
m11_block                  pre-norm transformer block: attention and feed-forward
m12_gpt                    embeddings, blocks, final norm, language-model head
weights                    copy weights between the multi-head layouts
=========================  ============================================================

Shapes are written in the annotations, with shapetrace's dimension names (B, T, C, H, d, S,
V), and checked on every call: ``Float[Tensor, "B T C"]`` instead of a ``# (B, T, C)``
comment. ``C={self.n_embd}`` ties an axis to the constructor, so a tensor of the wrong width
is refused at the door with the argument and the sizes named, instead of failing three
matmuls later. The checks use jaxtyping's ``@jaxtyped(typechecker=beartype)`` decorator
rather than its import hook: the decorator is visible where it acts, and it works however the
file is imported (as part of this package, by path from shapetrace's command line, or pasted
into a notebook), whereas the hook only covers modules imported after it is installed.
"""

from reference_models.m01_average import AverageLoop, AverageMatmul, AverageSoftmax
from reference_models.m02_simple_attention import SimpleSelfAttention
from reference_models.m03_head import Head, causal_mask
from reference_models.m04_causal_attention import CausalAttention
from reference_models.m05_multi_head_wrapper import MultiHeadAttentionWrapper
from reference_models.m06_multi_head import MultiHeadAttention, merge_heads, split_heads
from reference_models.m07_fused_qkv import FusedQKVAttention
from reference_models.m08_einsum import EinsumAttention
from reference_models.m09_cross_attention import CrossAttention
from reference_models.m10_sdpa import SDPAttention
from reference_models.m11_block import Block, FeedForward
from reference_models.m12_gpt import GPT
from reference_models.weights import (
    AttentionWeights,
    attention_weights,
    copy_attention_weights,
    load_attention_weights,
)

__all__ = [
    "AverageLoop",
    "AverageMatmul",
    "AverageSoftmax",
    "SimpleSelfAttention",
    "Head",
    "causal_mask",
    "CausalAttention",
    "MultiHeadAttentionWrapper",
    "MultiHeadAttention",
    "split_heads",
    "merge_heads",
    "FusedQKVAttention",
    "EinsumAttention",
    "CrossAttention",
    "SDPAttention",
    "FeedForward",
    "Block",
    "GPT",
    "AttentionWeights",
    "attention_weights",
    "load_attention_weights",
    "copy_attention_weights",
]
