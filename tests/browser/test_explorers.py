"""Every control of every explorer in the rendered book acts, with no kernel.

For each static explorer (``div.ctx-explorer``, written by ``ctxlib.viz.static_view``) headless
Chromium moves every control through its values (every option of a select or radio group;
every step of a slider, or an even sample of at most ``SLIDER_SAMPLES``) and, after each move,
checks three things:

1. the control reached Vega: the bound signal holds the value set;
2. the figure changed: the view's SVG (and, for the masking explorer, its sample sentences)
   differs from before the move. A control that changes nothing fails here;
3. the figure shows what ctxlib computed for that setting: the data items of the drawn marks
   (read back from Vega's scenegraph) equal the rows of the JSON the explorer wrote into the
   page for the current setting of all controls, and the title says that setting.

It also checks that every chapter that calls an explorer got its static form, and that no page
shows an ipywidgets control (a control without a kernel is a control that does nothing).
Pages are served as in ``test_rendered_pages`` (127.0.0.1 only, everything else blocked).
"""

from __future__ import annotations

import json
import math
import re
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from test_rendered_pages import HTML, PAGES, RENDER_TIMEOUT_MS, REPO, _missing

SLIDER_SAMPLES = 12
EXPLORERS = ("polysemy", "scalar_mix", "masking", "scaling", "attention")
EXPLORER_PAGES = [page for page in PAGES
                  if 'class="ctx-explorer"' in (HTML / page).read_text(encoding="utf-8", errors="replace")]

# The data items of every mark named `name`, anywhere in the scenegraph, and text marks' text.
_ITEMS_JS = r"""
([element, name]) => {
  const out = [];
  const visit = mark => {
    if (!mark || !mark.items) return;
    if (mark.name === name) {
      for (const item of mark.items) out.push({datum: item.datum, text: item.text === undefined ? null : item.text});
    }
    for (const item of mark.items) if (item.items) item.items.forEach(visit);
  };
  visit(element.ctxExplorer.view.scenegraph().root);
  return JSON.parse(JSON.stringify(out, (k, v) => (k === 'Symbol(vega_id)' ? undefined : v)));
}
"""

# Each binding: its signal's name, the kind of input and the values it can take.
_CONTROLS_JS = r"""
element => Array.from(element.querySelectorAll('.ctx-explorer-bindings .vega-bind')).map(bind => {
  const name = bind.querySelector('.vega-bind-name').textContent.trim();
  const select = bind.querySelector('select');
  const radios = Array.from(bind.querySelectorAll('input[type=radio]'));
  const range = bind.querySelector('input[type=range]');
  if (select) return {label: name, kind: 'select', values: Array.from(select.options).map(o => o.value)};
  if (radios.length) return {label: name, kind: 'radio', values: radios.map(r => r.value)};
  if (range) return {label: name, kind: 'range', min: +range.min, max: +range.max, step: +range.step};
  return {label: name, kind: 'unknown'};
})
"""

_SET_JS = r"""
([element, index, kind, value]) => {
  const bind = element.querySelectorAll('.ctx-explorer-bindings .vega-bind')[index];
  let input;
  if (kind === 'select') { input = bind.querySelector('select'); input.value = value; input.dispatchEvent(new Event('change', {bubbles: true})); }
  else if (kind === 'radio') { input = Array.from(bind.querySelectorAll('input[type=radio]')).find(r => r.value === value); input.click(); }
  else { input = bind.querySelector('input[type=range]'); input.value = value; input.dispatchEvent(new Event('input', {bubbles: true})); }
  const view = element.ctxExplorer.view;
  // Twice: listeners (the masking shares giving way) may set a signal during the first run.
  return view.runAsync().then(() => new Promise(r => setTimeout(r, 30))).then(() => view.runAsync()).then(() => true);
}
"""

_FINGERPRINT_JS = r"""
element => element.querySelector('.ctx-explorer-view').innerHTML + '|' +
  ((element.querySelector('.ctx-masked') || {}).innerHTML || '')
"""


def _rows(columns: dict[str, list]) -> list[dict]:
    names = list(columns)
    return [dict(zip(names, values)) for values in zip(*columns.values())] if names else []


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9)


def _same_numbers(drawn: list[dict], expected: list[dict], fields: list[str], key: list[str]) -> str | None:
    """None if the drawn items carry exactly the expected rows (compared on ``fields``, matched on ``key``)."""
    index = lambda row: tuple(row[k] for k in key)  # noqa: E731
    want = {index(row): row for row in expected}
    got = {index(item["datum"]): item["datum"] for item in drawn}
    if set(want) != set(got):
        return f"drawn items {sorted(got)[:6]}… ({len(got)}) are not the expected {sorted(want)[:6]}… ({len(want)})"
    for k, row in want.items():
        for f in fields:
            if not _close(got[k][f], row[f]):
                return f"item {k}: drawn {f} = {got[k][f]}, the page's data says {row[f]}"
    return None


