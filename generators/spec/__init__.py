"""The environment file: load (with positions), validate (schema + semantics)."""
