"""Harness stubs for the bugs28 corpus (our own code): probes that build a class from plain sizes,
and stand-ins for packages the extracted files import but that are not installed. Runs inside
run.py with probe, PERMISSIVE and EMPTY defined."""
HARNESS = {}

# RUCAIBox/TextBox: textbox/module/Attention/attention_mechanism.py imports torch only; it is the
# target itself (no stubs). Nothing to add.

# kohya-ss/sd-scripts: library/flux_models.py imports library.device_utils (extracted; torch only)
# and einops. The probe (ours) sits at the root, imports the extracted package, and drives one
# DoubleStreamBlock the way Flux.forward does: rotary tables from EmbedND over text ids (all 0) and
# image ids (row, column), and the text attention mask as the model passes it in.
_B28_FLUX_PROBE = probe('''import torch
import torch.nn as nn
from library.flux_models import DoubleStreamBlock, EmbedND


class FluxDoubleBlockProbe(nn.Module):
    """one Flux double-stream block from plain sizes; rotary positions made as Flux.forward makes
    them (text ids 0, image ids (0, row, col) on a grid `width` wide)"""
    def __init__(self, hidden_size, num_heads, width):
        super().__init__()
        head_dim = hidden_size // num_heads
        self.width = width
        self.block = DoubleStreamBlock(hidden_size, num_heads, mlp_ratio=2.0, qkv_bias=True)
        self.pe_embedder = EmbedND(dim=head_dim, theta=10000, axes_dim=[head_dim // 4, head_dim // 4, head_dim // 2])

    def forward(self, img, txt, vec, txt_attention_mask):
        B, T, S = img.shape[0], img.shape[1], txt.shape[1]
        idx = torch.arange(T, device=img.device)
        img_ids = torch.stack([torch.zeros_like(idx), idx // self.width, idx % self.width], dim=-1)
        img_ids = img_ids[None].expand(B, -1, -1).float()
        txt_ids = torch.zeros(B, S, 3, device=img.device)
        pe = self.pe_embedder(torch.cat((txt_ids, img_ids), dim=1))
        return self.block(img, txt, vec, pe, txt_attention_mask)''')
HARNESS["b28_flux"] = {
    "library/__init__.py": EMPTY,
    "probe_flux.py": _B28_FLUX_PROBE,
}

# time-series-foundation-models/lag-llama: lag_llama/model/module.py imports gluonts (distribution
# and scaler classes, lag helpers) and the repository's gluon_utils RobustScaler, all used only by
# LagLlamaModel, never by CausalSelfAttention: permissive stand-ins. The package __init__ files are
# replaced by empty ones. The probe (ours) runs the attention as lag-llama's cached inference does:
# a first call over the context with use_kv_cache=True builds the cache, the next call passes only
# the newest token (the cache is reset at the start of every forward, so the probe keeps no state
# between calls). It returns what inference reads off each call: the context call's output at its
# last token and the step's output.
_B28_LAG_PROBE = probe('''import torch
import torch.nn as nn
from lag_llama.model.module import CausalSelfAttention, LTSMConfig


class LagLlamaCachedStepProbe(nn.Module):
    """lag-llama's CausalSelfAttention from plain sizes (no rope scaling, dropout 0): prefill the
    KV cache with x[:, :-1], then one cached step with x[:, -1:]; returns the outputs lag-llama
    reads off the two calls: the context call's at its last token and the step's, (B, 2, C)"""
    def __init__(self, n_head, n_embd_per_head, block_size):
        super().__init__()
        self.attn = CausalSelfAttention(LTSMConfig(n_head=n_head, n_embd_per_head=n_embd_per_head,
                                                   block_size=block_size, n_layer=1, dropout=0.0))

    def forward(self, x):
        self.attn.kv_cache = None
        context = self.attn(x[:, :-1], use_kv_cache=True)
        step = self.attn(x[:, -1:], use_kv_cache=True)
        self.attn.kv_cache = None
        return torch.cat((context[:, -1:], step), dim=1)''')
HARNESS["b28_lagllama"] = {
    "lag_llama/__init__.py": EMPTY,
    "lag_llama/model/__init__.py": EMPTY,
    "@/gluonts/__init__.py": EMPTY,
    "@/gluonts/torch/__init__.py": EMPTY,
    "@/gluonts/torch/distributions.py": PERMISSIVE,
    "@/gluonts/torch/scaler.py": PERMISSIVE,
    "@/gluonts/torch/util.py": PERMISSIVE,
    "@/gluon_utils/__init__.py": EMPTY,
    "@/gluon_utils/scalers/__init__.py": EMPTY,
    "@/gluon_utils/scalers/robust_scaler.py": PERMISSIVE,
    "probe_lagllama.py": _B28_LAG_PROBE,
}

