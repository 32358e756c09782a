#!/usr/bin/env bash
# The headline's trainings as background lanes on a 2-core machine: each argument
# "algorithm:seed[:key=value,key=value]" in turn, one torch thread (what `--jobs 2` gives a
# cell on 2 cores, the published run's setting), from a worktree at a fixed commit, results
# outside the repository. A run with settings (issue 46's variants of a baseline, e.g.
# splitfed_v2:0:splitfed_v2.server_order=sequential) goes to $RESULTS/variants/<settings>/.
# Finished runs are skipped and interrupted ones resume from their checkpoints, so the same
# command continues after a session ends. Keep each finished run in git at once:
#   python -m scala_netsim.tools.keep $RESULTS/cellular_10pct docs/studies/cellular_10pct/results
#   python -m scala_netsim.tools.keep $RESULTS/variants/<settings>/cellular_10pct \
#       docs/studies/cellular_10pct/variants/<settings>
# Usage (two lanes of issue 46):
#   WORKTREE=/work/wt46 RESULTS=/work/results46 nohup setsid scripts/headline_lanes.sh \
#     fedprox:1 fedprox:2 > laneA.log 2>&1 &
#   WORKTREE=/work/wt46v RESULTS=/work/results46 nohup setsid scripts/headline_lanes.sh \
#     splitfed_v2:0:splitfed_v2.server_order=sequential > laneB.log 2>&1 &
# WAIT_PID: a process (an earlier lane's run) to wait for before the first job.
set -u
cd "${WORKTREE:?the worktree to run from (git worktree add DIR COMMIT)}"
if [ -n "${WAIT_PID:-}" ]; then
    while kill -0 "$WAIT_PID" 2> /dev/null; do sleep 30; done
fi
for job in "$@"; do
    IFS=: read -r alg seed settings <<< "$job"
    sets=()
    out=${RESULTS:?where the runs go}
    if [ -n "${settings:-}" ]; then
        IFS=, read -ra pairs <<< "$settings"
        for pair in "${pairs[@]}"; do sets+=(--set "$pair"); done
        out=$out/variants/$settings
    fi
    echo "$(date -u +%FT%TZ) start $alg seed $seed ${settings:-}"
    OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 nice -n 10 python3 -m scala_netsim \
        scenarios/cellular_10pct.yaml --out "$out" --jobs 1 \
        --set "algorithms=[$alg]" --set "seed=$seed" "${sets[@]}" \
        --no-progress --no-report --no-figures
    rc=$?
    echo "$(date -u +%FT%TZ) end $alg seed $seed ${settings:-} rc $rc"
done
