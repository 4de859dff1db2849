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
  const figures = [
    ["timeline-data", "timeline-chart"],
    ["probability-data", "probability-chart"],
  ];
  for (const [dataId, chartId] of figures) {
    const data = document.getElementById(dataId);
    const chart = document.getElementById(chartId);
    if (!data || !chart) continue;
    const figure = JSON.parse(data.textContent);
    Plotly.newPlot(chart, figure.data, figure.layout, config);
  }
})();
