// The official `ollama` npm client (ollama-js) against a real `rustycage serve` (Ollama port).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Ollama } from 'ollama';

import { assertNonNegativeInt, assertPositiveInt, assertTimestamp, assertUnitNorm } from './lib/assertions.mjs';
import { startServer } from './lib/server.mjs';

const EMBED_DIMS = 128;

// Ollama names are model[:tag] with the tag defaulting to latest; a server may echo either form.
const baseName = (name) => String(name).replace(/:latest$/, '');

function checkFinal(r, { maxTokens } = {}) {
  assert.equal(r.done, true, 'the last message has done: true');
  assert.ok(['stop', 'length'].includes(r.done_reason), `done_reason stop or length, got ${r.done_reason}`);
  assertTimestamp(r.created_at, 'created_at');
  for (const k of ['total_duration', 'load_duration', 'prompt_eval_duration', 'eval_duration']) {
    assertNonNegativeInt(r[k], `${k} (integer nanoseconds)`);
  }
  assert.ok(r.total_duration > 0, 'total_duration > 0');
  assertPositiveInt(r.prompt_eval_count, 'prompt_eval_count');
  assertPositiveInt(r.eval_count, 'eval_count');
  if (maxTokens !== undefined) {
    assert.ok(r.eval_count <= maxTokens, `eval_count ≤ num_predict, got ${r.eval_count}`);
    if (r.done_reason === 'length') assert.equal(r.eval_count, maxTokens, 'done_reason length means num_predict tokens');
  }
}

// Collects a streamed response. ollama-js itself throws when the stream does not end with done:true.
async function collect(iterable) {
  const parts = [];
  for await (const part of iterable) parts.push(part);
  assert.ok(parts.length >= 2, `a stream has several lines, got ${parts.length}`);
  parts.slice(0, -1).forEach((p, i) => assert.equal(p.done, false, `line ${i} has done: false`));
  return parts;
}

