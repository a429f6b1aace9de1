"""`generate.py sync-inventory`: node counts in environment files from the live cluster.
nodes.py reads kubectl's JSON, census.py assigns and counts, edit.py rewrites the file,
sync.py decides (and refuses)."""
