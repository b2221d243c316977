/* ctxbook: your own sentence in the polysemy explorer, encoded in the browser (written for this
 * book, not vendored).
 *
 * The reader types a sentence with one of the explorer's words. On the first use this script
 * loads wordpiece.js, onnxruntime-web (vendor/onnxruntime-web/), MiniLM as int8 ONNX (minilm/minilm-int8.onnx,
 * exported from ctxlib's BertModel by ctxlib.models.onnx_export) and its vocabulary (minilm/
 * vocab.txt), with a progress bar; then it does what ctxlib.analysis.typed_sentence.place_sentence
 * does in Python: tokenise (wordpiece.js), encode, average the word's pieces at every layer
 * (ctxlib.analysis.occurrences), project onto the explorer's PCA plane and name the sense whose
 * centroid has the largest cosine in the full 384-d space. The planes and centroids come from
 * the explorer's lazy "typed-sentence" data (ctxlib.analysis.typed_sentence.typed_sentence_data).
 * The point is drawn as a star on every layer's PCA panel (Vega data set "typed").
 *
 * For the browser test: the explorer element gets data-typed-state (idle, loading, encoding,
 * ready, error) and window.ctxbookTypedSentence.last holds the last result: tokens, ids, the
 * per-token vectors of every layer, the pooled vectors, points, cosines, nearest senses and the
 * encoding time in ms (loadMs: the time the first use took to load and warm up the model).
 */
