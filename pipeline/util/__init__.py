"""Small shared helpers: atomic files, the retry policy, the clock."""
