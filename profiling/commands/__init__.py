"""The commands cli.COMMANDS lists, one module each: `add_arguments`, and `run` (parse, call the engine, print)."""
