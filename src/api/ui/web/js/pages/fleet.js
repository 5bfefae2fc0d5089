// Fleet: the hosts (state, version, models, heartbeat age), rollouts with their progress and the
// incidents with their triage and GitHub issue — from GET /v1/console/fleet (shape: README.md,
// "Fleet data"). A standalone server answers {configured: false}; the page says so plainly.
import { badge, dataTable, h, section, setChildren, setText, statCard } from '../dom.js';
import { formatDateTime, formatDuration, formatNumber, parseTime } from '../format.js';

const STATE_KIND = { up: 'ok', degraded: 'warn', unreachable: 'warn', down: 'bad', draining: 'warn' };
const SEVERITY_KIND = { critical: 'bad', high: 'bad', medium: 'warn', low: '' };

// Only http(s) links are followed: the document comes from etcd, which many hands write.
function safeUrl(url) {
  try {
    const u = new URL(url);
    return u.protocol === 'https:' || u.protocol === 'http:' ? u.href : null;
  } catch {
    return null;
  }
}

function hostModels(host) {
  const models = host.record?.models ?? host.models ?? [];
  return models.map((m) => (typeof m === 'string' ? { name: m, loaded: true } : m));
}

function modelText(m) {
  if (m.status && m.status !== 'ready') return `${m.name} (${m.status})`;
  return m.loaded === false ? `${m.name} (not loaded)` : m.name;
}

function issueLink(inc) {
  const result = inc.outbox?.result ?? inc.github ?? null;
  const url = safeUrl(result?.url ?? inc.issue_url ?? '');
  if (!url) return h('span', { class: 'muted', text: inc.status ?? inc.outbox?.state ?? 'not filed' });
  const label = result?.issue ? `#${result.issue}` : 'issue';
  return h('a', { href: url, target: '_blank', rel: 'noopener noreferrer', text: `${label} on GitHub` });
}

function triageCell(inc) {
  const t = inc.outbox?.triage ?? inc.triage;
  if (!t) return h('span', { class: 'muted', text: inc.outbox ? `triage ${inc.outbox.state}` : 'not triaged yet' });
  return h(
    'div',
    { class: 'triage' },
    t.severity ? badge(t.severity, SEVERITY_KIND[t.severity] ?? '') : null,
    t.component ? h('span', { class: 'muted', text: ` ${t.component}` }) : null,
    h('div', { text: t.title || t.summary || '' }),
    t.suggested_action ? h('div', { class: 'muted', text: t.suggested_action }) : null,
  );
}

