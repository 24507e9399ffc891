// Interactive FX graph viewer: a <section class="graph-card"> fetches its graph when it scrolls into view (or is
// linked to), has it laid out by the shared worker, and draws it on a canvas: pan (drag), zoom (wheel), search,
// click a node (or focus it with the keyboard and press Enter) for its details, click a module box to open or
// close it. Every text is set with textContent. The viewer holds the state; geometry and hit tests are in
// graph-model.js, drawing in graph-painter.js, input in graph-interaction.js, the worker's protocol in
// graph-rpc.js.
import { argsOf, buildModel, chainOf, defaultExpanded, field, layoutInput, moduleLabel, nodeFields, nodeNumber,
  tagsOf, usersOf } from "./graph-layout.js";
import { isUserFile } from "./contract.js";
import { bindInteraction } from "./graph-interaction.js";
import { describeFocus, enclosingGroup, firstItemIn, focusRect, focusedNode, itemOf, rectOf } from "./graph-model.js";
import { COLORS, GraphPainter, MARKS, kernelColors, markLabels, timeColors } from "./graph-painter.js";
import { LayoutClient } from "./graph-rpc.js";

export const viewers = new Map();  // graph id -> GraphViewer

let layouts = null;  // started by setUpViewers when the page has a graph, so it loads while the graph is fetched

/** How much larger canvas text is drawn in presentation mode (?present=1), as the page's text is. */
const PRESENT_TEXT_SCALE = 1.5;
/** The smallest text the painter draws, an input tag's, is 10 px at scale 1. Fit never shrinks it below a readable
 *  size: 14 px on a projector (presentation mode), 9 px on a page (node names 11 px). A graph larger than the view
 *  at that size is shown from its inputs, to pan (drag) or fold (Collapse all); the wheel still zooms out. */
const SMALLEST_TEXT_PX = 10;
const READABLE_TEXT_PX = { present: 14, page: 9 };
/** A stage as tall as the graph needs at its fitted scale, up to this share of the window (and never tiny). */
const STAGE_SHARE = { present: 0.78, page: 0.7 };
const STAGE_MIN_PX = 220;

function element(tag, props = {}, children = []) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (key === "dataset") Object.assign(el.dataset, value);
    else if (key in el) el[key] = value;
    else el.setAttribute(key, value);
  }
  el.append(...children.filter((c) => c !== null && c !== undefined));
  return el;
}

export class GraphViewer {
  constructor(card) {
    this.card = card;
    this.id = card.dataset.graphId;
    this.canvas = card.querySelector("canvas");
    this.stage = card.querySelector(".graph-stage");
    this.info = card.querySelector(".graph-info");
    this.infoHint = [...this.info.childNodes];  // shown again when the selection is cleared
    this.status = card.querySelector(".graph-status");
    this.legend = card.querySelector(".graph-legend");
    this.highlightNote = card.querySelector(".graph-highlight");
    this.search = card.querySelector(".graph-search");
    this.painter = new GraphPainter(this.canvas);
    this.present = document.body.classList.contains("present");
    this.textScale = this.present ? PRESENT_TEXT_SCALE : 1;
    this.readableScale = READABLE_TEXT_PX[this.present ? "present" : "page"] / SMALLEST_TEXT_PX;
    this.view = { scale: 1, x: 0, y: 0 };
    this.highlighted = new Set();
    this.selected = -1;
    this.focus = null;  // the keyboard's {item, tag} (graph-model.js)
    this.keyboardFocus = false;  // whether the ring is shown: the canvas has the focus from the keyboard
    this.loading = null;
    this.matches = [];
    this.matchCursor = -1;
    this.layoutsAsked = 0;  // relayout requests sent, and the newest one whose layout is shown
    this.layoutShown = 0;
    bindInteraction(this);
    this.bindToolbar();
  }

  load() {
    if (!this.loading) this.loading = this.fetchAndDraw();
    return this.loading;
  }

