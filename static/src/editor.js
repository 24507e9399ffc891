// The new-run page: CodeMirror over the code textarea (which stays the form field), gallery loading,
// upload into the editor, and per-device default configs. Bundled by esbuild into static/vendor/.
import { EditorView, basicSetup } from "codemirror";
import { python } from "@codemirror/lang-python";

function setup() {
  const form = document.getElementById("new-run");
  const textarea = document.getElementById("code");
  if (!form || !textarea) return;

  const view = new EditorView({ doc: textarea.value, extensions: [basicSetup, python()] });
  textarea.insertAdjacentElement("afterend", view.dom);
  textarea.hidden = true;
  view.dom.id = "editor";
  form.addEventListener("submit", () => { textarea.value = view.state.doc.toString(); });

  const setCode = (code, filename) => {
    view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: code } });
    document.getElementById("filename").value = filename;
    document.getElementById("filename-label").textContent = filename;
  };

  // Gallery links work without script (the server pre-fills the form); with it, no reload is needed.
  for (const link of document.querySelectorAll("a.example")) {
    link.addEventListener("click", async (event) => {
      event.preventDefault();
      const name = link.dataset.example;
      const response = await fetch(`/examples/${name}.py`);
      if (response.ok) setCode(await response.text(), `${name}.py`);
    });
  }

  // The file goes into the editor, so what is submitted is what the user sees (and may still edit).
  const upload = document.getElementById("upload");
  upload.addEventListener("change", async () => {
    const file = upload.files[0];
    if (!file || !file.name.endsWith(".py")) return;
    setCode(await file.text(), file.name);
    upload.value = "";
  });

  for (const radio of document.querySelectorAll("input[name=device]")) {
    radio.addEventListener("change", () => {
      const defaults = radio.dataset.defaults.split(",");
      for (const box of document.querySelectorAll("input[name=configs]")) {
        if (!box.disabled) box.checked = defaults.includes(box.value);
      }
    });
  }
  window.pt2scopeEditor = view; // for debugging from the console
}

document.addEventListener("DOMContentLoaded", setup);
