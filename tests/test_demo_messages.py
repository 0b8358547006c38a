"""A demo cell that uses an exercise's result names that exercise when the result has the wrong
shape, even when the learner never ran that exercise's check (``attnlib.checks._cells``).

Each demo cell of 08-12 that calls an exercise runs after the notebook's earlier code cells
that it needs, as a learner runs them who checked every other exercise but skipped this one's
check, with one edit of the right answer: its result loses its last column (a score becomes
an empty array). No kernel: the cells run in one namespace under IPython-like file names, and
the handler's message is asked for as IPython would ask.
"""

import ast
import re
import types

import nbformat
import pytest

from attnlib.checks import _cells
from grader.course import assignments, source_path
from grader.run import needs

RETURN = re.compile(r"^(\s*)return (.+?)(\s*#.*)?$", re.M)


def _answers(nb) -> list[str]:
    return [
        c.metadata["nbgrader"]["grade_id"]
        for c in nb.cells
        if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("solution")
    ]


def _uses() -> list:
    """(notebook, demo cell, exercise) for every demo cell of 08-12 that calls an exercise."""
    found = []
    for notebook in (a for a in assignments() if a[:2] >= "08"):
        nb = nbformat.read(source_path(notebook), as_version=4)
        for i, cell in enumerate(nb.cells):
            if cell.cell_type == "code" and needs.is_demo(cell):
                called = [e for e in _answers(nb) if re.search(rf"\b{e}\(", cell.source)]
                found += [
                    pytest.param(notebook, i, e, id=f"{notebook}-{i}-{e}") for e in called[:1]
                ]
    return found


def _wrong_shape(source: str) -> str:
    """The answer with its last ``return`` cut by one column: one edit of a right answer."""
    *_, last = RETURN.finditer(source)
    edit = f"{last.group(1)}return np.atleast_1d({last.group(2)})[..., :-1]"
    return source[: last.start()] + edit + source[last.end() :]


def _cells_before(notebook: str, demo: int, exercise: str) -> list[str]:
    """The code a learner runs up to ``demo``: every answer (``exercise`` cut by one column),
    every visible check but ``exercise``'s, and the earlier demo cells a later cell needs."""
    nb = nbformat.read(source_path(notebook), as_version=4)
    sources, demos = [], set()
    for cell in nb.cells[: demo + 1]:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id", "")
        skipped = grade_id == f"test_{exercise}" or grade_id.endswith("_hidden")
        if cell.cell_type != "code" or skipped:
            continue
        if needs.is_demo(cell):
            demos.add(len(sources))
        sources.append(_wrong_shape(cell.source) if grade_id == exercise else cell.source)
    demos.discard(len(sources) - 1)
    modules = {
        name
        for node in ast.walk(ast.parse(sources[0]))
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for name in needs.imported(node)
    }
    left_out = needs.skippable(sources, demos, modules)
    return [s for k, s in enumerate(sources) if k not in left_out]


def _run(cells: list[str], ns: dict) -> BaseException | None:
    """Run ``cells`` as a kernel would (cell file names, one namespace), on past a cell that
    stops (an earlier demo cell stops too: it uses the same wrong answer); the last one's
    error."""
    err = None
    for k, source in enumerate(cells):
        try:
            exec(compile(source, f"<ipython-input-{k}-test>", "exec"), ns)
        except Exception as stopped:  # noqa: BLE001 (the error under test)
            err = stopped
        else:
            err = None
    return err


@pytest.mark.parametrize(("notebook", "demo", "exercise"), _uses())
def test_a_demo_cell_names_the_exercise_whose_result_has_the_wrong_shape(
    notebook, demo, exercise, monkeypatch
):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setattr(_cells, "PASSED", {})
    monkeypatch.setattr(_cells, "FAILED", {})
    cells = _cells_before(notebook, demo, exercise)
    ns: dict = {"__name__": "__main__"}
    shell = types.SimpleNamespace(
        user_ns=ns, history_manager=types.SimpleNamespace(input_hist_parsed=cells)
    )
    monkeypatch.setattr(_cells, "_shell", lambda: shell)  # the checks that pass say so
    monkeypatch.chdir(source_path(notebook).parent)
    err = _run(cells, ns)
    assert err is not None, "the demo cell ran with a result of the wrong shape"
    said = _cells._explain(shell, type(err), err, err.__traceback__)
    assert said is not None and f"`{exercise}`" in said, said
    assert "hasn't passed its check yet" in said and type(err).__name__ in said, said
