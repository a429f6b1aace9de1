"""`python -m trainyard_gate` (run from gate/, or with gate/ on PYTHONPATH)."""

from .main import main

raise SystemExit(main())
