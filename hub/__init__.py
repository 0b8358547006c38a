"""The workshop server: the course on JupyterHub with nbgrader's exchange.

``python -m hub start`` (``make hub``) runs it for a room; ``python -m hub end``
(``make hub-end``) backs up the day and wipes the attendees; the instructors' commands
(``release``, ``grade``, ``feedback``, ``totals``) run in a terminal of their Lab. Modules:
``settings`` (the one settings object), ``environment`` (the course environment),
``instructor`` (their folder and commands), ``spawner`` (login, servers, roles), ``tls``
(the public address's certificate),
``limits`` (per-attendee limits), ``server`` (start), ``answers`` (the checkout's answers kept
from attendees), ``graderun`` (``grade`` safe to interrupt and rerun), ``endofday`` (backup
and wipe), and ``jupyterhub_config.py`` (JupyterHub's configuration).
"""
