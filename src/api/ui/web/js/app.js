// The console's shell: hash routing between the pages, one poller for the whole tab (so history
// keeps growing whichever page is open), the live indicator and the API-key dialog.
//
// Every `interval` ms (?poll=MS in the URL, default 2000) it scrapes /metrics (public) into the
// History, and fetches the JSON routes the open page needs. A page is {mount(root, ctx) →
// {update(ctx), unmount()}, needs: [...]}; update runs after every poll.
import { AuthError, apiKey, forgetApiKey, getJSON, keyAccepted, onAuthRequired, setApiKey } from './api.js';
import { setText } from './dom.js';
import { formatClock, modelKey } from './format.js';
import { History } from './history.js';
import { parsePrometheus } from './prom.js';
import chat from './pages/chat.js';
import fleet from './pages/fleet.js';
import kv from './pages/kv.js';
import overview from './pages/overview.js';
import requests from './pages/requests.js';

const pages = { overview, kv, requests, fleet, chat };
const TAGS_EVERY_MS = 15_000;

function pollInterval() {
  const v = Number(new URLSearchParams(location.search).get('poll'));
  return Number.isFinite(v) && v >= 100 ? Math.min(v, 60_000) : 2000;
}

// What the pages read. `data` holds the latest answer of each JSON route; `errors` the last error
// of each (cleared by a success).
const ctx = {
  interval: pollInterval(),
  history: new History(),
  data: { server: null, ps: null, tags: null, fleet: null },
  errors: {},
  locked: false, // a data route answered 401 and no accepted key is stored
  lastScrape: 0,
  scrapeError: null,
  refresh: () => schedule(0),
  /** Loaded models as /api/ps lists them, keyed like the metrics' model label. */
  loadedModels() {
    return (this.data.ps?.models ?? []).map((m) => ({ ...m, key: modelKey(m.name) }));
  },
};

const routes = {
  server: '/v1/console/server',
  ps: '/api/ps',
  tags: '/api/tags',
  fleet: '/v1/console/fleet',
};

let current = null; // {id, page, instance}
let timer = null;
let polling = false;
let lastTags = 0;

async function scrape() {
  try {
    const res = await fetch('/metrics', { cache: 'no-store' });
    if (!res.ok) throw new Error(`/metrics answered ${res.status}`);
    ctx.history.push(Date.now(), parsePrometheus(await res.text()));
    ctx.lastScrape = Date.now();
    ctx.scrapeError = null;
  } catch (err) {
    ctx.scrapeError = err.message || String(err);
  }
}

async function fetchData(names) {
  if (ctx.locked) return;
  await Promise.all(
    names.map(async (name) => {
      try {
        ctx.data[name] = await getJSON(routes[name]);
        delete ctx.errors[name];
      } catch (err) {
        if (!(err instanceof AuthError)) ctx.errors[name] = err.message || String(err);
      }
    }),
  );
}

async function poll() {
  if (polling) return;
  polling = true;
  const started = Date.now();
  try {
    const needs = new Set(current?.page.needs ?? []);
    if (needs.has('tags') && started - lastTags < TAGS_EVERY_MS && ctx.data.tags) needs.delete('tags');
    if (needs.has('tags')) lastTags = started;
    await Promise.all([scrape(), fetchData([...needs])]);
    renderLive();
    if (current?.instance) current.instance.update(ctx);
  } finally {
    polling = false;
    schedule(Math.max(0, ctx.interval - (Date.now() - started)));
  }
}

function schedule(ms) {
  clearTimeout(timer);
  timer = setTimeout(poll, ms);
}

function renderLive() {
  const live = document.getElementById('live');
  const text = document.getElementById('live-text');
  if (ctx.scrapeError) {
    live.dataset.state = 'down';
    setText(text, `Server unreachable — retrying (${ctx.scrapeError})`);
  } else {
    live.dataset.state = 'up';
    setText(text, `Live · ${formatClock(ctx.lastScrape)}`);
  }
  const latest = ctx.history.latest;
  const build = latest?.byName.get('rustycage_build_info')?.[0]?.labels;
  const footer = document.getElementById('footer');
  if (build) setText(footer, `rustycage ${build.version} · llama.cpp ${String(build.llama_commit).slice(0, 7)} · updates every ${ctx.interval / 1000} s`);
  document.getElementById('key-button').hidden = !(ctx.locked || apiKey());
  setText(document.getElementById('key-button'), ctx.locked ? 'Enter key' : 'Forget key');
  const banner = document.getElementById('banner');
  banner.hidden = !ctx.locked;
  if (ctx.locked) setText(banner, 'This server needs an API key: models, KV tiers, fleet and chat stay hidden until you enter one (metrics are public).');
}

// ---- routing -----------------------------------------------------------------------------------

function pageFromHash() {
  const id = location.hash.replace(/^#\/?/, '').split(/[/?]/)[0];
  return pages[id] ? id : 'overview';
}

function show(id) {
  if (current?.id === id) return;
  current?.instance?.unmount();
  const main = document.getElementById('main');
  main.replaceChildren();
  main.dataset.page = id;
  for (const a of document.querySelectorAll('.tabs a')) {
    if (a.dataset.page === id) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  const page = pages[id];
  document.title = `${page.title} · Rustycage console`;
  current = { id, page, instance: null };
  current.instance = page.mount(main, ctx);
  current.instance.update(ctx);
  // New needs (a page's data) are fetched now rather than at the next tick.
  if (page.needs?.some((n) => !ctx.data[n])) schedule(0);
}

// ---- the API key -------------------------------------------------------------------------------

function openKeyDialog(message = '') {
  const dialog = document.getElementById('key-dialog');
  const error = document.getElementById('key-error');
  error.hidden = !message;
  error.textContent = message;
  if (!dialog.open) dialog.showModal();
  document.getElementById('key-input').focus();
}

function setUpKeyDialog() {
  const dialog = document.getElementById('key-dialog');
  const form = document.getElementById('key-form');
  const input = document.getElementById('key-input');
  const submit = document.getElementById('key-submit');
  onAuthRequired(() => {
    const hadKey = Boolean(apiKey());
    if (hadKey) forgetApiKey();
    if (ctx.locked) return;
    ctx.locked = true;
    renderLive();
    openKeyDialog(hadKey ? 'The stored key was refused; enter a current one.' : '');
  });
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const key = input.value.trim();
    if (!key) {
      openKeyDialog('Enter a key.');
      return;
    }
    submit.disabled = true;
    try {
      if (!(await keyAccepted(key))) {
        openKeyDialog('The server refused this key.');
        input.select();
        return;
      }
      setApiKey(key);
      input.value = '';
      ctx.locked = false;
      dialog.close();
      renderLive();
      current?.instance?.update(ctx);
      schedule(0);
    } catch (err) {
      openKeyDialog(`Could not check the key: ${err.message}`);
    } finally {
      submit.disabled = false;
    }
  });
  document.getElementById('key-cancel').addEventListener('click', () => dialog.close());
  document.getElementById('key-button').addEventListener('click', () => {
    if (ctx.locked) {
      openKeyDialog();
    } else {
      forgetApiKey();
      ctx.locked = true;
      for (const k of Object.keys(ctx.data)) ctx.data[k] = null;
      renderLive();
      current?.instance?.update(ctx);
      openKeyDialog();
    }
  });
}

setUpKeyDialog();
window.addEventListener('hashchange', () => show(pageFromHash()));
show(pageFromHash());
schedule(0);

// For tests and the curious: the live state of this tab.
window.rustycageConsole = ctx;