  async fetchAndDraw() {
    this.card.dataset.state = "loading";
    this.status.textContent = "loading…";
    const started = performance.now();
    const response = await fetch(this.card.dataset.graphUrl, { headers: { Accept: "application/json" } });
    if (!response.ok) {
      this.status.textContent = `could not load this graph (HTTP ${response.status})`;
      this.card.dataset.state = "failed";
      return;
    }
    // Indexed once, here (hit tests, search, details); the worker gets what its layout needs as typed arrays it
    // takes over without a copy.
    this.graph = await response.json();
    this.model = buildModel(this.graph);
    const { input, transfer } = layoutInput(this.model);
    layouts.init(this.id, input, transfer);
    this.expanded = defaultExpanded(this.model);
    await this.relayout();
    this.sizeStage();
    this.fit();
    this.paintNow();  // "ready" means drawn
    this.drawLegend();
    this.readyNote = `${this.model.count} nodes (${this.model.drawnCount} drawn, inputs as tags) · ${this.model.groups.length} module boxes · ready in ${Math.round(performance.now() - started)} ms`;
    this.showFitNote();
    this.card.dataset.state = "ready";
    this.card.dataset.readyAt = String(performance.now());
  }

  /** Lays the graph out again for this.expanded. Overlapping calls each get their own answer (request ids), and
   *  an answer older than the one shown is not drawn over it. */
  async relayout() {
    const asked = ++this.layoutsAsked;
    const result = await layouts.layout(this.id, this.expanded);
    if (asked < this.layoutShown) return;
    this.layoutShown = asked;
    this.layout = result;
    this.card.dataset.visible = String(result.items.length);  // what is drawn: nodes and closed module boxes
    this.card.dataset.layouts = String(asked);
    if (this.focus && !result.items.includes(this.focus.item)) this.focus = null;  // its box was closed
    this.draw();
  }

  // Geometry

  resize() {
    const ratio = window.devicePixelRatio || 1;
    const { width, height } = this.stage.getBoundingClientRect();
    this.canvas.width = Math.max(1, Math.round(width * ratio));
    this.canvas.height = Math.max(1, Math.round(height * ratio));
    this.canvas.style.width = `${width}px`;
    this.canvas.style.height = `${height}px`;
    this.ratio = ratio;
    this.size = { width, height };
  }

  /** The scale Fit draws at: the whole graph as large as fits up to full size (presentation: larger), never below
   *  the readable scale. */
  fitScale(height) {
    const { width } = this.layout, margin = 24, full = 1.1 * this.textScale;
    const fits = Math.min((this.size.width - margin) / Math.max(1, width), (height - margin) / Math.max(1, this.layout.height));
    return Math.max(this.readableScale, Math.min(full, fits));
  }

  /** The stage is sized to the window: as tall as the graph needs at the scale Fit will draw it (its width
   *  decides), up to most of the window, so a graph starts neither tiny nor in a mostly empty box. */
  sizeStage() {
    this.resize();
    const most = window.innerHeight * STAGE_SHARE[this.present ? "present" : "page"];
    const scale = this.fitScale(Infinity);
    const wanted = Math.ceil(this.layout.height * scale + 48);
    this.stage.style.height = `${Math.round(Math.max(STAGE_MIN_PX, Math.min(most, wanted)))}px`;
  }

  fit() {
    this.resize();
    const { width, height } = this.layout, margin = 24;
    const scale = this.fitScale(this.size.height);
    this.view.scale = scale;
    this.view.x = width * scale + margin < this.size.width ? (this.size.width - width * scale) / 2 : margin / 2;
    this.view.y = height * scale + margin < this.size.height ? (this.size.height - height * scale) / 2 : margin / 2;
    this.fitsWhole = width * scale + margin <= this.size.width + 1 && height * scale + margin <= this.size.height + 1;
    this.card.dataset.fits = String(this.fitsWhole);
    this.card.dataset.scale = String(scale);  // what Fit chose: its smallest text is 10 px times this
    this.draw();
  }

  /** The status line: what was loaded, and when the graph is larger than the view at a readable size, how to see
   *  the rest. */
  showFitNote() {
    if (!this.readyNote) return;
    this.status.textContent = this.readyNote + (this.fitsWhole ? ""
      : " · larger than the view at a readable size: drag to pan, or Collapse all");
  }

  centerOn(item) {
    const [x, y, w, h] = rectOf(this.layout, item);
    if (Number.isNaN(x)) return;
    this.view.scale = Math.max(this.view.scale, this.readableScale);
    this.view.x = this.size.width / 2 - (x + w / 2) * this.view.scale;
    this.view.y = this.size.height / 2 - (y + h / 2) * this.view.scale;
    this.draw();
  }

