"""The frozen model of an environment, and the rules the spec checks and the model share.

The root is environment.py (Environment), its leaf types types.py, its sections
monitoring.py, overflow.py and health.py; build.py is the one constructor, quota.py the
quota derivation, quantity.py resource quantities in the API server's canonical form
(read by the spec checks, generators/k8s and the policies too), fromspec.py the rule that
maps spec keys onto fields. load.py loads,
validates and builds an environment. The shared rules (teams.py, apportion.py,
exporters.py) import nothing of the model, so generators/spec/ reads them before a model
exists. This package's __init__ imports nothing: importing one of its modules (from the spec
checks too) never loads the loader, which imports the spec (tests/test_import_graph.py).
"""
