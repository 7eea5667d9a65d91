"""Pretrained transformers through the simulations' lens: a BERT encoder in NumPy (bert), its
tokenizer (wordpiece), and the layer-by-layer probe and matrix extraction (probe)."""
