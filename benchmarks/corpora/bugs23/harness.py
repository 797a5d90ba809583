"""Harness stubs for the bugs23 corpus (our own code): probes that build a class from plain sizes,
and stand-ins for packages the extracted files import but that are not installed. Runs inside
run.py with probe, PERMISSIVE and EMPTY defined."""
HARNESS = {}

# ChristophReich1996/MaxViT: maxvit/maxvit.py imports SqueezeExcite and DepthwiseSeparableConv from
# timm.models.efficientnet_blocks (used only by MBConv) and drop_path, trunc_normal_, Mlp, DropPath
# from timm.models.layers (not installed). The stand-ins: Mlp is the usual two-layer perceptron
# (fc1, act, drop, fc2, drop), DropPath/drop_path the identity at rate 0, trunc_normal_ torch's own.
_B23_TIMM_LAYERS = '''"""stand-in for timm.models.layers: Mlp, DropPath, drop_path, trunc_normal_"""
import torch.nn as nn


def drop_path(x, drop_prob=0.0, training=False):
    return x


class DropPath(nn.Module):
    """the identity: drop-path rate 0 is all the probes use"""
    def __init__(self, drop_prob=0.0):
        super().__init__()
        self.drop_prob = drop_prob

    def forward(self, x):
        return x


class Mlp(nn.Module):
    """two linear layers with an activation between them"""
    def __init__(self, in_features, hidden_features=None, out_features=None, act_layer=nn.GELU, drop=0.0):
        super().__init__()
        hidden_features = hidden_features or in_features
        out_features = out_features or in_features
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.act = act_layer()
        self.fc2 = nn.Linear(hidden_features, out_features)
        self.drop = nn.Dropout(drop)

    def forward(self, x):
        return self.drop(self.fc2(self.drop(self.act(self.fc1(x)))))


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0):
    return nn.init.trunc_normal_(tensor, mean=mean, std=std, a=a, b=b)
'''

_B23_TIMM_EFFNET = '''"""stand-in for timm.models.efficientnet_blocks: the two names maxvit.py imports (MBConv only)"""
import torch.nn as nn


class SqueezeExcite(nn.Module):
    def __init__(self, in_chs, rd_ratio=0.25, **kw):
        super().__init__()
        rd = max(1, int(in_chs * rd_ratio))
        self.fc1 = nn.Conv2d(in_chs, rd, 1)
        self.act = nn.ReLU()
        self.fc2 = nn.Conv2d(rd, in_chs, 1)

    def forward(self, x):
        s = x.mean((2, 3), keepdim=True)
        return x * self.fc2(self.act(self.fc1(s))).sigmoid()


class DepthwiseSeparableConv(nn.Module):
    def __init__(self, in_chs, out_chs, stride=1, act_layer=nn.ReLU, norm_layer=nn.BatchNorm2d, **kw):
        super().__init__()
        self.dw = nn.Conv2d(in_chs, in_chs, 3, stride=stride, padding=1, groups=in_chs)
        self.pw = nn.Conv2d(in_chs, out_chs, 1)
        self.bn = norm_layer(out_chs)
        self.act = act_layer()

    def forward(self, x):
        return self.act(self.bn(self.pw(self.dw(x))))
'''

HARNESS["b23_maxvit"] = {
    "maxvit/__init__.py": EMPTY,
    "@/timm/__init__.py": '"""stand-in for timm (not installed)"""\n',
    "@/timm/models/__init__.py": '"""stand-in for timm.models"""\n',
    "@/timm/models/layers/__init__.py": _B23_TIMM_LAYERS,
    "@/timm/models/efficientnet_blocks.py": _B23_TIMM_EFFNET,
    "probe_maxvit.py": probe('''from maxvit.maxvit import MaxViTTransformerBlock, window_partition, window_reverse


class MaxViTWindowBlock(MaxViTTransformerBlock):
    """MaxViT's transformer block with the window (block) partition, as MaxViTBlock builds it"""
    def __init__(self, in_channels, num_heads, window):
        super().__init__(in_channels=in_channels, partition_function=window_partition,
                         reverse_function=window_reverse, num_heads=num_heads,
                         grid_window_size=(window, window))'''),
}

