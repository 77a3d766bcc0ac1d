"""What compiles a leg: the toolchain of each backend, its pins and its installer."""
