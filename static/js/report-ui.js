// The report page: graph viewers, links that open exactly on a tab's graph node, kernel or source line, and
// cross-highlighting between them. URL fragments (shareable):
//   #L-6                  a line of the user's file: its Dynamo nodes, ATen nodes and kernels
//   #kernel-NAME          a generated kernel: its source, its nodes (forward or backward graph) and lines
//   #graph-ID[/NODE]      a graph (ids: contract/graphs.py, given here by contract.js), and a node in it
import { graphTab } from "./contract.js";
import { setUpViewers, viewers } from "./graph-view.js";
import { setUpDeviceCode } from "./device-code.js";

const source = document.getElementById("source");
const report = document.querySelector(".report");
const provenance = new Map();  // line -> its provenance piece (fetched once)

function element(tag, props = {}, children = []) {
  const el = document.createElement(tag);
  Object.assign(el, props);
  el.append(...children);
  return el;
}

function graphHref(graphId, node) {
  const fragment = `#graph-${graphId}${node ? `/${encodeURIComponent(node)}` : ""}`;
  if (document.getElementById(`graph-${graphId}`)) return fragment;
  return `${source.dataset.reportUrl}/${graphTab(graphId)}${fragment}`;
}

function kernelHref(name) {
  return document.getElementById(`kernel-${name}`) ? `#kernel-${name}` : `${source.dataset.reportUrl}/inductor#kernel-${name}`;
}

function clearSelection() {
  for (const el of document.querySelectorAll(".hl, .selected, .related")) el.classList.remove("hl", "selected", "related");
  for (const viewer of viewers.values()) viewer.clearHighlight();
}

function markSourceLines(lines) {
  for (const line of lines) document.getElementById(`L-${line}`)?.classList.add("hl");
}

async function selectLine(line) {
  clearSelection();
  markSourceLines([line]);
  document.getElementById(`L-${line}`)?.scrollIntoView({ block: "nearest" });
  for (const row of document.querySelectorAll(".kernel[data-lines]")) {
    if (row.dataset.lines.split(" ").includes(String(line))) {
      document.querySelector(`.kernel-row[data-kernel="${CSS.escape(row.dataset.kernel)}"]`)?.classList.add("related");
    }
  }
  for (const viewer of viewers.values()) if (viewer.loading) viewer.load().then(() => viewer.highlightLine(line));
  const box = document.getElementById("line-provenance");
  const inline = document.getElementById("provenance-data");  // an offline report (webapp/offline.py) holds every line
  if (!box || !(source.dataset.provenanceUrl || inline)) return;
  if (!provenance.has(line) && inline) {
    provenance.set(line, JSON.parse(inline.textContent)[String(line)] ?? null);
  } else if (!provenance.has(line)) {  // one small piece per line, stored with the report
    const response = await fetch(`${source.dataset.provenanceUrl}?line=${line}`);
    provenance.set(line, response.ok ? await response.json() : null);
  }
  const entry = provenance.get(line) || { dynamo: [], aten: [], kernels: [], totals: {} };
  const totals = entry.totals || {};
  const code = document.getElementById(`L-${line}`)?.textContent.trim() || "";
  const nodeList = (title, nodes, total) => {
    const byGraph = new Map();
    for (const node of nodes) {
      if (!byGraph.has(node.graph)) byGraph.set(node.graph, { title: node.title, names: [] });
      byGraph.get(node.graph).names.push(node.name ?? node.node);
    }
    return element("div", { className: "prov-group" }, [
      element("h4", { textContent: `${title} (${total ?? nodes.length}${total > nodes.length ? `, first ${nodes.length} listed` : ""})` }),
      ...(nodes.length ? [...byGraph].map(([graph, { title: graphTitle, names }]) => element("p", {}, [
        element("a", { href: graphHref(graph), textContent: graphTitle, className: "graph-link" }), ": ",
        ...names.flatMap((name) => [element("a", { href: graphHref(graph, name), textContent: name, className: "chip node-link" }), " "]),
      ])) : [element("p", { className: "none", textContent: "none" })]),
    ]);
  };
  box.replaceChildren(
    element("h3", { textContent: `Line ${line}` }),
    element("pre", { className: "text", textContent: code }),
    nodeList("Dynamo nodes", entry.dynamo, totals.dynamo),
    nodeList("ATen nodes", entry.aten, totals.aten),
    // The graphs a backend of the user's own received (Runtime tab): only where this line reached one.
    ...(entry.backend?.length ? [nodeList("Nodes your backends received", entry.backend, totals.backend)] : []),
    element("div", { className: "prov-group" }, [
      element("h4", { textContent: `Kernels (${totals.kernels ?? entry.kernels.length})` }),
      entry.kernels.length
        ? element("p", {}, entry.kernels.flatMap((name) => [element("a", { href: kernelHref(name), textContent: name, className: "chip kernel-link" }), " "]))
        : element("p", { className: "none", textContent: "none" }),
    ]),
  );
  box.hidden = false;
  box.dataset.line = String(line);
}

