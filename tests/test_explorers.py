"""The explorers' two forms (ctxlib.viz.widgets, static_view, static_explorers).

The static form must hold, for every setting its controls reach, what the live form computes
for that setting: each test recomputes a few settings with the library's own functions
(mask_tokens + masking_counts, fit_scalar_mix, the model's attention, the study's projections)
and compares. Out-of-range arguments are errors, not clamped. The live form still recomputes.
"""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
import torch

from ctxlib.analysis.layer_probes import TokenTask
from ctxlib.analysis.polysemy import PolysemyStudy
from ctxlib.analysis.scalar_mix_probe import fit_scalar_mix
from ctxlib.objectives.masking import mask_tokens, masking_counts
from ctxlib.viz import widgets
from ctxlib.viz.static_view import FORM_VARIABLE, StaticExplorer, explorer_form, rounded


def rows(columns: dict) -> list[dict]:
    return [dict(zip(columns, values)) for values in zip(*columns.values())]


def payload(explorer: StaticExplorer) -> dict:
    """What the page holds: parse it back out of the HTML, as the browser does."""
    html = explorer._repr_html_()
    start = html.index('class="ctx-explorer-payload">') + len('class="ctx-explorer-payload">')
    return json.loads(html[start:html.index("</script>", start)])


SENTENCES = ["the river bank was high", "she sat on the bank of the river", "a dog ran past the old mill",
             "the bank lends money to the mill"] * 5


# --------------------------------------------------------------------------------------------
# choosing the form


def test_form_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv(FORM_VARIABLE, raising=False)
    assert explorer_form() == "live"
    monkeypatch.setenv(FORM_VARIABLE, "static")
    assert explorer_form() == "static"
    assert explorer_form("live") == "live"
    monkeypatch.setenv(FORM_VARIABLE, "statc")
    with pytest.raises(ValueError, match=f"{FORM_VARIABLE}.*'statc'"):
        explorer_form()
    with pytest.raises(ValueError, match="form must be one of"):
        explorer_form("html")


def test_page_json_cannot_close_its_script_and_rejects_nan():
    explorer = StaticExplorer("x", {"data": [{"name": "t"}]}, {"t": {"text": ["</script><b>"]}})
    assert "</script><b>" not in explorer._repr_html_()
    assert payload(explorer)["datasets"]["t"]["text"] == ["</script><b>"]
    with pytest.raises(ValueError, match="finite"):
        rounded([1.0, float("nan")])
    with pytest.raises(ValueError, match="not data sets of the spec"):
        StaticExplorer("x", {"data": []}, {"t": {}})


# --------------------------------------------------------------------------------------------
# bad arguments are errors, never clamped


@pytest.mark.parametrize("kwargs, message", [
    ({"mlm_probability": 0.7}, r"mlm_probability must lie in \[0.01, 0.5\].*0.7"),
    ({"mlm_probability": 0.0}, r"mlm_probability must lie in \[0.01, 0.5\].*0.0"),
    ({"mask_replace_prob": 1.2}, r"mask_replace_prob must lie in \[0, 1\].*1.2"),
    ({"mask_replace_prob": 0.8, "random_replace_prob": 0.3}, r"at most 1"),
    ({"shown": 50}, r"shown must be at most len\(sentences\) = 20, got 50"),
])
def test_masking_explorer_rejects_out_of_range(minilm_pair, kwargs, message):
    _, tokenizer = minilm_pair
    for form in ("live", "static"):
        with pytest.raises(ValueError, match=message):
            widgets.masking_explorer(tokenizer, SENTENCES, form=form, **kwargs)


def test_static_forms_reject_settings_off_their_grid(minilm_pair):
    _, tokenizer = minilm_pair
    with pytest.raises(ValueError, match=r"mlm_probability=0.13 is not on the static explorer's grid"):
        widgets.masking_explorer(tokenizer, SENTENCES, mlm_probability=0.13, form="static")
    assert widgets.masking_explorer(tokenizer, SENTENCES, mlm_probability=0.13, form="live") is not None


