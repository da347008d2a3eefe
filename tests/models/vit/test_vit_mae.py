"""MAE pretraining (ViTForPreTraining) against the paper's equations (He et al. 2022, sec. 3):
random masking of 75% of the patches, an encoder over the visible patches only, per-patch
normalised pixel targets, and a mean squared error over the masked patches only."""

import pytest
import torch
import transformers

import hf_variants
from hf_variants import ViTConfig
from hf_variants.models.vit.mae import mae_loss, patchify, random_masking, unpatchify

CONFIG = dict(
    image_size=32,
    patch_size=8,
    num_channels=3,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=37,
    decoder_hidden_size=16,
    decoder_num_hidden_layers=2,
    decoder_num_attention_heads=2,
    decoder_intermediate_size=24,
)
PATCH, GRID, NUM_PATCHES = 8, 4, 16


def model_and_inputs(seed: int = 0, **overrides):
    torch.manual_seed(seed)
    model = hf_variants.ViTForPreTraining(ViTConfig(**{**CONFIG, **overrides})).eval()
    g = torch.Generator().manual_seed(seed)
    return model, torch.randn(2, 3, 32, 32, generator=g), torch.rand(2, NUM_PATCHES, generator=g)


def patch_pixels(pixels: torch.Tensor, b: int, n: int) -> torch.Tensor:
    """The paper's target for patch n of image b, written out: its P x P x C pixels, row by row."""
    row, col = divmod(n, GRID)
    return pixels[b, :, row * PATCH : (row + 1) * PATCH, col * PATCH : (col + 1) * PATCH].permute(1, 2, 0).reshape(-1)


def test_reachable_through_auto_model_for_pretraining():
    config = ViTConfig(**CONFIG)
    assert type(transformers.AutoModelForPreTraining.from_config(config)) is hf_variants.ViTForPreTraining
    assert (config.mask_ratio, config.norm_pix_loss) == (0.75, True)  # the paper's defaults


def test_masking_keeps_the_patches_with_the_smallest_noise():
    noise = torch.rand(3, NUM_PATCHES)
    kept, mask, ids_restore = random_masking(noise, 0.75)
    assert kept.shape == (3, 4) and mask.shape == (3, NUM_PATCHES)
    for b in range(3):
        smallest = set(noise[b].argsort()[:4].tolist())
        assert set(kept[b].tolist()) == smallest
        assert set(mask[b].nonzero().flatten().tolist()) == set(range(NUM_PATCHES)) - smallest
    shuffled = torch.arange(NUM_PATCHES).expand(3, -1).gather(1, noise.argsort(dim=1))
    torch.testing.assert_close(shuffled.gather(1, ids_restore), torch.arange(NUM_PATCHES).expand(3, -1))


def test_patchify_layout_and_inverse():
    pixels = torch.randn(2, 3, 32, 32)
    patches = patchify(pixels, PATCH)
    assert patches.shape == (2, NUM_PATCHES, PATCH * PATCH * 3)
    for b, n in ((0, 0), (1, 6), (1, 15)):
        torch.testing.assert_close(patches[b, n], patch_pixels(pixels, b, n), atol=0, rtol=0)
    torch.testing.assert_close(unpatchify(patches, PATCH, 3, GRID, GRID), pixels, atol=0, rtol=0)


def test_encoder_sees_the_visible_patches_only():
    """[CLS] + 25% of the patches enter the encoder; changing the pixels of a removed patch changes
    neither the encoder states nor any prediction, changing a visible one changes them."""
    model, pixels, noise = model_and_inputs()
    with torch.no_grad():
        out = model(pixels, noise=noise, output_hidden_states=True)
        assert all(h.shape == (2, 1 + 4, 32) for h in out.hidden_states)
        masked_patch = int(out.mask[0].nonzero()[0])
        visible_patch = int((out.mask[0] == 0).nonzero()[0])
        for patch, should_change in ((masked_patch, False), (visible_patch, True)):
            changed = pixels.clone()
            row, col = divmod(patch, GRID)
            changed[0, :, row * PATCH : (row + 1) * PATCH, col * PATCH : (col + 1) * PATCH] += 1.0
            again = model(changed, noise=noise, output_hidden_states=True)
            encoder_diff = (again.hidden_states[-1] - out.hidden_states[-1]).abs().max().item()
            logits_diff = (again.logits - out.logits).abs().max().item()
            assert (encoder_diff > 1e-4) == should_change and (logits_diff > 1e-4) == should_change


