#!/usr/bin/env bash
# Reproduce book/_static/vendor/ from the npm registry, at pinned versions.
#
# The rendered book must work with no network: MathJax, require.js, the ipywidgets
# html-manager, and d3 + jQuery (which bertviz loads through require.js) are served from the
# book's own static files. The vendored files are committed, so a build never needs npm; this
# script only documents (and can redo) how they got there. Run it from anywhere:
#
#   bash tools/vendor_js.sh          # rewrites book/_static/vendor/ (needs `npm` and the registry)
#
# Layout (paths are relative to the book's _static/ folder; _config.yml refers to them):
#   vendor/mathjax/tex-mml-chtml.js       MathJax 3 combined component (TeX + MathML in, CHTML out)
#   vendor/mathjax/input/tex/extensions/  TeX packages MathJax autoloads (\boldsymbol, \cancel, ...)
#   vendor/mathjax/output/chtml/fonts/woff-v2/  the CHTML fonts
#   vendor/requirejs/require.js           AMD loader used by the widget manager and by bertviz
#   vendor/html-manager/embed-amd.js      @jupyter-widgets/html-manager 1.x (ipywidgets 8): bundles
#                                         base, controls, output and libembed-amd; renders views
#   vendor/html-manager/*.woff2           Font Awesome fonts its CSS points at (webpack publicPath)
#   vendor/npm/                           the widget manager's "CDN" for third-party widget
#                                         modules: <package>@<version>/dist/<file>.js
#   vendor/d3/d3.min.js, vendor/jquery/jquery.min.js   for bertviz (require paths d3, jquery)
#   vendor/vega/vega.min.js               Vega 6 (UMD build): draws the static explorers
#                                         (ctxlib.viz.static_explorers); its signals bound to
#                                         HTML inputs act with no kernel. Vega, not Vega-Lite:
#                                         the specs are written in Vega, so the page needs
#                                         neither vega-lite (250 kB) nor vega-embed
#   vendor/widgets-setup.js               NOT from npm, the book's own (kept by this script): points
#                                         html-manager at its fonts and at vendor/npm/, and maps
#                                         ipywidgets' MathJax 2 call onto MathJax 3
# Every library keeps its license file next to it.
#
# Left out on purpose (size): MathJax's speech-rule-engine (sre/, 3.9 MB) and a11y/ explorer,
# which its context menu loads only if a reader turns on the accessibility explorer; the SVG
# output; html-manager's source maps and non-woff2 font formats (browsers take woff2 first).
set -euo pipefail

MATHJAX=3.2.2
REQUIREJS=2.3.7
HTML_MANAGER=1.0.15   # the html-manager of ipywidgets 8.1 (widget protocol 2, controls 2.0.0)
D3=5.7.0              # bertviz 1.4.1 asks require.js for d3 5.7.0
JQUERY=3.7.1          # bertviz asks for jquery 2.0.0, which npm does not have; 3.x serves its $() use
VEGA=6.4.0            # the static explorers' specs are Vega 6 ($schema .../vega/v6.json)

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEST="$ROOT/book/_static/vendor"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

mit_text() {
  cat <<'EOF'
Permission is hereby granted, free of charge, to any person obtaining a copy of this software
and associated documentation files (the "Software"), to deal in the Software without
restriction, including without limitation the rights to use, copy, modify, merge, publish,
distribute, sublicense, and/or sell copies of the Software, and to permit persons to whom the
Software is furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all copies or
substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED, INCLUDING
BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND
NONINFRINGEMENT. IN NO EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM,
DAMAGES OR OTHER LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.
EOF
}

bsd3_text() {
  cat <<'EOF'
BSD 3-Clause License

Copyright (c) 2015 Project Jupyter Contributors
All rights reserved.

Redistribution and use in source and binary forms, with or without modification, are permitted
provided that the following conditions are met:

1. Redistributions of source code must retain the above copyright notice, this list of
   conditions and the following disclaimer.

2. Redistributions in binary form must reproduce the above copyright notice, this list of
   conditions and the following disclaimer in the documentation and/or other materials provided
   with the distribution.

3. Neither the name of the copyright holder nor the names of its contributors may be used to
   endorse or promote products derived from this software without specific prior written
   permission.

THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS "AS IS" AND ANY EXPRESS OR
IMPLIED WARRANTIES, INCLUDING, BUT NOT LIMITED TO, THE IMPLIED WARRANTIES OF MERCHANTABILITY AND
FITNESS FOR A PARTICULAR PURPOSE ARE DISCLAIMED. IN NO EVENT SHALL THE COPYRIGHT HOLDER OR
CONTRIBUTORS BE LIABLE FOR ANY DIRECT, INDIRECT, INCIDENTAL, SPECIAL, EXEMPLARY, OR
CONSEQUENTIAL DAMAGES (INCLUDING, BUT NOT LIMITED TO, PROCUREMENT OF SUBSTITUTE GOODS OR
SERVICES; LOSS OF USE, DATA, OR PROFITS; OR BUSINESS INTERRUPTION) HOWEVER CAUSED AND ON ANY
THEORY OF LIABILITY, WHETHER IN CONTRACT, STRICT LIABILITY, OR TORT (INCLUDING NEGLIGENCE OR
OTHERWISE) ARISING IN ANY WAY OUT OF THE USE OF THIS SOFTWARE, EVEN IF ADVISED OF THE
POSSIBILITY OF SUCH DAMAGE.
EOF
}

