// Interactive FX graph viewer: a <section class="graph-card"> fetches its graph when it scrolls into view (or is
// linked to), has it laid out by the shared worker, and draws it on a canvas: pan (drag), zoom (wheel), search,
// click a node for its details, click a module box to open or close it. Every text is set with textContent.
import { SIZES, argsOf, buildModel, chainOf, defaultExpanded, field, layoutInput, moduleLabel, nodeFields, nodeNumber,
  shownTags, tagWidth, tagsOf, usersOf } from "./graph-layout.js";

export const viewers = new Map();  // graph id -> GraphViewer

let worker = null;  // started by setUpViewers when the page has a graph, so it loads while the graph is fetched
const pending = new Map();  // graph id -> resolve of the layout it waits for

function startWorker() {
  worker = new Worker(new URL("./graph-worker.js", import.meta.url), { type: "module" });
  worker.onmessage = (event) => {
    const resolve = pending.get(event.data.id);
    pending.delete(event.data.id);
    if (resolve) resolve(event.data.result);
  };
}

const COLORS = {
  ink: "#1d232a", muted: "#68717d", edge: "#9aa5b1", node: "#ffffff", border: "#7d8894", input: "#e4eefb",
  inputBorder: "#5b84b1", box: "rgba(63, 110, 165, 0.05)", boxBorder: "#b7c6d8", collapsed: "#eef3f9",
  highlight: "#e8590c", selected: "#b8460b",
};
// Stage marks (docs/report-schema.md): [test, fill, border, legend label], first match wins.
const MARKS = [
  [(m) => m.input_mutation === true, "#fbd5d0", "#c0392b", "input write-back (copy_ into a mutated input)"],
  [(m) => m.rewritten === "in-place", "#fde0dc", "#c0392b", "in-place op (functionalization rewrites it)"],
  [(m) => m.rewritten === "view", "#fff4c2", "#a07d00", "view op (functionalization rewrites it)"],
  [(m) => m.saved === true, "#ffe3c4", "#d9822b", "saved for backward"],
  [(m) => m.recomputed === true, "#eadcf8", "#8e5bd0", "recomputed in backward"],
  [(m) => m.backward === true, "#e9eef5", "#7d8fa6", "backward part of the joint graph"],
];