@pytest.mark.parametrize("norm_pix_loss", [True, False])
def test_loss_is_the_papers_masked_patch_mse(norm_pix_loss):
    """loss = mean over masked patches of mean_j (pred_j - t_j)^2, t = the patch's pixels
    (normalised by the patch's own mean and std with norm_pix_loss), each term written out."""
    model, pixels, noise = model_and_inputs(norm_pix_loss=norm_pix_loss)
    with torch.no_grad():
        out = model(pixels, noise=noise)
    terms = []
    for b in range(2):
        for n in range(NUM_PATCHES):
            if out.mask[b, n] == 0:
                continue
            target = patch_pixels(pixels, b, n)
            if norm_pix_loss:
                target = (target - target.mean()) / torch.sqrt(target.var(unbiased=True) + 1e-6)
            terms.append(((out.logits[b, n] - target) ** 2).mean())
    assert len(terms) == 2 * 12  # 75% of 16 patches in each image
    torch.testing.assert_close(out.loss, torch.stack(terms).mean(), atol=1e-6, rtol=1e-6)


def test_predictions_at_visible_patches_do_not_enter_the_loss():
    prediction, target = torch.randn(2, NUM_PATCHES, 12), torch.randn(2, NUM_PATCHES, 12)
    _, mask, _ = random_masking(torch.rand(2, NUM_PATCHES), 0.75)
    changed = prediction + 5.0 * (1 - mask)[..., None]  # only visible patches change
    assert mae_loss(changed, target, mask, True) == mae_loss(prediction, target, mask, True)
    assert mae_loss(prediction + 5.0 * mask[..., None], target, mask, True) != mae_loss(prediction, target, mask, True)


def test_training_lowers_the_loss_and_the_encoder_loads_into_the_classifier(tmp_path):
    model, pixels, noise = model_and_inputs()
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(15):
        loss = model(pixels, noise=noise).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.9 * losses[0]  # 15 steps on one fixed batch
    model.save_pretrained(tmp_path)
    classifier, info = hf_variants.ViTForImageClassification.from_pretrained(
        tmp_path, num_labels=5, output_loading_info=True
    )
    assert set(info["missing_keys"]) == {"classifier.weight", "classifier.bias"}
    assert all(key.startswith("decoder.") for key in info["unexpected_keys"])
    for name, value in model.vit.state_dict().items():
        torch.testing.assert_close(classifier.vit.state_dict()[name], value, atol=0, rtol=0, msg=name)


def test_trainer_pretrains_with_the_models_own_loss(tmp_path):
    """Trainer runs MAE on images alone (no labels column: the model returns its loss), with a
    fresh random mask each step; the encoder's weights move."""
    from datasets import Dataset

    model, pixels, _ = model_and_inputs()
    data = Dataset.from_dict({"pixel_values": torch.randn(8, 3, 32, 32).numpy()})
    data.set_format("torch")
    before = model.vit.embeddings.patch_embeddings.projection.weight.detach().clone()
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path),
        per_device_train_batch_size=4,
        max_steps=4,
        learning_rate=1e-3,
        logging_steps=1,
        report_to=[],
        use_cpu=True,
        save_strategy="no",
        disable_tqdm=True,
    )
    trainer = transformers.Trainer(model=model, args=args, train_dataset=data)
    trainer.train()
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    assert len(losses) == 4 and all(0.1 < loss < 10 for loss in losses)
    assert not torch.equal(model.vit.embeddings.patch_embeddings.projection.weight, before)
