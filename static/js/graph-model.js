// The geometry of one laid-out graph, without the DOM: where each item and input tag is drawn, what a point hits,
// and where the keyboard goes from a focused item. graph-view.js keeps the state (model, layout, view), the
// painter draws from it and the interaction module turns input into it; node's test runner tests these directly.
//
// An item is what the layout places: a node number (< model.count) or count + g for module group g. A focus is
// {item, tag}: the item itself (tag -1) or input tag k of a node item (k indexes tagsOf; tags past the shown ones
// sit behind the "+N" tag).
import { SIZES, argsOf, chainOf, field, moduleLabel, shortTarget, shownTags, tagText, tagWidth, tagsOf, usersOf } from "./graph-layout.js";

export function isNode(model, item) {
  return item < model.count;
}

/** [x, y, w, h] of an item in graph coordinates (NaN when it is not laid out). */
export function rectOf(layout, item) {
  const r = layout.rects;
  return [r[item * 4], r[item * 4 + 1], r[item * 4 + 2], r[item * 4 + 3]];
}

/** The top of node item i's box (below its row of input tags). */
export function nodeTop(model, i, y) {
  return tagsOf(model, i).length ? y + SIZES.tagHeight + 3 : y;
}

/** The input tags drawn above node item i at (x, y): {node, x, w, text}, the last a "+N" tag standing for the
 *  inputs past tagMax (node -1). */
export function tagRects(model, i, x, y) {
  const tags = tagsOf(model, i), shown = shownTags(model, i), rects = [];
  let tx = x;
  for (const j of shown) {
    const w = tagWidth(model.names[j]);
    rects.push({ node: j, x: tx, y, w, text: tagText(model.names[j]) });
    tx += w + SIZES.tagGap;
  }
  if (shown.length < tags.length) {
    const text = `+${tags.length - shown.length}`;
    rects.push({ node: -1, x: tx, y, w: tagWidth(text), text });
  }
  return rects;
}

/** What a point in graph coordinates hits: {kind: "node", node}, {kind: "group", group} or null. */
export function hitTest(model, layout, wx, wy) {
  const inside = (x, y, w, h) => wx >= x && wx <= x + w && wy >= y && wy <= y + h;
  const items = layout.items;
  for (let k = items.length - 1; k >= 0; k--) {
    const item = items[k];
    const [x, y, w, h] = rectOf(layout, item);
    if (!inside(x, y, w, h)) continue;
    if (!isNode(model, item)) return { kind: "group", group: item - model.count };
    if (wy < nodeTop(model, item, y)) {
      for (const tag of tagRects(model, item, x, y)) {
        if (tag.node >= 0 && wx >= tag.x && wx <= tag.x + tag.w) return { kind: "node", node: tag.node };
      }
    }
    return { kind: "node", node: item };
  }
  for (let k = layout.boxes.length - 1; k >= 0; k--) {
    const item = layout.boxes[k];
    const [x, y, w] = rectOf(layout, item);
    if (inside(x, y, w, SIZES.groupHead)) return { kind: "group", group: item - model.count };
  }
  return null;
}

/** The drawn item that shows node i (itself, or the first drawn reader its input tag sits on), or -1. */
export function itemOf(model, i) {
  if (model.drawn[i]) return i;
  return usersOf(model, i).find((u) => model.drawn[u]) ?? -1;
}

/** The node a focus stands for (-1 for a module box). */
export function focusedNode(model, focus) {
  if (focus.tag >= 0) return tagsOf(model, focus.item)[focus.tag];
  return isNode(model, focus.item) ? focus.item : -1;
}

/** [x, y, w, h] of what a focus ring goes around: the node's box, one input tag, or a closed module box. */
export function focusRect(model, layout, focus) {
  const [x, y, w, h] = rectOf(layout, focus.item);
  if (!isNode(model, focus.item)) return [x, y, w, h];
  if (focus.tag < 0) return [x, nodeTop(model, focus.item, y), w, SIZES.nodeHeight];
  const tags = tagRects(model, focus.item, x, y);
  const tag = tags[Math.min(focus.tag, tags.length - 1)];  // a tag behind "+N" rings the "+N" tag
  return [tag.x, y, tag.w, SIZES.tagHeight];
}

// Per layout, built once on the first key press: the items in reading order (by row, then left to right) and the
// drawn edges around each item.
const navigation = new WeakMap();

function navigationOf(layout) {
  let nav = navigation.get(layout);
  if (nav) return nav;
  const order = Array.from(layout.items).sort((a, b) => {
    const [ax, ay] = rectOf(layout, a), [bx, by] = rectOf(layout, b);
    return ay - by || ax - bx;
  });
  const position = new Map(order.map((item, k) => [item, k]));
  const preds = new Map(), succs = new Map();
  const add = (map, key, value) => { if (!map.has(key)) map.set(key, []); map.get(key).push(value); };
  for (let e = 0; e < layout.edges.length; e += 2) {
    add(succs, layout.edges[e], layout.edges[e + 1]);
    add(preds, layout.edges[e + 1], layout.edges[e]);
  }
  nav = { order, position, preds, succs };
  navigation.set(layout, nav);
  return nav;
}

/** Where the keyboard goes from nothing focused: the selected node's item, else the first item in reading order. */
export function initialFocus(model, layout, selected = -1) {
  const item = selected >= 0 ? itemOf(model, selected) : -1;
  if (item >= 0 && layout.items.includes(item)) {
    return { item, tag: item === selected ? -1 : tagsOf(model, item).indexOf(selected) };
  }
  const { order } = navigationOf(layout);
  return order.length ? { item: order[0], tag: -1 } : null;
}

