// Lays graphs out off the main thread: one worker serves every viewer on the page, keyed by graph id. The viewer
// indexes each graph and sends what the layout needs as typed arrays it hands over (graph-layout.js layoutInput).
import { layout, layoutModel } from "./graph-layout.js";

const graphs = new Map();  // id -> {model, cache, expanded}

self.onmessage = (event) => {
  const { type, id } = event.data;
  if (type === "init") {
    graphs.set(id, { model: layoutModel(event.data.input), cache: new Map(), expanded: null });
    return;
  }
  if (type === "layout") {
    const graph = graphs.get(id);
    const started = performance.now();
    const expanded = new Set(event.data.expanded);
    let changed = null;
    if (graph.expanded) {
      changed = [...expanded].filter((g) => !graph.expanded.has(g))
        .concat([...graph.expanded].filter((g) => !expanded.has(g)));
    }
    graph.expanded = expanded;
    const result = layout(graph.model, expanded, graph.cache, changed);
    result.ms = performance.now() - started;
    self.postMessage({ id, result }, [result.rects.buffer, result.boxes.buffer, result.items.buffer, result.edges.buffer]);
  }
};
