"""Grading on a Dask cluster: ``python -m grader autograde ... --scheduler ADDRESS``.

The instructor starts a ``dask.distributed`` cluster however their site does (``dask
scheduler`` and ``dask worker`` on lab machines, dask-jobqueue on SLURM, dask-gateway on
Kubernetes); :func:`connect` returns a drop-in for the local pool that sends every job to it.
A job carries the submission's bytes and everything trusted about its notebook, and its result
carries everything to write, so workers need no shared filesystem and never see OUT: the main
process stays the single writer, and progress and resume work as with the local pool.

Each worker grades with the same :func:`grader.batch.job.grade` in the same OS sandbox, so it needs
the same course version installed (checked: a different grader would give different grades)
and bubblewrap. Two more rules, checked on every worker before it grades:

- one thread per worker process (``--nthreads 1``): the sandbox's unprivileged uid is held
  per process, by a lock file on that machine (``grader.run.sandbox.slot``), so two worker
  processes on one machine never share a uid (nor with a local run), but two threads of
  one process would, and each notebook kills whatever its uid left behind;
- not a daemonic process (``DASK_DISTRIBUTED__WORKER__DAEMON=False``): grading starts a
  judging process per notebook, which Python forbids in daemonic processes.

Failures are bounded. A worker that dies mid-notebook loses nothing: the scheduler runs the
notebook elsewhere, and marks it failed after ``distributed.scheduler.allowed-failures``
(default 3) more deaths; grading that raises on a worker (never a submission's doing:
``grade`` turns those into results) is retried :data:`RETRIES` times. Either way the
notebook then gets a "Not graded" row and a flag, and the batch goes on. SIGTERM and Ctrl-C
cancel what is not finished and keep what is (a notebook already running on a worker ends
there, within its time limits); no worker at all for :data:`IDLE_SECONDS` stops the batch
the same way.
"""

import multiprocessing
import uuid
from collections.abc import Callable
from functools import partial
from time import monotonic

from dask.distributed import Client, Future, KilledWorker, Worker, get_worker, wait

from grader.batch.job import Job, grade, job_key
from grader.batch.progress import Progress
from grader.errors import UserError
from grader.judging import judge
from grader.results.messages import CRASHED
from grader.results.result import Result, ungraded_result
from grader.run import sandbox

CONNECT_SECONDS = 10
RETRIES = 2
POLL_SECONDS = 2
IDLE_SECONDS = 600
OnResult = Callable[[Job, Result], None]
RunJobs = Callable[[list[Job], int, OnResult, Progress], None]  # as grader.batch.pool.run_pool


class WorkerUnfit(Exception):
    """This worker cannot grade (the message says why and how to start it)."""


def connect(address: str) -> RunJobs:
    """A function like ``grader.batch.pool.run_pool``, grading on the cluster at ``address``;
    an unreachable scheduler is one clear error, before anything is written."""
    try:
        client = Client(address, timeout=CONNECT_SECONDS)
    except (OSError, ValueError) as err:
        raise UserError(f"cannot reach the Dask scheduler at {address}: {err}") from None
    return partial(_grade_all, client)


def worker_problem(job: Job, key: str, dask_worker: Worker | None = None) -> str:
    """Why this worker cannot grade ``job`` (whose key on the instructor's side is ``key``),
    or "" when it can."""
    worker = dask_worker or get_worker()
    if worker.state.nthreads != 1:
        return (
            f"Dask worker {worker.address} runs {worker.state.nthreads} threads; start workers "
            "with `--nthreads 1` (threads of one process share a sandbox uid)"
        )
    if multiprocessing.current_process().daemon:
        return (
            f"Dask worker {worker.address} is a daemonic process, which cannot start "
            "judging processes; start workers with DASK_DISTRIBUTED__WORKER__DAEMON=False"
        )
    if job_key(job) != key:
        return (
            f"Dask worker {worker.address} runs other grader code than this machine; "
            "install the same course version on every worker"
        )
    if job.settings.sandbox:
        try:
            sandbox.check()
        except sandbox.Unavailable as err:
            return f"Dask worker {worker.address}: {err}"
    return ""


def grade_on_worker(job: Job, key: str) -> Result:
    """The task: ``grade(job)`` on a worker that is fit for it."""
    problem = worker_problem(job, key)
    if problem:
        raise WorkerUnfit(problem)
    judge.warm()
    return grade(job)


def _check_workers(client: Client, job: Job, key: str) -> None:
    problems = [p for p in client.run(worker_problem, job, key).values() if p]
    if problems:
        raise UserError(problems[0])


def _outcome(job: Job, future: Future[Result]) -> Result:
    """The result of a finished future, or a "Not graded" result saying why there is none."""
    if future.status == "finished":
        result: Result = future.result()
        return result
    if future.status != "error":  # cancelled: the client lost the scheduler
        raise UserError("lost the Dask scheduler; run the same command again to finish")
    err = future.exception()
    if isinstance(err, KilledWorker):
        flag = f"Dask workers died {err.allowed_failures + 1} times grading this notebook"
    else:
        flag = f"grader error on a Dask worker: {type(err).__name__}: {err}"[:600]
    return ungraded_result(job, CRASHED, flags=[flag])


def _wait_for_some(
    client: Client, pending: set[Future[Result]], idle: dict[str, float]
) -> set[Future[Result]]:
    """The futures of ``pending`` that finish within POLL_SECONDS; stop when the cluster
    has had no worker for IDLE_SECONDS."""
    try:
        done: set[Future[Result]] = wait(
            pending, timeout=POLL_SECONDS, return_when="FIRST_COMPLETED"
        ).done
        return done
    except TimeoutError:
        if client.nthreads():
            idle["since"] = monotonic()
        elif monotonic() - idle["since"] > IDLE_SECONDS:
            raise UserError(
                f"no Dask worker has joined the cluster for {IDLE_SECONDS} s; start workers "
                "and run the same command again to finish"
            ) from None
        return set()


def _grade_all(
    client: Client, todo: list[Job], jobs: int, on_result: OnResult, progress: Progress
) -> None:
    """Grade ``todo`` on the cluster (``jobs``, the local worker count, does not apply);
    ``on_result`` runs here, in the main process, for every notebook as it finishes."""
    futures: dict[Future[Result], Job] = {}
    try:
        if todo:
            _check_workers(client, todo[0], job_key(todo[0]))
        for rank, job in enumerate(todo):  # started in this order: higher priority first
            key = f"grade-{job.student}-{job.notebook}-{uuid.uuid4().hex[:8]}"
            future = client.submit(
                grade_on_worker, job, job_key(job), key=key, retries=RETRIES, priority=-rank
            )
            futures[future] = job
        idle = {"since": monotonic()}
        pending = set(futures)
        while pending:
            for future in _wait_for_some(client, pending, idle):
                pending.discard(future)
                job = futures.pop(future)
                on_result(job, _outcome(job, future))
                future.release()
                progress.update(1)
    except BaseException:
        client.cancel(list(futures), force=True)
        raise
    finally:
        client.close()
