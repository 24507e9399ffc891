// Plotly charts (bundled offline in static/vendor/): each .chart element carries its figure as JSON in
// data-chart, built by the tab modules (webapp/tabs/). Plotly (1.2 MB) is fetched only when a chart comes into view, so it
// never delays the page or its graphs.
function setUpCharts() {
  const charts = document.querySelectorAll(".chart[data-chart]");
  if (!charts.length) return;
  const base = {
    margin: { t: 24, r: 16, b: 56, l: 64 }, height: 320, font: { family: "system-ui, sans-serif", size: 12, color: "#1d232a" },
    paper_bgcolor: "#ffffff", plot_bgcolor: "#ffffff", showlegend: true, legend: { orientation: "h", y: 1.12 },
  };
  let plotly = null;
  function loadPlotly() {
    // An offline report (webapp/offline.py) carries Plotly inline: nothing to fetch.
    if (window.Plotly) plotly ??= Promise.resolve(window.Plotly);
    plotly ??= new Promise((resolve, reject) => {
      const script = document.createElement("script");
      script.src = charts[0].dataset.plotlyUrl;
      script.onload = () => resolve(window.Plotly);
      script.onerror = reject;
      document.head.append(script);
    });
    return plotly;
  }
  function draw(el) {
    el.dataset.drawn = "1";
    const figure = JSON.parse(el.dataset.chart);
    const layout = { ...base, ...figure.layout, margin: { ...base.margin, ...(figure.layout.margin || {}) } };
    // Labels are never clipped: each axis grows its margin to fit its tick labels and title.
    for (const axis of ["xaxis", "yaxis"]) layout[axis] = { automargin: true, ...(figure.layout[axis] || {}) };
    if (figure.data.length === 1) layout.showlegend = false;
    return loadPlotly().then((Plotly) => Plotly.newPlot(el, figure.data, layout, { displaylogo: false, responsive: true,
      modeBarButtonsToRemove: ["select2d", "lasso2d", "autoScale2d"] }));
  }
  const observer = new IntersectionObserver((entries) => {
    for (const entry of entries) {
      if (!entry.isIntersecting) continue;
      observer.unobserve(entry.target);
      draw(entry.target);
    }
  }, { rootMargin: "300px" });
  charts.forEach((el) => observer.observe(el));
  // Printing draws every chart first.
  window.addEventListener("beforeprint", () => charts.forEach((el) => { if (!el.dataset.drawn) draw(el); }));
}
setUpCharts();
