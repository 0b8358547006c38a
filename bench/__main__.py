"""`python -m bench [NAME ...]`: run the benchmarks, print a table, write docs/benchmarks.md.

Runs every ``bench/p*.py`` module (or the ones named, e.g. ``p1 p4``) in turn; a module
that fails gives one "error" row and the rest still run.
"""

import argparse
import datetime
import importlib
import os
import platform
import sys
import time
import traceback
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

HERE = Path(__file__).resolve().parent
DOC = HERE.parent / "docs" / "benchmarks.md"


def modules(names=None) -> list[str]:
    found = sorted(p.stem for p in HERE.glob("p*.py"))
    if names:
        unknown = [n for n in names if not any(m.startswith(n) for m in found)]
        if unknown:
            raise SystemExit(f"error: no benchmark {', '.join(unknown)}; have {', '.join(found)}")
        found = [m for m in found if any(m.startswith(n) for n in names)]
    return found


def machine() -> dict[str, str]:
    def first(path, key):
        try:
            for line in Path(path).read_text().splitlines():
                if line.startswith(key):
                    return line.split(":", 1)[1].strip()
        except OSError:
            pass
        return "unknown"

    def pkg(name):
        try:
            return version(name)
        except PackageNotFoundError:
            return "not installed"

    mem = first("/proc/meminfo", "MemTotal")
    ram = f"{int(mem.split()[0]) / 2**20:.1f} GiB" if mem != "unknown" else "unknown"
    return {
        "CPU": first("/proc/cpuinfo", "model name") if sys.platform.startswith("linux")
        else platform.processor() or "unknown",
        "cores": str(os.cpu_count()),
        "RAM": ram,
        "OS": f"{platform.system()} {platform.release()}",
        "Python": platform.python_version(),
        "torch": pkg("torch"),
        "numpy": pkg("numpy"),
        "nbgrader": pkg("nbgrader"),
        "date": datetime.date.today().isoformat(),
    }  # fmt: skip


def table(rows) -> list[str]:
    out = ["| metric | measured | target |", "|---|---|---|"]
    out += [f"| {m} | {v} | {t} |" for m, v, t in rows]
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="benchmarks to run, e.g. p1 p4 (default: all)")
    parser.add_argument(
        "--out", type=Path, default=DOC, help="markdown report (default: %(default)s)"
    )
    args = parser.parse_args(argv)
    rows, failed, took = [], [], {}
    for name in modules(args.names):
        print(f"running {name} ...", flush=True)
        start = time.perf_counter()
        try:
            rows += list(importlib.import_module(f"bench.{name}").run())
        except Exception as err:  # one broken benchmark must not hide the others
            traceback.print_exc()
            rows.append((f"{name}", f"error: {type(err).__name__}: {err}", ""))
            failed.append(name)
        took[name] = time.perf_counter() - start
    lines = table(rows)
    print("\n".join(lines))
    info = machine()
    doc = [
        "# Benchmarks",
        "",
        "Measured by `make bench` (`python -m bench`); rerun it to refresh this page.",
        "Speed targets live here, not in the tests. What each row measures is described in",
        "the docstring of its module in `bench/`.",
        "",
        "Machine: " + ", ".join(f"{k} {v}" for k, v in info.items()),
        "",
        "Benchmarks run: " + ", ".join(f"{n} ({t:.0f} s)" for n, t in took.items()),
        "",
        *lines,
        "",
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(doc))
    print(f"wrote {args.out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
