"""A small BERT from Hugging Face transformers, built from its config: random weights, nothing downloaded."""
import torch
from transformers import BertConfig, BertModel

config = BertConfig(vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                    intermediate_size=128, max_position_embeddings=64)
model = BertModel(config).eval()
example_inputs = (torch.randint(0, config.vocab_size, (2, 16)),)
