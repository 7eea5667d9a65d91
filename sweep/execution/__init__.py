"""A run on one machine: what each job starts from (states, matrices), the compiled path it
takes and its cost (kernel), step sizes that will not converge (stability), memory and CPUs
(resources), one job with no I/O (simulate), layer models (layers/), and the jobs on threads
with progress through hooks (runner).
"""
