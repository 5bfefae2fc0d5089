// Tool round trips with the official `openai` and `ollama` clients on templates whose rules differ
// from Qwen's (issue 32): Mistral-Nemo (tool-call ids must be 9 letters and digits) and gpt-oss
// (calls in channels). Each is the generated tiny-chat given the template from the pinned llama.cpp
// tree with /api/create; random weights, so a call comes from the forced-call grammar.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { Ollama } from 'ollama';

import { buildDir, startServer } from './lib/server.mjs';

// The pinned tree's place, as CMake found it (cmake/llama.cmake writes it into the build dir).
const templatesDir = path.join(fs.readFileSync(path.join(buildDir, 'llama-source-dir'), 'utf8').trim(), 'models', 'templates');

const timeTool = {
  type: 'function',
  function: { name: 'get_time', description: 'The time now', parameters: { type: 'object', properties: {} } },
};
const question = [{ role: 'user', content: 'What time is it?' }];

describe('tool round trips on other families', { timeout: 600_000 }, () => {
  let server;
  let openai;
  let ollama;

  before(async () => {
    server = await startServer();
    openai = new OpenAI({ baseURL: `${server.openaiURL}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 300_000 });
    ollama = new Ollama({ host: server.ollamaURL });
    for (const [model, file] of [['nemo', 'mistralai-Mistral-Nemo-Instruct-2407.jinja'], ['oss', 'openai-gpt-oss-120b.jinja']]) {
      const template = fs.readFileSync(path.join(templatesDir, file), 'utf8');
      const r = await ollama.create({ model, from: 'demo', template, stream: false });
      assert.equal(r.status, 'success');
    }
  });

  after(async () => {
    await server?.stopChecked();
  });

  it('openai: Mistral-Nemo makes a call with an id its template takes, and the client sends it back', async () => {
    const r = await openai.chat.completions.create({
      model: 'nemo', messages: question, tools: [timeTool], tool_choice: 'required', max_tokens: 96, seed: 7,
    });
    const c = r.choices[0];
    assert.equal(c.finish_reason, 'tool_calls', JSON.stringify(r));
    const [call] = c.message.tool_calls;
    assert.equal(call.function.name, 'get_time');
    assert.match(call.id, /^[A-Za-z0-9]{9}$/, 'Mistral templates demand 9 letters and digits');
    const back = await openai.chat.completions.create({
      model: 'nemo', tools: [timeTool], max_tokens: 8,
      messages: [...question, c.message, { role: 'tool', tool_call_id: call.id, content: '12:00' }],
    });
    assert.ok(['stop', 'length'].includes(back.choices[0].finish_reason));
  });

  it('openai: gpt-oss takes a call with an OpenAI-style id back', async () => {
    const call = { id: 'call_6wHn2Xq0ZpL1aBcD3eFgH4iJ', type: 'function', function: { name: 'get_time', arguments: '{}' } };
    const back = await openai.chat.completions.create({
      model: 'oss', tools: [timeTool], max_tokens: 8, reasoning_effort: 'low',
      messages: [...question, { role: 'assistant', content: null, tool_calls: [call] }, { role: 'tool', tool_call_id: call.id, content: '12:00' }],
    });
    assert.ok(['stop', 'length'].includes(back.choices[0].finish_reason));
  });

  for (const model of ['nemo', 'oss']) {
    it(`ollama: a ${model} history without ids renders and answers`, async () => {
      const r = await ollama.chat({
        model, tools: [timeTool], options: { num_predict: 8, seed: 7 },
        messages: [
          ...question,
          { role: 'assistant', content: '', tool_calls: [{ function: { name: 'get_time', arguments: {} } }] },
          { role: 'tool', tool_name: 'get_time', content: '12:00' },
        ],
      });
      assert.equal(r.message.role, 'assistant');
      assert.ok(r.eval_count > 0);
    });
  }
});
