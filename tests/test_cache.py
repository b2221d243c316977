"""The experiment cache: keys from settings, data and code; atomic writes; damaged and
unwritable caches; the WordPiece vocabulary file; MiniLM handed out fresh."""

from __future__ import annotations

import importlib
import itertools
import multiprocessing
import sys
from dataclasses import replace

import pytest
import torch
from torch import nn

from ctxlib._files import atomic_path
from ctxlib.data.corpus import Corpus, TaggedSentence, generate_corpus
from ctxlib.models.bert import BertConfig
from ctxlib.models.pretrained import minilm
from ctxlib.training import cache
from ctxlib.training.cache import cache_path, cached_training, fingerprint, source_digest
from ctxlib.training.loop import TrainConfig, fit
from ctxlib.training.pretraining_data import book_tokenizer


def build() -> nn.Module:
    torch.manual_seed(0)
    return nn.Linear(4, 1)


def train(model: nn.Module):
    batches = itertools.repeat((torch.ones(8, 4), torch.zeros(8)))
    return fit(model, batches, lambda m, b: (m(b[0]).squeeze(-1) - b[1]).pow(2).mean(),
               TrainConfig(steps=3, progress=False))


def test_trains_once_then_loads(tmp_path, monkeypatch):
    monkeypatch.setenv("CTXBOOK_CACHE", str(tmp_path))
    runs = []
    def counted(model):
        runs.append(1)
        return train(model)
    first, history = cached_training("toy", {"steps": 3}, build, counted)
    second, again = cached_training("toy", {"steps": 3}, build, counted)
    assert len(runs) == 1 and torch.equal(first.weight, second.weight) and again.train == history.train
    cached_training("toy", {"steps": 4}, build, counted)  # another key: trained afresh
    assert len(runs) == 2 and len(list(tmp_path.glob("toy-*.pt"))) == 2
    assert not list(tmp_path.glob(".*partial"))  # no temporary file left behind


def _trained(history) -> dict:
    """A history's record of the training (losses, learning rates, gradient norms), not its wall time."""
    return {key: value for key, value in history.to_dict().items() if key != "seconds"}


def test_a_run_kept_without_weights_stores_its_history_alone(tmp_path, monkeypatch):
    monkeypatch.setenv("CTXBOOK_CACHE", str(tmp_path))
    calls = []
    def counted_build():
        calls.append("build")
        return build()
    def counted_train(model):
        calls.append("train")
        return train(model)
    model, history = cached_training("toy", {}, counted_build, counted_train, keep_weights=False)
    assert model is None and calls == ["build", "train"]
    assert [path.name.endswith(".history.json") for path in tmp_path.glob("toy-*")] == [True]
    _, again = cached_training("toy", {}, counted_build, counted_train, keep_weights=False)
    assert calls == ["build", "train"] and again == history  # read back, nothing built
    # Asked for its weights, the run is trained again, to the same history, and kept whole.
    with pytest.warns(UserWarning, match=r"'toy' was kept without its weights .* trained again to keep them"):
        kept, whole = cached_training("toy", {}, counted_build, counted_train)
    assert calls == ["build", "train"] * 2 and _trained(whole) == _trained(history)
    assert [path.suffix for path in tmp_path.glob("toy-*")] == [".pt"]
    # The whole entry then answers a history-only call, still without building anything.
    _, third = cached_training("toy", {}, counted_build, counted_train, keep_weights=False)
    assert calls == ["build", "train"] * 2 and _trained(third) == _trained(whole)
    model, _ = cached_training("toy", {}, counted_build, counted_train)
    assert calls[-1] == "build" and torch.equal(model.weight, kept.weight)  # loaded, not trained
    with pytest.raises(TypeError, match="keep_weights must be a bool"):
        cached_training("toy", {}, build, train, keep_weights="no")


def test_a_damaged_history_file_is_reported_removed_and_trained_again(tmp_path, monkeypatch):
    monkeypatch.setenv("CTXBOOK_CACHE", str(tmp_path))
    _, history = cached_training("toy", {}, build, train, keep_weights=False)
    (path,) = tmp_path.glob("toy-*.history.json")
    path.write_text('{"train": [')
    with pytest.warns(UserWarning, match=r"cannot be read .* removed and 'toy' is trained afresh"):
        _, again = cached_training("toy", {}, build, train, keep_weights=False)
    assert _trained(again) == _trained(history) and path.is_file()


