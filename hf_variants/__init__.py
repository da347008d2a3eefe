"""hf-variants: the Transformer family as Hugging Face-native models."""
