"""The dashboard's HTTP side without a browser: who gets the page at /, what a bearer token guards, and that the
page's files come from the binary (`kgym serve --evaluator simulated`, no evaluation needed)."""
import os

import pytest
from server_util import KGYM_BIN, Server

pytestmark = pytest.mark.skipif(not os.path.exists(KGYM_BIN), reason="kgym binary not built")


def test_browsers_get_the_page_and_api_clients_kernelgym_json(tmp_path):
    s = Server(tmp_path, "--evaluator", "simulated", "--gpus", "none")
    try:
        page = s.get("/", headers={"Accept": "text/html,application/xhtml+xml"})
        assert page.status == 200 and "/assets/kgym_app.js" in page.body
        assert "script-src 'self'" in page.headers["Content-Security-Policy"]  # no inline scripts on the page
        assert s.get("/").json()["name"] == "KernelGym"
        chart = s.get("/assets/chart.min.js")
        assert chart.status == 200 and "Chart.js v3" in chart.body[:200]
        assert chart.headers["Content-Type"].startswith("text/javascript")
        assert s.get("/assets/nope.js").status == 404
        assert s.get("/v1/ui").json() == {"features": ["service"]}
        assert s.get("/v1/runs").status == 404  # no --runs: no run routes
        assert s.get("/v1/jobs/missing").status == 404
        assert s.get("/v1/dashboard/timeline?window_s=120&bucket_s=60").json()["bucket_s"] == 60
    finally:
        s.kill()


def test_a_token_guards_the_data_but_not_the_page(tmp_path):
    (tmp_path / "token").write_text("s3cret\n")
    s = Server(tmp_path, "--evaluator", "simulated", "--gpus", "none", "--token-file", str(tmp_path / "token"))
    try:
        s.token = None
        assert s.get("/dashboard").status == 200
        assert s.get("/assets/kgym_core.js").status == 200
        for path in ("/v1/ui", "/v1/jobs", "/v1/dashboard/summary"):
            assert s.get(path).status == 401, path
        s.token = "s3cret"
        assert s.get("/v1/jobs").json()["total"] == 0
    finally:
        s.kill()
