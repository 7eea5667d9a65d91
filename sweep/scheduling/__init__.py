"""Past one machine: which shard a process is (shards), stop signals (signals), what a
parts folder holds and which shards to rerun (status), and job-array scripts and their
submission to SLURM, PBS, LSF or SGE (submit)."""
