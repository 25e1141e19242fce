#!/usr/bin/env bash
# Fetch and unpack the pinned packages used by queries_heldout6.jsonl (nothing fetched here is committed).
#   usage: bash fetch_corpus.sh [DEST]        (default DEST=$HOME/.cache/cebench-heldout6)
# Result: DEST/src/<pkg>-<version>/...  (body-parser: DEST/src/body-parser-1.20.3/package/...)
set -euo pipefail
DEST="${1:-$HOME/.cache/cebench-heldout6}"
mkdir -p "$DEST/dl" "$DEST/src"

for spec in h11==0.14.0 sqlparse==0.5.1 more-itertools==10.5.0; do
  python3 -m pip download --no-deps --no-binary :all: "$spec" -d "$DEST/dl"
done
(cd "$DEST/dl" && npm pack body-parser@1.20.3)

# archives as fetched when the split was built
(cd "$DEST/dl" && sha256sum -c - <<'SUMS'
8f19fbbe99e72420ff35c00b27a34cb9937e902a8b810e2c88300c6f0a3b699d  h11-0.14.0.tar.gz
bb6b4df465655ef332548e24f08e205afc81b9ab86cb1c45657a7ff173a3a00e  sqlparse-0.5.1.tar.gz
5482bfef7849c25dc3c6dd53a6173ae4795da2a41a80faea6700d9f5846c5da6  more-itertools-10.5.0.tar.gz
d640fabf4456aa15a879ea36cdf6056164a44098c654dfe0a8522d1d3a4b6e86  body-parser-1.20.3.tgz
SUMS
)

for f in h11-0.14.0 sqlparse-0.5.1 more-itertools-10.5.0; do
  tar -xzf "$DEST/dl/$f.tar.gz" -C "$DEST/src"
done
mkdir -p "$DEST/src/body-parser-1.20.3"
tar -xzf "$DEST/dl/body-parser-1.20.3.tgz" -C "$DEST/src/body-parser-1.20.3"
echo "corpus ready under $DEST/src"
