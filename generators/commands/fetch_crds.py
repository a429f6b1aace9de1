"""`fetch-crds`: download the CRDs pinned in schemas/crds.lock into the cache, once per lock.

Needed wherever ../shared/crds is absent (a clone elsewhere, GitHub's runners): `validate`
builds its kubeconform schemas from these files. Each download must match its sha256 pin;
files already fetched and verified are not downloaded again. $TRAINYARD_CRD_MIRROR replaces
https://raw.githubusercontent.com (same paths below it) for networks without GitHub access.
Exit 0 when every pinned file is in place and verified, 1 on a mismatch or network failure.
"""

from __future__ import annotations

import argparse
import sys

from generators.commands import add_timeout_argument

HELP = (
    "download the CRDs pinned in schemas/crds.lock into the cache, verifying each sha256 "
    "(once; needed where ../shared/crds is absent)"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_timeout_argument(parser, 60.0, "per file download")
    parser.add_argument(
        "--if-missing",
        action="store_true",
        help="do nothing when a verified copy is already found (../shared/crds, "
        "$TRAINYARD_CRDS or the cache): what `make` runs",
    )


def run(args: argparse.Namespace) -> int:
    from generators.validation.pinned_crds import (
        LOCK_FILE,
        SHARED_CRD_DIR,
        CrdPinError,
        fetch_pinned,
        read_sources,
        resolve_crd_dir,
        seed_cache,
    )

    if args.if_missing:
        try:
            found = resolve_crd_dir()
        except CrdPinError:
            pass
        else:
            if found.resolve() == SHARED_CRD_DIR.resolve():
                found = seed_cache(found)  # later clones elsewhere on this machine find them too
            print(f"{found}: pinned CRDs present and verified")
            return 0
    try:
        dest, downloaded = fetch_pinned(LOCK_FILE, timeout=args.timeout)
    except CrdPinError as error:
        print(f"generate.py fetch-crds: error: {error}", file=sys.stderr)
        return 1
    total = len(read_sources(LOCK_FILE))
    print(f"{dest}: {total} pinned CRD files verified ({len(downloaded)} downloaded)")
    return 0
