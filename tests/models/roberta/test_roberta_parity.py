"""Numerical parity with transformers' RoBERTa and XLM-RoBERTa classes, both conversion
directions (fp32, max abs diff <= 1e-5): every head, eager and sdpa, no / right / left padding,
ids and inputs_embeds, gradients, and ``Roberta<Head>.from_pretrained`` of folders saved by
transformers (converted on load by the one key map of ``models/roberta/weights.py``)."""

import shutil

import pytest
import torch
import transformers
from transformers.conversion_mapping import get_checkpoint_conversion_mapping

import hf_variants
from hf_variants.models.roberta.weights import KEY_MAP
from hf_variants.registry import HEAD_AUTO_CLASSES
from tests.common.encoder_tester import TINY
from tests.common.inputs import as_choices, make_inputs
from tests.common.parity import ATOL, assert_same_outputs
from tests.conversion.test_from_pretrained_transformers_checkpoints import assert_our_format

PAD = 1
FAMILIES = ("Roberta", "XLMRoberta")
THEIR_HEADS = [
    "Model",
    "ForMaskedLM",
    "ForSequenceClassification",
    "ForTokenClassification",
    "ForQuestionAnswering",
    "ForMultipleChoice",
]
SEQUENCE_LEVEL = {"ForSequenceClassification", "ForMultipleChoice"}


def reference(family: str, head: str, impl: str, seed: int = 0) -> transformers.PreTrainedModel:
    """A random tiny transformers model; RoBERTa's real layout (514-style positions: 64 rows, pad 1, one segment)."""
    config_class = getattr(transformers, f"{family}Config")
    num_labels = 2 if head == "ForQuestionAnswering" else TINY["num_labels"]  # their QA layer has num_labels outputs
    config = config_class(
        **{**TINY, "num_labels": num_labels, "type_vocab_size": 1, "pad_token_id": PAD, "layer_norm_eps": 1e-5}
    )
    config._attn_implementation = impl
    torch.manual_seed(seed)
    model = getattr(transformers, f"{family}{head}")(config).eval()
    with torch.no_grad():  # nothing stays at its zero init (biases, the LM bias), so every weight is tested
        for parameter in model.parameters():
            parameter.add_(torch.randn_like(parameter) * 0.02)
    return model


def roberta_inputs(head: str, padding: str, length: int = 12) -> dict:
    """<s> ... </s> rows of 12, 8 and 3 real tokens; padding "none", "right" or "left" (pad id 1, mask 0)."""
    inputs = make_inputs(TINY["vocab_size"], padding, length=length, low=3, pad_token_id=PAD)
    mask, rows = inputs["attention_mask"], torch.arange(3)
    first, last = mask.argmax(1), length - 1 - mask.flip(1).argmax(1)  # first / last real token per row
    inputs["input_ids"][rows, first], inputs["input_ids"][rows, last] = 0, 2
    return as_choices(inputs, 2) if head == "ForMultipleChoice" else inputs


def check_parity(theirs, ours, back, head, padding):
    inputs = roberta_inputs(head, padding)
    mask = inputs["attention_mask"]
    with torch.no_grad():
        # Every layer's states (runs padded), then the default fast paths (packed, last layer only where read).
        expected = theirs(**inputs, output_hidden_states=True)
        assert assert_same_outputs(expected, ours(**inputs, output_hidden_states=True), mask) >= 2
        assert assert_same_outputs(expected, back(**inputs, output_hidden_states=True), mask) >= 2
        fast = ours(**inputs)
        main = [k for k in fast.keys() if k not in ("hidden_states", "attentions", "pooler_output")]
        assert assert_same_outputs(expected, fast, mask, main, at_least=1) >= 1
        if head == "Model":
            torch.testing.assert_close(fast.pooler_output, expected.pooler_output, atol=ATOL, rtol=0)


