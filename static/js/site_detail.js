// Site page: draw the figures that the template embeds with json_script (built by
// hacs/charts/site.py) using the plotly.js bundle served from the plotly wheel.
(function () {
  "use strict";
  if (!window.Plotly) return;
  const config = {
    responsive: true,
    displaylogo: false,
    modeBarButtonsToRemove: ["select2d", "lasso2d", "autoScale2d"],
    toImageButtonOptions: { format: "png", scale: 2 },
  };
  // In a box narrower than this (a phone) the timeline's row labels ("Homepage · captures")
  // take two lines, leaving the captures most of the width, and its legend, a row per entry
  // there, gets room of its own instead of the rows'.
  const NARROW = 560;
  const LEGEND_ROW = 22; // px

  function fitted(figure, width) {
    const layout = figure.layout;
    const rows = layout.yaxis && layout.yaxis.ticktext;
    if (width >= NARROW || !rows || !layout.height) return layout;
    const entries = figure.data.filter((trace) => trace.showlegend !== false).length;
    return {
      ...layout,
      height: layout.height + LEGEND_ROW * Math.max(0, entries - 1),
      legend: { ...layout.legend, xref: "container" },
      yaxis: { ...layout.yaxis, ticktext: rows.map((row) => row.replace(" · ", "<br>")) },
    };
  }

  const drawn = [];
  const figures = [
    ["timeline-data", "timeline-chart"],
    ["probability-data", "probability-chart"],
  ];
  for (const [dataId, chartId] of figures) {
    const data = document.getElementById(dataId);
    const chart = document.getElementById(chartId);
    if (!data || !chart) continue;
    const figure = JSON.parse(data.textContent);
    const narrow = chart.clientWidth < NARROW;
    Plotly.newPlot(chart, figure.data, fitted(figure, chart.clientWidth), config);
    drawn.push({ chart, figure, narrow });
  }

  // Plotly follows the box's width (responsive); a box that turns narrow or wide (a phone
  // turned sideways) needs the other labels.
  let pending = null;
  window.addEventListener("resize", () => {
    clearTimeout(pending);
    pending = setTimeout(() => {
      for (const item of drawn) {
        const width = item.chart.clientWidth;
        if (width < NARROW === item.narrow) continue;
        item.narrow = width < NARROW;
        Plotly.react(item.chart, item.figure.data, fitted(item.figure, width), config);
      }
    }, 150);
  });
})();
