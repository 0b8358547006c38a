"""The former name of ``attnlib.lab.settings``, kept for what still runs
`python -m attnlib.setup_lab` (hub/environment.py, a course environment built before the move)."""

from attnlib.lab.settings import main

if __name__ == "__main__":
    main()
