"""A Jupyter server extension: formgrader's submission page runs only its own scripts.

The page is served with a Content-Security-Policy whose ``script-src`` lists the SHA-256 of
each inline script and event handler nbgrader's template writes: those of the template
rendered with an empty notebook when the server starts, and the one script that varies, the
page's ids, read off each response where it has the template's exact form (ids of letters,
digits, ``.``, ``-``, ``/``). A script that came with a student's content is none of them
and does not run, even if it got past :mod:`grader.results.inert`. Scripts load from the
server only, and no plugin, ``<base>``, or form or frame to elsewhere is allowed. Set by a
tornado output transform, the server's public hook for a response's headers.
"""

import base64
import hashlib
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import nbformat
from nbconvert.exporters import HTMLExporter
from tornado.httputil import HTTPHeaders, HTTPServerRequest
from tornado.web import OutputTransform
from traitlets.config import Config

SUBMISSION_PAGE = re.compile(r"/formgrader/submissions/[^/]+/?$")
JS_TYPES = ("", "text/javascript", "application/javascript", "module")
# The one inline script of nbgrader's formgrade template whose text varies by page.
IDS_SCRIPT = re.compile(
    r'<script type="text/javascript">(\nvar submission_id = "[\w-]*";\n'
    r'var notebook_id = "[\w.-]*";\nvar assignment_id = "[\w.-]*";\n'
    r'var base_url = "[\w./-]*";\n)</script>'
)


def exporter_config(filters: dict[str, str] | None = None) -> dict[str, object]:
    """Formgrader's HTMLExporter settings (a section of nbgrader_config.py): student content
    made inert (:mod:`grader.results.inert`), with ``filters`` of the caller's."""
    return {
        "preprocessors": ["grader.results.inert.InertSubmission"],
        "filters": (filters or {}) | {"markdown2html": "grader.results.inert.safe_markdown2html"},
    }


class _InlineScripts(HTMLParser):
    """The inline scripts and event-handler attributes of a page, as written."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.scripts: list[str] = []
        self.handlers: list[str] = []
        self._open: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        self.handlers += [v for k, v in attrs if k.startswith("on") and v is not None]
        if tag == "script" and "src" not in found and (found.get("type") or "") in JS_TYPES:
            self._open = []

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self._open.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "script" and self._open is not None:
            self.scripts.append("".join(self._open))
            self._open = None


def source_hash(text: str) -> str:
    """A CSP source that allows a script or handler of exactly ``text``."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def formgrade_exporter() -> HTMLExporter:
    """An exporter as formgrader makes its own: nbgrader's page, with these settings."""
    from nbgrader.server_extensions.formgrader import handlers

    as_formgrader = {
        "template_name": "formgrade",
        "extra_template_basedirs": [handlers.template_path],
    }
    return HTMLExporter(config=Config({"HTMLExporter": exporter_config() | as_formgrader}))


def page_resources(**names: object) -> dict[str, object]:
    """The resources formgrader's submission handler gives its exporter, ``names`` set."""
    return {"submission_id": "-", "notebook_id": "-", "assignment_id": "-", "base_url": "",
            "student": "-", "index": 0, "total": 1, "notebook_path": "-", "last_name": None,
            "first_name": None} | names  # fmt: skip


def empty_page() -> str:
    """Formgrader's submission page for an empty notebook: the template's scripts alone."""
    page, _ = formgrade_exporter().from_notebook_node(
        nbformat.v4.new_notebook(), resources=page_resources()
    )
    return str(page)


def template_hashes(page: str) -> list[str]:
    """The hashes of ``page``'s inline scripts and handlers, but for its ids script."""
    found = _InlineScripts()
    found.feed(IDS_SCRIPT.sub("", page))
    return list(dict.fromkeys(source_hash(s) for s in found.scripts + found.handlers))


def policy(hashes: list[str], page: str) -> str:
    """The policy for ``page``: the template's scripts (``hashes``) and ``page``'s ids."""
    ids = IDS_SCRIPT.search(page)
    allowed = " ".join(hashes + ([source_hash(ids.group(1))] if ids else []))
    return (
        f"default-src 'self'; script-src 'self' 'unsafe-hashes' {allowed}; "
        "style-src 'self' 'unsafe-inline'; img-src 'self' data:; object-src 'none'; "
        "base-uri 'none'; form-action 'self'; frame-ancestors 'self'"
    )


class SubmissionPolicy(OutputTransform):
    """Adds the policy to formgrader's submission pages; other responses pass unchanged."""

    hashes: list[str] = []  # set once the server has rendered the empty page

    def __init__(self, request: HTTPServerRequest) -> None:
        self._path = request.path

    def transform_first_chunk(
        self, status_code: int, headers: HTTPHeaders, chunk: bytes, finishing: bool
    ) -> tuple[int, HTTPHeaders, bytes]:
        if SUBMISSION_PAGE.search(self._path):
            page = chunk.decode("utf-8", "replace")
            headers["Content-Security-Policy"] = policy(self.hashes, page)
        return status_code, headers, chunk


def enable(profile: Path) -> None:
    """Turn this extension on in a launch profile's server config (``attnlib.lab``'s)."""
    path = profile / "jupyter_server_config.json"
    config = json.loads(path.read_text())
    config["ServerApp"]["jpserver_extensions"][__name__] = True
    path.write_text(json.dumps(config, indent=1) + "\n")


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": __name__}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    SubmissionPolicy.hashes = template_hashes(empty_page())
    serverapp.web_app.add_transform(SubmissionPolicy)
