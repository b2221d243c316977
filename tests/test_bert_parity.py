"""ctxlib's BERT against the reference implementation, transformers.BertModel."""

from __future__ import annotations

import pytest
import torch
import transformers

from ctxlib.models.bert import BertConfig, BertForPreTraining, BertModel

TOL = 1e-5

# Sentence pairs of different lengths, so the batch is padded and has two segments.
PAIRS = [
    ("The fisherman sat on the bank of the river.", "He waited for the salmon to run."),
    ("She deposited the cheque at the bank.", "Then she walked home in the spring sunshine, humming."),
    ("Bats sleep by day.", "At dusk they leave the cave to hunt insects over the water meadows."),
]


@pytest.fixture(scope="module")
def batch(minilm_pair):
    _, tokenizer = minilm_pair
    enc = tokenizer([a for a, _ in PAIRS], [b for _, b in PAIRS], padding=True, return_tensors="pt")
    assert (enc["attention_mask"] == 0).any(), "the batch must contain padding"
    assert (enc["token_type_ids"] == 1).any(), "the batch must contain a second segment"
    return enc


def max_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    return (a - b).abs().max().item()


def max_diff_real(a: torch.Tensor, b: torch.Tensor, mask: torch.Tensor) -> float:
    """Over real tokens only: at padding, transformers computes vectors nobody reads and
    ctxlib skips them (they are 0)."""
    return (a - b)[mask.bool()].abs().max().item()


@torch.no_grad()
def test_minilm_hidden_states_and_attentions_match_transformers(minilm_pair, hf_minilm, batch):
    model, _ = minilm_pair
    ours = model(**batch, output_attentions=True, output_hidden_states=True)
    ref = hf_minilm(**batch, output_attentions=True, output_hidden_states=True)
    assert len(ours.hidden_states) == len(ref.hidden_states) == model.config.num_hidden_layers + 1
    for layer, (a, b) in enumerate(zip(ours.hidden_states, ref.hidden_states)):
        assert max_diff_real(a, b, batch["attention_mask"]) < TOL, f"hidden state {layer}"
    assert len(ours.attentions) == len(ref.attentions) == model.config.num_hidden_layers
    for layer, (a, b) in enumerate(zip(ours.attentions, ref.attentions)):
        assert a.shape == b.shape == (3, 12, batch["input_ids"].shape[1], batch["input_ids"].shape[1])
        # Rows of real query tokens; every key column, so padded keys must get exactly 0 in both.
        rows = batch["attention_mask"].bool()[:, None, :, None].expand_as(a)
        assert (a - b)[rows].abs().max() < TOL, f"attention {layer}"
    assert max_diff_real(ours.last_hidden_state, ref.last_hidden_state, batch["attention_mask"]) < TOL
    padding = ~batch["attention_mask"].bool()
    assert ours.last_hidden_state[padding].abs().max() == 0
    assert max_diff(ours.pooler_output, ref.pooler_output) < TOL


@torch.no_grad()
def test_fast_and_explicit_attention_paths_agree(minilm_pair, batch):
    model, _ = minilm_pair
    fast = model(**batch, output_hidden_states=True)
    explicit = model(**batch, output_hidden_states=True, output_attentions=True)
    assert fast.attentions is None
    for a, b in zip(fast.hidden_states, explicit.hidden_states):
        assert max_diff(a, b) < TOL


@torch.no_grad()
def test_attention_rows_are_distributions_that_ignore_padding(minilm_pair, batch):
    model, _ = minilm_pair
    probs = torch.stack(model(**batch, output_attentions=True).attentions)  # [L, B, h, T, T]
    torch.testing.assert_close(probs.sum(-1), torch.ones_like(probs.sum(-1)))
    padded_keys = batch["attention_mask"][None, :, None, None, :] == 0
    assert probs.masked_select(padded_keys.expand_as(probs)).abs().max() == 0


def small_config(**overrides) -> BertConfig:
    fields = dict(vocab_size=120, hidden_size=48, num_hidden_layers=2, num_attention_heads=4,
                  intermediate_size=96, max_position_embeddings=64)
    return BertConfig(**(fields | overrides))


def random_inputs(config: BertConfig) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(1)
    ids = torch.randint(1, config.vocab_size, (2, 10), generator=generator)
    mask = torch.ones_like(ids)
    mask[1, 7:] = 0
    types = torch.zeros_like(ids)
    types[:, 5:] = 1
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


@torch.no_grad()
def test_ctxlib_checkpoint_loads_in_transformers_with_identical_logits(tmp_path):
    config = small_config()
    ours = BertForPreTraining(config).eval()
    ours.save_pretrained(tmp_path)
    ref = transformers.BertForPreTraining.from_pretrained(tmp_path, attn_implementation="eager").eval()
    inputs = random_inputs(config)
    a, b = ours(**inputs), ref(**inputs)
    mask = inputs["attention_mask"]
    assert max_diff_real(a.prediction_logits, b.prediction_logits, mask) < TOL
    assert max_diff(a.seq_relationship_logits, b.seq_relationship_logits) < TOL
    # The tie survives the round trip: transformers' decoder is its own word embedding table.
    assert ref.cls.predictions.decoder.weight.data_ptr() == ref.bert.embeddings.word_embeddings.weight.data_ptr()


@pytest.mark.parametrize("weights", ["model.safetensors", "pytorch_model.bin"])
@torch.no_grad()
def test_transformers_checkpoint_loads_in_ctxlib_with_identical_logits(tmp_path, weights):
    config = small_config()
    hf_config = transformers.BertConfig(**{k: v for k, v in config.to_dict().items() if k != "model_type"})
    ref = transformers.BertForPreTraining(hf_config).eval()
    ref.save_pretrained(tmp_path)
    if weights == "pytorch_model.bin":
        # The older format: a pickled state dict holding the tied decoder weight and bias too.
        (tmp_path / "model.safetensors").unlink()
        torch.save(ref.state_dict(), tmp_path / weights)
    ours = BertForPreTraining.from_pretrained(tmp_path)
    inputs = random_inputs(config)
    labels = torch.full_like(inputs["input_ids"], -100)
    labels[:, 2] = inputs["input_ids"][:, 2]
    nsp = torch.tensor([0, 1])
    a = ours(**inputs, labels=labels, next_sentence_label=nsp)
    b = ref(**inputs, labels=labels, next_sentence_label=nsp)
    mask = inputs["attention_mask"]
    assert max_diff_real(a.prediction_logits, b.prediction_logits, mask) < TOL
    assert max_diff(a.seq_relationship_logits, b.seq_relationship_logits) < TOL
    assert abs(a.loss.item() - b.loss.item()) < TOL  # eq 4.6 against transformers' total loss
    # A BertModel reads the encoder out of the same pretraining checkpoint.
    encoder = BertModel.from_pretrained(tmp_path)
    assert max_diff_real(encoder(**inputs).last_hidden_state, ref.bert(**inputs).last_hidden_state, mask) < TOL
