#!/usr/bin/env bash
# Fetch and unpack the pinned packages used by queries_heldout.jsonl (nothing fetched here is committed).
#   usage: bash fetch_corpus.sh [DEST]        (default DEST=$HOME/.cache/cebench-heldout)
# Result: DEST/src/<pkg>-<version>/...  (commander: DEST/src/commander-12.1.0/package/...)
set -euo pipefail
DEST="${1:-$HOME/.cache/cebench-heldout}"
mkdir -p "$DEST/dl" "$DEST/src"

for spec in click==8.1.7 rich==13.9.4 jinja2==3.1.4; do
  python3 -m pip download --no-deps --no-binary :all: "$spec" -d "$DEST/dl"
done
(cd "$DEST/dl" && npm pack commander@12.1.0)

# archives as fetched when the benchmark was built
(cd "$DEST/dl" && sha256sum -c - <<'SUMS'
ca9853ad459e787e2192211578cc907e7594e294c7ccc834310722b41b9ca6de  click-8.1.7.tar.gz
439594978a49a09530cff7ebc4b5c7103ef57baf48d5ea3184f21d9a2befa098  rich-13.9.4.tar.gz
4a3aee7acbbe7303aede8e9648d13b8bf88a429282aa6122a993f0ac800cb369  jinja2-3.1.4.tar.gz
56affc6ddafe486f94b428ae2823d059cf60d4dae2f33eaaf1b1ec4306f73173  commander-12.1.0.tgz
SUMS
)

for f in click-8.1.7 rich-13.9.4 jinja2-3.1.4; do
  tar -xzf "$DEST/dl/$f.tar.gz" -C "$DEST/src"
done
mkdir -p "$DEST/src/commander-12.1.0"
tar -xzf "$DEST/dl/commander-12.1.0.tgz" -C "$DEST/src/commander-12.1.0"
echo "corpus ready under $DEST/src"
