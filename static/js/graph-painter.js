// Draws one laid-out graph on its canvas: module boxes, edges, nodes with their input tags, closed module boxes,
// then the selection and the keyboard focus ring. Only what is in view is drawn; text is left out when it would be
// too small to read. Colours: every line and badge border keeps at least 3:1 against the stage and the module
// boxes it can sit on, and text 4.5:1 against its fill (WCAG 1.4.11 and 1.4.3; tests/js/contrast.test.js).
import { SIZES, chainOf, field } from "./graph-layout.js";
import { focusRect, isNode, nodeTop, rectOf, tagRects } from "./graph-model.js";

export const COLORS = {
  ink: "#1d232a", muted: "#4f5863", edge: "#5f6a76", node: "#ffffff", border: "#5f6a76", input: "#e4eefb",
  inputBorder: "#44699a", box: "rgba(63, 110, 165, 0.05)", boxBorder: "#5a6f88", collapsed: "#eef3f9",
  highlight: "#c2410c", selected: "#9a3412", focus: "#1d4ed8", outFill: "#f1f3f5",
};
// Stage marks (docs/report-schema.md): [test, fill, border, legend label], first match wins.
export const MARKS = [
  [(m) => m.input_mutation === true, "#fbd5d0", "#a8321f", "input write-back (copy_ into a mutated input)"],
  [(m) => m.rewritten === "in-place", "#fde0dc", "#a8321f", "in-place op (functionalization rewrites it)"],
  [(m) => m.rewritten === "view", "#fff4c2", "#7a5f00", "view op (functionalization rewrites it)"],
  [(m) => m.saved === true, "#ffe3c4", "#96501a", "saved for backward"],
  [(m) => m.recomputed === true, "#eadcf8", "#7a48bd", "recomputed in backward"],
  [(m) => m.backward === true, "#e9eef5", "#56677f", "backward part of the joint graph"],
];
// Deepest nesting of module boxes the contrast test allows for (each box adds its faint fill).
export const BOX_DEPTH_CHECKED = 4;
// Alpha of nodes outside a highlight: de-emphasised on purpose, so not held to the contrast minimums.
const DIMMED = 0.28;

function kernelHue(name) {
  let hash = 0;
  for (const char of name) hash = (hash * 31 + char.charCodeAt(0)) >>> 0;
  return (hash * 137.508) % 360;
}

/** [fill, border] of the nodes of one generated kernel: a hue of their own. */
export function kernelColors(name) {
  const hue = kernelHue(name);
  return [`hsl(${hue} 70% 90%)`, `hsl(${hue} 45% 30%)`];
}

/** [fill, border] of a node whose kernel took ``fraction`` (0-1) of the largest kernel's time: pale yellow to
 *  light red, light enough everywhere for the node's text (tests/js/contrast.test.js). */
export function timeColors(fraction) {
  const f = Math.max(0, Math.min(1, Number.isFinite(fraction) ? fraction : 0));
  const hue = (55 - 50 * f).toFixed(1), light = (95 - 9 * f).toFixed(1);
  return [`hsl(${hue} 95% ${light}%)`, `hsl(${hue} 60% 30%)`];
}

/** The legend labels of a node's marks. */
export function markLabels(marks) {
  return MARKS.filter(([test]) => test(marks)).map(([, , , label]) => label);
}

function roundRect(ctx, x, y, w, h, r) {
  ctx.beginPath();
  ctx.roundRect(x, y, w, h, r);
}

export class GraphPainter {
  constructor(canvas) {
    this.canvas = canvas;
    this.styles = new Map();  // see style()
    this.times = null;  // the time overlay: {key: {share, ms}}, or null for the usual colours
  }

  /** Colours node i by the share of the step of times[keyOf(i)] (a kernel's, or a line's kernels'), a node without
   *  one plainly; with null times, as usual. */
  setTimes(times, keyOf = null) {
    this.times = times;
    this.timeKey = keyOf;
    this.largestShare = times ? Math.max(...Object.values(times).map((t) => t.share), 1e-9) : 0;
    this.styles.clear();
  }

  timeStyle(model, i) {
    const op = field(model, "op", i), input = op === "placeholder" || op === "get_attr";
    const key = input ? null : this.timeKey(i);
    const cacheKey = `time:${key}:${input}`;
    let style = this.styles.get(cacheKey);
    if (!style) {
      const time = key === null || key === undefined ? undefined : this.times[key];
      if (time) style = timeColors(time.share / this.largestShare);
      else style = input ? [COLORS.input, COLORS.inputBorder] : [COLORS.node, COLORS.border];
      this.styles.set(cacheKey, style);
    }
    return style;
  }

  /** [fill, border] of node i: by its marks, else input or op. Worked out once per distinct marks and op. */
  style(model, i) {
    if (this.times) return this.timeStyle(model, i);
    const marksIndex = model.columns.marks.index[i], op = field(model, "op", i);
    const input = op === "placeholder" || op === "get_attr";
    const key = 2 * marksIndex + (input ? 1 : 0);
    let style = this.styles.get(key);
    if (!style) {
      const marks = model.columns.marks.values[marksIndex] || {};
      const marked = MARKS.find(([test]) => test(marks));
      if (marks.kernel) style = kernelColors(marks.kernel);
      else if (marked) style = [marked[1], marked[2]];
      else style = input ? [COLORS.input, COLORS.inputBorder] : [COLORS.node, COLORS.border];
      this.styles.set(key, style);
    }
    return style;
  }

