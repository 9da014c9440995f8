"""The output formats, one module each (see memlens.output)."""
