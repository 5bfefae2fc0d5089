// KV: per model, where its KV lives (context cells, host RAM, disk against their budgets), where
// prompt tokens came from over time, the hit rate, promotion latency, block moves, evictions and
// preemptions. Everything but the idle-conversation count comes from /metrics, so the page works
// without an API key too.
import { HistogramTable, TimeChart, colors } from '../charts.js';
import { chipPicker, dataTable, h, meter, section, setText, statCard } from '../dom.js';
import { formatBytes, formatCompact, formatNumber, formatPercent, formatSeconds } from '../format.js';

const SOURCES = [
  { id: 'computed', label: 'computed', color: colors.gray },
  { id: 'context', label: 'context (T0)', color: colors.blue },
  { id: 'host', label: 'host RAM (T1)', color: colors.teal },
  { id: 'disk', label: 'disk (T2)', color: colors.amber },
];
const TIERS = ['context', 'host', 'disk'];
const WINDOW_MS = 5 * 60 * 1000;
const PREEMPTIONS = /^rustycage_.*preempt.*_total$/;

let selected = ''; // the model shown, kept across page switches

const plural = (n, word) => `${formatNumber(n)} ${word}${n === 1 ? '' : 's'}`;

function kvModels(ctx) {
  const fromMetrics = ctx.history.labelValues('rustycage_kv_prompt_tokens_total', 'model');
  const loaded = ctx.loadedModels().filter((m) => m.kv_tiers).map((m) => m.key);
  return [...new Set([...loaded, ...fromMetrics])].sort();
}

