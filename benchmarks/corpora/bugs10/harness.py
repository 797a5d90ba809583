"""Harness stubs for the bugs10 corpus (our own code): package markers and probes."""
HARNESS = {
    # faster-trajectory-transformer's trajectory/ and trajectory/models/ are namespace packages
    "ftt_pkgs": {"trajectory/__init__.py": EMPTY, "trajectory/models/__init__.py": EMPTY,
                 "trajectory/utils/__init__.py": EMPTY},
}

_MEA = '''"""stand-in for memory_efficient_attention_pytorch (not installed): plain (cross-)attention with
the same constructor and call, computed in one block instead of buckets"""
import torch
import torch.nn as nn

class Attention(nn.Module):
    def __init__(self, *, dim, heads=8, dim_head=64, dropout=0., causal=False, memory_efficient=False,
                 q_bucket_size=512, k_bucket_size=1024):
        super().__init__()
        self.heads, self.scale = heads, dim_head ** -0.5
        inner = heads * dim_head
        self.to_q = nn.Linear(dim, inner, bias=False)
        self.to_kv = nn.Linear(dim, inner * 2, bias=False)
        self.to_out = nn.Linear(inner, dim, bias=False)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        b, n, _ = x.shape
        h = self.heads
        q = self.to_q(x)
        k, v = self.to_kv(context).chunk(2, dim=-1)
        q, k, v = (t.reshape(b, t.shape[1], h, -1).transpose(1, 2) for t in (q, k, v))
        sim = (q @ k.transpose(-2, -1)) * self.scale
        out = sim.softmax(dim=-1) @ v
        return self.to_out(out.transpose(1, 2).reshape(b, n, -1))
'''
HARNESS["mea_stub"] = {"@/memory_efficient_attention_pytorch.py": _MEA}

_EINOPS_EXTS = '''"""stand-in for einops_exts (not installed): the two helpers flamingo-pytorch uses"""
from einops import rearrange, repeat

def rearrange_many(tensors, pattern, **kwargs):
    return [rearrange(t, pattern, **kwargs) for t in tensors]

def repeat_many(tensors, pattern, **kwargs):
    return [repeat(t, pattern, **kwargs) for t in tensors]
'''
HARNESS["einops_exts"] = {"@/einops_exts.py": _EINOPS_EXTS}

_WD_TYPES = '''"""stand-in for pytorch_widedeep.wdtypes (which imports torchvision, pandas and the whole model
zoo); the attention layers take only typing names and Tensor from it"""
from typing import *  # noqa
from torch import Tensor
'''
HARNESS["widedeep"] = {
    "pytorch_widedeep/__init__.py": EMPTY, "pytorch_widedeep/models/__init__.py": EMPTY,
    "pytorch_widedeep/models/tabular/__init__.py": EMPTY,
    "pytorch_widedeep/models/tabular/transformers/__init__.py": EMPTY,
    "pytorch_widedeep/wdtypes.py": _WD_TYPES,
}

_HF_STUB = '''"""stand-in for transformers (not installed): the two base classes enformer-pytorch subclasses"""
import torch.nn as nn

class PretrainedConfig:
    def __init__(self, **kwargs):
        for k, v in kwargs.items():
            setattr(self, k, v)

class PreTrainedModel(nn.Module):
    def __init__(self, config, *args, **kwargs):
        super().__init__()
        self.config = config
'''
_ENFORMER_DATA = '''"""stand-in for enformer_pytorch.data (pandas, pyfaidx, polars): not used by the attention layers"""
def str_to_one_hot(*args, **kwargs):
    raise RuntimeError("stand-in")

def seq_indices_to_one_hot(*args, **kwargs):
    raise RuntimeError("stand-in")

class GenomeIntervalDataset:
    pass

class FastaInterval:
    pass
'''
HARNESS["enformer"] = {"@/transformers.py": _HF_STUB, "enformer_pytorch/__init__.py": EMPTY,
                       "enformer_pytorch/data.py": _ENFORMER_DATA}

