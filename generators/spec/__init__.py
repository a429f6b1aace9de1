"""The environment file: load (with positions), validate against the schema, default.

The cross-field checks run on the model's terms in generators/model/checks/; the model's
loader (generators/model/load.py) runs both. This package imports nothing of the model.
"""
