"""What several commands share, one module per kind: build arguments, GitHub arguments, issue actions,
the resolution's flags, the comparison table. Commands never import each other; what two of them need lives here.
"""
