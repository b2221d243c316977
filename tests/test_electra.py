"""ELECTRA: eq 7.2's targets and loss by hand, the weighted total, sampling, gradients, sharing."""

from __future__ import annotations

import math

import pytest
import torch

from ctxlib.models.bert import BertConfig, BertModel
from ctxlib.models.electra import (DISCRIMINATOR_WEIGHT, Electra, discriminator_loss, replaced_token_labels,
                                   sample_replacements)
from ctxlib.objectives.masking import IGNORE_INDEX, mask_tokens

CONFIG = BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
                    max_position_embeddings=16)


def test_a_sampled_token_equal_to_the_original_counts_as_original():
    original = torch.tensor([[5, 6, 7, 8]])
    corrupted = torch.tensor([[5, 9, 7, 8]])  # position 1 replaced; position 2 "replaced" by itself
    assert replaced_token_labels(original, corrupted).tolist() == [[0.0, 1.0, 0.0, 0.0]]


def test_discriminator_loss_is_the_binary_cross_entropy_over_real_tokens_by_hand():
    logits = torch.tensor([[2.0, -1.0, 0.5], [0.0, 3.0, -2.0]])  # scores for "replaced"
    replaced = torch.tensor([[1.0, 0.0, 0.0], [1.0, 1.0, 0.0]])
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]])  # the last token of row 2 is padding

    def sigmoid(x: float) -> float:
        return 1 / (1 + math.exp(-x))

    # D(x̂, t) = P(original) = 1 − σ(score); eq 7.2: −[1(orig) log D + 1(replaced) log(1 − D)]
    terms = [-(math.log(sigmoid(s)) if y else math.log(1 - sigmoid(s)))
             for row_s, row_y, row_m in zip(logits.tolist(), replaced.tolist(), mask.tolist())
             for s, y, m in zip(row_s, row_y, row_m) if m]
    assert discriminator_loss(logits, replaced, mask).item() == pytest.approx(sum(terms) / len(terms), rel=1e-6)
    assert discriminator_loss(logits[:1], replaced[:1]).item() == pytest.approx(sum(terms[:3]) / 3, rel=1e-6)


def test_sampling_follows_the_generator_distribution():
    # P(token 1) = 3 / (1 + 3) = 0.75 in every row
    logits = torch.tensor([[0.0, math.log(3.0), -math.inf]]).repeat(4000, 1)
    samples = sample_replacements(logits, torch.Generator().manual_seed(0))
    share = samples.float().mean().item()
    assert set(samples.tolist()) <= {0, 1}
    assert abs(share - 0.75) < 4 * math.sqrt(0.75 * 0.25 / 4000)


def batch(seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, 50, (4, 12), generator=generator)
    attention_mask = torch.ones_like(ids)
    attention_mask[1, 9:] = 0
    special = 1 - attention_mask
    inputs, labels = mask_tokens(ids, vocab_size=50, mask_token_id=4, special_tokens_mask=special,
                                 mlm_probability=0.3, mask_replace_prob=1.0, random_replace_prob=0.0,
                                 generator=generator)
    return ids, inputs, labels, attention_mask


def test_forward_replaces_only_masked_tokens_and_weights_the_losses():
    torch.manual_seed(0)
    model = Electra(CONFIG, generator_layers=1)
    ids, inputs, labels, mask = batch()
    out = model(inputs, labels=labels, attention_mask=mask, generator=torch.Generator().manual_seed(1))
    masked = labels != IGNORE_INDEX
    assert torch.equal(out.corrupted_ids[~masked], ids[~masked])  # the rest of the sentence is the original
    assert torch.equal(out.replaced, (out.corrupted_ids != ids).float())
    assert not out.replaced[~masked].any()
    torch.testing.assert_close(out.loss, out.mlm_loss + DISCRIMINATOR_WEIGHT * out.discriminator_loss)
    torch.testing.assert_close(out.discriminator_loss, discriminator_loss(out.discriminator_logits, out.replaced, mask))
    # An untrained generator (weights N(0, 0.02²)) samples almost uniformly from the 50 tokens, so
    # it draws the original back with probability ≈ 1/50: of n masked positions, the number left
    # original is ≈ Binomial(n, 1/50); allow 4σ above its mean.
    n = int(masked.sum())
    kept = n - int(out.replaced[masked].sum())
    assert n >= 10 and kept <= n / 50 + 4 * math.sqrt(n * (1 / 50) * (49 / 50))


