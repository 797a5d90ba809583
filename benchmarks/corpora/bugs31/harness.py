"""Harness stubs for the bugs31 corpus (our own code): probes that build a class from plain sizes,
and stand-ins for packages or sibling modules the extracted files import but that are not installed
or that pull in what is not installed. Runs inside run.py with probe, PERMISSIVE and EMPTY defined."""
HARNESS = {}

# huggingface/diffusers (src/diffusers extracted whole): the package's __init__ chain reaches
# requests, PIL and huggingface_hub names that the installed huggingface_hub no longer has
# (cached_download). Stand-ins: no run-time dependency check; hub_utils with a plain PushToHubMixin
# base and helpers that raise; permissive dynamic_modules_utils and pil_utils; permissive PIL and
# requests modules beside the probe. None of these is on the path of building or running the model.
_B31_DEPCHECK = '''"""stand-in: no run-time dependency check (requests is not installed)"""


def dep_version_check(pkg, hint=None):
    pass
'''
_B31_HUB = '''"""stand-in for diffusers.utils.hub_utils (needs requests and an older huggingface_hub): hub helpers
are never called when a model is built from its arguments; PushToHubMixin is a plain base class"""


class PushToHubMixin:
    pass


def _unused(*args, **kwargs):
    raise RuntimeError("stand-in")


def __getattr__(name):  # any other hub helper the package's __init__ imports
    return _unused
'''
_B31_DIFFUSERS_STUBS = {
    "src/diffusers/dependency_versions_check.py": _B31_DEPCHECK,
    "src/diffusers/utils/hub_utils.py": _B31_HUB,
    "src/diffusers/utils/dynamic_modules_utils.py": PERMISSIVE,
    "src/diffusers/utils/pil_utils.py": PERMISSIVE,
    "@/PIL/__init__.py": PERMISSIVE,
    "@/PIL/Image.py": PERMISSIVE,
    "@/PIL/ImageOps.py": PERMISSIVE,
    "@/requests.py": PERMISSIVE,
}

# SVD's TransformerSpatioTemporalModel takes frames merged into the batch axis ((B*F, C, h, w), an
# image_only_indicator (B, F) that gives F) and returns a dataclass unless return_dict=False. The
# probe takes x (B, F, C, P, Q) and the per-frame conditioning ctx (B, F, 1, E), merges, runs the
# model with image_only_indicator = 0 (video), and splits the output back to (B, F, C, P, Q), so
# that the batch axis seen from outside is the samples' axis.
HARNESS["b31_svd"] = dict(_B31_DIFFUSERS_STUBS, **{
    "probe_svd.py": probe('''sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "src"))
import torch
from diffusers.models.transformers.transformer_temporal import TransformerSpatioTemporalModel


class SVDTemporalProbe(TransformerSpatioTemporalModel):
    """TransformerSpatioTemporalModel from plain sizes (one layer); forward on (B, F, ...) inputs"""
    def __init__(self, C, H, D, E):
        super().__init__(num_attention_heads=H, attention_head_dim=D, in_channels=C, num_layers=1,
                         cross_attention_dim=E)

    def forward(self, x, ctx):
        B, F, C, P, Q = x.shape
        ind = torch.zeros(B, F, dtype=x.dtype)
        out = super().forward(x.reshape(B * F, C, P, Q), encoder_hidden_states=ctx.reshape(B * F, 1, ctx.shape[-1]),
                              image_only_indicator=ind, return_dict=False)[0]
        return out.reshape(B, F, C, P, Q)'''),
})

# apple/ml-cvnets: cvnets/__init__.py and cvnets/modules/__init__.py import every model, dataset
# helper and third-party package of the library; they are replaced (cvnets/__init__ empty,
# cvnets/modules/__init__ only re-exports BaseModule, which transformer.py imports from it).
# cvnets/layers, common/__init__ and the utils modules the layers import are extracted as they are.
# The probe builds LinearAttnFFN (MobileViTv2's linear-attention block, pre-norm 'layer_norm_2d')
# from plain sizes, all dropouts 0, and calls it in its cross-attention form: patches x (B, C, P, N)
# attend to the previous frame's patches x_prev (B, C, P, N), as MobileViTBlockv2.forward_temporal
# calls it.
_B31_TV_OPS = '''"""stand-in for torchvision.ops (torchvision is not installed): cvnets subclasses its
StochasticDepth, which LinearAttnFFN never builds"""
import torch.nn as nn


class StochasticDepth(nn.Module):
    def __init__(self, *args, **kwargs):
        raise RuntimeError("stand-in")
'''
HARNESS["b31_cvnets"] = {
    "@/torchvision/__init__.py": EMPTY,
    "@/torchvision/ops.py": _B31_TV_OPS,
    "cvnets/__init__.py": EMPTY,
    "cvnets/misc/__init__.py": EMPTY,
    "cvnets/modules/__init__.py": '"""stand-in: only what transformer.py imports"""\nfrom cvnets.modules.base_module import BaseModule\n',
    "probe_cvnets.py": probe('''import argparse
from cvnets.modules.transformer import LinearAttnFFN


class LinearAttnFFNCrossProbe(LinearAttnFFN):
    """LinearAttnFFN from plain sizes (width C, FFN width L, no dropout), called with a context"""
    def __init__(self, C, L):
        opts = argparse.Namespace()
        for k, v in {"model.normalization.name": "batch_norm", "model.normalization.groups": 1,
                     "model.normalization.momentum": 0.1, "model.activation.name": "swish",
                     "model.activation.inplace": False, "model.activation.neg_slope": 0.1}.items():
            setattr(opts, k, v)  # MobileViTv2's defaults, as its command line sets them
        super().__init__(opts, embed_dim=C, ffn_latent_dim=L, attn_dropout=0.0, dropout=0.0, ffn_dropout=0.0)

    def forward(self, x, x_prev):
        return super().forward(x, x_prev)'''),
}