@pytest.mark.parametrize("padding", ["right", "left"])  # row 0 is unpadded in both
@pytest.mark.parametrize("impl", ["eager", "sdpa"])
@pytest.mark.parametrize("head", THEIR_HEADS)
@pytest.mark.parametrize("family", FAMILIES)
def test_parity_both_directions(family, head, impl, padding):
    theirs = reference(family, head, impl)
    ours = hf_variants.from_transformers(theirs).eval()
    assert type(ours) is getattr(hf_variants, f"Roberta{head}") and ours.config.model_type == "hfv_roberta"
    back = hf_variants.to_transformers(ours, type(theirs)).eval()
    assert type(back) is type(theirs)
    their_state, back_state = theirs.state_dict(), back.state_dict()
    assert their_state.keys() == back_state.keys()
    for key, value in their_state.items():
        assert torch.equal(value, back_state[key]), key
    check_parity(theirs, ours, back, head, padding)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("padding", ["right", "left"])
def test_pretraining_model_is_their_masked_lm(family, padding):
    theirs = reference(family, "ForMaskedLM", "sdpa")
    ours = hf_variants.RobertaForPreTraining(hf_variants.from_transformers(theirs).config)
    ours.load_state_dict(hf_variants.from_transformers(theirs).state_dict())
    ours.eval()
    back = hf_variants.to_transformers(ours, type(theirs)).eval()
    assert type(back) is type(theirs)
    check_parity(theirs, ours, back, "ForMaskedLM", padding)


@pytest.mark.parametrize("family", FAMILIES)
def test_to_transformers_gives_back_the_family_it_came_from(family):
    """A round trip keeps the class: RoBERTa goes back to Roberta*, XLM-RoBERTa to XLMRoberta*;
    either can be asked for explicitly, and a class of another variant is refused."""
    theirs = reference(family, "ForSequenceClassification", "sdpa")
    ours = hf_variants.from_transformers(theirs)
    assert ours.config.transformers_family == theirs.config.model_type
    back = hf_variants.to_transformers(ours)
    assert type(back) is type(theirs) and back.config.model_type == theirs.config.model_type
    for other in FAMILIES:
        assert type(
            hf_variants.to_transformers(ours, getattr(transformers, f"{other}ForSequenceClassification"))
        ).__name__ == (f"{other}ForSequenceClassification")
    with pytest.raises(ValueError, match="of class BertForSequenceClassification"):
        hf_variants.to_transformers(ours, transformers.BertForSequenceClassification)


def test_a_model_built_by_us_converts_to_roberta_unless_its_config_says_xlm_roberta():
    assert (
        type(hf_variants.to_transformers(hf_variants.RobertaModel(hf_variants.RobertaConfig(**TINY))))
        is transformers.RobertaModel
    )
    xlmr = hf_variants.RobertaModel(hf_variants.RobertaConfig(**TINY, transformers_family="xlm-roberta"))
    assert type(hf_variants.to_transformers(xlmr)) is transformers.XLMRobertaModel
    assert hf_variants.named_config("xlmr-base").transformers_family == "xlm-roberta"
    assert hf_variants.named_config("roberta-base").transformers_family == "roberta"
    with pytest.raises(ValueError, match="transformers_family must be one of"):
        hf_variants.RobertaModel(hf_variants.RobertaConfig(**TINY, transformers_family="xlm"))


