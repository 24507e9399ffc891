// The layered layout (static/js/graph-layout.js) on the recorded sample reports' graphs and on synthetic
// module-grouped graphs: layers follow the edges, nothing overlaps, boxes hold what is inside them, edges are the
// drawn stand-ins in graph order, closed modules stand in for their nodes, and an incremental relayout (one box
// opened) equals a layout from scratch.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { SIZES, buildModel, chainOf, defaultExpanded, layout, layoutInput, layoutModel, tagText, tagWidth, tagsOf } from "../../static/js/graph-layout.js";
import { payloads, syntheticGraph } from "./graphs.js";

const graphs = payloads({ reports: ["seed", "mlp_train", "tiny_gpt", "graph_break"],
  graphs: { modules: syntheticGraph(600, { layers: 6 }), flat: syntheticGraph(400) } });

/** The viewer's model and the worker's, as the page builds them. */
function models(payload) {
  const model = buildModel(payload);
  return { model, worker: layoutModel(layoutInput(model).input) };
}

const allOpen = (model) => new Set(model.groups.map((_, g) => g));

function rect(result, item) {
  const r = result.rects;
  return { x: r[item * 4], y: r[item * 4 + 1], w: r[item * 4 + 2], h: r[item * 4 + 3] };
}

const EPS = 1e-3;
const overlaps = (a, b) => a.x < b.x + b.w - EPS && b.x < a.x + a.w - EPS && a.y < b.y + b.h - EPS && b.y < a.y + a.h - EPS;
const contains = (outer, inner) => inner.x >= outer.x - EPS && inner.y >= outer.y - EPS
  && inner.x + inner.w <= outer.x + outer.w + EPS && inner.y + inner.h <= outer.y + outer.h + EPS;

/** The outermost item on each side of edge u -> v below their common groups, and that level (-1: the root). */
function siblingsOf(model, u, v, expanded) {
  const cu = chainOf(model, u), cv = chainOf(model, v);
  let k = 0;
  while (k < cu.length && k < cv.length && cu[k] === cv[k] && expanded.has(cu[k])) k++;
  return [k < cu.length ? model.count + cu[k] : u, k < cv.length ? model.count + cv[k] : v];
}

const orderKey = (model, item) => (item < model.count ? item : model.groups[item - model.count].first);

/** The stand-in of node i: itself, or its outermost closed group. */
function standIn(model, i, expanded) {
  for (const g of chainOf(model, i)) if (!expanded.has(g)) return model.count + g;
  return i;
}

function checkLayout(model, worker, expanded) {
  const result = layout(worker, expanded);
  const visible = [...result.items, ...result.boxes];

  // Every drawn node is shown exactly once: as itself or inside one closed group.
  const shown = new Set(result.items);
  for (let i = 0; i < model.count; i++) {
    if (!model.drawn[i]) continue;
    assert.ok(shown.has(standIn(model, i, expanded)), `${model.names[i]} has no visible stand-in`);
  }
  assert.equal(new Set(visible).size, visible.length, "an item is listed twice");

  // No two visible things overlap unless one is the box around the other, and a box holds all it contains.
  const ancestors = (item) => {
    const groups = item < model.count ? Array.from(chainOf(model, item)) : [];
    if (item >= model.count) for (let g = model.groups[item - model.count].parent; g >= 0; g = model.groups[g].parent) groups.push(g);
    return new Set(groups.map((g) => model.count + g));
  };
  const around = new Map(visible.map((item) => [item, ancestors(item)]));
  for (let a = 0; a < visible.length; a++) {
    const ra = rect(result, visible[a]);
    assert.ok(ra.w > 0 && ra.h > 0 && Number.isFinite(ra.x) && Number.isFinite(ra.y), `item ${visible[a]} has no place`);
    for (let b = a + 1; b < visible.length; b++) {
      const rb = rect(result, visible[b]);
      if (around.get(visible[b]).has(visible[a])) assert.ok(contains(ra, rb), `box ${visible[a]} does not hold ${visible[b]}`);
      else if (around.get(visible[a]).has(visible[b])) assert.ok(contains(rb, ra), `box ${visible[b]} does not hold ${visible[a]}`);
      else assert.ok(!overlaps(ra, rb), `items ${visible[a]} and ${visible[b]} overlap`);
    }
  }

  // Layering: across every edge that points forward in graph order, the reader's row is below the read one's.
  for (let v = 0; v < model.count; v++) {
    if (!model.drawn[v]) continue;
    for (let e = model.argStart[v]; e < model.argStart[v + 1]; e++) {
      const u = model.argList[e];
      if (!model.drawn[u]) continue;
      const [a, b] = siblingsOf(model, u, v, expanded);
      if (a === b || orderKey(model, a) >= orderKey(model, b)) continue;
      const ra = rect(result, a), rb = rect(result, b);
      assert.ok(rb.y >= ra.y + ra.h + SIZES.gapY - EPS, `${model.names[v]} is not below ${model.names[u]}`);
    }
  }

  // Edges: exactly the visible stand-ins of the graph's edges, each once, in graph order of the reading node.
  const expected = [], seen = new Set();
  for (let v = 0; v < model.count; v++) {
    if (!model.drawn[v]) continue;
    for (let e = model.argStart[v]; e < model.argStart[v + 1]; e++) {
      const u = model.argList[e];
      if (!model.drawn[u]) continue;
      const a = standIn(model, u, expanded), b = standIn(model, v, expanded);
      if (a === b || seen.has(`${a} ${b}`)) continue;
      seen.add(`${a} ${b}`);
      expected.push(a, b);
    }
  }
  assert.deepEqual(Array.from(result.edges), expected);
  return result;
}

