"""One module per ``python -m pipeline`` command; each exposes ``register(sub)``."""
