"""axe-core in a Playwright page: the WCAG 2.1 A and AA violations a page has.

axe-core comes from npm, pinned by tests/axe/package-lock.json and installed by `make axe`
(`make test` does) into the venv, as JupyterHub's proxy is. The tests run it over each page
a learner reads: every notebook's HTML handout (explorers drawn), a feedback page, the class
report, and JupyterLab with 07, 08 and 10's explorers and a course figure rendered.
"""

import pytest

from grader.course import REPO_ROOT

AXE = REPO_ROOT / ".venv" / "axe" / "node_modules" / "axe-core" / "axe.min.js"
WCAG_21_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
# Each violation's elements, less those a (rule, selector) pair excuses; one line each.
_RUN = """async ([tags, excused]) => {
    const found = await axe.run(document, {runOnly: {type: 'tag', values: tags},
        resultTypes: ['violations'], elementRef: true});
    return found.violations.flatMap(v => v.nodes
        .filter(n => !excused.some(([rule, sel]) => rule === v.id && n.element.closest(sel)))
        .map(n => `${v.id} (${v.impact}): ${n.target.join(' ')}: `
                  + n.failureSummary.split('\\n').slice(1).join(' ').trim()));
}"""


def violations(page, excused: dict[str, str] | None = None) -> list[str]:
    """Every WCAG 2.1 A/AA violation axe finds on ``page``, one line each ("rule (impact):
    element: why"), but those of ``excused``, ``{rule: CSS selector}``: a rule's violations
    on (or inside) the elements the selector matches, which are not the course's own."""
    if not AXE.is_file():
        pytest.fail(f"axe-core is missing ({AXE}): run `make axe` (make test does).")
    page.add_script_tag(path=str(AXE))
    return page.evaluate(_RUN, [WCAG_21_AA, list((excused or {}).items())])
