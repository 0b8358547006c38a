"""grader/results/out.py, directly: where OUT's records lie, the one way they are written, and
the run's seed (chosen, recorded, or drawn for a new OUT)."""

import importlib.util
from pathlib import Path

import pytest

from grader.errors import UserError
from grader.results import out


def test_a_result_lies_under_work_results_by_student_and_notebook():
    assert out.result_path(Path("/o"), "ada", "01_soft_lookup") == Path(
        "/o/work/results/ada/01_soft_lookup.json"
    )


def test_write_text_replaces_at_once_and_makes_the_folder(tmp_path):
    path = tmp_path / "a" / "b.txt"
    out.write_text(path, "one")
    out.write_text(path, "two")
    assert path.read_text() == "two" and [p.name for p in path.parent.iterdir()] == ["b.txt"]


def test_an_interrupted_write_keeps_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "b.txt"
    path.write_text("old")
    with pytest.raises(KeyError), out.replaced(path) as tmp:
        tmp.write_text("half")
        raise KeyError
    assert path.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["b.txt"]


def test_the_seed_chosen_wins_then_oUT_keeps_its_own(tmp_path, monkeypatch):
    assert out.recorded_seed(tmp_path) is None
    assert out.settle_seed(tmp_path, 7) == 7 and out.recorded_seed(tmp_path) == 7
    assert out.settle_seed(tmp_path, None) == 7  # a resumed run keeps it
    assert out.settle_seed(tmp_path, 8) == 8 and out.recorded_seed(tmp_path) == 8
    fresh = tmp_path / "new"
    monkeypatch.setattr(out.secrets, "randbits", lambda bits: bits * 1000)
    assert out.settle_seed(fresh, None) == out.SECRET_BITS * 1000


@pytest.mark.parametrize("text", ["not json", '{"seed": "7"}', "{}", '{"seed": true}'])
def test_a_damaged_seed_record_is_one_error_line(tmp_path, text):
    (tmp_path / "work").mkdir()
    (tmp_path / out.SEED).write_text(text)
    with pytest.raises(UserError, match="is damaged: give --seed, or grade into a new --out"):
        out.recorded_seed(tmp_path)


def _registry() -> dict[str, out.OutFile]:
    return {name: f for name, f in vars(out).items() if isinstance(f, out.OutFile)}


def test_every_file_of_out_is_registered_once_with_its_writer_and_readers():
    registry = _registry()
    assert set(registry.values()) == set(out.FILES)
    assert len({f.path for f in out.FILES}) == len(out.FILES)
    for name, entry in registry.items():
        for module in (entry.writer, *entry.readers):
            spec = importlib.util.find_spec(module)
            assert spec and spec.origin, f"{name}: no module {module}"
            source = Path(spec.origin).read_text()
            # each names the file: by its constant, or (not yet moved to it) by its name
            assert name in source or entry.path.name in source, f"{module} never names {name}"


def test_an_autograded_notebook_lies_where_formgrader_reads_it():
    assert out.autograded_path(Path("/o"), "ada", "01_x") == Path(
        "/o/nbgrader/autograded/ada/01_x/01_x.ipynb"
    )