# meta-pytorch/attention-gym: generate_alibi_bias(H) returns a FlexAttention score_mod,
# score_mod(score, b, h, q_idx, kv_idx). The probe is a plain causal multi-head attention of ours
# that applies that score_mod to its scores the way flex_attention does, elementwise, here with
# broadcast index tensors (b, h, q_idx, kv_idx) instead of a compiled kernel.
HARNESS["b23_attn_gym"] = {
    "attn_gym/__init__.py": EMPTY,
    "attn_gym/mods/__init__.py": EMPTY,
    "probe_attn_gym.py": probe('''import torch
import torch.nn as nn
from attn_gym.mods.alibi import generate_alibi_bias


class ALiBiCausalAttention(nn.Module):
    """causal multi-head self-attention whose scores go through attn_gym's ALiBi score_mod"""
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.to_qkv = nn.Linear(dim, 3 * dim)
        self.to_out = nn.Linear(dim, dim)
        self.score_mod = generate_alibi_bias(heads)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.to_qkv(x).view(B, T, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-2, -1) * (C // self.heads) ** -0.5
        b = torch.arange(B).view(B, 1, 1, 1)
        h = torch.arange(self.heads).view(1, self.heads, 1, 1)
        q_idx = torch.arange(T).view(1, 1, T, 1)
        kv_idx = torch.arange(T).view(1, 1, 1, T)
        scores = self.score_mod(scores, b, h, q_idx, kv_idx)
        scores = scores.masked_fill(kv_idx > q_idx, float("-inf"))
        out = scores.softmax(dim=-1) @ v
        return self.to_out(out.transpose(1, 2).reshape(B, T, C))'''),
}

# lucidrains/zorro-pytorch: zorro_pytorch.py imports torchaudio.transforms.Spectrogram and beartype
# (torchaudio not installed). The stand-ins: a Spectrogram of our own (|STFT|**power with a Hann
# window of win_length, hop win_length // 2 by default, as torchaudio's defaults), beartype as the
# identity decorator and beartype.typing as typing. The probe builds a small Zorro that returns
# only the fusion pooled token: the pooling mask (line 315) has the same operator-precedence
# slip as the fixed line and was never fixed; for the FUSION return token alone it happens to
# select exactly the fusion tokens, so it is correct in both versions.
_B23_SPECTROGRAM = '''"""stand-in for torchaudio.transforms: Spectrogram only"""
import torch
import torch.nn as nn


class Spectrogram(nn.Module):
    def __init__(self, n_fft=400, win_length=None, hop_length=None, pad=0, power=2.0, center=True,
                 pad_mode="reflect", **kw):
        super().__init__()
        self.n_fft, self.pad, self.power, self.center, self.pad_mode = n_fft, pad, power, center, pad_mode
        self.win_length = win_length if win_length is not None else n_fft
        self.hop_length = hop_length if hop_length is not None else self.win_length // 2
        self.register_buffer("window", torch.hann_window(self.win_length), persistent=False)

    def forward(self, waveform):
        if self.pad:
            waveform = torch.nn.functional.pad(waveform, (self.pad, self.pad))
        shape = waveform.shape
        spec = torch.stft(waveform.reshape(-1, shape[-1]), self.n_fft, hop_length=self.hop_length,
                          win_length=self.win_length, window=self.window, center=self.center,
                          pad_mode=self.pad_mode, return_complex=True)
        spec = spec.abs().pow(self.power)
        return spec.reshape(shape[:-1] + spec.shape[-2:])
'''
HARNESS["b23_zorro"] = {
    "zorro_pytorch/__init__.py": EMPTY,
    "@/torchaudio/__init__.py": '"""stand-in for torchaudio (not installed)"""\n',
    "@/torchaudio/transforms.py": _B23_SPECTROGRAM,
    "@/beartype/__init__.py": '"""stand-in for beartype: no runtime checks"""\n\n\ndef beartype(fn):\n    return fn\n',
    "@/beartype/typing.py": '"""stand-in for beartype.typing"""\nfrom typing import *  # noqa: F401,F403\n',
    "probe_zorro.py": probe('''from zorro_pytorch.zorro_pytorch import Zorro, TokenTypes


class ZorroProbe(Zorro):
    """Zorro at probe sizes (2 layers, 4 fusion tokens, patches of 4, spectrogram n_fft 16),
    returning the fusion pooled token"""
    def __init__(self, dim, heads, dim_head):
        super().__init__(dim=dim, depth=2, dim_head=dim_head, heads=heads, num_fusion_tokens=4,
                         audio_patch_size=4, video_patch_size=4, video_temporal_patch_size=2,
                         video_channels=3, spec_n_fft=16, spec_win_length=16,
                         return_token_types=(TokenTypes.FUSION,))

    def forward(self, audio, video):
        return super().forward(audio=audio, video=video)'''),
}