  /** Draws the scene: {model, layout, view: {scale, x, y}, size: {width, height}, ratio, highlighted (Set),
   *  selected (node or -1), focus ({item, tag} or null: the ring is drawn only while it is set)}. */
  paint(scene) {
    const { model, layout, view, size, ratio } = scene;
    const ctx = this.canvas.getContext("2d");
    const { scale, x: tx, y: ty } = view;
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.clearRect(0, 0, this.canvas.width, this.canvas.height);
    ctx.setTransform(ratio * scale, 0, 0, ratio * scale, ratio * tx, ratio * ty);
    const left = -tx / scale, top = -ty / scale;
    const right = left + size.width / scale, bottom = top + size.height / scale;
    const inView = (x, y, w, h) => x + w >= left && x <= right && y + h >= top && y <= bottom;
    const frame = { ctx, scene, withText: scale > 0.3, dim: scene.highlighted.size > 0 };

    for (const item of layout.boxes) {
      const [x, y, w, h] = rectOf(layout, item);
      if (!inView(x, y, w, h)) continue;
      const group = model.groups[item - model.count];
      ctx.fillStyle = COLORS.box;
      ctx.strokeStyle = COLORS.boxBorder;
      ctx.lineWidth = 1 / Math.max(scale, 0.5);
      roundRect(ctx, x, y, w, h, 8);
      ctx.fill();
      ctx.stroke();
      if (frame.withText) {
        ctx.fillStyle = COLORS.muted;
        ctx.font = "600 12px system-ui, sans-serif";
        ctx.fillText(`▾ ${group.label}  ${group.type}`, x + 8, y + 15, w - 16);
      }
    }

    ctx.strokeStyle = COLORS.edge;
    ctx.lineWidth = 1.2;
    ctx.beginPath();
    const edges = layout.edges;
    for (let e = 0; e < edges.length; e += 2) {
      const [ax, ay, aw, ah] = rectOf(layout, edges[e]);
      const [bx, by, bw] = rectOf(layout, edges[e + 1]);
      const sx = ax + aw / 2, sy = ay + ah - (isNode(model, edges[e]) && model.returned[edges[e]] ? SIZES.tagHeight + 3 : 0);
      const ex = bx + bw / 2, ey = isNode(model, edges[e + 1]) ? nodeTop(model, edges[e + 1], by) : by;
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

    for (const item of layout.items) {
      const [x, y, w, h] = rectOf(layout, item);
      if (!inView(x, y, w, h)) continue;
      if (isNode(model, item)) this.paintNode(frame, item, x, y, w);
      else this.paintCollapsed(frame, item, x, y, w, h);
    }
    if (scene.focus) this.paintFocus(frame);
  }

  paintNode({ ctx, scene, withText, dim }, i, x, y, w) {
    const { model, highlighted, selected } = scene, name = model.names[i];
    const hit = highlighted.has(i);
    ctx.globalAlpha = dim && !hit && selected !== i ? DIMMED : 1;
    for (const tag of tagRects(model, i, x, y)) {
      if (tag.node < 0) this.paintTag(ctx, tag, COLORS.input, COLORS.inputBorder, withText, false);
      else this.paintTag(ctx, tag, ...this.style(model, tag.node), withText, highlighted.has(tag.node) || selected === tag.node);
    }
    const top = nodeTop(model, i, y);
    const [fill, border] = this.style(model, i);
    ctx.fillStyle = fill;
    ctx.strokeStyle = hit ? COLORS.highlight : border;
    ctx.lineWidth = hit ? 3 : 1.2;
    roundRect(ctx, x, top, w, SIZES.nodeHeight, 5);
    ctx.fill();
    ctx.stroke();
    if (selected === i) {
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
      const out = { x: x + w / 2 - 18, y: top + SIZES.nodeHeight + 3, w: 36, text: "out" };
      this.paintTag(ctx, out, COLORS.outFill, COLORS.muted, withText, false);
    }
    ctx.globalAlpha = 1;
  }

  paintTag(ctx, { x, y, w, text }, fill, border, withText, hit) {
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

  paintCollapsed({ ctx, scene, withText, dim }, item, x, y, w, h) {
    const { model, highlighted } = scene;
    const group = model.groups[item - model.count];
    const hit = groupHasHighlight(model, highlighted, item - model.count);
    ctx.globalAlpha = dim && !hit ? DIMMED : 1;
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

  /** The keyboard focus: a ring outside the selection ring, at least 2 screen pixels wide at any zoom. */
  paintFocus({ ctx, scene }) {
    const { model, layout, focus, view } = scene;
    const [x, y, w, h] = focusRect(model, layout, focus);
    if (Number.isNaN(x)) return;
    const gap = 7;
    ctx.strokeStyle = COLORS.focus;
    ctx.lineWidth = Math.max(2.5, 2 / view.scale);
    ctx.setLineDash([6, 3]);
    roundRect(ctx, x - gap, y - gap, w + 2 * gap, h + 2 * gap, 10);
    ctx.stroke();
    ctx.setLineDash([]);
  }
}

export function groupHasHighlight(model, highlighted, g) {
  if (!highlighted.size) return false;
  for (const i of highlighted) if (chainOf(model, i).includes(g)) return true;
  return false;
}