@pytest.mark.parametrize("head", ["ForMaskedLM", "ForPreTraining"])
def test_xlm_roberta_folder_round_trip_keeps_the_class_and_its_tokenizer(head, tmp_path):
    """An XLM-R folder saved by transformers -> ours -> saved in our format -> reloaded ->
    to_transformers: XLMRobertaForMaskedLM again with the same weights, and the folder it saves
    has model_type "xlm-roberta". That model_type is what maps a folder holding only tokenizer.json
    (as xlm-roberta-base on the Hub: no tokenizer_class recorded) to XLM-R's tokenizer: read as
    "roberta", the same file gives RobertaTokenizer and other ids."""
    theirs = reference("XLMRoberta", "ForMaskedLM", "sdpa")
    theirs.save_pretrained(tmp_path / "theirs")
    ours = getattr(hf_variants, f"Roberta{head}").from_pretrained(tmp_path / "theirs")
    assert ours.config.transformers_family == "xlm-roberta"
    ours.save_pretrained(tmp_path / "ours")
    reloaded = HEAD_AUTO_CLASSES[head].from_pretrained(tmp_path / "ours")
    assert reloaded.config.transformers_family == "xlm-roberta"
    back = hf_variants.to_transformers(reloaded)
    assert type(back) is transformers.XLMRobertaForMaskedLM
    for name, tensor in theirs.state_dict().items():
        assert torch.equal(back.state_dict()[name], tensor), name
    back.save_pretrained(tmp_path / "back")
    assert transformers.AutoConfig.from_pretrained(tmp_path / "back").model_type == "xlm-roberta"
    pieces = [
        ("<s>", 0.0),
        ("<pad>", 0.0),
        ("</s>", 0.0),
        ("<unk>", 0.0),
        ("\u2581a", -1.0),
        ("\u2581b", -2.0),
        ("<mask>", 0.0),
    ]
    transformers.XLMRobertaTokenizer(vocab=pieces).save_pretrained(tmp_path / "tokenizer")
    shutil.copy(tmp_path / "tokenizer" / "tokenizer.json", tmp_path / "back")
    tokenizer = transformers.AutoTokenizer.from_pretrained(tmp_path / "back")
    assert type(tokenizer) is transformers.XLMRobertaTokenizer and tokenizer("a b")["input_ids"] == [0, 4, 5, 2]


@pytest.mark.parametrize("impl", ["eager", "sdpa"])
@pytest.mark.parametrize("head", ["Model", "ForMaskedLM", "ForTokenClassification"])
def test_inputs_embeds_with_padding(head, impl):
    """inputs_embeds: positions p+1..p+T on every row (nothing marks padding), on both sides."""
    theirs = reference("Roberta", head, impl)
    ours = hf_variants.from_transformers(theirs).eval()
    inputs = roberta_inputs(head, "right")
    embeds = theirs.get_input_embeddings()(inputs.pop("input_ids"))
    with torch.no_grad():
        expected = theirs(inputs_embeds=embeds, **inputs)
        got = ours(inputs_embeds=embeds, **inputs)
    assert assert_same_outputs(expected, got, inputs["attention_mask"], at_least=1) >= 1


GRADIENT_LABELS = {
    "ForMaskedLM": lambda ids, g: {
        "labels": ids.masked_fill(torch.rand(ids.shape, generator=g) > 0.4, -100).masked_fill(ids == PAD, -100)
    },
    "ForSequenceClassification": lambda ids, g: {"labels": torch.tensor([0, 2, 1])},
    "ForTokenClassification": lambda ids, g: {
        "labels": torch.randint(0, 3, ids.shape, generator=g).masked_fill(ids == PAD, -100)
    },
    "ForQuestionAnswering": lambda ids, g: {
        "start_positions": torch.tensor([1, 2, 0]),
        "end_positions": torch.tensor([3, 5, 1]),
    },
    "ForMultipleChoice": lambda ids, g: {"labels": torch.tensor([1, 0, 1])},
}


@pytest.mark.parametrize("padding", ["right", "left"])
@pytest.mark.parametrize("head", list(GRADIENT_LABELS))
def test_gradients_match_transformers(head, padding):
    theirs = reference("Roberta", head, "eager")
    ours = hf_variants.from_transformers(theirs).eval()
    inputs = roberta_inputs(head, padding)
    ids = inputs["input_ids"] if head != "ForMultipleChoice" else inputs["input_ids"][:, 0]
    labels = GRADIENT_LABELS[head](ids, torch.Generator().manual_seed(2))
    loss_theirs, loss_ours = theirs(**inputs, **labels).loss, ours(**inputs, **labels).loss
    torch.testing.assert_close(loss_ours, loss_theirs, atol=ATOL, rtol=0)
    loss_theirs.backward()
    loss_ours.backward()
    our_grads = KEY_MAP.adapter(head).to_theirs(
        {name: p.grad if p.grad is not None else torch.zeros_like(p) for name, p in ours.named_parameters()}
    )
    their_params = dict(theirs.named_parameters())
    assert set(their_params) <= set(our_grads)
    for name, p in their_params.items():
        their_grad = p.grad if p.grad is not None else torch.zeros_like(p)
        torch.testing.assert_close(our_grads[name], their_grad, atol=ATOL, rtol=0, msg=name)


