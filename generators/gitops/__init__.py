"""What Argo CD needs of each rendered object, by kind: its sync wave (syncwaves.py), its sync
options (syncoptions.py), whether Argo CD may wait on its health (health.py), and the fields
the API refuses to change in place with what a change to one needs (immutable.py, which
syncoptions.py and diff/ both read). And what Argo CD would refuse in a rendered environment
(permissions.py), read with its own file selection (sources.py) and glob (argoglob.py).
"""
