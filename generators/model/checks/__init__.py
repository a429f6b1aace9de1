"""The cross-field checks: rules the schema cannot express (cross references, sums,
orderings, what a program accepts), each a Problem at the offending value's line:col with
its spec path. semantics.py runs them all; the other modules hold a section's rules each.
They run after the schema (generators/spec/) and before build.py, from load.py.

They read settings through the model's classes, by fromspec's rule, and locate a problem by
the same rule (where.py), so a setting is spelled as its field here as everywhere else in
code. Two modules check how a value is written rather than what it sets, and so read the
value itself: quantities.py (a pool's per-node quantities as typed: `memory: 1800` is bytes)
and example.py (every string of the file, for the shipped examples' placeholders). Each
other module says what it still reads as written, and why (no field holds it).
"""