# lucidrains/q-transformer: q_robotic_transformer.py imports beartype (stand-in: the identity
# decorator) and classifier_free_guidance_pytorch (used only by QRoboticTransformer: a permissive
# stand-in). The probe is one window of MaxViT's attention with the axial 2d rotary table the
# MaxViT class builds for it (RotaryEmbedding(dim_head)(window_size)), plain attention (flash off).
HARNESS["b23_qtransformer"] = {
    "q_transformer/__init__.py": EMPTY,
    "@/beartype/__init__.py": '"""stand-in for beartype: no runtime checks"""\n\n\ndef beartype(fn):\n    return fn\n',
    "@/beartype/typing.py": '"""stand-in for beartype.typing"""\nfrom typing import *  # noqa: F401,F403\n',
    "@/classifier_free_guidance_pytorch.py": PERMISSIVE,
    "probe_qtransformer.py": probe('''import torch.nn as nn
from q_transformer.q_robotic_transformer import Attention, RotaryEmbedding


class MaxViTWindowAttention(nn.Module):
    """q-transformer's MaxViT window attention with the axial rotary table MaxViT caches for it;
    input (b, x, y, w1, w2, d): x-by-y windows of w1-by-w2 tokens"""
    def __init__(self, dim, dim_head, window):
        super().__init__()
        self.window = window
        self.attn = Attention(dim, dim_head=dim_head, window_size=window, flash=False)
        self.rotary = RotaryEmbedding(dim_head)

    def forward(self, x):
        return self.attn(x, rotary_emb=self.rotary(self.window))'''),
}

# lucidrains/lumiere-pytorch: lumiere_pytorch.py imports Attention and RMSNorm from
# x_transformers (not installed). The stand-ins are ours: RMSNorm as x-transformers defines it
# (l2-normalise, times sqrt(dim), times a learned gain) and a plain non-causal multi-head
# self-attention over the second-to-last axis (dim, heads, dim_head). AttentionInflationBlock
# zero-initialises its output projection, which makes the block the identity at init in both
# versions; the probe re-initialises that projection (normal, std 0.02) so the temporal branch
# reaches the output.
_B23_XT = '''"""stand-in for x_transformers.x_transformers: RMSNorm and a plain Attention"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.scale = dim ** 0.5
        self.g = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return F.normalize(x, dim=-1) * self.scale * self.g


class Attention(nn.Module):
    """non-causal multi-head self-attention over the token axis (-2)"""
    def __init__(self, dim, heads=8, dim_head=64, **kw):
        super().__init__()
        self.heads, self.dim_head = heads, dim_head
        self.to_qkv = nn.Linear(dim, 3 * heads * dim_head, bias=False)
        self.to_out = nn.Linear(heads * dim_head, dim, bias=False)

    def forward(self, x):
        n, t, _ = x.shape
        q, k, v = self.to_qkv(x).view(n, t, 3, self.heads, self.dim_head).permute(2, 0, 3, 1, 4)
        out = F.scaled_dot_product_attention(q, k, v)
        return self.to_out(out.transpose(1, 2).reshape(n, t, self.heads * self.dim_head))
'''
HARNESS["b23_lumiere"] = {
    "lumiere_pytorch/__init__.py": EMPTY,
    "@/x_transformers/__init__.py": '"""stand-in for x_transformers (not installed)"""\n',
    "@/x_transformers/x_transformers.py": _B23_XT,
    "probe_lumiere.py": probe('''import torch.nn as nn
from lumiere_pytorch.lumiere_pytorch import AttentionInflationBlock


class LumiereTemporalAttention(AttentionInflationBlock):
    """Lumiere's temporal attention inflation block (one layer, pre-norm, residual attention),
    its zero-initialised output projection re-initialised so the branch is visible"""
    def __init__(self, dim, heads, dim_head):
        super().__init__(dim=dim, depth=1, heads=heads, dim_head=dim_head)
        nn.init.normal_(self.proj_out.weight, std=0.02)'''),
}

# lucidrains/ring-attention-pytorch: ring_attention.py and ring_flash_attention.py import beartype
# (stand-in: the identity decorator). The probe is a single-process RingAttention with rotary
# embeddings on and the plain attention path (force_regular_attn, no CUDA kernel), one head: the
# buggy table length is the head count, which broadcasts against (b, n, h, d) only when
# heads == 1 or heads == n (any other head count raises), so the probe uses one head.
HARNESS["b23_ring"] = {
    "ring_attention_pytorch/__init__.py": EMPTY,
    "@/beartype/__init__.py": '"""stand-in for beartype: no runtime checks"""\n\n\ndef beartype(fn):\n    return fn\n',
    "@/beartype/typing.py": '"""stand-in for beartype.typing"""\nfrom typing import *  # noqa: F401,F403\n',
    "probe_ring.py": probe('''from ring_attention_pytorch.ring_attention import RingAttention


class RingRotaryAttention(RingAttention):
    """RingAttention in one process: rotary on, regular attention, one head"""
    def __init__(self, dim, dim_head):
        super().__init__(dim, dim_head=dim_head, heads=1, rotary_embed=True, force_regular_attn=True,
                         use_cuda_kernel=False)

    def forward(self, x):
        return super().forward(x)'''),
}
