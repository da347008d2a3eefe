"""The `hf-variants` command line: model cards, remote-code export and pushes to the Hub.

    hf-variants card OUTPUT_DIR               (re)build README.md + training_curves.png from a run's files
    hf-variants export-code OUTPUT_DIR        write configuration_<v>.py + modeling_<v>.py + auto_map
    hf-variants push OUTPUT_DIR ORG/NAME      upload weights, config, code, tokenizer and card in one commit
    hf-variants evaluate --model_name_or_path CHECKPOINT --output_dir DIR [...]
                                              examples/evaluate_pretraining.py (a source checkout's):
                                              fine-tuning + probes beside the random-weight twin
    hf-variants zoo [--variants NAME ...] [--budget_minutes M] [...]
                                              examples/zoo.py (a source checkout's): every variant's mini
                                              pretrained, evaluated beside its twin, written Hub-ready
    hf-variants replicate [--rows NAME ...] [--seeds 0 1 2] [--arm_minutes M] [--report] [...]
                                              examples/replicate.py (a source checkout's): the lectures'
                                              ablation claims re-run at CPU scale, docs/replication.md
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hf-variants", description="Publish hf-variants checkpoints.")
    commands = parser.add_subparsers(dest="command", required=True)

    card = commands.add_parser("card", help="(re)build the model card of a run's output directory")
    card.add_argument("output_dir")

    export = commands.add_parser("export-code", help="write remote code + auto_map into a checkpoint directory")
    export.add_argument("output_dir")

    push = commands.add_parser("push", help="push a run's output directory to the Hub in one commit")
    push.add_argument("output_dir")
    push.add_argument("repo_id", help="namespace/name on the Hub")
    push.add_argument("--private", action="store_true", help="create the repo private (if it does not exist)")
    push.add_argument("--message", default=None, help="commit message")
    push.add_argument("--revision", default=None, help="branch to commit to (default: main)")
    evaluate = commands.add_parser(
        "evaluate", add_help=False,
        help="evaluate a pretrained checkpoint beside its random-weight twin (examples/evaluate_pretraining.py)")
    evaluate.add_argument("arguments", nargs="*", help="evaluate_pretraining.py's arguments (see its --help)")
    zoo = commands.add_parser(
        "zoo", add_help=False,
        help="pretrain, evaluate and package every variant's mini (examples/zoo.py)")
    zoo.add_argument("arguments", nargs="*", help="zoo.py's arguments (see its --help)")
    replicate = commands.add_parser(
        "replicate", add_help=False,
        help="re-run the lectures' ablation claims and rebuild docs/replication.md (examples/replicate.py)")
    replicate.add_argument("arguments", nargs="*", help="replicate.py's arguments (see its --help)")
    return parser


# subcommand -> the example script it runs (in-process)
SCRIPT_COMMANDS = {"evaluate": "evaluate_pretraining", "zoo": "zoo", "replicate": "replicate"}


def _example_script(command: str):
    """examples/<script>.py of the source checkout this package runs from, imported (the example
    scripts are not part of the wheel); `command` is the subcommand that runs it."""
    import importlib.util
    from pathlib import Path

    name = SCRIPT_COMMANDS[command]
    path = Path(__file__).resolve().parent.parent / "examples" / f"{name}.py"
    if not path.is_file():
        raise ValueError(f"hf-variants {command} runs examples/{name}.py from a source checkout; {path} is missing "
                         "(clone the repository and `pip install -e .`)")
    if name in sys.modules and getattr(sys.modules[name], "__file__", None) == str(path):
        return sys.modules[name]  # already imported (the zoo imports evaluate_pretraining itself)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `hf-variants` console script; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] and argv[0] in SCRIPT_COMMANDS:  # every later argument is the script's (argparse would claim --help)
        try:
            _example_script(argv[0]).main(argv[1:])
        except ValueError as err:
            print(f"hf-variants: error: {err}", file=sys.stderr)
            return 1
        return 0
    args = _parser().parse_args(argv)
    # Imported here so `hf-variants --help` stays fast.
    import hf_variants  # noqa: F401  (registers the model types the export looks up)
    from hf_variants.hub.push import PushError, push_model_dir
    from hf_variants.hub.remote_code import export_remote_code
    from hf_variants.hub.run_record import CARD_FILE, rebuild_model_card

    try:
        if args.command == "card":
            rebuild_model_card(args.output_dir)
            print(f"wrote {args.output_dir}/{CARD_FILE}")
        elif args.command == "export-code":
            for path in export_remote_code(args.output_dir):
                print(f"wrote {path}")
        else:
            result = push_model_dir(args.output_dir, args.repo_id, private=args.private or None,
                                    commit_message=args.message, revision=args.revision)
            for name, reason in result.skipped.items():
                print(f"skipped {name}: {reason}", file=sys.stderr)
            print(f"pushed {len(result.uploaded)} files to {result.repo_id}: {result.commit_url}")
    except (ValueError, PushError) as err:
        print(f"hf-variants: error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
