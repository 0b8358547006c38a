"""The Jupyter and nbgrader config files the course writes (a graded class's course folder,
formgrader's profile, the bundle's and the workshop server's profiles), made from data in one
place: every value is written with ``repr``, so a path or a name is data, never code."""

from collections.abc import Mapping


def config_file(header: str, values: Mapping[str, Mapping[str, object]]) -> str:
    """``# header``, then ``c.<section>.<name> = <value>`` for each of ``values``
    (``{section: {name: value}}``), as traitlets' Python config loader reads them."""
    lines = [f"# {header}", "c = get_config()  # noqa: F821"]
    for section, names in values.items():
        lines += [f"c.{section}.{name} = {value!r}" for name, value in names.items()]
    return "\n".join(lines) + "\n"
