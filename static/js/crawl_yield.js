// The list's own yield (templates/dashboard/_crawl_yield.html), on the Crawl list page and the
// Overview: draw the chart from its JSON; Plotly follows the box's width.
(function () {
  "use strict";
  function draw() {
    const data = document.getElementById("crawl-yield-data");
    const target = document.getElementById("crawl-yield-chart");
    if (!data || !target || !window.Plotly) return;
    const figure = JSON.parse(data.textContent);
    const config = { responsive: true, displaylogo: false, modeBarButtonsToRemove: ["lasso2d", "select2d"] };
    window.Plotly.newPlot(target, figure.data, figure.layout, config);
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", draw);
  } else {
    draw();
  }
})();