def _title(page, element, name: str) -> list[str]:
    # d3-format writes a negative number with the Unicode minus sign.
    return [item["text"].replace("\u2212", "-") for item in page.evaluate(_ITEMS_JS, [element, name])]


# --------------------------------------------------------------------------------------------
# what each explorer must show for the current signals (from the JSON ctxlib wrote)


def _check_scaling(page, element, payload, signals) -> str | None:
    d_k = 2 ** signals["log2_d_k"]
    data = [r for r in _rows(payload["datasets"]["weights"]) if r["d_k"] == d_k]
    problem = _same_numbers(page.evaluate(_ITEMS_JS, [element, "bars"]), data, ["weight"], ["scaling", "key"])
    if problem is None and _title(page, element, "title") != [f"d_k = {d_k}"]:
        problem = f"title {_title(page, element, 'title')} does not say d_k = {d_k}"
    return problem


def _check_attention(page, element, payload, signals) -> str | None:
    maps = [r for r in _rows(payload["datasets"]["maps"]) if r["layer"] == signals["layer"] and r["head"] == signals["head"]]
    if len(maps) != 1:
        return f"the page's data has {len(maps)} maps for layer {signals['layer']}, head {signals['head']}"
    length = len(payload["meta"]["tokens"])
    expected = [{"q": q, "k": k, "p": maps[0]["p"][q * length + k]} for q in range(length) for k in range(length)]
    problem = _same_numbers(page.evaluate(_ITEMS_JS, [element, "heat"]), expected, ["p"], ["q", "k"])
    want = f"layer {signals['layer']}, head {signals['head']}"
    if problem is None and _title(page, element, "title") != [want]:
        problem = f"title {_title(page, element, 'title')} is not {want!r}"
    return problem


def _fixed(value: float, digits: int) -> str:
    """``value`` as Vega's number formats print it: d3 uses JavaScript's toFixed, which rounds the
    exact binary value half away from zero (-0.125 is -0.13, 5 of 8 is 63%), where Python's
    format rounds it to the even neighbour (-0.12, 62%); and d3 drops the sign of a zero (-0.001
    is 0.00)."""
    text = str(Decimal(value).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))
    return text.removeprefix("-") if set(text) <= set("-0.") else text


def _check_polysemy(page, element, payload, signals) -> str | None:
    meta, data = payload["meta"], payload["datasets"]
    layer, method = meta["layers"].index(signals["layer"]), meta["methods"].index(signals["method"])
    words = {r["occ"]: r["word"] for r in _rows(data["occurrences"])}
    expected = [r for r in _rows(data["points"])
                if r["layer"] == layer and r["method"] == method and words[r["occ"]] == signals["word"]]
    if not expected:
        return f"the page's data has no points for {signals}"
    problem = _same_numbers(page.evaluate(_ITEMS_JS, [element, "dots"]), expected, ["x", "y"], ["occ"])
    score = [r for r in _rows(data["scores"]) if r["word"] == signals["word"] and r["layer"] == layer][0]
    want = (f"“{signals['word']}”, {signals['layer']}, {signals['method']}: silhouette {_fixed(score['silhouette'], 2)}, "
            f"1-NN {_fixed(100 * score['nn_accuracy'], 0)}%")
    if problem is None and _title(page, element, "title") != [want]:
        problem = f"title {_title(page, element, 'title')} is not {want!r}"
    depth = page.evaluate(_ITEMS_JS, [element, "nn_accuracy-points"])
    if problem is None and sorted(d["datum"]["nn_accuracy"] for d in depth) != sorted(
            r["nn_accuracy"] for r in _rows(data["scores"]) if r["word"] == signals["word"]):
        problem = f"the depth panel does not show {signals['word']}'s scores"
    return problem


