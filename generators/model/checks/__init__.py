"""The cross-field checks: rules the schema cannot express (cross references, sums,
orderings, what a program accepts), each a Problem at the offending value's line:col with
its spec path. semantics.py runs them all; the other modules hold a section's rules each.
They run after the schema (generators/spec/) and before build.py, from load.py.
"""
