"""GitHub: the Actions runner's files and commands, and the REST clients."""
