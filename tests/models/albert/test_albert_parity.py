"""Numerical parity with transformers' ALBERT, every head, both conversion directions, eager and
sdpa, no / right / left padding, with one shared layer and with groups of layers
(num_hidden_groups > 1, inner_group_num > 1), on both paths of the speed plug-in; fp32, max abs
diff <= 1e-5."""

import pytest
import torch
import transformers
from safetensors import safe_open
from transformers import AutoModelForQuestionAnswering

import hf_variants
from hf_variants.models.albert.weights import config_to_theirs
from tests.common.inputs import make_inputs
from tests.common.parity import assert_same_outputs, at_real_tokens, grads_as_model

HEADS = list(hf_variants.registry.SPECS["hfv_albert"].classes)
ATOL = 1e-5
TINY = dict(
    vocab_size=99,
    embedding_size=16,
    hidden_size=32,
    num_attention_heads=4,
    intermediate_size=37,
    max_position_embeddings=64,
    hidden_dropout_prob=0.1,
    attention_probs_dropout_prob=0.1,
)
# (num_hidden_layers, num_hidden_groups, inner_group_num): one shared layer (the released models'
# layout), groups with inner layers, and uneven groups (transformers' int(i / (5 / 3))).
GROUPINGS = {"shared": (2, 1, 1), "groups": (3, 2, 2), "uneven": (5, 3, 1)}
# Both paths of the speed plug-in (config.padding_free, hf_variants/modules/fast_path.py): the plain
# PyTorch path, and the padding-free / last-layer-only path that runs on CPU by default.
PATHS = {"plain": False, "fast": True}


def reference(head: str, impl: str, grouping: str = "shared") -> transformers.PreTrainedModel:
    layers, groups, inner = GROUPINGS[grouping]
    config = transformers.AlbertConfig(
        **TINY,
        num_hidden_layers=layers,
        num_hidden_groups=groups,
        inner_group_num=inner,
        num_labels=2 if head in ("ForQuestionAnswering", "ForPreTraining") else 3,
    )
    config._attn_implementation = impl
    torch.manual_seed(0)
    return getattr(transformers, f"Albert{head}")(config).eval()


def albert_inputs(head: str, padding: str, segments: bool = True) -> dict:
    return make_inputs(
        TINY["vocab_size"], padding, segments=segments, choices=2 if head == "ForMultipleChoice" else None
    )


def check_parity(head: str, impl: str, padding: str, grouping: str, path: str) -> None:
    theirs = reference(head, impl, grouping)
    ours = hf_variants.from_transformers(theirs).eval()
    assert type(ours).__module__.startswith("hf_variants") and ours.config.model_type == "hfv_albert"
    ours.config.padding_free = PATHS[path]
    back = hf_variants.to_transformers(ours).eval()
    assert type(back) is type(theirs) and back.config.to_dict() == theirs.config.to_dict()
    # Same class, same config, bit-identical tensors: the reverse direction gives transformers' outputs.
    assert back.state_dict().keys() == theirs.state_dict().keys()
    for key, value in theirs.state_dict().items():
        assert torch.equal(value, back.state_dict()[key]), key
    inputs = albert_inputs(head, padding)
    with torch.no_grad():
        # Every layer's states are the plain path's to return (the fast path steps aside for them).
        expected = theirs(**inputs, output_hidden_states=True)
        got = ours(**inputs, output_hidden_states=True)
        assert len(got.hidden_states) == len(expected.hidden_states)
        assert_same_outputs(expected, got, inputs["attention_mask"])
        if head == "ForPreTraining":
            torch.testing.assert_close(got.sop_logits, expected.sop_logits, atol=ATOL, rtol=0)
        # The heads' outputs alone: on the "fast" path padding-free, last layer only where read.
        plain, reference_plain = ours(**inputs), theirs(**inputs)
        for key, value in reference_plain.items():
            mask = inputs["attention_mask"]
            torch.testing.assert_close(at_real_tokens(plain[key], mask), at_real_tokens(value, mask), atol=ATOL, rtol=0)


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("impl", ["eager", "sdpa"])
@pytest.mark.parametrize("head", HEADS)
@pytest.mark.parametrize("padding", ["none", "right", "left"])
def test_parity_both_directions(head, impl, padding, path):
    check_parity(head, impl, padding, "shared", path)


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("head", HEADS)
@pytest.mark.parametrize("grouping, impl, padding", [("groups", "sdpa", "right"), ("uneven", "eager", "left")])
def test_parity_with_layer_groups(head, grouping, impl, padding, path):
    check_parity(head, impl, padding, grouping, path)


