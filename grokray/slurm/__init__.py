"""grokray on Slurm: `grokray slurm SPEC` writes and submits an sbatch script that starts a Ray
cluster over the allocation and runs `grokray sweep SPEC --address ...` on its head.

    timefmt.py      Slurm's time formats (`--time`), parsed and written
    script.py       the sbatch script: `JobOptions` -> its text (ports, temp dir, head address,
                    signal, requeue; environment lines the user may edit)
    submit.py       `sbatch --parsable` and its one-line errors
    allocation.py   inside a job: when the allocation ends (SLURM_JOB_END_TIME, else squeue)
    deadline.py     the driver under a time limit: which trials can still finish, in rounds;
                    progress, and the exit codes the script reads
    costs.py        the dry run: the cost model's time against nodes x --time

No Ray and no torch at import; `grokray sweep` imports `allocation` and `deadline` only inside a
Slurm job (SLURM_JOB_ID set).
"""

EXIT_MORE_TO_DO = 75
"""the driver stopped because no trial left can finish before the allocation ends, after making
progress: the script requeues the job (sysexits' EX_TEMPFAIL)"""
EXIT_NO_PROGRESS = 3
"""the allocation ended with no new row and no newer checkpoint: a requeue would do the same,
so the script does not requeue"""
