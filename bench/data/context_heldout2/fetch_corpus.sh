#!/usr/bin/env bash
# Fetch and unpack the pinned packages used by queries_heldout2.jsonl (nothing fetched here is committed).
#   usage: bash fetch_corpus.sh [DEST]        (default DEST=$HOME/.cache/cebench-heldout2)
# Result: DEST/src/<pkg>-<version>/...  (ws: DEST/src/ws-8.18.0/package/...)
set -euo pipefail
DEST="${1:-$HOME/.cache/cebench-heldout2}"
mkdir -p "$DEST/dl" "$DEST/src"

for spec in itsdangerous==2.2.0 marshmallow==3.23.1 starlette==0.41.3; do
  python3 -m pip download --no-deps --no-binary :all: "$spec" -d "$DEST/dl"
done
(cd "$DEST/dl" && npm pack ws@8.18.0)

# archives as fetched when the split was built
(cd "$DEST/dl" && sha256sum -c - <<'SUMS'
e0050c0b7da1eea53ffaf149c0cfbb5c6e2e2b69c4bef22c81fa6eb73e5f6173  itsdangerous-2.2.0.tar.gz
3a8dfda6edd8dcdbf216c0ede1d1e78d230a6dc9c5a088f58c4083b974a0d468  marshmallow-3.23.1.tar.gz
0e4ab3d16522a255be6b28260b938eae2482f98ce5cc934cb08dce8dc3ba5835  starlette-0.41.3.tar.gz
a08221f2851472c944ca0178d89a9888c7f43fbd9998afc8a7ec6fe417c4ca20  ws-8.18.0.tgz
SUMS
)

for f in itsdangerous-2.2.0 marshmallow-3.23.1 starlette-0.41.3; do
  tar -xzf "$DEST/dl/$f.tar.gz" -C "$DEST/src"
done
mkdir -p "$DEST/src/ws-8.18.0"
tar -xzf "$DEST/dl/ws-8.18.0.tgz" -C "$DEST/src/ws-8.18.0"
echo "corpus ready under $DEST/src"
