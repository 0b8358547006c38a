"""Which cells grading runs (``grader.run.needs``): the reading of names, the demo marks in
``solutions/``, and the choice a job makes for one student's answers."""

import nbformat
import pytest
from fixtures.adversarial import NB, honest, with_answer

from grader import course, settings
from grader.batch.job import Job, choose_cells, code_view, read, rebuild
from grader.judging.trusted import models
from grader.run import needs

MODULES = {"np", "torch", "plt"}


@pytest.mark.parametrize(
    ("source", "changed"),
    [
        ("x = 1\nfor i in range(3):\n    y = i", {"x", "i", "y"}),
        ("def f(a):\n    return a\nclass C: pass", {"f", "C"}),
        ("import numpy as np2\nfrom math import pi", {"np2", "pi"}),
        ("Q[0] = 1\nK.data += 1\ndel V[2]", {"Q", "K", "V"}),
        ("noise = rng.normal(size=3)", {"noise", "rng"}),  # the generator moves on
        ("train(model, steps=lr)", {"model", "lr"}),  # arguments may be changed in place
        ("y = np.sum(X)\nplt.plot(y)", {"y", "X"}),  # modules' plain functions change nothing
        ("torch.manual_seed(0)", {"torch"}),  # ... their global state does
        ("plt.rcParams['figure.dpi'] = 80", {"plt"}),
    ],
)
def test_what_a_cell_may_change(source, changed):
    assert needs.changes(source, MODULES) == changed


@pytest.mark.parametrize(
    "source",
    [
        "%timeit f()",
        "def f(:",
        "globals()['x'] = 1",
        "y = eval('x')",
        "v = getattr(m, name)",
        "from numpy import *",
        "def f():\n    global x\n    x = 1",
        "d = f.__globals__",
        "sys.modules['attnlib'] = None",
    ],
)
def test_code_that_cannot_be_read_with_certainty_is_unclear(source):
    with pytest.raises(needs.Unclear):
        needs.names(source)


@pytest.mark.parametrize(
    ("source", "read"),
    [
        ("{w: x for w, x in zip(ws, xs) if x > t}", {"zip", "ws", "xs", "t"}),
        ("[x for x in x]", {"x"}),  # the first iterable is read outside the comprehension
        ("[y for x in xs for y in x]", {"xs"}),
        ("def f(a):\n    return [a * k for k in ks]", {"ks"}),
        ("total = sum(q for q in Q)\nprint(q)", {"sum", "Q", "print", "q"}),
    ],
)
def test_a_comprehension_reads_no_name_of_its_own(source, read):
    assert needs.global_reads(source) == read


def test_a_demo_cell_runs_when_a_later_cell_reads_what_it_may_change():
    sources = [
        "rng = make_rng()",  # 0: kept (cell 3 reads rng)
        "sample = rng.normal()",  # 1 demo: moves rng, which cell 3 reads: runs
        "shown = plot(sample)",  # 2 demo: nothing later reads `shown`: left out
        "check(rng.normal())",  # 3
        "model = build()",  # 4 demo: nothing after it: left out
    ]
    assert needs.skippable(sources, {1, 2, 4}, MODULES) == {2, 4}
    sources[3] += "\nprint(shown)"
    assert needs.skippable(sources, {1, 2, 4}, MODULES) == {4}


def _trusted():
    return models(course.assignments(), settings.load().release_cache)


@pytest.mark.parametrize("assignment", course.assignments())
def test_every_demo_mark_holds_for_the_solutions(assignment):
    """Each cell solutions/ marks as a demo is a plain code cell that the analysis leaves out
    with the instructor's own answers: a mark never stands unchecked or silently ignored."""
    trusted = _trusted()[assignment]
    source = nbformat.read(course.source_path(assignment), as_version=4)
    marked = {i for i, c in enumerate(source.cells) if needs.is_demo(c)}
    assert marked, f"{assignment} marks no demo cell"
    assert all("nbgrader" not in source.cells[i].metadata for i in marked)
    assert marked == set(trusted.demo), "the trusted release lost or moved the marks"
    code, sources, _, answers = code_view(source, trusted)
    demo = {k for k, i in enumerate(code) if i in marked}
    left_out = needs.skippable(sources, demo, set(trusted.module_names), answers)
    left_out = {code[k] for k in left_out}
    assert left_out == marked, (
        f"marked but needed by a later cell: {sorted(marked - left_out)}; see grader.run.needs"
    )


def _choice(answers: dict | None = None, settings_=None) -> set:
    """The demo cells a job leaves out for notebook 01 with these answer sources."""
    nb = honest()
    for grade_id, source in (answers or {}).items():
        nb = with_answer(grade_id, source, nb)
    snapshot = settings_ or settings.load().snapshot()
    job = Job("s", NB, nbformat.writes(nb).encode(), _trusted()[NB], snapshot)
    return choose_cells(rebuild(read(job)))