# NTMC-Community/MatchZoo-py: matchzoo/engine/base_model.py pulls in hyperopt, pandas, the
# preprocessors and the task classes (matchzoo/__init__ imports nltk, dill, ...). Stand-ins: an empty
# matchzoo/__init__ and models/__init__; modules/__init__ re-exports the extracted attention.py only;
# ParamTable is a dict with add(); Param keeps name and value; BaseModel is our reduction of the
# upstream one to what DRMM uses: default parameters (embedding, MLP), an nn.Embedding without
# padding_idx (the upstream default when no pretrained matrix is given), the MLP of
# _make_multi_layer_perceptron_layer (Linear + activation per layer) and the Ranking output layer
# (Linear to 1); dataloader.callbacks permissive (only used for the padding callback). The probe builds
# DRMM with vocabulary V, embeddings D, K histogram bins, one MLP layer of U units (tanh, as DRMM's
# docstring sets it), and takes the two inputs of the upstream input dict as arguments.
_B31_PARAM = '''"""stand-in for matchzoo.engine.param: a named value"""


class Param:
    def __init__(self, name, value=None, desc=None, hyper_space=None, validator=None):
        self.name, self.value, self.desc = name, value, desc
'''
_B31_PARAM_TABLE = '''"""stand-in for matchzoo.engine.param_table: a dict of parameter values"""


class ParamTable(dict):
    def add(self, param):
        self[param.name] = param.value
'''
_B31_BASE_MODEL = '''"""stand-in for matchzoo.engine.base_model.BaseModel: what DRMM uses of it (our reduction)"""
import torch.nn as nn

from matchzoo.engine.param_table import ParamTable
from matchzoo.engine.param import Param

_ACT = {"relu": nn.ReLU, "tanh": nn.Tanh}


class BaseModel(nn.Module):
    def __init__(self, params=None):
        super().__init__()
        self._params = params or self.get_default_params()

    @property
    def params(self):
        return self._params

    @classmethod
    def get_default_params(cls, with_embedding=False, with_multi_layer_perceptron=False):
        params = ParamTable()
        params.add(Param(name="model_class", value=cls))
        params.add(Param(name="task", value="ranking"))
        params.add(Param(name="out_activation_func", value=None))
        if with_embedding:
            params.add(Param(name="with_embedding", value=True))
            params.add(Param(name="embedding", value=None))
            params.add(Param(name="embedding_input_dim", value=None))
            params.add(Param(name="embedding_output_dim", value=None))
            params.add(Param(name="embedding_freeze", value=False))
        if with_multi_layer_perceptron:
            params.add(Param(name="with_multi_layer_perceptron", value=True))
            params.add(Param(name="mlp_num_units", value=128))
            params.add(Param(name="mlp_num_layers", value=3))
            params.add(Param(name="mlp_num_fan_out", value=64))
            params.add(Param(name="mlp_activation_func", value="relu"))
        return params

    def _make_default_embedding_layer(self, **kwargs):
        return nn.Embedding(num_embeddings=self._params["embedding_input_dim"],
                            embedding_dim=self._params["embedding_output_dim"])

    def _make_output_layer(self, in_features=0):
        return nn.Linear(in_features, 1)  # Ranking: one score

    def _make_multi_layer_perceptron_layer(self, in_features):
        act = _ACT[self._params["mlp_activation_func"]]
        sizes = [in_features, *self._params["mlp_num_layers"] * [self._params["mlp_num_units"]],
                 self._params["mlp_num_fan_out"]]
        return nn.Sequential(*[nn.Sequential(nn.Linear(a, b), act()) for a, b in zip(sizes, sizes[1:])])
'''
HARNESS["b31_matchzoo"] = {
    "matchzoo/__init__.py": EMPTY,
    "matchzoo/models/__init__.py": EMPTY,
    "matchzoo/engine/__init__.py": EMPTY,
    "matchzoo/engine/param.py": _B31_PARAM,
    "matchzoo/engine/param_table.py": _B31_PARAM_TABLE,
    "matchzoo/engine/base_model.py": _B31_BASE_MODEL,
    "matchzoo/dataloader/__init__.py": PERMISSIVE,
    "matchzoo/modules/__init__.py": '"""stand-in: only what drmm.py imports"""\nfrom .attention import Attention\n',
    "probe_drmm.py": probe('''from matchzoo.models.drmm import DRMM


class DRMMProbe(DRMM):
    """DRMM from plain sizes: vocabulary V, embeddings D, K histogram bins, one MLP layer of U units"""
    def __init__(self, V, D, K, U):
        super().__init__()
        self._params.update(embedding_input_dim=V, embedding_output_dim=D, hist_bin_size=K, mlp_num_layers=1,
                            mlp_num_units=U, mlp_activation_func="tanh")
        self.build()

    def forward(self, text_left, match_histogram):
        return super().forward({"text_left": text_left, "match_histogram": match_histogram})'''),
}