fetch() {  # fetch NAME VERSION -> unpacks the registry tarball into $WORK/NAME/package
  local dir="$WORK/${1//\//_}"
  mkdir -p "$dir"
  (cd "$dir" && npm pack --silent "$1@$2" >/dev/null && tar xzf ./*.tgz)
  echo "$dir/package"
}

MJ="$(fetch mathjax "$MATHJAX")"
RQ="$(fetch requirejs "$REQUIREJS")"
HM="$(fetch @jupyter-widgets/html-manager "$HTML_MANAGER")"
D3P="$(fetch d3 "$D3")"
JQ="$(fetch jquery "$JQUERY")"
VG="$(fetch vega "$VEGA")"

# Replace the libraries; keep widgets-setup.js (the book's own, not from npm).
rm -rf "$DEST"/{mathjax,requirejs,html-manager,npm,d3,jquery,vega} "$DEST/VERSIONS"
mkdir -p "$DEST"/{mathjax/input/tex,mathjax/output/chtml/fonts,requirejs,html-manager,npm,d3,jquery,vega}

# MathJax
cp "$MJ/es5/tex-mml-chtml.js" "$DEST/mathjax/"
cp -r "$MJ/es5/input/tex/extensions" "$DEST/mathjax/input/tex/"
cp -r "$MJ/es5/output/chtml/fonts/woff-v2" "$DEST/mathjax/output/chtml/fonts/"
cp "$MJ/LICENSE" "$DEST/mathjax/LICENSE"

# require.js: its npm package ships no license file; the header of require.js names MIT.
cp "$RQ/require.js" "$DEST/requirejs/"
{
  echo "RequireJS $REQUIREJS"
  echo "Copyright jQuery Foundation and other contributors, https://jquery.org/"
  echo
  mit_text
} > "$DEST/requirejs/LICENSE"

# @jupyter-widgets/html-manager
cp "$HM/dist/embed-amd.js" "$DEST/html-manager/"
cp "$HM"/dist/*.woff2 "$DEST/html-manager/"
# The package ships no license file at its root; package.json says BSD-3-Clause. The bundle's
# third-party notices (jQuery UI, Lumino, ...) are in embed.js.LICENSE.txt; the Font Awesome
# Free fonts are under the SIL OFL 1.1 (https://fontawesome.com/license/free).
cp "$HM/dist/embed.js.LICENSE.txt" "$DEST/html-manager/THIRD-PARTY-LICENSES.txt"
{
  echo "@jupyter-widgets/html-manager $HTML_MANAGER"
  echo "Font Awesome Free fonts (*.woff2): SIL OFL 1.1, https://fontawesome.com/license/free"
  echo
  bsd3_text
} > "$DEST/html-manager/LICENSE"
cat > "$DEST/npm/README.txt" <<'EOF'
The ipywidgets html-manager's module "CDN" (`data-jupyter-widgets-cdn` in `_config.yml`).

embed-amd.js bundles @jupyter-widgets/base, controls and output, so ipywidgets' own widgets need
nothing here. A third-party widget library the book uses would be vendored here as
`<package>@<version>/dist/index.js` (the html-manager asks require.js for exactly that path).
EOF

# d3 and jQuery for bertviz
cp "$D3P/dist/d3.min.js" "$DEST/d3/"
cp "$D3P/LICENSE" "$DEST/d3/LICENSE"
cp "$JQ/dist/jquery.min.js" "$DEST/jquery/"
cp "$JQ/LICENSE.txt" "$DEST/jquery/LICENSE.txt"

# Vega (BSD-3-Clause); the UMD build sets window.vega when no AMD loader is on the page
# before it (book/_ext/explorer_assets.py puts it in the page's head, ahead of require.js).
cp "$VG/build/vega.min.js" "$DEST/vega/"
cp "$VG/LICENSE" "$DEST/vega/LICENSE"

cat > "$DEST/VERSIONS" <<EOF
mathjax $MATHJAX
requirejs $REQUIREJS
@jupyter-widgets/html-manager $HTML_MANAGER
d3 $D3
jquery $JQUERY
vega $VEGA
EOF

# onnxruntime-web (MIT), for the polysemy explorer's typed sentence (book/_static/typed_sentence.js):
# the WebAssembly CPU backend only. ort.wasm.min.js (54 kB, sets window.ort) loads, on first use,
# ort-wasm-simd-threaded.mjs and .wasm (14.8 MB) from this folder (env.wasm.wasmPaths); the page
# loads none of them until a reader encodes a sentence. Without cross-origin isolation the
# threaded build runs on one thread. The package ships no license file; package.json says MIT.
ORT_WEB=1.31.1
ORT="$(fetch onnxruntime-web "$ORT_WEB")"
rm -rf "$DEST/onnxruntime-web"
mkdir -p "$DEST/onnxruntime-web"
cp "$ORT"/dist/{ort.wasm.min.js,ort-wasm-simd-threaded.mjs,ort-wasm-simd-threaded.wasm} "$DEST/onnxruntime-web/"
{
  echo "onnxruntime-web $ORT_WEB"
  echo "Copyright (c) Microsoft Corporation"
  echo
  mit_text
} > "$DEST/onnxruntime-web/LICENSE"
echo "onnxruntime-web $ORT_WEB" >> "$DEST/VERSIONS"

echo "== vendored into $DEST ($(du -sh "$DEST" | cut -f1))"
