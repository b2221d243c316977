/* BERT's uncased WordPiece tokenizer in the browser: the same ids and character offsets as
 * Hugging Face's BertTokenizerFast for all-MiniLM-L6-v2 (tokenizers' BertNormalizer with
 * clean_text, handle_chinese_chars and lowercase; BertPreTokenizer; WordPiece with "##"
 * continuations, [UNK] for what the vocabulary cannot spell, words over 100 characters [UNK];
 * [CLS] ... [SEP] around the sentence). tests/test_wordpiece_js.py runs it with node against
 * BertTokenizerFast.
 *
 * Offsets are UTF-16 indices into the text as typed (what String.slice takes); special tokens
 * have [0, 0], as in transformers. Usage:
 *   const tok = ctxbookWordPiece.fromVocab(vocabText);   // vocab.txt: one piece a line, id = line
 *   tok.encode("The bank raised rates.")  // {ids, tokens, offsets}
 */
(function (root, factory) {
  if (typeof module === "object" && module.exports) module.exports = factory();
  else root.ctxbookWordPiece = factory();
})(typeof self !== "undefined" ? self : this, function () {
  "use strict";

  // The special tokens the tokenizer matches in the raw text before anything else
  // (tokenizer.json's added_tokens: not normalised, so case-sensitive).
  const SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"];
  const MAX_CHARS_PER_WORD = 100;

  // Unicode classes as tokenizers defines them (normalizers/bert.rs, pre_tokenizers/bert.rs).
  const OTHER = /^[\p{Cc}\p{Cf}\p{Cn}\p{Co}\p{Cs}]$/u;       // char::is_other, removed by clean_text
  const WHITESPACE = /^\s$/u;                                   // char::is_whitespace
  const NONSPACING_MARK = /^\p{Mn}$/u;                          // stripped after NFD
  const PUNCTUATION = /^[\p{Pc}\p{Pd}\p{Pe}\p{Pf}\p{Pi}\p{Po}\p{Ps}]$/u;
  const ASCII_PUNCTUATION = /^[!-\/:-@\[-`{-~]$/;               // $ + < = > ^ ` | ~ are not \p{P}

  function isChinese(cp) {
    return (cp >= 0x4e00 && cp <= 0x9fff) || (cp >= 0x3400 && cp <= 0x4dbf) ||
      (cp >= 0x20000 && cp <= 0x2a6df) || (cp >= 0x2a700 && cp <= 0x2b73f) ||
      (cp >= 0x2b740 && cp <= 0x2b81f) || (cp >= 0x2b920 && cp <= 0x2ceaf) ||
      (cp >= 0xf900 && cp <= 0xfaff) || (cp >= 0x2f800 && cp <= 0x2fa1f);
  }

  function isControl(ch) {
    return ch !== "\t" && ch !== "\n" && ch !== "\r" && OTHER.test(ch);
  }

  /* BertNormalizer, one typed character at a time, so each normalised character remembers
   * where it came from: [{ch, start, end}] with UTF-16 offsets into the typed text. */
  function normalise(text) {
    const out = [];
    let at = 0;
    for (const ch of text) {  // by code point
      const start = at, end = at + ch.length;
      at = end;
      const cp = ch.codePointAt(0);
      if (cp === 0 || cp === 0xfffd || isControl(ch)) continue;      // clean_text drops them
      if (WHITESPACE.test(ch)) { out.push({ ch: " ", start, end }); continue; }
      // handle_chinese_chars: spaces around each CJK ideograph make it a word of its own.
      const chinese = isChinese(cp);
      if (chinese) out.push({ ch: " ", start, end });
      // strip_accents (implied by lowercase): NFD, drop non-spacing marks; then lowercase.
      for (const part of ch.normalize("NFD")) {
        if (NONSPACING_MARK.test(part)) continue;
        for (const lower of part.toLowerCase()) out.push({ ch: lower, start, end });
      }
      if (chinese) out.push({ ch: " ", start, end });
    }
    return out;
  }

  /* BertPreTokenizer: split on whitespace (dropped) and around every punctuation character
   * (kept, alone). */
  function preTokenise(chars) {
    const words = [];
    let word = [];
    const flush = () => { if (word.length) words.push(word); word = []; };
    for (const c of chars) {
      if (c.ch === " ") { flush(); continue; }
      if (PUNCTUATION.test(c.ch) || ASCII_PUNCTUATION.test(c.ch)) {
        flush(); words.push([c]); continue;
      }
      word.push(c);
    }
    flush();
    return words;
  }

  function fromVocab(vocabText) {
    const lines = vocabText.split("\n");
    if (lines.length && lines[lines.length - 1] === "") lines.pop();
    const vocab = new Map();
    lines.forEach((piece, id) => { vocab.set(piece.replace(/\r$/, ""), id); });
    for (const name of SPECIAL) {
      if (!vocab.has(name)) throw new Error(`vocabulary has no ${name}`);
    }
    const UNK = vocab.get("[UNK]");

    /* Greedy longest-match-first WordPiece of one word (an array of normalised characters):
     * [{id, token, start, end}], or one [UNK] for the whole word. */
    function wordPieces(word) {
      const start = word[0].start, end = word[word.length - 1].end;
      if (word.length > MAX_CHARS_PER_WORD) return [{ id: UNK, token: "[UNK]", start, end }];
      const pieces = [];
      let first = 0;
      while (first < word.length) {
        let last = word.length, found = null;
        while (last > first) {
          let piece = word.slice(first, last).map((c) => c.ch).join("");
          if (first > 0) piece = "##" + piece;
          if (vocab.has(piece)) { found = piece; break; }
          last -= 1;
        }
        if (found === null) return [{ id: UNK, token: "[UNK]", start, end }];
        pieces.push({ id: vocab.get(found), token: found, start: word[first].start, end: word[last - 1].end });
        first = last;
      }
      return pieces;
    }

    /* Split the raw text at the special tokens written in it, tokenise the rest. */
    function encode(text) {
      if (typeof text !== "string") throw new TypeError(`text must be a string, got ${typeof text}`);
      const pieces = [];
      const pattern = new RegExp(SPECIAL.map((s) => s.replace(/[[\]]/g, "\\$&")).join("|"), "g");
      let from = 0;
      const plain = (upto) => {
        const chunk = text.slice(from, upto);
        for (const word of preTokenise(normalise(chunk))) {
          for (const p of wordPieces(word)) pieces.push({ ...p, start: p.start + from, end: p.end + from });
        }
      };
      for (const match of text.matchAll(pattern)) {
        plain(match.index);
        pieces.push({ id: vocab.get(match[0]), token: match[0], start: match.index, end: match.index + match[0].length });
        from = match.index + match[0].length;
      }
      plain(text.length);
      const all = [{ id: vocab.get("[CLS]"), token: "[CLS]", start: 0, end: 0 }, ...pieces,
        { id: vocab.get("[SEP]"), token: "[SEP]", start: 0, end: 0 }];
      return { ids: all.map((p) => p.id), tokens: all.map((p) => p.token), offsets: all.map((p) => [p.start, p.end]) };
    }

    return { encode, size: vocab.size };
  }

  return { fromVocab };
});