@pytest.mark.parametrize("kwargs, message", [
    ({"lr": 0.5}, r"lr must lie in \[0.001, 0.316\d*\].*0.5"),
    ({"lr": 1e-4}, r"lr must lie in"),
    ({"steps": 5000}, r"steps must lie in \[50, 1000\].*5000"),
    ({"steps": 10}, r"steps must lie in \[50, 1000\].*10"),
])
def test_scalar_mix_explorer_rejects_out_of_range(kwargs, message):
    with pytest.raises(ValueError, match=message):
        widgets.scalar_mix_explorer({"t": tiny_task("t", 1.0)}, form="live", **kwargs)


def test_scaling_and_attention_explorers_reject_out_of_range(minilm_pair):
    with pytest.raises(ValueError, match=r"d_k must be one of \[2, 4, .*4096\], got 100"):
        widgets.scaling_explorer(d_k=100)
    model, tokenizer = minilm_pair
    with pytest.raises(ValueError, match=r"layer must lie in \[1, 6\].*7"):
        widgets.attention_explorer(model, tokenizer, "She sat on the bank.", layer=7)
    with pytest.raises(ValueError, match=r"head must lie in \[1, 12\].*0"):
        widgets.attention_explorer(model, tokenizer, "She sat on the bank.", head=0)


# --------------------------------------------------------------------------------------------
# the static form holds what the live form computes


def test_static_masking_equals_mask_tokens_at_every_grid_point_checked(minilm_pair):
    _, tokenizer = minilm_pair
    data = payload(widgets.masking_explorer(tokenizer, SENTENCES, shown=2, seed=5, form="static"))
    settings = rows(data["datasets"]["settings"])
    grid = widgets.MASK_GRID_P, widgets.MASK_GRID_SHARES
    assert len(settings) == len(grid[0]) * 66  # 66 (mask, random) pairs with sum <= 1
    batch = tokenizer(SENTENCES, padding=True, return_special_tokens_mask=True, return_tensors="pt")
    ids, special = batch["input_ids"], batch["special_tokens_mask"].bool()
    outcomes = rows(data["datasets"]["outcomes"])
    for setting in random.Random(0).sample(settings, 25):
        probabilities = {"mlm_probability": setting["p"], "mask_replace_prob": setting["mask"],
                         "random_replace_prob": setting["random"]}
        inputs, labels = mask_tokens(ids, vocab_size=len(tokenizer), mask_token_id=tokenizer.mask_token_id,
                                     special_tokens_mask=special,
                                     generator=torch.Generator().manual_seed(5), **probabilities)
        counts = masking_counts(ids, inputs, labels, special, mask_token_id=tokenizer.mask_token_id, **probabilities)
        assert setting["selected"] == counts.selected and setting["eligible"] == counts.eligible
        got = {o["outcome"]: o for o in outcomes if o["setting"] == setting["index"]}
        for i, name in enumerate(counts.outcomes):
            assert got[i]["observed"] == counts.outcomes[name]
            assert got[i]["expected"] == pytest.approx(counts.expected[name], rel=1e-3, abs=1e-9)
        assert got[3]["observed"] == counts.eligible - counts.selected  # what the model sees unselected
        # The first sentence's codes, from the masked ids directly.
        real = [k for k, t in enumerate(ids[0].tolist()) if t not in tokenizer.all_special_ids]
        expected = "".join("." if labels[0, k] == -100 else "M" if inputs[0, k] == tokenizer.mask_token_id
                           else "R" if inputs[0, k] != ids[0, k] else "K" for k in real)
        assert data["meta"]["codes"][setting["index"]][:len(real)] == expected


def tiny_task(name: str, shift: float, seed: int = 0) -> TokenTask:
    """Three 8-wide layers of 160 words, two classes, the middle layer the informative one."""
    g = torch.Generator().manual_seed(seed)
    labels = [random.Random(seed + i).choice("ab") for i in range(160)]
    y = torch.tensor([label == "a" for label in labels]).float()
    layers = torch.randn(3, 160, 8, generator=g) + shift * y[None, :, None] * torch.tensor([0.0, 1.0, 0.3])[:, None, None]
    return TokenTask(name, ("layer 0", "layer 1", "layer 2"), layers[:, :120], tuple(labels[:120]),
                     layers[:, 120:], tuple(labels[120:]), (), ())


