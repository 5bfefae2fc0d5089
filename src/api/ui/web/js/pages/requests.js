// Requests: time to first token and inter-token latency percentiles over time, queue depth and
// running sequences, throughput, requests by status, errors by route, finished requests by reason.
// All from /metrics.
import { TimeChart, colors } from '../charts.js';
import { chipPicker, dataTable, h, section, setText, statCard } from '../dom.js';
import { formatCompact, formatNumber, formatSeconds } from '../format.js';

const WINDOW_MS = 5 * 60 * 1000;
const QUANTILE_WINDOW_MS = 15_000;
const QUANTILES = [
  { q: 0.5, label: 'p50', color: colors.blue },
  { q: 0.9, label: 'p90', color: colors.amber },
  { q: 0.99, label: 'p99', color: colors.red },
];
// The routes the console itself polls: its own requests are not traffic worth charting.
const MONITORING = /^(\/metrics|\/v1\/metrics|\/ui|\/ui\/\*|\/v1\/console\/.*|\/api\/ps|\/api\/tags|\/api\/show)$/;
const REASONS = ['stop', 'length', 'cancelled', 'error'];

let selected = ''; // '' = all models

export default {
  title: 'Requests',
  needs: [],
  mount(root, ctx) {
    const picker = chipPicker('Model', (m) => {
      selected = m;
      self.update(ctx);
    });
    const cards = h('div', { class: 'cards' });
    const running = statCard('Running');
    const queued = statCard('Queued');
    const ttft = statCard('Time to first token · 5 min');
    const itl = statCard('Inter-token latency · 5 min');
    const errors = statCard('Errors · 5 min');
    cards.append(running.el, queued.el, ttft.el, itl.el, errors.el);

    const grid = h('div', { class: 'chart-grid' });
    const percentiles = (id, title, empty) =>
      new TimeChart(grid, { id, title, unit: `percentiles over ${QUANTILE_WINDOW_MS / 1000} s`, series: QUANTILES, format: formatSeconds, empty });
    const ttftChart = percentiles('req-ttft', 'Time to first token', 'No generation yet');
    const itlChart = percentiles('req-itl', 'Inter-token latency', 'No streamed tokens yet');
    const queueChart = new TimeChart(grid, {
      id: 'req-queue',
      title: 'Queue depth and running sequences',
      unit: 'sequences',
      series: [
        { label: 'running', color: colors.teal },
        { label: 'queued', color: colors.violet },
      ],
      format: formatCompact,
      empty: 'Nothing running or queued',
    });
    const tokenChart = new TimeChart(grid, {
      id: 'req-tokens',
      title: 'Throughput',
      unit: 'tokens/s (finished requests)',
      series: [
        { label: 'generated', color: colors.blue },
        { label: 'prompt', color: colors.gray },
      ],
      format: formatCompact,
      empty: 'No finished request yet',
    });
    const statusChart = new TimeChart(grid, {
      id: 'req-status',
      title: 'Requests by status',
      unit: 'per second, all models, without the routes this console polls',
      series: [
        { label: '2xx', color: colors.green },
        { label: '4xx', color: colors.amber },
        { label: '5xx', color: colors.red },
      ],
      format: formatCompact,
      empty: 'No API request yet',
    });

    const errorTable = dataTable({
      caption: 'Errors by route and status',
      id: 'req-errors',
      empty: 'No request has failed.',
      columns: [
        { label: 'Route', render: (r) => h('code', { text: r.route }) },
        { label: 'Method', render: (r) => r.method },
        { label: 'Status', numeric: true, render: (r) => h('span', { class: `badge ${r.status >= 500 ? 'bad' : 'warn'}`, text: r.status }) },
        { label: 'Total', numeric: true, render: (r) => formatNumber(r.total) },
        { label: '5 min', numeric: true, render: (r) => formatNumber(r.recent) },
      ],
    });
    const finishedTable = dataTable({
      caption: 'Finished requests by reason',
      id: 'req-finished',
      empty: 'No request has finished yet.',
      columns: [
        { label: 'Model', render: (r) => h('strong', { text: r.model }) },
        ...REASONS.map((reason) => ({ label: reason, numeric: true, render: (r) => formatNumber(r[reason] ?? 0) })),
      ],
    });

    root.append(
      h('div', { class: 'page-head' }, h('h1', { class: 'page-title', text: 'Requests' }), picker.el),
      cards,
      section('Over time', grid),
      h('div', { class: 'two-col' }, section('Errors', errorTable.el), section('Finished requests', finishedTable.el)),
    );

    const self = {
      update(c) {
        const hist = c.history;
        const models = hist.labelValues('rustycage_time_to_first_token_seconds_count', 'model');
        if (selected && !models.includes(selected)) selected = '';
        picker.update(models.length > 1 ? [{ value: '', label: 'All models' }, ...models.map((x) => ({ value: x, label: x }))] : [], selected);
        const m = selected ? { model: selected } : {};
        const one = (name) => hist.latestSum(name, m).get('') ?? 0;
        setText(running.value, formatNumber(one('rustycage_running_sequences')));
        setText(running.sub, 'sequences prefilling or decoding');
        setText(queued.value, formatNumber(one('rustycage_queue_depth')));
        setText(queued.sub, 'waiting for a sequence');
        for (const [card, name] of [[ttft, 'rustycage_time_to_first_token_seconds'], [itl, 'rustycage_inter_token_latency_seconds']]) {
          const p50 = hist.recentQuantile(name, 0.5, { match: m, windowMs: WINDOW_MS });
          const p99 = hist.recentQuantile(name, 0.99, { match: m, windowMs: WINDOW_MS });
          setText(card.value, p50 === null ? '—' : `p50 ${formatSeconds(p50)}`);
          setText(card.sub, p99 === null ? 'no observations' : `p99 ${formatSeconds(p99)}`);
        }
        const byStatus = hist.increase('rustycage_requests_total', { match: { route: (r) => !MONITORING.test(r) }, by: 'status', windowMs: WINDOW_MS });
        let e4 = 0;
        let e5 = 0;
        for (const [s, n] of byStatus) {
          if (Number(s) >= 500) e5 += n;
          else if (Number(s) >= 400) e4 += n;
        }
        setText(errors.value, formatNumber(e4 + e5));
        setText(errors.sub, `4xx ${formatNumber(e4)} · 5xx ${formatNumber(e5)}`);

        const times = hist.times();
        const q = (name) => {
          const s = hist.quantileSeries(name, QUANTILES.map((x) => x.q), { match: m, windowMs: QUANTILE_WINDOW_MS });
          return QUANTILES.map((x) => s.get(x.q));
        };
        ttftChart.update(times, q('rustycage_time_to_first_token_seconds'));
        itlChart.update(times, q('rustycage_inter_token_latency_seconds'));
        const gauge = (name) => hist.gaugeSeries(name, { match: m }).values.get('');
        queueChart.update(times, [gauge('rustycage_running_sequences'), gauge('rustycage_queue_depth')]);
        const rate = (name, match = m) => hist.rateSeries(name, { match }).values.get('');
        tokenChart.update(times, [rate('rustycage_generated_tokens_total'), rate('rustycage_prompt_tokens_total')]);
        const cls = (re) => rate('rustycage_requests_total', { route: (r) => !MONITORING.test(r), status: re });
        statusChart.update(times, [cls(/^2/), cls(/^4/), cls(/^5/)]);

        const errRows = hist
          .select(hist.latest, 'rustycage_requests_total', { status: /^[45]/ })
          .map((s) => ({
            ...s.labels,
            status: Number(s.labels.status),
            total: s.value,
            recent: hist.increase('rustycage_requests_total', { match: s.labels, windowMs: WINDOW_MS }).get('') ?? 0,
          }))
          .sort((a, b) => b.recent - a.recent || b.total - a.total);
        errorTable.update(errRows);
        const fin = new Map();
        for (const s of hist.select(hist.latest, 'rustycage_requests_finished_total', m)) {
          const row = fin.get(s.labels.model) ?? { model: s.labels.model };
          row[s.labels.reason] = (row[s.labels.reason] ?? 0) + s.value;
          fin.set(s.labels.model, row);
        }
        finishedTable.update([...fin.values()].sort((a, b) => a.model.localeCompare(b.model)));
      },
      unmount() {
        for (const ch of [ttftChart, itlChart, queueChart, tokenChart, statusChart]) ch.destroy();
      },
    };
    return self;
  },
};
