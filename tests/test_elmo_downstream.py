"""ELMo in a downstream task (eq 2.6): the input concatenation, freezing, fine-tuning, the task data."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from ctxlib.data.corpus import Corpus, TaggedSentence
from ctxlib.data.vocabulary import Vocabulary
from ctxlib.models.elmo import Elmo, ElmoConfig, batch_to_ids
from ctxlib.objectives.masking import IGNORE_INDEX
from ctxlib.studies.elmo_downstream import DownstreamTagger, Setting, TaggingTask, accuracy, pos_task, train_downstream
from ctxlib.training.loop import TrainConfig, fit


def sentence(tokens: str, pos: str, senses: tuple = ()) -> TaggedSentence:
    words = tokens.split()
    return TaggedSentence(tuple(words), tuple(pos.split()), tuple(senses) or (None,) * len(words), 0, "t")


TRAIN = (sentence("the bank opened", "DET NOUN VERB", (None, "bank/money", None)),
         sentence("the bank flooded", "DET NOUN VERB", (None, "bank/river", None)),
         sentence("a bank opened", "DET NOUN VERB", (None, "bank/money", None)))
TEST = (sentence("the bank opened late", "DET NOUN VERB ADV"),
        sentence("some bank", "DET NOUN"))


@pytest.fixture(scope="module")
def elmo() -> Elmo:
    torch.manual_seed(0)
    config = ElmoConfig(char_embedding_dim=4, filters=((1, 4), (2, 4)), projection_dim=6, cell_size=8, vocab_size=7)
    return Elmo(config).eval()


def tagger(setting: Setting, elmo: Elmo) -> DownstreamTagger:
    torch.manual_seed(0)
    return DownstreamTagger(setting, 4, Vocabulary(t for s in TRAIN for t in s.tokens), elmo, base_dim=5, hidden=3)


def test_eq_2_6_concatenates_base_and_mix(elmo):
    model = tagger(Setting("concat"), elmo).eval()
    words = [s.tokens for s in TEST]
    x_down, mask = model.inputs(words)
    out = elmo(batch_to_ids(words))
    x_base = model.embedding(model.words.encode(words, pad=0))
    v = model.mix([F.layer_norm(layer, layer.shape[-1:]) for layer in out.layers])
    torch.testing.assert_close(x_down, torch.cat([x_base, v], dim=-1))
    assert x_down.shape == (2, 4, 5 + 12) and mask.tolist() == [[True] * 4, [True, True, False, False]]
    # unseen words ("late", "some") share the unknown-word row of x_base
    assert torch.equal(x_base[0, 3], x_base[1, 0])
    replace = tagger(Setting("replace"), elmo).eval()
    assert replace.embedding is None and replace.inputs(words)[0].shape == (2, 4, 12)


def test_padding_does_not_change_a_sentence_s_tags(elmo):
    model = tagger(Setting("concat"), elmo).eval()
    alone = model([TEST[1].tokens])
    batched = model([s.tokens for s in TEST])
    torch.testing.assert_close(batched[1, :2], alone[0], atol=1e-6, rtol=1e-5)


def one_step(model: DownstreamTagger) -> None:
    task = TaggingTask(TRAIN, TEST, ("ADV", "DET", "NOUN", "VERB"), "pos")
    batches = iter([([s.tokens for s in TRAIN], task.labels(TRAIN))] * 2)
    loss = lambda net, batch: F.cross_entropy(net(batch[0]).flatten(0, 1), batch[1].flatten(), ignore_index=IGNORE_INDEX)
    fit(model, batches, loss, TrainConfig(steps=2, lr=0.1, warmup_fraction=0.0, progress=False),
        lr_scale={"elmo": 0.1} if model.setting.fine_tune else None)


@pytest.mark.parametrize("fine_tune", [False, True])
def test_frozen_keeps_the_bilm_and_fine_tuning_moves_it_but_never_the_caller_s(elmo, fine_tune):
    before = {k: v.clone() for k, v in elmo.state_dict().items()}
    model = tagger(Setting("concat", fine_tune=fine_tune), elmo)
    mix_before = model.mix.scalar_parameters.detach().clone()
    one_step(model)
    copy_moved = any(not torch.equal(before[k], v) for k, v in model.elmo.state_dict().items())
    assert copy_moved == fine_tune
    assert not torch.equal(model.mix.scalar_parameters, mix_before)  # s_j learn in both modes
    assert all(torch.equal(before[k], v) for k, v in elmo.state_dict().items())
    # the LM softmax plays no part in tagging and is never counted as trainable
    lm_head = sum(p.numel() for p in elmo.bilm.softmax.parameters())
    bilm = sum(p.numel() for p in elmo.parameters())
    head = model.trainable_parameters() - (bilm - lm_head if fine_tune else 0)
    assert head == sum(p.numel() for n, p in model.named_parameters() if not n.startswith("elmo."))


def test_bad_settings_are_clear_errors(elmo):
    with pytest.raises(ValueError, match="inputs must be one of"):
        Setting("sum")
    with pytest.raises(ValueError, match="no biLM to fine-tune"):
        Setting("base", fine_tune=True)
    with pytest.raises(ValueError, match="give words"):
        DownstreamTagger(Setting("concat"), 3, None, elmo)
    with pytest.raises(ValueError, match="give elmo"):
        DownstreamTagger(Setting("replace"), 3, Vocabulary(["a"]), None)
    with pytest.raises(TypeError, match="setting must be a Setting"):
        DownstreamTagger("concat", 3, Vocabulary(["a"]), elmo)
    with pytest.raises(TypeError, match=r"fine_tune must be a bool \(True or False\), got str 'no'"):
        Setting("concat", fine_tune="no")


def test_a_released_elmo_without_lm_heads_can_be_used():
    # The released ELMo has no softmax (vocab_size=0). Before: AttributeError on bilm.softmax.
    torch.manual_seed(0)
    headless = Elmo(ElmoConfig(char_embedding_dim=4, filters=((1, 4), (2, 4)), projection_dim=6, cell_size=8)).eval()
    assert headless.bilm.softmax is None
    model = DownstreamTagger(Setting("replace", fine_tune=True), 4, None, headless, hidden=3)
    assert model([["the", "bank"]]).shape == (1, 2, 4)
    assert model.trainable_parameters() == sum(p.numel() for p in model.parameters())


def test_task_labels_seen_words_and_the_most_frequent_tag_baseline():
    senses = TaggingTask(TRAIN, (sentence("the bank opened", "DET NOUN VERB", (None, "bank/money", None)),),
                         ("bank/money", "bank/river"), "senses")
    no = IGNORE_INDEX
    assert senses.labels(TRAIN).tolist() == [[no, 0, no], [no, 1, no], [no, 0, no]]
    assert senses.most_frequent_tag_accuracy() == 1.0  # "bank" is money twice, river once
    pos = TaggingTask(TRAIN, TEST, ("ADV", "DET", "NOUN", "VERB"), "pos")
    assert pos.seen(TEST).tolist() == [[True, True, True, False], [False, True, False, False]]
    # by hand: the, bank, opened right; "late" and "some" get the commonest tag overall (DET,
    # tied with NOUN and VERB at 3, broken by first occurrence): late wrong, some right.
    assert pos.most_frequent_tag_accuracy() == pytest.approx(5 / 6)


class ConstantTagger(torch.nn.Module):
    """Predicts class ``tag`` for every word: accuracy is then a count of labels."""

    def __init__(self, tag: int) -> None:
        super().__init__()
        self.tag = tag

    def forward(self, sentences):
        return F.one_hot(torch.full((len(sentences), max(map(len, sentences))), self.tag), 4).float()


def test_accuracy_splits_seen_and_unseen_words():
    task = TaggingTask(TRAIN, TEST, ("ADV", "DET", "NOUN", "VERB"), "pos")
    scores = accuracy(ConstantTagger(1), task)  # always DET: "the" (seen) and "some" (unseen) right
    assert scores == {"all": pytest.approx(2 / 6), "seen": pytest.approx(1 / 4), "unseen": pytest.approx(1 / 2)}


def test_tasks_drawn_from_a_corpus_are_reproducible_and_scorable(elmo, tmp_path, monkeypatch):
    corpus = Corpus(TRAIN * 4, (), novel=TEST + (sentence("the bank wept", "DET NOUN INTJ"),))
    task = pos_task(corpus, train_sentences=5, test_sentences=3, seed=1)
    assert task == pos_task(corpus, train_sentences=5, test_sentences=3, seed=1)
    # a held-out sentence with a tag that training never shows cannot be scored, so it is dropped
    assert all("INTJ" not in s.pos for s in task.test) and set(task.tags) <= {"ADV", "DET", "NOUN", "VERB"}
    with pytest.raises(ValueError, match="train_sentences must be a positive int"):
        pos_task(corpus, train_sentences=0)
    monkeypatch.setenv("CTXBOOK_CACHE", str(tmp_path))
    config = TrainConfig(steps=3, lr=0.05, progress=False)
    first = train_downstream(Setting("replace"), task, elmo, config, batch_size=2)
    again = train_downstream(Setting("replace"), task, elmo, config, batch_size=2)  # from the cache
    assert first.accuracy == again.accuracy and first.layer_weights == again.layer_weights
    assert len(first.layer_weights) == 3 and sum(first.layer_weights) == pytest.approx(1.0)
    assert len(list(tmp_path.glob("elmo-downstream-replace-0-*.pt"))) == 1