(function () {
  "use strict";

  const STATIC = new URL(".", document.currentScript.src).href;  // the site's _static/
  const ORT_DIR = STATIC + "vendor/onnxruntime-web/";
  const FILES = {ort: ORT_DIR + "ort.wasm.min.js", wasm: ORT_DIR + "ort-wasm-simd-threaded.wasm",
    model: STATIC + "minilm/minilm-int8.onnx", vocab: STATIC + "minilm/vocab.txt", tokenizer: STATIC + "wordpiece.js"};
  const MAX_TOKENS = 512;  // MiniLM's position table
  const TIE = 1e-6;        // as ctxlib.analysis.typed_sentence.TIE

  const STYLE = `
.typed-sentence { margin: 0.3em 0 0.5em 0; font-size: 0.85em; }
.typed-sentence input[type=text] { width: min(36em, 70%); padding: 0.15em 0.3em; }
.typed-sentence button { margin-left: 0.4em; }
.typed-sentence progress { vertical-align: middle; margin-left: 0.5em; width: 10em; }
.typed-sentence .typed-status { display: block; margin-top: 0.25em; min-height: 1.3em; }
.typed-sentence .typed-error { color: #b03a2e; }
`;

  const api = window.ctxbookTypedSentence = {last: null, engine: null};

  function loadScript(url) {
    return new Promise((resolve, reject) => {
      const script = document.createElement("script");
      script.src = url;
      script.onload = resolve;
      script.onerror = () => reject(new Error(`could not load ${url}`));
      document.head.appendChild(script);
    });
  }

  /* fetch with a byte count for the progress bar: onBytes(received) as chunks arrive. */
  async function fetchBytes(url, onBytes) {
    const response = await fetch(url);
    if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
    const reader = response.body.getReader();
    const chunks = [];
    let received = 0;
    for (;;) {
      const {done, value} = await reader.read();
      if (done) break;
      chunks.push(value);
      received += value.length;
      onBytes(received);
    }
    const bytes = new Uint8Array(received);
    let at = 0;
    for (const chunk of chunks) { bytes.set(chunk, at); at += chunk.length; }
    return bytes;
  }

  async function contentLength(url) {
    const response = await fetch(url, {method: "HEAD"});
    return Number(response.headers.get("Content-Length")) || 0;
  }

  /* onnxruntime-web, the model and the vocabulary, once per page. */
  function engine(progress) {
    if (api.engine) return api.engine;
    api.engine = (async () => {
      const started = performance.now();
      const [wasmSize, modelSize] = await Promise.all([contentLength(FILES.wasm), contentLength(FILES.model)]);
      const total = wasmSize + modelSize;
      const got = {wasm: 0, model: 0};
      const report = (part) => (n) => { got[part] = n; progress(got.wasm + got.model, total); };
      await Promise.all([loadScript(FILES.ort), loadScript(FILES.tokenizer)]);
      const [wasmBinary, model, vocab] = await Promise.all([
        fetchBytes(FILES.wasm, report("wasm")), fetchBytes(FILES.model, report("model")),
        fetch(FILES.vocab).then((r) => { if (!r.ok) throw new Error(`${FILES.vocab}: HTTP ${r.status}`); return r.text(); }),
      ]);
      ort.env.wasm.wasmPaths = ORT_DIR;
      ort.env.wasm.wasmBinary = wasmBinary;
      ort.env.wasm.numThreads = 1;  // threads need cross-origin isolation, which a static host lacks
      const session = await ort.InferenceSession.create(model, {executionProviders: ["wasm"]});
      // The first run sets the session up (about 1 s); do it now, not in the reader's first sentence.
      const ids = new ort.Tensor("int64", BigInt64Array.from([101n, 102n]), [1, 2]);
      await session.run({input_ids: ids, attention_mask: new ort.Tensor("int64", BigInt64Array.from([1n, 1n]), [1, 2])});
      api.loadMs = performance.now() - started;
      return {session, tokenizer: ctxbookWordPiece.fromVocab(vocab)};
    })();
    api.engine.catch(() => { api.engine = null; });  // a failed load may be retried
    return api.engine;
  }

  function floats(base64) {
    const raw = atob(base64);
    const bytes = new Uint8Array(raw.length);
    for (let i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);
    return new Float32Array(bytes.buffer);
  }

  /* The explorer's planes and centroids (the lazy "typed-sentence" data), decoded once. */
  async function planes(element) {
    if (element.ctxbookTypedData) return element.ctxbookTypedData;
    const holder = element.querySelector('script.ctx-explorer-lazy[data-name="typed-sentence"]');
    if (!holder) throw new Error("this explorer carries no typed-sentence data");
    const src = holder.dataset.src;
    const json = src ? await (await fetch(new URL(src, document.baseURI))).json() : JSON.parse(holder.textContent);
    for (const entry of Object.values(json.words)) {
      for (const layer of Object.values(entry.layers)) {
        layer.mean = floats(layer.mean);
        layer.components = floats(layer.components);
        layer.centroids = floats(layer.centroids);
      }
    }
    element.ctxbookTypedData = json;
    return json;
  }

  const escapeRegExp = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

  /* ctxlib.analysis.typed_sentence.find_typed_word: `prefer` if the text uses it, else the
   * explorer word used first; the chosen word must occur exactly once (whole word, any case). */
  function findWord(text, words, prefer) {
    const found = [];
    for (const word of words) {
      // A WordNet lemma is keyed with its part of speech ("bank.n"); the sentence has the lemma.
      const surface = word.replace(/\.[nvasr]$/, "");
      const pattern = new RegExp(`(?<![\\p{L}\\p{N}_])${escapeRegExp(surface)}(?![\\p{L}\\p{N}_])`, "giu");
      for (const match of text.matchAll(pattern)) found.push({word, start: match.index, end: match.index + match[0].length});
    }
    if (!found.length) {
      throw new Error(`Your sentence uses none of the explorer's words (${words.join(", ")}). ` +
        "Write one with one of them, as a whole word.");
    }
    found.sort((a, b) => a.start - b.start);
    const word = found.some((f) => f.word === prefer) ? prefer : found[0].word;
    const uses = found.filter((f) => f.word === word);
    if (uses.length !== 1) throw new Error(`“${word}” occurs ${uses.length} times; use it once, so it is clear which to place.`);
    return uses[0];
  }

  const dot = (a, b, offset = 0) => { let s = 0; for (let i = 0; i < a.length; i++) s += a[i] * b[offset + i]; return s; };

  /* Encode `text`, pool the word's pieces at every layer, place it: the whole result. */
  async function place(element, text, progress) {
    const polysemy = element.ctxbookPolysemy;
    const data = await planes(element);
    const words = Object.keys(data.words);
    const occurrence = findWord(text, words, polysemy.state.word);
    const {session, tokenizer} = await engine(progress);
    const started = performance.now();
    const encoded = tokenizer.encode(text);
    const n = encoded.ids.length;
    if (n > MAX_TOKENS) throw new Error(`Your sentence has ${n} tokens; MiniLM reads at most ${MAX_TOKENS}.`);
    const ids = new ort.Tensor("int64", BigInt64Array.from(encoded.ids, BigInt), [1, n]);
    const mask = new ort.Tensor("int64", new BigInt64Array(n).fill(1n), [1, n]);
    const output = (await session.run({input_ids: ids, attention_mask: mask})).layers;
    const [nLayers, , , dim] = output.dims;
    const values = output.data;  // [L+2, 1, n, H]
    // ctxlib.analysis.occurrences.piece_mask: the tokens whose offsets overlap the word.
    const pieces = [];
    encoded.offsets.forEach(([start, end], t) => {
      if (start < occurrence.end && end > occurrence.start && end > start) pieces.push(t);
    });
    const tokenVectors = [], pooled = [];
    for (let l = 0; l < nLayers; l++) {
      const rows = [];
      for (let t = 0; t < n; t++) rows.push(Array.from(values.subarray((l * n + t) * dim, (l * n + t + 1) * dim)));
      tokenVectors.push(rows);
      const mean = new Float64Array(dim);
      for (const t of pieces) for (let i = 0; i < dim; i++) mean[i] += rows[t][i] / pieces.length;
      pooled.push(mean);
    }
    const elapsed = performance.now() - started;
    const entry = data.words[occurrence.word];
    const points = [], similarity = [], nearest = [];
    data.layers.forEach((name, l) => {
      const {mean, components, centroids} = entry.layers[name];
      const v = pooled[l];
      const centred = v.map((x, i) => x - mean[i]);
      points.push([dot(centred, components, 0), dot(centred, components, dim)]);
      const norm = Math.sqrt(dot(v, v));
      const cos = entry.senses.map((_, s) => {
        const c = centroids.subarray(s * dim, (s + 1) * dim);
        return dot(v, c) / (norm * Math.sqrt(dot(c, c)));
      });
      similarity.push(cos);
      const order = cos.map((_, s) => s).sort((a, b) => cos[b] - cos[a]);
      nearest.push(order.length > 1 && cos[order[0]] - cos[order[1]] < TIE ? null : entry.senses[order[0]]);
    });
    return {text, word: occurrence.word, start: occurrence.start, end: occurrence.end, tokens: encoded.tokens,
      ids: encoded.ids, offsets: encoded.offsets, pieces, layers: data.layers, senses: entry.senses,
      tokenVectors, vectors: pooled.map((v) => Array.from(v)), points, similarity, nearest, ms: elapsed};
  }

  function describe(result, state) {
    const l = result.layers.indexOf(state.layer);
    const sense = result.nearest[l];
    const cos = result.senses.map((s, i) => `${s} ${result.similarity[l][i].toFixed(3)}`).join(", ");
    const where = state.word === result.word ? "" : ` (switch the word to “${result.word}” to see it)`;
    const shown = state.method === "PCA" ? `drawn as ★ on the PCA panel${where}` :
      "t-SNE has no axes to place a new point on: choose PCA to see it";
    const name = sense === null ? "no sense is nearer than another (every occurrence has the same static vector)" :
      `nearest sense: <b>${sense}</b>`;
    return `“${result.word}” at ${state.layer}: ${name} (cosine to each sense's centroid: ${cos}); ${shown}. ` +
      `Encoded in ${result.ms.toFixed(0)} ms.`;
  }

  function attach(element) {
    const slot = element.querySelector(".typed-sentence");
    const polysemy = element.ctxbookPolysemy;
    if (!slot || !polysemy || slot.dataset.attached) return;
    slot.dataset.attached = "1";
    if (!document.getElementById("ctx-typed-style")) {
      const style = document.createElement("style");
      style.id = "ctx-typed-style";
      style.textContent = STYLE;
      document.head.appendChild(style);
    }
    slot.innerHTML = '<label>Your own sentence: <input type="text" class="typed-input" ' +
      'placeholder="e.g. I opened a savings account at the bank downtown."></label>' +
      '<button type="button" class="typed-go">encode it</button>' +
      '<progress class="typed-progress" hidden></progress><span class="typed-status"></span>';
    const input = slot.querySelector(".typed-input");
    const button = slot.querySelector(".typed-go");
    const bar = slot.querySelector(".typed-progress");
    const status = slot.querySelector(".typed-status");
    element.dataset.typedState = "idle";
    let result = null;

    const show = () => {
      if (result) status.innerHTML = describe(result, polysemy.state);
    };
    polysemy.onChange(show);

    async function run() {
      const text = input.value;
      button.disabled = true;
      status.classList.remove("typed-error");
      try {
        element.dataset.typedState = api.engine ? "encoding" : "loading";
        status.textContent = api.engine ? "encoding…" : "loading MiniLM (once per page)…";
        const progress = (received, total) => {
          bar.hidden = false;
          bar.max = total || 1;
          bar.value = received;
          status.textContent = `loading MiniLM (once per page): ${(received / 1e6).toFixed(1)} of ${(total / 1e6).toFixed(1)} MB`;
        };
        result = await place(element, text, progress);
        bar.hidden = true;
        const view = polysemy.view;
        const rows = result.layers.map((layer, l) => ({word: result.word, layer, method: "PCA",
          x: result.points[l][0], y: result.points[l][1], text: result.text, sense: result.nearest[l] || "none"}));
        view.change("typed", vega.changeset().remove(() => true).insert(rows));
        if (polysemy.state.word !== result.word) view.signal("word", result.word);
        await view.runAsync();
        api.last = result;
        show();
        element.dataset.typedState = "ready";
      } catch (error) {
        bar.hidden = true;
        result = api.last = null;  // the star of an earlier sentence would read as this one's
        polysemy.view.change("typed", vega.changeset().remove(() => true)).runAsync();
        status.textContent = error.message;
        status.classList.add("typed-error");
        element.dataset.typedState = "error";
      } finally {
        button.disabled = false;
      }
    }
    button.addEventListener("click", run);
    input.addEventListener("keydown", (event) => { if (event.key === "Enter") run(); });
  }

  document.addEventListener("ctx-explorer-ready", (event) => {
    if (event.detail.name === "polysemy") attach(event.detail.element);
  });
  // An explorer mounted before this script ran.
  document.querySelectorAll('.ctx-explorer[data-explorer="polysemy"]').forEach(attach);
})();
