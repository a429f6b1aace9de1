"""The gate controller is its own program under gate/: import it as `python -m trainyard_gate`
does from inside gate/ (as tests/gate/conftest.py does)."""

from __future__ import annotations

import sys
from pathlib import Path

GATE_DIR = Path(__file__).resolve().parents[2] / "gate"
if str(GATE_DIR) not in sys.path:
    sys.path.insert(0, str(GATE_DIR))
