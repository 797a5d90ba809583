"""Harness stubs for the bugs30 corpus (our own code): probes that build a class from plain sizes,
and stand-ins for packages the extracted files import but that are not installed. Runs inside
run.py with probe, PERMISSIVE and EMPTY defined. Installed into the venv the primer runs with (all
pure Python): opt_einsum (s02), einops-exts 0.0.3 and rotary-embedding-torch 0.1.5 (s03)."""
HARNESS = {}

# Tongjilibo/bert4torch: layers.py imports bert4torch.snippets, which imports sklearn and six at the
# top (neither installed; neither used by the attention layer). Permissive stand-ins for both; the
# probe imports the package module so that `bert4torch.snippets` resolves.
HARNESS["b30_bert4torch"] = {
    "@/sklearn.py": PERMISSIVE,
    "@/six.py": PERMISSIVE,
    "probe_bert4torch.py": probe("from bert4torch.layers import MultiHeadAttentionLayer"),
}

# lucidrains/simplicial-attention: HigherOrderAttention with three key/value sets routes to
# nth_order_attend (the function the fix touches); with two it would use the naive 2-simplicial path.
# The probe fixes number_key_value_sets=3 and takes plain sizes.
HARNESS["b30_simplicial"] = {
    "probe_simplicial.py": probe('''from simplicial_attention.simplicial_mha import HigherOrderAttention


class HigherOrderProbe(HigherOrderAttention):
    """3rd-order (three key/value sets) attention from plain sizes: width C, H heads of D"""
    def __init__(self, C, H, D):
        super().__init__(C, dim_head=D, heads=H, number_key_value_sets=3)'''),
}

# lucidrains/DALLE2-pytorch: dalle2_pytorch.py imports torchvision, kornia, resize_right, x_clip,
# coca_pytorch and two sibling modules (tokenizer: ftfy/regex; vqgan_vae: torchvision) at the top,
# none used by the diffusion prior network: permissive stand-ins, and an empty package __init__ (the
# real one imports the trainers). The network's forward draws a classifier-free-guidance dropout mask
# with torch.rand unless cond_drop_prob=0; the probe passes 0 and takes the conditioning as inputs.
HARNESS["b30_dalle2"] = {
    "@/torchvision/__init__.py": PERMISSIVE,
    "@/torchvision/transforms.py": PERMISSIVE,
    "@/kornia/__init__.py": PERMISSIVE,
    "@/kornia/filters.py": PERMISSIVE,
    "@/kornia/augmentation.py": PERMISSIVE,
    "@/resize_right.py": PERMISSIVE,
    "@/x_clip.py": PERMISSIVE,
    "@/coca_pytorch.py": PERMISSIVE,
    "dalle2_pytorch/__init__.py": EMPTY,
    "dalle2_pytorch/tokenizer.py": PERMISSIVE,
    "dalle2_pytorch/vqgan_vae.py": PERMISSIVE,
    "probe_dalle2.py": probe('''from dalle2_pytorch.dalle2_pytorch import DiffusionPriorNetwork


class PriorProbe(DiffusionPriorNetwork):
    """DALL-E 2 diffusion prior network from plain sizes (width C, H heads of D, N timesteps, depth 2);
    forward denoises image_embed given the text conditioning, without CFG dropout"""
    def __init__(self, C, H, D, N):
        super().__init__(C, num_timesteps=N, depth=2, dim_head=D, heads=H)

    def forward(self, image_embed, diffusion_timesteps, text_embed, text_encodings):
        return super().forward(image_embed, diffusion_timesteps, text_embed=text_embed,
                               text_encodings=text_encodings, cond_drop_prob=0.)'''),
}

