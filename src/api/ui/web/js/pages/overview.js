// Overview: version, uptime, memory budget, loaded and available models, the serving settings.
import { badge, dataTable, h, meter, section, setText, statCard } from '../dom.js';
import { formatBytes, formatCompact, formatDateTime, formatDuration, formatNumber, formatPercent, formatRelative, modelKey, parseTime } from '../format.js';

export default {
  title: 'Overview',
  needs: ['server', 'ps', 'tags'],
  mount(root) {
    const cards = h('div', { class: 'cards' });
    const version = statCard('Version');
    const uptime = statCard('Uptime');
    const memory = statCard('Memory for models');
    const memMeter = meter('Memory for models');
    memory.el.append(memMeter.el);
    const models = statCard('Models');
    const traffic = statCard('In flight');
    cards.append(version.el, uptime.el, memory.el, models.el, traffic.el);

    const loaded = dataTable({
      caption: 'Loaded models',
      id: 'loaded-models',
      empty: 'No model is loaded. A request naming a model loads it (so does serve --preload).',
      columns: [
        { label: 'Model', render: (m) => h('strong', { text: m.name }) },
        { label: 'Memory', numeric: true, title: 'Weights, KV cache and buffers (llama.cpp\'s measure when fitted to device memory, else the estimate the budget admitted it with)', render: (m) => formatBytes(m.size) },
        { label: 'On device', numeric: true, title: 'Layers on the device and the bytes they, the context pool and compute buffers hold there, as fitted at load', render: onDevice },
        { label: 'Context cells', numeric: true, title: 'Used by running sequences + held by idle conversations, of the context', render: contextCells },
        { label: 'Running', numeric: true, render: (m) => formatNumber(m.running) },
        { label: 'Queued', numeric: true, render: (m) => formatNumber(m.queued) },
        { label: 'Loaded', render: (m) => formatRelative(parseTime(m.facts?.loaded_at)) },
        { label: 'Held by', numeric: true, title: 'Requests holding the model now (a held model is never unloaded)', render: (m) => (m.facts ? formatNumber(m.facts.leases) : '–') },
        { label: 'Unloads', title: 'When its keep_alive runs out while idle', render: unloadsIn },
      ],
    });
    const available = dataTable({
      caption: 'Available models',
      id: 'available-models',
      empty: 'No servable model in the models directory. Pull one (rustycage pull …) or put a GGUF file there.',
      columns: [
        { label: 'Model', render: (m) => h('span', {}, h('strong', { text: m.name }), m.loaded ? [' ', badge('loaded', 'ok')] : null) },
        { label: 'Family', render: (m) => m.details?.family || '—' },
        { label: 'Parameters', render: (m) => m.details?.parameter_size || '—' },
        { label: 'Quantization', render: (m) => m.details?.quantization_level || '—' },
        { label: 'File size', numeric: true, render: (m) => formatBytes(m.size) },
        { label: 'Modified', render: (m) => formatDateTime(parseTime(m.modified_at)) },
      ],
    });
    const settings = h('dl', { class: 'settings', id: 'settings' });
    const settingsNote = h('p', { class: 'muted' });

    root.append(
      h('h1', { class: 'page-title', text: 'Overview' }),
      cards,
      section('Loaded models', loaded.el),
      section('Available models', available.el),
      section('Settings', settingsNote, settings),
    );

    return {
      update(c) {
        const s = c.data.server;
        const hist = c.history;
        const build = hist.latest?.byName.get('rustycage_build_info')?.[0]?.labels;
        setText(version.value, s?.version ?? build?.version ?? '—');
        setText(version.sub, build || s ? `llama.cpp ${String(s?.llama_commit ?? build?.llama_commit).slice(0, 10)}` : '\u00a0');
        if (s) {
          const started = parseTime(s.started_at);
          const skew = Date.now() - parseTime(s.now); // the server's clock vs ours
          setText(uptime.value, formatDuration(s.uptime_seconds));
          setText(uptime.sub, `since ${formatDateTime(started + skew)}`);
          const used = s.memory.in_use_bytes;
          const budget = s.memory.budget_bytes;
          setText(memory.value, formatBytes(used));
          setText(memory.sub, budget ? `of ${formatBytes(budget)} budget (${formatPercent(used / budget)})` : 'no memory budget set');
          memMeter.update(budget ? [{ fraction: used / budget, className: used / budget > 0.9 ? 'warn' : 'used', label: `${formatBytes(used)} in use` }] : []);
        }
        const ps = c.loadedModels();
        const tags = c.data.tags?.models ?? [];
        const known = Boolean(c.data.ps && c.data.tags);
        setText(models.value, c.data.ps ? `${ps.length} loaded` : '—');
        setText(models.sub, c.data.tags ? `${tags.length} available` : '\u00a0');
        const running = sumLatest(hist, 'rustycage_running_sequences');
        const queued = sumLatest(hist, 'rustycage_queue_depth');
        const genRate = hist.rateSeries('rustycage_generated_tokens_total').values.get('')?.at(-1);
        setText(traffic.value, `${formatNumber(running)} running`);
        setText(traffic.sub, `${formatNumber(queued)} queued${genRate === undefined || genRate === null ? '' : ` · ${formatCompact(genRate)} tokens/s`}`);

        const facts = new Map((s?.models ?? []).map((m) => [modelKey(m.name), m]));
        const waiting = c.locked ? 'Enter the API key to see the models.' : 'Loading…';
        loaded.update(
          ps.map((m) => ({
            ...m,
            facts: facts.get(m.key),
            running: hist.latestSum('rustycage_running_sequences', { model: m.key }).get(''),
            queued: hist.latestSum('rustycage_queue_depth', { model: m.key }).get(''),
          })),
          known ? undefined : waiting,
        );
        const loadedKeys = new Set(ps.map((m) => m.key));
        available.update(tags.map((m) => ({ ...m, loaded: loadedKeys.has(modelKey(m.name)) })), known ? undefined : waiting);
        renderSettings(settings, settingsNote, c);
      },
      unmount() {},
    };
  },
};

