#!/usr/bin/env bash
# Fetch and unpack the pinned packages used by queries_heldout3.jsonl (nothing fetched here is committed).
#   usage: bash fetch_corpus.sh [DEST]        (default DEST=$HOME/.cache/cebench-heldout3)
# Result: DEST/src/<pkg>-<version>/...  (semver: DEST/src/semver-7.6.3/package/...)
set -euo pipefail
DEST="${1:-$HOME/.cache/cebench-heldout3}"
mkdir -p "$DEST/dl" "$DEST/src"

for spec in attrs==24.2.0 tomlkit==0.13.2 packaging==24.2; do
  python3 -m pip download --no-deps --no-binary :all: "$spec" -d "$DEST/dl"
done
(cd "$DEST/dl" && npm pack semver@7.6.3)

# archives as fetched when the split was built
(cd "$DEST/dl" && sha256sum -c - <<'SUMS'
5cfb1b9148b5b086569baec03f20d7b6bf3bcacc9a42bebf87ffaaca362f6346  attrs-24.2.0.tar.gz
fff5fe59a87295b278abd31bec92c15d9bc4a06885ab12bcea52c71119392e79  tomlkit-0.13.2.tar.gz
c228a6dc5e932d346bc5739379109d49e8853dd8223571c7c5b55260edc0b97f  packaging-24.2.tar.gz
376d2ca2c941fc5a37e9ac3ec65302e5e421e2cc1ee3dee57a854d2bd9bee125  semver-7.6.3.tgz
SUMS
)

for f in attrs-24.2.0 tomlkit-0.13.2 packaging-24.2; do
  tar -xzf "$DEST/dl/$f.tar.gz" -C "$DEST/src"
done
mkdir -p "$DEST/src/semver-7.6.3"
tar -xzf "$DEST/dl/semver-7.6.3.tgz" -C "$DEST/src/semver-7.6.3"
echo "corpus ready under $DEST/src"
