// The layout worker's protocol (static/js/graph-rpc.js and graph-worker.js): every layout request carries a
// request id and its answer comes back under it, so overlapping relayouts of one graph cannot take each other's
// answers (matched by graph id, the second would get the first's layout and the first would never settle).
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { buildModel, layout, layoutInput, layoutModel } from "../../static/js/graph-layout.js";
import { LayoutClient } from "../../static/js/graph-rpc.js";
import { payloads, syntheticGraph } from "./graphs.js";

/** A worker stand-in that keeps what it is sent, for the test to answer in any order. */
class HeldWorker {
  constructor() { this.sent = []; }
  postMessage(message) { this.sent.push(message); }
  answer(message) { this.onmessage({ data: message }); }
}

describe("request ids", () => {
  test("two overlapping layouts of one graph each get their own answer, whatever the order", async () => {
    const worker = new HeldWorker();
    const client = new LayoutClient(worker);
    const first = client.layout("dynamo-0", new Set([1]));
    const second = client.layout("dynamo-0", new Set([1, 2]));
    const [a, b] = worker.sent;
    assert.equal(a.graph, "dynamo-0");
    assert.equal(b.graph, "dynamo-0");
    assert.notEqual(a.request, b.request);
    assert.deepEqual([a.expanded, b.expanded], [[1], [1, 2]]);
    worker.answer({ request: b.request, result: "layout of 1, 2" });
    worker.answer({ request: a.request, result: "layout of 1" });
    assert.deepEqual(await Promise.all([first, second]), ["layout of 1", "layout of 1, 2"]);
    assert.equal(client.pending.size, 0);
  });

  test("a failed layout rejects its own request only", async () => {
    const worker = new HeldWorker();
    const client = new LayoutClient(worker);
    const failing = client.layout("aot-0", []);
    const fine = client.layout("aot-1", []);
    worker.answer({ request: worker.sent[0].request, error: "no graph aot-0 was sent" });
    worker.answer({ request: worker.sent[1].request, result: "ok" });
    await assert.rejects(failing, /graph layout failed: no graph aot-0 was sent/);
    assert.equal(await fine, "ok");
  });
});

describe("the worker itself", async () => {
  // graph-worker.js in this process: `self` is its end of the channel, and each message arrives a turn later, as
  // a worker's does.
  const workerSide = {};
  const clientSide = { postMessage: (message) => setTimeout(() => workerSide.onmessage({ data: structuredClone(message) })) };
  workerSide.postMessage = (message) => setTimeout(() => clientSide.onmessage({ data: message }));
  globalThis.self = workerSide;
  await import("../../static/js/graph-worker.js");
  const client = new LayoutClient(clientSide);
  const payload = payloads({ graphs: { modules: syntheticGraph(400, { layers: 4 }) } }).modules;
  const model = buildModel(payload);
  const { input, transfer } = layoutInput(model);
  client.init("dynamo-0", input, transfer);
  const reference = layoutModel(layoutInput(model).input);

  test("overlapping relayouts (a box opened while another opens) each answer their own set of open boxes", async () => {
    const sets = [new Set(), new Set([0]), new Set([0, 1]), new Set([1])];
    const answers = await Promise.all(sets.map((expanded) => client.layout("dynamo-0", expanded)));
    answers.forEach((answer, k) => {
      const expected = layout(reference, sets[k]);
      assert.deepEqual(answer.items, expected.items, `open boxes ${[...sets[k]]}`);
      assert.deepEqual(answer.rects, expected.rects);
    });
  });

  test("a graph that was never sent is an error, and the next layout still works", async () => {
    await assert.rejects(client.layout("aot-7", new Set()), /no graph aot-7 was sent/);
    const answer = await client.layout("dynamo-0", new Set([2]));
    assert.deepEqual(answer.items, layout(reference, new Set([2])).items);
  });
});
