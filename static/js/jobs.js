// Jobs page: poll the status endpoint and update progress bars in place while jobs run.
(function () {
  "use strict";
  const table = document.getElementById("jobs-table");
  if (!table) return;
  const url = table.dataset.statusUrl;
  const active = new Set(["queued", "running"]);

  function render(job) {
    const row = table.querySelector(`tr[data-job-id="${job.id}"]`);
    if (!row) return false;
    const status = row.querySelector('[data-field="status"]');
    status.textContent = job.status_display;
    status.className = `status status-${job.status}`;
    row.querySelector('[data-field="progress"]').value = job.fraction;
    row.querySelector('[data-field="done"]').textContent = job.done;
    row.querySelector('[data-field="total"]').textContent = job.total;
    row.querySelector('[data-field="percent"]').textContent = `(${Math.round(job.fraction * 100)}%)`;
    row.querySelector('[data-field="error"]').textContent = job.error || "";
    row.querySelector('[data-field="counts"]').textContent = Object.entries(job.counts)
      .map(([k, v]) => `${k}: ${typeof v === "number" ? v.toLocaleString("en-US") : v}`).join(", ");
    row.querySelector('[data-field="elapsed"]').textContent =
      job.elapsed_seconds === null ? (job.status === "queued" ? "waiting" : "")
        : `${job.elapsed_seconds.toFixed(1)} s`;
    return true;
  }

  async function poll() {
    try {
      const response = await fetch(url, { headers: { Accept: "application/json" } });
      if (!response.ok) throw new Error(response.statusText);
      const data = await response.json();
      let missing = false;
      let running = false;
      for (const job of data.jobs) {
        if (!render(job)) missing = true;
        if (active.has(job.status)) running = true;
      }
      // A new job, one that just failed items, or a queued job that started needs the
      // server's full rendering.
      if (missing || data.waiting !== table.dataset.waiting * 1) {
        window.location.reload();
        return;
      }
      setTimeout(poll, running ? 1000 : 5000);
    } catch (err) {
      setTimeout(poll, 5000);
    }
  }
  setTimeout(poll, 1000);
})();
