"""Bad configs and inputs raise ValueErrors that name the problem."""

import pytest
import torch

import hf_variants
from hf_variants import BertConfig
from tests.common.encoder_tester import TINY


def model(head="Model", **overrides):
    return getattr(hf_variants, f"Bert{head}")(BertConfig(**{**TINY, **overrides})).eval()


@pytest.mark.parametrize(
    "overrides,message",
    [
        (dict(hidden_size=30, num_attention_heads=4), "divisible by num_attention_heads"),
        (dict(position_embedding_type="rotary"), "position_embedding_type"),
        (dict(layer_sharing="some"), "layer_sharing"),
        (dict(hidden_dropout_prob=1.5), "hidden_dropout_prob"),
        (dict(pad_token_id=500), "pad_token_id"),
        (dict(vocab_size=0), "vocab_size"),
    ],
)
def test_invalid_config(overrides, message):
    """The config itself may hold the invalid combination (as in transformers); building a model
    from it raises a ValueError naming the field."""
    config = BertConfig(**{**TINY, **overrides})
    with pytest.raises(ValueError, match=message):
        hf_variants.BertModel(config)


def test_config_built_step_by_step():
    """A config edited one field at a time passes through invalid states: only the model build checks."""
    config = BertConfig(hidden_size=32)  # the default 12 heads do not divide 32
    with pytest.raises(ValueError, match=r"hidden_size \(32\) must be divisible by num_attention_heads \(12\)"):
        hf_variants.BertModel(config)
    config.num_attention_heads = 4
    config.intermediate_size = 37
    config.num_hidden_layers = 1
    assert hf_variants.BertModel(config).config.num_attention_heads == 4
    assert BertConfig.from_dict(BertConfig(hidden_size=32).to_dict()).hidden_size == 32


def test_ids_outside_vocabulary_name_the_id_and_size():
    with pytest.raises(ValueError, match=r"input_ids contains id 150.*vocab_size=99"):
        model()(torch.tensor([[1, 2, 150]]))
    with pytest.raises(ValueError, match=r"id -1"):
        model()(torch.tensor([[1, -1]]))


def test_sequence_longer_than_positions():
    with pytest.raises(ValueError, match=r"sequence length 65 exceeds max_position_embeddings \(64\)"):
        model()(torch.ones(1, 65, dtype=torch.long))


def test_token_type_out_of_range():
    with pytest.raises(ValueError, match=r"token_type_ids contains id 2.*type_vocab_size=2"):
        model()(torch.ones(1, 4, dtype=torch.long), token_type_ids=torch.tensor([[0, 1, 2, 0]]))


def test_mismatched_mask_shape():
    with pytest.raises(ValueError, match="attention_mask has shape"):
        model()(torch.ones(2, 4, dtype=torch.long), attention_mask=torch.ones(2, 5, dtype=torch.long))


def test_both_or_neither_ids_and_embeds():
    with pytest.raises(ValueError, match="exactly one of input_ids or inputs_embeds"):
        model()()


ids = torch.ones(2, 5, dtype=torch.long)


@pytest.mark.parametrize(
    "head,labels,message",
    [
        ("ForSequenceClassification", {"labels": torch.tensor([0, 3])}, r"labels contains class 3, outside \[0, 3\)"),
        ("ForSequenceClassification", {"labels": torch.tensor([0, 1, 2])}, r"labels has shape \(3,\), expected \(2,\)"),
        ("ForTokenClassification", {"labels": torch.zeros(2, 4, dtype=torch.long)}, r"labels has shape \(2, 4\)"),
        ("ForTokenClassification", {"labels": torch.full((2, 5), 7)}, "class 7"),
        ("ForMaskedLM", {"labels": torch.full((2, 5), 99)}, r"class 99, outside \[0, 99\)"),
        ("ForNextSentencePrediction", {"labels": torch.tensor([0, 2])}, r"^labels contains class 2"),
        (
            "ForQuestionAnswering",
            {"start_positions": torch.tensor([0]), "end_positions": torch.tensor([0, 1])},
            "start_positions has shape",
        ),
    ],
)
def test_bad_labels(head, labels, message):
    with pytest.raises(ValueError, match=message):
        model(head)(ids, **labels)


def test_regression_labels_of_wrong_size():
    with pytest.raises(ValueError, match="regression labels have shape"):
        model("ForSequenceClassification", num_labels=1)(ids, labels=torch.zeros(3))


def test_multiple_choice_needs_a_choice_dimension():
    with pytest.raises(ValueError, match=r"\(batch, num_choices, seq_len\)"):
        model("ForMultipleChoice")(ids)