def _check_masking(page, element, payload, signals) -> str | None:
    same = lambda a, b: round(a * 100) == round(b * 100)  # noqa: E731
    settings = [r for r in _rows(payload["datasets"]["settings"])
                if same(r["p"], signals["p"]) and same(r["mask"], signals["mask"])
                and same(r["random"], signals["random"])]
    if len(settings) != 1:
        return f"the page's data has {len(settings)} settings for {signals}"
    index = settings[0]["index"]
    everything = [r for r in _rows(payload["datasets"]["outcomes"]) if r["setting"] == index]
    expected = [r for r in everything if r["outcome"] < 3]
    problem = _same_numbers(page.evaluate(_ITEMS_JS, [element, "observed"]), expected, ["observed"], ["outcome"])
    if problem is None:
        problem = _same_numbers(page.evaluate(_ITEMS_JS, [element, "share-bars"]), everything, ["observed"], ["outcome"])
    if problem is None:
        problem = _same_numbers(page.evaluate(_ITEMS_JS, [element, "expected-mean"]), expected, ["expected"], ["outcome"])
    codes = page.evaluate("e => Array.from(e.querySelectorAll('.ctx-masked [data-code]')).map(s => s.dataset.code).join('')",
                          element)
    if problem is None and codes != payload["meta"]["codes"][index]:
        problem = f"sample sentences show codes {codes!r}, the page's data says {payload['meta']['codes'][index]!r}"
    return problem


def _check_scalar_mix(page, element, payload, signals) -> str | None:
    rows = [r for r in _rows(payload["datasets"]["progress"])
            if _close(r["lr"], float(signals["lr"])) and r["steps"] == int(signals["steps"])]
    shown = [r for r in rows if r["pct"] <= signals["progress"]]
    titles = sorted(_title(page, element, "panel-title"))
    now = {r["task"]: r for r in shown if r["pct"] == signals["progress"]}
    tasks = payload["meta"]["tasks"]
    want = sorted(f"{tasks[t]}: held-out accuracy {_fixed(100 * r['accuracy'], 0)}% at step {r['step']} of {r['steps']}"
                  for t, r in now.items())
    if titles != want:
        return f"panel titles {titles} are not {want}"
    drawn = page.evaluate(_ITEMS_JS, [element, "gamma-line"])
    expected = [{"key": (r["task"], r["pct"]), "gamma": r["gamma"]} for r in shown]
    got = [{"key": (d["datum"]["task"], d["datum"]["pct"]), "gamma": d["datum"]["gamma"]} for d in drawn]
    if sorted(got, key=lambda r: r["key"]) != sorted(expected, key=lambda r: r["key"]):
        return f"the γ lines carry {len(got)} points, the page's data has {len(expected)} up to {signals['progress']}%"
    return None


CHECKS = {"scaling": _check_scaling, "attention": _check_attention, "polysemy": _check_polysemy,
          "masking": _check_masking, "scalar_mix": _check_scalar_mix}


# --------------------------------------------------------------------------------------------
# driving the page


def _range_values(control: dict) -> list[float]:
    count = int(round((control["max"] - control["min"]) / control["step"])) + 1
    picks = range(count) if count <= SLIDER_SAMPLES else sorted({round(i * (count - 1) / (SLIDER_SAMPLES - 1))
                                                                  for i in range(SLIDER_SAMPLES)})
    return [round(control["min"] + i * control["step"], 10) for i in picks]


def _signals(page, element, names: list[str]) -> dict:
    return page.evaluate("([e, names]) => Object.fromEntries(names.map(n => [n, e.ctxExplorer.view.signal(n)]))",
                         [element, names])


def _open(browser, site: str, page_rel: str):
    context = browser.new_context(viewport={"width": 1280, "height": 900}, service_workers="block")
    page = context.new_page()
    page.set_default_timeout(RENDER_TIMEOUT_MS)  # clicks and waits too: a loaded machine is slow, not broken
    problems: list[str] = []
    page.route("**/*", lambda r: r.continue_() if urlsplit(r.request.url).hostname == "127.0.0.1"
               else (problems.append(f"blocked non-local request: {r.request.url}"), r.abort("blockedbyclient")))
    page.on("console", lambda m: m.type == "error" and problems.append(f"console error: {m.text}"))
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.goto(site + page_rel, wait_until="load", timeout=RENDER_TIMEOUT_MS)
    page.wait_for_function("() => Array.from(document.querySelectorAll('div.ctx-explorer'))"
                           ".every(e => e.dataset.ready)", timeout=RENDER_TIMEOUT_MS)
    return context, page, problems


def _signal_names(payload: dict) -> list[str]:
    return [s["name"] for s in payload["spec"]["signals"] if "bind" in s]


