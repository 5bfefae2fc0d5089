// Numbers for people: bytes in binary units, durations, rates, relative times. Pure. Every formatter
// answers '—' for a value it cannot show (null, undefined, NaN).

const DASH = '—';
const ok = (v) => typeof v === 'number' && Number.isFinite(v);

export function formatBytes(n) {
  if (!ok(n)) return DASH;
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let u = 0;
  while (Math.abs(v) >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${Math.round(v)} B` : `${v.toFixed(v >= 100 ? 0 : 1)} ${units[u]}`;
}

export function formatNumber(n, digits = 0) {
  if (!ok(n)) return DASH;
  return n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: 0 });
}

/** Three significant digits at most: 0.0123 → "0.0123", 12.34 → "12.3", 1234 → "1,234". */
export function formatCompact(n) {
  if (!ok(n)) return DASH;
  const a = Math.abs(n);
  if (a === 0) return '0';
  if (a >= 100) return formatNumber(n, 0);
  if (a >= 10) return formatNumber(n, 1);
  if (a >= 1) return formatNumber(n, 2);
  return Number(n.toPrecision(2)).toString();
}

export function formatPercent(fraction) {
  if (!ok(fraction)) return DASH;
  if (fraction > 0 && fraction < 0.001) return '< 0.1 %';
  return `${(fraction * 100).toFixed(fraction >= 0.1 || fraction === 0 ? 0 : 1)} %`;
}

/** Seconds → "850 µs", "12 ms", "1.25 s", "2 min 5 s". */
export function formatSeconds(s) {
  if (!ok(s)) return DASH;
  const a = Math.abs(s);
  if (a === 0) return '0 s';
  if (a < 1e-3) return `${Math.round(s * 1e6)} µs`;
  if (a < 1) return `${formatCompact(s * 1e3)} ms`;
  if (a < 60) return `${formatCompact(s)} s`;
  return formatDuration(s);
}

/** A long span: "45 s", "12 min", "3 h 4 min", "2 d 5 h". */
export function formatDuration(s) {
  if (!ok(s)) return DASH;
  const t = Math.max(0, Math.round(s));
  if (t < 60) return `${t} s`;
  const m = Math.floor(t / 60);
  if (m < 60) return t % 60 && m < 10 ? `${m} min ${t % 60} s` : `${m} min`;
  const h = Math.floor(m / 60);
  if (h < 24) return m % 60 ? `${h} h ${m % 60} min` : `${h} h`;
  const d = Math.floor(h / 24);
  return h % 24 ? `${d} d ${h % 24} h` : `${d} d`;
}

/** A time relative to `now` (both Date or ms): "12 s ago", "in 4 min", "now". */
export function formatRelative(when, now = Date.now()) {
  const t = when instanceof Date ? when.getTime() : when;
  if (!ok(t)) return DASH;
  const d = (t - (now instanceof Date ? now.getTime() : now)) / 1000;
  if (Math.abs(d) < 1) return 'now';
  return d < 0 ? `${formatDuration(-d)} ago` : `in ${formatDuration(d)}`;
}

/** An RFC 3339 string → ms since the epoch, or NaN. */
export function parseTime(text) {
  return typeof text === 'string' ? Date.parse(text) : NaN;
}

export function formatClock(ms) {
  if (!ok(ms)) return DASH;
  return new Date(ms).toLocaleTimeString('en-GB', { hour12: false });
}

export function formatDateTime(ms) {
  if (!ok(ms)) return DASH;
  const d = new Date(ms);
  const pad = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/** Ollama's "demo:latest" and the metrics' "demo" are the same model. */
export function modelKey(name) {
  return typeof name === 'string' ? name.replace(/:latest$/, '') : '';
}
