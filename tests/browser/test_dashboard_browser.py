"""The dashboard driven in headless Chromium against a real `kgym serve --gpus none` with real CPU evaluations, and
the run pages (kgym serve --runs, kgym view) and the HTML report of `kgym grade` on synthetic run folders.

Each test checks what a person would see: the page loads without console errors, its numbers equal the API's, a
job submitted while it is open appears without a reload, a hack shows its family, HTML from a candidate is shown
as text and never runs, a cut-off trajectories.jsonl shows a warning. With KGYM_SCREENSHOTS=DIR the tests also
write the screenshots of docs/ (docs/make_screenshots.sh)."""
import json
import os
import re
import subprocess
import time
import urllib.request

import pytest
from browser_util import console_errors, screenshot
from run_folders import agent_run, fill_store, training_run
from server_util import KERNEL_OK, KGYM_BIN, REF, Server, drkernel_payload

pytestmark = pytest.mark.skipif(not os.path.exists(KGYM_BIN), reason="kgym binary not built")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REDTEAM = os.path.join(ROOT, "tests", "redteam")
INJECT = "<script>window.__kgym_xss = 1</script><img src=x onerror=\"window.__kgym_xss = 2\">"
XSS_KERNEL = f"""import torch
class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x):
        # {INJECT}
        print('{INJECT}')
        raise RuntimeError('{INJECT}')
"""


def read(path):
    with open(path) as f:
        return f.read()


def payload(task_id, kernel, ref=REF):
    p = drkernel_payload(task_id, kernel, ref)
    p.update({"num_correct_trials": 2, "num_perf_trials": 5, "timeout": 180})
    return p


def wait_done(server, task_id):
    r = server.get(f"/v1/evaluations/{task_id}?wait=240", timeout=260).json()
    assert r["state"] == "done", r
    return r


def wait_for(browser, css, timeout=60, text=None):
    """The elements matching `css` (one of them containing `text`), once there. The dashboard redraws parts of the
    page every 2 s, so an element found a moment ago can be gone: such a look is simply tried again."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    def found(d):
        els = d.find_elements(By.CSS_SELECTOR, css)
        if not els:
            return False
        if text is not None and not any(text in e.text for e in els):
            return False
        return els
    return WebDriverWait(browser, timeout, poll_frequency=0.2,
                         ignored_exceptions=(StaleElementReferenceException,)).until(found)


def text_of(browser, css, timeout=60):
    """The text of the first element matching `css`, read in one step of the page's own thread."""
    from selenium.webdriver.support.ui import WebDriverWait
    return WebDriverWait(browser, timeout, poll_frequency=0.2).until(lambda d: d.execute_script(
        "const e = document.querySelector(arguments[0]); return e ? e.innerText : null;", css))


def row_cells(browser, column):
    """{job id: text of its `column` cell} of the job table, read at one instant."""
    return browser.execute_script(
        "const out = {}; for (const tr of document.querySelectorAll('tr[data-job-id]')) {"
        " const td = tr.querySelector(`td[data-col='${arguments[0]}']`); out[tr.dataset.jobId] = td ? td.innerText : null; }"
        " return out;", column)


def assert_no_console_errors(browser):
    errors = console_errors(browser)
    assert not errors, errors


@pytest.fixture(scope="module")
def runs_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    agent_run(str(root / "agent-run"), truncated=True, response_extra=" " + INJECT)
    training_run(str(root / "training-run"))
    return root


@pytest.fixture(scope="module")
def server(tmp_path_factory, runs_root):
    tmp = tmp_path_factory.mktemp("serve")
    s = Server(tmp, "--gpus", "none", "--cpu-slots", "2", "--runs", str(runs_root))
    ids = {"ok": "dash-ok", "hack": "dash-hack", "xss": "dash-xss", "wrong": "dash-wrong", "broken": "dash-broken"}
    s.post("/v1/evaluations", payload(ids["ok"], KERNEL_OK))
    s.post("/v1/evaluations", payload(ids["wrong"], KERNEL_OK.replace("torch.clamp(x, min=0.0)", "x * 2.0")))
    s.post("/v1/evaluations", payload(ids["broken"], KERNEL_OK.replace("def forward(self, x):", "def forward(self, x)")))
    s.post("/v1/evaluations", payload(ids["hack"], read(os.path.join(REDTEAM, "candidates", "H_identity.py")),
                                      read(os.path.join(REDTEAM, "refs", "relu.py"))))
    s.post("/v1/evaluations", payload(ids["xss"], XSS_KERNEL))
    results = {k: wait_done(s, v)["result"] for k, v in ids.items()}
    if results["ok"].get("error_code") == "SYSTEM_ERROR":
        s.kill()
        pytest.skip("evaluator infrastructure unavailable here: " + str(results["ok"].get("error_message")))
    s.ids, s.results = ids, results
    yield s
    s.kill()


