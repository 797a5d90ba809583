"""Harness stubs for the bugs22 corpus (our own code): probes that build a class from plain sizes,
and stand-ins for packages the extracted files import but that are not installed. Runs inside
run.py with probe, PERMISSIVE and EMPTY defined."""
HARNESS = {}

# EleutherAI/aria: FusedEncoderBlock(model_config) reads its sizes from a ModelConfig; the probe
# builds one from plain sizes (dropout 0, one layer, a context longer than the probe's T).
HARNESS["b22_aria"] = {
    "aria/__init__.py": EMPTY,
    "aria/model/__init__.py": EMPTY,
    "probe_aria.py": probe('''from aria.model.model import FusedEncoderBlock, ModelConfig


class AriaBlock(FusedEncoderBlock):
    """aria's pre-norm causal block (rotary q/k, SDPA with is_causal), its config built from plain sizes"""
    def __init__(self, d_model, n_heads, max_seq_len):
        super().__init__(ModelConfig(d_model=d_model, n_heads=n_heads, n_layers=1, ff_mult=2, drop_p=0.0,
                                     max_seq_len=max_seq_len, grad_checkpoint=False))'''),
}

# Amshaker/SwiftFormer: models/swiftformer.py imports four names from timm (not installed):
# the ImageNet mean/std, DropPath (the identity here: drop rate 0), trunc_normal_, register_model
# and to_2tuple. None of them is used by EfficientAdditiveAttnetion.
_TIMM_LAYERS = '''"""stand-in for timm.models.layers: DropPath and trunc_normal_"""
import torch.nn as nn


class DropPath(nn.Module):
    """the identity: drop-path rate 0 is all that is used here"""
    def __init__(self, drop_prob=0.0):
        super().__init__()
        self.drop_prob = drop_prob

    def forward(self, x):
        return x


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0):
    return nn.init.trunc_normal_(tensor, mean=mean, std=std, a=a, b=b)
'''
HARNESS["b22_timm"] = {
    "@/timm/__init__.py": '"""stand-in for timm (not installed)"""\n',
    "@/timm/data.py": ('"""stand-in for timm.data: the two constants swiftformer.py imports"""\n'
                       "IMAGENET_DEFAULT_MEAN = (0.485, 0.456, 0.406)\n"
                       "IMAGENET_DEFAULT_STD = (0.229, 0.224, 0.225)\n"),
    "@/timm/models/__init__.py": '"""stand-in for timm.models"""\n',
    "@/timm/models/registry.py": ('"""stand-in for timm.models.registry"""\n\n\n'
                                  "def register_model(fn):\n    return fn\n"),
    "@/timm/models/layers/__init__.py": _TIMM_LAYERS,
    "@/timm/models/layers/helpers.py": ('"""stand-in for timm.models.layers.helpers"""\n\n\n'
                                        "def to_2tuple(x):\n"
                                        "    return tuple(x) if isinstance(x, (tuple, list)) else (x, x)\n"),
}

# lucidrains/ETSformer-pytorch: the module imports next_fast_len from scipy.fftpack (scipy is not
# installed); the stand-in returns the smallest 2-3-5-smooth length >= n, as scipy's does.
HARNESS["b22_scipy"] = {
    "@/scipy/__init__.py": '"""stand-in for scipy (not installed)"""\n',
    "@/scipy/fftpack.py": ('"""stand-in for scipy.fftpack: next_fast_len only"""\n\n\n'
                           "def next_fast_len(n):\n"
                           "    m = max(int(n), 1)\n"
                           "    while True:\n"
                           "        k = m\n"
                           "        for p in (2, 3, 5):\n"
                           "            while k % p == 0:\n"
                           "                k //= p\n"
                           "        if k == 1:\n"
                           "            return m\n"
                           "        m += 1\n"),
}
