// Contrast of the graph canvas (static/js/graph-painter.js), computed from the colours it draws with and the
// stage's background in static/style.css: edges, node and badge borders, module boxes and the selection, highlight
// and focus rings at least 3:1 against every background they can sit on (WCAG 1.4.11, non-text contrast); the
// canvas's text at least 4.5:1 against its fill (1.4.3).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { BOX_DEPTH_CHECKED, COLORS, MARKS, kernelColors, timeColors } from "../../static/js/graph-painter.js";
import { ROOT } from "./graphs.js";

/** [r, g, b, a] (0-1) of a CSS colour as the painter writes them: #rrggbb, rgba(), hsl(h s% l%). */
function parse(colour) {
  let m = colour.match(/^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i);
  if (m) return [...m.slice(1).map((h) => parseInt(h, 16) / 255), 1];
  m = colour.match(/^rgba?\(([\d.]+),\s*([\d.]+),\s*([\d.]+)(?:,\s*([\d.]+))?\)$/);
  if (m) return [m[1] / 255, m[2] / 255, m[3] / 255, m[4] === undefined ? 1 : Number(m[4])];
  m = colour.match(/^hsl\(([\d.]+) ([\d.]+)% ([\d.]+)%\)$/);
  if (m) {
    const [h, s, l] = [Number(m[1]), m[2] / 100, m[3] / 100];
    const f = (n) => {
      const k = (n + h / 30) % 12;
      return l - s * Math.min(l, 1 - l) * Math.max(-1, Math.min(k - 3, 9 - k, 1));
    };
    return [f(0), f(8), f(4), 1];
  }
  throw new Error(`cannot read colour ${colour}`);
}

const over = ([r, g, b, a], [br, bg, bb]) => [r * a + br * (1 - a), g * a + bg * (1 - a), b * a + bb * (1 - a), 1];

function luminance([r, g, b]) {
  const linear = (c) => (c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4);
  return 0.2126 * linear(r) + 0.7152 * linear(g) + 0.0722 * linear(b);
}

function contrast(a, b) {
  const [la, lb] = [luminance(a), luminance(b)];
  return (Math.max(la, lb) + 0.05) / (Math.min(la, lb) + 0.05);
}

// The stage's colours (its background and the dots of its grid), read from the stylesheet the page uses.
const css = readFileSync(`${ROOT}static/style.css`, "utf8");
const stageRule = css.match(/\.graph-stage\s*\{([^}]*)\}/)[1];
const stageColours = stageRule.match(/#[0-9a-f]{6}/gi);

// Each stage colour under 0..BOX_DEPTH_CHECKED nested module boxes (each adds its translucent fill).
const backgrounds = stageColours.flatMap((colour) => {
  const list = [parse(colour)];
  for (let depth = 1; depth <= BOX_DEPTH_CHECKED; depth++) list.push(over(parse(COLORS.box), list[depth - 1]));
  return list.map((rgb, depth) => ({ rgb, name: `${colour} under ${depth} boxes` }));
});

// Kernel colours: their hue is a hash of the name, so many names cover the hue circle.
const kernels = Array.from({ length: 2000 }, (_, k) => kernelColors(`triton_poi_fused_${k}`));
// The time overlay's colours, from the kernel with no time to the slowest, and past both ends.
const times = [-1, ...Array.from({ length: 101 }, (_, k) => k / 100), 2, NaN].map(timeColors);

const lines = {
  edge: COLORS.edge, "node border": COLORS.border, "input tag border": COLORS.inputBorder,
  "out tag border": COLORS.muted, "module box border": COLORS.boxBorder, highlight: COLORS.highlight,
  selection: COLORS.selected, "focus ring": COLORS.focus,
  ...Object.fromEntries(MARKS.map(([, , border, label]) => [`${label} border`, border])),
};

test("the stage's colours are read from the stylesheet", () => {
  assert.ok(stageColours.length >= 1, stageRule);
  assert.ok(backgrounds.length >= BOX_DEPTH_CHECKED + 1);
});

test("lines, borders and rings: at least 3:1 against every background", () => {
  for (const [name, colour] of Object.entries(lines)) {
    for (const background of backgrounds) {
      const ratio = contrast(parse(colour), background.rgb);
      assert.ok(ratio >= 3, `${name} ${colour} on ${background.name}: ${ratio.toFixed(2)}:1`);
    }
  }
  for (const [, border] of [...kernels, ...times]) {
    for (const background of backgrounds) {
      const ratio = contrast(parse(border), background.rgb);
      assert.ok(ratio >= 3, `kernel border ${border} on ${background.name}: ${ratio.toFixed(2)}:1`);
    }
  }
});

test("a highlighted or selected node stands out from its own border and fill by 3:1", () => {
  const fills = [COLORS.node, COLORS.input, COLORS.collapsed, ...MARKS.map(([, fill]) => fill)];
  for (const ring of [COLORS.highlight, COLORS.selected]) {
    for (const fill of fills) assert.ok(contrast(parse(ring), parse(fill)) >= 3, `${ring} on ${fill}`);
  }
});

test("text: at least 4.5:1 against the fill it is written on", () => {
  const fills = { node: COLORS.node, input: COLORS.input, "closed module": COLORS.collapsed, "out tag": COLORS.outFill,
    ...Object.fromEntries(MARKS.map(([, fill, , label]) => [label, fill])) };
  for (const [name, fill] of Object.entries(fills)) {
    for (const [textName, text] of [["name", COLORS.ink], ["op", COLORS.muted]]) {
      const ratio = contrast(parse(text), parse(fill));
      assert.ok(ratio >= 4.5, `${textName} ${text} on ${name} ${fill}: ${ratio.toFixed(2)}:1`);
    }
  }
  for (const [fill] of times) {
    for (const text of [COLORS.ink, COLORS.muted]) {
      assert.ok(contrast(parse(text), parse(fill)) >= 4.5, `text ${text} on time fill ${fill}`);
    }
  }
  for (const [fill] of kernels) {
    assert.ok(contrast(parse(COLORS.muted), parse(fill)) >= 4.5, `op text on kernel fill ${fill}`);
  }
  for (const background of backgrounds) {  // a module box's title
    assert.ok(contrast(parse(COLORS.muted), background.rgb) >= 4.5, `box title on ${background.name}`);
  }
});

test("the contrast ratio is WCAG's: black on white 21:1, #767676 on white 4.54:1, the old edge colour 2.4:1", () => {
  assert.equal(contrast(parse("#000000"), parse("#ffffff")), 21);
  assert.equal(contrast(parse("#767676"), parse("#ffffff")).toFixed(2), "4.54");
  assert.equal(contrast(parse("#9aa5b1"), parse("#fcfcfd")).toFixed(1), "2.4");  // too faint: the edges before
  assert.deepEqual(parse("hsl(120 100% 25%)").map((c) => Math.round(c * 255)), [0, 128, 0, 255]);
});
