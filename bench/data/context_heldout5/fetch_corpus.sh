#!/usr/bin/env bash
# Fetch and unpack the pinned packages used by queries_heldout5.jsonl (nothing fetched here is committed).
#   usage: bash fetch_corpus.sh [DEST]        (default DEST=$HOME/.cache/cebench-heldout5)
# Result: DEST/src/<pkg>-<version>/...  (ejs: DEST/src/ejs-3.1.10/ejs-v3.1.10/...; the ejs tarball's top folder
# is ejs-v3.1.10/, not the usual package/)
set -euo pipefail
DEST="${1:-$HOME/.cache/cebench-heldout5}"
mkdir -p "$DEST/dl" "$DEST/src"

for spec in python-dotenv==1.0.1 cachetools==5.5.0 bleach==6.1.0; do
  python3 -m pip download --no-deps --no-binary :all: "$spec" -d "$DEST/dl"
done
(cd "$DEST/dl" && npm pack ejs@3.1.10)

# archives as fetched when the split was built
(cd "$DEST/dl" && sha256sum -c - <<'SUMS'
e324ee90a023d808f1959c46bcbc04446a10ced277783dc6ee09987c37ec10ca  python-dotenv-1.0.1.tar.gz
2cc24fb4cbe39633fb7badd9db9ca6295d766d9c2995f245725a46715d050f2a  cachetools-5.5.0.tar.gz
0a31f1837963c41d46bbf1331b8778e1308ea0791db03cc4e7357b97cf42a8fe  bleach-6.1.0.tar.gz
990ad60970b439f79eba9cad9e58f039471ec003f57f4e06e6a9a3fdc9e4bb95  ejs-3.1.10.tgz
SUMS
)

for f in python-dotenv-1.0.1 cachetools-5.5.0 bleach-6.1.0; do
  tar -xzf "$DEST/dl/$f.tar.gz" -C "$DEST/src"
done
mkdir -p "$DEST/src/ejs-3.1.10"
tar -xzf "$DEST/dl/ejs-3.1.10.tgz" -C "$DEST/src/ejs-3.1.10"
echo "corpus ready under $DEST/src"