def test_keys_tell_big_tensors_apart():
    # str() of a tensor over 1,000 elements elides its middle: "tensor([0., 0., 0., ..., 0., 0., 0.])",
    # the same text for these two, which is how json.dumps(default=str) made keys collide.
    a, b = torch.zeros(5000), torch.zeros(5000)
    b[2500] = 1.0
    assert str(a) == str(b)
    assert fingerprint({"x": a}) != fingerprint({"x": b})
    assert fingerprint({"x": a}) == fingerprint({"x": torch.zeros(5000)})
    assert fingerprint({"x": a}) != fingerprint({"x": a.double()})       # dtype counts
    assert fingerprint({"x": a}) != fingerprint({"x": a.reshape(50, 100)})  # shape counts
    assert fingerprint({"n": 2}) != fingerprint({"n": 2.0}) != fingerprint({"n": "2"})
    assert fingerprint({"a": 1, "b": 2}) == fingerprint({"b": 2, "a": 1})  # dict order does not
    assert fingerprint(["ab", "c"]) != fingerprint(["a", "bc"])


def test_a_changed_middle_sentence_changes_the_key():
    def sentence(tokens, document):
        return TaggedSentence(tuple(tokens), ("NOUN",) * len(tokens), (None,) * len(tokens), document, "t")
    train_split = [sentence(["a", "b"], 0), sentence(["c", "d"], 0), sentence(["e", "f"], 1)]
    corpus = Corpus(tuple(train_split), (sentence(["g"], 0),))
    middle = Corpus((train_split[0], sentence(["c", "x"], 0), train_split[2]), corpus.heldout)
    retagged = Corpus((train_split[0], replace(train_split[1], pos=("VERB", "NOUN")), train_split[2]), corpus.heldout)
    keys = {fingerprint({"corpus": c}) for c in (corpus, middle, retagged)}
    assert len(keys) == 3
    assert fingerprint({"corpus": corpus}) == fingerprint({"corpus": Corpus(tuple(train_split), corpus.heldout)})


def test_cache_path_encodes_a_corpus_once_while_it_lives(monkeypatch):
    """The corpus in a recipe's key is encoded at the first lookup only: every later lookup keyed on
    the same object reuses its digest, and a corpus with other content still gets another path."""
    corpus = generate_corpus(num_documents=12, seed=5)
    other = generate_corpus(num_documents=12, seed=6)
    first = cache_path("toy", {"corpus": corpus, "steps": 1}, build, train)
    encoded = []
    original = cache._encode

    def counting(value, out, where, depth=0):
        encoded.append(type(value))
        original(value, out, where, depth)

    monkeypatch.setattr(cache, "_encode", counting)
    assert cache_path("toy", {"corpus": corpus, "steps": 1}, build, train) == first
    assert TaggedSentence not in encoded
    assert cache_path("toy", {"corpus": corpus, "steps": 2}, build, train) != first
    assert cache_path("toy", {"corpus": other, "steps": 1}, build, train) != first


def test_configs_key_by_their_fields_and_what_cannot_be_digested_is_named():
    small = BertConfig(vocab_size=10, hidden_size=8, num_attention_heads=2)
    assert fingerprint({"c": small}) == fingerprint({"c": BertConfig(vocab_size=10, hidden_size=8, num_attention_heads=2)})
    assert fingerprint({"c": small}) != fingerprint({"c": replace(small, layer_norm_eps=1e-6)})
    with pytest.raises(TypeError, match=r"key\['model'\] is a Linear, which the cache cannot digest"):
        fingerprint({"model": nn.Linear(2, 2)})
    with pytest.raises(ValueError, match=r"key\['lr'\] is nan: a cache key must be finite"):
        fingerprint({"lr": float("nan")})
    with pytest.raises(ValueError, match="name must be a file-name-safe str"):
        cached_training("../escape", {}, build, train)
    with pytest.raises(TypeError, match="key must be a dict"):
        cached_training("toy", [1, 2], build, train)


TOY = '''
"""A recipe outside ctxlib, as a reader might write one."""
import torch
from torch import nn
from ctxlib.training.loop import TrainConfig, fit
from ctxlib.training.pretraining_data import book_tokenizer

SCALE = {scale}  # {comment}


def build():
    """Docstrings do not count."""
    torch.manual_seed(0)
    return nn.Linear(1, 1)


def train(model):
    batch = torch.ones(4, 1)
    return fit(model, iter([batch] * 2), lambda m, b: (SCALE * m(b)).pow(2).mean(), TrainConfig(steps=2, progress=False))
'''


