// The model store through the official `ollama` npm client: pull from a (fake, local) Hugging Face
// Hub (also one that refuses and cuts a download, which the pull retries), list, show, ps, copy,
// delete, create — against a real `rustycage serve`.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Ollama } from 'ollama';

import { startFakeHub } from './lib/fake_hub.mjs';
import { modelsDir, startServer } from './lib/server.mjs';

const PULLED = 'hf.co/owner/tiny-GGUF:Q8_0';
const names = async (ollama) => (await ollama.list()).models.map((m) => m.name);

describe('ollama client: model store', { timeout: 600_000 }, () => {
  let hub;
  let server;
  let ollama;
  const q8 = path.join(modelsDir, 'tiny-chat-q8.gguf');

  before(async () => {
    hub = await startFakeHub({ 'owner/tiny-GGUF': { 'tiny-chat-Q8_0.gguf': q8, 'tiny-chat-F16.gguf': path.join(modelsDir, 'tiny-chat.gguf') } });
    server = await startServer({ models: {}, env: { HF_ENDPOINT: hub.url, RUSTYCAGE_PULL_RETRY_DELAY: '50ms' } });
    ollama = new Ollama({ host: server.ollamaURL });
  });

  after(async () => {
    await server?.stopChecked();
    hub?.stop();
  });

  it('pull streams progress and the model serves', async () => {
    const statuses = [];
    let sawBytes = false;
    for await (const p of await ollama.pull({ model: PULLED, stream: true })) {
      statuses.push(p.status);
      if (p.total > 0 && p.completed === p.total && p.digest?.startsWith('sha256:')) sawBytes = true;
    }
    assert.equal(statuses[0], 'pulling manifest');
    assert.equal(statuses.at(-1), 'success');
    assert.ok(statuses.includes('verifying sha256 digest') && statuses.includes('writing manifest'), statuses.join(', '));
    assert.ok(sawBytes, 'a progress line reports the whole blob downloaded');

    const r = await ollama.generate({ model: PULLED, prompt: 'Hello', options: { num_predict: 4 } });
    assert.equal(r.done, true);
    assert.ok(r.eval_count > 0);
  });

  it('list and show describe the pulled model', async () => {
    const m = (await ollama.list()).models.find((x) => x.name === PULLED);
    assert.ok(m, `list has ${PULLED}: ${JSON.stringify(await names(ollama))}`);
    assert.equal(m.details.quantization_level, 'Q8_0');
    const sha = crypto.createHash('sha256').update(fs.readFileSync(q8)).digest('hex');
    assert.equal(m.digest, sha, 'the digest is the blob sha256');
    assert.equal(m.size, fs.statSync(q8).size);

    const s = await ollama.show({ model: PULLED });
    assert.equal(s.details.quantization_level, 'Q8_0');
    assert.equal(s.model_info['general.architecture'], 'qwen2');
    assert.ok(s.capabilities.includes('completion'));
    assert.equal(s.status, 'ready');
  });

  it('ps shows the loaded model', async () => {
    const ps = await ollama.ps();
    assert.ok(ps.models.some((m) => m.name === PULLED), JSON.stringify(ps));
  });

  it('copy shares the blob and delete keeps the original', async () => {
    await ollama.copy({ source: PULLED, destination: 'mine:v1' });
    assert.ok((await names(ollama)).includes('mine:v1'));
    const r = await ollama.generate({ model: 'mine:v1', prompt: 'Hi', options: { num_predict: 2 } });
    assert.equal(r.done, true);
    await ollama.delete({ model: 'mine:v1' });
    assert.ok(!(await names(ollama)).includes('mine:v1'));
    const again = await ollama.generate({ model: PULLED, prompt: 'Hi', options: { num_predict: 2 } });
    assert.equal(again.done, true, 'the original still serves: its blob was not collected');
    await assert.rejects(ollama.delete({ model: 'mine:v1' }), /not found/);
  });

  it('create from an uploaded blob, and from a model with a system prompt and parameters', async () => {
    const bytes = fs.readFileSync(q8);
    const digest = 'sha256:' + crypto.createHash('sha256').update(bytes).digest('hex');
    const up = await fetch(`${server.ollamaURL}/api/blobs/${digest}`, { method: 'POST', body: bytes });
    assert.ok(up.status === 200 || up.status === 201, `upload answered ${up.status}`);
    assert.equal((await fetch(`${server.ollamaURL}/api/blobs/${digest}`, { method: 'HEAD' })).status, 200);

    const statuses = [];
    for await (const p of await ollama.create({ model: 'uploaded', files: { 'model.gguf': digest }, stream: true })) statuses.push(p.status);
    assert.equal(statuses.at(-1), 'success', statuses.join(', '));
    assert.ok((await names(ollama)).includes('uploaded:latest'));

    const done = await ollama.create({ model: 'tuned', from: PULLED, system: 'You are terse.', parameters: { temperature: 0.2, stop: ['\n\n'], num_predict: 3 } });
    assert.equal(done.status, 'success');
    const s = await ollama.show({ model: 'tuned' });
    assert.equal(s.system, 'You are terse.');
    assert.match(s.parameters, /temperature 0\.2/);
    assert.match(s.modelfile, /SYSTEM """You are terse\."""/);

    // The model's defaults apply to requests that do not say otherwise.
    const messages = [{ role: 'user', content: 'Hello there' }];
    const withSystem = await ollama.chat({ model: PULLED, messages: [{ role: 'system', content: 'You are terse.' }, ...messages], options: { num_predict: 3 } });
    const tuned = await ollama.chat({ model: 'tuned', messages });
    assert.equal(tuned.prompt_eval_count, withSystem.prompt_eval_count, 'the system prompt is rendered into the prompt');
    assert.ok(tuned.eval_count <= 3, `num_predict 3 from the model's parameters, got ${tuned.eval_count}`);
    const longer = await ollama.chat({ model: 'tuned', messages, options: { num_predict: 6, stop: [] } });
    assert.ok(longer.eval_count > 3 || longer.done_reason === 'stop', 'a request option overrides the default');
  });

  it('a blob with the wrong digest is refused and nothing is stored', async () => {
    const wrong = 'sha256:' + 'c'.repeat(64);
    const r = await fetch(`${server.ollamaURL}/api/blobs/${wrong}`, { method: 'POST', body: Buffer.from('not the right bytes') });
    assert.equal(r.status, 400);
    assert.equal((await fetch(`${server.ollamaURL}/api/blobs/${wrong}`, { method: 'HEAD' })).status, 404);
  });

  it('a corrupted download fails verification and registers nothing', async () => {
    await hub.control({ corrupt: 'owner/tiny-GGUF/tiny-chat-F16.gguf' });
    try {
      await assert.rejects(ollama.pull({ model: 'hf.co/owner/tiny-GGUF:F16' }), /sha256|digest|match/i);
    } finally {
      await hub.control({ reset: true });
    }
    assert.ok(!(await names(ollama)).includes('hf.co/owner/tiny-GGUF:F16'));
  });

  it('a pull the Hub refuses and cuts short still finishes: retries do not end the client\'s stream', async () => {
    // One 503 with Retry-After, then a body cut after 1 MiB: two "retrying" lines, which must not
    // look like errors to the client (it throws at any line with an "error" key).
    await hub.control({ failStatus: 503, retryAfter: '1', failAfterBytes: 1 << 20 });
    const retries = [];
    let last;
    try {
      for await (const p of await ollama.pull({ model: 'hf.co/owner/tiny-GGUF:F16', stream: true })) {
        if (p.status === 'retrying') retries.push(p);
        last = p;
      }
    } finally {
      await hub.control({ reset: true });
    }
    assert.equal(last.status, 'success');
    assert.equal(retries.length, 2, JSON.stringify(retries));
    assert.deepEqual(retries.map((r) => [r.attempt, r.max_attempts]), [[2, 8], [2, 8]]);
    assert.equal(retries[0].reason, 'HTTP 503, Retry-After 1');
    assert.equal(retries[0].retry_in_ms, 1000);
    assert.match(retries[1].reason, /connection closed early/);
    assert.ok((await names(ollama)).includes('hf.co/owner/tiny-GGUF:F16'));
  });

  it('unknown repos and bad names are clear errors', async () => {
    await assert.rejects(ollama.pull({ model: 'hf.co/owner/missing-GGUF' }), /not found/i);
    await assert.rejects(ollama.pull({ model: 'hf.co/../../etc' }), /invalid model name/);
    await assert.rejects(ollama.copy({ source: PULLED, destination: '../escape' }), /invalid model name/);
  });
});

