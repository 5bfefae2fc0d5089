// What the console tests share: where screenshots go, how to open a page of the console, how to
// wait for a chart to hold data, and the traffic that fills the charts.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
export const webDir = path.join(repoRoot, 'src/api/ui/web');
const buildDir = path.resolve(repoRoot, process.env.RUSTYCAGE_BUILD_DIR ?? 'build');
export const artifactsDir = process.env.RUSTYCAGE_UI_ARTIFACTS ?? path.join(buildDir, 'ui-screenshots');

export const PAGES = ['overview', 'kv', 'requests', 'fleet', 'chat'];
// The console polls this often in the tests (?poll=MS): quick enough that a few seconds of traffic
// span several scrapes, slow enough for a busy 2-core machine.
export const POLL_MS = 400;

export function consoleURL(server, page = 'overview') {
  return `${server.openaiURL}/ui/?poll=${POLL_MS}#/${page}`;
}

/** Switches the open console to `page` (hash routing: no reload, history kept). */
export async function showPage(page, id) {
  await page.evaluate((p) => {
    location.hash = `#/${p}`;
  }, id);
  await page.waitForFunction((p) => document.querySelector('main')?.dataset.page === p, {}, id);
}

/** Waits until chart `id` has at least `min` instants above zero; returns its per-series counts. */
export async function waitForChart(page, id, { min = 1, series, timeout = 60_000 } = {}) {
  try {
    await page.waitForFunction(
      (chartId, n, name) => {
        const el = document.querySelector(`[data-chart="${chartId}"]`);
        if (!el || Number(el.dataset.points) < n) return false;
        if (!name) return true;
        const counts = Object.fromEntries((el.dataset.series ?? '').split(',').map((p) => [p.slice(0, p.lastIndexOf(':')), Number(p.slice(p.lastIndexOf(':') + 1))]));
        return counts[name] >= n;
      },
      { timeout, polling: 100 },
      id,
      min,
      series ?? null,
    );
  } catch (err) {
    const state = await page.evaluate((chartId) => {
      const el = document.querySelector(`[data-chart="${chartId}"]`);
      return el ? { points: el.dataset.points, series: el.dataset.series } : 'no such chart';
    }, id);
    err.message = `chart ${id}${series ? ` (series ${series})` : ''} never had data: ${JSON.stringify(state)}\n${err.message}`;
    throw err;
  }
  return page.evaluate((chartId) => document.querySelector(`[data-chart="${chartId}"]`).dataset.series, id);
}

export async function screenshot(page, name) {
  fs.mkdirSync(artifactsDir, { recursive: true });
  const file = path.join(artifactsDir, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

/** No element sticks out of the window sideways (what a narrow window must hold). */
export async function assertNoHorizontalOverflow(page, what) {
  const { scroll, width } = await page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, width: window.innerWidth }));
  assert.ok(scroll <= width + 1, `${what}: the page is ${scroll} px wide in a ${width} px window`);
}

export function assertNoConsoleErrors(page, what) {
  assert.deepEqual(page.consoleErrors, [], `${what}: console errors`);
  assert.deepEqual(page.foreignRequests, [], `${what}: requests to other origins`);
}

async function post(server, route, body, headers = {}) {
  const res = await fetch(`${server.openaiURL}${route}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text };
}

// Long enough for a whole 64-token block, so conversations leave blocks in the host tier.
const SYSTEM = 'You are the lab assistant of the rustycage test suite. ' + 'Answer briefly, in plain words, and say when you are unsure. '.repeat(8);

/**
 * A few chat and completion requests: two conversations that evict each other from the context
 * (the server runs with --kv-cached-sequences 1), so the first one's return is served from host
 * RAM; a plain completion; and one request for an unknown model (a 404 for the error table).
 */
export async function generateTraffic(server, headers = {}) {
  const chat = (messages, max_tokens = 12) => post(server, '/v1/chat/completions', { model: 'demo', messages, max_tokens, temperature: 0 }, headers);
  const a = [{ role: 'system', content: SYSTEM }, { role: 'user', content: 'Conversation A: what is a KV cache?' }];
  const b = [{ role: 'system', content: `${SYSTEM} (other)` }, { role: 'user', content: 'Conversation B: and a block?' }];
  const first = await chat(a);
  assert.equal(first.status, 200, first.body);
  const reply = JSON.parse(first.body).choices[0].message.content;
  assert.equal((await chat(b)).status, 200);
  const again = await chat([...a, { role: 'assistant', content: reply }, { role: 'user', content: 'Say more.' }]);
  assert.equal(again.status, 200, again.body);
  const cached = JSON.parse(again.body).usage.prompt_tokens_details.cached_tokens;
  assert.ok(cached > 0, `the return of conversation A reuses its KV (cached_tokens ${cached})`);
  const completion = await post(server, '/v1/completions', { model: 'demo', prompt: 'The tiers are', max_tokens: 8 }, headers);
  assert.equal(completion.status, 200, completion.body);
  const missing = await post(server, '/v1/chat/completions', { model: 'no-such-model', messages: [{ role: 'user', content: 'hi' }] }, headers);
  assert.equal(missing.status, 404, missing.body);
}
