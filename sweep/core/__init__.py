"""The sweep itself, from a config file to a results file, on one machine.

config (YAML -> frozen, validated dataclasses), grid (axes -> jobs, ids, shards), inputs
(.npy files a config names), states and matrices (what a job starts from), stability (step
sizes that will not converge), kernel (the compiled path each job takes, its cost), simulate
(one job, no I/O), resources (memory and CPUs), locks (one lock file per job), store (a
run's parts), netcdf (results files), merging (the parts into one results file, in blocks),
runner (jobs on threads, progress through hooks). Imports point down that list's reverse: the
runner and the merge over the store over simulate over the grid over the config.
"""
