"""What keeps a run safe: secrets out of every line, child process groups stopped as a whole, one writer per folder."""
