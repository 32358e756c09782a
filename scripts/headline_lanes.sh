#!/usr/bin/env bash
# Issue 38's headline over seeds, as background lanes on a 2-core machine: each argument
# "algorithm:seed" in turn, one torch thread (what `--jobs 2` gives a cell on 2 cores, the
# published run's setting), from a worktree at a fixed commit, results outside the repository.
# Finished runs are skipped and interrupted ones resume from their checkpoints, so the same
# command continues after a session ends. Keep each finished run in git at once:
#   python -m scala_netsim.tools.keep $RESULTS/cellular_10pct docs/studies/cellular_10pct/results
# Usage (the two lanes of issue 38):
#   WORKTREE=/work/wt38 RESULTS=/work/results38 nohup setsid scripts/headline_lanes.sh \
#     scala:0 splitfed_v2:0 splitfed_v1:0 scala:1 splitfed_v2:1 scala:2 splitfed_v2:2 > laneA.log 2>&1 &
#   WORKTREE=/work/wt38 RESULTS=/work/results38 nohup setsid scripts/headline_lanes.sh \
#     fedavg:0 sfl_local_loss:0 fedprox:0 fedlc:0 fedavg:1 sfl_local_loss:1 fedavg:2 sfl_local_loss:2 > laneB.log 2>&1 &
set -u
cd "${WORKTREE:?the worktree to run from (git worktree add DIR COMMIT)}"
for job in "$@"; do
    alg=${job%%:*}; seed=${job##*:}
    echo "$(date -u +%FT%TZ) start $alg seed $seed"
    OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 nice -n 10 python3 -m scala_netsim \
        scenarios/cellular_10pct.yaml --out "${RESULTS:?where the runs go}" --jobs 1 \
        --set "algorithms=[$alg]" --set "seed=$seed" --no-progress --no-report --no-figures
    echo "$(date -u +%FT%TZ) end $alg seed $seed rc $?"
done
