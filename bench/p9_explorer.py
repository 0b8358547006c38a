"""P9: the attention-map explorer's first render (attnlib.explorer), target under a second.

Two parts, each the median of a few runs, for notebook 07's explorer (both trained models on
``[BOS] + r + r``, len(r) = 10) and for the real-text model's held-out stretches:

- in the kernel: the forward passes, the scores and the page (``explore(...)._repr_html_()``),
  with the models already loaded, as the notebooks have them;
- in Debian's Chromium (Playwright, offline): from loading the page to the explorer drawn
  (grid and shaded text), read from the page's own clock.

The first render a learner waits for is about the sum of the two, plus the front end's
transport of the output (not measured here).
"""

import statistics
import tempfile
import time
from pathlib import Path

import torch

from attnlib import explorer, realtext, tasks
from attnlib.shipped import load_shipped

RUNS = 5
CHROMIUM = "/usr/bin/chromium"
DRAWN = "document.querySelector('.attn-explorer[data-drawn] .attn-line') !== null"


def _pages():
    models = {"RoPE": load_shipped("induction"), "no positions": load_shipped("no_positions")}
    tokens = tasks.repeat_twice(torch.Generator().manual_seed(7), 1, 10)[0]
    real = realtext.load_real_text()
    return {
        "07, two models, T = 21": lambda: explorer.explore(models, tokens),
        "real text, three stretches, T = 33": lambda: explorer.explore_text(real),
    }


def _kernel_seconds(make) -> tuple[float, str]:
    timings, page = [], ""
    for _ in range(RUNS):
        start = time.perf_counter()
        page = make()._repr_html_()
        timings.append(time.perf_counter() - start)
    return statistics.median(timings), page


def _browser_seconds(pages: dict[str, str]) -> dict[str, float]:
    from playwright.sync_api import sync_playwright

    found = {}
    with tempfile.TemporaryDirectory(prefix="bench-p9-") as scratch, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page()
        for name, html in pages.items():
            path = Path(scratch) / "page.html"
            path.write_text(f"<!doctype html><html><body>{html}</body></html>")
            timings = []
            for _ in range(RUNS):
                page.goto(path.as_uri(), wait_until="load")
                page.wait_for_function(DRAWN)
                timings.append(page.evaluate("performance.now()") / 1000)
            found[name] = statistics.median(timings)
        browser.close()
    return found


def run() -> list[tuple[str, str, str]]:
    rows, html, kernel = [], {}, {}
    for name, make in _pages().items():
        kernel[name], html[name] = _kernel_seconds(make)
    browser = _browser_seconds(html)
    for name in html:
        total, what = kernel[name] + browser[name], f"P9 explorer {name}"
        rows += [
            (f"{what}: page built in the kernel", f"{kernel[name] * 1000:.0f} ms", ""),
            (f"{what}: page size", f"{len(html[name]):,} characters", ""),
            (f"{what}: load to drawn in Chromium", f"{browser[name] * 1000:.0f} ms", ""),
            (f"{what}: first render (kernel + Chromium)", f"{total:.2f} s", "< 1 s"),
        ]
    return rows