def test_no_gradient_flows_through_the_sample_and_the_embeddings_are_shared():
    torch.manual_seed(0)
    model = Electra(CONFIG, generator_layers=1)
    for table in ("word_embeddings", "position_embeddings", "token_type_embeddings", "LayerNorm"):
        assert getattr(model.generator.embeddings, table) is getattr(model.discriminator.embeddings, table)
    assert model.generator_head.decoder.weight is model.discriminator.embeddings.word_embeddings.weight
    _, inputs, labels, mask = batch()
    model(inputs, labels=labels, attention_mask=mask).discriminator_loss.backward()
    assert all(p.grad is None for p in model.generator.encoder.parameters())  # the generator is not adversarial
    assert model.discriminator.embeddings.word_embeddings.weight.grad is not None
    model.zero_grad(set_to_none=True)
    model(inputs, labels=labels, attention_mask=mask).mlm_loss.backward()
    assert all(p.grad is None for p in model.discriminator.encoder.parameters())


def test_a_narrower_generator_reads_the_shared_tables_through_its_own_projection():
    torch.manual_seed(0)
    model = Electra(CONFIG, generator_layers=2, generator_hidden_size=8)
    generator, shared = model.generator, model.discriminator.embeddings
    assert generator.config.hidden_size == 8 and generator.config.intermediate_size == 32
    assert generator.config.head_dim == CONFIG.head_dim and len(generator.encoder.layer) == 2
    assert generator.embeddings.word_embeddings is shared.word_embeddings and shared.projection is None
    assert generator.embeddings.projection.weight.shape == (8, 16)
    assert model.generator_head.decoder.weight is shared.word_embeddings.weight
    assert model.discriminator.pooler is None and generator.pooler is None  # ELECTRA has no pooler
    _, inputs, labels, mask = batch()
    out = model(inputs, labels=labels, attention_mask=mask, generator=torch.Generator().manual_seed(1))
    out.loss.backward()
    assert generator.embeddings.projection.weight.grad is not None
    # Same width: nothing to project; the generator reads the discriminator's embeddings as they are.
    assert Electra(CONFIG, generator_hidden_size=16).generator.embeddings.projection is None


def test_electra_small_with_its_generator_has_the_released_models_parameters():
    """Clark et al.'s ELECTRA-small: discriminator 12 × 256 with 128-wide embeddings, generator
    12 × 64 sharing them. The released discriminator and generator, as transformers builds
    them, minus the embeddings they share."""
    import transformers

    small = {"embedding_size": 128, "hidden_size": 256, "num_attention_heads": 4, "intermediate_size": 1024}
    with torch.device("meta"):
        model = Electra(BertConfig(**small), generator_layers=12, generator_hidden_size=64)
        discriminator = transformers.ElectraForPreTraining(transformers.ElectraConfig(**small))
        generator = transformers.ElectraForMaskedLM(transformers.ElectraConfig(
            **{**small, "hidden_size": 64, "num_attention_heads": 1, "intermediate_size": 256}))

    def size(module: torch.nn.Module) -> int:
        return sum(p.numel() for p in module.parameters())

    assert size(model.discriminator) + size(model.discriminator_head) == size(discriminator) == 13_549_057
    assert size(model) == size(discriminator) + size(generator) - size(generator.electra.embeddings) == 14_196_219


def test_bad_input_is_named():
    with pytest.raises(ValueError, match=r"generator_layers must be an int in \[1, num_hidden_layers=2\]"):
        Electra(CONFIG, generator_layers=3)
    with pytest.raises(ValueError, match=r"generator_hidden_size must be a multiple of the head size 8 in \[8, "
                                         r"hidden_size=16\], got 12"):
        Electra(CONFIG, generator_hidden_size=12)
    with pytest.raises(TypeError, match="pooler must be a bool, got int 0"):
        BertModel(CONFIG, pooler=0)
    with pytest.raises(ValueError, match="discriminator_weight must be > 0, got 0"):
        Electra(CONFIG, discriminator_weight=0)
    with pytest.raises(ValueError, match="discriminator_weight must be finite, got nan"):
        Electra(CONFIG, discriminator_weight=float("nan"))
    model = Electra(CONFIG)
    ids = torch.randint(5, 50, (2, 6))
    with pytest.raises(ValueError, match="labels mark no masked position"):
        model(ids, labels=torch.full_like(ids, IGNORE_INDEX))
    with pytest.raises(ValueError, match="labels must have the shape of input_ids"):
        model(ids, labels=ids[:, :3])
    with pytest.raises(TypeError, match="labels must hold integers"):
        model(ids, labels=ids.float())
    with pytest.raises(TypeError, match="takes 2 positional arguments"):  # keyword-only after input_ids
        model(ids, ids)
    with pytest.raises(ValueError, match="attention_mask marks no real token"):
        discriminator_loss(torch.zeros(1, 3), torch.zeros(1, 3), torch.zeros(1, 3, dtype=torch.long))


