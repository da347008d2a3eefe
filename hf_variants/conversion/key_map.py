"""A variant's explicit key map and everything derived from it.

One :class:`KeyMap` per variant (``models/<variant>/weights.py``) lists how transformers' weight
names map onto ours. Two things are derived from it, never written by hand:

- :meth:`KeyMap.adapter` -> a :class:`StateDictAdapter` for one head: whole state dicts both ways
  (``from_transformers`` / ``to_transformers``);
- :meth:`KeyMap.checkpoint_conversion` -> transformers v5 ``WeightRenaming`` / ``WeightConverter``
  transforms, registered with ``register_checkpoint_conversion_mapping`` under our model_type, so
  ``OurClass.from_pretrained(<transformers checkpoint>)`` converts on load.

Templates are dotted names with ``{i}`` standing for a layer index.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import torch
from transformers.conversion_mapping import get_checkpoint_conversion_mapping
from transformers.core_model_loading import Concatenate, Transpose, WeightConverter, WeightRenaming, WeightTransform

Renames = list[tuple[str, str]]  # (transformers template, our template)
Fused = list[tuple[str, list[str]]]  # (our template, [transformers templates concatenated along dim 0])


def head_renames(pairs: list[tuple[str, str]]) -> Renames:
    """(their module, our module) pairs -> the renames of each module's weight and bias."""
    return [(f"{theirs}.{p}", f"{ours}.{p}") for theirs, ours in pairs for p in ("weight", "bias")]


def _split_layer_prefix(template: str) -> tuple[str, str]:
    """``encoder.layer.{i}.attention.self.query.weight`` -> (``encoder.layer.{i}.``, ``attention.self.query.weight``)."""
    cut = template.rfind("{i}.")
    return (template[: cut + 4], template[cut + 4 :]) if cut >= 0 else ("", template)


def _common_dotted_prefix(names: tuple[str, ...]) -> str:
    """The dotted components all ``names`` start with, with a trailing dot (or "")."""
    parts = [name.split(".") for name in names]
    common = []
    for column in zip(*parts):
        if len(set(column)) > 1:
            break
        common.append(column[0])
    return "".join(c + "." for c in common)


def _template_regex(template: str) -> str:
    """``encoder.layer.{i}.output.dense.weight`` -> a regex with the layer index as group 1."""
    return re.escape(template).replace(r"\{i\}", r"(\d+)")


