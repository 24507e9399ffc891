"""Everything from a job is shown as text: a model whose strings, comments, output, error and file name carry
`</script><script>alert(1)</script>` shows that text on every page and runs nothing (no dialog fires), and no
page breaks the Content-Security-Policy."""

import json
import time
import urllib.request

from playwright.sync_api import expect

PAYLOAD = "</script><script>alert(1)</script>"
FILENAME = "<img src=x onerror=alert(2)>.py"
WORKS = f'''import torch
# a comment: {PAYLOAD}
print("{PAYLOAD}")


def f(x):
    return x.sin() + len("{PAYLOAD}")


model = f
example_inputs = (torch.ones(4),)
'''
FAILS = f'''import torch


def f(x):
    raise ValueError("{PAYLOAD}")


model = f
example_inputs = (torch.ones(4),)
'''


def _submit(site, code: str) -> str:
    body = json.dumps({"code": code, "filename": FILENAME, "configs": ["eager", "backend_eager"]}).encode()
    request = urllib.request.Request(f"{site.url}/api/runs", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)["id"]


def _finished(site, run_id: str) -> dict:
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        with urllib.request.urlopen(f"{site.url}/api/runs/{run_id}", timeout=30) as response:
            status = json.load(response)
        if status["status"] in ("succeeded", "failed"):
            return status
        time.sleep(0.5)
    raise AssertionError(f"run {run_id} did not finish:\n{site.worker.output()}")


def test_a_hostile_model_is_shown_as_text_and_runs_nothing(site, page):
    dialogs, csp_violations = [], []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.on(
        "console", lambda message: "Content Security Policy" in message.text and csp_violations.append(message.text)
    )
    works, fails = _submit(site, WORKS), _submit(site, FAILS)
    assert _finished(site, works)["status"] == "succeeded"
    assert _finished(site, fails)["status"] == "failed"

    page.goto(f"{site.url}/r/{works}")
    expect(page.locator("h1")).to_contain_text(FILENAME)
    expect(page.locator("#L-2")).to_contain_text(PAYLOAD)  # the comment, in the source listing
    expect(page.locator("#overview-user_output")).to_contain_text(PAYLOAD)  # what the model printed
    page.goto(f"{site.url}/r/{works}/dynamo")
    expect(page.locator("#report-dynamo")).to_contain_text(PAYLOAD)  # the user's line behind the graph's node
    page.goto(f"{site.url}/r/{fails}")
    expect(page.locator("#error-message")).to_contain_text(f"ValueError: {PAYLOAD}")
    page.wait_for_timeout(500)  # a script injected anywhere would have run by now
    assert dialogs == [] and csp_violations == []
