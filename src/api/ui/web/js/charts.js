// Time-series charts on uPlot (bundled into the binary: vendor/uPlot.esm.js). Each chart sits in a
// fixed-height box, so the page never jumps as data arrives; it follows its box's width; it shows an
// empty state until a series has a value. `data-points` on the figure counts the instants where
// some series is above zero and `data-series` the same per series (the tests read them).
import uPlot from '../vendor/uPlot.esm.js';
import { h, setText } from './dom.js';
import { formatClock } from './format.js';

const LEGEND_PX = 30;

export const colors = {
  blue: '#2563eb',
  teal: '#0d9488',
  amber: '#d97706',
  violet: '#7c3aed',
  red: '#dc2626',
  gray: '#6b7280',
  pink: '#db2777',
  green: '#16a34a',
};

function cssVar(name, fallback) {
  const v = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  return v || fallback;
}

// `alpha` of a #rrggbb colour, for fills.
function withAlpha(hex, alpha) {
  const n = parseInt(hex.slice(1), 16);
  return `rgba(${(n >> 16) & 255}, ${(n >> 8) & 255}, ${n & 255}, ${alpha})`;
}

/**
 * new TimeChart(parent, {id, title, unit, series: [{label, color}], format, stacked, height, empty})
 *   .update(times, arrays)   times in seconds; arrays[i] aligned with times, null = no value
 * stacked: areas stacked in the order given (the first at the bottom); the legend shows each
 * series' own value.
 */
export class TimeChart {
  constructor(parent, { id, title, unit = '', series, format = (v) => String(v), stacked = false, height = 200, empty = 'No data yet' }) {
    this.series = series;
    this.stacked = stacked;
    // Stacked areas are drawn top of the stack first, each filled down to zero, so the next one
    // covers the part below it: series are listed in reverse (the legend then reads top-down).
    this.order = stacked ? [...series.keys()].reverse() : [...series.keys()];
    this.format = format;
    this.raw = series.map(() => []);
    this.times = null;
    this.plot = h('div', { class: 'chart-plot' });
    // The canvas is `height` tall; the legend below it takes a line (two on a narrow window).
    this.plot.style.minHeight = `${height + LEGEND_PX}px`;
    this.emptyEl = h('div', { class: 'chart-empty', text: empty });
    this.plot.append(this.emptyEl);
    this.el = h(
      'figure',
      { class: 'card chart', dataset: { chart: id, points: '0' }, 'aria-label': `${title} (${unit})` },
      h('figcaption', {}, h('h3', { text: title }), unit ? h('span', { class: 'unit', text: unit }) : null),
      this.plot,
    );
    parent.append(this.el);
    this.height = height;
    this.u = null;
    this.observer = new ResizeObserver(() => this.resize());
    this.observer.observe(this.plot);
  }

  options(width) {
    const axisStroke = cssVar('--fg-muted', '#555');
    const grid = { stroke: cssVar('--grid', '#e5e7eb'), width: 1 };
    const fmt = this.format;
    const n = this.series.length;
    const order = this.order;
    return {
      width,
      height: this.height,
      legend: { live: true },
      cursor: { points: { size: 6 } },
      scales: { x: { time: true }, y: { range: (u, min, max) => [0, max > 0 ? max * 1.1 : 1] } },
      axes: [
        // Clock times only: uPlot's default adds a date line whose labels collide on short spans.
        { stroke: axisStroke, grid, ticks: grid, font: '11px system-ui, sans-serif', space: 64, values: (u, vals) => vals.map((v) => formatClock(v * 1000)) },
        { stroke: axisStroke, grid, ticks: grid, size: 56, font: '11px system-ui, sans-serif', values: (u, vals) => vals.map((v) => fmt(v)) },
      ],
      series: [
        { label: 'time' },
        ...order.map((i) => {
          const s = this.series[i];
          return {
            label: s.label,
            stroke: s.color,
            width: 1.5,
            fill: this.stacked ? s.color : n === 1 ? withAlpha(s.color, 0.12) : undefined,
            spanGaps: false,
            points: { show: false },
            // At the cursor, else the latest value (the legend then reads as "now").
            value: (u, v, si, idx) => {
              const series = this.raw[order[si - 1]] ?? [];
              const at = idx === null || idx === undefined ? series.findLast((x) => x !== null && x !== undefined) : series[idx];
              return at === null || at === undefined ? '—' : fmt(at);
            },
          };
        }),
      ],
    };
  }

