"""nbgrader configuration for the course (read by nbgrader's apps, its JupyterLab
extensions and the course grader). `solutions/` is nbgrader's source folder and
`notebooks/` its release folder; `make release` regenerates the latter."""

from pathlib import Path

c = get_config()  # noqa: F821 (provided by nbgrader when it loads this file)

c.CourseDirectory.course_id = "attention-step-by-step"
c.CourseDirectory.root = str(Path(__file__).resolve().parent)
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "notebooks"

c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"

# The course grader's settings (read by grader/settings.py; see `GraderSettings` there for
# every name). Command-line options of `python -m grader autograde` override them.
c.GraderSettings.cell_timeout = 30  # s per cell when grading
c.GraderSettings.notebook_timeout = 300  # s per notebook when grading
c.GraderSettings.memory_mb = 3072  # address space of one student's kernel
c.GraderSettings.validate_timeout = 120  # s per cell for Validate and the handouts

# Validate (nbgrader's Execute) takes its per-cell limit from the same section.
c.Execute.timeout = c.GraderSettings.validate_timeout

# `nbgrader validate` draws its separators this wide and cuts every line at width - 3
# characters, its 4-space indent included: a terminal's 80 columns. The checks wrap their
# messages to fit (attnlib/checks/_cells.py WIDTH; tests/test_validate.py measures them).
c.Validator.width = 80

# Validate's settings (the Execute and Validator sections above) reach learners from here
# only: the student bundle and the workshop server's attendee profile copy them
# (grader.commands.bundle.validate_config), so change them here, and nowhere else.
