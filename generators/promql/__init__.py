"""PromQL without an environment: the words every query is written with (vocabulary.py) and
an expression read as a syntax tree (reads.py: the series it selects and the labels it needs
on them). A leaf: it imports nothing of the renderer, so the model, the components (alert
rules, dashboards, the monitoring installers' values) and the checks above them (doctor)
write and read PromQL alike.
"""
