// Overview page: draw the histogram of estimated update intervals.
(function () {
  "use strict";
  const data = document.getElementById("interval-histogram-data");
  const target = document.getElementById("interval-histogram");
  if (!data || !target || !window.Plotly) return;
  const figure = JSON.parse(data.textContent);
  // In a box narrower than this (a phone) the axis title's bracket goes to a second line.
  const NARROW = 560;

  function fitted(width) {
    const axis = figure.layout.xaxis;
    if (width >= NARROW || !axis || !axis.title) return figure.layout;
    const title = { ...axis.title, text: axis.title.text.replace(" (", "<br>(") };
    return { ...figure.layout, xaxis: { ...axis, title } };
  }

  const config = { responsive: true, displaylogo: false };
  let narrow = target.clientWidth < NARROW;
  window.Plotly.newPlot(target, figure.data, fitted(target.clientWidth), config);
  // Plotly follows the box's width (responsive); crossing NARROW needs the other title.
  let pending = null;
  window.addEventListener("resize", () => {
    clearTimeout(pending);
    pending = setTimeout(() => {
      if (target.clientWidth < NARROW === narrow) return;
      narrow = !narrow;
      window.Plotly.react(target, figure.data, fitted(target.clientWidth), config);
    }, 150);
  });
})();