def test_a_code_change_trains_afresh_and_a_comment_does_not(tmp_path, monkeypatch):
    monkeypatch.setenv("CTXBOOK_CACHE", str(tmp_path / "cache"))
    monkeypatch.syspath_prepend(str(tmp_path))
    source = tmp_path / "toy_recipe.py"

    def load(scale: float, comment: str):
        source.write_text(TOY.format(scale=scale, comment=comment))
        monkeypatch.setattr(cache, "_SOURCES", {})  # a fresh process would read the file anew
        cache._code.cache_clear()
        sys.modules.pop("toy_recipe", None)
        module = importlib.import_module("toy_recipe")
        return cache_path("toy", {}, module.build, module.train), module

    first, module = load(1.0, "one")
    cached_training("toy", {}, module.build, module.train)
    commented, _ = load(1.0, "a comment changed, and the docstring below")
    assert commented == first and commented.is_file()
    changed, module = load(2.0, "one")
    assert changed != first and not changed.is_file()
    cached_training("toy", {}, module.build, module.train)
    assert changed.is_file()
    # The library's own code is in every key: the recipe's digest covers ctxlib.training.loop.
    digest = source_digest(["toy_recipe"])
    monkeypatch.setitem(cache._SOURCES, "ctxlib.training.loop", cache._source("ctxlib.training.loop") + b"\nX = 1\n")
    cache._code.cache_clear()
    assert source_digest(["toy_recipe"]) != digest


def test_a_notebook_recipe_is_keyed_on_all_of_ctxlib():
    cache._code.cache_clear()
    everything = source_digest(["a_module_without_a_source_file"])
    assert everything != source_digest(["ctxlib._checks"])
    assert cache._code("a_module_without_a_source_file", "ctxlib") == ("", None)


def test_a_damaged_cache_file_is_reported_removed_and_trained_again(tmp_path, monkeypatch):
    monkeypatch.setenv("CTXBOOK_CACHE", str(tmp_path))
    model, _ = cached_training("toy", {}, build, train)
    path = cache_path("toy", {}, build, train)
    for damage in (b"", b"not a checkpoint", path.read_bytes()[:100]):
        path.write_bytes(damage)
        with pytest.warns(UserWarning, match=r"cannot be read .* removed and 'toy' is trained afresh"):
            again, history = cached_training("toy", {}, build, train)
        assert torch.equal(again.weight, model.weight) and history.steps == [1, 2, 3]
        assert torch.load(path, weights_only=True)["state_dict"].keys() == model.state_dict().keys()


def test_a_cache_file_of_another_model_is_retrained(tmp_path, monkeypatch):
    monkeypatch.setenv("CTXBOOK_CACHE", str(tmp_path))
    cached_training("toy", {}, build, train)
    path = cache_path("toy", {}, build, train)
    torch.save({"state_dict": nn.Linear(3, 3).state_dict(), "history": "{}"}, path)
    with pytest.warns(UserWarning, match="size mismatch"):
        model, _ = cached_training("toy", {}, build, train)
    assert model.weight.shape == (1, 4)


def test_an_unwritable_cache_returns_the_trained_model_with_a_warning(tmp_path, monkeypatch):
    blocker = tmp_path / "a_file"
    blocker.write_text("the cache folder cannot be created under a file")
    monkeypatch.setenv("CTXBOOK_CACHE", str(blocker / "cache"))
    with pytest.warns(UserWarning, match=r"could not write .* the trained 'toy' is returned but not kept"):
        model, history = cached_training("toy", {}, build, train)
    assert history.steps == [1, 2, 3] and not torch.equal(model.weight, build().weight)


def _race(directory, barrier, trainings, results):
    import os
    os.environ["CTXBOOK_CACHE"] = directory

    def counted(model):
        with trainings.get_lock():
            trainings.value += 1
        return train(model)

    try:
        barrier.wait(timeout=120)  # both processes ask for the model at the same moment
        model, _ = cached_training("raced", {}, build, counted)
        results.put(model.weight.detach().tolist())
    except Exception as error:  # reported to the parent, which fails the test
        results.put(repr(error))