// Long parts (a kernel's source, fusion decisions, IR diffs, guard trees, big raw fields) come from the server
// when their fold is opened: .part-body[data-part-url], filled once. The fragments are the server's own HTML.
function loadPart(body) {
  if (!body.dataset.partUrl || body.dataset.loaded) return body.partLoad || Promise.resolve();
  body.dataset.loaded = "loading";
  body.partLoad = fetch(body.dataset.partUrl).then((response) => {
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    return response.text();
  }).then((html) => {
    const template = document.createElement("template");
    template.innerHTML = html;
    body.replaceChildren(template.content);
    body.dataset.loaded = "1";
    applyFilter(body.closest("section"));
  }).catch((error) => {
    body.replaceChildren(element("p", { className: "none", textContent: `Could not load this part (${error.message}).` }));
    delete body.dataset.loaded;
  });
  return body.partLoad;
}

function partsIn(details) {
  return [...details.querySelectorAll(":scope > .part-body[data-part-url]")];
}

function setUpParts(root) {
  root.addEventListener("toggle", (event) => {
    if (event.target.open) partsIn(event.target).forEach(loadPart);
  }, true);
  for (const details of root.querySelectorAll("details[open]")) partsIn(details).forEach(loadPart);
  // "Show more" in a long list: the next page replaces the button.
  root.addEventListener("click", (event) => {
    const button = event.target.closest("button.load-more");
    if (!button) return;
    const more = button.closest(".part-body.more");
    loadPart(more).then(() => more.replaceWith(...more.childNodes));
  });
  for (const input of root.querySelectorAll("input.list-filter")) {
    input.addEventListener("input", () => applyFilter(input.closest("section")));
  }
}

// Filter boxes: hide the items of their section (data-items, a selector) that do not contain every word typed.
function applyFilter(section) {
  const input = section?.querySelector("input.list-filter");
  if (!input) return;
  const words = input.value.toLowerCase().split(/\s+/).filter(Boolean);
  for (const item of section.querySelectorAll(input.dataset.items)) {
    const text = item.textContent.toLowerCase();
    item.hidden = !words.every((word) => text.includes(word));
  }
}

async function selectKernel(name) {
  const card = document.getElementById(`kernel-${name}`);
  if (!card) return;
  clearSelection();
  card.open = true;
  await Promise.all(partsIn(card).map(loadPart));
  card.classList.add("selected");
  document.querySelector(`.kernel-row[data-kernel="${CSS.escape(name)}"]`)?.classList.add("selected");
  const lines = card.dataset.lines.split(" ").filter(Boolean).map(Number);
  markSourceLines(lines);
  const viewer = viewers.get(card.dataset.graph);
  if (viewer) viewer.highlight(card.dataset.nodes.split(" ").filter(Boolean), `Kernel ${name}`);
}

async function openGraph(graphId, nodeName) {
  const viewer = viewers.get(graphId);
  if (!viewer) return;
  viewer.card.scrollIntoView({ block: "start" });
  await viewer.load();
  if (nodeName) await viewer.select(nodeName, { center: true });
}

function route() {
  const hash = decodeURIComponent(location.hash.slice(1));
  if (/^L-\d+$/.test(hash)) selectLine(Number(hash.slice(2)));
  else if (hash.startsWith("kernel-")) selectKernel(hash.slice("kernel-".length));
  else if (hash.startsWith("graph-")) {
    const [graphId, ...rest] = hash.slice("graph-".length).split("/");
    openGraph(graphId, rest.join("/"));
  }
}

if (report) {
  setUpParts(report);
  setUpViewers(report);
  setUpDeviceCode(report);
  window.addEventListener("hashchange", route);
  // A kernel row selects its kernel even when the fragment is already the same (a second click).
  for (const link of document.querySelectorAll(".kernel-link")) {
    link.addEventListener("click", () => { if (location.hash === link.getAttribute("href")) route(); });
  }
  // Printing shows every folded section.
  window.addEventListener("beforeprint", () => {
    for (const details of document.querySelectorAll("details:not([open])")) {
      details.dataset.openedForPrint = "1";
      details.open = true;
    }
  });
  window.addEventListener("afterprint", () => {
    for (const details of document.querySelectorAll("details[data-opened-for-print]")) {
      details.open = false;
      delete details.dataset.openedForPrint;
    }
  });
  route();
}
