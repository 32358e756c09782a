#!/bin/bash
# Issue 46: make a kept variant the headline's default for the named algorithms (run in the
# repository's root, after the variant's three seeds are kept and before the scenario flips):
#   scripts/promote_variant.sh fedlc
# moves docs/studies/cellular_10pct/results/ALG (the old default's runs) to
# variants/ALG.optimizer_state=per_round/, the kept variants/ALG.optimizer_state=persistent/ALG
# runs to results/ALG, writes the per-round variant's sweep.json, and points the studies
# re-timed from the moved runs at them where they now live (their summary.json's retimed_from).
# Then: set the scenario's key, `python -m analysis docs/studies/cellular_10pct/results`, copy its
# comparison.csv and figures beside report.md, and rebuild the README's and the report's tables
# (python -m analysis.headline ... [--findings | --runs | --variants DIR]).
set -e
S=docs/studies/cellular_10pct; R=$S/results; V=$S/variants
for alg in "$@"; do
  P="$V/$alg.optimizer_state=persistent"; Q="$V/$alg.optimizer_state=per_round"
  test -d $P/$alg/seed0 -a -d $P/$alg/seed1 -a -d $P/$alg/seed2
  mkdir -p $Q
  git mv $R/$alg $Q/$alg
  git mv $P/$alg $R/$alg
  git rm -q $P/sweep.json
  python3 - "$Q" "$alg" <<'PY'
import json, sys
q, alg = sys.argv[1], sys.argv[2]
sweep = {"scenario": "cellular_10pct", "algorithms": [alg], "sweep": {},
         "accuracy_targets": [0.6, 0.7, 0.8], "rounds": 500,
         "points": [{"algorithm": alg, "setting": {}, "folder": f"{alg}/seed{s}"} for s in range(3)]}
open(f"{q}/sweep.json", "w").write(json.dumps(sweep, indent=2) + "\n")
PY
  git add $Q/sweep.json
done
# the studies re-timed from the per-round trainings point at them where they now live
for alg in "$@"; do
  grep -rl "\"retimed_from\": \".*cellular_10pct/results/$alg/" docs/studies | xargs -r sed -i "s#cellular_10pct/results/$alg/#cellular_10pct/variants/$alg.optimizer_state=per_round/$alg/#"
done
