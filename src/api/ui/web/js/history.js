// The scrapes of /metrics this tab has seen, and the series the charts draw from them: gauges as
// they were, counters as per-second rates, histograms as quantiles over a sliding window. Pure (no
// DOM), so node's tests exercise it directly.
//
// Counters: a series absent from the previous scrape counts from 0 (it appeared in between: a model
// was loaded); a value that went down counts from 0 too (a reload restarted it).
import { histogramQuantile, labelKey, labelsMatch } from './prom.js';

export class History {
  constructor({ spanMs = 15 * 60 * 1000, maxScrapes = 3600 } = {}) {
    this.spanMs = spanMs;
    this.maxScrapes = maxScrapes;
    this.scrapes = []; // {t (ms), types, byName: Map<name, [{labels, key, value}]>}
  }

  /** Adds one parsed scrape (parsePrometheus) taken at `t` (ms since the epoch). */
  push(t, parsed) {
    const byName = new Map();
    for (const s of parsed.samples) {
      let list = byName.get(s.name);
      if (!list) byName.set(s.name, (list = []));
      list.push({ labels: s.labels, key: labelKey(s.labels), value: s.value });
    }
    this.scrapes.push({ t, types: parsed.types, byName });
    while (this.scrapes.length > this.maxScrapes || (this.scrapes.length > 2 && t - this.scrapes[0].t > this.spanMs)) this.scrapes.shift();
  }

  get size() {
    return this.scrapes.length;
  }

  get latest() {
    return this.scrapes[this.scrapes.length - 1];
  }

  /** The scrape times in seconds (uPlot's x axis). */
  times() {
    return this.scrapes.map((s) => s.t / 1000);
  }

  /** Whether the latest scrape has any sample named `name` (matching `match`). */
  has(name, match = {}) {
    return this.select(this.latest, name, match).length > 0;
  }

  /** Family names in the latest scrape that satisfy `test` (a RegExp). */
  names(test) {
    return this.latest ? [...this.latest.byName.keys()].filter((n) => test.test(n)) : [];
  }

  select(scrape, name, match = {}) {
    const list = scrape?.byName.get(name);
    return list ? list.filter((s) => labelsMatch(s.labels, match)) : [];
  }

  /** Distinct values of label `by` over the whole history of `name`. */
  labelValues(name, by, match = {}) {
    const seen = new Set();
    for (const sc of this.scrapes) for (const s of this.select(sc, name, match)) seen.add(s.labels[by] ?? '');
    return [...seen].sort();
  }

  /** Sum of the latest samples of `name` matching `match` (grouped by label `by` when given). */
  latestSum(name, match = {}, by = null) {
    return groupSum(this.select(this.latest, name, match), by);
  }

  /**
   * A gauge over time: {groups: [...], values: Map<group, (number|null)[]>} aligned with times(); a
   * scrape without the series is null (a gap). Without `by`, the one group is ''.
   */
  gaugeSeries(name, { match = {}, by = null } = {}) {
    const groups = by ? this.labelValues(name, by, match) : [''];
    const values = new Map(groups.map((g) => [g, []]));
    for (const sc of this.scrapes) {
      const sums = groupSum(this.select(sc, name, match), by);
      for (const g of groups) values.get(g).push(sums.has(g) ? sums.get(g) : null);
    }
    return { groups, values };
  }

  /** A counter as a per-second rate between successive scrapes; the first point is null. */
  rateSeries(name, { match = {}, by = null } = {}) {
    const groups = by ? this.labelValues(name, by, match) : [''];
    const values = new Map(groups.map((g) => [g, [null]]));
    for (let i = 1; i < this.scrapes.length; i++) {
      const dt = (this.scrapes[i].t - this.scrapes[i - 1].t) / 1000;
      const inc = this.increaseBetween(i - 1, i, name, match, by);
      for (const g of groups) values.get(g).push(dt > 0 ? (inc.get(g) ?? 0) / dt : null);
    }
    if (this.scrapes.length === 0) for (const g of groups) values.set(g, []);
    return { groups, values };
  }

  /** How much counter `name` grew over the last `windowMs` (Map by group; '' without `by`). */
  increase(name, { match = {}, by = null, windowMs = 5 * 60 * 1000 } = {}) {
    if (this.scrapes.length < 2) return new Map();
    const last = this.scrapes.length - 1;
    return this.increaseBetween(this.indexBefore(this.scrapes[last].t - windowMs), last, name, match, by);
  }

  /**
   * Quantiles of histogram `name` (summed over matching series) over a window ending at each scrape:
   * Map<q, (seconds|null)[]>; null where the window saw no observation.
   */
  quantileSeries(name, qs, { match = {}, windowMs = 15_000 } = {}) {
    const out = new Map(qs.map((q) => [q, []]));
    let j = 0;
    for (let i = 0; i < this.scrapes.length; i++) {
      const cur = this.scrapes[i];
      while (j + 1 < i && this.scrapes[j + 1].t <= cur.t - windowMs) j++;
      const buckets = i === 0 ? [] : this.bucketIncrease(j, i, name, match);
      for (const q of qs) out.get(q).push(i === 0 ? null : histogramQuantile(q, buckets));
    }
    return out;
  }

  /** Quantile `q` of histogram `name` over the last `windowMs`; null when it saw no observation. */
  recentQuantile(name, q, { match = {}, windowMs = 5 * 60 * 1000 } = {}) {
    if (this.scrapes.length < 2) return null;
    const last = this.scrapes.length - 1;
    return histogramQuantile(q, this.bucketIncrease(this.indexBefore(this.scrapes[last].t - windowMs), last, name, match));
  }

  /** The latest cumulative buckets of histogram `name`, summed over matching series: [{le, count}]. */
  buckets(name, match = {}) {
    const byLe = new Map();
    for (const s of this.select(this.latest, `${name}_bucket`, match)) {
      const le = s.labels.le === '+Inf' ? Infinity : Number(s.labels.le);
      byLe.set(le, (byLe.get(le) ?? 0) + s.value);
    }
    return [...byLe].map(([le, count]) => ({ le, count })).sort((a, b) => a.le - b.le);
  }

  // ---- internals -------------------------------------------------------------------------------

  // The index of the newest scrape at or before `t`, else 0.
  indexBefore(t) {
    let best = 0;
    for (let i = 0; i < this.scrapes.length && this.scrapes[i].t <= t; i++) best = i;
    return best;
  }

  // Counter growth from scrape index `from` to `to`, walking every scrape in between so a reset or
  // a series that came and went is counted as Prometheus' increase() would.
  increaseBetween(from, to, name, match, by) {
    const out = new Map();
    for (let i = from; i < to; i++) {
      const prev = new Map(this.select(this.scrapes[i], name, match).map((s) => [s.key, s.value]));
      for (const s of this.select(this.scrapes[i + 1], name, match)) {
        const before = prev.get(s.key) ?? 0;
        const d = s.value >= before ? s.value - before : s.value;
        const g = by ? (s.labels[by] ?? '') : '';
        out.set(g, (out.get(g) ?? 0) + d);
      }
    }
    return out;
  }

  bucketIncrease(from, to, name, match) {
    const inc = this.increaseBetween(from, to, `${name}_bucket`, match, 'le');
    return [...inc].map(([le, count]) => ({ le: le === '+Inf' ? Infinity : Number(le), count }));
  }
}

function groupSum(samples, by) {
  const out = new Map();
  for (const s of samples) {
    const g = by ? (s.labels[by] ?? '') : '';
    out.set(g, (out.get(g) ?? 0) + s.value);
  }
  return out;
}