def open_page(browser, url):
    browser.get(url)
    wait_for(browser, "#nav a")


def test_dashboard_numbers_equal_the_api(browser, server):
    assert server.results["ok"]["outcome"] == "correct"
    assert server.results["hack"]["outcome"] == "hacked", server.results["hack"]
    open_page(browser, server.url + "/")
    wait_for(browser, "tr[data-job-id]")
    wait_for(browser, "[data-testid='outcome-count-correct']")
    summary = server.get("/v1/dashboard/summary").json()
    jobs = server.get("/v1/jobs?limit=50").json()
    q = summary["queue"]
    assert text_of(browser, "[data-testid='queue-depth']") == str(q["queued"] + q["retrying"])
    assert text_of(browser, "[data-testid='jobs-range']") == f"1–{min(50, jobs['total'])} of {jobs['total']}"
    stored = summary["jobs"]
    assert text_of(browser, "[data-testid='jobs-stored']") == str(stored["queued"] + stored["running"] + stored["done"])
    for label, n in summary["outcomes"].items():
        assert text_of(browser, f"[data-testid='outcome-count-{label}']") == str(n)
    assert summary["hack_families"] == {"output aliases input": 1}
    assert text_of(browser, "[data-testid='family-count-output aliases input']") == "1"
    speeds = row_cells(browser, "speedup")
    assert speeds == {j["id"]: f"{j['speedup']:.3f}" if j["speedup"] is not None else "–" for j in jobs["jobs"]}
    assert "output aliases input" in row_cells(browser, "outcome")[server.ids["hack"]]  # the family is listed too
    assert browser.find_elements("css selector", "[data-testid='outcome-chart']")
    screenshot(browser, "dashboard")
    assert_no_console_errors(browser)


def test_a_job_submitted_while_the_page_is_open_appears_without_reload(browser, server):
    open_page(browser, server.url + "/")
    wait_for(browser, "tr[data-job-id]")
    browser.execute_script("window.__kgym_same_page = 42")
    server.post("/v1/evaluations", payload("dash-live", KERNEL_OK))
    wait_for(browser, "tr[data-job-id='dash-live']", timeout=30)
    assert browser.execute_script("return window.__kgym_same_page") == 42  # no reload happened
    wait_done(server, "dash-live")
    wait_for(browser, "tr[data-job-id='dash-live'] .badge.correct", timeout=30)  # its verdict arrives too
    assert_no_console_errors(browser)


def test_search_and_filter_by_outcome(browser, server):
    from selenium.webdriver.support.ui import Select
    open_page(browser, server.url + "/")
    wait_for(browser, "tr[data-job-id]")
    Select(wait_for(browser, "[data-testid='job-outcome-filter']")[0]).select_by_value("hacked")
    wait_for(browser, "[data-testid='jobs-range']", text="of 1")
    assert list(row_cells(browser, "id")) == [server.ids["hack"]]
    Select(browser.find_element("css selector", "[data-testid='job-outcome-filter']")).select_by_value("")
    box = browser.find_element("css selector", "[data-testid='job-search']")
    box.send_keys("xss")
    wait_for(browser, "[data-testid='jobs-range']", text="of 1")
    assert server.get("/v1/jobs?q=xss").json()["total"] == 1
    assert_no_console_errors(browser)


