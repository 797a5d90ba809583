"""Harness stubs for the bugs29 corpus (our own code): probes that build a class from plain sizes,
and stand-ins for packages the extracted files import but that are not installed. Runs inside
run.py with probe, PERMISSIVE and EMPTY defined. One package was installed into the venv the primer
runs with: unfoldNd (pure Python; nuwa_pytorch's 3D nearby attention unfolds its keys with it)."""
HARNESS = {}

# ChenglongChen/Long-Capital: longcapital/rl/utils/net/common.py imports tianshou's MLP (not
# installed; tianshou pulls in gym). Our stand-in MLP: Linear + activation per hidden size, then an
# optional output layer, with tianshou's `output_dim` attribute. The probe builds MetaNet from plain
# sizes: D features per stock, hidden width C, H heads, self-attention over the stocks (T), 2 layers.
_B29_MLP = '''"""stand-in for tianshou.utils.net.common.MLP: Linear + activation per hidden size"""
import torch.nn as nn


class MLP(nn.Module):
    def __init__(self, input_dim, output_dim=0, hidden_sizes=(), norm_layer=None, activation=nn.ReLU,
                 device=None, linear_layer=nn.Linear, **kwargs):
        super().__init__()
        dims = [input_dim, *hidden_sizes]
        layers = []
        for a, b in zip(dims[:-1], dims[1:]):
            layers += [linear_layer(a, b), activation()]
        if output_dim > 0:
            layers.append(linear_layer(dims[-1], output_dim))
        self.model = nn.Sequential(*layers)
        self.output_dim = output_dim or dims[-1]

    def forward(self, x):
        return self.model(x)
'''
HARNESS["b29_longcapital"] = {
    "@/tianshou/__init__.py": EMPTY,
    "@/tianshou/utils/__init__.py": EMPTY,
    "@/tianshou/utils/net/__init__.py": EMPTY,
    "@/tianshou/utils/net/common.py": _B29_MLP,
    "probe_longcapital.py": probe('''from longcapital.rl.utils.net.common import MetaNet


class LongCapitalProbe(MetaNet):
    """MetaNet from plain sizes: D features per stock, width C, H heads, 2 self-attention layers"""
    def __init__(self, D, C, H):
        super().__init__(state_shape=(1, D), hidden_sizes=[C], self_attn=True, nhead=H, num_layers=2,
                         dropout=0.0)'''),
}

# zalandoresearch/pytorch-ts: pts/__init__.py and pts/model/__init__.py import the trainer, estimator
# and predictor stack (gluonts-style data code). Stand-ins: an empty pts/__init__, a pts/model/__init__
# that only exposes weighted_average from the extracted pts/model/utils.py, an empty
# pts/model/transformer/__init__. The network's own forward returns a scalar loss; the probe builds
# TransformerTrainingNetwork from plain sizes and runs the encoder/decoder calls of that forward
# (encoder on the context, decoder on the prediction window with tgt_mask=self.tgt_mask) on given
# inputs, returning the decoder output (B, T, C).
HARNESS["b29_pts"] = {
    "pts/__init__.py": EMPTY,
    "pts/model/__init__.py": '"""stand-in: only what transformer_network imports"""\nfrom .utils import weighted_average\n',
    "pts/model/transformer/__init__.py": EMPTY,
    "probe_pts.py": probe('''from pts.modules import StudentTOutput
from pts.model.transformer.transformer_network import TransformerTrainingNetwork


class PtsTransformerProbe(TransformerTrainingNetwork):
    """TransformerTrainingNetwork from plain sizes; forward runs its encoder/decoder calls"""
    def __init__(self, C, H, S, T):
        super().__init__(input_size=C, d_model=C, num_heads=H, act_type="gelu", dropout_rate=0.0,
                         dim_feedforward_scale=2, num_encoder_layers=1, num_decoder_layers=2,
                         history_length=S + 1, context_length=S, prediction_length=T,
                         distr_output=StudentTOutput(), cardinality=[1], embedding_dimension=[1], lags_seq=[1])

    def forward(self, enc_x, dec_x):
        enc_out = self.transformer.encoder(self.encoder_input(enc_x).permute(1, 0, 2))
        dec = self.transformer.decoder(self.decoder_input(dec_x).permute(1, 0, 2), enc_out, tgt_mask=self.tgt_mask)
        return dec.permute(1, 0, 2)'''),
}

