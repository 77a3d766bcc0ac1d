"""The run's inputs: settings (flag > environment > matrix.toml > default), RunInputs, matrix.toml."""
