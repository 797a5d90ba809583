"""Harness stubs for the bugs25 corpus (our own code): probes that build a class from plain sizes,
and stand-ins for packages the extracted files import but that are not installed. Runs inside
run.py with probe, PERMISSIVE and EMPTY defined."""
HARNESS = {}

# goodfire-ai/spd: spd/experiments/ih/model.py imports wandb (not installed), three spd modules
# used only for loading checkpoints from runs (permissive stand-ins), and `typing.override`, which
# Python 3.11 lacks. The probe adds a do-nothing `typing.override` before importing the file, and
# re-exports its MultiHeadSelfAttention (the sinusoidal table is added to queries and keys there).
HARNESS["b25_spd"] = {
    "spd/__init__.py": EMPTY,
    "spd/experiments/__init__.py": EMPTY,
    "spd/experiments/ih/__init__.py": EMPTY,
    "spd/spd_types.py": PERMISSIVE,
    "spd/utils/__init__.py": EMPTY,
    "spd/utils/run_utils.py": PERMISSIVE,
    "spd/utils/wandb_utils.py": PERMISSIVE,
    "wandb/__init__.py": PERMISSIVE,
    "wandb/apis/__init__.py": PERMISSIVE,
    "wandb/apis/public.py": PERMISSIVE,
    "probe_spd_ih.py": probe('''import typing
if not hasattr(typing, "override"):  # Python 3.12's typing.override: returns its argument
    typing.override = lambda f: f
from spd.experiments.ih.model import MultiHeadSelfAttention, PositionalEncoding'''),
}

# lucidrains/mmdit: mmdit_pytorch.py imports Attend, RMSNorm and FeedForward from x_transformers
# (not installed). Our stand-ins: Attend is plain softmax(q k^T / sqrt(d)) attention with a boolean
# key mask (b, j), returning (out, None); FeedForward is Linear -> GELU -> Linear with mult 4;
# RMSNorm is unused by MMDiTBlock. The package __init__ is replaced by an empty one.
_B25_XT_ATTEND = '''"""stand-in for x_transformers.attend: plain softmax attention with a key mask"""
import torch.nn as nn
import torch.nn.functional as F


class Attend(nn.Module):
    def __init__(self, **kwargs):
        super().__init__()

    def forward(self, q, k, v, mask=None):
        if mask is not None:
            mask = mask[:, None, None, :]
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask), None
'''
_B25_XT = '''"""stand-in for x_transformers: FeedForward and RMSNorm only"""
import torch.nn as nn
import torch.nn.functional as F


class FeedForward(nn.Module):
    def __init__(self, dim, mult=4, **kwargs):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, dim * mult), nn.GELU(), nn.Linear(dim * mult, dim))

    def forward(self, x):
        return self.net(x)


class RMSNorm(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.g = nn.Parameter(dim ** 0.5 * __import__("torch").ones(dim))

    def forward(self, x):
        return F.normalize(x, dim=-1) * self.g
'''
HARNESS["b25_mmdit"] = {
    "mmdit/__init__.py": EMPTY,
    "@/x_transformers/__init__.py": _B25_XT,
    "@/x_transformers/attend.py": _B25_XT_ATTEND,
}

# lucidrains/token-shift-gpt: token_shift_gpt.py imports torch and einops only; the package
# __init__ is replaced by an empty one.
HARNESS["b25_tokenshift"] = {
    "token_shift_gpt/__init__.py": EMPTY,
}

# lucidrains/multiscreen: multiscreen.py imports einx (not installed; used only for the key mask
# and the distance-aware soft mask, neither on the probed path: permissive stand-in) and
# PoPE_pytorch.PoPE, which GatedScreeningTile always builds (`exists(use_pope)` is true for
# False too). Our PoPE stand-in rotates nothing: apply_pope_to_qk returns q and k unchanged.
_B25_POPE = '''"""stand-in for PoPE_pytorch: a PoPE that rotates nothing"""
import torch.nn as nn


class PoPE(nn.Module):
    def __init__(self, dim, heads=1, **kwargs):
        super().__init__()

    def forward(self, seq_len):
        return None

    @staticmethod
    def apply_pope_to_qk(pos_emb, q, k):
        return q, k
'''
HARNESS["b25_multiscreen"] = {
    "multiscreen/__init__.py": EMPTY,
    "@/einx.py": PERMISSIVE,
    "@/PoPE_pytorch.py": _B25_POPE,
}

# lucidrains/magvit2-pytorch: magvit2_pytorch.py imports torchvision, vector_quantize_pytorch,
# gateloop_transformer and kornia (not installed), used by the tokenizer's perceptual loss,
# quantizers, gateloop layers and blur, none by TimeDownsample2x without antialias. The names
# appear in @beartype-checked signatures, so the stand-ins are real (empty) classes, not the
# permissive object; attend.py and version.py are extracted beside it, the package __init__ is empty.
_B25_TV_MODELS = '''"""stand-in for torchvision.models: names only"""
class VGG16_Weights:
    DEFAULT = None


def vgg16(*args, **kwargs):
    raise RuntimeError("stand-in")
'''
_B25_VQ = '''"""stand-in for vector_quantize_pytorch: the quantizer classes, not usable"""
import torch.nn as nn


class LFQ(nn.Module):
    def __init__(self, *args, **kwargs):
        raise RuntimeError("stand-in")


class FSQ(nn.Module):
    def __init__(self, *args, **kwargs):
        raise RuntimeError("stand-in")
'''
_B25_GATELOOP = '''"""stand-in for gateloop_transformer: the layer class, not usable"""
import torch.nn as nn


class SimpleGateLoopLayer(nn.Module):
    def __init__(self, *args, **kwargs):
        raise RuntimeError("stand-in")
'''
_B25_KORNIA_FILTERS = '''"""stand-in for kornia.filters: filter3d, not usable"""


def filter3d(*args, **kwargs):
    raise RuntimeError("stand-in")
'''
HARNESS["b25_magvit2"] = {
    "magvit2_pytorch/__init__.py": EMPTY,
    "@/torchvision/__init__.py": EMPTY,
    "@/torchvision/models.py": _B25_TV_MODELS,
    "@/vector_quantize_pytorch.py": _B25_VQ,
    "@/gateloop_transformer.py": _B25_GATELOOP,
    "@/kornia/__init__.py": EMPTY,
    "@/kornia/filters.py": _B25_KORNIA_FILTERS,
}
