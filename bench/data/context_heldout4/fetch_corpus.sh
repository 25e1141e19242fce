#!/usr/bin/env bash
# Fetch and unpack the pinned packages used by queries_heldout4.jsonl (nothing fetched here is committed).
#   usage: bash fetch_corpus.sh [DEST]        (default DEST=$HOME/.cache/cebench-heldout4)
# Result: DEST/src/<pkg>-<version>/...  (qs: DEST/src/qs-6.13.0/package/...)
set -euo pipefail
DEST="${1:-$HOME/.cache/cebench-heldout4}"
mkdir -p "$DEST/dl" "$DEST/src"

for spec in tenacity==9.0.0 pluggy==1.5.0 humanize==4.11.0; do
  python3 -m pip download --no-deps --no-binary :all: "$spec" -d "$DEST/dl"
done
(cd "$DEST/dl" && npm pack qs@6.13.0)

# archives as fetched when the split was built
(cd "$DEST/dl" && sha256sum -c - <<'SUMS'
807f37ca97d62aa361264d497b0e31e92b8027044942bfa756160d908320d73b  tenacity-9.0.0.tar.gz
2cffa88e94fdc978c4c574f15f9e59b7f4201d439195c3715ca9e2486f1d0cf1  pluggy-1.5.0.tar.gz
e66f36020a2d5a974c504bd2555cf770621dbdbb6d82f94a6857c0b1ea2608be  humanize-4.11.0.tar.gz
abffeabbdedc8e466c1bd75227e14ceb76e77f61be475dfcee0d3bbe6dd608fd  qs-6.13.0.tgz
SUMS
)

for f in tenacity-9.0.0 pluggy-1.5.0 humanize-4.11.0; do
  tar -xzf "$DEST/dl/$f.tar.gz" -C "$DEST/src"
done
mkdir -p "$DEST/src/qs-6.13.0"
tar -xzf "$DEST/dl/qs-6.13.0.tgz" -C "$DEST/src/qs-6.13.0"
echo "corpus ready under $DEST/src"
