"""The `hf-variants` command line: model cards, remote-code export and pushes to the Hub.

    hf-variants card OUTPUT_DIR               (re)build README.md + training_curves.png from a run's files
    hf-variants export-code OUTPUT_DIR        write configuration_<v>.py + modeling_<v>.py + auto_map
    hf-variants push OUTPUT_DIR ORG/NAME      upload weights, config, code, tokenizer and card in one commit

The research application (the zoo, the replication study, the evaluation harness) is not part of
the package: it drives the scripts of examples/ and runs from a source checkout as
``python -m research.zoo | research.replicate | research.evaluate_pretraining`` (docs/architecture.md).
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
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `hf-variants` console script; returns the exit status."""
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
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
            result = push_model_dir(
                args.output_dir,
                args.repo_id,
                private=args.private or None,
                commit_message=args.message,
                revision=args.revision,
            )
            for name, reason in result.skipped.items():
                print(f"skipped {name}: {reason}", file=sys.stderr)
            print(f"pushed {len(result.uploaded)} files to {result.repo_id}: {result.commit_url}")
    except (ValueError, PushError) as err:
        print(f"hf-variants: error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
