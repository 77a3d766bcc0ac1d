"""One run's legs side by side: console, markdown and HTML."""
