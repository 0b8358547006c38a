"""Imported first by the judging server (multiprocessing's forkserver, see
``grader.judging.judge``): the server dies with the worker that started it, even while it is
still importing the rest of its preload list (torch takes seconds), so a stopped or killed
grader leaves none behind."""

from grader.lifeline import die_with_parent

die_with_parent(or_exit_if_orphaned=True)