describe('ollama client: memory budget', { timeout: 600_000 }, () => {
  const models = { a: 'tiny-chat.gguf', b: 'tiny-chat-q8.gguf' };

  it('two models with a budget that holds one: alternating requests all succeed', async () => {
    // Measure what each takes (ps reports the estimate the budget uses), then allow one at a time.
    const probe = await startServer({ models });
    let sizes;
    try {
      const o = new Ollama({ host: probe.ollamaURL });
      for (const m of ['a', 'b']) await o.generate({ model: m, prompt: 'x', options: { num_predict: 1 } });
      sizes = Object.fromEntries((await o.ps()).models.map((m) => [m.name.replace(/:latest$/, ''), m.size]));
    } finally {
      await probe.stopChecked();
    }
    assert.ok(sizes.a > 0 && sizes.b > 0, JSON.stringify(sizes));
    const budget = Math.max(sizes.a, sizes.b) + Math.floor(Math.min(sizes.a, sizes.b) / 2);

    const server = await startServer({ models, args: ['--memory-budget', String(budget)] });
    try {
      const o = new Ollama({ host: server.ollamaURL });
      for (const m of ['a', 'b', 'a', 'b', 'a', 'b']) {
        const r = await o.generate({ model: m, prompt: 'Hello', options: { num_predict: 2 } });
        assert.equal(r.done, true, `request for ${m}`);
        const loaded = (await o.ps()).models.map((x) => x.name.replace(/:latest$/, ''));
        assert.deepEqual(loaded, [m], `only ${m} is loaded after its request`);
        assert.ok((await o.ps()).models[0].size <= budget);
      }
    } finally {
      await server.stopChecked();
    }
  });

  it('a model larger than the whole budget gets a clear error', async () => {
    const server = await startServer({ models, args: ['--memory-budget', '1MiB'] });
    try {
      const o = new Ollama({ host: server.ollamaURL });
      await assert.rejects(o.generate({ model: 'a', prompt: 'x' }), /more than the whole memory budget/);
      assert.equal((await o.ps()).models.length, 0);
    } finally {
      await server.stopChecked();
    }
  });
});

describe('ollama client: keep_alive', { timeout: 120_000 }, () => {
  it('an idle model is unloaded when its keep_alive runs out, and loads again on demand', async () => {
    const server = await startServer({ models: { a: 'tiny-chat-q8.gguf' } });
    try {
      const o = new Ollama({ host: server.ollamaURL });
      await o.generate({ model: 'a', prompt: 'x', keep_alive: '1s', options: { num_predict: 1 } });
      const loadedAt = Date.now();
      while ((await o.ps()).models.length > 0) {
        assert.ok(Date.now() - loadedAt < 30_000, 'unloaded within 30 s of a 1 s keep_alive');
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.ok(Date.now() - loadedAt >= 900, 'not before its keep_alive ran out');
      const r = await o.generate({ model: 'a', prompt: 'x', options: { num_predict: 1 } });
      assert.equal(r.done, true);
      assert.equal((await o.ps()).models.length, 1);
    } finally {
      await server.stopChecked();
    }
  });
});
