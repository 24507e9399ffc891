// The viewer's geometry without a browser (static/js/graph-model.js): what a point hits, and where the keyboard
// goes. Every drawn node and every input tag of a laid-out graph is reachable from the first focus with the arrow
// keys alone, ArrowDown/ArrowUp follow the drawn edges, and the live description names the node.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { buildModel, layout, layoutInput, layoutModel, tagsOf, usersOf } from "../../static/js/graph-layout.js";
import { describeFocus, enclosingGroup, firstItemIn, focusRect, focusedNode, hitTest, initialFocus, moveFocus, rectOf, tagRects }
  from "../../static/js/graph-model.js";
import { payloads, syntheticGraph } from "./graphs.js";

const graphs = payloads({ reports: ["seed", "mlp_train", "tiny_gpt"], graphs: { modules: syntheticGraph(300, { layers: 3 }) } });

function laidOut(payload, open = "all") {
  const model = buildModel(payload);
  const worker = layoutModel(layoutInput(model).input);
  const expanded = open === "all" ? new Set(model.groups.map((_, g) => g)) : open;
  return { model, result: layout(worker, expanded) };
}

const KEYS = ["ArrowUp", "ArrowDown", "ArrowLeft", "ArrowRight", "Home", "End"];
const keyOf = (focus) => `${focus.item}/${focus.tag}`;

/** Every focus reachable from the initial one by the arrow keys, Home and End. */
function reachable(model, result) {
  const start = initialFocus(model, result);
  const seen = new Map([[keyOf(start), start]]), queue = [start];
  while (queue.length) {
    const focus = queue.shift();
    for (const key of KEYS) {
      const next = moveFocus(model, result, focus, key);
      if (next && !seen.has(keyOf(next))) {
        seen.set(keyOf(next), next);
        queue.push(next);
      }
    }
  }
  return [...seen.values()];
}

describe("keyboard reaches every node", () => {
  for (const key of ["seed:dynamo-0", "mlp_train:aot-0", "mlp_train:postgrad-1", "tiny_gpt:dynamo-0", "tiny_gpt:aot-0", "modules"]) {
    test(`${key}: every drawn node and input tag, nothing else`, () => {
      const { model, result } = laidOut(graphs[key]);
      const nodes = new Set(reachable(model, result).map((focus) => focusedNode(model, focus)));
      for (let i = 0; i < model.count; i++) {
        const tagged = model.drawn[i] === 0 && usersOf(model, i).some((u) => model.drawn[u]);
        if (model.drawn[i] || tagged) assert.ok(nodes.has(i), `${model.names[i]} cannot be reached`);
      }
      assert.ok(!nodes.has(model.output));
    });
  }

  test("with modules closed, every closed box is reached, and its nodes once it is open", () => {
    const closed = laidOut(graphs.modules, new Set());
    const boxes = reachable(closed.model, closed.result).filter((focus) => focusedNode(closed.model, focus) < 0);
    assert.equal(boxes.length, 3);
    const g = boxes[1].item - closed.model.count;
    const opened = laidOut(graphs.modules, new Set([g]));
    const first = firstItemIn(opened.model, opened.result, g);
    assert.equal(opened.model.groups[first - opened.model.count].parent, g);  // its first sub-module, still closed
    assert.equal(enclosingGroup(opened.model, first), g);
    assert.equal(enclosingGroup(opened.model, opened.model.count + g), -1);
    const op = opened.model.names.indexOf("op0");
    assert.equal(opened.model.groups[enclosingGroup(opened.model, op)].path, "L['self'].layers.0.sub0");
    const items = new Set(reachable(opened.model, opened.result).map((focus) => focus.item));
    for (const item of opened.result.items) assert.ok(items.has(item));
  });
});

