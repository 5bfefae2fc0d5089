// The official `openai` and `ollama` npm clients through `rustycage gateway` over a real fleet (one
// etcd member, two agents with their servers): unchanged clients, the gateway in between.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Ollama } from 'ollama';
import OpenAI from 'openai';

import { assertPositiveInt, assertUnitNorm, checkChatStream } from './lib/assertions.mjs';
import { etcdBinary, startFleet } from './lib/fleet.mjs';

const EMBED_DIMS = 128;
const user = (content) => [{ role: 'user', content }];

describe('clients through the fleet gateway', { timeout: 1_800_000, skip: etcdBinary() ? false : 'no etcd binary (scripts/setup.sh installs etcd-server)' }, () => {
  let fleet, openai, ollama;

  before(async () => {
    fleet = await startFleet({ hosts: 2 });
    openai = new OpenAI({ baseURL: `${fleet.openaiURL}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 300_000 });
    ollama = new Ollama({ host: fleet.ollamaURL });
  });

  after(async () => {
    await fleet?.stop();
  });

  it('openai: chat.completions.create, plain and streamed', async () => {
    const r = await openai.chat.completions.create({ model: 'demo', messages: user('Hello through the gateway'), max_tokens: 8, temperature: 0 });
    assert.equal(r.object, 'chat.completion');
    assert.equal(r.choices.length, 1);
    assertPositiveInt(r.usage.prompt_tokens, 'usage.prompt_tokens');
    const chunks = [];
    for await (const c of await openai.chat.completions.create({ model: 'demo', messages: user('Stream it'), max_tokens: 8, stream: true,
      stream_options: { include_usage: true } })) chunks.push(c);
    checkChatStream(chunks, { expectUsage: true, maxTokens: 8 });
  });

  it('openai: a resumed conversation is routed to the host that holds it', async () => {
    const messages = user('A long conversation about the gateway, the fleet and the hosts that hold its KV cache. '.repeat(8));
    const first = await openai.chat.completions.create({ model: 'demo', messages, max_tokens: 4, temperature: 0 }).withResponse();
    const host = first.response.headers.get('x-rustycage-host');
    assert.ok(host, 'the gateway names the host');
    const again = await openai.chat.completions.create({ model: 'demo', messages, max_tokens: 4, temperature: 0 }).withResponse();
    assert.equal(again.response.headers.get('x-rustycage-host'), host);
    // cache_context from the host's lookup, cache_host once the gateway routes from its block index
    // (the conversation's blocks in the host's RAM): the cache decided either way.
    assert.match(again.response.headers.get('x-rustycage-route'), /^cache_(context|host)$/);
    assert.ok(again.data.usage.prompt_tokens_details.cached_tokens > 0, 'the host reused the prefix');
  });

  it('openai: completions, embeddings, models and errors', async () => {
    const c = await openai.completions.create({ model: 'demo', prompt: 'Once upon a time', max_tokens: 6, temperature: 0 });
    assert.equal(c.object, 'text_completion');
    const e = await openai.embeddings.create({ model: 'embed', input: ['one', 'two'] });
    assert.equal(e.data.length, 2);
    assertUnitNorm(e.data[0].embedding, EMBED_DIMS);
    const ids = [];
    for await (const m of openai.models.list()) ids.push(m.id);
    assert.deepEqual(ids.sort(), ['demo', 'embed']);
    await assert.rejects(openai.chat.completions.create({ model: 'nope', messages: user('hi'), max_tokens: 2 }), OpenAI.NotFoundError);
    await assert.rejects(openai.chat.completions.create({ model: 'demo', messages: 'not a list', max_tokens: 2 }), OpenAI.BadRequestError);
  });

  it('ollama: chat and generate, plain and streamed; list; embed; unknown model', async () => {
    const r = await ollama.chat({ model: 'demo', messages: user('Hello'), options: { num_predict: 6, temperature: 0 } });
    assert.equal(r.done, true);
    assert.equal(r.message.role, 'assistant');
    const parts = [];
    for await (const p of await ollama.generate({ model: 'demo', prompt: 'Tell me', stream: true, options: { num_predict: 6 } })) parts.push(p);
    assert.ok(parts.length >= 2);
    assert.equal(parts.at(-1).done, true);
    const list = await ollama.list();
    assert.deepEqual(list.models.map((m) => m.name.replace(/:latest$/, '')).sort(), ['demo', 'embed']);
    const emb = await ollama.embed({ model: 'embed', input: 'hello' });
    assertUnitNorm(emb.embeddings[0], EMBED_DIMS);
    await assert.rejects(ollama.chat({ model: 'nope', messages: user('hi') }), (err) => err.status_code === 404);
  });
});

describe('the gateway takes its keys from a private file', { timeout: 600_000, skip: etcdBinary() ? false : 'no etcd binary (scripts/setup.sh installs etcd-server)' }, () => {
  const key = 'gw-Sekret-4d1c9a77b2';
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rc-gw-keys-'));
  const file = path.join(dir, 'keys');
  let fleet;

  before(async () => {
    fs.writeFileSync(file, `# clients of the lab\n${key}\n`, { mode: 0o600 });
    fleet = await startFleet({ hosts: 1, gatewayArgs: ['--api-key-file', file], apiKey: key });
  });

  after(async () => {
    await fleet?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('the key is in neither its argv nor its environment, and clients need it', async () => {
    for (const what of ['cmdline', 'environ']) {
      const text = fs.readFileSync(`/proc/${fleet.gatewayPid}/${what}`, 'latin1');
      assert.ok(!text.includes(key), `the key is in the gateway's ${what}`);
    }
    assert.equal((await fetch(`${fleet.openaiURL}/v1/models`)).status, 401);
    const wrong = new OpenAI({ baseURL: `${fleet.openaiURL}/v1`, apiKey: 'gw-Wrong-000000000', maxRetries: 0 });
    await assert.rejects(wrong.models.list(), (e) => e.status === 401);
    const openai = new OpenAI({ baseURL: `${fleet.openaiURL}/v1`, apiKey: key, maxRetries: 0, timeout: 300_000 });
    const r = await openai.chat.completions.create({ model: 'demo', messages: user('Hello with a key'), max_tokens: 4, temperature: 0 });
    assert.equal(r.object, 'chat.completion');
  });
});
