#!/usr/bin/env python3
"""trainyard: render, validate and diff the GitOps tree of shared GPU clusters.

Usage: python generate.py {render,validate,diff,plan,sync-inventory} ...  (see --help)
"""

import sys

from generators.cli import main

if __name__ == "__main__":
    sys.exit(main())