@dataclass
class StateDictAdapter:
    """An explicit, two-way key map between a transformers state dict and ours (full key names).

    ``renames`` are (transformers template, our template) pairs applied in order; the reverse
    direction is derived from them. ``fused`` lists our tensors built by concatenating several
    transformers tensors along dim 0 (the fused QKV projection). ``ignored`` are transformers
    keys (regexes) with no counterpart of ours (duplicates of tied tensors). ``transposed`` are
    renames whose 2-D tensor is also transposed (transformers' Conv1D weights).
    """

    renames: Renames
    fused: Fused = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    transposed: Renames = field(default_factory=list)

    @staticmethod
    def _pattern(template: str) -> re.Pattern:
        return re.compile("^" + re.escape(template).replace(r"\{i\}", r"(?P<i>\d+)") + "$")

    def to_ours(self, theirs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        ours: dict[str, torch.Tensor] = {}
        pending = dict(theirs)
        for our_template, their_templates in self.fused:
            patterns = [self._pattern(t) for t in their_templates]
            for key in [k for k in pending if patterns[0].match(k)]:
                index = patterns[0].match(key).groupdict().get("i")
                parts = [t.format(i=index) for t in their_templates]
                ours[our_template.format(i=index)] = torch.cat([pending.pop(p) for p in parts], dim=0)
        self._move_transposed(pending, ours, self.transposed)
        for key in list(pending):
            if any(re.fullmatch(p, key) for p in self.ignored):
                pending.pop(key)
                continue
            for their_template, our_template in self.renames:
                match = self._pattern(their_template).match(key)
                if match:
                    ours[our_template.format(**match.groupdict())] = pending.pop(key)
                    break
        if pending:
            raise ValueError(f"no mapping for transformers weights: {sorted(pending)[:8]}")
        return ours

    def to_theirs(self, ours: dict[str, torch.Tensor], expected: set[str] | None = None) -> dict[str, torch.Tensor]:
        """Our state dict -> theirs. Where several renames reach one of our keys (T5's ``wi`` and
        ``wi_1`` are both our ``ffn.up``), the first whose result is in ``expected`` (the target
        model's keys) wins; without ``expected``, the first."""
        theirs: dict[str, torch.Tensor] = {}
        pending = dict(ours)
        for our_template, their_templates in self.fused:
            pattern = self._pattern(our_template)
            for key in [k for k in pending if pattern.match(k)]:
                index = pattern.match(key).groupdict().get("i")
                for name, part in zip(their_templates, pending.pop(key).chunk(len(their_templates), dim=0)):
                    theirs[name.format(i=index)] = part.clone()
        self._move_transposed(pending, theirs, [(o, t) for t, o in self.transposed])
        for key in list(pending):
            candidates = [
                their_template.format(**match.groupdict())
                for their_template, our_template in self.renames
                if (match := self._pattern(our_template).match(key))
            ]
            if candidates:
                preferred = [name for name in candidates if expected is not None and name in expected]
                theirs[(preferred or candidates)[0]] = pending.pop(key)
        if pending:
            raise ValueError(f"no transformers counterpart for weights: {sorted(pending)[:8]}")
        return theirs

    def _move_transposed(self, pending: dict, target: dict, pairs: Renames) -> None:
        """Move the keys of ``pending`` matching a (source, target) template pair into ``target``, transposed."""
        for source_template, target_template in pairs:
            pattern = self._pattern(source_template)
            for key in [k for k in pending if pattern.match(k)]:
                target[target_template.format(**pattern.match(key).groupdict())] = pending.pop(key).t().contiguous()


@dataclass(frozen=True)
class KeyMap:
    """One variant's weight names: transformers' -> ours.

    Args:
        backbone: renames inside the encoder, relative to it (``embeddings.LayerNorm.weight``).
        backbone_fused: our fused tensors inside the encoder and the transformers tensors they
            concatenate (dim 0), relative to it.
        heads: per head suffix ("Model", "ForMaskedLM", ...), renames relative to the model root
            (``cls.predictions.transform.dense.weight``). Every suffix listed has an adapter.
        their_prefix / our_prefix: where each side keeps the backbone inside a head model
            (``base_model_prefix``); the bare model has none on either side.
        ignored: per head suffix, transformers keys (regexes, from the model root) with no
            counterpart of ours, such as a second name of a tied tensor.
        backbone_transposed: renames inside the encoder whose 2-D tensor transformers stores
            transposed (GPT-2's Conv1D: (in, out) where our nn.Linear has (out, in)).
        head_prefixes: per head suffix, (their prefix, our prefix) where a head keeps the backbone
            elsewhere than ``their_prefix`` / ``our_prefix`` ("" = at the model root: transformers'
            T5ForConditionalGeneration keeps its stacks at the root, ours under ``transformer``).
    """

    backbone: Renames
    backbone_fused: Fused
    heads: dict[str, Renames]
    their_prefix: str
    our_prefix: str
    ignored: dict[str, list[str]] = field(default_factory=dict)
    backbone_transposed: Renames = field(default_factory=list)
    head_prefixes: dict[str, tuple[str, str]] = field(default_factory=dict)

    def adapter(self, head: str) -> StateDictAdapter:
        """The full-key adapter of one head ("Model" = the bare encoder, keys without prefix)."""
        if head not in self.heads:
            raise ValueError(f"no key map for head {head!r}; known: {sorted(self.heads)}")
        their_prefix, our_prefix = ("", "") if head == "Model" else (self.their_prefix, self.our_prefix)
        their_prefix, our_prefix = self.head_prefixes.get(head, (their_prefix, our_prefix))
        theirs = their_prefix + "." if their_prefix else ""
        ours = our_prefix + "." if our_prefix else ""
        renames = [(theirs + t, ours + o) for t, o in self.backbone] + list(self.heads[head])
        fused = [(ours + o, [theirs + t for t in ts]) for o, ts in self.backbone_fused]
        transposed = [(theirs + t, ours + o) for t, o in self.backbone_transposed]
        return StateDictAdapter(
            renames=renames, fused=fused, ignored=list(self.ignored.get(head, [])), transposed=transposed
        )

    def checkpoint_conversion(self) -> list[WeightTransform]:
        """transformers v5 load-time transforms for any of our classes of this variant.

        One list serves every head (transformers looks mappings up by model_type): each rename
        matches at the start of a key or after a dot, so it works with or without the backbone
        prefix (transformers adds or strips ``base_model_prefix`` afterwards), and a rename whose
        result does not exist in the model being loaded (``classifier`` -> ``classifier.out_proj``
        for token classification) is undone by transformers, which then keeps the original key.
        transformers' legacy ``LayerNorm.gamma/beta`` renames come first so TF-era checkpoints
        reach our renames with today's names.
        """
        legacy = [t for t in (get_checkpoint_conversion_mapping("legacy") or []) if isinstance(t, WeightRenaming)]
        renames: dict[str, str] = {}
        for theirs, ours in self.backbone + [r for head in self.heads.values() for r in head]:
            if theirs != ours:
                if renames.setdefault(theirs, ours) != ours:
                    raise ValueError(f"key map renames {theirs!r} both to {renames[theirs]!r} and {ours!r}")
        if self.their_prefix != self.our_prefix:
            renames[f"{self.their_prefix}."] = f"{self.our_prefix}."
        converters = []
        converted: set[tuple[tuple[str, ...], str]] = set()
        for our_template, their_templates in self.backbone_fused:
            their_prefix, their_leaves = zip(*(_split_layer_prefix(t) for t in their_templates))
            our_prefix, our_leaf = _split_layer_prefix(our_template)
            if len(set(their_prefix)) != 1:
                raise ValueError(f"fused tensors must come from one layer: {their_templates}")
            # transformers' converters replace the leaf of a name only (the tensors they return are
            # named by the target leaf); the layer part is renamed first, for these keys alone.
            shared = _common_dotted_prefix(their_leaves)
            if their_prefix[0] != our_prefix:
                renames[their_prefix[0] + shared] = our_prefix + shared
            if (their_leaves, our_leaf) in converted:
                continue  # the same leaves in another stack (T5's encoder and decoder): one converter serves both
            converted.add((their_leaves, our_leaf))
            converters.append(
                WeightConverter(
                    source_patterns=[self._anchored(leaf) for leaf in their_leaves],
                    target_patterns=our_leaf,
                    operations=[Concatenate(dim=0)],
                )
            )
        for their_template, our_template in self.backbone_transposed:
            # As the fused tensors: the layer part is renamed first (for this key alone), then a
            # converter renames the leaf and transposes.
            their_layer, their_leaf = _split_layer_prefix(their_template)
            our_layer, our_leaf = _split_layer_prefix(our_template)
            if their_layer != our_layer:
                renames[their_template] = our_layer + their_leaf
            converters.append(
                WeightConverter(
                    source_patterns=[self._anchored(their_leaf)], target_patterns=our_leaf, operations=[Transpose(0, 1)]
                )
            )
        self._check_no_chains(renames)
        transforms: list[WeightTransform] = list(legacy)
        transforms += [WeightRenaming(self._anchored_at_root(t), o.replace("{i}", r"\1")) for t, o in renames.items()]
        return transforms + converters

    def _anchored_at_root(self, template: str) -> str:
        """A rename's source: at the start of the key or right after the backbone prefix (either
        side's), never deeper. transformers applies every matching rename in turn, and our name
        may end like one of theirs (ViT: ours ``encoder.layers.{i}`` ends with theirs ``layers.{i}``),
        so a rename matching after any dot would rename our result again."""
        prefixes = "|".join(re.escape(p + ".") for p in sorted({self.their_prefix, self.our_prefix}) if p)
        return (rf"^(?:{prefixes})?" if prefixes else "^") + _template_regex(template)

    @staticmethod
    def _anchored(template: str) -> str:
        # At the start of the key or right after a dot: "embeddings..." must not match "xembeddings...".
        return r"(?<![^.])" + _template_regex(template)

    def _check_no_chains(self, renames: dict[str, str]) -> None:
        """transformers applies every matching rename in turn: no rename may produce a name
        another one would rename again (bare, or under either backbone prefix)."""
        for source, target in renames.items():
            for other in renames:
                pattern = self._anchored_at_root(other)
                names = [target.replace("{i}", "0")] + [
                    f"{p}.{target.replace('{i}', '0')}" for p in (self.their_prefix, self.our_prefix) if p
                ]
                if other != source and any(re.search(pattern, name) for name in names):
                    raise ValueError(f"key map rename {source!r} -> {target!r} would be renamed again by {other!r}")
