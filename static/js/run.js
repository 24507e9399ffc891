// The run page while a job is queued or running: polls the API and redraws the steps (in the order they run, the
// one running now named with its config, the time left until the report, measured against recent runs; while
// queued, its place in the queue and the expected wait), opens each tab as soon as its stage has
// finished, and reloads into the report once the run has finished (and again once its warm compile, measured
// after the report was stored, has ended).
function pollRun() {
  const run = document.getElementById("run");
  if (!run) return;
  const apiUrl = run.dataset.apiUrl;
  const currentTab = document.querySelector("nav.tabs a.active")?.id?.replace("tab-", "") || "overview";
  const readyAtLoad = new Set([...document.querySelectorAll("nav.tabs a[href]")].map((a) => a.id.replace("tab-", "")));

  function element(tag, props = {}, children = []) {
    const el = document.createElement(tag);
    Object.assign(el, props);
    el.append(...children);
    return el;
  }

  function stepItem(step) {
    const rounds = step.stage === "benchmark" && !step.config;  // the timed rounds of every config together
    const item = element("li", { id: `stage-${step.stage}${step.stage === "benchmark" ? `-${step.config || "rounds"}` : ""}` }, [
      element("span", { className: "name", textContent: step.stage }), " ",
      ...(step.config ? [element("code", { className: "config", textContent: step.config }), " "] : []),
      ...(rounds ? [element("span", { className: "config", textContent: "timed rounds, every config" }), " "] : []),
      element("span", { className: "state", textContent: step.state }), " ",
      element("span", { className: "seconds", textContent: step.seconds === null ? "" : `${step.seconds.toFixed(2)} s` }),
    ]);
    item.dataset.stage = step.stage;
    item.dataset.state = step.state;
    return item;
  }

  function show(data) {
    document.getElementById("status").textContent = data.status;
    document.getElementById("status").className = `status status-${data.status}`;
    const queue = document.getElementById("queue");
    if (queue) {
      queue.hidden = data.queue === null;
      document.getElementById("queue-position").textContent = data.queue?.position ?? "";
      document.getElementById("queue-wait").textContent = data.queue?.text ?? "";
    }
    document.getElementById("stages").replaceChildren(...data.steps.map(stepItem));
    const now = document.getElementById("progress-now");
    const left = data.time_left_s === null ? "" : ` · about ${Math.round(data.time_left_s)} s left until the report`;
    if (data.current) {
      now.replaceChildren("Now: ", element("strong", { textContent: data.current.stage }),
        ...(data.current.config ? [" ", element("code", { textContent: data.current.config })] : []),
        element("span", { id: "time-left", textContent: left }));
    } else {
      now.replaceChildren(data.status === "queued" ? "Waiting to start." : "", element("span", { id: "time-left", textContent: left }));
    }
    const messages = document.getElementById("messages");
    messages.replaceChildren(...data.messages.map((m) => element("li", { textContent: m.text })));
  }

  // A tab whose stage has just finished: readable now. The page itself reloads when it shows that tab (or the
  // Overview, whose story gains the stage's facts).
  function openTabs(ready) {
    for (const name of ready) {
      const tab = document.getElementById(`tab-${name}`);
      if (tab && !tab.hasAttribute("href")) {
        tab.href = tab.dataset.href;
        tab.classList.remove("waiting");
        tab.removeAttribute("aria-disabled");
        tab.removeAttribute("title");
      }
    }
    const fresh = ready.filter((name) => !readyAtLoad.has(name));
    return fresh.includes(currentTab) || (currentTab === "overview" && fresh.length > 0 && document.getElementById("story"));
  }

  // A page loaded with the report already stored, while the warm compile still runs or waits for an idle worker
  // (deferred): wait for it to end, then reload where its figures are drawn (the Runtime tab, the Overview's story).
  const loadedFinished = ["succeeded", "failed"].includes(run.dataset.status);

  async function poll() {
    try {
      const response = await fetch(apiUrl, { headers: { Accept: "application/json" } });
      if (response.ok) {
        const data = await response.json();
        if (loadedFinished) {
          if ((data.still_measuring || []).length === 0) {
            if (["runtime", "overview"].includes(currentTab)) window.location.reload();
            else document.getElementById("still-measuring")?.remove();
            return;
          }
          // Work left for an idle worker may wait minutes behind a class's queue: asked for less often.
          setTimeout(poll, data.still_measuring.some((step) => step.state === "deferred") ? 5000 : 1000);
          return;
        }
        show(data);
        const finished = data.status === "succeeded" || data.status === "failed";
        const changed = openTabs(data.tabs_ready);
        // A Dynamo or AOTAutograd tab read while the benchmarks ran is final already: no reload to lose its place.
        if (finished && readyAtLoad.has(currentTab) && ["dynamo", "aot"].includes(currentTab)) return;
        if (finished || changed) {
          window.location.reload();
          return;
        }
      }
    } catch (error) {
      // The server restarting is not the job failing: keep polling.
    }
    setTimeout(poll, 500);
  }
  poll();
}
pollRun();
