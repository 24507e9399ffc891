// FX graph model and layered layout. The viewer indexes the graph once (buildModel: hit tests, search, details) and
// hands its worker what the layout needs as typed arrays (layoutInput); the worker lays the graph out
// (layoutModel, layout) off the main thread.
//
// Why a layout of our own: FX graphs are already in topological order, so a layered layout (layer = longest path,
// order in a layer by a few barycenter sweeps) is O(nodes + edges) where dagre and elk are not (dagre overflows
// the stack past 2,000 nodes, elk takes 6 s for 2,000). Module groups (nn_module_stack) are laid out one at a
// time: a collapsed group is one box, an expanded one is laid out inside its box, so expanding a group only lays
// out that group and re-places its ancestors. Placeholders and parameters are drawn as small per-use tags above
// each node that reads them, and the output as a tag under each value it returns, so no edge spans the picture.

export const SIZES = {
  nodeHeight: 36, tagHeight: 15, tagGap: 4, tagMax: 6, groupPad: 12, groupHead: 22, collapsedHeight: 42,
  gapX: 18, gapY: 30, charWidth: 7, tagCharWidth: 6,
};

const TAG_OPS = new Set(["placeholder", "get_attr"]);
const NO_GROUPS = new Int32Array(0);

export function shortTarget(target) {
  return String(target ?? "").replace(/^aten\./, "").replace(/\.default$/, "").replace(/^_operator\./, "");
}

export function moduleLabel(path) {
  // "L['self'].blocks.0.attn" -> "blocks.0.attn"; the innermost part names the box, the rest is context.
  return String(path).replace(/^L\['self'\]\.?/, "").replace(/^L\['([^']*)'\]/, "$1") || "self";
}

/** Node i's value of a recorded field (op, target, shape, ...: the columns of contract/graphs.py's graph_payload). */
export function field(model, key, i) {
  const column = model.columns[key];
  return column.values[column.index[i]];
}

/** Indexes a graph as the endpoint sends it (columns): users, tags, module groups. Edges are node numbers. */
export function buildModel(graph) {
  const count = graph.count;
  const argStart = Int32Array.from(graph.arg_offsets), argList = Int32Array.from(graph.args);
  const userStart = new Int32Array(count + 1);
  for (const j of argList) userStart[j + 1]++;
  for (let i = 0; i < count; i++) userStart[i + 1] += userStart[i];
  const userList = new Int32Array(argList.length);
  const next = userStart.slice(0, count);
  for (let i = 0; i < count; i++) for (let e = argStart[i]; e < argStart[i + 1]; e++) userList[next[argList[e]]++] = i;

  const ops = graph.columns.op;
  const output = ops.index.findIndex((k) => ops.values[k] === "output");
  const inputOp = ops.values.map((op) => TAG_OPS.has(op));
  // A node is drawn unless it is the output or an input read by some real op (then it is a tag on each reader).
  const drawn = new Uint8Array(count);
  for (let i = 0; i < count; i++) {
    if (i === output) continue;
    drawn[i] = 1;
    if (!inputOp[ops.index[i]]) continue;
    for (let e = userStart[i]; e < userStart[i + 1]; e++) if (userList[e] !== output) { drawn[i] = 0; break; }
  }
  const tagStart = new Int32Array(count + 1), tags = [];  // inputs read by each drawn node
  const returned = new Uint8Array(count);  // values the output returns: tagged "out" underneath
  for (let i = 0; i < count; i++) {
    for (let e = argStart[i]; e < argStart[i + 1]; e++) {
      const j = argList[e];
      if (i === output) { if (drawn[j]) returned[j] = 1; } else if (drawn[i] && !drawn[j] && j !== output) tags.push(j);
    }
    tagStart[i + 1] = tags.length;
  }

  // Module groups, in order of the first drawn node inside each; a node's chain (outermost group first) is its
  // module stack's, worked out once per distinct stack.
  const groups = [];
  const groupByPath = new Map();
  const stacks = graph.columns.module_stack;
  const stackChains = new Array(stacks.values.length).fill(null);
  const rootItems = [];
  let drawnCount = 0;
  for (let i = 0; i < count; i++) {
    if (!drawn[i]) continue;
    drawnCount++;
    const s = stacks.index[i];
    if (stackChains[s] === null) {
      const chain = [];
      let parent = -1;
      for (const frame of stacks.values[s] || []) {
        let g = groupByPath.get(frame.path);
        if (g === undefined) {
          g = groups.length;
          groupByPath.set(frame.path, g);
          groups.push({ path: frame.path, type: frame.type, label: moduleLabel(frame.path), parent,
                        depth: parent < 0 ? 0 : groups[parent].depth + 1, items: [], first: i, size: 0 });
          (parent < 0 ? rootItems : groups[parent].items).push(count + g);
        }
        parent = g;
        chain.push(g);
      }
      // A node whose recorded stack skips a level keeps the chain it reported; the group tree is what was seen first.
      stackChains[s] = Int32Array.from(chain);
    }
    const chain = stackChains[s];
    const parent = chain.length ? chain[chain.length - 1] : -1;
    (parent < 0 ? rootItems : groups[parent].items).push(i);
    for (let g = parent; g >= 0; g = groups[g].parent) groups[g].size++;
  }
  return { count, names: graph.names, columns: graph.columns, argStart, argList, userStart, userList, output, drawn,
           drawnCount, tagStart, tagList: Int32Array.from(tags), returned, groups, rootItems,
           stackOf: Int32Array.from(stacks.index), stackChains, targetLabels: graph.columns.target.values.map(shortTarget), numbers: null };
}

