"""Course tooling on top of nbgrader: release, autograde, reports, bundles, handouts.

Run ``python -m grader --help`` for the commands.
"""