OUTPUT_KEYS = ["last_hidden_state", "pooler_output", "hidden_states", "logits", "start_logits", "end_logits"]


@pytest.mark.parametrize("head", THEIR_HEADS + ["ForPreTraining"])
@pytest.mark.parametrize("family", FAMILIES)
def test_from_pretrained_of_a_folder_saved_by_transformers(family, head, tmp_path):
    """``hf_variants.Roberta<Head>.from_pretrained(<Roberta<Head> / XLMRoberta<Head> folder>)``:
    every weight converted on load by the key map (nothing missing or left over), transformers'
    outputs (every layer's states too); the Auto classes load it the same way after
    ``import hf_variants`` (via ``load_pretrained``), and the re-saved folder is ours."""
    their_head = "ForMaskedLM" if head == "ForPreTraining" else head  # RoBERTa pretrains by MLM alone
    theirs = reference(family, their_head, "sdpa")
    theirs.save_pretrained(tmp_path / "theirs")
    our_class = getattr(hf_variants, f"Roberta{head}")
    ours, info = our_class.from_pretrained(tmp_path / "theirs", output_loading_info=True)
    assert type(ours) is our_class and ours.config.model_type == "hfv_roberta" and not ours.training
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"]
    inputs = roberta_inputs(their_head, "left")
    mask = inputs["attention_mask"]
    with torch.no_grad():
        expected = theirs(**inputs, output_hidden_states=True)
        assert assert_same_outputs(expected, ours(**inputs, output_hidden_states=True), mask, OUTPUT_KEYS) >= 2

    # Through the Auto class of the head: our class for it (AutoModelForPreTraining: our MLM pretraining model).
    auto = hf_variants.load_pretrained(str(tmp_path / "theirs"), HEAD_AUTO_CLASSES[head])
    assert type(auto) is our_class
    assert_our_format(auto, tmp_path / "ours")
    again = HEAD_AUTO_CLASSES[head].from_pretrained(tmp_path / "ours")
    assert type(again) is our_class
    with torch.no_grad():
        assert assert_same_outputs(expected, auto(**inputs, output_hidden_states=True), mask, OUTPUT_KEYS) >= 2
        assert assert_same_outputs(expected, again(**inputs, output_hidden_states=True), mask, OUTPUT_KEYS) >= 2


@pytest.mark.parametrize(
    "head",
    ["ForMaskedLM", "ForSequenceClassification", "ForTokenClassification", "ForQuestionAnswering", "ForMultipleChoice"],
)
@pytest.mark.parametrize("family", FAMILIES)
def test_base_checkpoint_into_a_head_model_reports_the_new_head(family, head, tmp_path):
    """A bare (XLM)RobertaModel folder into a head model: the whole encoder loads, the task head is
    the reported (normal) missing part, as in transformers; the pooler, which only multiple choice
    reads, is reported unused by the others."""
    theirs = reference(family, "Model", "sdpa")
    theirs.save_pretrained(tmp_path)
    our_class = getattr(hf_variants, f"Roberta{head}")
    labels = {} if head == "ForMaskedLM" else {"num_labels": 5}
    ours, info = our_class.from_pretrained(tmp_path, output_loading_info=True, **labels)
    head_parameters = {name for name, _ in ours.named_parameters() if not name.startswith("roberta.")}
    assert head_parameters and set(info["missing_keys"]) == head_parameters
    assert all(key.endswith(("pooler.dense.weight", "pooler.dense.bias")) for key in info["unexpected_keys"])
    assert bool(info["unexpected_keys"]) == (ours.roberta.pooler is None)
    assert ours.config.num_labels == labels.get("num_labels", 3)
    # The same report through the Auto class.
    _, auto_info = hf_variants.load_pretrained(
        str(tmp_path), HEAD_AUTO_CLASSES[head], output_loading_info=True, **labels
    )
    assert sorted(auto_info["missing_keys"]) == sorted(info["missing_keys"])
    inputs = roberta_inputs("Model", "right")
    with torch.no_grad():
        expected = theirs(**inputs)
        got = ours.roberta(**inputs)
    assert assert_same_outputs(expected, got, inputs["attention_mask"], ["last_hidden_state"], at_least=1) == 1
    if head == "ForMultipleChoice":  # the one head that keeps (and loads) the pooler
        torch.testing.assert_close(got.pooler_output, expected.pooler_output, atol=ATOL, rtol=0)


