"""Where results live: one part file per batch of jobs and the index that finds a job in
them (parts), one lock per job (locks), a run's parts by job (store), results files written
atomically, CF-ready (netcdf, coords), who wrote a results file (outputs), and the merge of
the parts into one dataset, block by block (merging). Knows configs and jobs, never how a job
is computed.
"""

MERGE_BLOCK_BYTES = 64 * 2**20  # the results one block of the merge holds, about
