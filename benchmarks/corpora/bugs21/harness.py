"""Harness stubs for the bugs21 corpus (our own code): probes that build a class from plain sizes,
and stand-ins for packages the extracted files import but that are not installed. Runs inside
run.py with probe, PERMISSIVE and EMPTY defined."""
HARNESS = {}

# aipixel/AEMatter: model.py imports its sibling swin.py, which imports three helpers from
# timm.models.layers (timm is not installed). The stand-ins: DropPath as the identity (every
# drop rate here is 0), to_2tuple, and trunc_normal_ from torch.
_TIMM_LAYERS = '''"""stand-in for timm.models.layers: the three names swin.py imports"""
import torch.nn as nn


class DropPath(nn.Module):
    """the identity: drop-path rate 0 is all that is used here"""
    def __init__(self, drop_prob=0.0):
        super().__init__()
        self.drop_prob = drop_prob

    def forward(self, x):
        return x


def to_2tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x, x)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0):
    return nn.init.trunc_normal_(tensor, mean=mean, std=std, a=a, b=b)
'''
HARNESS["b21_timm"] = {
    "@/timm/__init__.py": '"""stand-in for timm (not installed)"""\n',
    "@/timm/models/__init__.py": '"""stand-in for timm.models"""\n',
    "@/timm/models/layers.py": _TIMM_LAYERS,
}

# huggingface/pytorch-openai-transformer-lm: Attention(nx, n_ctx, cfg, scale) reads n_head and the
# two dropout rates from a config object; the probe builds it from plain sizes (dropout 0, scaled,
# a context longer than the probe's T, as in the model: n_ctx 512 against shorter inputs).
HARNESS["b21_openai_lm"] = {
    "probe_openai_lm.py": probe('''from types import SimpleNamespace

from model_pytorch import Attention


class OpenAIAttention(Attention):
    """the causal self-attention of the OpenAI GPT port, its cfg built from plain sizes"""
    def __init__(self, n_embd, n_head, n_ctx):
        super().__init__(n_embd, n_ctx, SimpleNamespace(n_head=n_head, attn_pdrop=0.0, resid_pdrop=0.0), scale=True)'''),
}

# lucidrains/block-recurrent-transformer-pytorch: the model returns (logits, memories, states);
# the probe builds a small one from plain sizes (depth 2, so that layer 1 is the recurrent one, as
# the default places it at depth // 2) and returns the logits and the recurrent layer's next state
# (asked for, so that the state weights take part as they do at the end of each training window).
HARNESS["b21_block_recurrent"] = {
    "block_recurrent_transformer_pytorch/__init__.py": EMPTY,
    "probe_block_recurrent.py": probe('''from torch import nn

from block_recurrent_transformer_pytorch.block_recurrent_transformer_pytorch import BlockRecurrentTransformer


class BlockRecurrentLM(nn.Module):
    """BlockRecurrentTransformer at small sizes (xpos rotary on, its default); forward gives the logits
    and the next recurrent state"""
    def __init__(self, num_tokens, dim, heads, dim_head, block_width):
        super().__init__()
        self.net = BlockRecurrentTransformer(num_tokens=num_tokens, dim=dim, depth=2, dim_head=dim_head,
                                             heads=heads, max_seq_len=2 * block_width, block_width=block_width,
                                             num_state_vectors=4)

    def forward(self, x):
        logits, _, states = self.net(x, return_memories_and_states=True)
        return logits, states[0]'''),
}

# lucidrains/tranception-pytorch: the module imports rearrange_many from einops_exts (not
# installed); the stand-in applies einops.rearrange to each tensor.
HARNESS["b21_einops_exts"] = {
    "@/einops_exts/__init__.py": ('"""stand-in for einops_exts: rearrange_many only"""\n'
                                  'from einops import rearrange\n\n\n'
                                  'def rearrange_many(tensors, pattern, **axes_lengths):\n'
                                  '    return tuple(rearrange(t, pattern, **axes_lengths) for t in tensors)\n'),
}
