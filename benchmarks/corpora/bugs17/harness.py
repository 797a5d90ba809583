"""Harness stubs for the bugs17 corpus (our own code): stand-ins for packages the extracted files
import but that are not installed, and probes that build a class from plain sizes. Runs inside
run.py with probe, PERMISSIVE and EMPTY defined."""
HARNESS = {}

# CMOS (blind image super-resolution): its spatial cross-image window attention, GIASpatial, built
# from plain sizes. The architecture file imports mmcv's ConvModule (conv, optional norm,
# activation), torchvision and sibling modules for other networks; ConvModule gets a small
# stand-in of our own (conv + optional batch norm + optional ReLU), the rest permissive stubs.
_CONVMODULE = '''"""stand-in for mmcv.cnn.ConvModule: conv, then an optional batch norm, then an optional ReLU"""
import torch.nn as nn


class ConvModule(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, conv_cfg=None,
                 norm_cfg=None, act_cfg=dict(type="ReLU"), **kwargs):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding,
                              bias=norm_cfg is None)
        self.bn = nn.BatchNorm2d(out_channels) if norm_cfg else None
        self.act = nn.ReLU() if act_cfg else None

    def forward(self, x):
        x = self.conv(x)
        if self.bn is not None:
            x = self.bn(x)
        if self.act is not None:
            x = self.act(x)
        return x
'''

_CMOS_PROBE = probe('''from models.modules.CMOS_arch import GIASpatial


class CMOSSpatial(GIASpatial):
    """CMOS's GIASpatial built from plain sizes: no norm layers, ReLU activations"""
    def __init__(self, channels, win_h=2, win_w=3):
        super().__init__(channels, conv_cfg=None, norm_cfg=None, act_cfg=dict(type="ReLU"),
                         win_size=(win_h, win_w))''')

HARNESS["b17_cmos"] = {
    "codes/probe_cmos.py": _CMOS_PROBE,
    "codes/models/modules/__init__.py": EMPTY,
    "codes/mmcv/__init__.py": EMPTY,
    "codes/mmcv/cnn.py": _CONVMODULE,
    "codes/torchvision.py": PERMISSIVE,
    "codes/models/modules/module_util.py": PERMISSIVE,
    "codes/models/modules/seg_hrnet.py": PERMISSIVE,
    "codes/models/modules/resnet.py": PERMISSIVE,
    "codes/models/modules/layers.py": PERMISSIVE,
}

# DiT-PyTorch (ExplainingAI): the DiT transformer layer takes its sizes as a config dict. The probe
# builds it from plain sizes.
HARNESS["b17_dit"] = {"probe_dit.py": probe('''from model.transformer_layer import TransformerLayer


class DiTLayer(TransformerLayer):
    """the DiT block (adaLN-Zero modulated attention and MLP) with its config dict built from plain sizes"""
    def __init__(self, hidden_size, num_heads, head_dim):
        super().__init__({"hidden_size": hidden_size, "num_heads": num_heads, "head_dim": head_dim})''')}


# recurrent-memory-transformer-pytorch: the model file imports its package (attend.py), so the probe
# sits at the repository root and imports the class through the package.
HARNESS["b17_rmt"] = {"probe_rmt.py": probe(
    "from recurrent_memory_transformer_pytorch.recurrent_memory_transformer import RecurrentMemoryTransformer")}

# cross-transformers-pytorch: CrossTransformer.forward takes the feature backbone as its first
# argument. The probe holds a one-layer conv backbone of its own (3 -> dim channels, 3x3, same
# size) and passes it in, so the module can be called with images alone.
HARNESS["b17_crosstr"] = {"probe_crosstr.py": probe('''import torch.nn as nn
from cross_transformers_pytorch.cross_transformers_pytorch import CrossTransformer


class CrossTransformerProbe(CrossTransformer):
    """CrossTransformer (few-shot query/support attention) with a small conv backbone held by the probe"""
    def __init__(self, dim, dim_key, dim_value):
        super().__init__(dim=dim, dim_key=dim_key, dim_value=dim_value)
        self.backbone = nn.Conv2d(3, dim, 3, padding=1)

    def forward(self, img_query, img_supports):
        return super().forward(self.backbone, img_query, img_supports)''')}
