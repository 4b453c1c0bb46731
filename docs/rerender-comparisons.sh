#!/usr/bin/env bash
# Re-render the committed comparisons from their runs' results.json: in git before b92f9d7 removed them, or, for the
# upgrades, clients and kafka-4.4 comparisons, in their slices' archives. The pages change with the comparison's
# template, the runs do not. Run from the repository root.
set -euo pipefail
FROM=b92f9d7^
EXTRACTED=$(mktemp)
for d in comparison compare-transactions example-compare; do
  git ls-tree -r --name-only "$FROM" -- "docs/$d" | grep 'results.json$' | while read -r f; do
    if [ ! -e "$f" ]; then mkdir -p "$(dirname "$f")"; git show "$FROM:$f" > "$f"; echo "$f" >> "$EXTRACTED"; fi
  done
done
rm -rf docs/comparison/compare-20261129T064708Z
.venv/bin/kchaos compare --merge docs/comparison/runs --runs-dir docs/comparison --allow-unknown > /dev/null || true
mv docs/comparison/compare-2* docs/comparison/compare-20261129T064708Z
for d in compare-transactions example-compare; do  # these pages sit beside their runs/, one level up
  .venv/bin/kchaos compare --merge "docs/$d/runs" --runs-dir "docs/$d/rendered" --allow-unknown > /dev/null || true
  for f in docs/$d/rendered/compare-*/*; do
    if [[ $f == *.html ]]; then sed 's#href="\(\.\./\)*runs/#href="runs/#g' "$f" > "docs/$d/$(basename "$f")"
    else cp "$f" "docs/$d/"; fi
  done
  rm -rf "docs/$d/rendered"
done
for name in upgrades clients kafka-4.4; do .venv/bin/python -m bench.shard "$name" merge > /dev/null || true; done
xargs -d '\n' rm -f < "$EXTRACTED"
rm -f "$EXTRACTED"
find docs/comparison/runs docs/compare-transactions/runs docs/example-compare/runs -type d -empty -delete 2>/dev/null || true
