"""The fuzz harness: damaged files of every format on the CLI and the Python API."""
