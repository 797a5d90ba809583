"""Harness stubs for the bugs16 corpus (our own code): stand-ins for packages the extracted files
import but that are not installed, and probes that build a class from plain sizes. Runs inside
run.py with probe, PERMISSIVE and EMPTY defined."""
HARNESS = {}

# BreizhCrops' transformer classifier: the version before the fix takes the sequence length (its
# head flattens all time steps), the fixed one does not (it max-pools over time). The probe builds
# either from the same plain sizes, passing the length only where the constructor asks for it, with
# dropout off.
_BREIZH_PROBE = probe('''import inspect
from TransformerModel import TransformerModel


class BreizhTransformer(TransformerModel):
    """BreizhCrops' TransformerModel (a time-series classifier) built from plain sizes"""
    def __init__(self, input_dim, num_classes, seq_len, d_model, n_head, n_layers=1, d_inner=32):
        kw = dict(input_dim=input_dim, num_classes=num_classes, d_model=d_model, n_head=n_head,
                  n_layers=n_layers, d_inner=d_inner, dropout=0.0)
        if "sequencelength" in inspect.signature(TransformerModel.__init__).parameters:
            kw["sequencelength"] = seq_len
        super().__init__(**kw)''')
HARNESS["b16_breizh"] = {"@/probe_breizh.py": _BREIZH_PROBE}

# uniem: the embedder wraps a Hugging Face encoder. The probe gives it a small randomly initialised
# BERT (one layer, no dropout) whose padding id is 0, and passes the padding mask positionally
# (the fix renamed the argument). uniem's types and utils modules import datasets and accelerate
# for training only: stand-ins for the two names model.py takes from them.
_UNIEM_PROBE = probe('''from transformers import BertConfig, BertModel
from uniem.model import LastMeanEmbedder


class UniemLastMeanEmbedder(LastMeanEmbedder):
    """uniem's mean-pooling sentence embedder over a small BERT built from plain sizes"""
    def __init__(self, vocab_size, hidden, heads, max_len=64):
        cfg = BertConfig(vocab_size=vocab_size, hidden_size=hidden, num_hidden_layers=1,
                         num_attention_heads=heads, intermediate_size=2 * hidden,
                         max_position_embeddings=max_len, hidden_dropout_prob=0.0,
                         attention_probs_dropout_prob=0.0, pad_token_id=0)
        cfg._attn_implementation = "eager"
        super().__init__(BertModel(cfg, add_pooling_layer=False), pad_token_id=0)

    def forward(self, input_ids, mask):
        return super().forward(input_ids, mask)''')
HARNESS["b16_uniem"] = {
    "uniem/types.py": '"""stand-in for uniem.types (training-only imports)"""\nTokenizer = object\n',
    "uniem/utils.py": ('"""stand-in for uniem.utils (training-only imports)"""\n'
                       "def generate_batch(data, batch_size):\n"
                       "    data = list(data)\n"
                       "    for i in range(0, len(data), batch_size):\n"
                       "        yield data[i:i + batch_size]\n"),
    "probe_uniem.py": _UNIEM_PROBE,
}

# I-JEPA: model.py builds its encoders with x_transformers (not installed here) and moves the
# student encoder to CUDA in the constructor. The stand-in Encoder/Decoder is a plain pre-norm
# stack of torch's own encoder layers whose .cuda() stays on the CPU. The probe builds the model in
# its "test" mode (the embedding of every patch), the mode the repository's fine-tuning uses.
_XT = '''"""stand-in for x_transformers: a plain pre-norm encoder stack (torch layers)"""
import torch.nn as nn


class Encoder(nn.Module):
    def __init__(self, dim, depth=1, heads=1, layer_dropout=0.0, **kwargs):
        super().__init__()
        self.layers = nn.ModuleList([
            nn.TransformerEncoderLayer(dim, heads, 2 * dim, dropout=0.0, batch_first=True, norm_first=True)
            for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)

    def cuda(self, *args, **kwargs):
        return self

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.norm(x)


Decoder = Encoder
'''
_IJEPA_PROBE = probe('''from model import IJEPA_base


class IJEPAEncoder(IJEPA_base):
    """I-JEPA's context encoder path (patch embedding, positions, student encoder) from plain sizes"""
    def __init__(self, img_size, patch_size, in_chans, embed_dim, num_heads):
        super().__init__(img_size, patch_size, in_chans, embed_dim, enc_depth=1, pred_depth=1,
                         num_heads=num_heads, mode="test")''')
HARNESS["b16_ijepa"] = {"@/x_transformers.py": _XT, "@/probe_ijepa.py": _IJEPA_PROBE}