describe('ollama client', { timeout: 1_800_000 }, () => {
  let server;
  let ollama;

  before(async () => {
    server = await startServer();
    ollama = new Ollama({ host: server.ollamaURL });
  });

  after(async () => {
    await server?.stopChecked();
  });

  it('version', async () => {
    const v = await ollama.version();
    assert.match(v.version, /^\d+\.\d+\.\d+$/);
  });

  it('generate', async () => {
    const r = await ollama.generate({ model: 'demo', prompt: 'Once upon a time', options: { num_predict: 8, temperature: 0 } });
    assert.equal(baseName(r.model), 'demo');
    assert.equal(typeof r.response, 'string');
    assert.ok(r.response.length > 0, 'some text');
    checkFinal(r, { maxTokens: 8 });
    assert.ok(Array.isArray(r.context) && r.context.length > 0 && r.context.every(Number.isInteger), 'context is a list of token ids');
  });

  it('generate with stream: true', async () => {
    const parts = await collect(await ollama.generate({ model: 'demo', prompt: 'Once upon a time', stream: true, options: { num_predict: 8 } }));
    for (const p of parts) {
      assert.equal(baseName(p.model), 'demo');
      assert.equal(typeof p.response, 'string');
      assertTimestamp(p.created_at, 'created_at');
    }
    assert.ok(parts.map((p) => p.response).join('').length > 0, 'the stream carries text');
    checkFinal(parts.at(-1), { maxTokens: 8 });
  });

  it('chat', async () => {
    const r = await ollama.chat({ model: 'demo', messages: [{ role: 'user', content: 'Hello there' }], options: { num_predict: 8, temperature: 0 } });
    assert.equal(baseName(r.model), 'demo');
    assert.equal(r.message.role, 'assistant');
    assert.equal(typeof r.message.content, 'string');
    assert.ok(r.message.content.length > 0);
    checkFinal(r, { maxTokens: 8 });
  });

  it('chat with stream: true', async () => {
    const parts = await collect(
      await ollama.chat({ model: 'demo', messages: [{ role: 'user', content: 'Hello there' }], stream: true, options: { num_predict: 8 } }),
    );
    for (const p of parts) {
      assert.equal(p.message.role, 'assistant');
      assert.equal(typeof p.message.content, 'string');
    }
    assert.ok(parts.map((p) => p.message.content).join('').length > 0, 'the stream carries content');
    checkFinal(parts.at(-1), { maxTokens: 8 });
  });

  it('chat with format as a JSON schema', async () => {
    const format = {
      type: 'object',
      properties: {
        name: { type: 'string', maxLength: 10 },
        age: { type: 'integer' },
        member: { type: 'boolean' },
      },
      required: ['name', 'age', 'member'],
      additionalProperties: false,
    };
    const r = await ollama.chat({
      model: 'demo',
      messages: [{ role: 'user', content: 'A person, please' }],
      format,
      options: { num_predict: 400, temperature: 1, seed: 5 },
    });
    assert.equal(r.done_reason, 'stop', `the JSON is complete (content: ${r.message.content})`);
    let obj;
    assert.doesNotThrow(() => (obj = JSON.parse(r.message.content)), `content is JSON: ${r.message.content}`);
    assert.equal(typeof obj.name, 'string');
    assert.ok(Number.isInteger(obj.age), `age is an integer: ${obj.age}`);
    assert.equal(typeof obj.member, 'boolean');

    // The same through a stream: the concatenated content parses.
    const parts = await collect(
      await ollama.chat({
        model: 'demo',
        messages: [{ role: 'user', content: 'A person, please' }],
        format,
        stream: true,
        options: { num_predict: 400, temperature: 1, seed: 5 },
      }),
    );
    const text = parts.map((p) => p.message.content).join('');
    assert.equal(parts.at(-1).done_reason, 'stop', text);
    assert.equal(typeof JSON.parse(text).age, 'number');
  });

  it('chat accepts a tool-call history with object arguments', async () => {
    // Ollama's tool-call arguments are JSON objects (OpenAI's are strings); a client replays them.
    const tools = [
      {
        type: 'function',
        function: {
          name: 'get_weather',
          description: 'Weather for a city',
          parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
        },
      },
    ];
    const r = await ollama.chat({
      model: 'demo',
      tools,
      messages: [
        { role: 'user', content: 'Weather in Paris?' },
        { role: 'assistant', content: '', tool_calls: [{ function: { name: 'get_weather', arguments: { city: 'Paris' } } }] },
        { role: 'tool', content: JSON.stringify({ temp: 21 }), tool_name: 'get_weather' },
      ],
      options: { num_predict: 6 },
    });
    assert.equal(r.message.role, 'assistant');
    assert.equal(r.done, true);
    for (const tc of r.message.tool_calls ?? []) {
      assert.equal(typeof tc.function.arguments, 'object', `Ollama tool-call arguments are objects: ${JSON.stringify(tc)}`);
    }
  });

  it('embed', async () => {
    const r = await ollama.embed({ model: 'embed', input: ['hello world', 'second input'] });
    assert.equal(baseName(r.model), 'embed');
    assert.equal(r.embeddings.length, 2);
    r.embeddings.forEach((e, i) => assertUnitNorm(e, EMBED_DIMS, `embeddings[${i}]`));
    const one = await ollama.embed({ model: 'embed', input: 'hello world' });
    assert.equal(one.embeddings.length, 1);
    for (let i = 0; i < EMBED_DIMS; i++) assert.ok(Math.abs(one.embeddings[0][i] - r.embeddings[0][i]) < 1e-5, `dimension ${i} agrees`);
  });

  it('embeddings (legacy)', async () => {
    const r = await ollama.embeddings({ model: 'embed', prompt: 'hello world' });
    assert.ok(Array.isArray(r.embedding), 'embedding is an array');
    assert.equal(r.embedding.length, EMBED_DIMS);
    assert.ok(r.embedding.every(Number.isFinite), 'finite numbers');
    assert.ok(r.embedding.some((x) => x !== 0), 'not all zero');
  });

  it('list', async () => {
    const { models } = await ollama.list();
    assert.ok(Array.isArray(models), 'models is a list');
    for (const m of models) {
      assert.ok(typeof m.name === 'string' && m.name.length > 0, `name: ${JSON.stringify(m)}`);
      assert.ok(typeof m.model === 'string' && m.model.length > 0, `model: ${JSON.stringify(m)}`);
      assert.equal(m.model, m.name, 'name and model agree');
      assertTimestamp(m.modified_at, 'modified_at');
      assertPositiveInt(m.size, 'size');
      assert.match(m.digest, /^[0-9a-f]{64}$/, 'digest is a sha256 hex');
      assert.ok(m.details && typeof m.details === 'object', 'details');
      assert.equal(m.details.format, 'gguf');
      assert.ok(typeof m.details.family === 'string' && m.details.family.length > 0, `details.family: ${JSON.stringify(m.details)}`);
      assert.ok(Array.isArray(m.details.families ?? []), 'details.families is a list when present');
      assert.ok(typeof m.details.parameter_size === 'string', 'details.parameter_size');
      assert.ok(
        typeof m.details.quantization_level === 'string' && m.details.quantization_level.length > 0,
        `details.quantization_level: ${JSON.stringify(m.details)}`,
      );
    }
    const byName = Object.fromEntries(models.map((m) => [baseName(m.name), m]));
    assert.ok(byName.demo, `demo listed: ${models.map((m) => m.name)}`);
    assert.ok(byName.embed, `embed listed: ${models.map((m) => m.name)}`);
    assert.equal(byName.demo.details.family, 'qwen2');
    assert.equal(byName.demo.details.quantization_level, 'F16');
    assert.equal(byName.embed.details.family, 'bert');
  });

  it('show', async () => {
    const r = await ollama.show({ model: 'demo' });
    assert.ok(r.model_info && typeof r.model_info === 'object', 'model_info is an object');
    assertPositiveInt(r.model_info['qwen2.context_length'], "model_info['qwen2.context_length']");
    assert.equal(r.model_info['general.architecture'], 'qwen2');
    assert.ok(Array.isArray(r.capabilities), 'capabilities is a list');
    assert.ok(r.capabilities.includes('completion'), `capabilities: ${r.capabilities}`);
    assert.ok(r.capabilities.includes('tools'), `the Qwen2.5 template is tool-capable: ${r.capabilities}`);
    assert.equal(r.details?.family, 'qwen2');
    assert.equal(typeof r.template, 'string');
    assert.ok(r.template.length > 0, 'template');
    assert.equal(typeof r.modelfile, 'string');
    assertTimestamp(r.modified_at, 'modified_at');

    const e = await ollama.show({ model: 'embed' });
    assert.ok(e.capabilities.includes('embedding'), `embed capabilities: ${e.capabilities}`);
    assert.ok(!e.capabilities.includes('completion'), `an embedding model does not complete: ${e.capabilities}`);
    assertPositiveInt(e.model_info['bert.context_length'], "model_info['bert.context_length']");
  });

  it('ps lists a model after a request', async () => {
    await ollama.generate({ model: 'demo', prompt: 'Hi', options: { num_predict: 2 } });
    const { models } = await ollama.ps();
    assert.ok(Array.isArray(models), 'models is a list');
    const demo = models.find((m) => baseName(m.name) === 'demo');
    assert.ok(demo, `demo is loaded: ${JSON.stringify(models)}`);
    assert.equal(demo.model, demo.name);
    assertPositiveInt(demo.size, 'size');
    assertNonNegativeInt(demo.size_vram, 'size_vram');
    assertTimestamp(demo.expires_at, 'expires_at');
    assertPositiveInt(demo.context_length, 'context_length');
    assert.equal(demo.details?.family, 'qwen2');
    assert.match(demo.digest, /^[0-9a-f]{64}$/);
  });

  it('unknown model → ResponseError 404', async () => {
    await assert.rejects(ollama.generate({ model: 'no-such-model', prompt: 'x' }), (err) => {
      assert.equal(err.name, 'ResponseError', `${err.name}: ${err.message}`);
      assert.equal(err.status_code, 404);
      assert.match(err.error, /not found/);
      return true;
    });
    await assert.rejects(ollama.chat({ model: 'no-such-model', messages: [{ role: 'user', content: 'x' }], stream: true }), (err) => {
      assert.equal(err.status_code, 404, `${err.name}: ${err.message}`);
      return true;
    });
    await assert.rejects(ollama.show({ model: 'no-such-model' }), (err) => {
      assert.equal(err.status_code, 404, `${err.name}: ${err.message}`);
      return true;
    });
  });
});
