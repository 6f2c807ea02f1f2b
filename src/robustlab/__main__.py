"""``python -m robustlab``: the command line (the same as the ``robustlab`` command)."""

from robustlab.cli import main

if __name__ == "__main__":
    main()
