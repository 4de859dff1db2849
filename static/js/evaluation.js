// Evaluation page: follow a queued or running evaluation's progress, and draw the finished run's
// charts (Plotly figure dicts built by hacs/charts/evaluation.py, embedded with
// json_script) for the level, average, history size and interval group chosen in the controls.
(function () {
  "use strict";

  const PLOT_CONFIG = {
    responsive: true,
    displaylogo: false,
    modeBarButtonsToRemove: ["lasso2d", "select2d", "autoScale2d"],
    toImageButtonOptions: { format: "png", scale: 2 },
  };

  function followProgress() {
    const box = document.getElementById("run-status");
    if (!box || !["queued", "running"].includes(box.dataset.status)) return;
    const bar = document.getElementById("run-progress");
    const text = document.getElementById("run-progress-text");
    const label = document.getElementById("run-status-label");

    async function poll() {
      try {
        const response = await fetch(box.dataset.statusUrl, {
          headers: { Accept: "application/json" },
        });
        if (!response.ok) throw new Error(response.statusText);
        const run = await response.json();
        if (bar) bar.value = run.progress;
        if (text) text.textContent = `${Math.round(run.progress * 100)} %`;
        label.textContent = run.status_label;
        label.className = `status status-${run.status}`;
        if (run.status === "done" || run.status === "failed") {
          window.location.reload();
          return;
        }
        setTimeout(poll, 1000);
      } catch (err) {
        setTimeout(poll, 5000);
      }
    }
    setTimeout(poll, 1000);
  }

  function drawCharts() {
    const source = document.getElementById("evaluation-charts");
    if (!source) return;
    if (typeof Plotly === "undefined") {
      document.querySelectorAll(".chart").forEach((el) => {
        el.textContent = "The charts need JavaScript and the Plotly library, which did not load.";
      });
      return;
    }
    const charts = JSON.parse(source.textContent);
    const level = document.getElementById("ctl-level");
    const average = document.getElementById("ctl-average");
    const weeks = document.getElementById("ctl-w");
    const group = document.getElementById("ctl-bin");
    const intervalsEmpty = document.getElementById("intervals-empty");

    function draw(id, figure) {
      const el = document.getElementById(id);
      if (!el) return;
      el.hidden = !figure;
      if (!figure) {
        Plotly.purge(el);
        return;
      }
      Plotly.react(el, figure.data, figure.layout, PLOT_CONFIG);
    }

    function fillGroups() {
      const groups = charts.intervals[level.value] || [];
      const previous = group.selectedIndex;
      group.replaceChildren(
        ...groups.map((g, i) => {
          const option = document.createElement("option");
          option.value = String(i);
          option.textContent = g.label;
          return option;
        })
      );
      // Start on the most populated group, which shows the shape best.
      let best = 0;
      groups.forEach((g, i) => {
        if (g.figure.data[0].y.filter((v) => v !== null).length >
            groups[best].figure.data[0].y.filter((v) => v !== null).length) best = i;
      });
      group.selectedIndex = previous >= 0 && previous < groups.length && group.dataset.touched
        ? previous : (groups.length ? best : -1);
      group.disabled = groups.length === 0;
      intervalsEmpty.hidden = groups.length > 0;
    }

    function drawIntervals() {
      const groups = charts.intervals[level.value] || [];
      const chosen = groups[Number(group.value)];
      draw("chart-intervals", chosen ? chosen.figure : null);
    }

    function drawLevel() {
      const ranking = charts.ranking[level.value] || {};
      draw("chart-pak", ranking.pak);
      draw("chart-ndcg", ranking.ndcg);
      document.querySelectorAll("[data-table-level]").forEach((el) => {
        el.hidden = el.dataset.tableLevel !== level.value;
      });
      fillGroups();
      drawIntervals();
    }

    function drawThreshold() {
      draw("chart-threshold", charts.threshold[`${level.value}|${average.value}|${weeks.value}`]);
    }

    level.addEventListener("change", () => {
      drawThreshold();
      drawLevel();
    });
    average.addEventListener("change", drawThreshold);
    weeks.addEventListener("change", drawThreshold);
    group.addEventListener("change", () => {
      group.dataset.touched = "1";
      drawIntervals();
    });
    drawThreshold();
    drawLevel();
    draw("chart-replay", charts.replay);
    Object.entries(charts.learned || {}).forEach(([key, figure]) => draw(`chart-learned-${key}`, figure));
  }

  followProgress();
  drawCharts();
})();
