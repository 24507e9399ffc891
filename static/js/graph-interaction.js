// Input on a graph's canvas, turned into calls on its viewer (graph-view.js): drag to pan, wheel to zoom, click a
// node or module box; and the keyboard: Tab into the canvas focuses a node, arrow keys move along edges and
// layers (graph-model.js moveFocus), Enter or Space selects the focused node as a click does (or opens a module
// box), Backspace closes the box around it, Escape clears the selection and highlights, Shift+arrows pan, + and -
// zoom. The focused node is described
// in an aria-live region of the card.
import { hitTest, initialFocus, moveFocus } from "./graph-model.js";

const PAN_STEP = 40;
const PANS = { ArrowLeft: [PAN_STEP, 0], ArrowRight: [-PAN_STEP, 0], ArrowUp: [0, PAN_STEP], ArrowDown: [0, -PAN_STEP] };

/** The card's live region for the focused node, made once (visually hidden: the ring shows it to the eye). */
function liveRegion(card, canvas) {
  const region = document.createElement("p");
  region.className = "graph-focus-note";
  region.setAttribute("aria-live", "polite");
  Object.assign(region.style, { position: "absolute", width: "1px", height: "1px", overflow: "hidden",
    clipPath: "inset(50%)", whiteSpace: "nowrap", margin: "0" });
  const keys = document.createElement("span");
  keys.id = `${card.id}-keys`;
  keys.hidden = true;
  keys.textContent = "Arrow keys move between nodes along edges and layers, Enter selects a node or opens a module, "
    + "Backspace closes the module around it, Escape clears, Shift and arrow keys pan, plus and minus zoom.";
  card.append(region, keys);
  canvas.setAttribute("aria-describedby", keys.id);
  return region;
}

export function bindInteraction(viewer) {
  const { canvas, card } = viewer;
  viewer.focusNote = liveRegion(card, canvas);
  let drag = null;
  canvas.addEventListener("pointerdown", (event) => {
    viewer.keyboardFocus = false;
    drag = { x: event.clientX, y: event.clientY, vx: viewer.view.x, vy: viewer.view.y, moved: false };
    canvas.setPointerCapture(event.pointerId);
  });
  canvas.addEventListener("pointermove", (event) => {
    if (!drag) return;
    const dx = event.clientX - drag.x, dy = event.clientY - drag.y;
    if (Math.abs(dx) + Math.abs(dy) > 3) drag.moved = true;
    viewer.view.x = drag.vx + dx;
    viewer.view.y = drag.vy + dy;
    viewer.draw();
  });
  canvas.addEventListener("pointerup", (event) => {
    const wasClick = drag && !drag.moved;
    drag = null;
    if (!wasClick || !viewer.layout) return;
    const box = canvas.getBoundingClientRect();
    const wx = (event.clientX - box.left - viewer.view.x) / viewer.view.scale;
    const wy = (event.clientY - box.top - viewer.view.y) / viewer.view.scale;
    const hit = hitTest(viewer.model, viewer.layout, wx, wy);
    if (hit) viewer.activate(hit);
  });
  canvas.addEventListener("wheel", (event) => {
    if (!viewer.layout) return;
    event.preventDefault();
    const box = canvas.getBoundingClientRect();
    viewer.zoomAt(event.clientX - box.left, event.clientY - box.top, Math.exp(-event.deltaY * 0.0015));
  }, { passive: false });

  canvas.addEventListener("focus", () => {
    if (!canvas.matches(":focus-visible")) return;  // a click focuses too: no ring for the mouse
    viewer.keyboardFocus = true;
    viewer.load().then(() => {
      if (!viewer.focus) viewer.setFocus(initialFocus(viewer.model, viewer.layout, viewer.selected));
      else viewer.setFocus(viewer.focus);
    });
  });
  canvas.addEventListener("blur", () => {
    viewer.keyboardFocus = false;
    viewer.draw();
  });
  canvas.addEventListener("keydown", (event) => {
    if (!viewer.layout) return;
    if (event.shiftKey && PANS[event.key]) {
      viewer.view.x += PANS[event.key][0];
      viewer.view.y += PANS[event.key][1];
      viewer.draw();
    } else if (event.key === "+" || event.key === "=") viewer.zoomAt(viewer.size.width / 2, viewer.size.height / 2, 1.25);
    else if (event.key === "-") viewer.zoomAt(viewer.size.width / 2, viewer.size.height / 2, 0.8);
    else if (event.key === "Escape") viewer.clearSelection();
    else if (event.key === "Backspace") viewer.closeFocusedBox();
    else if (event.key === "Enter" || event.key === " ") {
      viewer.keyboardFocus = true;
      if (viewer.focus) viewer.activateFocus();
    } else {
      // The first move only shows where the focus is.
      const first = viewer.focus ? null : initialFocus(viewer.model, viewer.layout, viewer.selected);
      const from = viewer.focus ?? first;
      const to = from && moveFocus(viewer.model, viewer.layout, from, event.key);
      if (!to) return;
      viewer.keyboardFocus = true;
      viewer.setFocus(first ?? to);
    }
    event.preventDefault();
  });
}
