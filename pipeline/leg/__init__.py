"""One leg's run: the steps (source, toolchain, ccache, configure, build, record, bundle) and their results."""