def test_hacked_job_view_shows_family_timings_and_code(browser, server):
    open_page(browser, server.url + "/#/job/" + server.ids["hack"])
    assert text_of(browser, "[data-testid='job-hack-family']") == "output aliases input"
    assert text_of(browser, "[data-testid='job-outcome']") == "hacked"
    assert server.results["hack"]["outcome_detail"] in text_of(browser, "[data-testid='job-detail']")
    assert "return x" in text_of(browser, "[data-testid='job-candidate']")
    assert "torch.relu" in text_of(browser, "[data-testid='job-reference']")
    screenshot(browser, "job_hacked")
    open_page(browser, server.url + "/#/job/" + server.ids["ok"])
    ok = server.get("/v1/jobs/" + server.ids["ok"]).json()
    assert text_of(browser, "[data-testid='job-speedup']") == f"{ok['speedup']:.3f}"
    wait_for(browser, "[data-testid='timing-table']")
    wait_for(browser, "[data-testid='timing-chart']")
    screenshot(browser, "job")
    assert_no_console_errors(browser)


def test_html_in_a_candidates_error_is_text_and_never_runs(browser, server):
    r = server.results["xss"]
    assert r["outcome"] == "runtime_error" and "<script>" in r["error_message"], r
    open_page(browser, server.url + "/#/job/" + server.ids["xss"])
    err = text_of(browser, "[data-testid='job-error']")
    assert "<script>window.__kgym_xss = 1</script>" in err
    assert INJECT in text_of(browser, "[data-testid='job-candidate']")
    time.sleep(0.5)
    assert browser.execute_script("return window.__kgym_xss") is None
    assert not browser.find_elements("css selector", "img[onerror]")
    scripts = [s.get_attribute("src") for s in browser.find_elements("css selector", "script")]
    assert all(s and "/assets/" in s for s in scripts), scripts
    assert_no_console_errors(browser)


def test_runs_pages_training_curves_and_truncated_jsonl(browser, server, runs_root):
    open_page(browser, server.url + "/#/runs")
    wait_for(browser, "[data-testid='run-list']")
    train = server.get("/v1/runs/training-run").json()
    open_page(browser, server.url + "/#/run/training-run")
    groups = {e.get_attribute("data-metric-group") for e in wait_for(browser, "[data-metric-group]")}
    assert groups == set(train["metrics"]["groups"]) == {"reward", "val", "adv", "mrs", "prs", "actor", "mismatch",
                                                         "perf", "time"}
    assert train["run"]["source"] == "val/step_40"
    fast = train["grade"]["overall"]["final"]["fast_in_all"]["1.2"]
    shown = float(text_of(browser, "[data-testid='run-final-fast12']").rstrip("%"))
    assert abs(shown - 100 * fast) < 0.051
    rows = wait_for(browser, "[data-testid='leaderboard'] tbody tr")
    assert len(rows) == len(train["leaderboard"])
    screenshot(browser, "run_training")

    agent = server.get("/v1/runs/agent-run").json()
    assert any("cut off" in w for w in agent["run"]["warnings"]), agent["run"]["warnings"]
    open_page(browser, server.url + "/#/run/agent-run")
    warning = wait_for(browser, "[data-testid='run-warning']")[0]
    assert warning.is_displayed() and "cut off" in warning.text
    assert text_of(browser, "[data-testid='run-samples']") == (
        f"{agent['grade']['overall']['num_tasks']} / {agent['grade']['overall']['num_samples']}")
    link = wait_for(browser, "[data-testid='trajectory-table'] a")[0]
    key = link.text
    link.click()
    assert text_of(browser, "[data-testid='trajectory-key']") == key
    turns = wait_for(browser, "[data-testid='turn']")
    assert len(turns) == 3
    assert "class ModelNew" in turns[0].find_element("css selector", "[data-testid='turn-code']").text
    assert browser.execute_script("return window.__kgym_xss") is None  # the injected response stayed text
    screenshot(browser, "trajectory")
    assert_no_console_errors(browser)


