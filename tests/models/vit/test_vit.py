"""ViT through the shared checks that apply to images, plus ViT's own behaviour: shapes, position
interpolation, bad input, ViTImageProcessor + pipeline("image-classification") offline, named configs."""

import os
import subprocess
import sys

import numpy as np
import pytest
import torch
import transformers
from PIL import Image
from transformers import AutoImageProcessor, AutoModelForImageClassification, ViTImageProcessor, pipeline

import hf_variants
from hf_variants import ViTConfig
from tests.common.encoder_tester import (
    EncoderTester,
    check_backends_agree,
    check_gradient_flow,
    check_loss,
    check_save_load,
)

HEADS = list(hf_variants.registry.SPECS["hfv_vit"].classes)
TINY_VIT = dict(
    image_size=32,
    patch_size=8,
    num_channels=3,
    encoder_stride=8,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=37,
    num_labels=3,
    hidden_dropout_prob=0.1,
    attention_probs_dropout_prob=0.1,
    decoder_hidden_size=16,
    decoder_num_hidden_layers=1,
    decoder_num_attention_heads=2,
    decoder_intermediate_size=24,
)
NUM_PATCHES = 16


class ImageTester(EncoderTester):
    """The shared tester with pixel inputs (3 images of 32 x 32) and each image head's labels."""

    def config(self, **overrides):
        return self.config_class(**{**TINY_VIT, **self.config_overrides, **overrides})

    def inputs(self, head: str, labels: bool = True, seed: int = 0) -> dict[str, torch.Tensor]:
        g = torch.Generator().manual_seed(seed)
        inputs = {"pixel_values": torch.randn(self.batch_size, 3, 32, 32, generator=g)}
        if head == "ForPreTraining":  # a fixed mask, so two calls see the same patches
            inputs["noise"] = torch.rand(self.batch_size, NUM_PATCHES, generator=g)
        if labels and head == "ForImageClassification":
            inputs["labels"] = torch.randint(0, 3, (self.batch_size,), generator=g)
        if labels and head == "ForMaskedImageModeling":
            inputs["bool_masked_pos"] = torch.rand(self.batch_size, NUM_PATCHES, generator=g) < 0.5
        return inputs


TESTER = ImageTester(
    ViTConfig,
    {head: cls for head, cls in hf_variants.registry.SPECS["hfv_vit"].classes.items()},
    main_outputs={
        "ForImageClassification": "logits",
        "ForMaskedImageModeling": "reconstruction",
        "ForPreTraining": "logits",
    },
)


@pytest.mark.parametrize("head", HEADS)
@pytest.mark.parametrize("check", [check_loss, check_gradient_flow, check_backends_agree], ids=lambda c: c.__name__)
def test_shared_checks(check, head):
    check(TESTER, head)


@pytest.mark.parametrize("head", HEADS)
def test_save_load_round_trip(head, tmp_path):
    check_save_load(TESTER, head, tmp_path)


def test_registered_with_the_auto_classes():
    config = TESTER.config()
    assert type(transformers.AutoModel.from_config(config)) is hf_variants.ViTModel
    assert (
        type(transformers.AutoModelForImageClassification.from_config(config)) is hf_variants.ViTForImageClassification
    )
    assert (
        type(transformers.AutoModelForMaskedImageModeling.from_config(config)) is hf_variants.ViTForMaskedImageModeling
    )
    assert type(transformers.AutoModelForPreTraining.from_config(config)) is hf_variants.ViTForPreTraining
    assert hf_variants.ViTModel.main_input_name == "pixel_values"


def test_forward_shapes():
    pixels = TESTER.inputs("Model", labels=False)["pixel_values"]
    with torch.no_grad():
        out = TESTER.model("Model").eval()(pixels, output_hidden_states=True, output_attentions=True)
        assert out.last_hidden_state.shape == (3, 1 + NUM_PATCHES, 32) and out.pooler_output.shape == (3, 32)
        assert len(out.hidden_states) == 3 and out.attentions[0].shape == (3, 4, 17, 17)
        assert TESTER.model("ForImageClassification").eval()(pixels).logits.shape == (3, 3)
        assert TESTER.model("ForMaskedImageModeling").eval()(pixels).reconstruction.shape == (3, 3, 32, 32)
        no_pooler = hf_variants.ViTModel(TESTER.config(), add_pooling_layer=False).eval()
        assert no_pooler.pooler is None and no_pooler(pixels).pooler_output is None