@pytest.mark.parametrize("page_rel", EXPLORER_PAGES or [pytest.param(None, id="no-explorer-page")])
def test_every_control_changes_its_figure(browser, site, page_rel):
    if page_rel is None:
        _missing("no built page with a static explorer", f"under {HTML} (build with CTXBOOK_EXPLORERS=static)")
    context, page, problems = _open(browser, site, page_rel)
    failures: list[str] = []
    try:
        for element in page.query_selector_all("div.ctx-explorer"):
            if element.get_attribute("data-ready") != "1":
                failures.append(f"#{element.get_attribute('id')}: did not draw ({element.get_attribute('data-ready')})")
                continue
            payload = json.loads(element.query_selector("script.ctx-explorer-payload").text_content())
            name, check = payload["name"], CHECKS[payload["name"]]
            names = _signal_names(payload)
            controls = page.evaluate(_CONTROLS_JS, element)
            if len(controls) != len(names):
                failures.append(f"{name}: {len(controls)} controls in the page for {len(names)} bound signals")
                continue
            problem = check(page, element, payload, _signals(page, element, names))
            if problem:
                failures.append(f"{name}, initial setting: {problem}")
            for index, (control, signal) in enumerate(zip(controls, names)):
                if control["kind"] == "unknown":
                    failures.append(f"{name}: control {control['label']!r} is of a kind this test cannot move")
                    continue
                values = control["values"] if control["kind"] != "range" else _range_values(control)
                if len(values) < 2:
                    failures.append(f"{name}: control {control['label']!r} offers {len(values)} value(s)")
                start = _signals(page, element, names)[signal]
                for value in [*values, start]:
                    before = page.evaluate(_FINGERPRINT_JS, element)
                    old = _signals(page, element, names)[signal]
                    page.evaluate(_SET_JS, [element, index, control["kind"], str(value)])
                    now = _signals(page, element, names)
                    moved = str(now[signal]) != str(old)
                    if str(now[signal]) != str(value) and not (isinstance(now[signal], (int, float))
                                                               and _close(float(now[signal]), float(value))):
                        failures.append(f"{name}: {control['label']!r} set to {value}, its signal holds {now[signal]}")
                        continue
                    if moved and page.evaluate(_FINGERPRINT_JS, element) == before:
                        failures.append(f"{name}: moving {control['label']!r} from {old} to {value} changed nothing")
                    problem = check(page, element, payload, now)
                    if problem:
                        failures.append(f"{name}, {control['label']} = {value} ({now}): {problem}")
    finally:
        context.close()
    assert not problems, f"{page_rel}:\n  " + "\n  ".join(problems)
    assert not failures, f"{page_rel}:\n  " + "\n  ".join(failures[:30])


_SHOWN_JS = r"""
element => Array.from(element.querySelectorAll('.ctx-explorer-bindings .vega-bind')).map(bind => {
  const select = bind.querySelector('select');
  const range = bind.querySelector('input[type=range]');
  const checked = Array.from(bind.querySelectorAll('input[type=radio]')).filter(r => r.checked).map(r => r.value);
  if (select) return select.value;
  if (range) return range.value;
  return checked.length === 1 ? checked[0] : `${checked.length} radio buttons checked`;
})
"""


def _shown_against_drawn(page, elements) -> list[str]:
    """Each control of each explorer whose displayed value is not the value its figure draws."""
    wrong = []
    for element in elements:
        payload = json.loads(element.query_selector("script.ctx-explorer-payload").text_content())
        names = _signal_names(payload)
        drawn = _signals(page, element, names)
        for name, shown in zip(names, page.evaluate(_SHOWN_JS, element)):
            value = drawn[name]
            same = str(shown) == str(value) or (isinstance(value, (int, float)) and _is_number(shown)
                                                and _close(float(shown), float(value)))
            if not same:
                wrong.append(f"{payload['name']}: {name!r} shows {shown!r}, the figure draws {value!r}")
    return wrong


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize("page_rel", EXPLORER_PAGES or [pytest.param(None, id="no-explorer-page")])
def test_every_control_shows_the_value_its_figure_draws(browser, site, page_rel):
    """At load, and after a click on every radio button of every explorer, each control of every
    explorer on the page marks the value its own figure draws: a click in one explorer leaves the
    others' controls as they were (page 1.4 has two explorers with a "layer" control)."""
    if page_rel is None:
        _missing("no built page with a static explorer", f"under {HTML} (build with CTXBOOK_EXPLORERS=static)")
    context, page, problems = _open(browser, site, page_rel)
    try:
        elements = page.query_selector_all("div.ctx-explorer")
        failures = [f"at load: {w}" for w in _shown_against_drawn(page, elements)]
        for element in elements:
            for radio in element.query_selector_all(".ctx-explorer-bindings input[type=radio]"):
                radio.click()
                page.evaluate("e => e.ctxExplorer.view.runAsync().then(() => true)", element)
                failures += [f"after clicking {radio.get_attribute('value')!r}: {w}"
                             for w in _shown_against_drawn(page, elements)]
    finally:
        context.close()
    assert not problems, f"{page_rel}:\n  " + "\n  ".join(problems)
    assert not failures, f"{page_rel}:\n  " + "\n  ".join(failures[:30])


