"""`generate.py diff`: the working tree's rendering against a git ref, per object, with a
summary in the model's terms. report.py builds it (both sides from gitref.py and objects.py,
compared by changes.py and fields.py, the model read by summary.py and settings.py, the
immutable-field check); text.py, markdown.py (with mdsummary.py), jsondoc.py print it, in
the words of wording.py, generated.py (monitoring content) and textdiff.py (long strings,
unified YAML)."""
