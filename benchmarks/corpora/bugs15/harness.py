"""Harness stubs for the bugs15 corpus (our own code): stand-ins for packages the extracted files
import but that are not installed, and probes that build a class from plain sizes. Runs inside
run.py with probe, PERMISSIVE and EMPTY defined."""
HARNESS = {}

# Training-script imports at the top of single-file reimplementations (datasets, logging,
# plotting): not installed here and not used by the modules' forward.
HARNESS["b15_script_stubs"] = {
    "@/torchvision/__init__.py": "from . import datasets, transforms  # noqa\n",
    "@/torchvision/datasets/__init__.py": PERMISSIVE,
    "@/torchvision/datasets/mnist.py": PERMISSIVE,
    "@/torchvision/transforms.py": PERMISSIVE,
    "@/wandb.py": PERMISSIVE,
    "@/matplotlib/__init__.py": PERMISSIVE,
    "@/matplotlib/pyplot.py": PERMISSIVE,
}

# A graph-attention layer takes an adjacency matrix: the probe gives it a fixed ring graph with
# self-loops over the N nodes (every node has neighbours; every row keeps at least one entry).
_GNN_PROBE = probe('''import torch
from gnns import GraphAttentionLayer


def _ring(n):
    i = torch.arange(n)
    d = (i[:, None] - i[None, :]).abs()
    return ((d <= 1) | (d == n - 1)).float()


class GnnAttentionProbe(GraphAttentionLayer):
    """the repository's graph-attention layer on a ring graph of N nodes (adjacency built here)"""
    def __init__(self, n, d, aggr="avg"):
        super().__init__(n, d, aggr)
        self.register_buffer("adj", _ring(n))

    def forward(self, H):
        return super().forward(H, self.adj)''')
HARNESS["b15_gnn"] = dict(HARNESS["b15_script_stubs"], **{"@/probe_gnn.py": _GNN_PROBE})

# Lightning's demo transformer module imports the Lightning package (LightningModule, for the
# LightningTransformer wrapper beside it) and lightning_utilities (RequirementCache, for the
# WikiText2 download): stand-ins beside the file.
_LU_IMPORTS = '''"""stand-in for lightning_utilities.core.imports"""
class RequirementCache:
    def __init__(self, *args, **kwargs):
        pass
    def __bool__(self):
        return False
'''
HARNESS["b15_lightning"] = {
    "@/lightning_utilities/__init__.py": EMPTY,
    "@/lightning_utilities/core/__init__.py": EMPTY,
    "@/lightning_utilities/core/imports.py": _LU_IMPORTS,
    "@/lightning/__init__.py": EMPTY,
    "@/lightning/pytorch/__init__.py": "from torch.nn import Module as LightningModule  # noqa\n",
}

# breakdown-minimind: the model lives in the code cells of 1_model.ipynb. The probe writes the
# notebook's imports, classes and functions to 1_model.py beside it (in cell order, as the primer
# does for notebooks) and builds the feed-forward block from plain sizes (LMConfig, the repo's own
# config class, filled here).
_MINIMIND_PROBE = probe('''import ast, json, importlib.util
_here = os.path.dirname(os.path.abspath(__file__))


def _definitions(nb_path):
    cells = ["".join(c["source"]) for c in json.load(open(nb_path, encoding="utf-8"))["cells"]
             if c["cell_type"] == "code"]
    keep = []
    for src in cells:
        try:
            tree = ast.parse(src)
        except SyntaxError:
            continue
        lines = src.splitlines()
        for node in tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom, ast.ClassDef, ast.FunctionDef)):
                start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
                keep.append("\\n".join(lines[start - 1:node.end_lineno]))
    return "# definitions from the notebook's code cells\\n" + "\\n\\n\\n".join(keep) + "\\n"


_py = os.path.join(_here, "1_model.py")
with open(_py, "w", encoding="utf-8") as _f:
    _f.write(_definitions(os.path.join(_here, "1_model.ipynb")))
_spec = importlib.util.spec_from_file_location("minimind_1_model", _py)
_nb = importlib.util.module_from_spec(_spec)
sys.modules["minimind_1_model"] = _nb
_spec.loader.exec_module(_nb)
from model.LMConfig import LMConfig


class MiniMindFFN(_nb.FeedForward):
    """the notebook's FeedForward block, its LMConfig filled from plain sizes"""
    def __init__(self, dim, multiple_of=16, dropout=0.0):
        super().__init__(LMConfig(dim=dim, multiple_of=multiple_of, dropout=dropout))''')
HARNESS["b15_minimind"] = {"probe_minimind.py": _MINIMIND_PROBE}

# Motionformer: vit_helper.py imports timm (not installed) for its ViT wrapper and weight loading
# only; stand-ins for those names. The probe fixes the token layout (a CLS token, then F frames of
# P patches) that TrajectoryAttention.forward takes as keyword sizes.
_TIMM_LAYERS = '''"""stand-in for timm.models.layers: the helpers vit_helper imports"""
import torch.nn as nn


class DropPath(nn.Module):
    def __init__(self, drop_prob=0.0):
        super().__init__()

    def forward(self, x):
        return x


def to_2tuple(x):
    return x if isinstance(x, tuple) else (x, x)


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0):
    return nn.init.trunc_normal_(tensor, mean=mean, std=std, a=a, b=b)
'''
_MOTIONFORMER_PROBE = probe('''from slowfast.models.vit_helper import TrajectoryAttention


class MotionformerTrajectoryAttention(TrajectoryAttention):
    """Motionformer's trajectory attention over a CLS token and num_frames frames of seq_len patches"""
    def __init__(self, dim, num_heads, seq_len, num_frames):
        super().__init__(dim, num_heads=num_heads)
        self.layout = (seq_len, num_frames)

    def forward(self, x):
        return super().forward(x, seq_len=self.layout[0], num_frames=self.layout[1])[0]''')
HARNESS["b15_motionformer"] = {
    "timm/__init__.py": EMPTY,
    "timm/data/__init__.py": "IMAGENET_DEFAULT_MEAN = (0.485, 0.456, 0.406)\nIMAGENET_DEFAULT_STD = (0.229, 0.224, 0.225)\n",
    "timm/models/__init__.py": EMPTY,
    "timm/models/layers.py": _TIMM_LAYERS,
    "timm/models/resnet.py": PERMISSIVE,
    "timm/models/registry.py": "def register_model(fn):\n    return fn\n",
    "probe_motionformer.py": _MOTIONFORMER_PROBE,
}

# SASRec.pytorch: the model takes an argparse namespace and numpy id arrays (log2feats builds
# positions with numpy); the probe fills the namespace from plain sizes (no dropout, pre-norm
# where the version reads args.norm_first) and runs the sequence encoder on a LongTensor of ids.
_SASREC_PROBE = probe('''from types import SimpleNamespace
from model import SASRec


class SASRecEncoder(SASRec):
    """SASRec's self-attentive sequence encoder (log2feats) built from plain sizes"""
    def __init__(self, item_num, hidden_units, num_heads, maxlen, num_blocks=2):
        args = SimpleNamespace(device="cpu", hidden_units=hidden_units, maxlen=maxlen, dropout_rate=0.0,
                               num_blocks=num_blocks, num_heads=num_heads, norm_first=True)
        super().__init__(1, item_num, args)

    def forward(self, log_seqs):
        return self.log2feats(log_seqs.cpu().numpy())''')
HARNESS["b15_sasrec"] = {"@/probe_sasrec.py": _SASREC_PROBE}