# leffff/graphormer-pyg: graphormer/layers.py imports torch_geometric.utils.degree (not installed; used
# by CentralityEncoding only). Our stand-in counts with torch.bincount. The probe runs
# GraphormerMultiHeadAttention on a batch of B graphs of T nodes: node features (B, T, C) flattened to
# N = B*T nodes, ptr = [0, T, 2T, ...], spatial bias 0, no edge paths (edge encoding 0), then reshaped
# back to (B, T, C).
HARNESS["b29_graphormer"] = {
    "@/torch_geometric/__init__.py": EMPTY,
    "@/torch_geometric/utils.py": '"""stand-in for torch_geometric.utils.degree"""\nimport torch\n\n\ndef degree(index, num_nodes=None, dtype=None):\n    return torch.bincount(index, minlength=num_nodes or 0).float()\n',
    "probe_graphormer.py": probe('''import torch
import torch.nn as nn
from graphormer.layers import GraphormerMultiHeadAttention


class GraphormerBatchProbe(nn.Module):
    """B graphs of T nodes each, as PyG batches them: one node axis N = B*T and a ptr"""
    def __init__(self, C, H, E):
        super().__init__()
        self.E = E
        self.mha = GraphormerMultiHeadAttention(num_heads=H, dim_in=C, dim_q=C, dim_k=C, edge_dim=E,
                                                max_path_distance=5)

    def forward(self, x):
        B, T, C = x.shape
        ptr = torch.arange(0, B * T + 1, T)
        b = torch.zeros(B * T, B * T)
        out = self.mha(x.reshape(B * T, C), torch.zeros(1, self.E), b, {}, ptr)
        return out.reshape(B, T, -1)'''),
}

# lucidrains/nuwa-pytorch: nuwa_pytorch.py imports torchvision (the VAE's perceptual loss only) and
# vector_quantize_pytorch (the VAE's quantizer only): a permissive stand-in and a class that raises if
# built. unfoldNd is installed. The probe builds Sparse3DNA for a video of 4 frames of 2x2 tokens
# (+ bos: 17 tokens), kernel 3, queries processed in chunks of 2 frames, not causal.
_B29_VQ = '''"""stand-in for vector_quantize_pytorch: the VAE's quantizer, never built here"""
class VectorQuantize:
    def __init__(self, *args, **kwargs):
        raise RuntimeError("stand-in")
'''
HARNESS["b29_nuwa"] = {
    "@/torchvision.py": PERMISSIVE,
    "@/vector_quantize_pytorch.py": _B29_VQ,
    "probe_nuwa.py": probe('''from nuwa_pytorch.nuwa_pytorch import Sparse3DNA


class Sparse3DNAProbe(Sparse3DNA):
    """3D nearby attention over 4 frames of 2x2 tokens (+ bos), kernel 3, chunks of 2 frames"""
    def __init__(self, C, H, D):
        super().__init__(dim=C, video_shape=(4, 2, 2), kernel_size=3, heads=H, dim_head=D, causal=False,
                         query_num_frames_chunk=2)'''),
}

# AuCson/PyTorch-Batch-Attention-Seq2seq: attentionRNN.py calls math.sqrt in Attn.__init__ but never
# imports math (the file is meant to be pasted beside other code). The probe puts math into builtins
# before importing it.
HARNESS["b29_seq2seq"] = {
    "probe_seq2seq.py": probe('''import builtins
import math
builtins.math = math
from attentionRNN import BahdanauAttnDecoderRNN, Attn'''),
}

# lucidrains/x-clip: CLIP.forward returns the contrastive loss only when asked (return_loss=True), and
# the bug is on that path with extra_latent_projection=True. The probe builds CLIP from plain sizes
# (one text and one image encoder layer, 8x8 images in 4x4 patches) and returns the loss.
HARNESS["b29_xclip"] = {
    "probe_xclip.py": probe('''from x_clip.x_clip import CLIP


class XClipLossProbe(CLIP):
    """CLIP (CLOOB extra latent projection) from plain sizes; forward returns the contrastive loss"""
    def __init__(self, C, L, V, T, H):
        super().__init__(dim_text=C, dim_image=C, dim_latent=L, num_text_tokens=V, text_enc_depth=1,
                         text_seq_len=T, text_heads=H, visual_enc_depth=1, visual_heads=H,
                         visual_image_size=8, visual_patch_size=4, extra_latent_projection=True)

    def forward(self, text, image):
        return super().forward(text, image, return_loss=True)'''),
}
