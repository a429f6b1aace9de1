#!/usr/bin/env python3
"""The Python work of a fleet, without the CLI's I/O: load, render and run every policy.

The fleet benchmark compares this with kubeconform alone on the same objects (docs/performance.md's
"render + policies <= kubeconform" target). Nothing is read from or written to rendered/:
the policies see the objects the render holds, as `validate` would after a fresh render.

    .venv/bin/python bench/python_work.py DIR   # prints "<envs> <objects> <findings>"
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def one_environment(root: Path, name: str) -> tuple[int, int]:
    """(objects, findings) of one environment: load, render, policies."""
    from generators.layout import RENDERED
    from generators.model.load import load
    from generators.pipeline import render
    from policies import run_all
    from policies.context import Context, RenderedObject

    env = load(root, name)
    files = render.render_environment(env)
    objects = tuple(RenderedObject(f"{RENDERED}/{name}/{f.path}", f.obj) for f in files)
    return len(objects), len(run_all(Context(env, objects)))


def main() -> int:
    from generators.layout import environment_names
    from generators.pipeline.fleet import map_environments

    root = Path(sys.argv[1]).resolve()
    names = environment_names(root)
    results = map_environments(one_environment, root, names)
    print(len(names), sum(r[0] for r in results), sum(r[1] for r in results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
