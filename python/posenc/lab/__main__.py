"""python3 -m posenc.lab (the command line is posenc.lab.cli, importable by the spawned processes)."""

from .cli import main

main()
