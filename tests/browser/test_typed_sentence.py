"""The polysemy explorer's typed sentence, in the built book, offline: headless Chromium types
each of the page's test sentences into the box and waits for the browser's own encoding
(onnxruntime-web running the int8 MiniLM, book/_static/typed_sentence.js). Then, against ctxlib
in this process:

- the tokens are BertTokenizerFast's;
- every token's vector at every layer has a cosine of at least 0.99 with ctxlib's BertModel;
- the star lands where ctxlib's projection puts the sentence (within 5% of the word's spread on
  the PCA plane), at every layer, and is drawn on the explorer's panel;
- the nearest sense is ctxlib's at every layer, and at the example layer it is the expected one;
- a sentence without an explorer word gets a clear message, and no star.

Served by test_rendered_pages' local server, with every non-local request blocked.
The in-browser encoding time is printed (pytest -s shows it).
"""

from __future__ import annotations

import statistics
from urllib.parse import urlsplit

import numpy as np
import pytest
import torch
from test_rendered_pages import HTML, _missing

from ctxlib.analysis.occurrences import layer_names
from ctxlib.analysis.polysemy import PolysemyStudy
from ctxlib.analysis.typed_sentence import EXAMPLE_LAYER, EXAMPLE_SENTENCES, place_sentence
from ctxlib.models.onnx_export import AllLayers
from ctxlib.models.pretrained import minilm

PAGE = "book/01_polysemy.html"
EXPLORER = 'div.ctx-explorer[data-explorer="polysemy"]'
MIN_COSINE = 0.99
LOAD_TIMEOUT_MS = 180_000  # the first sentence loads 38 MB (model and wasm) from the local server


@pytest.fixture(scope="module")
def reference():
    model, tokenizer = minilm()
    return model, tokenizer, PolysemyStudy(model, tokenizer)


@pytest.fixture(scope="module")
def page(browser, site):  # noqa: F811 (the fixtures imported above)
    if not (HTML / PAGE).is_file():
        _missing("no built chapter 1", f"at {HTML / PAGE}")
    context = browser.new_context(viewport={"width": 1280, "height": 900}, service_workers="block")
    tab = context.new_page()
    tab.set_default_timeout(LOAD_TIMEOUT_MS)  # a loaded machine is slow, not broken
    problems: list[str] = []

    def route(r):
        if urlsplit(r.request.url).hostname == "127.0.0.1":
            r.continue_()
        else:
            problems.append(f"blocked non-local request: {r.request.url}")
            r.abort("blockedbyclient")

    tab.route("**/*", route)
    tab.on("console", lambda m: m.type == "error" and problems.append(f"console error: {m.text}"))
    tab.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    tab.on("response", lambda r: r.status >= 400 and problems.append(f"HTTP {r.status}: {r.url}"))
    tab.goto(site + PAGE, wait_until="load")
    if tab.query_selector(EXPLORER) is None:
        pytest.fail(f"{PAGE} has no static polysemy explorer (was the book built with CTXBOOK_EXPLORERS=static?)")
    tab.wait_for_selector(f"{EXPLORER}[data-typed-state]", timeout=LOAD_TIMEOUT_MS)
    yield tab, problems
    context.close()


def _type(tab, text: str) -> str:
    """Type ``text``, press Enter, wait until the page has answered; returns the final state."""
    tab.fill(f"{EXPLORER} .typed-input", text)
    tab.press(f"{EXPLORER} .typed-input", "Enter")
    tab.wait_for_function(
        "([sel, text]) => { const el = document.querySelector(sel); const last = window.ctxbookTypedSentence.last;"
        " return el.dataset.typedState === 'error' || (el.dataset.typedState === 'ready' && last && last.text === text); }",
        arg=[EXPLORER, text], timeout=LOAD_TIMEOUT_MS)
    return tab.evaluate(f"() => document.querySelector('{EXPLORER}').dataset.typedState")


def test_typed_sentences_land_where_ctxlib_puts_them(page, reference) -> None:
    tab, problems = page
    model, tokenizer, study = reference
    times, worst = [], 1.0
    for text, word, sense in EXAMPLE_SENTENCES:
        assert _type(tab, text) == "ready", tab.inner_text(f"{EXPLORER} .typed-status")
        got = tab.evaluate("() => window.ctxbookTypedSentence.last")
        times.append(got["ms"])
        enc = tokenizer([text], return_tensors="pt")
        assert got["ids"] == enc["input_ids"][0].tolist() and got["word"] == word
        assert got["layers"] == list(layer_names(model))

        # every token, every layer: the browser's vectors against ctxlib's BertModel
        with torch.no_grad():
            want = AllLayers(model)(enc["input_ids"], enc["attention_mask"])[:, 0].double().numpy()
        vectors = np.asarray(got["tokenVectors"], dtype=np.float64)
        cos = (vectors * want).sum(-1) / (np.linalg.norm(vectors, axis=-1) * np.linalg.norm(want, axis=-1))
        worst = min(worst, cos.min())
        assert cos.min() >= MIN_COSINE, (text, cos.min(axis=1))

        # the point and the nearest sense, at every layer, against ctxlib's placement
        placed = place_sentence(model, tokenizer, study, text)
        for index, name in enumerate(placed.layer_names):
            spread = np.ptp(study.projection(word, name, "PCA"), axis=0).max()
            assert np.abs(np.asarray(got["points"][index]) - placed.points[index]).max() <= 0.05 * max(spread, 1e-12), \
                (text, name, got["points"][index], placed.points[index])
            assert got["nearest"][index] == placed.nearest[index], (text, name)
        assert got["nearest"][got["layers"].index(EXAMPLE_LAYER)] == sense, (text, got["nearest"])

        # drawn: the explorer now shows this word, and its panel (at the page's layer) has the star there
        shown = tab.evaluate(f"""() => {{
            const p = document.querySelector('{EXPLORER}').ctxbookPolysemy;
            return {{state: p.state, rows: p.view.data('typed-shown'),
                     stars: document.querySelectorAll('{EXPLORER} .typed-star path').length}}; }}""")
        layer = shown["state"]["layer"]
        assert shown["state"]["word"] == word and shown["stars"] == 1 and len(shown["rows"]) == 1
        row = shown["rows"][0]
        assert (row["layer"], row["sense"]) == (layer, got["nearest"][got["layers"].index(layer)] or "none")
        assert [row["x"], row["y"]] == got["points"][got["layers"].index(layer)]

    print(f"\nin-browser encoding of one sentence (tokenise, run, pool): median {statistics.median(times):.0f} ms, "
          f"first {times[0]:.0f} ms, max {max(times):.0f} ms over {len(times)}; "
          f"min per-token cosine vs ctxlib {worst:.4f}; loading the model on first use: "
          f"{tab.evaluate('() => window.ctxbookTypedSentence.loadMs'):.0f} ms")
    assert not problems, "\n".join(problems)


def test_a_sentence_without_an_explorer_word_is_refused(page) -> None:
    tab, problems = page
    assert _type(tab, "The river was quiet that morning.") == "error"
    message = tab.inner_text(f"{EXPLORER} .typed-status")
    assert "none of the explorer's words" in message and "bank" in message
    assert tab.evaluate(f"() => document.querySelector('{EXPLORER}').ctxbookPolysemy.view.data('typed').length") == 0
    assert not problems, "\n".join(problems)