def test_groups_map_onto_stored_layers():
    theirs = reference("Model", "eager", "groups")  # 2 groups x 2 inner layers
    ours = hf_variants.from_transformers(theirs)
    assert (ours.config.layer_sharing, ours.config.num_hidden_groups, ours.config.inner_group_num) == ("all", 2, 2)
    assert len(ours.encoder.layers) == 4
    group, inner = theirs.encoder.albert_layer_groups[1].albert_layers[0], 2  # stored at 1 * 2 + 0
    assert torch.equal(ours.encoder.layers[inner].ffn.down.weight, group.ffn_output.weight)
    assert torch.equal(ours.embeddings.projection.weight, theirs.encoder.embedding_hidden_mapping_in.weight)


def test_unshared_converts_as_one_group_per_layer():
    ours = hf_variants.AlbertModel(hf_variants.AlbertConfig(**TINY, num_hidden_layers=3, layer_sharing="none")).eval()
    theirs = hf_variants.to_transformers(ours).eval()
    assert (theirs.config.num_hidden_groups, theirs.config.inner_group_num) == (3, 1)
    again = hf_variants.from_transformers(theirs)
    assert again.config.layer_sharing == "none"
    inputs = albert_inputs("Model", "right")
    with torch.no_grad():
        assert_same_outputs(
            theirs(**inputs, output_hidden_states=True),
            ours(**inputs, output_hidden_states=True),
            inputs["attention_mask"],
        )


@pytest.mark.parametrize("sharing", ["attention", "ffn"])
def test_to_transformers_refuses_sub_block_sharing(sharing):
    model = hf_variants.AlbertModel(hf_variants.AlbertConfig(**TINY, num_hidden_layers=2, layer_sharing=sharing))
    with pytest.raises(ValueError, match="layer_sharing"):
        hf_variants.to_transformers(model)


def test_config_translation_both_ways():
    theirs = transformers.AlbertConfig(
        **TINY, num_hidden_layers=4, num_hidden_groups=2, inner_group_num=3, classifier_dropout_prob=0.25
    )
    ours = hf_variants.models.albert.weights.config_to_ours(theirs)
    assert (ours.embedding_size, ours.num_hidden_groups, ours.inner_group_num, ours.classifier_dropout) == (
        16,
        2,
        3,
        0.25,
    )
    back = config_to_theirs(ours)
    for name in (
        "embedding_size",
        "hidden_size",
        "num_hidden_layers",
        "num_hidden_groups",
        "inner_group_num",
        "hidden_act",
        "classifier_dropout_prob",
        "layer_norm_eps",
        "intermediate_size",
    ):
        assert getattr(back, name) == getattr(theirs, name), name


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("grouping", ["shared", "groups"])
def test_pretraining_losses_and_gradients_match_transformers(grouping, sparse, path):
    """MLM + SOP through shared layers: the loss, and every gradient (summed over the depths a
    shared tensor serves), equal transformers', on both paths, with and without sparse prediction
    (the last layer then computes the masked positions and [CLS] alone)."""
    theirs = reference("ForPreTraining", "eager", grouping)
    ours = hf_variants.from_transformers(theirs).eval()
    ours.config.padding_free, ours.config.sparse_prediction = PATHS[path], sparse
    inputs = albert_inputs("ForPreTraining", "right")
    g = torch.Generator().manual_seed(2)
    labels = {
        "labels": inputs["input_ids"]
        .masked_fill(torch.rand(3, 12, generator=g) > 0.4, -100)
        .masked_fill(inputs["attention_mask"] == 0, -100),
        "sentence_order_label": torch.tensor([0, 1, 1]),
    }
    loss_theirs, loss_ours = theirs(**inputs, **labels).loss, ours(**inputs, **labels)
    torch.testing.assert_close(loss_ours.loss, loss_theirs, atol=ATOL, rtol=0)
    assert loss_ours.mlm_loss is not None and loss_ours.sop_loss is not None
    loss_theirs.backward()
    loss_ours.loss.backward()
    grads_ours = hf_variants.to_transformers(grads_as_model(ours)).state_dict()
    for name, p in theirs.named_parameters():
        torch.testing.assert_close(grads_ours[name], p.grad, atol=ATOL, rtol=0, msg=name)