def test_each_image_alone_gives_its_batch_outputs():
    model = TESTER.model("ForImageClassification").eval()
    pixels = TESTER.inputs("Model", labels=False)["pixel_values"]
    with torch.no_grad():
        batched = model(pixels).logits
        for i in range(3):
            torch.testing.assert_close(model(pixels[i : i + 1]).logits[0], batched[i], atol=1e-5, rtol=0)


def test_position_interpolation():
    """At the training size the table is used as stored; at another size it is resized bicubically,
    [CLS] row kept, and the model runs on the new number of patches."""
    model = TESTER.model("Model").eval()
    pixels = TESTER.inputs("Model", labels=False)["pixel_values"]
    with torch.no_grad():
        torch.testing.assert_close(
            model(pixels, interpolate_pos_encoding=True).last_hidden_state,
            model(pixels).last_hidden_state,
            atol=0,
            rtol=0,
        )
        bigger = torch.randn(2, 3, 64, 48)
        assert model(bigger, interpolate_pos_encoding=True).last_hidden_state.shape == (2, 1 + 8 * 6, 32)
        embeddings = model.embeddings
        table = embeddings.interpolate_pos_encoding(torch.zeros(1, 1 + 48, 32), 64, 48)
        torch.testing.assert_close(table[:, 0], embeddings.position_embeddings[:, 0], atol=0, rtol=0)
        grid = embeddings.position_embeddings[0, 1:].reshape(4, 4, 32).permute(2, 0, 1)[None]
        expected = torch.nn.functional.interpolate(grid, size=(8, 6), mode="bicubic", align_corners=False)
        torch.testing.assert_close(table[0, 1:], expected[0].permute(1, 2, 0).reshape(48, 32), atol=1e-6, rtol=0)


def test_padding_free_switch_selects_the_path():
    """``config.padding_free`` (the speed plug-in, modules/fast_path.py): on, a CPU batch whose
    attention mask pads rows runs packed, (N, H) per token, and the classifier's last layer computes
    [CLS] alone, (B, 1, H); off, every layer sees the padded (B, 1 + N, H) batch. Same logits."""
    model = TESTER.model("ForImageClassification").eval()
    pixels = TESTER.inputs("Model", labels=False)["pixel_values"]
    mask = torch.ones(3, 1 + NUM_PATCHES, dtype=torch.long)
    mask[:, 5:] = 0  # most tokens hidden: worth packing
    shapes, logits = {}, {}
    for padding_free in (True, False):
        model.config.padding_free = padding_free
        seen = []
        hooks = [
            layer.ffn.register_forward_hook(lambda m, args, out, seen=seen: seen.append(tuple(out.shape)))
            for layer in model.vit.encoder.layers
        ]
        with torch.no_grad():
            logits[padding_free] = model(pixels, attention_mask=mask).logits
        for hook in hooks:
            hook.remove()
        shapes[padding_free] = seen
    assert shapes[True] == [(3 * 5, 32), (3, 1, 32)]
    assert shapes[False] == [(3, 1 + NUM_PATCHES, 32)] * 2
    torch.testing.assert_close(logits[True], logits[False], atol=1e-6, rtol=0)


def test_classifier_reads_the_final_norm_cls_state():
    model = TESTER.model("ForImageClassification").eval()
    pixels = TESTER.inputs("Model", labels=False)["pixel_values"]
    with torch.no_grad():
        cls = model.vit(pixels).last_hidden_state[:, 0]
        torch.testing.assert_close(model(pixels).logits, model.classifier(cls), atol=1e-6, rtol=0)


def test_simmim_loss_is_l1_over_masked_pixels():
    model = TESTER.model("ForMaskedImageModeling").eval()
    inputs = TESTER.inputs("ForMaskedImageModeling")
    with torch.no_grad():
        out = model(**inputs)
    pixel_mask = torch.zeros(3, 1, 32, 32, dtype=torch.bool)
    for b in range(3):
        for n in inputs["bool_masked_pos"][b].nonzero().flatten().tolist():
            row, col = divmod(n, 4)
            pixel_mask[b, :, row * 8 : (row + 1) * 8, col * 8 : (col + 1) * 8] = True
    errors = (out.reconstruction - inputs["pixel_values"]).abs() * pixel_mask
    torch.testing.assert_close(out.loss, errors.sum() / (pixel_mask.sum() + 1e-5) / 3, atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda m: m(torch.randn(2, 1, 32, 32)), "channels"),
        (lambda m: m(torch.randn(2, 3, 48, 48)), "interpolate_pos_encoding"),
        (lambda m: m(torch.randn(3, 32, 32)), "batch, channels, height, width"),
        (lambda m: m(None), "pixel_values are required"),
        (
            lambda m: m(torch.randn(2, 3, 32, 32), bool_masked_pos=torch.zeros(2, 16, dtype=torch.bool)),
            "use_mask_token",
        ),
    ],
)
def test_bad_inputs_to_the_model(call, match):
    with pytest.raises(ValueError, match=match):
        call(TESTER.model("Model").eval())


