"""XLNet's generate() on a tokenizer's whole output (issue 43): ``attention_mask`` honoured at every
step (after the first, a left-padded row's padding sits in the memory), ``token_type_ids`` extended
for the dummy token and the generated ones, and a mask of the wrong width or right-padded prompts
refused by name."""

import pytest
import torch

from hf_variants.models.xlnet import XLNetConfig, XLNetLMHeadModel
from tests.common.inputs import padding_mask

TINY = dict(
    vocab_size=99,
    hidden_size=32,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=37,
    pad_token_id=5,
    eos_token_id=2,
    bos_token_id=1,
)
NEW_TOKENS = 6  # more steps than GENERATION_OVERLAP: the memory, and the padding in it, is read


def tiny_lm(**overrides) -> XLNetLMHeadModel:
    torch.manual_seed(0)
    return XLNetLMHeadModel(XLNetConfig(**{**TINY, **overrides})).eval()


def left_padded_prompts(lengths=(9, 4, 6), length: int = 9) -> dict[str, torch.Tensor]:
    mask = padding_mask(lengths, length, "left")
    ids = torch.randint(6, TINY["vocab_size"], (len(lengths), length), generator=torch.Generator().manual_seed(3))
    return {"input_ids": ids.masked_fill(mask == 0, TINY["pad_token_id"]), "attention_mask": mask}


def greedy(model, inputs: dict[str, torch.Tensor]):
    with torch.no_grad():
        return model.generate(
            **inputs,
            max_new_tokens=NEW_TOKENS,
            min_new_tokens=NEW_TOKENS,
            do_sample=False,
            pad_token_id=TINY["pad_token_id"],
            return_dict_in_generate=True,
            output_logits=True,
        )


def alone(inputs: dict[str, torch.Tensor], row: int) -> dict[str, torch.Tensor]:
    """Row ``row`` without its padding."""
    real = inputs["attention_mask"][row].bool()
    return {key: value[row : row + 1, real] for key, value in inputs.items()}


@pytest.mark.parametrize("mem_len", [None, 4], ids=["memory_keeps_all", "memory_of_4"])
@pytest.mark.parametrize("with_segments", [False, True], ids=["ids_and_mask", "with_token_type_ids"])
def test_left_padded_batch_generates_each_prompt_as_alone(mem_len, with_segments):
    """Every step's logits of each row equal the row's alone: today the mask was dropped (the first
    step's logits moved by 0.19) and token_type_ids were refused (one column short)."""
    model = tiny_lm(mem_len=mem_len)
    inputs = left_padded_prompts()
    if with_segments:  # XLNet's template: A <sep> <cls> with segments 0 ... 0 2
        inputs["token_type_ids"] = torch.zeros_like(inputs["input_ids"])
        inputs["token_type_ids"][:, -1] = 2
    batched = greedy(model, inputs)
    for row in range(inputs["input_ids"].shape[0]):
        single = greedy(model, alone(inputs, row))
        assert torch.equal(batched.sequences[row, -NEW_TOKENS:], single.sequences[0, -NEW_TOKENS:])
        for step, (in_batch, by_itself) in enumerate(zip(batched.logits, single.logits, strict=True)):
            torch.testing.assert_close(in_batch[row], by_itself[0], atol=1e-5, rtol=0, msg=f"row {row} step {step}")


def test_first_step_reads_the_masked_forward_and_the_dummy_continues_the_last_segment():
    """Step 1 = one forward of the prompt + the dummy token, masked, the dummy in the segment of the
    token before it (generate() extends token_type_ids the same way for every generated token)."""
    model = tiny_lm()
    inputs = left_padded_prompts()
    segments = (torch.arange(9) >= 5).long().expand(3, 9).clone()
    segments[:, -1] = 2
    first_step = greedy(model, {**inputs, "token_type_ids": segments}).logits[0]
    batch, length = inputs["input_ids"].shape
    perm_mask = torch.zeros(batch, length + 1, length + 1)
    perm_mask[:, :, -1] = 1.0
    target_mapping = torch.zeros(batch, 1, length + 1)
    target_mapping[:, 0, -1] = 1.0
    with torch.no_grad():
        expected = model(
            input_ids=torch.cat([inputs["input_ids"], torch.zeros(batch, 1, dtype=torch.long)], dim=1),
            attention_mask=torch.cat([inputs["attention_mask"], torch.ones(batch, 1, dtype=torch.long)], dim=1),
            token_type_ids=torch.cat([segments, segments[:, -1:]], dim=1),
            perm_mask=perm_mask,
            target_mapping=target_mapping,
        ).logits[:, 0]
    torch.testing.assert_close(first_step, expected, atol=1e-6, rtol=0)


def test_a_mask_over_memory_and_tokens_is_read_and_a_wrong_width_refused():
    model = tiny_lm(mem_len=None)
    ids = torch.randint(6, 99, (2, 5), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        mems = model(ids, use_mems=True).mems
        visible = model(ids[:, :2], mems=mems, attention_mask=torch.ones(2, 7, dtype=torch.long)).logits
        plain = model(ids[:, :2], mems=mems).logits
        torch.testing.assert_close(visible, plain, atol=0, rtol=0)
        hidden = torch.ones(2, 7, dtype=torch.long)
        hidden[0, :3] = 0  # row 0 may not read the first 3 memory positions
        masked = model(ids[:, :2], mems=mems, attention_mask=hidden).logits
    assert (masked[0] - plain[0]).abs().max() > 1e-3 and torch.equal(masked[1], plain[1])
    with pytest.raises(ValueError, match=r"attention_mask has 6 columns: expected the 2 tokens, or the 5 .* \(7\)"):
        model(ids[:, :2], mems=mems, attention_mask=torch.ones(2, 6, dtype=torch.long))


def test_right_padded_prompts_are_refused_by_name():
    """The dummy token follows the last position: a right-padded row would continue its padding."""
    model = tiny_lm()
    inputs = left_padded_prompts()
    right = {key: value.flip(1) for key, value in inputs.items()}  # the same rows, padding at the end
    with pytest.raises(ValueError, match="pad the prompts on the left"):
        greedy(model, right)
