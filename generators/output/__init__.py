"""What trainyard writes out: an object's YAML shape from its template (templating.py), its
canonical bytes (yamlemit.py), and the plain-text tables a terminal shows (texttable.py,
plan.py's capacity tables). Nothing here decides a number: the model has already.
"""