function kernelHue(name) {
  let hash = 0;
  for (const char of name) hash = (hash * 31 + char.charCodeAt(0)) >>> 0;
  return (hash * 137.508) % 360;
}

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
    this.status = card.querySelector(".graph-status");
    this.legend = card.querySelector(".graph-legend");
    this.highlightNote = card.querySelector(".graph-highlight");
    this.search = card.querySelector(".graph-search");
    this.view = { scale: 1, x: 0, y: 0 };
    this.highlighted = new Set();
    this.selected = -1;
    this.loading = null;
    this.matches = [];
    this.matchCursor = -1;
    this.styles = new Map();  // see style()
    this.bind();
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
    worker.postMessage({ type: "init", id: this.id, input }, transfer);
    this.expanded = defaultExpanded(this.model);
    await this.relayout();
    this.fitStageHeight();
    this.fit();
    this.paintNow();  // "ready" means drawn
    this.drawLegend();
    this.status.textContent = `${this.model.count} nodes (${this.model.drawnCount} drawn, inputs as tags) · ${this.model.groups.length} module boxes · ready in ${Math.round(performance.now() - started)} ms`;
    this.card.dataset.state = "ready";
    this.card.dataset.readyAt = String(performance.now());
  }

  relayout() {
    return new Promise((resolve) => {
      pending.set(this.id, resolve);
      worker.postMessage({ type: "layout", id: this.id, expanded: [...this.expanded] });
    }).then((result) => {
      this.layout = result;
      this.card.dataset.visible = String(result.items.length);  // what is drawn: nodes and closed module boxes
      this.draw();
    });
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

  /** A small graph gets a short stage rather than a mostly empty one. */
  fitStageHeight() {
    const wanted = Math.ceil(this.layout.height + 48);
    const full = this.stage.getBoundingClientRect().height;
    if (wanted < full) this.stage.style.height = `${Math.max(180, wanted)}px`;
  }

  fit() {
    this.resize();
    const { width, height } = this.layout;
    const margin = 24;
    let scale = Math.min(1.1, (this.size.width - margin) / Math.max(1, width), (this.size.height - margin) / Math.max(1, height));
    if (scale < 0.35) scale = Math.max(0.35, Math.min(1.1, (this.size.width - margin) / Math.max(1, width)));
    this.view.scale = scale;
    this.view.x = Math.max(margin / 2, (this.size.width - width * scale) / 2);
    this.view.y = height * scale < this.size.height ? (this.size.height - height * scale) / 2 : margin / 2;
    this.draw();
  }

  rect(item) {
    const r = this.layout.rects;
    return [r[item * 4], r[item * 4 + 1], r[item * 4 + 2], r[item * 4 + 3]];
  }

  centerOn(item) {
    const [x, y, w, h] = this.rect(item);
    if (Number.isNaN(x)) return;
    this.view.scale = Math.max(this.view.scale, 0.8);
    this.view.x = this.size.width / 2 - (x + w / 2) * this.view.scale;
    this.view.y = this.size.height / 2 - (y + h / 2) * this.view.scale;
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
    const ctx = this.canvas.getContext("2d");
    const { scale, x: tx, y: ty } = this.view;
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.clearRect(0, 0, this.canvas.width, this.canvas.height);
    ctx.setTransform(this.ratio * scale, 0, 0, this.ratio * scale, this.ratio * tx, this.ratio * ty);
    const left = -tx / scale, top = -ty / scale;
    const right = left + this.size.width / scale, bottom = top + this.size.height / scale;
    const inView = (x, y, w, h) => x + w >= left && x <= right && y + h >= top && y <= bottom;
    const withText = scale > 0.3;
    const dim = this.highlighted.size > 0;

    for (const item of this.layout.boxes) {
      const [x, y, w, h] = this.rect(item);
      if (!inView(x, y, w, h)) continue;
      const group = this.model.groups[item - this.model.count];
      ctx.fillStyle = COLORS.box;
      ctx.strokeStyle = COLORS.boxBorder;
      ctx.lineWidth = 1 / Math.max(scale, 0.5);
      roundRect(ctx, x, y, w, h, 8);
      ctx.fill();
      ctx.stroke();
      if (withText) {
        ctx.fillStyle = COLORS.muted;
        ctx.font = "600 12px system-ui, sans-serif";
        ctx.fillText(`▾ ${group.label}  ${group.type}`, x + 8, y + 15, w - 16);
      }
    }

    ctx.strokeStyle = COLORS.edge;
    ctx.lineWidth = 1.2;
    ctx.beginPath();
    const edges = this.layout.edges;
    for (let e = 0; e < edges.length; e += 2) {
      const [ax, ay, aw, ah] = this.rect(edges[e]);
      const [bx, by, bw] = this.rect(edges[e + 1]);
      const sx = ax + aw / 2, sy = ay + ah - (this.isNode(edges[e]) && this.model.returned[edges[e]] ? SIZES.tagHeight + 3 : 0);
      const ex = bx + bw / 2, ey = by + (this.isNode(edges[e + 1]) && tagsOf(this.model, edges[e + 1]).length ? SIZES.tagHeight + 3 : 0);
      if (Math.max(sx, ex) < left || Math.min(sx, ex) > right || Math.max(sy, ey) < top || Math.min(sy, ey) > bottom) continue;
      const bend = Math.max(16, Math.abs(ey - sy) / 2);
      ctx.moveTo(sx, sy);
      ctx.bezierCurveTo(sx, sy + bend, ex, ey - bend, ex, ey);
      if (scale > 0.45) {
        ctx.moveTo(ex - 3.5, ey - 6);
        ctx.lineTo(ex, ey);
        ctx.lineTo(ex + 3.5, ey - 6);
      }
    }
    ctx.stroke();

    for (const item of this.layout.items) {
      const [x, y, w, h] = this.rect(item);
      if (!inView(x, y, w, h)) continue;
      if (this.isNode(item)) this.paintNode(ctx, item, x, y, w, h, withText, dim);
      else this.paintCollapsed(ctx, item, x, y, w, h, withText, dim);
    }
  }

  isNode(item) {
    return item < this.model.count;
  }

  /** [fill, border] of node i: by its marks, else input or op. Worked out once per distinct marks and op. */
  style(i) {
    const marksIndex = this.model.columns.marks.index[i], op = field(this.model, "op", i);
    const input = op === "placeholder" || op === "get_attr";
    const key = 2 * marksIndex + (input ? 1 : 0);
    let style = this.styles.get(key);
    if (!style) {
      const marks = this.model.columns.marks.values[marksIndex] || {};
      const marked = MARKS.find(([test]) => test(marks));
      if (marks.kernel) style = [`hsl(${kernelHue(marks.kernel)} 70% 88%)`, `hsl(${kernelHue(marks.kernel)} 45% 40%)`];
      else if (marked) style = [marked[1], marked[2]];
      else style = input ? [COLORS.input, COLORS.inputBorder] : [COLORS.node, COLORS.border];
      this.styles.set(key, style);
    }
    return style;
  }

  paintNode(ctx, i, x, y, w, h, withText, dim) {
    const model = this.model, name = model.names[i];
    const hit = this.highlighted.has(i);
    ctx.globalAlpha = dim && !hit && this.selected !== i ? 0.28 : 1;
    let top = y;
    const tags = tagsOf(model, i);
    if (tags.length) {
      let tx = x;
      const shown = shownTags(model, i);
      for (const j of shown) {
        const tw = tagWidth(model.names[j]);
        this.paintTag(ctx, tx, top, tw, model.names[j], ...this.style(j), withText, this.highlighted.has(j) || this.selected === j);
        tx += tw + SIZES.tagGap;
      }
      if (shown.length < tags.length) {
        const more = `+${tags.length - shown.length}`;
        this.paintTag(ctx, tx, top, tagWidth(more), more, COLORS.input, COLORS.inputBorder, withText, false);
      }
      top += SIZES.tagHeight + 3;
    }
    const [fill, border] = this.style(i);
    ctx.fillStyle = fill;
    ctx.strokeStyle = hit ? COLORS.highlight : border;
    ctx.lineWidth = hit ? 3 : 1.2;
    roundRect(ctx, x, top, w, SIZES.nodeHeight, 5);
    ctx.fill();
    ctx.stroke();
    if (this.selected === i) {
      ctx.strokeStyle = COLORS.selected;
      ctx.lineWidth = 2.5;
      roundRect(ctx, x - 4, top - 4, w + 8, SIZES.nodeHeight + 8, 8);
      ctx.stroke();
    }
    if (withText) {
      ctx.fillStyle = COLORS.ink;
      ctx.font = "600 12px ui-monospace, 'DejaVu Sans Mono', monospace";
      ctx.fillText(name, x + 8, top + 15, w - 16);
      ctx.fillStyle = COLORS.muted;
      ctx.font = "11px ui-monospace, 'DejaVu Sans Mono', monospace";
      const op = field(model, "op", i);
      ctx.fillText(op.startsWith("call_") ? model.targetLabels[model.columns.target.index[i]] : op, x + 8, top + 29, w - 16);
    }
    if (model.returned[i]) {
      this.paintTag(ctx, x + w / 2 - 18, top + SIZES.nodeHeight + 3, 36, "out", "#f1f3f5", COLORS.muted, withText, false);
    }
    ctx.globalAlpha = 1;
  }

  paintTag(ctx, x, y, w, text, fill, border, withText, hit) {
    ctx.fillStyle = fill;
    ctx.strokeStyle = hit ? COLORS.highlight : border;
    ctx.lineWidth = hit ? 2.5 : 1;
    roundRect(ctx, x, y, w, SIZES.tagHeight, 7);
    ctx.fill();
    ctx.stroke();
    if (withText) {
      ctx.fillStyle = COLORS.ink;
      ctx.font = "10px ui-monospace, 'DejaVu Sans Mono', monospace";
      ctx.fillText(text, x + 5, y + 11, w - 8);
    }
  }

  paintCollapsed(ctx, item, x, y, w, h, withText, dim) {
    const group = this.model.groups[item - this.model.count];
    const hit = this.groupHasHighlight(item - this.model.count);
    ctx.globalAlpha = dim && !hit ? 0.28 : 1;
    ctx.fillStyle = COLORS.collapsed;
    ctx.strokeStyle = hit ? COLORS.highlight : COLORS.inputBorder;
    ctx.lineWidth = hit ? 3 : 1.4;
    roundRect(ctx, x, y, w, h, 8);
    ctx.fill();
    ctx.stroke();
    if (withText) {
      ctx.fillStyle = COLORS.ink;
      ctx.font = "600 12px system-ui, sans-serif";
      ctx.fillText(`▸ ${group.label}`, x + 8, y + 16, w - 16);
      ctx.fillStyle = COLORS.muted;
      ctx.font = "11px system-ui, sans-serif";
      ctx.fillText(`${group.type} · ${group.size} nodes`, x + 8, y + 32, w - 16);
    }
    ctx.globalAlpha = 1;
  }

  groupHasHighlight(g) {
    if (!this.highlighted.size) return false;
    for (const i of this.highlighted) if (chainOf(this.model, i).includes(g)) return true;
    return false;
  }

  // Interaction

  bind() {
    const canvas = this.canvas;
    let drag = null;
    canvas.addEventListener("pointerdown", (event) => {
      drag = { x: event.clientX, y: event.clientY, vx: this.view.x, vy: this.view.y, moved: false };
      canvas.setPointerCapture(event.pointerId);
    });
    canvas.addEventListener("pointermove", (event) => {
      if (!drag) return;
      const dx = event.clientX - drag.x, dy = event.clientY - drag.y;
      if (Math.abs(dx) + Math.abs(dy) > 3) drag.moved = true;
      this.view.x = drag.vx + dx;
      this.view.y = drag.vy + dy;
      this.draw();
    });
    canvas.addEventListener("pointerup", (event) => {
      const wasClick = drag && !drag.moved;
      drag = null;
      if (wasClick && this.layout) this.click(event);
    });
    canvas.addEventListener("wheel", (event) => {
      if (!this.layout) return;
      event.preventDefault();
      const box = canvas.getBoundingClientRect();
      this.zoomAt(event.clientX - box.left, event.clientY - box.top, Math.exp(-event.deltaY * 0.0015));
    }, { passive: false });
    canvas.addEventListener("keydown", (event) => {
      const moves = { ArrowLeft: [40, 0], ArrowRight: [-40, 0], ArrowUp: [0, 40], ArrowDown: [0, -40] };
      if (moves[event.key]) {
        this.view.x += moves[event.key][0];
        this.view.y += moves[event.key][1];
        this.draw();
      } else if (event.key === "+" || event.key === "=") this.zoomAt(this.size.width / 2, this.size.height / 2, 1.25);
      else if (event.key === "-") this.zoomAt(this.size.width / 2, this.size.height / 2, 0.8);
      else return;
      event.preventDefault();
    });
    this.card.querySelector("[data-action=fit]").addEventListener("click", () => this.load().then(() => this.fit()));
    this.card.querySelector("[data-action=expand]").addEventListener("click", () => this.setAllExpanded(true));
    this.card.querySelector("[data-action=collapse]").addEventListener("click", () => this.setAllExpanded(false));
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

  zoomAt(px, py, factor) {
    const scale = Math.min(4, Math.max(0.02, this.view.scale * factor));
    this.view.x = px - (px - this.view.x) * (scale / this.view.scale);
    this.view.y = py - (py - this.view.y) * (scale / this.view.scale);
    this.view.scale = scale;
    this.draw();
  }

  async setAllExpanded(open) {
    await this.load();
    this.expanded = open ? new Set(this.model.groups.map((_, g) => g)) : new Set();
    await this.relayout();
    this.fit();
  }

  click(event) {
    const box = this.canvas.getBoundingClientRect();
    const wx = (event.clientX - box.left - this.view.x) / this.view.scale;
    const wy = (event.clientY - box.top - this.view.y) / this.view.scale;
    const hit = this.hitTest(wx, wy);
    if (hit === null) return;
    if (hit.kind === "group") this.toggleGroup(hit.group);
    else this.select(hit.node, { updateUrl: true });
  }

  hitTest(wx, wy) {
    const inside = (x, y, w, h) => wx >= x && wx <= x + w && wy >= y && wy <= y + h;
    const items = this.layout.items;
    for (let k = items.length - 1; k >= 0; k--) {
      const item = items[k];
      const [x, y, w, h] = this.rect(item);
      if (!inside(x, y, w, h)) continue;
      if (!this.isNode(item)) return { kind: "group", group: item - this.model.count };
      if (tagsOf(this.model, item).length && wy < y + SIZES.tagHeight + 3) {
        let tx = x;
        for (const j of shownTags(this.model, item)) {
          const tw = tagWidth(this.model.names[j]);
          if (wx >= tx && wx <= tx + tw) return { kind: "node", node: j };
          tx += tw + SIZES.tagGap;
        }
      }
      return { kind: "node", node: item };
    }
    for (const item of [...this.layout.boxes].reverse()) {
      const [x, y, w] = this.rect(item);
      if (inside(x, y, w, SIZES.groupHead)) return { kind: "group", group: item - this.model.count };
    }
    return null;
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

  /** The drawn item that shows node i (itself, or the reader its input tag sits on). */
  itemOf(i) {
    if (this.model.drawn[i]) return i;
    return usersOf(this.model, i).find((u) => this.model.drawn[u]) ?? -1;
  }

  async select(i, { updateUrl = false, center = false } = {}) {
    await this.load();
    if (typeof i === "string") i = nodeNumber(this.model, i);
    if (i < 0) return false;
    this.selected = i;
    const item = this.itemOf(i);
    if (item >= 0) await this.reveal(item);
    if (center && item >= 0) this.centerOn(item);
    this.showDetails(i);
    this.draw();
    if (updateUrl) history.replaceState(null, "", `#graph-${this.id}/${encodeURIComponent(this.model.names[i])}`);
    this.card.dataset.selected = this.model.names[i];
    return true;
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
      const items = found.map((i) => this.itemOf(i)).filter((item) => item >= 0);
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
      && field(model, "line", i) === line && (field(model, "file", i) || "").split("/").pop() === file);
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
      const ours = file === this.card.dataset.sourceFile;
      add("source", ours ? element("a", { href: `#L-${node.line}`, textContent: `${file}:${node.line}`, className: "line-link" })
        : `${file}:${node.line}`, node.code ? element("code", { className: "source-code", textContent: node.code }) : null);
    }
    if ((node.module_stack || []).length) {
      add("module", ...node.module_stack.map((frame, k) => element("span", { className: "module-frame",
        textContent: `${k ? " › " : ""}${moduleLabel(frame.path)} (${frame.type})` })));
    }
    if (node.original_aten && node.original_aten !== node.target) add("from ATen op", element("code", { textContent: node.original_aten }));
    const marks = node.marks || {};
    const markText = MARKS.filter(([test]) => test(marks)).map(([, , , label]) => label);
    if (markText.length) add("marks", markText.join("; "));
    if (marks.kernel) {
      const here = document.getElementById(`kernel-${marks.kernel}`);
      add("kernel", element("a", { href: here ? `#kernel-${marks.kernel}` : `${this.card.dataset.inductorUrl}#kernel-${marks.kernel}`,
        textContent: marks.kernel, className: "kernel-link" }));
    } else if ("kernel" in marks && node.op === "call_function") add("kernel", "none (a library call or no code)");
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
    const entries = new Map();
    for (const value of this.model.columns.marks.values) {  // each distinct marks, in graph order
      const marks = value || {};
      if (marks.kernel) entries.set(`kernel:${marks.kernel}`, [`hsl(${kernelHue(marks.kernel)} 70% 88%)`, `hsl(${kernelHue(marks.kernel)} 45% 40%)`, marks.kernel]);
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
}

function roundRect(ctx, x, y, w, h, r) {
  ctx.beginPath();
  ctx.roundRect(x, y, w, h, r);
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
  if (cards.length) startWorker();
  for (const card of cards) {
    viewers.set(card.dataset.graphId, new GraphViewer(card));
    observer.observe(card);
  }
}
