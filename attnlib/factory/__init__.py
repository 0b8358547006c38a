"""The model factory: `make data` (``python -m attnlib.factory --retrain``) builds the corpora,
retrains every model the course ships and writes its weights and model cards in ``data/``;
``--cards`` rewrites the cards' ``.md`` from their JSON.

The notebooks never import it: what they read at run time (the models' recipes, loaders,
evaluations, the held-out samples) is in :mod:`attnlib.shipped`, :mod:`attnlib.realtext`
and :mod:`attnlib.realsource`. One module here per model family
(:mod:`attnlib.factory.shipped`, :mod:`attnlib.factory.realtext`,
:mod:`attnlib.factory.realsource`), :mod:`attnlib.factory.make_data` over them, and
:mod:`attnlib.factory.plain_twin` (trained by hand, not by `make data`).
"""
