"""The book's numbered equations, in one registry (Chapter 8, the formula reference).

Each entry holds an equation's number (as in the course notes), its LaTeX exactly as the book
displays it, the ctxlib objects that implement it and the tests that check them. The formula
reference page is generated from this table, and ``tests/test_equations.py`` fails when an
equation in the book has no entry, when its LaTeX differs from the entry's, when an
implementation is missing or does not name the equation in its docstring, or when a test named
here does not exist. The notes' own formula sheet (§8, eqs 8.1–8.8) restates earlier equations;
``NOTES_SHEET`` maps each to the equation it repeats.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Equation:
    """One numbered equation: what it says, where ctxlib computes it, which tests check that."""

    number: str
    title: str
    latex: str
    implemented_by: tuple[str, ...]
    tested_by: tuple[str, ...]


EQUATIONS: tuple[Equation, ...] = (
    Equation("1.1", "a static vector is the same in every context",
             r'\mathbf{v}_w^{(c_1)} = \mathbf{v}_w^{(c_2)} = \mathbf{v}_w .',
             ('ctxlib.analysis.occurrences.bert_word_vectors',),
             ('tests/test_occurrences.py::test_vectors_are_table_rows_and_hidden_states', 'tests/test_polysemy.py::test_static_row_is_at_chance_and_context_separates')),
    Equation("2.1", "the forward language model",
             r'P(w_t \mid w_1, \ldots, w_{t-1}) = \operatorname{softmax}\big(\overrightarrow{\mathbf{h}}_{t-1} \mathbf{W}_o\big)_{w_t} .',
             ('ctxlib.models.elmo.BiLM.lm_loss',),
             ('tests/test_elmo.py::test_lm_loss_by_hand',)),
    Equation("2.2", "the backward language model",
             r'P(w_t \mid w_{t+1}, \ldots, w_T) = \operatorname{softmax}\big(\overleftarrow{\mathbf{h}}_{t+1} \mathbf{W}_o\big)_{w_t} .',
             ('ctxlib.models.elmo.BiLM.lm_loss',),
             ('tests/test_elmo.py::test_lm_loss_by_hand',)),
    Equation("2.3", "the biLM log-likelihood",
             r'\mathcal{L} = \sum_{t=1}^{T} \Big[ \log P(w_t \mid w_1, \ldots, w_{t-1}; \Theta_x, \overrightarrow{\Theta}_{\text{LSTM}}, \Theta_s) '
             r'+ \log P(w_t \mid w_{t+1}, \ldots, w_T; \Theta_x, \overleftarrow{\Theta}_{\text{LSTM}}, \Theta_s) \Big] .',
             ('ctxlib.models.elmo.BiLM.lm_loss', 'ctxlib.studies.elmo_pretraining.bilm_loss'),
             ('tests/test_elmo.py::test_lm_loss_by_hand', 'tests/test_elmo_pretraining.py::test_book_elmo_learns_and_is_cached')),
    Equation("2.4", "all of ELMo's layers, concatenated",
             r'\mathbf{H}_t = [\mathbf{h}_{t,0}; \mathbf{h}_{t,1}; \ldots; \mathbf{h}_{t,L}] \in \mathbb{R}^{(L+1) \cdot 2 d_{\text{proj}}} .',
             ('ctxlib.models.elmo.ElmoOutput.concatenated',),
             ('tests/test_elmo.py::test_elmo_layers_shape_and_token_layer',)),
    Equation("2.5", "the ELMo vector: a scalar mix of the layers",
             r'\mathbf{v}_t = \gamma \sum_{j=0}^{L} s_j \mathbf{h}_{t,j}, \qquad \mathbf{s} = \operatorname{softmax}(\mathbf{w}) .',
             ('ctxlib.layers.scalar_mix.ScalarMix',),
             ('tests/test_elmo.py::test_scalar_mix_is_eq_2_5', 'tests/test_elmo.py::test_scalar_mix_layer_norm_ignores_padding')),
    Equation("2.6", "ELMo added to a task model's input",
             r'\mathbf{x}_t^{\text{down}} = [\mathbf{x}_t^{\text{base}}; \mathbf{v}_t] .',
             ('ctxlib.studies.elmo_downstream.DownstreamTagger',),
             ('tests/test_elmo_downstream.py::test_eq_2_6_concatenates_base_and_mix',)),
    Equation("3.1", "the masked-LM loss",
             r'\mathcal{L}_{\text{MLM}} = -\sum_{t \in \mathcal{M}} \log P(w_t \mid \tilde{\mathbf{x}}) .',
             ('ctxlib.models.bert.mlm_cross_entropy',),
             ('tests/test_bert_math.py::test_mlm_head_is_tied_and_losses_add_up',)),
    Equation("3.2", "BERT's input: token + position + segment embeddings",
             r'\mathbf{e}_t = \mathbf{e}_{\text{tok},t} + \mathbf{e}_{\text{pos},t} + \mathbf{e}_{\text{seg},t} .',
             ('ctxlib.models.bert.BertEmbeddings',),
             ('tests/test_bert_math.py::test_embeddings_are_layer_norm_of_token_plus_position_plus_segment',)),
    Equation("3.3", "the next-sentence probability",
             r'P(\text{IsNext} \mid A, B) = \operatorname{softmax}\big(\tanh(\mathbf{h}_{\texttt{[CLS]}} \mathbf{W}_p + \mathbf{b}_p)\, \mathbf{W}_{\text{NSP}} + \mathbf{b}_{\text{NSP}}\big)_{\text{IsNext}} .',
             ('ctxlib.studies.nsp_topics.nsp_probabilities',),
             ('tests/test_nsp_topics.py::test_nsp_probabilities_are_the_softmax_of_the_pair_logits',)),
    Equation("3.4", "the next-sentence loss",
             r'\mathcal{L}_{\text{NSP}} = -\log P(y \mid A, B) .',
             ('ctxlib.models.bert.BertForPreTraining',),
             ('tests/test_bert_math.py::test_mlm_head_is_tied_and_losses_add_up',)),
    Equation("3.5", "the output vector of token t",
             r'\mathbf{H}_t^{(L)} \in \mathbb{R}^{d_{\text{model}}} .',
             ('ctxlib.models.bert.BertModel',),
             ('tests/test_bert_parity.py::test_minilm_hidden_states_and_attentions_match_transformers',)),
    Equation("3.6", "a sequence classifier on the pooled [CLS] vector",
             r'P(y \mid \text{sequence}) = \operatorname{softmax}\big(\tanh(\mathbf{H}_0^{(L)} \mathbf{W}_p + \mathbf{b}_p)\, \mathbf{W}_o\big) .',
             ('ctxlib.models.heads.BertForSequenceClassification',),
             ('tests/test_heads.py::test_saved_heads_load_in_transformers_with_the_same_outputs', 'tests/test_heads.py::test_sequence_classification_loss_and_errors')),
    Equation("4.1", "queries, keys and values",
             r'\mathbf{Q} = \mathbf{H}\mathbf{W}_Q, \quad \mathbf{K} = \mathbf{H}\mathbf{W}_K, \quad \mathbf{V} = \mathbf{H}\mathbf{W}_V ,',
             ('ctxlib.layers.attention.MultiHeadSelfAttention',),
             ('tests/test_bert_math.py::test_multi_head_attention_equals_per_head_formula',)),
    Equation("4.2", "scaled dot-product attention weights",
             r'\mathbf{A} = \operatorname{softmax}\!\left(\frac{\mathbf{Q}\mathbf{K}^\top}{\sqrt{d_k}}\right) ,',
             ('ctxlib.layers.attention.scaled_dot_product_attention',),
             ('tests/test_bert_math.py::test_scaled_dot_product_matches_torch_reference_with_bias',)),
    Equation("4.3", "the attention output",
             r'\mathbf{O} = \mathbf{A}\mathbf{V} .',
             ('ctxlib.layers.attention.scaled_dot_product_attention',),
             ('tests/test_bert_math.py::test_scaled_dot_product_matches_torch_reference_with_bias',)),
    Equation("4.4", "multi-head attention",
             r'\operatorname{MultiHead}(\mathbf{H}) = \operatorname{Concat}(\text{head}_1, \ldots, \text{head}_h)\,\mathbf{W}_O ,',
             ('ctxlib.layers.attention.MultiHeadSelfAttention',),
             ('tests/test_bert_math.py::test_multi_head_attention_equals_per_head_formula', 'tests/test_bert_parity.py::test_minilm_hidden_states_and_attentions_match_transformers')),
    Equation("4.5", "one attention head",
             r'\text{head}_i = \operatorname{Attention}(\mathbf{H}\mathbf{W}_Q^i, \mathbf{H}\mathbf{W}_K^i, \mathbf{H}\mathbf{W}_V^i) .',
             ('ctxlib.layers.attention.MultiHeadSelfAttention',),
             ('tests/test_bert_math.py::test_multi_head_attention_equals_per_head_formula',)),
    Equation("4.6", "BERT's pretraining loss",
             r'\mathcal{L} = \mathcal{L}_{\text{MLM}} + \mathcal{L}_{\text{NSP}} .',
             ('ctxlib.models.bert.BertForPreTraining',),
             ('tests/test_bert_math.py::test_mlm_head_is_tied_and_losses_add_up', 'tests/test_bert_pretraining.py::test_training_runs_is_cached_and_fills_masks')),
    Equation("4.7", "the MLM loss with the tied output layer",
             r'\mathcal{L}_{\text{MLM}} = -\sum_{t \in \mathcal{M}} \log \frac{\exp(g(\mathbf{H}_t^{(L)}) \cdot \mathbf{e}_{w_t} + b_{w_t})}{\sum_{w \in V} \exp(g(\mathbf{H}_t^{(L)}) \cdot \mathbf{e}_{w} + b_{w})} ,',
             ('ctxlib.models.bert.BertLMPredictionHead', 'ctxlib.models.bert.mlm_cross_entropy'),
             ('tests/test_bert_math.py::test_mlm_head_is_tied_and_losses_add_up',)),
    Equation("4.8", "the NSP loss as a binary cross-entropy",
             r'\mathcal{L}_{\text{NSP}} = -\left[ y \log P(\text{IsNext}) + (1 - y) \log(1 - P(\text{IsNext})) \right] .',
             ('ctxlib.models.bert.BertForPreTraining',),
             ('tests/test_bert_math.py::test_mlm_head_is_tied_and_losses_add_up',)),
    Equation("5.1", "pretraining",
             r'\hat\theta = \arg\min_\theta \sum_{(w_1, \ldots, w_T)} \mathcal{L}_{\text{MLM}}(\theta) + \mathcal{L}_{\text{NSP}}(\theta) .',
             ('ctxlib.studies.bert_pretraining.book_bert',),
             ('tests/test_bert_pretraining.py::test_training_runs_is_cached_and_fills_masks',)),
    Equation("5.2", "fine-tuning from the pretrained weights",
             r"(\theta', \phi') = \arg\min_{\theta, \phi} \sum_{(x, y) \in \mathcal{D}_{\text{task}}} \mathcal{L}_{\text{task}}(y \mid x; \theta, \phi), \qquad \theta \text{ initialised at } \hat\theta .",
             ('ctxlib.studies.finetuning.fine_tune',),
             ('tests/test_finetuning.py::test_fine_tune_trains_once_and_caches',)),
    Equation("7.1", "ELECTRA's generator loss",
             r'\mathcal{L}_{\text{MLM}}(\theta_G) = -\sum_{t \in \mathcal{M}} \log p_G(x_t \mid \mathbf{x}^{\text{masked}}) .',
             ('ctxlib.models.electra.Electra',),
             ('tests/test_electra.py::test_forward_replaces_only_masked_tokens_and_weights_the_losses',)),
    Equation("7.2", "ELECTRA's discriminator loss (corrected)",
             r'\mathcal{L}_{\text{Disc}}(\theta_D) = -\sum_{t=1}^{T} \Big[ \mathbb{1}(\hat{x}_t \neq x_t) \log D(\hat{\mathbf{x}}, t) + \mathbb{1}(\hat{x}_t = x_t) \log\big(1 - D(\hat{\mathbf{x}}, t)\big) \Big] .',
             ('ctxlib.models.electra.discriminator_loss', 'ctxlib.models.electra.replaced_token_labels'),
             ('tests/test_electra.py::test_discriminator_loss_is_the_binary_cross_entropy_over_real_tokens_by_hand', 'tests/test_electra.py::test_a_sampled_token_equal_to_the_original_counts_as_original')),
)

# The notes' §8 formula sheet restates earlier equations under new numbers.
NOTES_SHEET = {"8.1": "2.1", "8.2": "2.3", "8.3": "2.5", "8.4": "3.1", "8.5": "3.4", "8.6": "4.6", "8.7": "4.2",
               "8.8": "4.4"}


def equation(number: str) -> Equation:
    """The registry entry of equation ``number`` ("3.2"); a number from the notes' §8 sheet
    ("8.4") gives the equation it restates."""
    number = NOTES_SHEET.get(number, number)
    for entry in EQUATIONS:
        if entry.number == number:
            return entry
    raise ValueError(f"number must be one of {[e.number for e in EQUATIONS] + list(NOTES_SHEET)}, got {number!r}")