describe("arrow keys follow the picture", () => {
  const { model, result } = laidOut(graphs["seed:dynamo-0"]);
  const node = (name) => model.names.indexOf(name);
  const at = (name, tag = -1) => ({ item: node(name), tag });

  test("ArrowDown follows an edge to a reader, ArrowUp back to what it reads", () => {
    assert.equal(moveFocus(model, result, at("sin"), "ArrowDown").item, node("mul"));
    assert.equal(moveFocus(model, result, at("mul"), "ArrowDown").item, node("add"));
    const up = moveFocus(model, result, at("add"), "ArrowUp").item;
    assert.ok([node("mul"), node("tanh")].includes(up));
    // The one nearest horizontally of mul's two inputs.
    const nearer = Math.abs(rectOf(result, node("sin"))[0] - rectOf(result, node("mul"))[0])
      <= Math.abs(rectOf(result, node("cos"))[0] - rectOf(result, node("mul"))[0]) ? "sin" : "cos";
    assert.equal(moveFocus(model, result, at("mul"), "ArrowUp").item, node(nearer));
  });

  test("ArrowUp on a node with input tags enters its tags; ArrowDown leaves them", () => {
    assert.deepEqual(moveFocus(model, result, at("sin"), "ArrowUp"), at("sin", 0));
    assert.equal(focusedNode(model, at("sin", 0)), node("l_x_"));
    assert.deepEqual(moveFocus(model, result, at("sin", 0), "ArrowDown"), at("sin"));
  });

  test("ArrowLeft/Right walk a row in reading order; at the ends the focus stays", () => {
    const row = ["sin", "cos", "tanh"].sort((a, b) => rectOf(result, node(a))[0] - rectOf(result, node(b))[0]);
    assert.equal(moveFocus(model, result, at(row[0]), "ArrowRight").item, node(row[1]));
    assert.equal(moveFocus(model, result, at(row[2]), "ArrowLeft").item, node(row[1]));
    assert.deepEqual(moveFocus(model, result, at(row[0]), "ArrowLeft"), at(row[0]));
    assert.deepEqual(initialFocus(model, result), at(row[0]));
    assert.equal(moveFocus(model, result, at(row[0]), "End").item, node("add"));
    assert.equal(moveFocus(model, result, at("sin"), "Tab"), null);
  });

  test("the first focus is the selected node's, on its tag when it is an input", () => {
    assert.deepEqual(initialFocus(model, result, node("mul")), at("mul"));
    const input = initialFocus(model, result, node("l_x_"));
    assert.equal(focusedNode(model, input), node("l_x_"));
    assert.ok(input.tag >= 0);
  });

  test("the description names the node, its op, shape, line and neighbours", () => {
    const text = describeFocus(model, result, at("mul"));
    assert.match(text, /^mul: call_function mul, shape \[1024,1024\], float32, line 6; reads sin, cos; read by add\./);
    assert.match(text, /item \d+ of 5\. Enter selects it\.$/);
    assert.match(describeFocus(model, result, at("sin", 0)), /^l_x_: placeholder, .*input 1 of 1 of sin\./);
  });
});

describe("hit tests", () => {
  for (const key of ["seed:dynamo-0", "tiny_gpt:aot-0", "modules"]) {
    test(`${key}: the middle of every node, tag and closed box hits it`, () => {
      const { model, result } = laidOut(graphs[key], key === "modules" ? new Set([0]) : "all");
      for (const item of result.items) {
        const focus = { item, tag: -1 };
        const [x, y, w, h] = focusRect(model, result, focus);
        const hit = hitTest(model, result, x + w / 2, y + h / 2);
        if (item < model.count) assert.deepEqual(hit, { kind: "node", node: item });
        else assert.deepEqual(hit, { kind: "group", group: item - model.count });
        if (item >= model.count) continue;
        const [rx, ry] = rectOf(result, item);
        for (const tag of tagRects(model, item, rx, ry)) {
          const tagHit = hitTest(model, result, tag.x + tag.w / 2, tag.y + 3);
          assert.deepEqual(tagHit, { kind: "node", node: tag.node >= 0 ? tag.node : item });
        }
        assert.equal(tagRects(model, item, rx, ry).length, Math.min(tagsOf(model, item).length, 6));
      }
      const [bx, by, bw] = rectOf(result, model.count + 0);
      if (key === "modules") assert.deepEqual(hitTest(model, result, bx + bw / 2, by + 5), { kind: "group", group: 0 });
      assert.equal(hitTest(model, result, -50, -50), null);
    });
  }
});