def test_bad_inputs_to_the_heads():
    pixels = torch.randn(2, 3, 32, 32)
    with pytest.raises(ValueError, match="outside"):
        TESTER.model("ForImageClassification")(pixels, labels=torch.tensor([0, 7]))
    with pytest.raises(ValueError, match="bool_masked_pos has shape"):
        TESTER.model("ForMaskedImageModeling")(pixels, bool_masked_pos=torch.zeros(2, 9, dtype=torch.bool))
    with pytest.raises(ValueError, match="encoder_stride"):
        TESTER.model("ForMaskedImageModeling", encoder_stride=4)(
            pixels, bool_masked_pos=torch.zeros(2, 16, dtype=torch.bool)
        )
    with pytest.raises(ValueError, match="noise has shape"):
        TESTER.model("ForPreTraining")(pixels, noise=torch.rand(2, 5))


@pytest.mark.parametrize(
    "overrides,match",
    [
        (dict(image_size=30), "multiple of patch_size"),
        (dict(pre_layer_norm=False), "pre-LN"),
        (dict(mask_ratio=1.0), "mask_ratio"),
        (dict(decoder_hidden_size=15), "decoder_num_attention_heads"),
        (dict(num_channels=0), "num_channels"),
        (dict(summary_type="mean"), "summary_type"),
        (dict(image_size=[32, 32]), "image_size must be an int"),
    ],
)
def test_invalid_configs(overrides, match):
    """Checked when a model is built from the config (a config may pass through invalid states while edited)."""
    with pytest.raises(ValueError, match=match):
        hf_variants.ViTModel(ViTConfig(**{**TINY_VIT, **overrides}))


def test_image_processor_and_pipeline_offline(tmp_path):
    """A saved classifier + ViTImageProcessor folder: AutoImageProcessor and
    pipeline("image-classification") load it offline and classify a PIL image with our model."""
    labels = ["cat", "dog", "bird"]
    config = TESTER.config(id2label=dict(enumerate(labels)), label2id={name: i for i, name in enumerate(labels)})
    model = hf_variants.ViTForImageClassification(config).eval()
    model.save_pretrained(tmp_path)
    ViTImageProcessor(size={"height": 32, "width": 32}).save_pretrained(tmp_path)
    image = Image.fromarray((np.random.default_rng(0).random((45, 60, 3)) * 255).astype("uint8"))

    processor = AutoImageProcessor.from_pretrained(tmp_path)
    pixels = processor(image, return_tensors="pt")["pixel_values"]
    assert pixels.shape == (1, 3, 32, 32)
    reloaded = AutoModelForImageClassification.from_pretrained(tmp_path).eval()
    assert type(reloaded) is hf_variants.ViTForImageClassification
    with torch.no_grad():
        probabilities = reloaded(pixels).logits.softmax(-1)[0]

    classify = pipeline("image-classification", model=str(tmp_path), device="cpu")
    assert type(classify.model) is hf_variants.ViTForImageClassification
    predictions = classify(image, top_k=3)
    assert [p["label"] for p in predictions] == [labels[i] for i in probabilities.argsort(descending=True).tolist()]
    for prediction in predictions:
        assert prediction["score"] == pytest.approx(probabilities[labels.index(prediction["label"])].item(), abs=1e-5)