export default {
  title: 'KV',
  needs: ['ps'],
  mount(root, ctx) {
    const picker = chipPicker('Model', (m) => {
      selected = m;
      page.update(ctx);
    });
    const empty = h('div', { class: 'empty-state', role: 'status', hidden: true },
      h('h2', { text: 'No KV cache to show yet' }),
      h('p', { text: 'A chat model keeps its KV here once it has served a request. Send one (the Chat page will do) and this page fills in.' }));
    const body = h('div', { class: 'kv-body' });

    const tierCards = h('div', { class: 'cards cards-3' });
    const ctxCard = statCard('Context (T0)');
    const ctxMeter = meter('Context cells');
    ctxCard.el.append(ctxMeter.el);
    const hostCard = statCard('Host RAM (T1)');
    const hostMeter = meter('Host RAM tier');
    hostCard.el.append(hostMeter.el);
    const diskCard = statCard('Disk (T2)');
    const diskMeter = meter('Disk tier');
    diskCard.el.append(diskMeter.el);
    tierCards.append(ctxCard.el, hostCard.el, diskCard.el);

    const rateCards = h('div', { class: 'cards' });
    const hit = statCard('Hit rate · 5 min');
    const tokens = statCard('Prompt tokens · 5 min');
    const evict = statCard('Evictions · 5 min');
    const preempt = statCard('Preemptions · 5 min');
    rateCards.append(hit.el, tokens.el, evict.el, preempt.el);

    const charts = h('div', { class: 'chart-grid' });
    const sources = new TimeChart(charts, {
      id: 'kv-prompt-sources',
      title: 'Prompt tokens by source',
      unit: 'tokens/s, stacked',
      series: SOURCES,
      stacked: true,
      format: formatCompact,
      empty: 'No prompt tokens yet',
    });
    const evictions = new TimeChart(charts, {
      id: 'kv-evictions',
      title: 'Evictions and preemptions',
      unit: 'per second',
      series: [
        { label: 'context evictions', color: colors.blue },
        { label: 'host evictions', color: colors.teal },
        { label: 'disk evictions', color: colors.amber },
        { label: 'preemptions', color: colors.red },
      ],
      format: formatCompact,
      empty: 'No evictions or preemptions',
    });
    const latency = new HistogramTable(charts, {
      id: 'kv-promotion-latency',
      title: 'Promotion latency per block',
      unit: 'since the server started',
      formatBound: formatSeconds,
      empty: 'No block has been promoted from host RAM or disk yet',
    });
    const moves = dataTable({
      caption: 'Block moves between tiers',
      id: 'kv-moves',
      empty: 'No block has moved between tiers yet',
      columns: [
        { label: 'From → to', render: (r) => `${r.from} → ${r.to}` },
        { label: 'Blocks', numeric: true, render: (r) => formatNumber(r.blocks) },
        { label: 'Bytes', numeric: true, render: (r) => formatBytes(r.bytes) },
        { label: 'Bytes · 5 min', numeric: true, render: (r) => formatBytes(r.recent) },
      ],
    });
    const movesCard = h('section', { class: 'card' }, h('h3', { text: 'Block moves' }), moves.el);
    charts.append(movesCard);

    body.append(section('Tiers', tierCards), section('Reuse', rateCards), section('Over time', charts));
    root.append(h('div', { class: 'page-head' }, h('h1', { class: 'page-title', text: 'KV cache' }), picker.el), empty, body);

    const page = {
      update(c) {
        const models = kvModels(c);
        if (!models.includes(selected)) selected = models[0] ?? '';
        picker.update(models.map((x) => ({ value: x, label: x })), selected);
        empty.hidden = Boolean(selected);
        body.hidden = !selected;
        if (!selected) return;
        const m = { model: selected };
        const hist = c.history;
        const latest = (name, labels = {}) => hist.latestSum(name, { ...m, ...labels }).get('');

        // Tiers.
        const used = latest('rustycage_kv_cells_used') ?? 0;
        const cached = latest('rustycage_kv_cells_cached') ?? 0;
        const cap = latest('rustycage_kv_cells_capacity') ?? 0;
        const loadedModel = c.loadedModels().find((x) => x.key === selected);
        const ps = loadedModel?.kv_tiers;
        const fit = loadedModel?.fit;
        const fitted = fit && fit.context_cells < fit.cells_wanted ? ` · pool fitted to device memory (${formatNumber(fit.cells_wanted)} wanted)` : '';
        setText(ctxCard.value, cap ? `${formatNumber(used + cached)} of ${formatNumber(cap)} cells` : 'not loaded');
        setText(ctxCard.sub, cap ? `${formatNumber(used)} running · ${formatNumber(cached)} idle${ps ? ` in ${plural(ps.context?.idle_conversations ?? 0, 'conversation')}` : ''}${fitted}` : '\u00a0');
        ctxMeter.update(cap ? [
          { fraction: used / cap, className: 'used', label: `${formatNumber(used)} cells running` },
          { fraction: cached / cap, className: 'cached', label: `${formatNumber(cached)} cells idle` },
        ] : []);
        for (const [tier, card, bar] of [['host', hostCard, hostMeter], ['disk', diskCard, diskMeter]]) {
          const bytes = latest('rustycage_kv_tier_bytes', { tier });
          const budget = latest('rustycage_kv_tier_budget_bytes', { tier });
          const blocks = latest('rustycage_kv_tier_blocks', { tier });
          if (!budget) {
            setText(card.value, bytes === undefined ? '—' : 'off');
            setText(card.sub, tier === 'disk' ? 'start with --kv-disk-dir to keep KV across restarts' : '--kv-host-budget 0');
            bar.update([]);
            continue;
          }
          setText(card.value, `${formatBytes(bytes)} of ${formatBytes(budget)}`);
          setText(card.sub, `${formatNumber(blocks)} blocks · ${formatPercent(bytes / budget)} full`);
          bar.update([{ fraction: bytes / budget, className: bytes / budget > 0.9 ? 'warn' : 'used', label: `${formatBytes(bytes)} held` }]);
        }

        // Reuse over the window and since start.
        const inc = hist.increase('rustycage_kv_prompt_tokens_total', { match: m, by: 'source', windowMs: WINDOW_MS });
        const total = [...inc.values()].reduce((a, b) => a + b, 0);
        const reused = total - (inc.get('computed') ?? 0);
        const all = hist.latestSum('rustycage_kv_prompt_tokens_total', m, 'source');
        const allTotal = [...all.values()].reduce((a, b) => a + b, 0);
        const allReused = allTotal - (all.get('computed') ?? 0);
        setText(hit.value, total > 0 ? formatPercent(reused / total) : '—');
        setText(hit.sub, allTotal > 0 ? `${formatPercent(allReused / allTotal)} since start` : 'no prompts yet');
        setText(tokens.value, formatNumber(total));
        setText(tokens.sub, total > 0 ? SOURCES.filter((s) => inc.get(s.id)).map((s) => `${s.id} ${formatNumber(inc.get(s.id))}`).join(' · ') : '\u00a0');
        const ev = hist.increase('rustycage_kv_evictions_total', { match: m, by: 'tier', windowMs: WINDOW_MS });
        setText(evict.value, formatNumber([...ev.values()].reduce((a, b) => a + b, 0)));
        const corrupt = latest('rustycage_kv_corrupt_blocks_total') ?? 0;
        setText(evict.sub, `${TIERS.map((t) => `${t} ${formatNumber(ev.get(t) ?? 0)}`).join(' · ')}${corrupt ? ` · ${formatNumber(corrupt)} corrupt blocks dropped` : ''}`);
        const preemptNames = hist.names(PREEMPTIONS);
        if (preemptNames.length) {
          const n = preemptNames.reduce((sum, name) => sum + (hist.increase(name, { match: m, windowMs: WINDOW_MS }).get('') ?? 0), 0);
          setText(preempt.value, formatNumber(n));
          setText(preempt.sub, 'running sequences paused for cells');
        } else {
          setText(preempt.value, '—');
          setText(preempt.sub, 'not reported by this server');
        }

        // Charts.
        const times = hist.times();
        const rates = hist.rateSeries('rustycage_kv_prompt_tokens_total', { match: m, by: 'source' });
        sources.update(times, SOURCES.map((s) => rates.values.get(s.id) ?? times.map(() => null)));
        const evr = hist.rateSeries('rustycage_kv_evictions_total', { match: m, by: 'tier' });
        const pre = preemptNames.map((name) => hist.rateSeries(name, { match: m }).values.get(''));
        const preSum = times.map((_, i) => (pre.length ? pre.reduce((s, a) => (a[i] === null ? s : (s ?? 0) + a[i]), null) : null));
        evictions.update(times, [...TIERS.map((t) => evr.values.get(t) ?? times.map(() => null)), preSum]);

        const perBucket = (source) => {
          const b = hist.buckets('rustycage_kv_promotion_seconds', { ...m, source });
          return { bounds: b.map((x) => x.le), counts: b.map((x, i) => x.count - (i ? b[i - 1].count : 0)) };
        };
        const hostB = perBucket('host');
        const diskB = perBucket('disk');
        const bounds = hostB.bounds.length ? hostB.bounds : diskB.bounds;
        latency.update(bounds, [
          { label: 'from host RAM', counts: hostB.counts.length ? hostB.counts : bounds.map(() => 0) },
          { label: 'from disk', counts: diskB.counts.length ? diskB.counts : bounds.map(() => 0) },
        ]);

        const rows = [];
        for (const s of hist.select(hist.latest, 'rustycage_kv_block_moves_total', m)) {
          const pair = { from: s.labels.from, to: s.labels.to };
          const bytes = hist.latestSum('rustycage_kv_block_move_bytes_total', { ...m, ...pair }).get('') ?? 0;
          const recent = hist.increase('rustycage_kv_block_move_bytes_total', { match: { ...m, ...pair }, windowMs: WINDOW_MS }).get('') ?? 0;
          if (s.value > 0) rows.push({ ...pair, blocks: s.value, bytes, recent });
        }
        moves.update(rows);
      },
      unmount() {
        sources.destroy();
        evictions.destroy();
      },
    };
    return page;
  },
};
