import torch
from torch import nn
import transformers as tf


class GPT2Cached(nn.Module):
    """Prefix run with use_cache, then the last tokens fed one step with past_key_values."""
    def __init__(self, n_embd, n_head, vocab_size, block_size):
        super().__init__()
        self.model = tf.GPT2LMHeadModel(tf.GPT2Config(n_embd=n_embd, n_head=n_head, n_layer=1,
                                                      vocab_size=vocab_size, n_positions=block_size))

    def forward(self, idx):
        prefix = self.model(idx[:, :-2], use_cache=True)
        step = self.model(idx[:, -2:], past_key_values=prefix.past_key_values, use_cache=True)
        return torch.cat([prefix.logits, step.logits], dim=1)


class BertPairs(nn.Module):
    def __init__(self, hidden_size, num_heads, vocab_size, max_len):
        super().__init__()
        self.model = tf.BertModel(tf.BertConfig(hidden_size=hidden_size, num_attention_heads=num_heads,
                                                num_hidden_layers=1, intermediate_size=2 * hidden_size,
                                                vocab_size=vocab_size, max_position_embeddings=max_len,
                                                type_vocab_size=2))

    def forward(self, input_ids, token_type_ids, attention_mask):
        return self.model(input_ids, attention_mask=attention_mask,
                          token_type_ids=token_type_ids).last_hidden_state


class T5Decoder(nn.Module):
    def __init__(self, d_model, num_heads, head_dim, vocab_size):
        super().__init__()
        config = tf.T5Config(d_model=d_model, d_kv=head_dim, num_heads=num_heads, num_layers=1,
                             num_decoder_layers=1, d_ff=2 * d_model, vocab_size=vocab_size,
                             is_decoder=True, use_cache=False)
        from transformers.models.t5.modeling_t5 import T5Stack
        self.decoder = T5Stack(config)

    def forward(self, input_ids, encoder_hidden_states):
        return self.decoder(input_ids=input_ids,
                            encoder_hidden_states=encoder_hidden_states).last_hidden_state


class MistralPadded(nn.Module):
    def __init__(self, hidden_size, num_heads, head_dim, vocab_size, max_len):
        super().__init__()
        self.model = tf.MistralModel(tf.MistralConfig(hidden_size=hidden_size, num_attention_heads=num_heads,
            num_key_value_heads=2, head_dim=head_dim, num_hidden_layers=1, intermediate_size=2 * hidden_size,
            max_position_embeddings=max_len, sliding_window=3, vocab_size=vocab_size))

    def forward(self, input_ids, attention_mask):
        return self.model(input_ids, attention_mask=attention_mask).last_hidden_state