export default {
  title: 'Fleet',
  needs: ['fleet'],
  mount(root) {
    const status = h('div', { class: 'fleet-status' });
    const body = h('div', { class: 'fleet-body', hidden: true });
    const cards = h('div', { class: 'cards' });
    const hostsCard = statCard('Hosts');
    const incidentsCard = statCard('Open incidents');
    const triagerCard = statCard('Triager');
    const rolloutCard = statCard('Rollouts');
    cards.append(hostsCard.el, incidentsCard.el, triagerCard.el, rolloutCard.el);
    const alarmsLine = h('div', { class: 'fleet-alarms error', id: 'fleet-alarms', hidden: true });

    const hosts = dataTable({
      caption: 'Hosts',
      id: 'fleet-hosts',
      empty: 'No host has registered yet.',
      columns: [
        { label: 'Host', render: (x) => h('strong', { text: x.id }) },
        { label: 'State', render: (x) => badge(x.state ?? 'unknown', STATE_KIND[x.state] ?? '') },
        { label: 'Version', render: (x) => x.record?.version ?? x.version ?? '—' },
        { label: 'Models', render: (x) => hostModels(x).map(modelText).join(', ') || '—' },
        { label: 'Heartbeat', numeric: true, title: 'Seconds since the host last renewed its lease', render: (x) => (x.heartbeat_age_s === null || x.heartbeat_age_s === undefined ? '—' : `${formatDuration(x.heartbeat_age_s)} ago`) },
        { label: 'Incidents', numeric: true, render: (x) => formatNumber(x.open_incidents ?? 0) },
        { label: 'Why', render: (x) => h('span', { class: 'muted', text: x.why || '' }) },
      ],
    });
    const rollouts = h('div', { class: 'rollouts', id: 'fleet-rollouts' });
    const incidents = dataTable({
      caption: 'Incidents',
      id: 'fleet-incidents',
      empty: 'No incident recorded.',
      columns: [
        { label: 'When', render: (i) => formatDateTime(parseTime(i.time)) },
        { label: 'Host', render: (i) => i.host ?? '—' },
        { label: 'Kind', render: (i) => h('code', { text: i.kind ?? '—' }) },
        { label: 'What happened', render: (i) => i.reason || i.evidence?.error || '—' },
        { label: 'Triage', render: triageCell },
        { label: 'Issue', render: issueLink },
      ],
    });
    body.append(alarmsLine, cards, section('Hosts', hosts.el), section('Rollouts', rollouts), section('Incidents', incidents.el));
    root.append(h('h1', { class: 'page-title', text: 'Fleet' }), status, body);

    let shown = '';
    let lastGood = null; // an unreachable fleet keeps showing its last picture
    return {
      update(c) {
        const doc = c.data.fleet;
        if (doc?.configured && !doc.error && Array.isArray(doc.hosts)) lastGood = doc;
        let state;
        if (c.locked) state = 'locked';
        else if (!doc) state = c.errors.fleet ? 'error' : 'loading';
        else if (!doc.configured) state = 'standalone';
        else state = doc.error ? 'unreachable' : 'fleet';
        root.dataset.fleet = state;
        if (state !== shown) {
          shown = state;
          setChildren(status, statusView(state, doc, c));
        } else if (state === 'unreachable' || state === 'error') {
          setChildren(status, statusView(state, doc, c));
        }
        const shownDoc = state === 'fleet' ? doc : state === 'unreachable' ? lastGood : null;
        body.hidden = !shownDoc;
        if (!shownDoc) return;
        this.render(shownDoc);
      },
      render(doc) {
        const list = doc.hosts ?? [];
        const count = (s) => list.filter((x) => x.state === s).length;
        setText(hostsCard.value, `${count('up')} up of ${list.length}`);
        const unreachable = count('unreachable');
        setText(hostsCard.sub, `${count('degraded')} degraded · ${unreachable ? `${unreachable} unreachable · ` : ''}${count('down')} down`);
        const open = (doc.incidents ?? []).filter((i) => !i.ack && !i.acked_at);
        setText(incidentsCard.value, formatNumber(open.length));
        setText(incidentsCard.sub, `${formatNumber((doc.incidents ?? []).length)} recorded`);
        setText(triagerCard.value, doc.triager ?? 'none elected');
        setText(triagerCard.sub, 'files triaged incidents on GitHub');
        const alarms = doc.alarms ?? [];
        alarmsLine.hidden = alarms.length === 0;
        setText(alarmsLine, alarms.length ? `etcd alarm: ${alarms.join('; ')} — etcd refuses writes: hosts cannot register or renew their leases` : '');
        const active = (doc.rollouts ?? []).filter((r) => !['done', 'failed', 'rolled_back', 'aborted'].includes(r.state));
        setText(rolloutCard.value, formatNumber(active.length));
        setText(rolloutCard.sub, `${formatNumber((doc.rollouts ?? []).length)} known`);
        hosts.update(list);
        renderRollouts(rollouts, doc.rollouts);
        incidents.update(doc.incidents ?? []);
      },
      unmount() {},
    };
  },
};

function statusView(state, doc, c) {
  // doc.message (standalone) says what the view already says.
  switch (state) {
    case 'standalone':
      return h(
        'div',
        { class: 'empty-state', role: 'status', id: 'fleet-empty' },
        h('h2', { text: 'No fleet configured' }),
        h('p', { text: 'This server runs standalone: it serves its own models and needs no etcd.' }),
        h('p', { class: 'muted' }, 'Hosts, rollouts and incidents appear here when the console is served by a fleet member or the gateway (',
          h('code', { text: 'rustycage agent' }), ', ', h('code', { text: 'rustycage fleet status' }), ').'),
      );
    case 'unreachable':
      return h('div', { class: 'banner-inline warn', role: 'alert' }, `Fleet unreachable: ${doc.error}. Showing the last answer, if any.`);
    case 'error':
      return h('div', { class: 'banner-inline bad', role: 'alert' }, `Could not read the fleet: ${c.errors.fleet}`);
    case 'locked':
      return h('div', { class: 'empty-state', role: 'status' }, h('h2', { text: 'API key needed' }), h('p', { text: 'Enter the server’s API key to see the fleet.' }));
    case 'loading':
      return h('p', { class: 'muted', text: 'Loading…' });
    default:
      return null;
  }
}

function renderRollouts(el, list) {
  if (!list || list.length === 0) {
    setChildren(el, h('p', { class: 'muted', text: 'No rollout in progress.' }));
    return;
  }
  setChildren(
    el,
    list.map((r) => {
      const total = Number(r.total) || 0;
      const done = Math.min(total, Number(r.done) || 0);
      const bar = h('progress', { max: String(total || 1), value: String(done), 'aria-label': `rollout ${r.id}: ${done} of ${total} hosts` });
      return h(
        'div',
        { class: 'card rollout' },
        h('div', { class: 'rollout-head' }, h('strong', { text: `${r.version ?? r.id}` }), ' ', badge(r.state ?? 'unknown', r.state === 'failed' ? 'bad' : r.state === 'done' ? 'ok' : 'warn')),
        bar,
        h('div', { class: 'muted', text: `${done} of ${total} hosts${r.cohort ? ` · cohort ${r.cohort}` : ''}${r.message ? ` · ${r.message}` : ''}` }),
      );
    }),
  );
}