describe("layout of the sample reports' graphs", () => {
  for (const [key, payload] of Object.entries(graphs)) {
    test(`${key}: default, all open and all closed`, () => {
      const { model, worker } = models(payload);
      checkLayout(model, worker, defaultExpanded(model));
      checkLayout(model, worker, allOpen(model));
      checkLayout(model, worker, new Set());
    });
  }
});

describe("layers", () => {
  test("seed.py: each op one row below the deepest op it reads", () => {
    // sin(x) * cos(x) + tanh(x): sin, cos and tanh read only the input (a tag), mul reads sin and cos, add mul
    // and tanh.
    const { model, worker } = models(graphs["seed:dynamo-0"]);
    const result = layout(worker, new Set());
    const y = (name) => rect(result, model.names.indexOf(name)).y;
    assert.deepEqual([y("sin"), y("cos"), y("tanh")], [0, 0, 0]);
    assert.ok(y("mul") > 0);
    assert.ok(y("add") > y("mul"));
    assert.equal(new Set(Array.from(result.items, (item) => rect(result, item).y)).size, 3);
  });

  test("a node's row is its longest path from an input (a skip connection does not lift it)", () => {
    const { model, worker } = models(graphs.flat);
    const result = layout(worker, new Set());
    const rowOf = new Map([...new Set(Array.from(result.items, (item) => rect(result, item).y))].sort((a, b) => a - b)
      .map((y, k) => [y, k]));
    for (const name of ["op0", "op9", "op10", "op17", "op399"]) {
      const i = model.names.indexOf(name);
      assert.equal(rowOf.get(rect(result, i).y), Number(name.slice(2)), name);  // a chain: op k on row k
    }
  });
});

describe("inputs and outputs", () => {
  test("an input read by ops is a tag on each reader, not a node; the output is not drawn", () => {
    const { model, worker } = models(graphs["seed:dynamo-0"]);
    const x = model.names.indexOf("l_x_");
    assert.ok(x >= 0);
    assert.equal(model.drawn[x], 0);
    assert.equal(model.drawn[model.output], 0);
    for (const reader of ["sin", "cos"]) assert.deepEqual(Array.from(tagsOf(model, model.names.indexOf(reader))), [x]);
    assert.equal(model.returned[model.names.indexOf("add")], 1);
    const result = layout(worker, new Set());
    assert.ok(!result.items.includes(x) && !result.items.includes(model.output));
  });
});

