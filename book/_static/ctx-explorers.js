/* ctxbook: mounts the static explorers (written for this book, not vendored).
 *
 * ctxlib.viz.static_view writes each explorer as <div class="ctx-explorer"> holding one JSON
 * payload {name, spec, datasets, meta}: a Vega 6 spec whose named data sets take their rows
 * from `datasets` (columns here, rows for Vega). This script draws each one with the vendored
 * Vega (SVG), binding its signals to HTML inputs, so every control acts with no kernel. It
 * computes nothing the explorer did not write; the one explorer-specific piece is the masking
 * explorer's sample sentences, drawn as HTML text from the per-token codes ctxlib wrote.
 *
 * Each mounted element gets `ctxExplorer = {name, view, data, meta}` and data-ready="1", and
 * document receives a `ctx-explorer-ready` event (detail: {name, element, view}). The polysemy
 * explorer also gets `ctxbookPolysemy = {view, state, onChange(fn)}` for the typed-sentence box
 * (its slot: div.typed-sentence in the controls).
 */
(function () {
  "use strict";

  function rows(columns) {
    const names = Object.keys(columns);
    const n = names.length ? columns[names[0]].length : 0;
    const out = new Array(n);
    for (let i = 0; i < n; i++) {
      const row = {};
      for (const name of names) row[name] = columns[name][i];
      out[i] = row;
    }
    return out;
  }

  const STYLE = `
.ctx-explorer { margin: 0.5em 0 1em 0; }
.ctx-explorer .vega-bind { display: inline-block; margin: 0 1.2em 0.4em 0; font-size: 0.85em; }
.ctx-explorer .vega-bind-name { margin-right: 0.4em; font-weight: 600; }
.ctx-explorer .vega-bind input[type=range] { vertical-align: middle; width: 11em; }
.ctx-explorer .vega-bind-radio label { margin: 0 0.5em 0 0.15em; }
.ctx-explorer .ctx-explorer-view svg { max-width: 100%; height: auto; }
.ctx-explorer .ctx-masked { font-size: 0.9em; line-height: 1.7; margin: 0.3em 0 0.6em 0; }
.ctx-explorer .ctx-masked .mask { color: #c0392b; font-weight: bold; }
.ctx-explorer .ctx-masked .random { color: #d35400; }
.ctx-explorer .ctx-masked .kept { color: #1e8449; text-decoration: underline; }
`;

  function escapeHtml(text) {
    return String(text).replace(/[&<>"]/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}[c]));
  }

  // The masking explorer's sample sentences, as ctxlib.viz.widgets' live form shows them:
  // [MASK] in red, a random token in orange beside the struck-through original, a selected
  // but unchanged token underlined in green. Codes per token: "." not selected, "M", "K",
  // or "R" (its replacement is in `random` at the same setting and position).
  function maskingSamples(element, view, payload) {
    const box = document.createElement("div");
    box.className = "ctx-masked";
    element.querySelector(".ctx-explorer-view").after(box);
    const tokens = payload.meta.sentences;  // [[token, ...], ...]
    const draw = () => {
      const setting = view.signal("setting");
      if (setting < 0) return;  // a moment between two slider moves that sum past 1
      const codes = payload.meta.codes[setting];
      const random = payload.meta.random[setting];
      let k = 0;
      box.innerHTML = tokens.map(sentence => sentence.map(token => {
        const code = codes[k], at = k++;
        const t = escapeHtml(token);
        if (code === "M") return `<b class="mask" data-code="M">[MASK]</b>`;
        if (code === "K") return `<u class="kept" data-code="K">${t}</u>`;
        if (code === "R") return `<span class="random" data-code="R"><s>${t}</s> ${escapeHtml(random[at])}</span>`;
        return `<span data-code=".">${t}</span>`;
      }).join(" ")).join("<br>");
      box.dataset.setting = String(setting);
    };
    view.addSignalListener("setting", draw);
    draw();
    // The [MASK] and random shares sum to at most 1: as in the live explorer, the slider just
    // moved wins and the other gives way (Vega updates the other input to match).
    const giveWay = (moved, other) => view.addSignalListener(moved, (_name, value) => {
      if (value + view.signal(other) > 1 + 1e-9) view.signal(other, Math.round((1 - value) * 100) / 100).runAsync();
    });
    giveWay("mask", "random");
    giveWay("random", "mask");
  }

  function polysemyHooks(element, view) {
    const listeners = [];
    const state = () => ({word: view.signal("word"), layer: view.signal("layer"), method: view.signal("method")});
    for (const name of ["word", "layer", "method"]) {
      view.addSignalListener(name, () => listeners.forEach(fn => fn(state())));
    }
    element.ctxbookPolysemy = {
      view,
      get state() { return state(); },
      onChange(fn) { listeners.push(fn); },
    };
  }

  const PAGE_PARTS = {masking: maskingSamples, polysemy: polysemyHooks};

  async function mount(element) {
    const payload = JSON.parse(element.querySelector("script.ctx-explorer-payload").textContent);
    const spec = payload.spec;
    for (const entry of spec.data || []) {
      if (entry.name in payload.datasets) entry.values = rows(payload.datasets[entry.name]);
    }
    const view = new vega.View(vega.parse(spec), {
      renderer: "svg",
      container: element.querySelector(".ctx-explorer-view"),
      bind: element.querySelector(".ctx-explorer-bindings"),
      hover: true,
    });
    await view.runAsync();
    element.ctxExplorer = {name: payload.name, view, data: payload.datasets, meta: payload.meta};
    const part = PAGE_PARTS[payload.name];
    if (part) part(element, view, payload);
    element.dataset.ready = "1";
    document.dispatchEvent(new CustomEvent("ctx-explorer-ready",
      {detail: {name: payload.name, element, view}}));
  }

  function mountAll() {
    if (!window.vega) {
      console.error("ctx-explorers.js: vega.min.js did not load; the explorers cannot draw");
      return;
    }
    const style = document.createElement("style");
    style.textContent = STYLE;
    document.head.appendChild(style);
    document.querySelectorAll("div.ctx-explorer").forEach(element => {
      mount(element).catch(error => {
        console.error(`ctx-explorers.js: explorer ${element.id} failed:`, error);
        element.dataset.ready = "error";
      });
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", mountAll);
  else mountAll();
})();
