// A Triton kernel's device code (templates/report/parts.html, device_code): its source beside one IR stage at a
// time. Each stage carries its line map (data-lines: [[IR line, source line], ...], contract IrStage.lines); a click
// on a source line marks the stage's lines compiled from it and scrolls to the first, a click on an IR line marks
// its source line and every line of the stage compiled from that source line. The selection follows a tab change.

function lineMap(stage) {
  if (!stage.lineMap) {
    const bySource = new Map();
    const byIr = new Map();
    for (const [irLine, sourceLine] of JSON.parse(stage.dataset.lines || "[]")) {
      byIr.set(irLine, sourceLine);
      if (!bySource.has(sourceLine)) bySource.set(sourceLine, []);
      bySource.get(sourceLine).push(irLine);
    }
    stage.lineMap = { bySource, byIr };
  }
  return stage.lineMap;
}

// The number of a listing's line span (id "<anchor>-N"), or null.
function lineNumber(span) {
  const match = /-(\d+)$/.exec(span?.id || "");
  return match ? Number(match[1]) : null;
}

function shownStage(box) {
  return box.querySelector(".ir-stage:not([hidden])");
}

function clear(box) {
  for (const el of box.querySelectorAll(".ir-mapped")) el.classList.remove("ir-mapped");
}

// Mark source line ``sourceLine`` and the shown stage's lines compiled from it; scroll both into view.
function markSource(box, sourceLine) {
  clear(box);
  box.dataset.sourceLine = String(sourceLine);
  const kernel = box.dataset.kernel;
  const sourceSpan = document.getElementById(`dk-${kernel}-${sourceLine}`);
  sourceSpan?.classList.add("ir-mapped");
  const stage = shownStage(box);
  if (!stage) return 0;
  const irLines = lineMap(stage).bySource.get(sourceLine) || [];
  const anchor = `ir-${kernel}-${stage.dataset.stage}`;
  for (const line of irLines) document.getElementById(`${anchor}-${line}`)?.classList.add("ir-mapped");
  const first = irLines.length ? document.getElementById(`${anchor}-${irLines[0]}`) : null;
  const pane = stage.querySelector(".listing");
  if (first && pane) pane.scrollTop = first.offsetTop - pane.clientHeight / 3;
  const hint = box.querySelector(".ir-hint");
  if (hint) {
    hint.textContent = irLines.length
      ? `Source line ${sourceLine}: ${irLines.length} ${stage.dataset.stage.toUpperCase()} line${irLines.length === 1 ? "" : "s"} compiled from it.`
      : `Source line ${sourceLine}: no ${stage.dataset.stage.toUpperCase()} line carries its location.`;
  }
  return irLines.length;
}

function showStage(box, name) {
  for (const tab of box.querySelectorAll(".ir-tab")) tab.setAttribute("aria-selected", String(tab.dataset.stage === name));
  for (const stage of box.querySelectorAll(".ir-stage")) stage.hidden = stage.dataset.stage !== name;
  if (box.dataset.sourceLine) markSource(box, Number(box.dataset.sourceLine));
}

export function setUpDeviceCode(root) {
  root.addEventListener("click", (event) => {
    const box = event.target.closest(".device-code");
    if (!box) return;
    const tab = event.target.closest(".ir-tab");
    if (tab) {
      showStage(box, tab.dataset.stage);
      return;
    }
    if (event.target.closest("a")) return;  // a line number: its own anchor
    const sourceSpan = event.target.closest(".dc-source span[id]");
    if (sourceSpan && lineNumber(sourceSpan)) {
      markSource(box, lineNumber(sourceSpan));
      return;
    }
    const irSpan = event.target.closest(".ir-stage span[id]");
    const stage = irSpan?.closest(".ir-stage");
    if (!stage) return;
    const sourceLine = lineMap(stage).byIr.get(lineNumber(irSpan));
    if (sourceLine) {
      markSource(box, sourceLine);
      document.getElementById(`dk-${box.dataset.kernel}-${sourceLine}`)?.scrollIntoView({ block: "nearest" });
    } else {
      clear(box);
      delete box.dataset.sourceLine;
      const hint = box.querySelector(".ir-hint");
      if (hint) hint.textContent = `${stage.dataset.stage.toUpperCase()} line ${lineNumber(irSpan)} carries no location in the kernel's source.`;
    }
  });
}
