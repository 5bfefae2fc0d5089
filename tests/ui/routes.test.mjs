// The console's routes over plain HTTP (no browser): every file of src/api/ui/web is served from
// the binary byte for byte with its type and headers, the pinned uPlot is bundled, ETags
// revalidate, unknown or crafted paths are 404, and the data routes answer their documented shapes.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';

import { parsePrometheus as parseForTests, startServer } from '../clients/lib/server.mjs';
import { parsePrometheus } from '../../src/api/ui/web/js/prom.js';
import { repoRoot, webDir } from './lib/console.mjs';

const TYPES = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8', '.svg': 'image/svg+xml' };

function filesUnder(dir, prefix = '') {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? filesUnder(path.join(dir, e.name), `${prefix}${e.name}/`) : [`${prefix}${e.name}`]));
}

// A request exactly as written (fetch would normalise "..").
function rawGet(url, target) {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const sock = net.connect(Number(port), hostname, () => sock.end(`GET ${target} HTTP/1.1\r\nHost: ${hostname}\r\nConnection: close\r\n\r\n`));
    let data = '';
    sock.setEncoding('latin1');
    sock.on('data', (d) => (data += d));
    sock.on('end', () => resolve({ status: Number(/^HTTP\/1\.[01] (\d+)/.exec(data)?.[1]), text: data }));
    sock.on('error', reject);
  });
}

describe('console routes', { timeout: 300_000 }, () => {
  let server;
  let base;

  before(async () => {
    server = await startServer({ models: { demo: 'tiny-chat.gguf' }, args: ['--preload', 'demo'] });
    base = server.openaiURL;
  });

  after(async () => {
    await server?.stopChecked();
  });

  it('serves every file of web/ byte for byte, with its type and headers, on both ports', async () => {
    const files = filesUnder(webDir);
    assert.ok(files.includes('index.html') && files.includes('js/app.js'), `web/ has the pages: ${files}`);
    for (const rel of files) {
      for (const origin of [base, server.ollamaURL]) {
        const res = await fetch(`${origin}/ui/${rel}`);
        assert.equal(res.status, 200, rel);
        const body = Buffer.from(await res.arrayBuffer());
        assert.ok(body.equals(fs.readFileSync(path.join(webDir, rel))), `${rel} is served as built (rebuild after editing web/)`);
        assert.equal(res.headers.get('content-type'), TYPES[path.extname(rel)], rel);
        assert.match(res.headers.get('etag') ?? '', /^"[0-9a-f]{16}"$/, rel);
        assert.equal(res.headers.get('cache-control'), 'no-cache', rel);
        assert.equal(res.headers.get('x-content-type-options'), 'nosniff', rel);
        assert.match(res.headers.get('content-security-policy') ?? '', /default-src 'self'.*connect-src 'self'.*frame-ancestors 'none'/, rel);
      }
    }
    const index = await fetch(`${base}/ui/`);
    assert.equal(await index.text(), fs.readFileSync(path.join(webDir, 'index.html'), 'utf8'), '/ui/ is index.html');
  });

  it('bundles the pinned uPlot from npm, with its licence', async () => {
    const lock = JSON.parse(fs.readFileSync(path.join(repoRoot, 'src/api/ui/package-lock.json'), 'utf8'));
    const version = lock.packages['node_modules/uplot'].version;
    const esm = await (await fetch(`${base}/ui/vendor/uPlot.esm.js`)).text();
    assert.ok(esm.includes(`(v${version})`), `uPlot.esm.js is v${version}`);
    assert.match(esm, /export \{ uPlot as default \}|export default uPlot/);
    assert.equal((await fetch(`${base}/ui/vendor/uPlot.min.css`)).headers.get('content-type'), 'text/css; charset=utf-8');
    assert.match(await (await fetch(`${base}/ui/vendor/uPlot.LICENSE.txt`)).text(), /MIT License/);
  });

  it('answers a matching If-None-Match with 304 and no body', async () => {
    const first = await fetch(`${base}/ui/js/app.js`);
    const etag = first.headers.get('etag');
    const again = await fetch(`${base}/ui/js/app.js`, { headers: { 'if-none-match': etag } });
    assert.equal(again.status, 304);
    assert.equal((await again.arrayBuffer()).byteLength, 0);
    assert.equal((await fetch(`${base}/ui/js/app.js`, { headers: { 'if-none-match': '"0000000000000000"' } })).status, 200);
  });

  it('redirects /ui to /ui/, answers HEAD, and 404s unknown or crafted paths', async () => {
    const redirect = await fetch(`${base}/ui`, { redirect: 'manual' });
    assert.equal(redirect.status, 301);
    assert.equal(redirect.headers.get('location'), '/ui/');
    const head = await fetch(`${base}/ui/`, { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal((await fetch(`${base}/ui/nope.js`)).status, 404);
    for (const target of ['/ui/../metrics', '/ui/js/../index.html', '/ui/%2e%2e/%2e%2e/etc/passwd', '/ui//etc/passwd', '/ui/vendor/', '/ui/index.html%00.js']) {
      const res = await rawGet(base, target);
      assert.ok(res.status >= 400 && res.status < 500, `${target}: ${res.status}`);
      assert.ok(!res.text.includes('<!doctype html>') && !res.text.includes('root:'), `${target} serves nothing`);
    }
  });

  it('/v1/console/server reports the server and its loaded models', async () => {
    const facts = await (await fetch(`${base}/v1/console/server`)).json();
    const version = await (await fetch(`${base}/v1/version`)).json();
    assert.equal(facts.version, version.release);
    assert.match(facts.llama_commit, /^[0-9a-f]{40}$/);
    assert.ok(facts.uptime_seconds >= 0 && facts.uptime_seconds < 3600, `uptime ${facts.uptime_seconds}`);
    assert.ok(Date.parse(facts.started_at) <= Date.parse(facts.now));
    assert.equal(facts.api_key_required, false);
    assert.equal(facts.engine.ctx_size, 4096);
    assert.equal(facts.engine.parallel, 4);
    assert.equal(facts.kv.disk_dir, null, 'no disk tier without --kv-disk-dir');
    assert.ok(facts.kv.block_size > 0);
    assert.ok(facts.memory.in_use_bytes > 0, 'the preloaded model takes memory');
    assert.ok(facts.memory.budget_bytes === null || facts.memory.budget_bytes >= facts.memory.in_use_bytes);
    const demo = facts.models.find((m) => m.name === 'demo');
    assert.ok(demo, JSON.stringify(facts.models));
    assert.ok(demo.memory_bytes > 0 && Date.parse(demo.loaded_at) > 0 && Number.isInteger(demo.leases) && demo.leases >= 0);
  });

  it('/v1/console/fleet says no fleet is configured', async () => {
    const res = await fetch(`${base}/v1/console/fleet`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('cache-control'), 'no-store');
    const doc = await res.json();
    assert.equal(doc.configured, false);
    assert.match(doc.message, /no fleet configured/);
  });

  it('parses the real /metrics as the test suites do', async () => {
    const text = await (await fetch(`${base}/metrics`)).text();
    const mine = parsePrometheus(text);
    const theirs = parseForTests(text);
    assert.ok(mine.samples.length > 20);
    assert.deepEqual(
      mine.samples.map((s) => [s.name, s.labels, s.value]),
      theirs.map((s) => [s.name, s.labels, s.value]),
    );
    assert.equal(mine.types.get('rustycage_build_info'), 'gauge');
  });
});
