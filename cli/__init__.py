"""The command line's commands, one module each (main.py reads the command line and dispatches)."""