function sumLatest(history, name) {
  return history.latestSum(name).get('') ?? 0;
}

function contextCells(m) {
  const t = m.kv_tiers?.context;
  if (!t) return '—';
  const fitted = m.fit && m.fit.context_cells < m.fit.cells_wanted ? ` (fitted from ${formatNumber(m.fit.cells_wanted)})` : '';
  return `${formatNumber(t.cells_used)} + ${formatNumber(t.cells_cached)} idle / ${formatNumber(t.cells_total)}${fitted}`;
}

function onDevice(m) {
  const f = m.fit;
  if (!f) return '—';
  return `${formatNumber(f.layers)}/${formatNumber(f.layers_total)} layers · ${formatBytes(f.device_bytes)}`;
}

function unloadsIn(m) {
  const t = parseTime(m.expires_at);
  if (!Number.isFinite(t) || new Date(t).getUTCFullYear() > 9000) return 'never';
  if (m.running > 0 || m.queued > 0) return 'busy';
  return formatRelative(t);
}

function renderSettings(dl, note, c) {
  const s = c.data.server;
  if (!s) {
    setText(note, c.locked ? 'Enter the API key to see the settings.' : c.errors.server ? `Could not read the settings: ${c.errors.server}` : 'Loading…');
    dl.replaceChildren();
    dl.hidden = true;
    dl.dataset.key = '';
    return;
  }
  setText(note, '');
  dl.hidden = false;
  const e = s.engine;
  const k = s.kv;
  const rows = [
    ['Context size', `${formatNumber(e.ctx_size)} cells per model (--ctx-size)`],
    ['Parallel sequences', `${formatNumber(e.parallel)} (--parallel)`],
    ['Queue limit', `${formatNumber(e.max_queue)} waiting requests per model (--max-queue)`],
    ['KV cell type', `${e.kv_type}${e.flash_attn === 'auto' ? ', flash attention on GPU layers' : e.flash_attn ? ', flash attention' : ''}`],
    ['KV block size', `${formatNumber(k.block_size)} tokens`],
    ['Idle conversations kept', `${formatNumber(k.cached_sequences)} per model (--kv-cached-sequences)`],
    ['Host RAM tier', k.host_budget_bytes > 0 ? `${formatBytes(k.host_budget_bytes)} budget per model` : 'off'],
    ['Disk tier', k.disk_dir ? `${formatBytes(k.disk_budget_bytes)} budget in ${k.disk_dir}${k.write_through ? ' (write-through)' : ''}` : 'off (--kv-disk-dir)'],
    ['Memory budget', s.memory.budget_bytes ? formatBytes(s.memory.budget_bytes) : 'none'],
    ['Device memory', s.device?.memory_bytes ? `${formatBytes(s.device.memory_bytes)} (--device-memory), ${formatBytes(s.device.in_use_bytes)} fitted` : 'as the devices report, fitted at each load'],
    ['API key', s.api_key_required ? 'required' : 'not required'],
  ];
  const key = rows.map((r) => r.join('=')).join('|');
  if (dl.dataset.key === key) return;
  dl.dataset.key = key;
  dl.replaceChildren(...rows.flatMap(([t, d]) => [h('dt', { text: t }), h('dd', { text: d })]));
}
