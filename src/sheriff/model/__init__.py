"""Pure CI-domain logic: no I/O, imports nothing else from the project."""