def test_static_scalar_mix_holds_each_runs_trajectory():
    tasks = {"first": tiny_task("first", 1.0), "second": tiny_task("second", 0.5, seed=1)}
    table = rows(widgets.scalar_mix_data(tasks, learning_rates=(0.02, 0.2), step_counts=(100,), points=50))
    assert len(table) == 2 * 2 * 51
    for lr in (0.02, 0.2):
        for t, task in enumerate(tasks.values()):
            run = fit_scalar_mix(task.train_layers, task.train_labels, task.test_layers, task.test_labels,
                                 task.layer_names, steps=100, lr=lr, every=2)
            mine = sorted((r for r in table if r["lr"] == lr and r["task"] == t), key=lambda r: r["pct"])
            assert [r["step"] for r in mine] == list(range(0, 101, 2))
            np.testing.assert_allclose([r["s1"] for r in mine], run.weights[::2, 1], rtol=1e-3)
            np.testing.assert_allclose([r["gamma"] for r in mine], run.gamma[::2], rtol=1e-3)
            np.testing.assert_allclose([r["accuracy"] for r in mine], run.accuracy_curve, rtol=1e-3)
            assert mine[-1]["accuracy"] == pytest.approx(run.accuracy, rel=1e-3)


def test_static_attention_holds_every_layer_and_head(minilm_pair):
    model, tokenizer = minilm_pair
    data = payload(widgets.attention_explorer(model, tokenizer, "She sat on the bank.", "The river was high.",
                                              form="static"))
    encoded = tokenizer("She sat on the bank.", "The river was high.", return_tensors="pt")
    with torch.no_grad():
        attentions = model(**encoded, output_attentions=True).attentions
    maps = rows(data["datasets"]["maps"])
    assert len(maps) == len(attentions) * attentions[0].shape[1]
    for entry in maps:
        reference = attentions[entry["layer"] - 1][0, entry["head"] - 1].flatten().numpy()
        np.testing.assert_allclose(entry["p"], reference, atol=6e-4)


@pytest.fixture(scope="module")
def bank_study(minilm_pair):
    return PolysemyStudy(*minilm_pair, words=["bank", "seal"])


def test_static_polysemy_holds_every_projection_and_score(bank_study):
    data = payload(widgets.polysemy_explorer(bank_study, "bank", "layer 3", "t-SNE", form="static"))
    meta, points = data["meta"], rows(data["datasets"]["points"])
    occurrences = rows(data["datasets"]["occurrences"])
    assert [o["text"] for o in occurrences if o["word"] == "seal"] == list(bank_study.by_word["seal"].texts)
    for word in bank_study.words:
        ids = [o["occ"] for o in occurrences if o["word"] == word]
        for li, layer in enumerate(meta["layers"]):
            for mi, method in enumerate(meta["methods"]):
                got = sorted((p for p in points if p["layer"] == li and p["method"] == mi and p["occ"] in ids),
                             key=lambda p: p["occ"])
                np.testing.assert_allclose([[p["x"], p["y"]] for p in got], bank_study.projection(word, layer, method),
                                           rtol=1e-3, atol=1e-3)
        scores = [s for s in rows(data["datasets"]["scores"]) if s["word"] == word]
        np.testing.assert_allclose([s["nn_accuracy"] for s in scores], bank_study.by_word[word].separation.nn_accuracy,
                                   rtol=1e-3)


# --------------------------------------------------------------------------------------------
# the live form recomputes


def test_live_explorers_recompute(bank_study, minilm_pair):
    box = widgets.polysemy_explorer(bank_study, "bank", "layer 1", "PCA", form="live")
    image = box.children[-1]
    before = image.value
    box.children[1].value = "layer 6"
    assert image.value != before

    mix = widgets.scalar_mix_explorer({"t": tiny_task("t", 1.0)}, steps=50, lr=0.02, form="live")
    (lr_box, steps_box, train), image = mix.children[0].children, mix.children[1]
    before = image.value
    lr_box.value, steps_box.value = 0.1, 100
    train.click()  # trains: a new run with the new settings is drawn
    assert image.value != before

    _, tokenizer = minilm_pair
    masking = widgets.masking_explorer(tokenizer, SENTENCES, form="live")
    (p_box, mask_box, random_box, resample), text = masking.children[0].children, masking.children[1]
    random_box.value = 0.5  # 0.8 + 0.5 > 1: the [MASK] share gives way
    assert mask_box.value == pytest.approx(0.5)
    before = text.value
    resample.click()
    assert text.value != before
