"""`python -m sheriff` runs the CLI."""

from sheriff.cli import main

main()
