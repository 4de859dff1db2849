// Overview page: draw the histogram of estimated update intervals.
(function () {
  "use strict";
  const data = document.getElementById("interval-histogram-data");
  const target = document.getElementById("interval-histogram");
  if (!data || !target || !window.Plotly) return;
  const figure = JSON.parse(data.textContent);
  window.Plotly.newPlot(target, figure.data, figure.layout, { responsive: true, displaylogo: false });
})();
