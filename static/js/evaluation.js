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

  // A chart box narrower than this (a phone) gets its titles broken into lines, the threshold
  // chart's panels one under another and the replay's bars lying down; the charts are drawn
  // again when a box crosses it.
  const NARROW = 560;

  function wrapped(text, width) {
    const most = Math.max(12, Math.floor(width / 8)); // characters a line holds at 14 px
    const lines = [];
    for (const word of text.split(" ")) {
      const last = lines.length - 1;
      if (last >= 0 && (lines[last] + " " + word).length <= most) lines[last] += " " + word;
      else lines.push(word);
    }
    return lines;
  }

  function fitted(figure, width) {
    if (width >= NARROW) return figure;
    const layout = { ...figure.layout, margin: { ...figure.layout.margin } };
    const title = layout.title;
    if (title && title.text) {
      const lines = wrapped(title.text, width);
      layout.title = { ...title, text: lines.join("<br>") };
      layout.margin.t = (layout.margin.t || 40) + 18 * (lines.length - 1);
    }
    // An x axis's title is centred under the plot, which is narrower than the box.
    for (const key of Object.keys(layout).filter((k) => /^xaxis\d*$/.test(k))) {
      const axisTitle = layout[key].title;
      if (axisTitle && axisTitle.text) {
        layout[key] = { ...layout[key], title: { ...axisTitle, text: wrapped(axisTitle.text, width / 2).join("<br>") } };
      }
    }
    // Bars against long category names (the replay's policies) lie down, one name a row.
    if (figure.data.length && figure.data.every((trace) => trace.type === "bar")) {
      const data = figure.data.map((trace) => ({
        ...trace, orientation: "h", x: trace.y,
        y: trace.x.map((name) => wrapped(name, 160).join("<br>")),
        hovertemplate: trace.hovertemplate && trace.hovertemplate.replace("%{x}", "%{y}").replace("%{y:", "%{x:"),
      }));
      const categories = { ...layout.xaxis, autorange: "reversed" };
      const values = { ...layout.yaxis };
      if (values.title && values.title.text) {
        values.title = { ...values.title, text: wrapped(values.title.text, width / 2).join("<br>") };
      }
      return { data, layout: { ...layout, xaxis: values, yaxis: categories, margin: { ...layout.margin, b: 10 } } };
    }
    // Panels side by side (the threshold chart) stand one under another, each with its axes.
    const panels = Object.keys(layout).filter((key) => /^xaxis\d*$/.test(key)).sort();
    if (panels.length > 1) {
      const gap = 0.09;
      const height = (1 - gap * (panels.length - 1)) / panels.length;
      panels.forEach((key, i) => {
        const suffix = key.slice("xaxis".length);
        const top = 1 - i * (height + gap);
        layout[key] = { ...layout[key], domain: [0, 1], anchor: `y${suffix}` };
        layout[`yaxis${suffix}`] = { ...layout[`yaxis${suffix}`], domain: [top - height, top] };
      });
    }
    return { data: figure.data, layout };
  }

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

    const drawn = new Map(); // chart id: [figure, drawn for a narrow box]

    function draw(id, figure) {
      const el = document.getElementById(id);
      if (!el) return;
      el.hidden = !figure;
      if (!figure) {
        drawn.delete(id);
        Plotly.purge(el);
        return;
      }
      const width = el.clientWidth;
      drawn.set(id, [figure, width < NARROW]);
      const shown = fitted(figure, width);
      Plotly.react(el, shown.data, shown.layout, PLOT_CONFIG);
    }

    // Plotly follows the box's size (responsive); a box that turns narrow or wide (a phone
    // turned sideways) needs the other layout.
    let pending = null;
    window.addEventListener("resize", () => {
      clearTimeout(pending);
      pending = setTimeout(() => {
        drawn.forEach(([figure, narrow], id) => {
          const el = document.getElementById(id);
          if (el && el.clientWidth < NARROW !== narrow) draw(id, figure);
        });
      }, 150);
    });

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
