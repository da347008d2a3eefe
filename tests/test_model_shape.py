"""The model path says what it does in its own source (issue 46, "plain signatures").

Read with ``ast`` over the whole package, and with ``inspect`` over every registered head:

- no class is built at run time (``dataclasses.make_dataclass``, three-argument ``type(...)``):
  ``grep "class BertForPreTrainingOutput"`` finds the class;
- no signature is rewritten (no ``__signature__`` assignment, no ``__init_subclass__`` that
  replaces ``forward``): what Trainer and peft read with ``inspect.signature`` is what the file shows;
- every registered head's ``inspect.signature(cls.forward)`` is the one parsed from its ``def``,
  and names what the removed rewriting used to add (``past_key_values``, XLM's and XLNet's inputs);
  the pretraining heads that now name ``past_key_values`` use it;
- no shared block's forward (``hf_variants/modules/``, outside task heads) takes more than
  ``MAX_NAMED_PARAMETERS`` named parameters, except the ones listed in ``WIDE_FORWARDS`` with
  their current count: the list may only shrink (a new wide forward, or a listed one that grows,
  fails; one that narrows fails until its count here is lowered, so the progress is kept).

``python3 /work/shared/tools/forward_shape.py hf_variants`` prints the same findings.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from pathlib import Path

import pytest
import torch
from transformers.cache_utils import DynamicCache

import hf_variants
from hf_variants.registry import SPECS
from tests.common.tiny_variants import tiny_config

PACKAGE = Path(hf_variants.__file__).parent
SOURCES = sorted(PACKAGE.rglob("*.py"))
MAX_NAMED_PARAMETERS = 8

# "<file under hf_variants/modules>:<class>.forward" -> named parameters today (self excluded), for
# a shared block wider than MAX_NAMED_PARAMETERS. Empty since the old shared machinery (the backbone,
# layer stack, decoder and multi-mode attention, with 13-21 parameters each) was deleted: keep it so
# (state such as a cache, cross-attention keys or segment memories lives in the layers that have
# it); never add to it.
WIDE_FORWARDS: dict[str, int] = {}


def parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


def where(path: Path, node: ast.AST) -> str:
    return f"{path.relative_to(PACKAGE.parent)}:{node.lineno}"


def is_task_head(class_name: str) -> bool:
    """Task heads (XForY, XLMHeadModel) mirror transformers' signatures: the width limit is for blocks."""
    return "For" in class_name or class_name.endswith("HeadModel")


def named_parameters(function: ast.FunctionDef) -> list[str]:
    arguments = function.args
    return [
        a.arg for a in arguments.posonlyargs + arguments.args + arguments.kwonlyargs if a.arg not in ("self", "cls")
    ]


def test_no_class_is_built_at_run_time():
    found = []
    for path in SOURCES:
        for node in ast.walk(parsed(path)):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "id", getattr(node.func, "attr", ""))
            if name == "make_dataclass" or (name == "type" and len(node.args) == 3):
                found.append(f"{where(path, node)} builds a class with {name}(...)")
    assert not found, "declare these classes with `class ...:` instead:\n" + "\n".join(found)


def test_no_signature_is_rewritten():
    found = []
    for path in SOURCES:
        for node in ast.walk(parsed(path)):
            if isinstance(node, ast.Attribute) and node.attr == "__signature__" and isinstance(node.ctx, ast.Store):
                found.append(f"{where(path, node)} assigns __signature__")
            if isinstance(node, ast.FunctionDef) and node.name == "__init_subclass__":
                for inner in ast.walk(node):
                    replaces = (
                        isinstance(inner, ast.Attribute)
                        and inner.attr == "forward"
                        and isinstance(inner.ctx, ast.Store)
                    ) or (
                        isinstance(inner, ast.Call)
                        and getattr(inner.func, "id", "") == "setattr"
                        and len(inner.args) > 1
                        and isinstance(inner.args[1], ast.Constant)
                        and inner.args[1].value == "forward"
                    )
                    if replaces:
                        found.append(f"{where(path, inner)} __init_subclass__ replaces forward")
    assert not found, "write each forward's parameters in its own def:\n" + "\n".join(found)


