"""The report in a real browser: headless Chromium opens index.html from disk and every image decodes
(naturalWidth > 0).  Skipped when no Chromium is installed (Debian: `apt-get install chromium`)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest
from click.testing import CliRunner

from dpexp.cli import main

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
BROWSER = next((shutil.which(b) for b in BROWSERS if shutil.which(b)), None)
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars",
         "--no-first-run", "--allow-file-access-from-files"]

# appended to a copy of the page (the report itself has no script): writes what the browser saw into the DOM
PROBE = """<script>window.addEventListener('load', function () {
  var out = Array.prototype.map.call(document.images, function (i) {
    return [i.getAttribute('src'), i.complete, i.naturalWidth, i.naturalHeight]; });
  var pre = document.createElement('pre'); pre.id = 'probe'; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre); });</script>"""


def _run(args: list[str], timeout: int = 120) -> subprocess.CompletedProcess:
    return subprocess.run([BROWSER, *FLAGS, *args], capture_output=True, text=True, timeout=timeout)


@pytest.mark.skipif(BROWSER is None, reason="no Chromium installed")
def test_every_image_loads_in_headless_chromium(runs, tmp_path):
    out = tmp_path / "report"
    r = CliRunner().invoke(main, ["report", str(runs.root / "results"), "--out", str(out)])
    assert r.exit_code == 0, r.output
    page = (out / "index.html").read_text(encoding="utf-8")
    n_img = page.count("<img ")
    probe = out / "probe.html"  # same folder: the relative image paths resolve as in index.html
    probe.write_text(page.replace("</body>", PROBE + "\n</body>"), encoding="utf-8")
    proc = _run(["--virtual-time-budget=15000", "--dump-dom", probe.as_uri()])
    m = re.search(r'<pre id="probe">(.*?)</pre>', proc.stdout, re.S)
    assert m, f"no probe output (rc {proc.returncode}): {proc.stderr[-2000:]}"
    seen = json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    assert len(seen) == n_img == 4
    for src, complete, width, height in seen:
        assert complete and width > 0 and height > 0, src
    # and the page renders to a screenshot (what docs/figures/report.png is made with)
    shot = tmp_path / "shot.png"
    proc = _run(["--window-size=1200,900", f"--screenshot={shot}", (out / "index.html").as_uri()])
    assert shot.is_file() and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", proc.stderr[-2000:]
