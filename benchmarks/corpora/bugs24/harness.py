"""Harness stubs for the bugs24 corpus (our own code): probes that build a class from plain sizes,
and stand-ins for packages the extracted files import but that are not installed. Runs inside
run.py with probe, PERMISSIVE and EMPTY defined."""
HARNESS = {}

# lucidrains/gateloop-transformer: gateloop_transformer.py imports torch and einops only; the
# package __init__ (which imports the whole package) is replaced by an empty one.
HARNESS["b24_gateloop"] = {
    "gateloop_transformer/__init__.py": EMPTY,
}

# lucidrains/omninet-pytorch: omninet_pytorch.py imports performer_pytorch (not installed), used only
# by the non-causal Omninet class; OmninetCausal does not touch it, so a permissive stand-in does.
HARNESS["b24_omninet"] = {
    "omninet_pytorch/__init__.py": EMPTY,
    "@/performer_pytorch.py": PERMISSIVE,
}

# lucidrains/CoLT5-attention: transformer_block.py imports local_attention.LocalMHA (not installed),
# used only by the routed attention classes, not by the plain Attention probed here (permissive
# stand-in); attend.py and coor_descent.py are extracted beside it.
HARNESS["b24_colt5"] = {
    "colt5_attention/__init__.py": EMPTY,
    "@/local_attention.py": PERMISSIVE,
}

# lucidrains/PoPE-pytorch: PoPE.py imports slice_right_at_dim from torch_einops_utils (not
# installed; our stand-in: the last `length` entries along a dim). The file holds the positional
# embedding and apply_pope_to_qk, no attention layer: the probe PoPEAttention is a plain
# non-causal multi-head self-attention of ours whose queries and keys go through
# apply_pope_to_qk with a PoPE table over the first rotate_dim features of each head, then
# F.scaled_dot_product_attention (scaled by the size of the embedded q's last axis).
_B24_TEI = '''"""stand-in for torch_einops_utils: slice_right_at_dim only"""


def slice_right_at_dim(t, length, dim=-1):
    """the last `length` entries of t along dim"""
    size = t.shape[dim]
    return t.narrow(dim, size - length, length)
'''
HARNESS["b24_pope"] = {
    "PoPE_pytorch/__init__.py": EMPTY,
    "@/torch_einops_utils.py": _B24_TEI,
    "probe_pope.py": probe('''import torch.nn as nn
import torch.nn.functional as F
from PoPE_pytorch.PoPE import PoPE, apply_pope_to_qk


class PoPEAttention(nn.Module):
    """non-causal multi-head self-attention whose queries and keys go through PoPE, rotating the
    first rotate_dim features of each head (partial rotation)"""
    def __init__(self, dim, heads, dim_head, rotate_dim):
        super().__init__()
        self.heads, self.dim_head = heads, dim_head
        self.to_qkv = nn.Linear(dim, 3 * heads * dim_head, bias=False)
        self.to_out = nn.Linear(heads * dim_head, dim, bias=False)
        self.pope = PoPE(rotate_dim, heads=heads)

    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = self.to_qkv(x).view(b, n, 3, self.heads, self.dim_head).permute(2, 0, 3, 1, 4)
        q, k = apply_pope_to_qk(self.pope(n), q, k)
        out = F.scaled_dot_product_attention(q, k, v)  # scaled by the size of q's last axis
        out = out.transpose(1, 2).reshape(b, n, self.heads * self.dim_head)
        return self.to_out(out)'''),
}

# janvainer/speedyspeech: code/functional.py holds positional_encoding and scaled_dot_attention and
# imports matplotlib (not installed; permissive stand-in). The repository's model that uses them
# (duration_extractor.py) needs its data pipeline and hyper-parameter module, so the probe
# PositionalDotAttention is ours: one-head dot-product attention that adds the sinusoidal table to
# queries and keys the way the duration extractor's forward does. The probe sits in code/ (the
# directory functional.py is imported from; "code" itself is a standard-library module name).
HARNESS["b24_speedyspeech"] = {
    "@/matplotlib/__init__.py": PERMISSIVE,
    "@/matplotlib/pyplot.py": PERMISSIVE,
    "code/probe_speedyspeech.py": probe('''import torch.nn as nn
from functional import positional_encoding, scaled_dot_attention


class PositionalDotAttention(nn.Module):
    """dot-product attention of queries over keys with sinusoidal positions added to both, as the
    duration extractor's forward does (keys at rate w, queries at rate 1); one head, no mask"""
    def __init__(self, channels, w=1):
        super().__init__()
        self.w = w
        self.to_q = nn.Linear(channels, channels)
        self.to_k = nn.Linear(channels, channels)
        self.to_v = nn.Linear(channels, channels)

    def forward(self, queries, keys):
        q, k, v = self.to_q(queries), self.to_k(keys), self.to_v(keys)
        k = k + positional_encoding(k.shape[-1], k.shape[1], w=self.w).to(k.device)
        q = q + positional_encoding(q.shape[-1], q.shape[1], w=1).to(q.device)
        out, _ = scaled_dot_attention(q, k, v)
        return out'''),
}

# lucidrains/uformer-pytorch: uformer_pytorch.py imports torch and einops only; the package
# __init__ is replaced by an empty one.
HARNESS["b24_uformer"] = {
    "uformer_pytorch/__init__.py": EMPTY,
}