@pytest.mark.parametrize("head", HEADS)
@pytest.mark.parametrize("grouping", ["shared", "uneven"])
def test_from_pretrained_of_a_folder_saved_by_transformers(head, grouping, tmp_path):
    """``AlbertX.from_pretrained(<folder saved by transformers' AlbertX>)`` (what albert/albert-base-v2
    is) converts on load through the key map: every weight found, outputs equal transformers'; and
    ``save_pretrained`` afterwards writes our own names."""
    theirs = reference(head, "sdpa", grouping)
    theirs.save_pretrained(tmp_path / "theirs")
    ours, info = getattr(hf_variants, f"Albert{head}").from_pretrained(tmp_path / "theirs", output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"]
    assert ours.config.model_type == "hfv_albert" and ours.config.num_hidden_groups == GROUPINGS[grouping][1]
    inputs = albert_inputs(head, "right")
    with torch.no_grad():
        expected, got = theirs(**inputs), ours.eval()(**inputs)
    for key, value in expected.items():
        mask = inputs["attention_mask"]
        torch.testing.assert_close(at_real_tokens(got[key], mask), at_real_tokens(value, mask), atol=ATOL, rtol=0)
    if head == "ForPreTraining":
        ours.save_pretrained(tmp_path / "ours")
        with safe_open(tmp_path / "ours" / "model.safetensors", "pt") as saved:
            assert "albert.encoder.layers.0.attention.qkv.weight" in set(saved.keys())
            assert "sop_classifier.out_proj.weight" in set(saved.keys())


def test_load_pretrained_reads_a_transformers_folder(tmp_path):
    theirs = reference("ForQuestionAnswering", "sdpa", "shared")
    theirs.save_pretrained(tmp_path)
    ours = hf_variants.load_pretrained(str(tmp_path), AutoModelForQuestionAnswering).eval()
    assert type(ours) is hf_variants.AlbertForQuestionAnswering
    inputs = albert_inputs("ForQuestionAnswering", "left")
    with torch.no_grad():
        torch.testing.assert_close(ours(**inputs).start_logits, theirs(**inputs).start_logits, atol=ATOL, rtol=0)


def test_inner_groups_load_through_from_transformers_not_from_pretrained(tmp_path):
    """Inner layers renumber as g * inner_group_num + j, which load-time renames cannot compute:
    from_pretrained refuses such a folder naming the route that works, and that route is exact."""
    theirs = reference("ForMaskedLM", "sdpa", "groups")
    theirs.save_pretrained(tmp_path)
    with pytest.raises(ValueError, match="inner_group_num=2.*from_transformers"):
        hf_variants.AlbertForMaskedLM.from_pretrained(tmp_path)
    ours = hf_variants.from_transformers(transformers.AlbertForMaskedLM.from_pretrained(tmp_path)).eval()
    inputs = albert_inputs("ForMaskedLM", "right")
    with torch.no_grad():
        assert_same_outputs(
            theirs(**inputs, output_hidden_states=True),
            ours(**inputs, output_hidden_states=True),
            inputs["attention_mask"],
        )