# torchTextClassifiers: the package __init__ files import lightning, tokenizers and the whole
# model zoo; the label-attention layer needs only its own file and attention.py
_TTC_PROBE = probe('''import torch.nn as nn
from torchTextClassifiers.model.components.text_embedder import LabelAttention, LabelAttentionConfig

class LabelAttentionProbe(LabelAttention):
    """the label-attention layer with its config dataclass built from plain sizes; returns the
    label-specific sentence embeddings (B, num_classes, C) from the output dict"""
    def __init__(self, num_classes, embedding_dim, n_head):
        super().__init__(LabelAttentionConfig(n_head=n_head, num_classes=num_classes, embedding_dim=embedding_dim))

    def forward(self, token_embeddings, attention_mask):
        return super().forward(token_embeddings, attention_mask)["sentence_embedding"]''')
HARNESS["ttc"] = {"torchTextClassifiers/__init__.py": EMPTY, "torchTextClassifiers/model/__init__.py": EMPTY,
                  "torchTextClassifiers/model/components/__init__.py": EMPTY, "@/probe_ttc.py": _TTC_PROBE}

# good-features (histaug): AttentionMIL takes an omegaconf ListConfig of target descriptions
_ABMIL_PROBE = probe('''import sys, types
from types import SimpleNamespace
if "omegaconf" not in sys.modules:
    try:
        import omegaconf  # noqa
    except ImportError:
        _oc = types.ModuleType("omegaconf")
        _oc.ListConfig = list
        sys.modules["omegaconf"] = _oc
from histaug.train.models.abmil import AttentionMIL

class AttentionMILProbe(AttentionMIL):
    """attention-MIL with one categorical target of 3 classes; returns that target's logits"""
    def __init__(self, d_features, hidden_dim):
        super().__init__([SimpleNamespace(column="y", classes=["a", "b", "c"], type="categorical")],
                         d_features=d_features, hidden_dim=hidden_dim)

    def forward(self, feats, mask):
        return super().forward(feats, None, mask)["y"]''')
HARNESS["abmil"] = {"histaug/__init__.py": EMPTY, "histaug/train/__init__.py": EMPTY,
                    "histaug/train/models/__init__.py": EMPTY, "@/probe_abmil.py": _ABMIL_PROBE}

# timm at mid-2024: eva.py imports timm.data (PIL, torchvision transforms) and timm.layers, whose
# norm modules import torchvision's FrozenBatchNorm2d; the package __init__ imports every model.
_TV_MISC = '''"""stand-in for torchvision.ops.misc (torchvision not installed): the one class timm.layers imports"""
import torch
import torch.nn as nn

class FrozenBatchNorm2d(nn.Module):
    def __init__(self, num_features, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.register_buffer("weight", torch.ones(num_features))
        self.register_buffer("bias", torch.zeros(num_features))
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))

    def forward(self, x):
        scale = self.weight * (self.running_var + self.eps).rsqrt()
        bias = self.bias - self.running_mean * scale
        return x * scale[None, :, None, None] + bias[None, :, None, None]
'''
_TIMM_DATA = '''"""stand-in for timm.data (PIL, torchvision): the normalisation constants the model files import"""
IMAGENET_DEFAULT_MEAN = (0.485, 0.456, 0.406)
IMAGENET_DEFAULT_STD = (0.229, 0.224, 0.225)
IMAGENET_INCEPTION_MEAN = (0.5, 0.5, 0.5)
IMAGENET_INCEPTION_STD = (0.5, 0.5, 0.5)
OPENAI_CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
OPENAI_CLIP_STD = (0.26862954, 0.26130258, 0.27577711)
'''
_EVA_PROBE = probe('''import torch
from timm.models.eva import EvaAttention

class EvaAttentionProbe(EvaAttention):
    """EVA attention on its explicit (non-fused) path, the one timm takes with TIMM_FUSED_ATTN=0,
    under scripting/export, or on torch without F.scaled_dot_product_attention; attn_mask is the
    per-sample key mask (B, N), True = keep"""
    def __init__(self, dim, num_heads):
        super().__init__(dim, num_heads=num_heads)
        self.fused_attn = False

    def forward(self, x, attn_mask):
        return super().forward(x, attn_mask=attn_mask)''')
HARNESS["timm_eva"] = {"timm/__init__.py": '__version__ = "stub"\n', "timm/models/__init__.py": EMPTY,
                       "timm/data/__init__.py": _TIMM_DATA, "torchvision/__init__.py": EMPTY,
                       "torchvision/ops/__init__.py": EMPTY, "torchvision/ops/misc.py": _TV_MISC,
                       "@/probe_eva.py": _EVA_PROBE}