# 282857341/nnFormer: nnFormer_acdc.py imports timm.models.layers (DropPath, to_3tuple, trunc_normal_;
# timm is not to be installed here) and nnFormer's nnU-Net-derived base classes (softmax_helper,
# InitWeights_He, SegmentationNetwork: the whole-network inference stack). Small stand-ins; the probe
# imports the package module so its absolute imports resolve.
_B30_TIMM_LAYERS = '''"""stand-in for timm.models.layers: the three names nnFormer imports"""
import torch.nn as nn


class DropPath(nn.Module):
    def __init__(self, drop_prob=0.):
        super().__init__()

    def forward(self, x):
        return x


def to_3tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x, x, x)


def trunc_normal_(tensor, mean=0., std=1., a=-2., b=2.):
    return nn.init.trunc_normal_(tensor, mean=mean, std=std, a=a, b=b)
'''
HARNESS["b30_nnformer"] = {
    "@/timm/__init__.py": EMPTY,
    "@/timm/models/__init__.py": EMPTY,
    "@/timm/models/layers.py": _B30_TIMM_LAYERS,
    "nnformer/__init__.py": EMPTY,
    "nnformer/utilities/__init__.py": EMPTY,
    "nnformer/utilities/nd_softmax.py": '"""stand-in for nnformer.utilities.nd_softmax"""\nimport torch\n\n\ndef softmax_helper(x):\n    return torch.softmax(x, 1)\n',
    "nnformer/network_architecture/__init__.py": EMPTY,
    "nnformer/network_architecture/initialization.py": '"""stand-in: the whole-network initialiser"""\nclass InitWeights_He:\n    def __init__(self, neg_slope=1e-2):\n        self.neg_slope = neg_slope\n\n    def __call__(self, module):\n        pass\n',
    "nnformer/network_architecture/neural_network.py": '"""stand-in for the SegmentationNetwork base class (nnU-Net inference stack)"""\nimport torch.nn as nn\n\n\nclass SegmentationNetwork(nn.Module):\n    pass\n',
    "probe_nnformer.py": probe("from nnformer.network_architecture.nnFormer_acdc import WindowAttention_kv"),
}

# THUwangcy/ReChorus: ComiRec is built from an argparse namespace and a data reader and its forward
# takes a feed dict. pandas (imported by the reader and utils modules, not used by the model) gets a
# permissive stand-in. The probe builds ComiRec from plain sizes (V items, embedding C, attention
# size A, K interests, history length L, position embeddings on) and scores candidates for full
# histories: ids mapped into 1..V-1 (0 is ReChorus's padding id), every length L, test phase.
HARNESS["b30_rechorus"] = {
    "@/pandas.py": PERMISSIVE,
    "src/probe_rechorus.py": probe('''import argparse
import torch
from models.sequential.ComiRec import ComiRec


class ComiRecProbe(ComiRec):
    """ComiRec from plain sizes; forward scores item_id candidates against full histories"""
    def __init__(self, V, C, A, K, L):
        args = argparse.Namespace(emb_size=C, attn_size=A, K=K, add_pos=1, history_max=L, model_path='',
                                  buffer=0, num_neg=1, dropout=0.0, test_all=0)
        super().__init__(args, argparse.Namespace(n_users=5, n_items=V))

    def forward(self, history, item_id):
        history = history % (self.item_num - 1) + 1
        B, L = history.shape
        feed = {'item_id': item_id, 'history_items': history, 'lengths': torch.full((B,), L),
                'batch_size': B, 'phase': 'test'}
        return super().forward(feed)['prediction']'''),
}

# lucidrains/spear-tts-pytorch: the module imports audiolm_pytorch (the wav2vec classes appear only in
# a type annotation), x_clip.tokenizer (used only with use_openai_tokenizer=True); the package
# __init__ also imports the trainer (accelerate). Stand-ins for those; the probe builds TextToSemantic
# from plain sizes (one source and one target layer) and runs the text -> semantic-token direction.
HARNESS["b30_speartts"] = {
    "@/audiolm_pytorch.py": '"""stand-in: the two wav2vec classes, used only in a type annotation"""\nclass FairseqVQWav2Vec:\n    pass\n\n\nclass HubertWithKmeans:\n    pass\n',
    "@/x_clip/__init__.py": EMPTY,
    "@/x_clip/tokenizer.py": '"""stand-in: used only with use_openai_tokenizer=True"""\ntokenizer = None\n',
    "spear_tts_pytorch/__init__.py": EMPTY,
    "probe_speartts.py": probe('''from spear_tts_pytorch.spear_tts_pytorch import TextToSemantic


class TextToSemanticProbe(TextToSemantic):
    """Spear-TTS text-to-semantic seq2seq from plain sizes: width C, H heads of D, V text ids,
    S semantic ids, one source and one target layer; forward maps text to semantic-token logits"""
    def __init__(self, C, H, D, V, S):
        super().__init__(C, num_text_token_ids=V, num_semantic_token_ids=S, source_depth=1, target_depth=1,
                         dim_head=D, heads=H)

    def forward(self, source, target):
        return super().forward(source, target, source_type='text', target_type='speech')'''),
}
