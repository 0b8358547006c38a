"""The local worker pool of ``python -m grader autograde``: one spawned process per core runs
``grader.batch.job.grade``; a crashed pool is rebuilt and the rest retried, a notebook that
crashes its worker three times gets a "Not graded" result (``grader.batch.cluster`` is the
same on a Dask cluster). Each worker dies with the main process and leaves Ctrl-C to it.
"""

import logging
import multiprocessing
import os
import shutil
import signal
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from typing import TYPE_CHECKING

from grader import logs
from grader.batch.progress import Progress
from grader.results import messages
from grader.run import sandbox

STOP_SECONDS = 5  # for a terminated worker to go (its kernels and sandboxes die with it)
log = logging.getLogger(__name__)

if TYPE_CHECKING:  # imported where used: a worker imports the grading code
    from grader.batch.job import Job
    from grader.results.result import Result


def worker_init(level: str = "WARNING", debug: bool = False) -> None:
    """In each worker: die with the main process; leave Ctrl-C to the main process; show
    diagnostics as the main process does; start the judging server before the first
    notebook."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    logs.configure(level, debug)
    from grader.lifeline import die_with_parent

    die_with_parent(or_exit_if_orphaned=True)
    from grader.judging import judge

    judge.warm()


def stop_workers(pool: ProcessPoolExecutor) -> None:
    """Stop every worker now (their kernels and sandboxes die with them)."""
    pool.shutdown(wait=False, cancel_futures=True)
    workers = multiprocessing.active_children()
    for process in workers:
        process.terminate()
    for process in workers:
        process.join(STOP_SECONDS)
        if process.is_alive():
            process.kill()
            process.join(STOP_SECONDS)


OnResult = Callable[["Job", "Result"], None]
TRIES = 3  # a notebook whose worker crashed this many times gets a "Not graded" result


def run_pool(todo: list["Job"], jobs: int, on_result: OnResult, progress: Progress) -> None:
    """Grade ``todo`` in worker processes; a crashed pool is rebuilt and the rest retried."""
    from grader.results.result import ungraded_result

    attempts = {id(j): 0 for j in todo}
    while todo:
        remaining = _one_pool(todo, jobs, on_result, progress)
        if remaining:
            log.warning("a grading worker crashed: %d notebooks go to a new pool", len(remaining))
        todo = []
        for job in remaining:
            attempts[id(job)] += 1
            if attempts[id(job)] < TRIES:
                todo.append(job)
                continue
            flags = [f"grader worker crashed {TRIES} times"]
            on_result(job, ungraded_result(job, messages.CRASHED, flags=flags))
            progress.update(1)


def _one_pool(todo: list["Job"], jobs: int, on_result: OnResult, progress: Progress) -> list["Job"]:
    """Grade ``todo`` in one pool of worker processes; the jobs its breaking left undone."""
    from grader.batch.job import grade

    remaining = []
    pool = ProcessPoolExecutor(
        max_workers=min(jobs, len(todo)),
        mp_context=multiprocessing.get_context("spawn"),
        initializer=worker_init,
        initargs=logs.choice(),
    )
    try:
        futures = {pool.submit(grade, job): job for job in todo}
        for future in as_completed(futures):
            job = futures[future]
            try:
                result = future.result()
            except BrokenProcessPool:
                log.debug("%s/%s: its worker pool broke", job.student, job.notebook)
                remaining.append(job)
                continue
            on_result(job, result)
            progress.update(1)
    except BaseException:
        stop_workers(pool)
        raise
    pool.shutdown(wait=True)
    return remaining


@contextmanager
def workers_scratch() -> Iterator[None]:
    """TMPDIR of the workers started inside (their private folders): removed, and this
    process's TMPDIR restored, after."""
    scratch = sandbox.private_folder("attn-grade-")  # a killed run's is removed by the next
    before = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = scratch
    try:
        yield
    finally:
        if before is None:
            del os.environ["TMPDIR"]
        else:
            os.environ["TMPDIR"] = before
        shutil.rmtree(scratch, ignore_errors=True)
