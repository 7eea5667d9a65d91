"""The config language, from YAML text to jobs; no Numba, no xarray.

files (regular files a user names), yamltext (YAML read safely, `--set`, values quoted short),
schema (the sections as frozen, validated dataclasses), inputs (`.npy` files a config names),
weights (weights folders), layer_keys (the rules of layer models), grid (axes -> jobs, ids,
shards). Imports point up that list: the grid over the schema over the text.
"""
