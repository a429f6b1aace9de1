"""What Argo CD needs of each rendered object, by kind: its sync wave (syncwaves.py), its sync
options (syncoptions.py), and the fields the API refuses to change in place with what a
change to one needs (immutable.py, which syncoptions.py and diff/ both read).
"""
