"""`generate.py diff`: the working tree's rendering against a git ref, per object, with a
summary in the model's terms. report.py builds it; text.py, markdown.py, jsondoc.py print it."""