/** Node i as recorded (name and every column), for its details. */
export function nodeFields(model, i) {
  const node = { name: model.names[i] };
  for (const key of Object.keys(model.columns)) node[key] = field(model, key, i);
  return node;
}

export function argsOf(model, i) {
  return model.argList.subarray(model.argStart[i], model.argStart[i + 1]);
}

export function usersOf(model, i) {
  return model.userList.subarray(model.userStart[i], model.userStart[i + 1]);
}

/** The inputs drawn as tags above node i. */
export function tagsOf(model, i) {
  return model.tagList.subarray(model.tagStart[i], model.tagStart[i + 1]);
}

/** The module groups around node i, outermost first (none for a node drawn as a tag). Works on the viewer's
 *  model and the worker's alike. */
export function chainOf(model, i) {
  return model.drawn[i] ? model.stackChains[model.stackOf[i]] : NO_GROUPS;
}

/** The node named `name`, or -1. */
export function nodeNumber(model, name) {
  model.numbers ??= new Map(model.names.map((n, i) => [n, i]));  // only links and searches by name need it
  return model.numbers.get(name) ?? -1;
}

/** The most characters a tag shows: longer names are cut (an ellipsis first), never squeezed to fit. */
const TAG_CHARS = 18;

/** An input's tag text: Dynamo's flattened name of a parameter or buffer read back as its path
 *  ("l_self_modules_layers_modules_47_parameters_weight_" -> "layers.47.weight", "l_x_" -> "x"), its end kept when
 *  it is longer than TAG_CHARS (the layer number and the weight tell a 48-layer model's tags apart). */
export function tagText(name) {
  let text = String(name);
  const flat = /^l_+(.*?)_*$/i.exec(text);
  if (flat) {
    text = flat[1].replace(/^self_+/, "").replace(/(?:^|_)(?:modules|parameters|buffers)_/g, ".").replace(/^\./, "");
  }
  return text.length > TAG_CHARS ? `…${text.slice(text.length - TAG_CHARS + 1)}` : text;
}

export function tagWidth(name) {
  return SIZES.tagCharWidth * tagText(name).length + 10;
}

/** The inputs shown as tags above a node (at most tagMax; the rest are counted in a "+N" tag). */
export function shownTags(model, i) {
  const tags = tagsOf(model, i);
  return tags.length > SIZES.tagMax ? tags.subarray(0, SIZES.tagMax - 1) : tags;
}

function nodeSize(model, i) {
  const label = model.targetLabels[model.columns.target.index[i]];
  const text = Math.max(String(model.names[i]).length, label.length * 0.9);
  let width = Math.min(240, Math.max(76, SIZES.charWidth * text + 18));
  const tags = tagsOf(model, i);
  if (tags.length) {
    const shown = shownTags(model, i);
    let row = 0;
    for (const j of shown) row += tagWidth(model.names[j]) + SIZES.tagGap;
    if (shown.length < tags.length) row += tagWidth(`+${tags.length - shown.length}`);
    width = Math.max(width, row);
  }
  const height = SIZES.nodeHeight + (tags.length ? SIZES.tagHeight + 3 : 0) + (model.returned[i] ? SIZES.tagHeight + 3 : 0);
  return [width, height];
}

function collapsedSize(group) {
  const text = Math.max(group.label.length, String(group.type).length + 12);
  return [Math.min(260, Math.max(110, SIZES.charWidth * text + 24)), SIZES.collapsedHeight];
}