def _explorers_called(chapter: Path) -> set[str]:
    return {name for name in EXPLORERS if re.search(rf"^\s*{name}_explorer\(", chapter.read_text(encoding="utf-8"), re.M)}


def test_every_explorer_has_its_static_form():
    """A chapter that calls an explorer shows its static form in the built page."""
    if not PAGES:
        _missing("no built book", f"no HTML pages under {HTML}")
    missing = []
    for page in PAGES:
        source = REPO / Path(page).with_suffix(".md")
        if not source.is_file():
            continue
        text = (HTML / page).read_text(encoding="utf-8", errors="replace")
        for name in _explorers_called(source):
            if f'data-explorer="{name}"' not in text:
                missing.append(f"{page}: {name}_explorer has no static form in the page")
    assert not missing, "\n".join(missing)


def test_no_page_has_an_ipywidgets_control():
    """Saved ipywidgets controls render in a static page and do nothing when moved (a progress
    bar is not a control: it shows, it takes no input)."""
    if not PAGES:
        _missing("no built book", f"no HTML pages under {HTML}")
    found = []
    for page in PAGES:
        text = (HTML / page).read_text(encoding="utf-8", errors="replace")
        models = re.findall(r'"_model_name":\s*"(\w+)"', text)
        controls = [m for m in models if re.search(r"Slider|Dropdown|Button|Text|Checkbox|RadioButtons|Select", m)
                    and m not in {"ButtonStyleModel"}]
        if controls:
            found.append(f"{page}: {sorted(set(controls))}")
    assert not found, "pages with ipywidgets controls (dead without a kernel):\n" + "\n".join(found)


def test_the_explorers_scripts_are_vendored_and_loaded_where_needed():
    """Vega and ctx-explorers.js are in book/_static (hence the site), and a page with an explorer
    loads them, while a page without one does not (0.52 MB spared)."""
    static = REPO / "book" / "_static"
    for rel in ("vendor/vega/vega.min.js", "vendor/vega/LICENSE", "ctx-explorers.js"):
        assert (static / rel).is_file(), f"book/_static/{rel} missing (bash tools/vendor_js.sh)"
    if not PAGES:
        _missing("no built book", f"no HTML pages under {HTML}")
    for page in PAGES:
        text = (HTML / page).read_text(encoding="utf-8", errors="replace")
        has_explorer, loads_vega = 'class="ctx-explorer"' in text, "vendor/vega/vega.min.js" in text
        assert has_explorer == loads_vega, f"{page}: explorer {has_explorer}, loads Vega {loads_vega}"


# Every text an explorer draws, at the size it reaches the reader: the font size Vega set, times
# the scale at which the page shows the drawing (a drawing wider than its column is shrunk;
# the length of the transform's first column, so that a rotated axis title counts too).
_TEXT_SIZES_JS = r"""
element => Array.from(element.querySelectorAll('svg text')).filter(t => t.textContent.trim()).map(t => ({
  text: t.textContent.trim().slice(0, 40),
  px: parseFloat(getComputedStyle(t).fontSize) * Math.hypot(t.getScreenCTM().a, t.getScreenCTM().b),
}))
"""
SMALLEST_TEXT_PX = 9  # the floor ctxlib.viz.style holds matplotlib's figures to


@pytest.mark.parametrize("page_rel", EXPLORER_PAGES or [pytest.param(None, id="no-explorer-page")])
def test_explorer_text_is_readable_at_the_page_width(browser, site, page_rel):
    if page_rel is None:
        _missing("no built page with a static explorer", f"under {HTML} (build with CTXBOOK_EXPLORERS=static)")
    context, page, problems = _open(browser, site, page_rel)
    try:
        small = [f"{size['text']!r} at {size['px']:.1f} px" for element in page.query_selector_all("div.ctx-explorer")
                 for size in page.evaluate(_TEXT_SIZES_JS, element) if size["px"] < SMALLEST_TEXT_PX]
    finally:
        context.close()
    assert not problems, f"{page_rel}:\n  " + "\n  ".join(problems)
    assert not small, f"{page_rel}: explorer text below {SMALLEST_TEXT_PX} px: {small[:10]}"
