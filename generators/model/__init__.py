"""The frozen model of an environment, and the rules the spec checks and the model share.

The root is environment.py (Environment), its leaf types types.py, its sections
monitoring.py, overflow.py and health.py; build.py is the one constructor, quota.py the
quota derivation, quantity.py resource quantities in the API server's canonical form
(read by the spec checks, generators/k8s and the policies too), fromspec.py the rule that
maps spec keys onto fields. checks/ holds the cross-field checks; load.py loads the spec
(generators/spec/: positions, schema, defaults), runs the checks and builds. The model reads
the spec, never the other way round (tests/test_import_graph.py LAYERS). This package's
__init__ imports nothing: importing one of its modules never loads the loader.
"""