  update(times, arrays) {
    this.times = times;
    this.raw = arrays;
    let points = 0;
    for (let i = 0; i < times.length; i++) if (arrays.some((a) => a[i] > 0)) points++;
    this.el.dataset.points = String(points);
    // Per series, the instants above zero: "computed:12,context:4,…".
    this.el.dataset.series = this.series.map((s, k) => `${s.label}:${arrays[k].filter((v) => v > 0).length}`).join(',');
    this.emptyEl.hidden = points > 0;
    let drawn = arrays;
    if (this.stacked) {
      const acc = times.map(() => null);
      drawn = arrays.map((a) => a.map((v, i) => (acc[i] = v === null && acc[i] === null ? null : (acc[i] ?? 0) + (v ?? 0))));
    }
    const data = [times, ...this.order.map((i) => drawn[i])];
    if (!this.u) {
      const width = this.plot.clientWidth;
      if (width === 0) return; // hidden: drawn when the box gets a size
      this.u = new uPlot(this.options(width), data, this.plot);
    } else {
      this.u.setData(data);
    }
  }

  resize() {
    const width = this.plot.clientWidth;
    if (!width) return;
    if (this.u) this.u.setSize({ width, height: this.height });
    else if (this.times) this.update(this.times, this.raw);
  }

  destroy() {
    this.observer.disconnect();
    this.u?.destroy();
  }
}

/**
 * A histogram as rows of horizontal bars, one column per series (accessible as a table):
 * update(bounds, columns) with bounds the bucket upper bounds (Infinity last) and columns
 * [{label, counts}] of per-bucket (not cumulative) counts.
 */
export class HistogramTable {
  constructor(parent, { id, title, unit = '', formatBound, empty = 'No observations yet' }) {
    this.formatBound = formatBound;
    this.body = h('div', { class: 'histogram-body' });
    this.emptyEl = h('div', { class: 'chart-empty', text: empty });
    this.el = h(
      'figure',
      { class: 'card chart histogram', dataset: { chart: id, points: '0' } },
      h('figcaption', {}, h('h3', { text: title }), unit ? h('span', { class: 'unit', text: unit }) : null),
      h('div', { class: 'histogram-box' }, this.emptyEl, this.body),
    );
    parent.append(this.el);
  }

  update(bounds, columns) {
    const total = columns.reduce((s, c) => s + c.counts.reduce((a, b) => a + b, 0), 0);
    this.el.dataset.points = String(columns.reduce((s, c) => s + c.counts.filter((x) => x > 0).length, 0));
    this.emptyEl.hidden = total > 0;
    this.body.hidden = total === 0;
    if (total === 0) return;
    const max = Math.max(1, ...columns.flatMap((c) => c.counts));
    // Only the buckets around the observations, one empty bucket either side for scale.
    const used = bounds.map((_, i) => columns.some((c) => c.counts[i] > 0));
    const first = Math.max(0, used.indexOf(true) - 1);
    const last = Math.min(bounds.length - 1, used.lastIndexOf(true) + 1);
    const rows = [];
    for (let i = first; i <= last; i++) {
      const b = bounds[i];
      const lower = i > 0 ? bounds[i - 1] : 0;
      const label = b === Infinity ? `> ${this.formatBound(lower)}` : `≤ ${this.formatBound(b)}`;
      rows.push(
        h(
          'tr',
          {},
          h('th', { scope: 'row', text: label }),
          columns.map((c, ci) => {
            const bar = h('span', { class: `hbar hbar-${ci}` });
            bar.style.width = `${(c.counts[i] / max) * 100}%`;
            return h('td', {}, h('div', { class: 'hbar-cell' }, bar, h('span', { class: 'hbar-n', text: c.counts[i].toLocaleString('en-US') })));
          }),
        ),
      );
    }
    const table = h(
      'table',
      { class: 'histogram-table' },
      h('thead', {}, h('tr', {}, h('th', { scope: 'col', text: 'bucket' }), columns.map((c) => h('th', { scope: 'col', text: c.label })))),
      h('tbody', {}, rows),
    );
    this.body.replaceChildren(table);
  }

  destroy() {}
}

/** A live one-line summary next to a chart ("p50 12 ms · p99 40 ms"). */
export function summaryLine(parent) {
  const el = h('p', { class: 'chart-summary', 'aria-live': 'off' });
  parent.append(el);
  return { el, set: (text) => setText(el, text) };
}