# HVision-NKU/SRFormer: basicsr/archs/srformer_arch.py imports basicsr.utils.registry.ARCH_REGISTRY
# (a decorator registry) and to_2tuple / trunc_normal_ from the sibling arch_util.py, which itself
# imports torchvision and basicsr's compiled DCN ops. Our stand-ins: a registry whose register()
# returns the class unchanged, and an arch_util with only those two helpers. The probe (ours) calls
# one PSA_Block with its own input resolution as x_size, as BasicLayer does.
_B28_REGISTRY = '''"""stand-in for basicsr.utils.registry: register() returns the class unchanged"""
class _Registry:
    def register(self, obj=None):
        if obj is None:
            return lambda o: o
        return obj


ARCH_REGISTRY = _Registry()
'''
_B28_ARCH_UTIL = '''"""stand-in for basicsr/archs/arch_util.py (the real one imports torchvision and compiled ops):
only the two helpers srformer_arch.py imports"""
import collections.abc
from itertools import repeat

import torch.nn as nn


def _ntuple(n):
    def parse(x):
        if isinstance(x, collections.abc.Iterable):
            return x
        return tuple(repeat(x, n))
    return parse


to_2tuple = _ntuple(2)


def trunc_normal_(tensor, mean=0., std=1., a=-2., b=2.):
    return nn.init.trunc_normal_(tensor, mean=mean, std=std, a=a, b=b)
'''
_B28_SRFORMER_PROBE = probe('''from basicsr.archs.srformer_arch import PSA_Block


class PSABlockProbe(PSA_Block):
    """SRFormer's permuted-self-attention block from plain sizes, called on an image of its own
    input resolution (as BasicLayer calls it); x is (B, H*W, C)"""
    def __init__(self, dim, resolution, num_heads, window_size, shift_size):
        super().__init__(dim, (resolution, resolution), num_heads, window_size=window_size,
                         shift_size=shift_size, mlp_ratio=2.0)

    def forward(self, x):
        return super().forward(x, self.input_resolution)''')
HARNESS["b28_srformer"] = {
    "basicsr/__init__.py": EMPTY,
    "basicsr/archs/__init__.py": EMPTY,
    "basicsr/utils/__init__.py": EMPTY,
    "basicsr/utils/registry.py": _B28_REGISTRY,
    "basicsr/archs/arch_util.py": _B28_ARCH_UTIL,
    "probe_srformer.py": _B28_SRFORMER_PROBE,
}

# keonlee9420/Parallel-Tacotron2: model/blocks.py imports fairseq's LightweightConv (used by the
# LConv blocks only, not by VariableLengthAttention): permissive stand-in beside the target.
HARNESS["b28_pt2"] = {
    "@/fairseq/__init__.py": EMPTY,
    "@/fairseq/modules.py": PERMISSIVE,
}

# ArrowLuo/CLIP4Clip: modules/module_cross.py imports the sibling until_module and until_config
# (extracted) and file_utils (cached_path for downloads, which imports requests/boto3): our
# stand-in. The probe (ours) calls the cross Transformer as CLIP4Clip's seqTransf similarity head
# does (modeling.py): the (B, T) frame mask made into an additive (B, T, T) mask of
# (1 - mask) * -1e6, frames put time-first, and back.
_B28_FILE_UTILS = '''"""stand-in for CLIP4Clip's modules/file_utils.py: downloads are never made here"""
def cached_path(*args, **kwargs):
    raise RuntimeError("stand-in")
'''
_B28_CLIP4CLIP_PROBE = probe('''import torch
import torch.nn as nn
from modules.module_cross import Transformer


class SeqTransfProbe(nn.Module):
    """CLIP4Clip's cross Transformer (the seqTransf temporal encoder) from plain sizes, fed as
    modeling.py feeds it: batch-first frames and a (B, T) frame mask (1 = real frame)"""
    def __init__(self, width, layers, heads):
        super().__init__()
        self.transformerClip = Transformer(width=width, layers=layers, heads=heads)

    def forward(self, visual_output, video_mask):
        extended_video_mask = (1.0 - video_mask.float().unsqueeze(1)) * -1000000.0
        extended_video_mask = extended_video_mask.expand(-1, video_mask.size(1), -1)
        visual_output = visual_output.permute(1, 0, 2)  # NLD -> LND
        visual_output = self.transformerClip(visual_output, extended_video_mask)
        return visual_output.permute(1, 0, 2)  # LND -> NLD''')
HARNESS["b28_clip4clip"] = {
    "modules/__init__.py": EMPTY,
    "modules/file_utils.py": _B28_FILE_UTILS,
    "probe_clip4clip.py": _B28_CLIP4CLIP_PROBE,
}
