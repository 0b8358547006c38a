"""`python -m attnlib.lab`: see ``attnlib.lab``."""

from attnlib.lab import main

raise SystemExit(main())