/** The module group whose box is around an item (the innermost), or -1 at the top level. */
export function enclosingGroup(model, item) {
  if (!isNode(model, item)) return model.groups[item - model.count].parent;
  const chain = chainOf(model, item);
  return chain.length ? chain[chain.length - 1] : -1;
}

/** The first item inside module group g in reading order (once g is open), or -1. */
export function firstItemIn(model, layout, g) {
  const inside = (item) => {
    if (isNode(model, item)) return chainOf(model, item).includes(g);
    for (let h = item - model.count; h >= 0; h = model.groups[h].parent) if (h === g) return true;
    return false;
  };
  return navigationOf(layout).order.find(inside) ?? -1;
}

function centerX(layout, item) {
  const [x, , w] = rectOf(layout, item);
  return x + w / 2;
}

/** Of the neighbours, the one nearest to x horizontally (ties: the earlier in reading order). */
function nearest(layout, nav, items, x) {
  let best = -1, bestDistance = Infinity;
  for (const item of items) {
    const distance = Math.abs(centerX(layout, item) - x);
    if (distance < bestDistance || (distance === bestDistance && nav.position.get(item) < nav.position.get(best))) {
      best = item;
      bestDistance = distance;
    }
  }
  return best;
}

/** The first item of the next row down (step 1) or the last of the row above (step -1) in reading order. */
function nextRow(layout, nav, item, step) {
  const [, y] = rectOf(layout, item);
  for (let k = nav.position.get(item) + step; k >= 0 && k < nav.order.length; k += step) {
    if (rectOf(layout, nav.order[k])[1] !== y) return nav.order[k];
  }
  return -1;
}

/** The focus after a key: ArrowDown follows an edge to a reader (the one nearest below; else the next row),
 *  ArrowUp goes into the node's input tags, then along an edge to what it reads (else the row above);
 *  ArrowLeft/Right step through the tags of a node, or through the items in reading order (so every item is
 *  reached); Home/End: the first/last item. Returns null for a key that does not move the focus. */
export function moveFocus(model, layout, focus, key) {
  const nav = navigationOf(layout);
  const { item, tag } = focus;
  const tagCount = isNode(model, item) ? tagsOf(model, item).length : 0;
  const at = (next) => (next >= 0 ? { item: next, tag: -1 } : focus);
  const x = tag >= 0 ? focusRect(model, layout, focus)[0] : centerX(layout, item);
  switch (key) {
    case "ArrowDown":
      if (tag >= 0) return { item, tag: -1 };
      return at(nav.succs.has(item) ? nearest(layout, nav, nav.succs.get(item), x) : nextRow(layout, nav, item, 1));
    case "ArrowUp":
      if (tag < 0 && tagCount) return { item, tag: 0 };
      return at(nav.preds.has(item) ? nearest(layout, nav, nav.preds.get(item), x) : nextRow(layout, nav, item, -1));
    case "ArrowRight":
    case "ArrowLeft": {
      const step = key === "ArrowRight" ? 1 : -1;
      if (tag >= 0) return { item, tag: Math.max(0, Math.min(tagCount - 1, tag + step)) };
      return at(nav.order[nav.position.get(item) + step] ?? -1);
    }
    case "Home":
      return at(nav.order[0]);
    case "End":
      return at(nav.order[nav.order.length - 1]);
    default:
      return null;
  }
}

function listOf(model, nodes) {
  const names = Array.from(nodes, (j) => model.names[j]);
  return names.length > 4 ? `${names.slice(0, 4).join(", ")} and ${names.length - 4} more` : names.join(", ");
}

/** One sentence about the focused item for a screen reader (the card's aria-live region). */
export function describeFocus(model, layout, focus) {
  const { position, order } = navigationOf(layout);
  const where = `item ${position.get(focus.item) + 1} of ${order.length}`;
  if (!isNode(model, focus.item)) {
    const group = model.groups[focus.item - model.count];
    return `Module ${group.label} (${group.type}), closed, ${group.size} nodes; Enter opens it. ${where}.`;
  }
  const i = focusedNode(model, focus);
  const op = field(model, "op", i);
  const parts = [`${model.names[i]}: ${op}${op.startsWith("call_") ? ` ${shortTarget(field(model, "target", i))}` : ""}`];
  const shape = field(model, "shape", i), dtype = field(model, "dtype", i), line = field(model, "line", i);
  if (shape !== null && shape !== undefined) parts.push(`shape ${JSON.stringify(shape)}`);
  if (dtype) parts.push(Array.isArray(dtype) ? dtype.join(", ") : dtype);
  if (line) parts.push(`line ${line}`);
  const stack = field(model, "module_stack", i) || [];
  if (stack.length) parts.push(`in ${moduleLabel(stack[stack.length - 1].path)}`);
  let text = parts.join(", ");
  if (focus.tag >= 0) {
    text += `; input ${focus.tag + 1} of ${tagsOf(model, focus.item).length} of ${model.names[focus.item]}`;
  } else {
    if (argsOf(model, i).length) text += `; reads ${listOf(model, argsOf(model, i))}`;
    if (usersOf(model, i).length) text += `; read by ${listOf(model, usersOf(model, i))}`;
  }
  return `${text}. ${where}. Enter selects it.`;
}