def test_two_processes_asking_at_once_train_the_model_once(tmp_path):
    context = multiprocessing.get_context("fork")
    barrier, trainings, results = context.Barrier(2), context.Value("i", 0), context.Queue()
    workers = [context.Process(target=_race, args=(str(tmp_path), barrier, trainings, results), daemon=True)
               for _ in range(2)]
    for worker in workers:
        worker.start()
    weights = [results.get(timeout=600) for _ in workers]
    for worker in workers:
        worker.join(60)
    assert trainings.value == 1, "the second process must wait for the first, then load"
    assert weights[0] == weights[1] and isinstance(weights[0], list)
    assert len(list(tmp_path.glob("raced-*.pt"))) == 1 and not list(tmp_path.glob(".*partial"))
    torch.load(next(tmp_path.glob("raced-*.pt")), weights_only=True)  # whole, not interleaved


def test_a_failed_write_leaves_no_partial_checkpoint(tmp_path, monkeypatch):
    monkeypatch.setenv("CTXBOOK_CACHE", str(tmp_path))
    path = cache_path("toy", {}, build, train)

    def failing_save(obj, file):
        with open(file, "wb") as handle:
            handle.write(b"half a checkpoint")
        raise OSError("disk full")

    monkeypatch.setattr(torch, "save", failing_save)
    with pytest.warns(UserWarning, match="disk full"):
        model, _ = cached_training("toy", {}, build, train)
    assert not path.exists() and [file.name for file in tmp_path.iterdir()] == [f".{path.name}.lock"]


def test_atomic_path_keeps_the_old_file_when_the_writer_fails(tmp_path):
    target = tmp_path / "data.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError, match="invalid example"):
        with atomic_path(target) as temporary:
            temporary.write_text("new, half writ")
            raise RuntimeError("invalid example")
    assert target.read_text() == "old" and list(tmp_path.iterdir()) == [target]
    with atomic_path(target) as temporary:
        temporary.write_text("new")
    assert target.read_text() == "new" and oct(target.stat().st_mode & 0o777) != "0o600"


def test_minilm_hands_out_a_tokenizer_the_caller_may_change():
    _, tokenizer = minilm()
    tokenizer.add_tokens(["zzyzx-new-token"])
    assert len(tokenizer) == 30523
    _, fresh = minilm()
    assert len(fresh) == 30522 and "zzyzx-new-token" not in fresh.get_vocab()


def test_minilm_shared_is_one_pair_and_its_copies_equal_it():
    shared = minilm(shared=True)
    assert minilm(shared=True)[0] is shared[0] and minilm(shared=True)[1] is shared[1]
    model, tokenizer = minilm()
    assert model is not shared[0] and tokenizer is not shared[1]
    assert all(torch.equal(value, shared[0].state_dict()[key]) for key, value in model.state_dict().items())
    assert tokenizer.get_vocab() == shared[1].get_vocab()
    with pytest.raises(TypeError, match="shared must be a bool \\(True or False\\), got str 'yes'"):
        minilm(shared="yes")


def test_book_tokenizer_does_not_rewrite_an_identical_vocabulary(tmp_path, monkeypatch):
    monkeypatch.setenv("CTXBOOK_CACHE", str(tmp_path))
    corpus = generate_corpus(num_documents=40, seed=3)
    first = book_tokenizer.__wrapped__(corpus, vocab_size=300)
    (vocabulary,) = tmp_path.glob("book-wordpiece-*/vocab.txt")
    stamp = vocabulary.stat()
    again = book_tokenizer.__wrapped__(corpus, vocab_size=300)
    assert again.get_vocab() == first.get_vocab()
    assert (vocabulary.stat().st_mtime_ns, vocabulary.stat().st_ino) == (stamp.st_mtime_ns, stamp.st_ino)
    vocabulary.write_text("[PAD]\n")  # damaged: rewritten
    assert book_tokenizer.__wrapped__(corpus, vocab_size=300).get_vocab() == first.get_vocab()


def test_recipes_that_return_the_wrong_thing_are_named(tmp_path, monkeypatch):
    monkeypatch.setenv("CTXBOOK_CACHE", str(tmp_path))
    with pytest.raises(TypeError, match="build\\(\\) must return a torch.nn.Module, got dict"):
        cached_training("toy", {}, lambda: {}, train)
    with pytest.raises(TypeError, match="train\\(model\\) must return the History that fit returns, got float"):
        cached_training("toy", {}, build, lambda model: 0.5)
