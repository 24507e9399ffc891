// The viewers' side of the layout worker (graph-worker.js). Every layout request carries its own request id and
// the worker answers with it, so two overlapping relayouts of one graph (a click on a module box while a search
// still opens boxes) each get their own answer; matched by graph id, the second would take the first's answer
// and the first would wait forever.
export class LayoutClient {
  /** `worker`: a Worker, or anything with postMessage and onmessage (the tests pass a stand-in). */
  constructor(worker) {
    this.worker = worker;
    this.nextRequest = 1;
    this.pending = new Map();  // request id -> {resolve, reject}
    worker.onmessage = (event) => this.receive(event.data);
  }

  /** Hands the worker a graph's layout input (graph-layout.js layoutInput); `transfer` moves its buffers. */
  init(graph, input, transfer = []) {
    this.worker.postMessage({ type: "init", graph, input }, transfer);
  }

  /** The layout of `graph` with these module groups open (a promise of graph-layout.js layout's result). */
  layout(graph, expanded) {
    const request = this.nextRequest++;
    return new Promise((resolve, reject) => {
      this.pending.set(request, { resolve, reject });
      this.worker.postMessage({ type: "layout", graph, request, expanded: [...expanded] });
    });
  }

  receive({ request, result, error }) {
    const waiting = this.pending.get(request);
    if (!waiting) return;
    this.pending.delete(request);
    if (error === undefined) waiting.resolve(result);
    else waiting.reject(new Error(`graph layout failed: ${error}`));
  }
}