/** What the worker needs to lay the graph out, and the buffers it can take over (all are copies it alone owns). */
export function layoutInput(model) {
  const nodeWidth = new Float32Array(model.count), nodeHeight = new Float32Array(model.count);
  for (let i = 0; i < model.count; i++) if (model.drawn[i]) [nodeWidth[i], nodeHeight[i]] = nodeSize(model, i);
  const groups = model.groups.map((group) => ({ parent: group.parent, depth: group.depth, first: group.first,
    items: Int32Array.from(group.items), collapsed: collapsedSize(group) }));
  const input = { count: model.count, nodeWidth, nodeHeight, drawn: model.drawn.slice(), argStart: model.argStart.slice(),
    argList: model.argList.slice(), stackOf: model.stackOf.slice(),
    stackChains: model.stackChains.map((chain) => chain ?? NO_GROUPS), groups, rootItems: Int32Array.from(model.rootItems) };
  const transfer = [nodeWidth, nodeHeight, input.drawn, input.argStart, input.argList, input.stackOf, input.rootItems,
    ...groups.map((group) => group.items)].map((array) => array.buffer);
  return { input, transfer };
}

/** The worker's side: the edges between drawn nodes, and per container the edges its layout follows. */
export function layoutModel(input) {
  const { count, drawn, argStart, argList } = input;
  const edges = [];
  const levelEdges = new Map();
  const seen = new Map();
  for (let v = 0; v < count; v++) {
    if (!drawn[v]) continue;
    const cv = chainOf(input, v);
    for (let e = argStart[v]; e < argStart[v + 1]; e++) {
      const u = argList[e];
      if (!drawn[u]) continue;
      edges.push(u, v);
      const cu = chainOf(input, u);
      let k = 0;
      while (k < cu.length && k < cv.length && cu[k] === cv[k]) k++;
      const level = k > 0 ? cu[k - 1] : -1;
      const a = k < cu.length ? count + cu[k] : u;
      const b = k < cv.length ? count + cv[k] : v;
      if (a === b) continue;
      if (!seen.has(level)) { seen.set(level, new Set()); levelEdges.set(level, []); }
      const key = a * 4294967296 + b;
      if (seen.get(level).has(key)) continue;
      seen.get(level).add(key);
      levelEdges.get(level).push(a, b);
    }
  }
  return { ...input, edges: Int32Array.from(edges), levelEdges };
}

/** Lays out the graph for a set of expanded groups. `cache` (Map) keeps each group's layout between calls;
 *  pass the groups whose state changed so they and their ancestors are laid out again. */
export function layout(model, expanded, cache = new Map(), changed = null) {
  if (changed === null) cache.clear();
  else for (const g of changed) for (let h = g; h >= 0; h = model.groups[h].parent) cache.delete(h);
  cache.delete(-1);  // the root holds every group: it is placed again whenever anything changed
  const root = layoutContainer(model, -1, expanded, cache);
  return flatten(model, root, expanded, cache);
}

function orderKey(model, item) {
  return item < model.count ? item : model.groups[item - model.count].first;
}

function itemSize(model, item, expanded, cache) {
  if (item < model.count) return [model.nodeWidth[item], model.nodeHeight[item]];
  const g = item - model.count;
  if (!expanded.has(g)) return model.groups[g].collapsed;
  const inner = layoutContainer(model, g, expanded, cache);
  const [headWidth] = model.groups[g].collapsed;
  return [Math.max(inner.width, headWidth) + 2 * SIZES.groupPad, inner.height + SIZES.groupHead + SIZES.groupPad];
}

