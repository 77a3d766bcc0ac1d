"""The nightly release: what it holds (plan), what the run produced (collect), publish and alert."""
