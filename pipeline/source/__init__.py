"""The llama.cpp source: the tag and mix, a checkout at that commit, and the run's source archive."""
