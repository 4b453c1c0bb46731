#!/usr/bin/env bash
# Run one slice of the committed comparison and keep its runs under runs/comparison/SLICE, trimmed to what
# `kchaos compare --merge` and a reader need: results.json, scenario.json, schedule.json and run.json of every run,
# report.html of the runs that failed or were unknown (histories, broker logs and passing reports are dropped).
# A slice is I (1..48: slice I of the catalog's version x scenario x seed matrix) or the name of a regression
# scenario (its affected and fixed versions, seeds 42 to 46).
# Usage, from the repository's root, one cluster at a time: bash docs/comparison/run-shard.sh SLICE
# KEEP_WORK=DIR copies the whole work directory (histories and broker logs too) to DIR before it is removed.
set -euo pipefail
SLICE=${1:?usage: bash docs/comparison/run-shard.sh I (1..48) or the name of a regression scenario}
SHARDS=48
KAFKA=4.3.1,3.9.2,3.9.2:zookeeper,2.8.2
case $SLICE in
  [0-9]*) dest=runs/comparison/shard-$SLICE ;;
  *) dest=runs/comparison/$SLICE ;;
esac
[ -e "$dest" ] && { echo "$dest exists: slice $SLICE has run; remove it to run it again" >&2; exit 2; }
work=$(mktemp -d)
trap '[ -n "${KEEP_WORK:-}" ] && mkdir -p "$KEEP_WORK" && cp -r "$work"/. "$KEEP_WORK"/; rm -rf "$work"' EXIT
started=$(date +%s)
code=0
if [ "$dest" = "runs/comparison/shard-$SLICE" ]; then
  .venv/bin/kchaos compare --kafka "$KAFKA" --suite nightly --seeds 5 --shard "$SLICE/$SHARDS" --runs-dir "$work" \
    >> "$work/runs.log" 2>&1 || code=$?
else
  for seed in 42 43 44 45 46; do
    .venv/bin/kchaos run "$SLICE" --seed "$seed" --runs-dir "$work" >> "$work/runs.log" 2>&1 || code=$?
  done
fi
if ! ls "$work"/*/*/results.json > /dev/null 2>&1; then  # any exit code with runs: a FAIL or UNKNOWN is a finding
  tail -20 "$work/runs.log" >&2
  exit "$code"
fi
for results in "$work"/*/*/results.json; do
  run=$(dirname "$results")
  keep="$dest/${run#"$work"/}"
  mkdir -p "$keep"
  cp "$run"/{results,scenario,schedule,run}.json "$keep"/
  if ! .venv/bin/python -c 'import sys; from pathlib import Path; from reports.result import RunResult
sys.exit(RunResult.load(Path(sys.argv[1])).badge in ("FAIL", "UNKNOWN"))' "$results"; then
    cp "$run/report.html" "$keep"/ 2>/dev/null || true
  fi
done
echo "$SLICE: $(find "$dest" -name results.json | wc -l) runs in $(( ($(date +%s) - started) / 60 )) min," \
  "exit $code" | tee -a runs/comparison/shards.log
