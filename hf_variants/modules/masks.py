"""Every check, conversion and extension of an attention mask, in one place.

Two kinds of tensor meet here:

- a *keep-mask* (what users pass as ``attention_mask``): (B, S), 1 (or True) at a real token a
  query may read, 0 at padding; bool, integer or float 0./1.;
- an *additive bias* (what attention adds to its scores): 0 where a key is visible and the most
  negative finite value of the dtype where it is hidden. Finite rather than -inf so a fully hidden
  row stays finite (softmax of equal values, as transformers does); :func:`combine_biases` clamps
  a sum back to that value so two hidden entries never add up to -inf.

Keys are laid out as ``[prefix P | memory or cache M | the T new tokens]``: the T queries are the
last T keys, so causal masks align bottom-right (query i sees keys 0..S-T+i).

Callers: the variants' models (checks, memory extension, which positions are read, the summary
token's position), the task and generation heads (is a target read at padding? where is the summary
token?), the layout (padding and document biases, the zeroing keep-mask, is the batch worth
unpadding?), the packed causal LM collator (document-causal masks), attention (causal bias), the
padding-free buckets (key-padding bias), and the variants whose masks are their own (XLNet's two streams and
permutations, Transformer-XL's memory window, XLM's ``lengths``).

The positions a head reads live here too (a (B, T) selection -> (B, M) positions -> the states
there: :func:`selected_positions`, :func:`gather_positions`, :func:`summary_positions`): they are
read from the same keep-masks, on the plain path and the padding-free one alike.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.nn import functional as F

from .tracing import is_tracing

# Below this fraction of padding tokens, unpadding costs more (gathers and scatters around every
# attention call) than the per-token work it saves; such batches run the padded path.
MIN_PADDING_FRACTION = 0.05


# ---------------------------------------------------------------------------- checks
def check_mask_values(attention_mask: torch.Tensor | None) -> None:
    """``attention_mask`` (any shape) holds 1 at real tokens and 0 at padding (bool, integer or
    float 0./1.): any other value (0.5, 2) would silently become a soft or inverted mask.

    Raises ValueError naming the first bad value. Traced graphs check only the dtype (reading the
    values would break the graph)."""
    if attention_mask is None:
        return
    if is_tracing():
        if attention_mask.is_complex():
            raise ValueError(
                f"attention_mask must hold only 0 (padding) and 1 (real token); found {attention_mask.dtype}"
            )
        return
    if attention_mask.is_complex() or not bool(((attention_mask == 0) | (attention_mask == 1)).all()):
        bad = attention_mask[(attention_mask != 0) & (attention_mask != 1)].flatten()[:1].tolist()
        raise ValueError(
            f"attention_mask must hold only 0 (padding) and 1 (real token); found {bad[0] if bad else attention_mask.dtype}"
        )


def check_key_mask(
    attention_mask: torch.Tensor | None, batch: int, length: int, past_length: int = 0, *, like: str = ""
) -> None:
    """``attention_mask`` is a (B, past_length + T) keep-mask of 0/1 values, or None.

    ``like``: how the message names the tensor the mask must match (e.g. " like input_ids"); with
    cached positions the message spells out past + new instead. Raises ValueError."""
    if attention_mask is not None and tuple(attention_mask.shape) != (batch, past_length + length):
        suffix = f" (cached positions {past_length} + new tokens {length})" if past_length else like
        raise ValueError(
            f"attention_mask has shape {tuple(attention_mask.shape)}, expected {(batch, past_length + length)}{suffix}"
        )
    check_mask_values(attention_mask)


def custom_attention_bias(
    attention_mask: torch.Tensor,
    batch: int,
    query_length: int,
    key_length: int,
    dtype: torch.dtype,
    *,
    name: str = "attention_mask",
) -> torch.Tensor:
    """A caller's own 4-D mask (B, 1, T, S) -> the additive (B, 1, T, S) bias attention adds, used
    as given (transformers' convention for prepared or custom masks: packed documents each seeing
    only themselves, a shared prefix with several continuations). No padding or causal mask is
    added: the mask says everything, causality included.

    - float: already additive, as transformers takes it: 0 where query i may read key j, a large
      negative value (``torch.finfo(dtype).min``) where not. A positive value is refused: a float
      keep-mask of 1s and 0s would otherwise silently hide nothing.
    - bool or integer: a keep-mask, True / 1 where query i may read key j (what SDPA reads from a
      bool mask), 0/1 values only.

    ``key_length`` S counts cached keys too (past + T). Raises ValueError naming ``name``."""
    expected = (batch, 1, query_length, key_length)
    if tuple(attention_mask.shape) != expected:
        raise ValueError(
            f"{name} has shape {tuple(attention_mask.shape)}: a 4-D mask must be (batch, 1, query_length, key_length) "
            f"= {expected}"
        )
    if attention_mask.is_floating_point():
        if not is_tracing() and bool((attention_mask > 0).any()):
            found = attention_mask[attention_mask > 0].flatten()[0].item()
            raise ValueError(
                f"a float 4-D {name} is additive (0 where a key is visible, a large negative value where it is "
                f"hidden); found {found}. A keep-mask of 1s and 0s must be bool or integer"
            )
        return attention_mask.to(dtype).clamp(min=torch.finfo(dtype).min)
    check_mask_values(attention_mask)
    return additive_mask(~attention_mask.to(torch.bool), dtype)


def check_mask_shape(mask: torch.Tensor, expected: tuple[int, ...], name: str) -> None:
    """Raise a ValueError naming ``name`` when ``mask`` is not of shape ``expected``."""
    if tuple(mask.shape) != tuple(expected):
        raise ValueError(f"{name} has shape {tuple(mask.shape)}, expected {tuple(expected)}")


def check_no_padding(attention_mask: torch.Tensor | None, model: str) -> None:
    """For models that read contiguous text only (Transformer-XL): the (B, T) mask, if given, must
    be all ones (after :func:`check_mask_values`: 2s are not "all ones"). Skipped when traced."""
    check_mask_values(attention_mask)
    if attention_mask is not None and not is_tracing() and not bool(attention_mask.all()):
        raise ValueError(f"{model} has no padding mask: feed contiguous text (attention_mask must be all ones)")


# ---------------------------------------------------------------------------- keep-mask -> bias
def additive_mask(hidden: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """(any shape) bool, True where a key is hidden -> additive bias of the same shape: 0 where
    visible, the most negative finite value of ``dtype`` where hidden."""
    return torch.zeros(hidden.shape, dtype=dtype, device=hidden.device).masked_fill(hidden, torch.finfo(dtype).min)


def key_padding_bias(keep: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """(B, S) keep-mask (1/True at real keys) -> additive (B, 1, 1, S) bias, built unconditionally
    (see :func:`make_attention_bias` for the version that skips a mask hiding nothing)."""
    return additive_mask(~keep[:, None, None, :].to(torch.bool), dtype)


def combine_biases(bias: torch.Tensor | None, other: torch.Tensor | None, dtype: torch.dtype) -> torch.Tensor | None:
    """The sum of two additive biases (either may be None), clamped to the dtype's most negative
    finite value so two hidden entries do not add up to -inf. Shapes broadcast."""
    if bias is None:
        return other
    if other is None:
        return bias
    return (bias + other).clamp(min=torch.finfo(dtype).min)


def future_positions(query_length: int, key_length: int, device: torch.device | None) -> torch.Tensor:
    """(T, S) bool, True where key j lies ahead of query i. The T queries are the last T keys
    (S - T cached, memory or prefix keys come first): query i sees keys 0..S-T+i."""
    offset = key_length - query_length
    return torch.ones(query_length, key_length, dtype=torch.bool, device=device).triu(offset + 1)


def causal_bias(query_length: int, key_length: int, dtype: torch.dtype, device: torch.device | None) -> torch.Tensor:
    """Additive (1, 1, T, S) bias hiding the future, aligned bottom-right (see :func:`future_positions`)."""
    return additive_mask(future_positions(query_length, key_length, device), dtype)[None, None]


def make_attention_bias(
    attention_mask: torch.Tensor | None,
    dtype: torch.dtype,
    causal: bool = False,
    query_length: int | None = None,
    key_length: int | None = None,
    device: torch.device | None = None,
) -> torch.Tensor | None:
    """(B, S) keep-mask -> an additive bias broadcastable to (B, heads, T, S): (B, 1, 1, S), or
    (B, 1, T, S) with ``causal``; None when nothing is hidden (lets SDPA pick its fastest kernel).

    With ``causal`` the T queries are the last T of the S keys (see :func:`future_positions`);
    without a mask, S is ``key_length`` (default T) and T is ``query_length`` (default S).
    """
    if attention_mask is None and not causal:
        return None
    bias = None
    # Eager calls skip the bias when nothing is masked (SDPA's fastest kernel); a traced graph
    # cannot look, and always adds it (a zero bias: the same outputs).
    if attention_mask is not None and (is_tracing() or not bool(attention_mask.all())):
        bias = key_padding_bias(attention_mask, dtype)
    if causal:
        if attention_mask is not None:
            key_length, device = attention_mask.shape[-1], attention_mask.device
        key_length = key_length or query_length
        query_length = query_length or key_length
        bias = combine_biases(bias, causal_bias(query_length, key_length, dtype, device), dtype)
    return bias


def with_causal_bias(
    bias: torch.Tensor | None, query_length: int, key_length: int, dtype: torch.dtype, device: torch.device
) -> torch.Tensor:
    """``bias`` (broadcastable to (B, heads, T, S)) plus the bottom-right aligned causal mask (T, S),
    clamped so it stays finite."""
    return combine_biases(bias, causal_bias(query_length, key_length, dtype, device), dtype)


def document_keep_mask(document_ids: torch.Tensor) -> torch.Tensor:
    """(B, T) document ids of packed rows (-1 on padding) -> (B, 1, T, T) bool, True where query i
    may read key j: both in the same document (j real). A padding query sees itself only, so no
    softmax row is empty."""
    same = (document_ids[:, :, None] == document_ids[:, None, :]) & (document_ids >= 0)[:, None, :]
    itself = torch.eye(document_ids.shape[1], dtype=torch.bool, device=document_ids.device)
    return (same | itself)[:, None]


def document_bias(document_ids: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """:func:`document_keep_mask` as an additive (B, 1, T, T) bias that keeps attention inside each
    document (causality, if any, is the attention's own ``is_causal``)."""
    return additive_mask(~document_keep_mask(document_ids), dtype)


def document_causal_mask(document_ids: torch.Tensor) -> torch.Tensor:
    """(B, T) document ids (-1 = padding) -> (B, 1, T, T) bool, True where query i may attend
    to key j: same document and j <= i. A padding query attends to itself only."""
    if document_ids.ndim != 2:
        raise ValueError(f"document_ids must be (batch, length), got shape {tuple(document_ids.shape)}")
    width = document_ids.shape[1]
    causal = torch.ones(width, width, dtype=torch.bool, device=document_ids.device).tril()
    return document_keep_mask(document_ids) & causal  # the diagonal (a query itself) is causal


def document_causal_bias(document_ids: torch.Tensor, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """:func:`document_causal_mask` as an additive bias (B, 1, T, T): 0 where allowed, the dtype's
    most negative value elsewhere (added to the attention scores before the softmax): the
    ``attention_mask`` / ``attention_bias`` of packed causal LM batches
    (``hf_variants.objectives.DataCollatorForPackedCausalLM``)."""
    return additive_mask(~document_causal_mask(document_ids), dtype)


# ---------------------------------------------------------------------------- memory models' own masks
def memory_causal_bias(
    length: int,
    memory_length: int,
    dtype: torch.dtype,
    device: torch.device,
    *,
    same_length: bool = False,
    mem_len: int | None = None,
) -> torch.Tensor:
    """Transformer-XL's additive (1, 1, T, M + T) bias: query i (after M memory positions) sees keys
    0..M + i. ``same_length`` (the original code's option): query i also loses keys older than
    i - ``mem_len``, so every query sees the same number of keys."""
    key_length = memory_length + length
    future = future_positions(length, key_length, device)
    if same_length:
        beyond_memory = key_length - mem_len
        future |= torch.ones_like(future).tril(-(length - beyond_memory if beyond_memory > 0 else length))
    return additive_mask(future, dtype)[None, None]


def two_stream_biases(
    attention_mask: torch.Tensor | None,
    input_mask: torch.Tensor | None,
    perm_mask: torch.Tensor | None,
    batch: int,
    length: int,
    memory_length: int,
    device: torch.device,
    dtype: torch.dtype,
    *,
    causal: bool = False,
    same_length: bool = False,
    memory_mask: torch.Tensor | None = None,
) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """XLNet's additive (B or 1, 1, T, M + T) biases of the content stream and of the query stream.

    A query may not see key j when j is padding (``attention_mask`` (B, T) 0, or XLNet's
    ``input_mask`` (B, T) 1), when ``perm_mask`` (B, T, T) holds 1 (the factorization order), or
    (``causal``, XLNet's ``attn_type="uni"``) when j lies ahead (with ``same_length``, nor when j lies
    behind within the segment); memory positions are always visible, except the first K of them (a
    key/value prefix, then ``mems``) where ``memory_mask`` (B, K), K <= M, holds 0 (generate()'s
    left padding once it is in the memory). The content stream also always sees
    itself, the query stream never unless allowed otherwise (it must not read its token).
    (None, None) when nothing is hidden. Raises ValueError for both masks or a wrong shape."""
    if attention_mask is not None and input_mask is not None:
        raise ValueError("pass either attention_mask (1 = real token) or input_mask (1 = padding), not both")
    key_length = memory_length + length
    hidden = None  # (B or 1, T, M + T) bool: True where the query stream may not look
    if causal:
        hidden = future_positions(length, key_length, device)
        if same_length:
            hidden[:, :length] |= torch.ones(length, length, dtype=torch.bool, device=device).tril(-1)
        hidden = hidden[None]
    padding = (1 - attention_mask) if attention_mask is not None else input_mask
    data = None
    if padding is not None:
        check_mask_shape(padding, (batch, length), "attention_mask" if attention_mask is not None else "input_mask")
        data = padding.to(torch.float32)[:, None, :]
    if perm_mask is not None:
        check_mask_shape(perm_mask, (batch, length, length), "perm_mask")
        data = perm_mask.to(torch.float32) if data is None else data + perm_mask.to(torch.float32)
    if memory_mask is not None and not bool(memory_mask.all()):
        check_mask_shape(memory_mask, (batch, memory_mask.shape[-1]), "the memory's attention_mask columns")
        if memory_mask.shape[-1] > memory_length:
            raise ValueError(f"the mask covers {memory_mask.shape[-1]} memory positions, but there are {memory_length}")
        data = torch.zeros(batch, 1, length, device=device) if data is None else data
        hidden_memory = (1 - memory_mask).to(torch.float32)[:, None, :].expand(-1, data.shape[1], -1)
        data = torch.cat([hidden_memory, F.pad(data, (memory_length - memory_mask.shape[1], 0))], dim=-1) > 0
    elif data is not None:
        data = F.pad(data, (memory_length, 0)) > 0
    if data is not None:
        hidden = data if hidden is None else hidden | data
    if hidden is None:
        return None, None
    own = torch.zeros(length, key_length, dtype=torch.bool, device=device)
    own[:, memory_length:] = torch.eye(length, dtype=torch.bool, device=device)
    content_hidden = hidden & ~own
    return additive_mask(content_hidden[:, None], dtype), additive_mask(hidden[:, None], dtype)


# ---------------------------------------------------------------------------- extension / slicing
def extend_for_memory(attention_mask: torch.Tensor | None, memory_length: int) -> torch.Tensor | None:
    """(B, T) keep-mask of the current segment -> (B, M + T), every one of the M memory positions
    visible (they were real tokens of an earlier segment). Unchanged when M is 0 or the mask None."""
    if attention_mask is None or memory_length == 0:
        return attention_mask
    visible = attention_mask.new_ones(attention_mask.shape[0], memory_length)
    return torch.cat([visible, attention_mask], dim=1)


def new_token_mask(attention_mask: torch.Tensor | None, past_length: int) -> torch.Tensor | None:
    """(B, past + T) keep-mask over [cached keys | T new tokens] -> (B, T), the new tokens' columns."""
    return None if attention_mask is None else attention_mask[:, past_length:]


def split_prefix_mask(
    attention_mask: torch.Tensor | None, prefix_length: int, length: int
) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """``attention_mask`` (B, P + T) (peft prepends a key/value prefix's columns) or (B, T) -> the
    prefix's visibility (B, P) or None (all visible), and the tokens' mask (B, T) or None.
    Raises ValueError for any other width."""
    if attention_mask is None or attention_mask.shape[-1] == length:
        return None, attention_mask
    if attention_mask.shape[-1] != prefix_length + length:
        raise ValueError(
            f"attention_mask has {attention_mask.shape[-1]} columns: expected the {length} tokens, or the "
            f"{prefix_length} prefix positions followed by them ({prefix_length + length})"
        )
    return attention_mask[:, :prefix_length], attention_mask[:, prefix_length:]


def zeroing_mask(attention_mask: torch.Tensor | None, length: int) -> torch.Tensor | None:
    """The (B, T) keep-mask by which states are multiplied to zero their padding positions (XLM),
    from a (B, S) mask whose last T columns are the new tokens; None when nothing is padding.
    Traced graphs cannot look, and always get the mask (multiplying by ones is exact)."""
    if attention_mask is None:
        return None
    new_tokens = attention_mask[:, -length:]
    return new_tokens if is_tracing() or not bool(new_tokens.all()) else None


# ---------------------------------------------------------------------------- reading a mask
def reads_a_padding_position(
    attention_mask: torch.Tensor | None, positions: torch.Tensor | None, slots_read: torch.Tensor | None = None
) -> bool:
    """True when one of the (B, M) read ``positions`` is a padding token of the (B, T) keep-mask
    (left padding puts it at position 0). ``slots_read`` (B, M) bool: False at filler slots of
    ``positions`` that nobody reads. False when either the mask or the positions are None."""
    if attention_mask is None or positions is None:
        return False
    real = attention_mask.gather(1, positions).bool()
    if slots_read is not None:
        real = real | ~slots_read
    return not bool(real.all())


def worth_unpadding(attention_mask: torch.Tensor) -> bool:
    """True when at least MIN_PADDING_FRACTION of the (B, T) batch is padding."""
    padding = attention_mask.numel() - int(attention_mask.bool().sum())
    return padding >= MIN_PADDING_FRACTION * attention_mask.numel()


def targets_at_padding(
    labels: torch.Tensor | None, attention_mask: torch.Tensor | None, ignore_index: int, *, shifted: bool = False
) -> bool:
    """True when a (B, T) target other than ``ignore_index`` is read from a padding position of the
    (B, T) keep-mask: its own position, or with ``shifted`` (causal LM: position t predicts the
    target at t + 1; left padding makes the last padding slot predict the first token) the position
    before it. Only the padded layout computes states there. False without labels or mask, or when
    their shapes differ."""
    if labels is None or attention_mask is None or tuple(attention_mask.shape) != tuple(labels.shape):
        return False
    if shifted:
        return bool(((attention_mask[:, :-1] == 0) & (labels[:, 1:] != ignore_index)).any())
    return bool(((attention_mask == 0) & (labels != ignore_index)).any())


# ---------------------------------------------------------------------------- positions a head reads
def gather_positions(hidden_states: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """hidden (B, T, H), positions (B, M) -> (B, M, H): each row's states at its positions."""
    return hidden_states.gather(1, positions[..., None].expand(-1, -1, hidden_states.shape[-1]))


def selected_positions(selected: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, T) bool -> ((B, M) positions of the True entries of each row in ascending order, padded
    with position 0 up to M = the most in any row; (B, M) bool, True where a position is real)."""
    counts = selected.sum(dim=1)
    width = int(counts.max()) if selected.numel() else 0
    # A stable sort of "not selected" lists each row's selected positions first, in order.
    order = torch.sort((~selected).to(torch.uint8), dim=1, stable=True).indices[:, :width]
    real = torch.arange(width, device=selected.device)[None, :] < counts[:, None]
    return order.masked_fill(~real, 0), real


# config.summary_type: which token of a row stands for the whole row (the pooler and every
# sequence-level head read it).
SUMMARY_TYPES = ("first", "last", "last_real", "mean")


def summary_positions(
    summary_type: str, attention_mask: torch.Tensor | None, batch: int, length: int, device: torch.device
) -> torch.Tensor | None:
    """(B, 1) position of the token that summarises each row, or None for "mean" (every real token).

    "first": position 0 (BERT's [CLS], RoBERTa's <s>, ViT's class token); "last": position T-1
    (XLNet, whose inputs are left-padded); "last_real": each row's last real token (GPT: the end of
    a right- or left-padded text).
    """
    if summary_type == "first":
        return torch.zeros(batch, 1, dtype=torch.long, device=device)
    if summary_type == "last" or (summary_type == "last_real" and attention_mask is None):
        return torch.full((batch, 1), length - 1, dtype=torch.long, device=device)
    if summary_type == "last_real":
        # The highest index holding a 1 (argmax returns the first maximum, hence the ramp).
        ramp = torch.arange(1, length + 1, device=device)
        return (attention_mask.bool() * ramp).argmax(dim=-1, keepdim=True)
    if summary_type == "mean":
        return None
    raise ValueError(f"summary_type must be one of {SUMMARY_TYPES}, got {summary_type!r}")


def is_left_padded(attention_mask: torch.Tensor) -> bool:
    """True when every row of the (B, T) keep-mask ends at the last position with its padding,
    if any, all in front (as XLNet's tokenizer pads)."""
    real = attention_mask.bool()
    return bool(real[:, -1].all()) and bool((real[:, 1:] >= real[:, :-1]).all())


def mask_from_lengths(lengths: torch.Tensor, batch: int, length: int, device: torch.device) -> torch.Tensor:
    """(B,) real-token counts -> (B, T) long keep-mask of each row's first ``lengths`` tokens.
    Raises ValueError for a wrong shape or a length outside [0, T]."""
    if tuple(lengths.shape) != (batch,):
        raise ValueError(f"lengths has shape {tuple(lengths.shape)}, expected ({batch},): one length per row")
    if lengths.numel() and (int(lengths.min()) < 0 or int(lengths.max()) > length):
        raise ValueError(f"lengths must lie in [0, {length}] (the sequence length), got {lengths.tolist()}")
    return (torch.arange(length, device=device) < lengths.to(device)[:, None]).long()


def mask_from_pad_tokens(input_ids: torch.Tensor | None, pad_token_id: int | None) -> torch.Tensor | None:
    """(B, T) ids -> (B, T) long keep-mask, 0 where the id is ``pad_token_id``; None when there is
    no id, no pad id, or no pad token in the batch (nothing to hide)."""
    if input_ids is not None and pad_token_id is not None and bool((input_ids == pad_token_id).any()):
        return (input_ids != pad_token_id).long()
    return None


# ---------------------------------------------------------------------------- one call's mask
@dataclass
class KeyMask:
    """One forward call's checked keep-mask and the views of it that the forward reads; built once
    by :meth:`prepare`, so the raw ``attention_mask`` is checked and sliced in this file alone.

    Attributes:
        given: (B, past + T) the mask as passed (cached positions first), or None; default
            positions derive from it (a decoder's left padding).
        new_tokens: (B, T) the new tokens' columns, or None: where the summary token is looked for
            and which positions are padding.
        keys: (B, M + past + T) every key the new tokens attend, the M memory positions first and
            visible, or None: the layout builds the attention bias from it.
    """

    given: torch.Tensor | None
    new_tokens: torch.Tensor | None
    keys: torch.Tensor | None

    @classmethod
    def prepare(
        cls,
        attention_mask: torch.Tensor | None,
        batch: int,
        length: int,
        past_length: int = 0,
        memory_length: int = 0,
        *,
        like: str = "",
    ) -> "KeyMask":
        """Check ``attention_mask`` (B, past_length + T) (see :func:`check_key_mask`; ``like`` names
        what it must match in the message) and derive its views. Raises ValueError."""
        check_key_mask(attention_mask, batch, length, past_length, like=like)
        return cls(
            attention_mask,
            new_token_mask(attention_mask, past_length),
            extend_for_memory(attention_mask, memory_length),
        )
