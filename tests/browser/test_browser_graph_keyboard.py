"""The graph viewer by keyboard and on a classroom screen, on the real sample reports: Tab into a graph, arrow keys
along its edges to every node, Enter selects as a click does, Escape clears, a visible focus ring and a spoken
description; closed module boxes open with Enter; presentation mode draws the canvas's text larger; and two
relayouts that overlap both finish with the layout of the last."""

import re

from playwright.sync_api import expect

from tests.browser.test_browser_report_views import report_url

VIEWER = "(id) => import('/static/js/graph-view.js').then(({ viewers }) => viewers.get(id))"

# Screen position of a node's box in the page, from the viewer's own layout and view.
NODE_CENTER = """async ([id, name]) => {
  const { viewers } = await import('/static/js/graph-view.js');
  const v = viewers.get(id);
  const i = v.model.names.indexOf(name);
  const r = v.layout.rects, box = v.canvas.getBoundingClientRect();
  const tags = v.model.tagStart[i + 1] > v.model.tagStart[i] ? 18 : 0;
  return [box.left + v.view.x + (r[i * 4] + r[i * 4 + 2] / 2) * v.view.scale,
          box.top + v.view.y + (r[i * 4 + 1] + tags + 18) * v.view.scale];
}"""

# Canvas pixels of the focus ring's colour (graph-painter.js COLORS.focus, #1d4ed8), within a small tolerance.
RING_PIXELS = """async (id) => {
  const { viewers } = await import('/static/js/graph-view.js');
  const { COLORS } = await import('/static/js/graph-painter.js');
  const v = viewers.get(id);
  v.paintNow();
  const [r, g, b] = COLORS.focus.match(/[0-9a-f]{2}/gi).map((h) => parseInt(h, 16));
  const data = v.canvas.getContext('2d').getImageData(0, 0, v.canvas.width, v.canvas.height).data;
  let count = 0;
  for (let k = 0; k < data.length; k += 4) {
    if (Math.abs(data[k] - r) + Math.abs(data[k + 1] - g) + Math.abs(data[k + 2] - b) < 40 && data[k + 3] > 200) count++;
  }
  return count;
}"""


def open_graph(page, url, graph_id):
    page.goto(url + f"#graph-{graph_id}")
    card = page.locator(f"#graph-{graph_id}")
    expect(card).to_have_attribute("data-state", "ready")
    return card


def tab_into(card):
    card.locator(".graph-toolbar button").last.focus()  # the toolbar's last control (Collapse all, or Color by time)
    card.page.keyboard.press("Tab")
    expect(card.locator("canvas")).to_be_focused()


def test_every_node_is_reached_by_arrow_keys_and_enter_selects_as_a_click_does(site, sample_runs, page):
    card = open_graph(page, report_url(site, sample_runs, "seed", "dynamo"), "dynamo-0")
    assert page.evaluate(RING_PIXELS, "dynamo-0") == 0
    tab_into(card)
    first = card.get_attribute("data-focused")
    assert first in {"sin", "cos", "tanh"}  # the first row: the ops that read only the input
    note = card.locator(".graph-focus-note")
    expect(note).to_have_attribute("aria-live", "polite")
    expect(note).to_contain_text(f"{first}: call_function")
    assert page.evaluate(RING_PIXELS, "dynamo-0") > 50  # the ring is drawn

    # Right along the rows reaches every op; Up from an op enters its input tags.
    seen = {first}
    for _ in range(6):
        page.keyboard.press("ArrowRight")
        seen.add(card.get_attribute("data-focused"))
    assert seen == {"sin", "cos", "tanh", "mul", "add"}
    page.keyboard.press("Home")
    page.keyboard.press("ArrowUp")
    expect(card).to_have_attribute("data-focused", "l_x_")
    expect(note).to_contain_text("l_x_: placeholder")

    # Down from sin follows its edge to mul; Enter selects it, as a click on it does.
    page.keyboard.press("ArrowDown")
    while card.get_attribute("data-focused") != "sin":
        page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowDown")
    expect(card).to_have_attribute("data-focused", "mul")
    expect(note).to_contain_text(
        "mul: call_function mul, shape [1024,1024], float32, line 6; reads sin, cos; read by add"
    )
    page.keyboard.press("Enter")
    expect(card).to_have_attribute("data-selected", "mul")
    expect(page).to_have_url(re.compile("#graph-dynamo-0/mul$"))
    by_keyboard = card.locator(".graph-info").inner_text()
    assert "_operator.mul" in by_keyboard

    page.keyboard.press("Escape")
    expect(card).not_to_have_attribute("data-selected", re.compile("."))
    expect(page).to_have_url(re.compile("#graph-dynamo-0$"))
    expect(card.locator(".graph-info")).to_contain_text("Click a node")

    x, y = page.evaluate(NODE_CENTER, ["dynamo-0", "mul"])
    page.mouse.click(x, y)
    expect(card).to_have_attribute("data-selected", "mul")
    assert card.locator(".graph-info").inner_text() == by_keyboard
    assert page.evaluate(RING_PIXELS, "dynamo-0") == 0  # a mouse click shows no keyboard ring


