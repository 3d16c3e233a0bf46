// <paddock-chart>: one live line chart of a job (loss, learning rate, samples/s, dev accuracy and macro-F1),
// drawn by uPlot, loaded from the site's own assets (/vendor/uplot/, copied from npm by scripts/setup.sh;
// no CDN) the first time a chart appears. The dashboard (Leptos) owns the data: it creates the element and
// calls `push(json)` with new points as they arrive over the job's SSE stream; this file only draws.
// Attributes (the dashboard passes every text translated):
//   data-series   JSON array of series names, e.g. ["accuracy", "macro-F1"]
//   data-colours  JSON array of CSS colours, one per series (optional; the page's own palette)
//   data-x-label  the x axis' title ("step"); data-y-label the y axis' title
//   data-digits   decimals shown in the tooltip and legend (default 4)
//   data-log      "true" for a logarithmic y axis
// push(json): a JSON array of points [x, y1, y2, ...] (null for a missing value), appended in order.
// The element reports data-points (how many x values it holds) and data-state (loading, ready, failed).
// Hovering shows a tooltip with the step and each value; uPlot's legend shows the same under the chart.
(() => {
  'use strict';

  const VENDOR = '/vendor/uplot/';
  /** Series colours: the dashboard's accent first, then distinguishable ones that keep contrast on white. */
  const COLOURS = ['#2563eb', '#d9480f', '#2b8a3e', '#862e9c'];
  const HEIGHT = 220;
  let library = null;

  function loadUplot() {
    if (!library) {
      const css = document.createElement('link');
      css.rel = 'stylesheet';
      css.href = `${VENDOR}uPlot.min.css`;
      document.head.appendChild(css);
      library = new Promise((resolve, reject) => {
        const script = document.createElement('script');
        script.src = `${VENDOR}uPlot.iife.min.js`;
        script.onload = () => resolve(globalThis.uPlot);
        script.onerror = () => reject(new Error('cannot load uPlot'));
        document.head.appendChild(script);
      });
    }
    return library;
  }

  function format(value, digits) {
    if (value == null || Number.isNaN(value)) return '–';
    const abs = Math.abs(value);
    if (abs !== 0 && (abs < 1e-3 || abs >= 1e6)) return value.toExponential(2);
    return value.toFixed(digits);
  }

  class PaddockChart extends HTMLElement {
    connectedCallback() {
      if (this.started) return;
      this.started = true;
      this.names = JSON.parse(this.dataset.series || '["value"]');
      this.digits = Number(this.dataset.digits || 4);
      // Columns as uPlot wants them: xs, then one array per series.
      this.columns = [[], ...this.names.map(() => [])];
      this.dataset.points = '0';
      this.dataset.state = 'loading';
      this.tooltip = document.createElement('div');
      this.tooltip.className = 'chart-tooltip';
      this.tooltip.setAttribute('role', 'status');
      this.tooltip.hidden = true;
      this.append(this.tooltip);
      loadUplot()
        .then((uPlot) => { if (!this.removed) this.draw(uPlot); })
        .catch((err) => {
          console.warn('paddock chart:', err);
          this.dataset.state = 'failed';
        });
    }

    disconnectedCallback() {
      this.removed = true;
      this.resizeObserver?.disconnect();
      this.plot?.destroy();
      this.plot = null;
    }

    /** Appends points (a JSON array of [x, y...]); redraws once per call. */
    push(json) {
      const points = typeof json === 'string' ? JSON.parse(json) : json;
      if (!this.columns) return;
      for (const point of points) {
        this.columns.forEach((column, i) => column.push(point[i] ?? null));
      }
      this.dataset.points = String(this.columns[0].length);
      this.plot?.setData(this.columns);
    }

    draw(uPlot) {
      const chart = this;
      const colours = this.dataset.colours ? JSON.parse(this.dataset.colours) : COLOURS;
      const series = [
        { label: this.dataset.xLabel || 'step' },
        ...this.names.map((label, i) => ({
          label,
          stroke: colours[i % colours.length],
          width: 2,
          spanGaps: true,
          points: { size: 5 },
          value: (u, v) => format(v, chart.digits),
        })),
      ];
      const options = {
        width: Math.max(this.clientWidth, 240),
        height: HEIGHT,
        scales: {
          x: { time: false },
          y: this.dataset.log === 'true' ? { distr: 3 } : {},
        },
        axes: [
          { label: this.dataset.xLabel || 'step', stroke: '#475569', grid: { stroke: '#e2e8f0' } },
          {
            label: this.dataset.yLabel || '',
            stroke: '#475569',
            grid: { stroke: '#e2e8f0' },
            size: 64,
            values: (u, ticks) => ticks.map((v) => format(v, Math.min(chart.digits, 3))),
          },
        ],
        series,
        cursor: { drag: { x: false, y: false } },
        hooks: { setCursor: [(u) => chart.showTooltip(u)] },
      };
      this.plot = new uPlot(options, this.columns, this);
      // The tooltip sits above the plot; keep it the last child so it is drawn on top.
      this.append(this.tooltip);
      this.dataset.state = 'ready';
      this.resizeObserver = new ResizeObserver(() => {
        if (this.plot && this.clientWidth > 0) this.plot.setSize({ width: this.clientWidth, height: HEIGHT });
      });
      this.resizeObserver.observe(this);
    }

    showTooltip(u) {
      const idx = u.cursor.idx;
      if (idx == null || u.cursor.left < 0) {
        this.tooltip.hidden = true;
        return;
      }
      const x = this.columns[0][idx];
      const lines = [`${this.dataset.xLabel || 'step'} ${x}`];
      this.names.forEach((name, i) => lines.push(`${name}: ${format(this.columns[i + 1][idx], this.digits)}`));
      this.tooltip.textContent = lines.join('\n');
      this.tooltip.hidden = false;
      const over = u.over.getBoundingClientRect();
      const host = this.getBoundingClientRect();
      const left = over.left - host.left + u.cursor.left + 12;
      const top = over.top - host.top + u.cursor.top + 12;
      this.tooltip.style.left = `${Math.min(left, this.clientWidth - this.tooltip.offsetWidth - 4)}px`;
      this.tooltip.style.top = `${top}px`;
    }
  }

  if (!customElements.get('paddock-chart')) customElements.define('paddock-chart', PaddockChart);
})();