def test_the_package_has_the_checks_targets():
    """The checks above read something: the package's model files and the classes they declare."""
    assert len(SOURCES) > 50
    declared = {node.name for path in SOURCES for node in ast.walk(parsed(path)) if isinstance(node, ast.ClassDef)}
    assert {"BertForPreTrainingOutput", "AlbertForPreTrainingOutput", "SpanBertForPreTrainingOutput"} <= declared


def registered_heads() -> list[type]:
    heads = {cls for spec in SPECS.values() for cls in spec.classes.values()}
    return sorted(heads, key=lambda cls: cls.__name__)


def source_def(function) -> ast.FunctionDef:
    """The ``def`` of ``function``, parsed from its source lines."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    definition = tree.body[0]
    assert isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef)), function
    return definition


def signature_from_source(definition: ast.FunctionDef) -> list[tuple]:
    """(name, kind, default, annotation) per parameter as the ``def`` writes them; defaults as
    their source text, annotations as source text."""
    arguments = definition.args
    kinds = inspect.Parameter
    positional = [(a, kinds.POSITIONAL_ONLY) for a in arguments.posonlyargs] + [
        (a, kinds.POSITIONAL_OR_KEYWORD) for a in arguments.args
    ]
    defaults = [None] * (len(positional) - len(arguments.defaults)) + list(arguments.defaults)
    rows = [(a.arg, kind, default, a.annotation) for (a, kind), default in zip(positional, defaults, strict=True)]
    if arguments.vararg is not None:
        rows.append((arguments.vararg.arg, kinds.VAR_POSITIONAL, None, arguments.vararg.annotation))
    rows += [
        (a.arg, kinds.KEYWORD_ONLY, d, a.annotation)
        for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True)
    ]
    if arguments.kwarg is not None:
        rows.append((arguments.kwarg.arg, kinds.VAR_KEYWORD, None, arguments.kwarg.annotation))
    return [
        (name, kind, None if d is None else ast.unparse(d), None if a is None else ast.unparse(a))
        for name, kind, d, a in rows
    ]


def signature_from_inspect(function) -> list[tuple]:
    """The same rows from ``inspect.signature`` (what Trainer and peft read). The modules use
    ``from __future__ import annotations``, so annotations are their source text."""
    rows = []
    for parameter in inspect.signature(function).parameters.values():
        default = None if parameter.default is inspect.Parameter.empty else repr(parameter.default)
        annotation = None if parameter.annotation is inspect.Parameter.empty else parameter.annotation
        rows.append((parameter.name, parameter.kind, default, annotation))
    return rows


@pytest.mark.parametrize("head", registered_heads(), ids=lambda cls: cls.__name__)
def test_every_head_forward_signature_is_the_one_in_its_source(head):
    forward = head.forward
    assert not hasattr(forward, "__wrapped__"), f"{head.__name__}.forward is a wrapper around {forward.__wrapped__}"
    assert Path(inspect.getsourcefile(forward)).is_relative_to(PACKAGE), f"{head.__name__}.forward is not the package's"
    written = signature_from_source(source_def(forward))
    seen = signature_from_inspect(forward)
    # Defaults: the source writes an expression (None, False, 0), inspect holds its value; compare
    # through repr, which is the same text for the literals the heads use.
    written = [
        (name, kind, default if default is None else repr(ast.literal_eval(default)), annotation)
        for name, kind, default, annotation in written
    ]
    assert seen == written, f"{head.__name__}.forward: inspect sees {seen}, the source says {written}"
    assert seen[0][0] == "self"


def test_heads_name_the_inputs_trainer_and_peft_look_for():
    """What the removed signature rewriting used to add is written in the forwards themselves:
    ``past_key_values`` (peft's prefix tuning passes it only to a forward that names it) on every
    head that hands it to its backbone, and each variant's own dataset columns (Trainer keeps only
    the columns a forward names)."""
    for spec in SPECS.values():
        for head_name, cls in spec.classes.items():
            names = inspect.signature(cls.forward).parameters
            if spec.name == "xlm":
                assert {"langs", "lengths", "past_key_values"} <= set(names), cls.__name__
            if spec.name == "xlnet" and head_name != "Model":
                assert {"mems", "perm_mask", "target_mapping", "input_mask", "use_mems"} <= set(names), cls.__name__
            if spec.name in ("bert", "roberta", "albert", "spanbert", "electra", "xlm", "xlnet", "transfo_xl", "gpt"):
                if cls.__name__ != "ElectraForPreTraining":  # two networks: no one place a prefix would go
                    assert "past_key_values" in names, cls.__name__
    assert "langs" not in inspect.signature(hf_variants.BertForMaskedLM.forward).parameters


def block_forwards() -> dict[str, int]:
    """'<file>:<class>.forward' -> named parameters, for every forward in hf_variants/modules/
    outside task heads."""
    widths = {}
    for path in sorted((PACKAGE / "modules").rglob("*.py")):
        for node in ast.walk(parsed(path)):
            if isinstance(node, ast.ClassDef) and not is_task_head(node.name):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef) and item.name == "forward":
                        key = f"{path.relative_to(PACKAGE / 'modules')}:{node.name}.forward"
                        widths[key] = len(named_parameters(item))
    return widths


def test_block_forwards_stay_narrow_and_the_allow_list_only_shrinks():
    widths = block_forwards()
    assert len(widths) > 10  # the walk found the blocks
    problems = []
    for key, width in sorted(widths.items()):
        allowed = WIDE_FORWARDS.get(key)
        if allowed is None and width > MAX_NAMED_PARAMETERS:
            problems.append(
                f"{key} takes {width} named parameters (> {MAX_NAMED_PARAMETERS}): keep state in the layers that have it"
            )
        elif allowed is not None and width > allowed:
            problems.append(f"{key} grew from {allowed} to {width} named parameters")
        elif allowed is not None and width < allowed:
            fix = "remove it from" if width <= MAX_NAMED_PARAMETERS else f"lower it to {width} in"
            problems.append(f"{key} narrowed from {allowed} to {width} named parameters: {fix} WIDE_FORWARDS")
    problems += [f"{key} is listed in WIDE_FORWARDS but no longer exists" for key in WIDE_FORWARDS if key not in widths]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("name", ["bert", "albert", "spanbert"])
def test_pretraining_heads_hand_the_prefix_they_name_to_the_encoder(name):
    """A named parameter is used: the MLM + second-task heads pass ``past_key_values`` (a key/value
    prefix, peft's prefix tuning) to the encoder, as the shared MLM head does (tests/ecosystem/test_peft.py)."""
    spec = SPECS[f"hfv_{name}"]
    config = tiny_config(spec)
    torch.manual_seed(0)
    pretraining, masked_lm = spec.classes["ForPreTraining"](config).eval(), spec.classes["ForMaskedLM"](config).eval()
    masked_lm.load_state_dict(pretraining.state_dict(), strict=False)  # the shared encoder and MLM head
    ids = torch.randint(3, config.vocab_size, (2, 7), generator=torch.Generator().manual_seed(0))
    head_dim = config.hidden_size // config.num_attention_heads

    def prefix() -> DynamicCache:
        generator = torch.Generator().manual_seed(1)
        cache = DynamicCache()
        for depth in range(config.num_hidden_layers):
            key, value = (
                torch.randn(2, config.num_attention_heads, 3, head_dim, generator=generator) for _ in range(2)
            )
            cache.update(key, value, depth)
        return cache

    with torch.no_grad():
        plain = pretraining(ids).prediction_logits
        prefixed = pretraining(ids, past_key_values=prefix()).prediction_logits
        reference = masked_lm(ids, past_key_values=prefix()).logits
    assert not torch.allclose(prefixed, plain, atol=1e-3)
    torch.testing.assert_close(prefixed, reference, atol=1e-5, rtol=0)