function layoutContainer(model, container, expanded, cache) {
  if (cache.has(container)) return cache.get(container);
  const items = Array.from(container < 0 ? model.rootItems : model.groups[container].items);
  items.sort((a, b) => orderKey(model, a) - orderKey(model, b));
  const local = new Map(items.map((item, k) => [item, k]));
  const n = items.length;
  const width = new Float64Array(n), height = new Float64Array(n);
  items.forEach((item, k) => { [width[k], height[k]] = itemSize(model, item, expanded, cache); });

  // Edges between this container's items that point forward in graph order (a backward one, possible between
  // module groups that call each other, is drawn but does not shape the layers).
  const preds = Array.from({ length: n }, () => []), succs = Array.from({ length: n }, () => []);
  const pairs = model.levelEdges.get(container) || [];
  for (let e = 0; e < pairs.length; e += 2) {
    const a = local.get(pairs[e]), b = local.get(pairs[e + 1]);
    if (a === undefined || b === undefined || a >= b) continue;
    preds[b].push(a);
    succs[a].push(b);
  }
  const layerOf = new Int32Array(n);
  let layerCount = 0;
  for (let k = 0; k < n; k++) {
    let layer = 0;
    for (const p of preds[k]) layer = Math.max(layer, layerOf[p] + 1);
    layerOf[k] = layer;
    layerCount = Math.max(layerCount, layer + 1);
  }
  const layers = Array.from({ length: layerCount }, () => []);
  for (let k = 0; k < n; k++) layers[layerOf[k]].push(k);

  const center = new Float64Array(n);
  const place = (layer, desired) => {
    layer.sort((a, b) => desired[a] - desired[b] || a - b);
    let right = -Infinity;
    for (const k of layer) {
      const left = Math.max(desired[k] - width[k] / 2, right + SIZES.gapX);
      center[k] = left + width[k] / 2;
      right = left + width[k];
    }
  };
  const desired = new Float64Array(n);
  const sweep = (order, neighbours) => {
    for (const layer of order) {
      for (const k of layer) {
        const list = neighbours[k];
        desired[k] = list.length ? list.reduce((sum, j) => sum + center[j], 0) / list.length : center[k];
      }
      place(layer, desired);
    }
  };
  let x = 0;
  for (const k of layers[0] || []) { center[k] = x + width[k] / 2; x += width[k] + SIZES.gapX; }
  sweep(layers.slice(1), preds);
  sweep(layers.slice(0, -1).reverse(), succs);
  sweep(layers.slice(1), preds);

  let minLeft = Infinity, maxRight = 0;
  for (let k = 0; k < n; k++) minLeft = Math.min(minLeft, center[k] - width[k] / 2);
  const xs = new Float64Array(n), ys = new Float64Array(n);
  let y = 0;
  for (const layer of layers) {
    let layerHeight = 0;
    for (const k of layer) {
      xs[k] = center[k] - width[k] / 2 - minLeft;
      ys[k] = y;
      layerHeight = Math.max(layerHeight, height[k]);
      maxRight = Math.max(maxRight, xs[k] + width[k]);
    }
    y += layerHeight + SIZES.gapY;
  }
  const result = { items, xs, ys, itemWidth: width, itemHeight: height, width: maxRight,
                   height: Math.max(0, y - SIZES.gapY) };
  cache.set(container, result);
  return result;
}

/** Absolute rectangles of every visible item (nodes, collapsed groups, boxes of expanded groups) and the edges
 *  between visible items, each edge of a hidden node rerouted to its collapsed group. */
function flatten(model, root, expanded, cache) {
  const total = model.count + model.groups.length;
  const rects = new Float32Array(total * 4).fill(NaN);
  const boxes = [], items = [];
  const visit = (container, ox, oy) => {
    const box = container < 0 ? root : cache.get(container);
    box.items.forEach((item, k) => {
      const x = ox + box.xs[k], y = oy + box.ys[k];
      rects.set([x, y, box.itemWidth[k], box.itemHeight[k]], item * 4);
      const g = item - model.count;
      if (g >= 0 && expanded.has(g)) {
        boxes.push(item);
        visit(g, x + SIZES.groupPad, y + SIZES.groupHead);
      } else items.push(item);
    });
  };
  visit(-1, 0, 0);
  // The visible stand-in of each node: itself, or its outermost collapsed group.
  const standIn = new Int32Array(model.count).fill(-1);
  for (let i = 0; i < model.count; i++) {
    if (!model.drawn[i]) continue;
    standIn[i] = i;
    for (const g of chainOf(model, i)) if (!expanded.has(g)) { standIn[i] = model.count + g; break; }
  }
  const edges = [], seen = new Set();
  for (let e = 0; e < model.edges.length; e += 2) {
    const a = standIn[model.edges[e]], b = standIn[model.edges[e + 1]];
    const key = a * 4294967296 + b;
    if (a === b || a < 0 || b < 0 || seen.has(key)) continue;
    seen.add(key);
    edges.push(a, b);
  }
  boxes.sort((a, b) => model.groups[a - model.count].depth - model.groups[b - model.count].depth);
  return { rects, boxes: Int32Array.from(boxes), items: Int32Array.from(items), edges: Int32Array.from(edges),
           width: root.width, height: root.height };
}

/** The groups to open first: breadth-first while the picture stays under `budget` visible items. */
export function defaultExpanded(model, budget = 400) {
  const expanded = new Set();
  let visible = model.rootItems.length;
  const queue = model.rootItems.filter((item) => item >= model.count).map((item) => item - model.count);
  while (queue.length) {
    const g = queue.shift();
    const grows = model.groups[g].items.length - 1;
    if (visible + grows > budget) continue;
    expanded.add(g);
    visible += grows;
    for (const item of model.groups[g].items) if (item >= model.count) queue.push(item - model.count);
  }
  return expanded;
}
