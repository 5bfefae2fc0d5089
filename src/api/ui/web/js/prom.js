// Prometheus text exposition (format 0.0.4) → samples. Pure: the console parses the server's public
// /metrics in the browser and keeps the history itself (README.md: why not a JSON route).

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?[ \t]+(\S+)(?:[ \t]+\S+)?$/;

function parseValue(text) {
  if (text === '+Inf' || text === 'Inf') return Infinity;
  if (text === '-Inf') return -Infinity;
  if (text === 'NaN') return NaN;
  const v = Number(text);
  return Number.isNaN(v) ? undefined : v;
}

// `a="x",b="y\"z"` → {a: 'x', b: 'y"z'}; null when malformed.
function parseLabels(text) {
  const labels = {};
  let i = 0;
  while (i < text.length) {
    while (text[i] === ' ' || text[i] === ',') i++;
    if (i >= text.length) break;
    const eq = text.indexOf('=', i);
    if (eq < 0 || text[eq + 1] !== '"') return null;
    const name = text.slice(i, eq).trim();
    let value = '';
    let j = eq + 2;
    for (; j < text.length && text[j] !== '"'; j++) {
      if (text[j] === '\\' && j + 1 < text.length) {
        j++;
        value += text[j] === 'n' ? '\n' : text[j];
      } else {
        value += text[j];
      }
    }
    if (j >= text.length) return null;
    labels[name] = value;
    i = j + 1;
  }
  return labels;
}

/**
 * Parses exposition text. Returns {types: Map<family, type>, samples: [{name, labels, value}]};
 * malformed lines are skipped (a scrape is best effort, the next one comes in seconds).
 */
export function parsePrometheus(text) {
  const types = new Map();
  const samples = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line) continue;
    if (line.startsWith('#')) {
      const m = /^#\s*TYPE\s+(\S+)\s+(\S+)/.exec(line);
      if (m) types.set(m[1], m[2]);
      continue;
    }
    const m = SAMPLE.exec(line);
    if (!m) continue;
    const labels = m[3] ? parseLabels(m[3]) : {};
    const value = parseValue(m[4]);
    if (!labels || value === undefined) continue;
    samples.push({ name: m[1], labels, value });
  }
  return { types, samples };
}

/** A stable key for a label set (sorted by name), for matching a series across scrapes. */
export function labelKey(labels, omit = '') {
  return Object.keys(labels)
    .filter((k) => k !== omit)
    .sort()
    .map((k) => `${k}=${JSON.stringify(labels[k])}`)
    .join(',');
}

/**
 * Does `labels` satisfy `match`? Each entry of `match` is a value (equal), an array (one of), a
 * RegExp (tests the value) or a function (called with the value); a missing label is ''.
 */
export function labelsMatch(labels, match = {}) {
  for (const [k, want] of Object.entries(match)) {
    const v = labels[k] ?? '';
    if (want instanceof RegExp) {
      if (!want.test(v)) return false;
    } else if (typeof want === 'function') {
      if (!want(v)) return false;
    } else if (Array.isArray(want)) {
      if (!want.includes(v)) return false;
    } else if (v !== want) {
      return false;
    }
  }
  return true;
}

/**
 * histogram_quantile over cumulative buckets [{le, count}] (any order; le may be Infinity), as
 * Prometheus computes it: linear within the bucket holding the rank; the +Inf bucket answers its
 * lower bound. null when the histogram is empty.
 */
export function histogramQuantile(q, buckets) {
  const b = [...buckets].sort((x, y) => x.le - y.le);
  if (b.length === 0) return null;
  const total = b[b.length - 1].count;
  if (!(total > 0)) return null;
  const rank = q * total;
  let prevLe = 0;
  let prevCount = 0;
  for (const { le, count } of b) {
    if (count >= rank) {
      if (le === Infinity) return prevLe;
      if (count === prevCount) return le;
      return prevLe + ((le - prevLe) * (rank - prevCount)) / (count - prevCount);
    }
    prevLe = le;
    prevCount = count;
  }
  return prevLe;
}
