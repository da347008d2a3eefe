"""Wrap already-tokenized segments in a tokenizer's special tokens, without re-tokenizing.

Packing and pair construction work on token ids; `SpecialTokenTemplate` reads the tokenizer's
post-processor once (by running it on a probe) and then applies the same template to id lists:
``[CLS] A [SEP] B [SEP]`` for BERT/ALBERT, ``<s> A </s></s> B </s>`` for RoBERTa, and so on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tokenizers import Tokenizer

# One template item: ("special", token_id, type_id) or ("A" | "B", None, type_id).
_Item = tuple[str, int | None, int]


def _read_template(tokenizer, pair: bool) -> list[_Item]:
    # A copy without the padding/truncation a tokenizer.json may carry (MiniLM's pads to 128).
    backend = Tokenizer.from_str(tokenizer.backend_tokenizer.to_str())
    backend.no_padding()
    backend.no_truncation()
    first = backend.encode("a", add_special_tokens=False)
    second = backend.encode("b", add_special_tokens=False) if pair else None
    if backend.post_processor is None:
        if pair:
            raise ValueError("the tokenizer has no post-processor, so it defines no sentence-pair template")
        return [("A", None, 0)]
    processed = backend.post_processor.process(first, second)
    # Content runs in order are A then B (every template here puts a special token between them;
    # `sequence_ids` cannot be used: the post-processor leaves them unset for A in a pair).
    items: list[_Item] = []
    for token_id, type_id, is_special in zip(processed.ids, processed.type_ids, processed.special_tokens_mask):
        if is_special:
            items.append(("special", token_id, type_id))
        elif not items or items[-1][0] == "special":
            items.append(("AB"[sum(kind != "special" for kind, _, _ in items)], None, type_id))
    if [kind for kind, _, _ in items if kind != "special"] != (["A", "B"] if pair else ["A"]):
        raise ValueError(f"cannot read the tokenizer's {'pair' if pair else 'single'} template: {items}")
    return items


@dataclass
class PackedExample:
    """One model input: `input_ids`, `token_type_ids` and `special_tokens_mask`, each length L."""

    input_ids: list[int]
    token_type_ids: list[int]
    special_tokens_mask: list[int]

    def as_dict(self) -> dict[str, list[int]]:
        return {
            "input_ids": self.input_ids,
            "token_type_ids": self.token_type_ids,
            "special_tokens_mask": self.special_tokens_mask,
        }


class SpecialTokenTemplate:
    """The tokenizer's single-sequence and pair templates, applied to id lists."""

    def __init__(self, tokenizer):
        self.single = _read_template(tokenizer, pair=False)
        self.pair = _read_template(tokenizer, pair=True)
        self.single_specials = sum(kind == "special" for kind, _, _ in self.single)
        self.pair_specials = sum(kind == "special" for kind, _, _ in self.pair)
        if tokenizer.sep_token_id is None:
            raise ValueError("the tokenizer has no separator token (needed between packed documents)")
        self.separator_id = tokenizer.sep_token_id

    def build(self, first: Sequence[int], second: Sequence[int] | None = None) -> PackedExample:
        template = self.single if second is None else self.pair
        content = {"A": first, "B": second}
        input_ids: list[int] = []
        token_type_ids: list[int] = []
        special_mask: list[int] = []
        for kind, token_id, type_id in template:
            tokens = [token_id] if kind == "special" else list(content[kind])
            input_ids += tokens
            token_type_ids += [type_id] * len(tokens)
            # A separator inside content is the document boundary FULL-SENTENCES packing inserts.
            special_mask += [int(kind == "special" or token == self.separator_id) for token in tokens]
        return PackedExample(input_ids, token_type_ids, special_mask)