  /** Pans the least that brings a rectangle (graph coordinates) into view with a margin (room for the focus ring
   *  and a tag below). */
  keepInView([x, y, w, h]) {
    const margin = 40, { scale } = this.view;
    const left = x * scale + this.view.x, top = y * scale + this.view.y;
    if (left < margin) this.view.x += margin - left;
    else if (left + w * scale > this.size.width - margin) this.view.x -= Math.min(left - margin, left + w * scale - this.size.width + margin);
    if (top < margin) this.view.y += margin - top;
    else if (top + h * scale > this.size.height - margin) this.view.y -= Math.min(top - margin, top + h * scale - this.size.height + margin);
  }

  zoomAt(px, py, factor) {
    const scale = Math.min(4 * this.textScale, Math.max(0.02, this.view.scale * factor));
    this.view.x = px - (px - this.view.x) * (scale / this.view.scale);
    this.view.y = py - (py - this.view.y) * (scale / this.view.scale);
    this.view.scale = scale;
    this.draw();
  }

  // Drawing

  draw() {
    if (!this.layout || this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = null;
      this.paint();
    });
  }

  /** Draws now rather than at the next animation frame. */
  paintNow() {
    cancelAnimationFrame(this.frame);
    this.frame = null;
    this.paint();
  }

  paint() {
    if (!this.size) this.resize();
    this.painter.paint({ model: this.model, layout: this.layout, view: this.view, size: this.size, ratio: this.ratio,
      highlighted: this.highlighted, selected: this.selected, focus: this.keyboardFocus ? this.focus : null });
  }

  // Focus, selection and highlights

  /** Moves the keyboard focus (null: none), keeps it in view and describes it in the live region. */
  setFocus(focus) {
    this.focus = focus;
    if (!focus) return;
    const node = focusedNode(this.model, focus);
    this.card.dataset.focused = node >= 0 ? this.model.names[node]
      : `module:${this.model.groups[focus.item - this.model.count].path}`;
    this.keepInView(focusRect(this.model, this.layout, focus));
    this.focusNote.textContent = describeFocus(this.model, this.layout, focus);
    this.draw();
  }

  /** What a click on a node or module box does; Enter on the focused one does the same. */
  async activate(hit) {
    if (hit.kind === "group") {
      const opening = !this.expanded.has(hit.group);
      await this.toggleGroup(hit.group);
      const first = opening && this.keyboardFocus ? firstItemIn(this.model, this.layout, hit.group) : -1;
      if (first >= 0) this.setFocus({ item: first, tag: -1 });
      return;
    }
    const item = itemOf(this.model, hit.node);
    if (item >= 0 && !this.keyboardFocus) {  // a click moves the keyboard's focus there too
      this.focus = { item, tag: item === hit.node ? -1 : tagsOf(this.model, item).indexOf(hit.node) };
    }
    await this.select(hit.node, { updateUrl: true });
  }

  /** Backspace: closes the box around the focused item, which keeps the focus. */
  async closeFocusedBox() {
    const g = this.focus ? enclosingGroup(this.model, this.focus.item) : -1;
    if (g < 0) return;
    await this.toggleGroup(g);
    this.setFocus({ item: this.model.count + g, tag: -1 });
  }

  activateFocus() {
    const node = focusedNode(this.model, this.focus);
    if (node < 0) return this.activate({ kind: "group", group: this.focus.item - this.model.count });
    return this.activate({ kind: "node", node });
  }

  bindToolbar() {
    this.card.querySelector("[data-action=fit]").addEventListener("click", () => this.load().then(() => {
      this.fit();
      this.showFitNote();
    }));
    this.card.querySelector("[data-action=expand]").addEventListener("click", () => this.setAllExpanded(true));
    this.card.querySelector("[data-action=collapse]").addEventListener("click", () => this.setAllExpanded(false));
    this.card.querySelector("[data-action=time]")?.addEventListener("click", () => this.load().then(() => this.toggleTimes()));
    this.search.addEventListener("input", () => this.load().then(() => this.runSearch(false)));
    this.search.addEventListener("keydown", (event) => {
      if (event.key === "Enter") {
        event.preventDefault();
        this.load().then(() => this.runSearch(true));
      }
    });
    const code = this.card.querySelector(".graph-code");
    code?.addEventListener("toggle", () => { if (code.open) this.load().then(() => this.showCode()); });
    new ResizeObserver(() => { if (this.layout) { this.resize(); this.draw(); } }).observe(this.stage);
  }

  /** The time overlay on or off: each node colored by the share of the step's time of the kernel it was fused
   *  into (post-grad graphs: the card's data-times) or of the kernels built from its line of the user's file (Dynamo
   *  graphs: fetched from data-times-url when first asked for), with a legend of them by time. */
  async toggleTimes() {
    this.overlay = this.painter.times ? null : await this.timesData();
    this.painter.setTimes(this.overlay?.times ?? null, this.overlay && this.timeKeyOf(this.overlay.by));
    this.card.dataset.overlay = this.overlay ? "time" : "";
    this.card.querySelector("[data-action=time]").setAttribute("aria-pressed", String(Boolean(this.overlay)));
    this.drawLegend();
    this.draw();
    if (this.selected >= 0) this.showDetails(this.selected);
  }

  timesData() {
    if (this.card.dataset.times) return Promise.resolve(JSON.parse(this.card.dataset.times));
    this.timesLoading ??= fetch(this.card.dataset.timesUrl, { headers: { Accept: "application/json" } })
      .then((response) => (response.ok ? response.json() : { by: "line", times: {} }))
      .catch(() => ({ by: "line", times: {} }));  // unreachable: the legend then says no line has a timed kernel
    return this.timesLoading;
  }

  /** The overlay's key of node i: its kernel, or its line where the node is the user's. */
  timeKeyOf(by) {
    const model = this.model;
    if (by === "kernel") return (i) => model.columns.marks.values[model.columns.marks.index[i]]?.kernel ?? null;
    return (i) => (isUserFile(field(model, "file", i), this.card.dataset.sourceFile) && field(model, "line", i)
      ? String(field(model, "line", i)) : null);
  }

  async setAllExpanded(open) {
    await this.load();
    this.expanded = open ? new Set(this.model.groups.map((_, g) => g)) : new Set();
    await this.relayout();
    this.fit();
    this.showFitNote();
  }

  async toggleGroup(g) {
    if (this.expanded.has(g)) {
      this.expanded.delete(g);
      // Closing a box closes everything inside it, so reopening it shows its first level again.
      for (let h = 0; h < this.model.groups.length; h++) {
        for (let p = this.model.groups[h].parent; p >= 0; p = this.model.groups[p].parent) {
          if (p === g) this.expanded.delete(h);
        }
      }
    } else this.expanded.add(g);
    await this.relayout();
  }

  /** Opens every box around node i so it can be seen; returns whether the layout changed. */
  async reveal(i) {
    const missing = Array.from(chainOf(this.model, i)).filter((g) => !this.expanded.has(g));
    if (!missing.length) return false;
    missing.forEach((g) => this.expanded.add(g));
    await this.relayout();
    return true;
  }

  async select(i, { updateUrl = false, center = false } = {}) {
    await this.load();
    if (typeof i === "string") i = nodeNumber(this.model, i);
    if (i < 0) return false;
    this.selected = i;
    const item = itemOf(this.model, i);
    if (item >= 0) await this.reveal(item);
    if (center && item >= 0) this.centerOn(item);
    this.showDetails(i);
    this.draw();
    if (updateUrl) history.replaceState(null, "", `#graph-${this.id}/${encodeURIComponent(this.model.names[i])}`);
    this.card.dataset.selected = this.model.names[i];
    return true;
  }

  /** Escape: no node selected, nothing highlighted; the URL keeps the graph but not the node. */
  clearSelection() {
    this.selected = -1;
    delete this.card.dataset.selected;
    this.info.replaceChildren(...this.infoHint);
    if (location.hash.startsWith(`#graph-${this.id}/`)) history.replaceState(null, "", `#graph-${this.id}`);
    this.clearHighlight();
    this.draw();
  }

  /** Highlights nodes by name (a kernel's, a line's, a search's) and says so under the graph. */
  async highlight(names, label) {
    await this.load();
    const found = names.map((name) => nodeNumber(this.model, name)).filter((i) => i >= 0);
    this.highlighted = new Set(found);
    const shown = found.map((i) => this.model.names[i]);
    this.card.dataset.highlighted = shown.join(" ");
    this.highlightNote.hidden = !label;
    this.highlightNote.replaceChildren();
    if (label) {
      this.highlightNote.append(element("strong", { textContent: `${label}: ` }),
        shown.length ? `${shown.length} node${shown.length === 1 ? "" : "s"} — ` : "no node in this graph",
        ...shown.map((name) => element("code", { className: "chip", textContent: name })));
    }
    if (found.length) {
      const items = found.map((i) => itemOf(this.model, i)).filter((item) => item >= 0);
      let changed = false;
      for (const item of items) changed = (await this.reveal(item)) || changed;
      if (!changed) this.draw();
    } else this.draw();
    return shown;
  }

  clearHighlight() {
    if (!this.model) return;
    this.highlighted = new Set();
    this.card.dataset.highlighted = "";
    this.highlightNote.hidden = true;
    this.draw();
  }

  highlightLine(line) {
    const file = this.card.dataset.sourceFile;
    const model = this.model;
    const names = model.names.filter((name, i) => field(model, "op", i).startsWith("call_")
      && field(model, "line", i) === line && isUserFile(field(model, "file", i), file));
    return this.highlight(names, `Line ${line}`);
  }

  runSearch(next) {
    const query = this.search.value.trim().toLowerCase();
    if (!query) {
      this.matches = [];
      this.clearHighlight();
      return;
    }
    if (!next || !this.matches.length) {
      const model = this.model;
      this.matches = [];
      for (let i = 0; i < model.count; i++) {
        const text = `${model.names[i]} ${field(model, "target", i) ?? ""} ${field(model, "op", i)}`;
        if (text.toLowerCase().includes(query)) this.matches.push(i);
      }
      this.matchCursor = -1;
      this.highlight(this.matches.map((i) => model.names[i]), `Search “${this.search.value.trim()}”`);
    }
    if (next && this.matches.length) {
      this.matchCursor = (this.matchCursor + 1) % this.matches.length;
      this.select(this.matches[this.matchCursor], { center: true, updateUrl: true });
    }
  }

  /** The graph's Python code, one span per line (#code-ID-N), set as text. */
  showCode() {
    const pre = this.card.querySelector(".graph-code-text");
    if (!pre || pre.childElementCount) return;
    pre.append(...(this.graph.code || "").split("\n").map((line, k) => element("span", {
      id: `${pre.id}-${k + 1}`, className: "code-line", textContent: `${line}\n`, dataset: { n: String(k + 1) } })));
  }

  // Details of one node, built from text nodes only (artifact strings never become markup).

  showDetails(i) {
    const node = nodeFields(this.model, i);
    const rows = [];
    const add = (term, ...value) => rows.push(element("dt", { textContent: term }), element("dd", {}, value));
    add("op", node.op);
    add("target", element("code", { textContent: String(node.target ?? "") }));
    if (node.shape !== null && node.shape !== undefined) add("shape", element("code", { textContent: JSON.stringify(node.shape) }));
    if (node.dtype) add("dtype", Array.isArray(node.dtype) ? node.dtype.join(", ") : node.dtype);
    if (node.line) {
      const file = (node.file || "").split("/").pop();
      const ours = isUserFile(node.file, this.card.dataset.sourceFile);
      add("source", ours ? element("a", { href: `#L-${node.line}`, textContent: `${file}:${node.line}`, className: "line-link" })
        : `${file}:${node.line}`, node.code ? element("code", { className: "source-code", textContent: node.code }) : null);
    }
    if ((node.module_stack || []).length) {
      add("module", ...node.module_stack.map((frame, k) => element("span", { className: "module-frame",
        textContent: `${k ? " › " : ""}${moduleLabel(frame.path)} (${frame.type})` })));
    }
    if (node.original_aten && node.original_aten !== node.target) add("from ATen op", element("code", { textContent: node.original_aten }));
    const marks = node.marks || {};
    const markText = markLabels(marks);
    if (markText.length) add("marks", markText.join("; "));
    if (marks.kernel) {
      const here = document.getElementById(`kernel-${marks.kernel}`);
      add("kernel", element("a", { href: here ? `#kernel-${marks.kernel}` : `${this.card.dataset.inductorUrl}#kernel-${marks.kernel}`,
        textContent: marks.kernel, className: "kernel-link" }));
    } else if ("kernel" in marks && node.op === "call_function") add("kernel", "none (a library call or no code)");
    const overlay = this.overlay ?? (this.card.dataset.times ? JSON.parse(this.card.dataset.times) : null);
    const key = overlay && this.timeKeyOf(overlay.by)(i);
    const time = key ? overlay.times[key] : null;
    if (time) {
      add("time", `${(100 * time.share).toFixed(1)}% of the profiled step (${time.ms.toPrecision(3)} ms per step), `
        + (overlay.by === "kernel" ? "its kernel's" : `in the kernels built from line ${key}: ${time.kernels.join(", ")}`));
    }
    const links = (list) => Array.from(list, (j) => element("button", { type: "button", className: "chip node-button",
      textContent: this.model.names[j], dataset: { node: this.model.names[j] } }));
    if (argsOf(this.model, i).length) add("reads", ...links(argsOf(this.model, i)));
    if (usersOf(this.model, i).length) add("read by", ...links(usersOf(this.model, i)));
    const permalink = element("a", { href: `#graph-${this.id}/${encodeURIComponent(node.name)}`, textContent: "link", className: "permalink" });
    this.info.replaceChildren(element("h4", {}, [element("code", { textContent: node.name }), " ", permalink]),
      element("dl", { className: "node-details" }, rows));
    for (const button of this.info.querySelectorAll(".node-button")) {
      button.addEventListener("click", () => this.select(button.dataset.node, { center: true, updateUrl: true }));
    }
  }

  drawLegend() {
    if (this.painter.times) return this.drawTimeLegend();
    const entries = new Map();
    for (const value of this.model.columns.marks.values) {  // each distinct marks, in graph order
      const marks = value || {};
      if (marks.kernel) entries.set(`kernel:${marks.kernel}`, [...kernelColors(marks.kernel), marks.kernel]);
      for (const [test, fill, border, label] of MARKS) if (test(marks)) entries.set(label, [fill, border, label]);
    }
    entries.set("input", [COLORS.input, COLORS.inputBorder, "input / parameter (tag above each reader)"]);
    this.legend.replaceChildren(...[...entries.values()].map(([fill, border, label]) => {
      const swatch = element("span", { className: "swatch" });
      swatch.style.background = fill;
      swatch.style.borderColor = border;
      return element("span", { className: "legend-entry" }, [swatch, label]);
    }));
  }

  /** The time overlay's legend: this graph's kernels (or lines), slowest first, each with its share of the step. */
  drawTimeLegend() {
    const { by, times } = this.overlay;
    const keyOf = this.timeKeyOf(by);
    const keys = [...new Set(Array.from({ length: this.model.count }, (_, i) => keyOf(i)).filter(Boolean))];
    keys.sort((a, b) => (times[b]?.share ?? -1) - (times[a]?.share ?? -1));
    const entry = ([fill, border], label) => {
      const swatch = element("span", { className: "swatch" });
      swatch.style.background = fill;
      swatch.style.borderColor = border;
      return element("span", { className: "legend-entry" }, [swatch, label]);
    };
    const label = (k) => {
      const share = times[k] ? `${(100 * times[k].share).toFixed(1)}%` : "(not in the profile)";
      return by === "kernel" ? `${k} ${share}` : `line ${k} ${share}${times[k] ? ` (${times[k].kernels.join(", ")})` : ""}`;
    };
    const shown = by === "kernel" ? keys : keys.filter((k) => times[k]);
    this.legend.replaceChildren(
      element("span", { className: "legend-title", textContent: by === "kernel"
        ? "Share of the profiled step's time, by kernel:"
        : "Share of the profiled step's time, by the kernels built from each line:" }),
      ...shown.map((k) => entry(times[k] ? timeColors(times[k].share / this.painter.largestShare) : [COLORS.node, COLORS.border], label(k))),
      entry([COLORS.node, COLORS.border], by === "kernel" ? "no generated kernel (a library call, a view, an input)"
        : "no timed kernel built from its line"));
  }
}

/** Creates a viewer for every graph card; each loads when it first scrolls into view. */
export function setUpViewers(root = document) {
  const observer = new IntersectionObserver((entries) => {
    for (const entry of entries) {
      if (!entry.isIntersecting) continue;
      observer.unobserve(entry.target);
      viewers.get(entry.target.dataset.graphId)?.load();
    }
  }, { rootMargin: "200px" });
  const cards = root.querySelectorAll(".graph-card");
  if (cards.length) layouts ??= new LayoutClient(new Worker(new URL("./graph-worker.js", import.meta.url), { type: "module" }));
  for (const card of cards) {
    viewers.set(card.dataset.graphId, new GraphViewer(card));
    observer.observe(card);
  }
}