def test_kgym_view_serves_a_run_folder(browser, runs_root):
    p = subprocess.Popen([KGYM_BIN, "view", "--port", "0", str(runs_root / "agent-run")], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        m = re.search(r"listening on (http://[\d.]+:\d+)", p.stdout.readline())
        assert m, p.stderr.read()
        with urllib.request.urlopen(m.group(1) + "/v1/runs") as r:
            assert [x["id"] for x in json.load(r)["runs"]] == ["agent-run"]
        open_page(browser, m.group(1) + "/")
        wait_for(browser, "[data-testid='run-list']")
        open_page(browser, m.group(1) + "/#/run/agent-run")
        wait_for(browser, "[data-testid='run-warning']")
        wait_for(browser, "[data-testid='turn-table']")
        assert_no_console_errors(browser)
    finally:
        p.terminate()
        p.wait(10)
    bad = subprocess.run([KGYM_BIN, "view", "--port", "0", str(runs_root / "does-not-exist")], capture_output=True,
                         text=True, timeout=30)
    assert bad.returncode == 2 and "no run folder" in bad.stderr


def test_grade_report_html_is_self_contained_and_draws_offline(browser, tmp_path, runs_root):
    run = runs_root / "agent-run"
    html, md = tmp_path / "report.html", tmp_path / "report.md"
    p = subprocess.run([KGYM_BIN, "grade", str(run), "--out", str(tmp_path / "out"), "--quiet", "--report", str(html),
                        "--report", str(md)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "cut off" in p.stderr  # the warning is printed
    page = html.read_text()
    assert "http://" not in page.replace("http://www.w3.org", "") and " src=" not in page
    grade = json.loads((tmp_path / "out" / "grade.json").read_text())
    text = md.read_text()
    assert "## Per-task" not in text and "## Per task (best first)" in text and "> **Warning:**" in text
    browser.get(html.as_uri())
    wait_for(browser, "[data-testid='turn-table']")
    rows = wait_for(browser, "[data-testid='turn-table'] tbody tr")
    assert len(rows) == len(grade["overall"]["turns"])
    assert wait_for(browser, "[data-testid='run-warning']")[0].is_displayed()
    assert len(browser.find_elements("css selector", "canvas")) >= 3
    assert browser.execute_script("return window.__kgym_xss") is None
    screenshot(browser, "report")
    assert_no_console_errors(browser)


def test_ten_thousand_jobs_page_and_search(browser, tmp_path):
    from selenium.webdriver.support.ui import Select
    first = Server(tmp_path, "--gpus", "none")
    first.stop()
    fill_store(first.store, 10000)
    s = Server(tmp_path, "--gpus", "none", store=first.store)
    try:
        page = s.get("/v1/jobs?offset=9990&limit=50").json()
        assert page["total"] == 10000 and [j["id"] for j in page["jobs"]] == [f"bulk-{i:05d}" for i in range(9, -1, -1)]
        assert s.get("/v1/jobs?outcome=hacked").json()["total"] == 2500
        assert s.get("/v1/jobs?q=bulk-0999").json()["total"] == 10
        assert s.get("/v1/jobs?outcome=bogus").status == 400
        assert s.get("/v1/dashboard/summary").json()["hack_families"] == {"caching": 2500}
        open_page(browser, s.url + "/")
        wait_for(browser, "[data-testid='jobs-range']", text="1–50 of 10000")
        assert len(row_cells(browser, "id")) == 50
        browser.execute_script("[...document.querySelectorAll('button')].find((b) => b.textContent.includes('next')).click()")
        wait_for(browser, "[data-testid='jobs-range']", text="51–100 of 10000")
        Select(browser.find_element("css selector", "[data-testid='job-outcome-filter']")).select_by_value("hacked")
        wait_for(browser, "[data-testid='jobs-range']", text="1–50 of 2500")
        browser.find_element("css selector", "[data-testid='job-search']").send_keys("bulk-0999")
        wait_for(browser, "[data-testid='jobs-range']", text="of 3")  # 09991, 09995, 09999 are hacked
        assert_no_console_errors(browser)
    finally:
        s.kill()


def test_the_page_asks_for_the_token_of_a_guarded_server(browser, tmp_path):
    (tmp_path / "token").write_text("s3cret\n")
    s = Server(tmp_path, "--evaluator", "simulated", "--gpus", "none", "--token-file", str(tmp_path / "token"))
    try:
        browser.get(s.url + "/dashboard")
        box = wait_for(browser, "input[type='password']")[0]
        assert "needs a token" in text_of(browser, "main")
        refused = console_errors(browser)  # the browser logs the refused first call; nothing else may fail
        assert refused and all("/v1/ui" in e["message"] and "401" in e["message"] for e in refused), refused
        box.send_keys("s3cret\n")
        wait_for(browser, "[data-testid='jobs-range']", text="of 0")
        assert_no_console_errors(browser)
    finally:
        browser.execute_script("sessionStorage.clear()")
        s.kill()