def test_one_key_map_serves_both_families_and_every_direction():
    """The load-time mapping registered for hfv_roberta, and the adapters of the Roberta* and
    XLMRoberta* pairs, all come from KEY_MAP; Roberta* is each head's default family."""
    assert [repr(t) for t in get_checkpoint_conversion_mapping("hfv_roberta")] == [
        repr(t) for t in KEY_MAP.checkpoint_conversion()
    ]
    pairs = [p for p in hf_variants.conversion.PAIRS if p.weights.model_type == "hfv_roberta"]
    for head in KEY_MAP.heads:
        their_head = "ForMaskedLM" if head == "ForPreTraining" else head
        ours = getattr(hf_variants, f"Roberta{head}")
        assert [p.theirs.__name__ for p in pairs if p.ours is ours] == [
            f"Roberta{their_head}",
            f"XLMRoberta{their_head}",
        ]
        assert all(p.adapter.renames == KEY_MAP.adapter(head).renames for p in pairs if p.ours is ours)


def test_checkpoints_of_bert_and_roberta_do_not_cross(tmp_path):
    """BERT and RoBERTa share the encoder's weight names but not its positions (RoBERTa's are offset
    by the padding index): neither variant reads the other's transformers checkpoints."""
    reference("Roberta", "Model", "sdpa").save_pretrained(tmp_path / "roberta")
    config = transformers.BertConfig(**{k: v for k, v in TINY.items() if k != "num_labels"})
    transformers.BertModel(config).save_pretrained(tmp_path / "bert")
    with pytest.raises(ValueError, match=r"model_type 'roberta'.*BertConfig reads only 'hfv_bert', 'bert'"):
        hf_variants.BertModel.from_pretrained(tmp_path / "roberta")
    with pytest.raises(
        ValueError, match=r"model_type 'bert'.*RobertaConfig reads only 'hfv_roberta', 'roberta', 'xlm-roberta'"
    ):
        hf_variants.RobertaModel.from_pretrained(tmp_path / "bert")


def test_transformers_own_roberta_classes_are_unaffected(tmp_path):
    """The conversion is registered under our model_type only: transformers' classes load their folders as before."""
    theirs = reference("XLMRoberta", "ForMaskedLM", "sdpa")
    theirs.save_pretrained(tmp_path)
    reloaded = transformers.AutoModelForMaskedLM.from_pretrained(tmp_path)
    assert type(reloaded) is transformers.XLMRobertaForMaskedLM
    for name, tensor in theirs.state_dict().items():
        torch.testing.assert_close(reloaded.state_dict()[name], tensor, atol=0, rtol=0)


@pytest.mark.parametrize(
    "bad", [dict(pre_layer_norm=True), dict(layer_sharing="all"), dict(type_vocab_size=0), dict(norm_type="rms_norm")]
)
def test_to_transformers_refuses_what_roberta_cannot_express(bad):
    model = hf_variants.RobertaModel(hf_variants.RobertaConfig(**{**TINY, **bad}))
    with pytest.raises(ValueError, match=next(iter(bad))):
        hf_variants.to_transformers(model)