# huggingface/diffusers, SlicedAttnProcessor (the processor enable_attention_slicing installs): the
# probe builds diffusers' Attention from plain sizes (width C, H heads of D) with
# SlicedAttnProcessor(slice_size=S) as its processor; forward is Attention.forward on x (B, T, C).
# Same package stand-ins as above.
HARNESS["b31_sliced"] = dict(_B31_DIFFUSERS_STUBS, **{
    "probe_sliced.py": probe('''sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "src"))
from diffusers.models.attention_processor import Attention, SlicedAttnProcessor


class SlicedAttnProbe(Attention):
    """diffusers Attention (width C, H heads of D) run by SlicedAttnProcessor with slices of S rows"""
    def __init__(self, C, H, D, S):
        super().__init__(query_dim=C, heads=H, dim_head=D, processor=SlicedAttnProcessor(S))'''),
})

# wendlerc/dfs-graph-transformer: src/dfs_transformer/__init__.py and models/__init__.py import the
# datasets and training code (rdkit, torch_geometric, wandb); both are replaced by empty packages and
# only models/selfattn.py and models/utils.py are extracted. DFSCodeSeq2SeqFC.encode(C, N, E) takes
# lists of per-molecule tensors (a DFS code (L, 5) of node/edge indices, node and edge features);
# the probe takes them batched, code (B, T, 5) with every index below V, nodes (B, V, Fn), edges
# (B, T, Fe), passes them on as lists, and returns encode's class-token features (method 'cls', as
# the repository's feature extraction calls it). K class tokens, one layer, no dropout.
HARNESS["b31_dfs"] = {
    "src/dfs_transformer/__init__.py": EMPTY,
    "src/dfs_transformer/models/__init__.py": EMPTY,
    "probe_dfs.py": probe('''sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "src"))
from dfs_transformer.models.selfattn import DFSCodeSeq2SeqFC


class DFSEncodeProbe(DFSCodeSeq2SeqFC):
    """DFSCodeSeq2SeqFC from plain sizes (token width 5*D, H heads, K class tokens); forward = encode"""
    def __init__(self, Fn, Fe, D, H, K):
        super().__init__(n_node_features=Fn, n_edge_features=Fe, n_atoms=5, n_bonds=3, emb_dim=D, nhead=H,
                         nlayers=1, n_class_tokens=K, dim_feedforward=4 * D, max_nodes=16, max_edges=32,
                         dropout=0.0)

    def forward(self, code, nodes, edges):
        return self.encode(list(code), list(nodes), list(edges), method="cls")'''),
}

# tongjinle123/speech-transformer-pytorch_lightning: src/model/modules is extracted as a folder (the fix
# adds low_rank_linear.py there and imports it), with the empty src/ and src/model package markers.
# The probe runs MultiHeadAttentionBLock (pre-norm multi-head attention + residual, as the speech
# encoder layer calls it: block(src, src, src, mask)) in self-attention form on x (B, T, C): width C,
# H heads of D, no dropout, no mask.
HARNESS["b31_speech"] = {
    "probe_speech.py": probe('''from src.model.modules.multi_head_attention_block import MultiHeadAttentionBLock


class SelfAttnBlockProbe(MultiHeadAttentionBLock):
    """MultiHeadAttentionBLock (width C, H heads of D, dropout 0) called as the encoder layer calls it"""
    def __init__(self, C, D, H):
        super().__init__(C, D, 0.0, H)

    def forward(self, x):
        return super().forward(x, x, x)'''),
}