def test_a_student_answer_keeps_the_demo_cell_whose_name_it_reads():
    trusted = _trusted()[NB]
    release = nbformat.reads(trusted.release, as_version=4)
    assert _choice() == set(trusted.demo), "an honest notebook leaves every demo cell out"
    last, grade_id = max(
        (i, c.metadata["nbgrader"]["grade_id"])
        for i, c in enumerate(release.cells)
        if c.metadata.get("nbgrader", {}).get("solution") and c.cell_type == "code"
    )
    demo = max(i for i in trusted.demo if i < last)
    name = sorted(needs.names(release.cells[demo].source)[1] - {"_"})[0]
    answer = trusted.source_cells[grade_id] + f"\nprint({name})\n"
    assert demo not in _choice({grade_id: answer}), f"`{grade_id}` reads `{name}` (cell {demo})"


def test_an_unclear_answer_or_the_setting_runs_every_cell():
    unclear = "def soft_lookup(q, k, v):\n    return globals()['x']\n"
    assert _choice({"soft_lookup": unclear}) == set()
    assert _choice(settings_=settings.load({"skip_demo_cells": False}).snapshot()) == set()


def _judged(cells: list[tuple[str, str]], failed: set[str]) -> dict[str, str]:
    """{test id: message} after ``judge.point_to_earlier``, for a notebook of ``cells``
    ((grade id, source as it runs)) whose tests ``failed`` (each says "wrong")."""
    from grader.judging.judge import point_to_earlier

    tests = [{"id": g, "exercise": g.removeprefix("test_").removesuffix("_hidden")}
             for g, _ in cells if g.startswith("test_")]  # fmt: skip
    verdicts = {t["id"]: {"passed": t["id"] not in failed, "message": ""} for t in tests}
    for test_id in failed:
        verdicts[test_id]["message"] = "wrong"
    request = {"tests": tests, "records": dict.fromkeys(verdicts, b""), "cells": cells}
    point_to_earlier(request, verdicts)
    return {i: v["message"] for i, v in verdicts.items() if not v["passed"]}


def test_a_check_behind_a_failed_earlier_exercise_names_it():
    """Grading names the earlier exercise a failed check relies on when that one failed its
    own check in the same run: called by the answer, or through what a cell computed with
    it; not one that passed, one the answer does not use, nor a later one."""
    cells = [
        ("imports", "import numpy as np"),
        ("project", "def project(X, W):\n    return X @ W"),
        ("test_project", "checks.check_project(project)"),
        ("test_project_hidden", "project"),
        ("qkv", "def qkv(X, a, b, c):\n    return project(X, a), project(X, b), project(X, c)"),
        ("test_qkv", "checks.check_qkv(qkv)"),
        ("test_qkv_hidden", "qkv"),
        ("", "Q, K, V = qkv(X, W_Q, W_K, W_V)\nS = Q @ K.T"),  # a demo cell
        ("scores", "def scores(S):\n    return S * 2"),
        ("test_scores", "checks.check_scores(scores, S)"),  # needs `project` through S
        ("alone", "def alone(S):\n    K = S.T\n    return K"),  # its S and K are its own
        ("test_alone", "checks.check_alone(alone)"),
    ]
    says = "This check uses your `project`, which fails its own check: fix `project` first. "
    every = {"test_project", "test_project_hidden", "test_qkv", "test_qkv_hidden",
             "test_scores", "test_alone"}  # fmt: skip
    assert _judged(cells, every) == {
        "test_project": "wrong",
        "test_project_hidden": "wrong",  # its own exercise is not an earlier one
        "test_qkv": says + "wrong",
        "test_qkv_hidden": says + "wrong",
        "test_scores": says + "wrong",
        "test_alone": "wrong",  # does not use `project` (its parameter S is not the cell's S)
    }
    # `project` right (its checks pass): `qkv`'s message stands alone, `scores` names `qkv`
    assert _judged(cells, {"test_qkv", "test_scores"}) == {
        "test_qkv": "wrong",
        "test_scores": says.replace("project", "qkv") + "wrong",
    }
    # only its hidden check fails: still wrong; a later failure is never blamed
    assert _judged(cells, {"test_project_hidden", "test_qkv"})["test_qkv"] == says + "wrong"
    unparsable = [*cells[:4], ("qkv", "def qkv(X" + "(" * 300_000), *cells[5:7]]
    assert _judged(unparsable, {"test_project", "test_qkv"})["test_qkv"] == "wrong"
