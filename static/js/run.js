// The run page while a job is queued or running: polls the API and updates the stage list; reloads into the
// report once the run has finished.
function pollRun() {
  const run = document.getElementById("run");
  if (!run) return;
  const apiUrl = run.dataset.apiUrl;

  function show(data) {
    document.getElementById("status").textContent = data.status;
    document.getElementById("status").className = `status status-${data.status}`;
    const queue = document.getElementById("queue");
    if (queue) {
      queue.hidden = data.queue_position === null;
      document.getElementById("queue-position").textContent = data.queue_position ?? "";
    }
    for (const stage of data.stages) {
      const item = document.getElementById(`stage-${stage.stage}`);
      if (!item) continue;
      item.dataset.state = stage.state;
      item.querySelector(".state").textContent = stage.state;
      item.querySelector(".seconds").textContent = stage.seconds === null ? "" : `${stage.seconds.toFixed(2)} s`;
    }
    const messages = document.getElementById("messages");
    messages.replaceChildren(...data.messages.map((m) => {
      const li = document.createElement("li");
      li.textContent = m.text;
      return li;
    }));
  }

  async function poll() {
    try {
      const response = await fetch(apiUrl, { headers: { Accept: "application/json" } });
      if (response.ok) {
        const data = await response.json();
        show(data);
        if (data.status === "succeeded" || data.status === "failed") {
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
