"""The documentation site at 1280 px: no code block overflows its column, and the copy button
covers no code (docs/stylesheets/extra.css). Builds the site with mkdocs, checks every page in
headless Chromium."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_docs import MKDOCS_YML, ROOT, require_docs_tools

pytestmark = [pytest.mark.slow, pytest.mark.browser]

#: Per code block: how far its text runs past the block (px), and how many text boxes lie under
#: the copy button.
CODE_LAYOUT_JS = """() => {
  const out = [];
  for (const pre of document.querySelectorAll('.md-typeset pre')) {
    const code = pre.querySelector('code');
    if (!code) continue;
    const overflow = code.scrollWidth - code.clientWidth;
    const button = pre.querySelector('.md-clipboard');
    let covered = 0;
    if (button) {
      const b = button.getBoundingClientRect();
      const range = document.createRange();
      range.selectNodeContents(code);
      for (const r of range.getClientRects()) {
        if (r.width > 0 && r.right > b.left + 1 && r.left < b.right - 1 && r.bottom > b.top + 1 && r.top < b.bottom - 1) {
          covered++;
        }
      }
    }
    if (overflow > 1 || covered) out.push({overflow, covered, text: code.textContent.slice(0, 60)});
  }
  return out;
}"""


def test_code_blocks_fit_at_1280_px(tmp_path):
    require_docs_tools()
    from report.browser_checks import ARGS, CHROMIUM

    if CHROMIUM is None:
        pytest.skip("Debian's chromium is not installed (run scripts/ci-system-deps.sh)")
    sync_api = pytest.importorskip("playwright.sync_api")
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--config-file", str(MKDOCS_YML),
                           "--site-dir", str(site)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    pages = [p for p in sorted(site.rglob("index.html")) if "api" not in p.relative_to(site).parts]
    assert len(pages) > 20
    bad: dict[str, list] = {}
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        blocks = 0
        for html in pages:
            page.goto(Path(html).as_uri())
            page.wait_for_load_state("load")
            blocks += page.evaluate("() => document.querySelectorAll('.md-typeset pre > code').length")
            found = page.evaluate(CODE_LAYOUT_JS)
            if found:
                bad[str(html.relative_to(site))] = found
        browser.close()
    assert blocks > 50
    assert not bad, f"code blocks overflowing or under the copy button at 1280 px: {bad}"
