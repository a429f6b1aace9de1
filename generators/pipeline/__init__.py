"""From the model to rendered/<env>/ on disk: one environment (render.py: decorate, name,
write atomically, the staleness check) and many at once on every core (fleet.py).
"""
