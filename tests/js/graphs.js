// Graphs for the front-end tests, as the viewer receives them: each passed through the real payload builder
// (contract/graphs.py graph_payload, run by the project's Python), from the recorded sample reports
// (tests/fixtures/reports) or from node lists made here.
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";

export const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const PYTHON = process.env.PYTHON ?? `${ROOT}.venv/bin/python`;

const PAYLOADS = `
import json, sys
from contract.graphs import graph_payload, report_graphs
request = json.load(sys.stdin)
out = {}
for name in request["reports"]:
    with open(f"tests/fixtures/reports/{name}.json") as f:
        report = json.load(f)
    out.update({f"{name}:{graph_id}": graph_payload(graph_id, graph) for graph_id, graph in report_graphs(report)})
for key, graph in request["graphs"].items():
    out[key] = graph_payload("dynamo-0", graph)
json.dump(out, sys.stdout)
`;

/** {key: payload}: "REPORT:GRAPH_ID" for every graph of the named sample reports, and each of `graphs` (key ->
 *  {nodes}) under its key. */
export function payloads({ reports = [], graphs = {} } = {}) {
  const out = execFileSync(PYTHON, ["-c", PAYLOADS], { cwd: ROOT, input: JSON.stringify({ reports, graphs }),
    maxBuffer: 1 << 28 });
  return JSON.parse(out);
}

/** A transformer-like FX graph (as bench/graph_view.py builds): a chain with a skip connection every seventh
 *  node, a parameter read every fifth, and, with `layers`, each node inside layers.L.subS (nn_module_stack). */
export function syntheticGraph(count, { layers = 0, subs = 4 } = {}) {
  const nodes = [{ name: "x", op: "placeholder", target: "x", args: [], module_stack: [] }];
  const perLayer = layers ? Math.max(1, Math.floor(count / layers)) : count;
  let previous = "x";
  for (let k = 0; k < count; k++) {
    const args = [previous];
    if (k % 7 === 3 && k > 6) args.push(`op${k - 5}`);
    if (k % 5 === 0) {
      nodes.push({ name: `p${k}`, op: "get_attr", target: `w${k}`, args: [], module_stack: [] });
      args.push(`p${k}`);
    }
    let stack = [];
    if (layers) {
      const layer = Math.floor(k / perLayer), sub = Math.floor(((k % perLayer) * subs) / perLayer);
      stack = [{ path: `L['self'].layers.${layer}`, type: "Layer" },
               { path: `L['self'].layers.${layer}.sub${sub}`, type: "Sub" }];
    }
    nodes.push({ name: `op${k}`, op: "call_function", target: ["aten.mm.default", "aten.add.Tensor",
      "aten.gelu.default", "aten.mul.Tensor"][k % 4], args, shape: [8, 64], dtype: "float32", file: "model.py",
      line: 10 + (k % 30), module_stack: stack });
    previous = `op${k}`;
  }
  nodes.push({ name: "output", op: "output", target: "output", args: [previous], module_stack: [] });
  return { compile_id: "0/0", nodes, code: "" };
}
