"""Integration: the history site (``python -m reports history site``) opened in a real headless Chromium: it
renders, its script runs, every series has its plot, and the browser's own network log shows no request for
anything but the page's file.  Skipped when Chromium is not installed, unless BMWG_REQUIRE_CHROMIUM=1 (.ci/run
installs Debian's chromium and sets it)."""

import html
import json
import os
import random
import re
import shutil
import subprocess
from urllib.parse import urlsplit

import pytest
from test_regressions import run_of

from reports.__main__ import main as reports_main
from reports.history import open_store

pytestmark = pytest.mark.external

PROBE = ("<script>window.addEventListener('load', function () { var p = document.createElement('pre'); "
         "p.id = 'bmwg-resources'; p.textContent = JSON.stringify(performance.getEntriesByType('resource')"
         ".map(function (e) { return e.name; })); document.body.appendChild(p); });</script>")


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if not found:
        if os.environ.get("BMWG_REQUIRE_CHROMIUM") == "1":
            pytest.fail("BMWG_REQUIRE_CHROMIUM=1 but no chromium on PATH")
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    return found


def test_the_history_site_renders_offline_in_headless_chromium(tmp_path, history_spec):
    browser = chromium()
    rng = random.Random(5)
    path = history_spec()
    with open_store(path) as store:
        for number in range(1, 25):
            store.add(run_of(number, rng.gauss(2.0 if number <= 12 else 3.0, 0.05)))
        for number in range(30, 36):
            store.add(run_of(number, rng.gauss(5.0, 0.05), controller="ryu"))
    site = tmp_path / "site"
    assert reports_main(["history", "site", str(site), "--history", str(path)]) == 0
    # a copy of the page that also lists, once loaded, every resource it fetched (the Resource Timing API: the
    # page's own requests, none of the browser's)
    probe = site / "probed.html"
    probe.write_text((site / "index.html").read_text().replace("</body>", PROBE + "</body>"))
    netlog = tmp_path / "netlog.json"
    page = probe.as_uri()
    done = subprocess.run([browser, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                           "--disable-background-networking", "--disable-component-update", "--disable-sync",
                           f"--user-data-dir={tmp_path / 'profile'}", f"--log-net-log={netlog}",
                           "--net-log-capture-mode=Default", "--virtual-time-budget=5000", "--dump-dom", page],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    dom = done.stdout
    assert dom.count('<section class="series"') == 2 and dom.count("<svg") == 2
    assert '<span id="shown">2</span>' in dom                      # the filter script ran over both series
    assert "regression at run 13" in dom
    fetched = re.search(r'<pre id="bmwg-resources">(.*?)</pre>', dom)
    assert fetched and json.loads(html.unescape(fetched.group(1))) == [], fetched
    # the browser's network log (a file:// page is not in it): nothing but the browser's own services (its clock
    # and component updates, which it asks Google for whatever page it shows)
    events = json.loads(netlog.read_text())
    urls = {e.get("params", {}).get("url") for e in events.get("events", []) if e.get("params", {}).get("url")}
    others = [u for u in urls if not u.startswith("file://") and urlsplit(u).hostname.rsplit(".", 2)[-2:] not in (
        ["google", "com"], ["googleapis", "com"], ["gvt1", "com"])]
    assert others == [], sorted(urls)
