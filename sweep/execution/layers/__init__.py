"""Layer models (docs/layers.md): a transformer block by block, `model.layers` of them, each
with its own parameters (params), NumPy blocks for LayerNorm placements (transformer), the
run that observes every layer (stack) and its cost (cost)."""
