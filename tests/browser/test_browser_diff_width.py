"""Issue 22, the diff page at 1280 and 1440 px in Chromium: a diff of two real reports with long kernel names
(Triton and C++ kernels of 60-70 characters, their sources side by side) never scrolls sideways."""

import pytest

# Pairs of real reports (tests/fixtures/reports) whose kernels have long names and differ in their sources.
PAIRS = (
    ("import_mlp_train_bf16_torch2_11", "import_mlp_train_torch2_13"),
    ("mlp_train", "import_mlp_train_bf16_torch2_11"),
    ("seed_gpu", "seed_busy_cpu"),
    ("import_mlp_train_bf16_torch2_11", "tiny_gpt"),  # and graph nodes named by their 60-character module paths
)
WIDTHS = {"1280": (1280, 800), "1440": (1440, 900)}
SIDEWAYS = """() => {
  const page = document.documentElement;
  const wide = [...document.querySelectorAll('main *')].filter((e) => e.getBoundingClientRect().right > innerWidth + 1);
  return {scroll: page.scrollWidth, inner: innerWidth, wide: wide.slice(0, 5).map((e) => e.tagName + '.' + e.className)};
}"""


@pytest.mark.parametrize("width", WIDTHS)
def test_the_diff_page_never_scrolls_sideways(site, sample_runs, page, width):
    page.set_viewport_size(dict(zip(("width", "height"), WIDTHS[width])))
    problems = []
    for a, b in PAIRS:
        page.goto(f"{site.url}/diff/{sample_runs[a]}/{sample_runs[b]}")
        for details in page.locator("details.kernel-diff").all():  # every kernel's source diff drawn
            details.evaluate("(d) => { d.open = true; }")
        names = page.locator("#diff-kernels code").all_text_contents()
        assert max(map(len, names), default=0) >= 39, (a, b, names)  # long kernel names are on the page
        measured = page.evaluate(SIDEWAYS)
        if measured["scroll"] > measured["inner"]:
            problems.append(f"{a} vs {b}: page {measured['scroll']} px in {measured['inner']}: {measured['wide']}")
    assert problems == [], "\n".join(problems)