def test_save_pretrained_writes_the_shared_tables_once_and_loads_back(tmp_path):
    # Before: safetensors refused with "Some tensors share memory" (the generator's views of the
    # discriminator's tables were not among the tied keys).
    torch.manual_seed(0)
    model = Electra(CONFIG, generator_layers=1, generator_hidden_size=8, discriminator_weight=20.0).eval()
    model.save_pretrained(tmp_path)
    loaded = Electra.from_pretrained(tmp_path)
    assert loaded.generator.config.hidden_size == 8 and loaded.discriminator_weight == 20.0
    assert loaded.generator.embeddings.word_embeddings is loaded.discriminator.embeddings.word_embeddings
    assert loaded.generator_head.decoder.weight is loaded.discriminator.embeddings.word_embeddings.weight
    for (name, a), b in zip(model.state_dict().items(), loaded.state_dict().values()):
        assert torch.equal(a, b), name
    _, inputs, labels, mask = batch()
    sample = lambda m: m(inputs, labels=labels, attention_mask=mask, generator=torch.Generator().manual_seed(3))
    torch.testing.assert_close(sample(loaded).loss, sample(model).loss)


def test_book_electra_trains_scores_and_is_cached(tmp_path, monkeypatch):
    from ctxlib.data.corpus import generate_corpus
    from ctxlib.studies.electra_pretraining import ELECTRA_MASKING, book_electra, electra_scores
    from ctxlib.training.loop import TrainConfig
    from ctxlib.training.pretraining_data import heldout_batches

    monkeypatch.setenv("CTXBOOK_CACHE", str(tmp_path))
    corpus = generate_corpus(num_documents=120, seed=3)
    config = BertConfig(vocab_size=400, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=64)
    training = TrainConfig(steps=4, lr=1e-3, eval_every=2, progress=False)
    model, history, tokenizer = book_electra(corpus, training, config)
    assert set(history.train) == {"loss", "MLM", "Disc"}
    torch.testing.assert_close(torch.tensor(history.train["loss"]),
                               torch.tensor(history.train["MLM"]) + DISCRIMINATOR_WEIGHT * torch.tensor(history.train["Disc"]))
    assert [s for s, _ in history.evaluations["heldout replaced_recall"]] == [2, 4]
    again, _, _ = book_electra(corpus, training, config)
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), again.state_dict().values()))
    lighter, lighter_history, _ = book_electra(corpus, training, config, discriminator_weight=10.0,
                                               generator_hidden_size=8)
    assert lighter.discriminator_weight == 10.0 and lighter.generator.config.hidden_size == 8
    torch.testing.assert_close(torch.tensor(lighter_history.train["loss"]),
                               torch.tensor(lighter_history.train["MLM"]) + 10 * torch.tensor(lighter_history.train["Disc"]))
    heldout = heldout_batches(corpus, tokenizer, count=40, **ELECTRA_MASKING)
    # Only [MASK] replaces a selected token in the generator's input.
    selected = torch.cat([b["labels"][b["labels"] != IGNORE_INDEX] for b in heldout])
    masked_inputs = torch.cat([b["input_ids"][b["labels"] != IGNORE_INDEX] for b in heldout])
    assert len(selected) > 0 and (masked_inputs == tokenizer.mask_token_id).all()
    # A discriminator that always answers "original" scores exactly the original share and
    # catches nothing; one that always answers "replaced" the complement, and catches everything.
    head = model.discriminator_head.dense_prediction
    with torch.no_grad():
        head.weight.zero_()
        head.bias.fill_(-10.0)
        always_original = electra_scores(model, heldout)
        head.bias.fill_(10.0)
        always_replaced = electra_scores(model, heldout)
    assert always_original.replaced_recall == 0.0 and always_replaced.replaced_recall == 1.0
    assert always_original.discriminator_accuracy == pytest.approx(always_original.original_share)
    assert always_replaced.discriminator_accuracy == pytest.approx(1 - always_replaced.original_share)
    assert 0.5 < always_original.original_share < 1  # some tokens were replaced, most not