def test_grayscale_vit_mini_through_the_pipeline(tmp_path):
    """vit-mini (28 x 28, one channel): the pipeline classifies (28, 28, 1) arrays; a PIL image,
    which the pipeline converts to RGB, gets a ValueError (from the processor, or from the model
    with a hint of what to do)."""
    model = hf_variants.ViTForImageClassification(hf_variants.named_config("vit-mini", num_labels=10)).eval()
    model.save_pretrained(tmp_path)
    ViTImageProcessor(size={"height": 28, "width": 28}, image_mean=[0.5], image_std=[0.5]).save_pretrained(tmp_path)
    image = (np.random.default_rng(1).random((28, 28, 1)) * 255).astype("uint8")
    pixels = torch.tensor(image, dtype=torch.float32).permute(2, 0, 1)[None] / 255.0 * 2 - 1  # rescale, normalise
    with torch.no_grad():
        best = int(model(pixels).logits.argmax())
    classify = pipeline("image-classification", model=str(tmp_path), device="cpu")
    assert classify(image, top_k=1)[0]["label"] == model.config.id2label[best]
    with pytest.raises(ValueError):  # RGB pixels meet the 1-channel processor: transformers' own error
        classify(Image.fromarray(image[..., 0], mode="L"))
    with pytest.raises(ValueError, match="converts PIL images to RGB"):  # RGB pixels meet the model
        model(torch.rand(1, 3, 28, 28))


REMOTE_CODE_SCRIPT = r"""
import importlib.abc, sys
class BlockHfVariants(importlib.abc.MetaPathFinder):  # the checkpoint's own code must be enough
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] == "hf_variants":
            raise ImportError("hf_variants must not be needed to load remote code")
sys.meta_path.insert(0, BlockHfVariants())
import torch
from transformers import AutoModelForImageClassification
folder = sys.argv[1]
model = AutoModelForImageClassification.from_pretrained(folder, trust_remote_code=True).eval()
reference = torch.load(folder + "/reference.pt", weights_only=True)
with torch.no_grad():
    logits = model(reference["pixels"]).logits
assert type(model).__name__ == "ViTForImageClassification", type(model)
assert (logits - reference["logits"]).abs().max() < 1e-6, (logits - reference["logits"]).abs().max()
print("remote code ok")
"""


@pytest.mark.slow  # a fresh Python process importing transformers
def test_saved_checkpoint_loads_as_remote_code_without_the_package(tmp_path):
    model = TESTER.model("ForImageClassification").eval()
    model.save_pretrained(tmp_path)
    pixels = TESTER.inputs("Model", labels=False)["pixel_values"]
    with torch.no_grad():
        torch.save({"pixels": pixels, "logits": model(pixels).logits}, tmp_path / "reference.pt")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    result = subprocess.run(
        [sys.executable, "-c", REMOTE_CODE_SCRIPT, str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert result.returncode == 0 and "remote code ok" in result.stdout, result.stderr[-2000:]


def test_trainer_fine_tunes_the_classifier(tmp_path):
    """transformers' Trainer keeps the pixel_values / labels columns (read from the forward's
    signature), drops the others, and the loss falls on a small fixed set of images."""
    from datasets import Dataset

    g = torch.Generator().manual_seed(0)
    labels = torch.arange(12) % 3
    # Each class brightens a different third of the image: learnable in a few steps.
    pixels = torch.randn(12, 3, 32, 32, generator=g) * 0.1
    for i, label in enumerate(labels.tolist()):
        pixels[i, :, :, label * 10 : label * 10 + 10] += 1.0
    data = Dataset.from_dict(
        {"pixel_values": pixels.numpy(), "labels": labels.numpy(), "file_name": [f"{i}.png" for i in range(12)]}
    )
    data.set_format("torch")
    model = TESTER.model("ForImageClassification", hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path),
        per_device_train_batch_size=12,
        max_steps=8,
        learning_rate=3e-3,
        logging_steps=1,
        report_to=[],
        use_cpu=True,
        save_strategy="no",
        disable_tqdm=True,
    )
    trainer = transformers.Trainer(model=model, args=args, train_dataset=data)
    trainer.train()
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    assert len(losses) == 8 and losses[-1] < 0.7 * losses[0]  # measured: 1.10 -> 0.61


def test_learned_tokens_and_positions_start_at_the_initializer_range():
    """[CLS], positions and MAE's decoder tokens are truncated-normal / normal with std 0.02 (not
    torch.randn's 1.0); SimMIM's mask token starts at zero, as transformers."""
    config = TESTER.config(hidden_size=64, num_attention_heads=4, decoder_hidden_size=64)
    mae = hf_variants.ViTForPreTraining(config)
    for tensor in (
        mae.vit.embeddings.cls_token,
        mae.vit.embeddings.position_embeddings,
        mae.decoder.mask_token,
        mae.decoder.position_embeddings,
    ):
        assert 0.01 < tensor.std().item() < 0.03
    assert not hf_variants.ViTForMaskedImageModeling(config).vit.embeddings.mask_token.any()
