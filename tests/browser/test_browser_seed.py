"""As a new user: load the seed example, submit, watch the stages complete, read the fused kernel, share the link."""

import re

from playwright.sync_api import expect

# One Inductor compile (~20 s cold on this machine's g++) plus the engine's start; generous for a loaded CI box.
REPORT_TIMEOUT_MS = 240_000


# A section's HTML as the server sent it: a chart Plotly has drawn (when it came into view, at its own time) is put
# back to its empty element, so that two readers of the same report compare what they were sent.
AS_SERVED = """(section) => {
  const copy = section.cloneNode(true);
  for (const chart of copy.querySelectorAll(".chart")) {
    chart.replaceChildren();
    chart.className = "chart";
    chart.removeAttribute("style");
    delete chart.dataset.drawn;
  }
  return copy.innerHTML;
}"""


def test_new_user_compiles_the_seed_and_shares_the_report(site, page, browser):
    page.goto(site.url + "/")
    expect(page.get_by_role("heading", name="New run")).to_be_visible()
    page.get_by_role("link", name="seed", exact=True).click()
    expect(page.locator("#editor")).to_contain_text("torch.sin(x) * torch.cos(x) + torch.tanh(x)")
    expect(page.locator("#filename-label")).to_have_text("seed.py")
    # Keep the default ladder but one Inductor mode: the fused kernel comes from inductor_default.
    page.get_by_label(re.compile("inductor_reduce_overhead")).uncheck()
    expect(page.get_by_label(re.compile("inductor_default"))).to_be_checked()
    page.get_by_role("button", name="Run", exact=True).click()

    expect(page).to_have_url(re.compile(r"/r/[A-Za-z0-9_-]{20,}$"))
    report_url = page.url
    # Live progress: a stage finishes while the job is still running (the page polls the API). Locators, not
    # wait_for_function: the Content-Security-Policy forbids the eval that a JavaScript string needs.
    expect(page.locator("#stage-load")).to_have_attribute("data-state", "finished", timeout=60_000)
    expect(page.locator("#status")).to_have_text("running")
    # Each tab opens as soon as its stage has finished: Dynamo's while the benchmarks still run.
    expect(page.locator("#tab-dynamo")).to_have_attribute("href", re.compile("/dynamo$"), timeout=REPORT_TIMEOUT_MS)
    expect(page.locator("#tab-runtime")).to_have_attribute("aria-disabled", "true")
    expect(page.locator("#status")).to_have_text("succeeded", timeout=REPORT_TIMEOUT_MS)
    expect(page.locator("#tab-runtime")).to_have_attribute("href", re.compile("/runtime$"))
    for stage in (
        "load",
        "eager",
        "dynamo",
        "aot",
        "inductor",
        "report",
        "benchmark-eager",
        "benchmark-inductor_default",
        "profile",
    ):
        expect(page.locator(f"#stage-{stage}")).to_have_attribute("data-state", "finished")

    # The Overview's story: the one fused kernel, and whether compiling helped.
    expect(page.locator("#pipe-inductor")).to_contain_text("1 generated kernel")
    expect(page.locator("#headlines")).to_contain_text("Inductor generated 1 kernel from 5 graph nodes")
    page.locator("#tab-inductor").click()
    kernel_name = page.locator("#inductor-kernels a.kernel-link").first.inner_text()
    assert "fused" in kernel_name
    expect(page.locator("#inductor-kernels table.records").first).to_contain_text(kernel_name)
    expect(page.locator("#inductor-kernels .listing").first).to_be_visible()  # the kernel's source
    inductor_html = page.locator("#inductor-kernels").evaluate(AS_SERVED)

    page.locator("#copy-link").click()
    expect(page.locator("#copy-link")).to_have_text("Copied")
    link = page.evaluate("navigator.clipboard.readText()")
    assert link == report_url

    fresh = browser.new_context()  # no cookies, no history: someone the link was sent to
    try:
        other = fresh.new_page()
        other.goto(link)
        expect(other.locator("#status")).to_have_text("succeeded")
        expect(other.locator("#headlines")).to_contain_text("Inductor generated 1 kernel")
        other.locator("#tab-inductor").click()
        assert other.locator("#inductor-kernels").evaluate(AS_SERVED) == inductor_html
    finally:
        fresh.close()
