"""Beyond one device with accelerate's and transformers' own machinery, every variant and head:
``_no_split_modules`` names the layer class; ``device_map="auto"`` loads with CPU and disk
offload under ``max_memory`` and gives the outputs of the model in memory; meta-device
initialisation; gradient checkpointing recomputes every layer and leaves the gradients unchanged.
"""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForSequenceClassification
from transformers.modeling_layers import GradientCheckpointingLayer
from variant_cases import assert_outputs_equal, model_inputs, output_tensors, params, tiny_config, tiny_model

from accelerate import init_empty_weights
from hf_variants.models.named_configs import named_config
from hf_variants.registry import SPECS


def layer_class_names(model: torch.nn.Module) -> set[str]:
    return {type(module).__name__ for module in model.modules() if isinstance(module, GradientCheckpointingLayer)}


@pytest.mark.parametrize("spec,head", params(rotation=0))
def test_no_split_modules_name_the_repeated_layer(spec, head):
    """The layer class, and only classes of the model's own package (ViT adds its embeddings and
    MAE decoder, whose own parameters must stay with them)."""
    model = tiny_model(spec, head)
    layers = layer_class_names(model)
    assert layers, "the model has no checkpointable layer"
    assert layers <= set(model._no_split_modules)
    package_classes = {type(module).__name__ for cls in spec.classes.values() for module in cls(model.config).modules()}
    assert set(model._no_split_modules) <= package_classes


def model_bytes(model: torch.nn.Module) -> int:
    return sum(t.numel() * t.element_size() for t in model.state_dict().values())


@pytest.mark.parametrize("spec,head", params(rotation=1))
def test_device_map_auto_offloads_to_cpu_and_disk_with_equal_outputs(spec, head, tmp_path):
    model = tiny_model(spec, head, padding_free=False)
    inputs = model_inputs(spec, head, model)
    model.save_pretrained(tmp_path / "model")
    with torch.no_grad():
        torch.manual_seed(0)
        expected = model(**inputs)
    # Room on the CPU for about half the weights: the rest goes to the offload folder.
    offloaded = (
        spec.classes[head]
        .from_pretrained(
            tmp_path / "model",
            device_map="auto",
            max_memory={"cpu": model_bytes(model) // 2},
            offload_folder=str(tmp_path / "offload"),
        )
        .eval()
    )
    placements = set(offloaded.hf_device_map.values())
    assert "disk" in placements, offloaded.hf_device_map
    with torch.no_grad():
        torch.manual_seed(0)
        assert_outputs_equal(offloaded(**inputs), expected)


def test_bert_mini_classifier_loads_offloaded_like_transformers_bert(tmp_path):
    """The issue's case: bert-mini sequence classifier, max_memory={"cpu": "20MiB"}, an offload folder."""
    config = named_config("bert-mini")
    config.num_labels = 2
    torch.manual_seed(0)
    model = SPECS["hfv_bert"].classes["ForSequenceClassification"](config).eval()
    model.save_pretrained(tmp_path / "model")
    input_ids = torch.randint(5, 1000, (2, 12))
    attention_mask = torch.ones_like(input_ids)
    attention_mask[1, 8:] = 0
    offloaded = AutoModelForSequenceClassification.from_pretrained(
        tmp_path / "model", device_map="auto", max_memory={"cpu": "20MiB"}, offload_folder=str(tmp_path / "offload")
    )
    assert type(offloaded) is type(model)
    with torch.no_grad():
        got = offloaded(input_ids=input_ids, attention_mask=attention_mask).logits
        expected = model(input_ids=input_ids, attention_mask=attention_mask).logits
    torch.testing.assert_close(got, expected, atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("spec,head", params(rotation=2))
def test_meta_device_initialisation_then_loading_gives_the_model(spec, head):
    reference = tiny_model(spec, head, padding_free=False)
    inputs = model_inputs(spec, head, reference)
    with torch.device("meta"):
        on_meta = spec.classes[head](tiny_config(spec, padding_free=False))
    assert all(p.is_meta for p in on_meta.parameters())
    # accelerate's empty init keeps buffers (position ids, sinusoid tables) real; weights load by assignment.
    with init_empty_weights():
        empty = spec.classes[head](tiny_config(spec, padding_free=False))
    assert all(p.is_meta for p in empty.parameters())
    empty.load_state_dict(reference.state_dict(), assign=True)
    empty.tie_weights()
    with torch.no_grad():
        torch.manual_seed(0)  # heads that sample (MAE's masking) draw the same numbers
        expected = reference(**inputs)
        torch.manual_seed(0)
        assert_outputs_equal(empty.eval()(**inputs), expected)


def scalar_of(output) -> torch.Tensor:
    """A scalar depending on every floating output (a stand-in loss for heads without labels)."""
    return sum(t.float().pow(2).mean() for t in output_tensors(output).values() if t.is_floating_point())


def leaf_calls(model: torch.nn.Module, layer: torch.nn.Module, run) -> int:
    """How often the first parametrised submodule of ``layer`` runs during ``run()`` (forward and
    backward: a checkpointed layer runs it again in the backward pass)."""
    leaf = next(m for m in layer.modules() if m is not layer and any(True for _ in m.parameters(recurse=False)))
    calls = []
    handle = leaf.register_forward_hook(lambda *args: calls.append(1))
    try:
        run()
    finally:
        handle.remove()
    return len(calls)


@pytest.mark.parametrize("spec,head", params(rotation=3))
def test_gradient_checkpointing_recomputes_layers_and_keeps_gradients(spec, head):
    model = tiny_model(spec, head, padding_free=False).train()  # tiny_config turns dropout off
    inputs = model_inputs(spec, head, model)
    layer = next(m for m in model.modules() if isinstance(m, GradientCheckpointingLayer))
    torch.manual_seed(0)  # heads that sample (MAE's masking) draw the same numbers in both runs
    plain_calls = leaf_calls(model, layer, lambda: scalar_of(model(**inputs)).backward())
    expected = {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
    model.zero_grad(set_to_none=True)

    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    assert all(m.gradient_checkpointing for m in model.modules() if isinstance(m, GradientCheckpointingLayer))
    torch.manual_seed(0)
    checkpointed_calls = leaf_calls(model, layer, lambda: scalar_of(model(**inputs)).backward())
    assert checkpointed_calls == 2 * plain_calls, "the checkpointed layer was not recomputed in the backward pass"
    got = {name: p.grad for name, p in model.named_parameters() if p.grad is not None}
    assert got.keys() == expected.keys()
    for name, grad in expected.items():
        torch.testing.assert_close(got[name], grad, atol=1e-6, rtol=1e-5, msg=name)