def test_escape_clears_a_kernels_highlight(site, sample_runs, page):
    page.goto(report_url(site, sample_runs, "seed", "inductor") + "#kernel-cpp_fused_add_cos_mul_sin_tanh_0")
    card = page.locator("#graph-postgrad-0")
    expect(card).to_have_attribute("data-highlighted", re.compile("sin"))
    tab_into(card)
    page.keyboard.press("Escape")
    expect(card).to_have_attribute("data-highlighted", "")
    expect(card.locator(".graph-highlight")).to_be_hidden()


def test_a_closed_module_box_opens_with_enter_and_closes_with_backspace(site, sample_runs, page):
    card = open_graph(page, report_url(site, sample_runs, "mlp_train", "aot"), "aot-1")
    card.locator("[data-action=collapse]").click()
    expect(card).to_have_attribute("data-visible", "5")  # the input tags' readers sit in four closed boxes + 1
    tab_into(card)
    page.keyboard.press("Home")
    expect(card).to_have_attribute("data-focused", "module:L['self'].fc1")
    expect(card.locator(".graph-focus-note")).to_contain_text("Module fc1 (Linear), closed, 2 nodes; Enter opens it")
    page.keyboard.press("Enter")
    expect(card).to_have_attribute("data-visible", "6")
    focused = card.get_attribute("data-focused")
    assert not focused.startswith("module:")
    names = page.evaluate("""async () => {
      const { viewers } = await import('/static/js/graph-view.js');
      const v = viewers.get('aot-1');
      return v.model.names.filter((_, i) => v.model.groups[0] && v.model.stackChains[v.model.stackOf[i]]?.[0] === 0 && v.model.drawn[i]);
    }""")
    assert focused in names
    page.keyboard.press("Backspace")  # closes the box around the focused node, which keeps the focus
    expect(card).to_have_attribute("data-visible", "5")
    expect(card).to_have_attribute("data-focused", "module:L['self'].fc1")


def test_presentation_mode_draws_canvas_text_larger(site, sample_runs, page):
    # What the painter draws: each fillText's font size in screen pixels (the font's size times the canvas scale).
    page.add_init_script("""
      const fillText = CanvasRenderingContext2D.prototype.fillText;
      window.textSizes = [];
      CanvasRenderingContext2D.prototype.fillText = function (...args) {
        window.textSizes.push(parseFloat(this.font.match(/([\\d.]+)px/)[1]) * this.getTransform().a / devicePixelRatio);
        return fillText.apply(this, args);
      };""")
    page.set_viewport_size({"width": 1440, "height": 900})
    canvas_text, page_text = {}, {}
    for present in (False, True):
        url = report_url(site, sample_runs, "seed", "dynamo") + ("?present=1" if present else "")
        open_graph(page, url, "dynamo-0")
        drawn = page.evaluate("window.textSizes")
        assert drawn
        canvas_text[present] = max(drawn)  # the node names (12 px in graph units)
        page_text[present] = page.evaluate("parseFloat(getComputedStyle(document.body).fontSize)")
    assert canvas_text[False] >= 12
    # The canvas's labels grow at least as much as the page's text does (20 px over 15 px).
    assert page_text[True] > page_text[False]
    assert canvas_text[True] / canvas_text[False] >= page_text[True] / page_text[False], (canvas_text, page_text)


def test_two_overlapping_relayouts_both_finish_with_the_last_layout(site, sample_runs, page):
    card = open_graph(page, report_url(site, sample_runs, "mlp_train", "aot"), "aot-1")
    card.locator("[data-action=collapse]").click()
    expect(card).to_have_attribute("data-visible", "5")
    # Two boxes opened at once: two layout requests in flight for one graph. Matched by graph id, the first
    # never settled and the second was answered with the first's layout.
    result = page.evaluate("""async () => {
      const { viewers } = await import('/static/js/graph-view.js');
      const v = viewers.get('aot-1');
      const both = Promise.all([v.toggleGroup(0), v.toggleGroup(3)]).then(() => 'settled');
      const timeout = new Promise((resolve) => setTimeout(() => resolve('timed out'), 5000));
      const outcome = await Promise.race([both, timeout]);
      return { outcome, visible: v.layout.items.length, open: [...v.expanded].sort(),
               boxes: Array.from(v.layout.boxes, (item) => item - v.model.count).sort() };
    }""")
    assert result["outcome"] == "settled"
    assert result["open"] == [0, 3]
    assert result["boxes"] == [0, 3]
    assert result["visible"] == 5 - 2 + 2 + 9  # fc1's 2 nodes and norm's 9 replace their two boxes
    expect(card).to_have_attribute("data-visible", str(result["visible"]))
