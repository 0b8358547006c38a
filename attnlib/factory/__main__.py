"""`python -m attnlib.factory` (`make data`): see ``attnlib.factory.make_data``."""

from attnlib.factory.make_data import main

main()
