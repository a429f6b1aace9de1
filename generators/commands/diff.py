"""`diff [--base REF] [--format text|markdown|json]`: what a change does to the clusters."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HELP = (
    "compare the working tree's rendering with rendered/ at a git ref (default: the merge "
    "base with main), per object, with a summary in pools, quotas and tiers; exit 1 when "
    "it changes a field the API refuses to change in place (docs/immutable-fields.md)"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--base",
        metavar="REF",
        help="git ref to compare with (default: merge base of HEAD and main; HEAD when there is no main)",
    )
    parser.add_argument(
        "--format",
        choices=("text", "markdown", "json"),
        default="text",
        help="text for a terminal, markdown for a PR comment, json for machines",
    )
    parser.add_argument("--no-color", action="store_true", help="no ANSI colours (also: NO_COLOR=1)")
    parser.add_argument(
        "--max-chars",
        type=int,
        metavar="N",
        help="markdown: keep the comment within N characters (default: GitHub's 65,536)",
    )
    parser.add_argument(
        "--whatif",
        type=Path,
        metavar="DIR",
        help="markdown: the what-if reports of the PR workflow's simulate job (docs/whatif.md)",
    )


def run(args: argparse.Namespace) -> int:
    from generators.diff import jsondoc, markdown, report, text
    from generators.diff.gitref import GitError
    from generators.diff.objects import RenderedTreeError

    try:
        built = report.build(args.root, args.base)
    except GitError as exc:
        print(f"generate.py diff: error: {exc}", file=sys.stderr)
        return 2
    except RenderedTreeError as exc:
        print(f"generate.py diff: error: {exc}", file=sys.stderr)
        return 1
    # Immutable fields (generators/gitops/immutable.py): a note per change Argo CD recreates, an
    # error per change the API would refuse, with its migration path; errors fail the diff
    # (the report is still written: the PR comment shows them too).
    for line in built.immutable_lines():
        print(line, file=sys.stderr)
    if args.format == "json":
        sys.stdout.write(jsondoc.render(built))
    elif args.format == "markdown":
        from generators.diff import whatif

        limit = markdown.COMMENT_LIMIT if args.max_chars is None else args.max_chars
        # The what-if section (an environment's spec `whatif`) is short and goes whole: the
        # per-object diffs above it give way instead.
        sys.stdout.write(
            markdown.render(built, limit, whatif.section(args.root, args.whatif, built.base.short))
        )
    else:
        sys.stdout.write(text.render(built, text.Palette(text.use_colour(sys.stdout, args.no_color))))
    return 1 if built.refused else 0
