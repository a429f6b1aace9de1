"""PromQL read as a syntax tree (reads.py): the series an expression selects and the labels
it needs on them. A leaf: it imports nothing of the renderer, so the components (the
monitoring installers' values) and the checks above them (doctor) read it alike.
"""
