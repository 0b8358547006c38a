"""The kernel side of grading: everything here runs INSIDE a student's kernel.

It shares the process with the student's code, so nothing here is trusted by the grader:
it is instrumentation, the second line behind the OS sandbox (``grader.run.sandbox``).

- ``boot``: ``python -m grader.kernel -f CONNECTION_FILE``, the kernel's entry point: resource
  limits, the stream to the grader, the audit policy, then an ordinary IPython kernel.
- ``channel``: the stream to the grader (a Unix socket opened before any student code runs).
  Logs, records and end-of-cell markers are sent as they happen, so nothing already sent can
  be taken back; hidden inputs and oracle answers come back on it only while their test cell
  runs.
- ``policy``: the audit hook: refuses (and reports) reading outside the notebook's view,
  writing outside its scratch folder, processes, signals, sockets, databases, native code
  loaded or called from notebook code, and frames, object finders (gc) or a change to the
  grader's functions asked for by notebook code.
- ``tamper``: what checks rely on, snapshotted at start, so changes are reported.
- ``recorders``: what test cells run: they call the learner's functions and record what
  happened; the trusted judge (``grader.judging.judge``) decides the grade outside the kernel.
- ``torchwatch``: torch's function and dispatch modes, pushed while a graded call runs, so
  the shortcut tripwire sees torch's builtins however the learner's code reaches them.
"""