describe("collapsed modules", () => {
  const { model, worker } = models(graphs.modules);
  const layerGroups = model.groups.filter((group) => group.depth === 0);

  test("closed, each layer is one box of its collapsed size and the edges run between the boxes", () => {
    assert.equal(layerGroups.length, 6);
    const result = layout(worker, new Set());
    const boxes = layerGroups.map((group) => model.count + model.groups.indexOf(group));
    assert.deepEqual(Array.from(result.items).filter((item) => item >= model.count), boxes);
    assert.equal(result.boxes.length, 0);
    for (const item of boxes) {
      const { w, h } = rect(result, item);
      assert.deepEqual([w, h], worker.groups[item - model.count].collapsed);
    }
    // layers.L feeds layers.L+1 (the chain) and nothing else crosses: five edges, one row each.
    const edges = Array.from(result.edges);
    assert.deepEqual(edges, boxes.slice(0, -1).flatMap((box, k) => [box, boxes[k + 1]]));
    const ys = boxes.map((item) => rect(result, item).y);
    assert.deepEqual([...ys].sort((a, b) => a - b), ys);
  });

  test("opening one box shows its sub-modules closed and leaves the others closed", () => {
    const g = model.groups.indexOf(layerGroups[2]);
    const result = checkLayout(model, worker, new Set([g]));
    assert.deepEqual(Array.from(result.boxes), [model.count + g]);
    const inside = Array.from(result.items).filter((item) => item >= model.count && model.groups[item - model.count].parent === g);
    assert.equal(inside.length, 4);  // sub0..sub3
    const box = rect(result, model.count + g);
    for (const item of inside) assert.ok(contains(box, rect(result, item)));
    assert.equal(Array.from(result.items).filter((item) => item < model.count).length, 0);
  });

  test("an incremental relayout (boxes opened and closed one by one) equals a layout from scratch", () => {
    const cache = new Map();
    let expanded = new Set();
    layout(worker, expanded, cache, null);
    const steps = [[0, true], [model.groups.findIndex((group) => group.parent === 0), true], [3, true], [0, false]];
    for (const [g, open] of steps) {
      expanded = new Set(expanded);
      if (open) expanded.add(g);
      else expanded.delete(g);
      const incremental = layout(worker, expanded, cache, [g]);
      const fresh = layout(worker, expanded);
      for (const key of ["rects", "items", "boxes", "edges"]) assert.deepEqual(incremental[key], fresh[key], `${key} after ${g} ${open}`);
    }
  });

  test("the default opens boxes breadth-first while at most 400 items are visible", () => {
    const big = models(payloads({ graphs: { big: syntheticGraph(4000, { layers: 20 }) } }).big);
    const expanded = defaultExpanded(big.model);
    const result = layout(big.worker, expanded);
    assert.ok(result.items.length <= 400, `${result.items.length} items`);
    assert.ok(expanded.size > 0);
    for (const g of expanded) {  // breadth-first: a box is open only if its parent is
      const parent = big.model.groups[g].parent;
      assert.ok(parent < 0 || expanded.has(parent));
    }
  });
});

test("an input's tag reads as its path, cut at its start, never squeezed (48-layer parameter tags)", () => {
  assert.equal(tagText("l_self_modules_layers_modules_47_parameters_weight_"), "layers.47.weight");
  assert.equal(tagText("l_self_buffers_running_mean_"), "running_mean");
  assert.equal(tagText("l_x_"), "x");
  assert.equal(tagText("primals_1"), "primals_1");
  const long = tagText("l_self_modules_encoder_modules_layers_modules_11_modules_attn_parameters_in_proj_weight_");
  assert.equal(long.length, 18);
  assert.ok(long.startsWith("…") && long.endsWith("in_proj_weight"));
  // The layout sizes each tag for the text drawn in it (6 px a character at 10 px).
  assert.equal(tagWidth("l_self_modules_layers_modules_47_parameters_weight_"), 6 * "layers.47.weight".length + 10);
  const names = Array.from({ length: 48 }, (_, i) => tagText(`l_self_modules_layers_modules_${i}_parameters_weight_`));
  assert.equal(new Set(names).size, 48, "every layer's tag is told apart");
});
