// Lays graphs out off the main thread: one module worker serves every viewer on the page, keyed by graph id, and
// answers each layout request with its request id (graph-rpc.js). The viewer indexes each graph and sends what
// the layout needs as typed arrays it hands over (graph-layout.js layoutInput).
import { layout, layoutModel } from "./graph-layout.js";

const graphs = new Map();  // graph id -> {model, cache, expanded}

function layoutGraph({ graph: id, expanded: open }) {
  const graph = graphs.get(id);
  if (!graph) throw new Error(`no graph ${id} was sent`);
  const started = performance.now();
  const expanded = new Set(open);
  let changed = null;
  if (graph.expanded) {
    changed = [...expanded].filter((g) => !graph.expanded.has(g))
      .concat([...graph.expanded].filter((g) => !expanded.has(g)));
  }
  graph.expanded = expanded;
  const result = layout(graph.model, expanded, graph.cache, changed);
  result.ms = performance.now() - started;
  return result;
}

self.onmessage = (event) => {
  const { type, graph, request } = event.data;
  if (type === "init") {
    graphs.set(graph, { model: layoutModel(event.data.input), cache: new Map(), expanded: null });
    return;
  }
  if (type !== "layout") return;
  let result;
  try {
    result = layoutGraph(event.data);
  } catch (error) {
    // The cache may hold part of a failed layout: the next request lays everything out again.
    if (graphs.has(graph)) graphs.get(graph).expanded = null;
    self.postMessage({ request, error: String(error?.message ?? error) });
    return;
  }
  self.postMessage({ request, result }, [result.rects.buffer, result.boxes.buffer, result.items.buffer, result.edges.buffer]);
};
