// The official `openai` npm client against a real `rustycage serve` (OpenAI port).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';

import { assertPositiveInt, assertUnitNorm, checkChatStream } from './lib/assertions.mjs';
import { startServer } from './lib/server.mjs';

const EMBED_DIMS = 128;

const weatherTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Weather for a city',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string', maxLength: 12 } },
      required: ['city'],
    },
  },
};

const user = (content) => [{ role: 'user', content }];

describe('openai client', { timeout: 1_800_000 }, () => {
  let server;
  let client;

  before(async () => {
    server = await startServer();
    client = new OpenAI({ baseURL: `${server.openaiURL}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 300_000 });
  });

  after(async () => {
    await server?.stopChecked();
  });

  it('chat.completions.create', async () => {
    const r = await client.chat.completions.create({ model: 'demo', messages: user('Hello there'), max_tokens: 8, temperature: 0 });
    assert.equal(r.object, 'chat.completion');
    assert.ok(typeof r.id === 'string' && r.id.length > 0, 'id');
    assert.equal(r.model, 'demo');
    assertPositiveInt(r.created, 'created');
    assert.equal(r.choices.length, 1);
    const c = r.choices[0];
    assert.equal(c.index, 0);
    assert.equal(c.message.role, 'assistant');
    assert.equal(typeof c.message.content, 'string');
    assert.ok(c.message.content.length > 0, 'some content');
    assert.ok(['stop', 'length'].includes(c.finish_reason), `finish_reason ${c.finish_reason}`);
    assertPositiveInt(r.usage.prompt_tokens, 'usage.prompt_tokens');
    assertPositiveInt(r.usage.completion_tokens, 'usage.completion_tokens');
    assert.ok(r.usage.completion_tokens <= 8);
    if (c.finish_reason === 'length') assert.equal(r.usage.completion_tokens, 8);
    assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
  });

  it('chat.completions.create accepts max_completion_tokens', async () => {
    const r = await client.chat.completions.create({ model: 'demo', messages: user('Hello'), max_completion_tokens: 3 });
    assert.ok(r.usage.completion_tokens <= 3, `completion_tokens ${r.usage.completion_tokens}`);
    if (r.choices[0].finish_reason === 'length') assert.equal(r.usage.completion_tokens, 3);
  });

  it('content-part arrays, system messages and stop lists are accepted', async () => {
    const r = await client.chat.completions.create({
      model: 'demo',
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'user', content: [{ type: 'text', text: 'Hello' }, { type: 'text', text: 'there' }] },
      ],
      stop: ['\n\n', 'END'],
      max_tokens: 4,
      user: 'client-suite',
    });
    assert.equal(r.object, 'chat.completion');
    assert.equal(typeof r.choices[0].message.content, 'string');
  });

  it('chat.completions.create with stream: true', async () => {
    const stream = await client.chat.completions.create({ model: 'demo', messages: user('Hello there'), max_tokens: 6, stream: true });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    const { text } = checkChatStream(chunks);
    assert.ok(text.length > 0, 'the stream carries content');
    assert.equal(chunks[0].model, 'demo');
  });

  it('stream_options.include_usage adds a final chunk with choices: [] and usage', async () => {
    const stream = await client.chat.completions.create({
      model: 'demo',
      messages: user('Hello there'),
      max_tokens: 6,
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    const { usage } = checkChatStream(chunks, { expectUsage: true, maxTokens: 6 });
    assert.deepEqual(chunks.at(-1).choices, []);
    assert.ok(usage.completion_tokens > 0);
  });

  it('chat.completions.stream() helper assembles a final completion', async () => {
    const runner = client.chat.completions.stream({ model: 'demo', messages: user('Hi'), max_tokens: 5 });
    const final = await runner.finalChatCompletion();
    assert.equal(final.choices.length, 1);
    assert.equal(final.choices[0].message.role, 'assistant');
    assert.equal(typeof final.choices[0].message.content, 'string');
    assert.ok(['stop', 'length'].includes(final.choices[0].finish_reason));
  });

  it('completions.create, plain and streamed', async () => {
    const r = await client.completions.create({ model: 'demo', prompt: 'Once upon a time', max_tokens: 6, temperature: 0 });
    assert.equal(r.object, 'text_completion');
    assert.equal(r.model, 'demo');
    assert.equal(r.choices.length, 1);
    assert.equal(typeof r.choices[0].text, 'string');
    assert.ok(r.choices[0].text.length > 0);
    assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
    assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);

    const stream = await client.completions.create({ model: 'demo', prompt: 'Once upon a time', max_tokens: 6, stream: true });
    let text = '';
    let finishes = 0;
    for await (const chunk of stream) {
      assert.equal(chunk.object, 'text_completion');
      for (const c of chunk.choices) {
        text += c.text ?? '';
        if (c.finish_reason) finishes += 1;
      }
    }
    assert.ok(text.length > 0);
    assert.equal(finishes, 1, 'exactly one finish_reason');
  });

  it('embeddings.create with the default (base64) encoding', async () => {
    const r = await client.embeddings.create({ model: 'embed', input: ['hello world', 'second input'] });
    assert.equal(r.object, 'list');
    assert.equal(r.data.length, 2);
    r.data.forEach((d, i) => {
      assert.equal(d.object, 'embedding');
      assert.equal(d.index, i);
      assertUnitNorm(d.embedding, EMBED_DIMS, `data[${i}].embedding (decoded from base64 by the client)`);
    });
    assertPositiveInt(r.usage?.prompt_tokens, 'usage.prompt_tokens');
  });

  it('embeddings.create with encoding_format: float matches the base64 one', async () => {
    const f = await client.embeddings.create({ model: 'embed', input: 'hello world', encoding_format: 'float' });
    assert.equal(f.data.length, 1);
    assertUnitNorm(f.data[0].embedding, EMBED_DIMS, 'float embedding');
    const b = await client.embeddings.create({ model: 'embed', input: 'hello world' });
    for (let i = 0; i < EMBED_DIMS; i++) {
      assert.ok(Math.abs(f.data[0].embedding[i] - b.data[0].embedding[i]) < 1e-6, `dimension ${i} agrees`);
    }
    // Asked explicitly for base64, the client hands the string through untouched.
    const raw = await client.embeddings.create({ model: 'embed', input: 'hello world', encoding_format: 'base64' });
    assert.equal(typeof raw.data[0].embedding, 'string');
    assert.equal(Buffer.from(raw.data[0].embedding, 'base64').length, EMBED_DIMS * 4);
  });

  it('response_format json_schema yields JSON with the required keys', async () => {
    const r = await client.chat.completions.create({
      model: 'demo',
      messages: user('A person, please'),
      max_tokens: 400,
      temperature: 1,
      seed: 5,
      response_format: {
        type: 'json_schema',
        json_schema: {
          name: 'person',
          strict: true,
          schema: {
            type: 'object',
            properties: {
              name: { type: 'string', maxLength: 10 },
              age: { type: 'integer' },
              member: { type: 'boolean' },
            },
            required: ['name', 'age', 'member'],
            additionalProperties: false,
          },
        },
      },
    });
    const c = r.choices[0];
    assert.equal(c.finish_reason, 'stop', `the JSON is complete (content: ${c.message.content})`);
    let obj;
    assert.doesNotThrow(() => (obj = JSON.parse(c.message.content)), `content is JSON: ${c.message.content}`);
    assert.equal(typeof obj, 'object');
    assert.equal(typeof obj.name, 'string');
    assert.ok(Number.isInteger(obj.age), `age is an integer: ${obj.age}`);
    assert.equal(typeof obj.member, 'boolean');
    assert.deepEqual(Object.keys(obj).sort(), ['age', 'member', 'name']);
  });

  it('forced tool call round trip', async (t) => {
    const messages = user('What is the weather in Paris?');
    const r = await client.chat.completions.create({
      model: 'demo',
      messages,
      tools: [weatherTool],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
      seed: 1,
      max_tokens: 2000, // room for several calls: see "Known server bugs" in README.md
    });
    const c = r.choices[0];
    assert.equal(c.finish_reason, 'tool_calls');
    assert.equal(c.message.role, 'assistant');
    assert.ok(c.message.tool_calls?.length >= 1, JSON.stringify(c.message));
    for (const call of c.message.tool_calls) {
      assert.ok(typeof call.id === 'string' && call.id.length > 0, 'tool call id');
      assert.equal(call.type, 'function');
      assert.equal(call.function.name, 'get_weather');
      assert.equal(typeof call.function.arguments, 'string', 'OpenAI tool-call arguments are a JSON string');
      const args = JSON.parse(call.function.arguments);
      assert.ok(args && typeof args === 'object' && !Array.isArray(args), 'arguments parse to an object');
      assert.equal(typeof args.city, 'string');
    }
    assert.equal(new Set(c.message.tool_calls.map((tc) => tc.id)).size, c.message.tool_calls.length, 'tool call ids are unique');
    t.diagnostic(`${c.message.tool_calls.length} tool call(s) in ${r.usage.completion_tokens} tokens`);
    const call = c.message.tool_calls[0];

    // The assistant message goes back as the client returned it, then the tool's answer.
    const r2 = await client.chat.completions.create({
      model: 'demo',
      messages: [
        ...messages,
        c.message,
        ...c.message.tool_calls.map((tc) => ({ role: 'tool', tool_call_id: tc.id, content: JSON.stringify({ temp: 21 }) })),
      ],
      tools: [weatherTool],
      max_tokens: 8,
    });
    assert.equal(r2.object, 'chat.completion');
    assert.equal(r2.choices[0].message.role, 'assistant');
    assert.ok(['stop', 'length', 'tool_calls'].includes(r2.choices[0].finish_reason));
  });

  const streamedToolCallBody = {
    model: 'demo',
    messages: user('What is the weather in Paris?'),
    tools: [weatherTool],
    tool_choice: { type: 'function', function: { name: 'get_weather' } },
    seed: 2,
    max_tokens: 2000, // room for several calls: see "Known server bugs" in README.md
    stream: true,
  };

  it('streamed tool calls: every delta has index, the first fragment id/type/name', async (t) => {
    const stream = await client.chat.completions.create(streamedToolCallBody);
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    const { finish, toolCalls } = checkChatStream(chunks);
    assert.equal(finish, 'tool_calls');
    assert.ok(toolCalls.length >= 1);
    assert.equal(toolCalls.filter(Boolean).length, toolCalls.length, 'tool-call indexes are 0, 1, 2, …');
    t.diagnostic(`${toolCalls.length} streamed tool call(s) in ${chunks.length} chunks`);
    for (const tc of toolCalls) {
      assert.equal(tc.name, 'get_weather');
      const args = JSON.parse(tc.arguments);
      assert.equal(typeof args.city, 'string');
    }
  });

  it('chat.completions.stream() accumulates streamed tool calls', async (t) => {
    const final = await client.chat.completions.stream({ ...streamedToolCallBody, seed: 3 }).finalChatCompletion();
    const calls = final.choices[0].message.tool_calls ?? [];
    assert.ok(calls.length >= 1, JSON.stringify(final.choices[0]));
    for (const call of calls) {
      assert.equal(call.type, 'function');
      assert.equal(call.function.name, 'get_weather');
      assert.equal(typeof JSON.parse(call.function.arguments).city, 'string');
    }
    assert.equal(final.choices[0].finish_reason, 'tool_calls');
    t.diagnostic(`${calls.length} tool call(s) through chat.completions.stream()`);
  });

  // Known server bug (see README.md): the grammar llama.cpp builds for the Qwen2.5 template allows
  // one or more <tool_call> blocks whatever parallel_tool_calls says.
  it('parallel_tool_calls: false yields exactly one tool call', async () => {
    const r = await client.chat.completions.create({
      model: 'demo',
      messages: user('Weather in Paris?'),
      tools: [weatherTool],
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
      parallel_tool_calls: false,
      temperature: 0,
      max_tokens: 300,
    });
    assert.equal(r.choices[0].message.tool_calls?.length, 1, JSON.stringify(r.choices[0].message));
    assert.equal(r.choices[0].finish_reason, 'tool_calls');
  });

  it('models.list() and models.retrieve()', async () => {
    const ids = [];
    for await (const m of client.models.list()) {
      assert.equal(m.object, 'model');
      assert.equal(typeof m.owned_by, 'string');
      assert.ok(Number.isInteger(m.created));
      ids.push(m.id);
    }
    assert.ok(ids.includes('demo'), `demo listed: ${ids}`);
    assert.ok(ids.includes('embed'), `embed listed: ${ids}`);
    const demo = await client.models.retrieve('demo');
    assert.equal(demo.id, 'demo');
    await assert.rejects(client.models.retrieve('no-such-model'), OpenAI.NotFoundError);
  });

  it('unknown model → NotFoundError (404)', async () => {
    await assert.rejects(client.chat.completions.create({ model: 'no-such-model', messages: user('x'), max_tokens: 2 }), (err) => {
      assert.ok(err instanceof OpenAI.NotFoundError, `NotFoundError, got ${err?.constructor?.name}: ${err?.message}`);
      assert.equal(err.status, 404);
      assert.match(err.message, /no-such-model/);
      return true;
    });
  });

  it('bad bodies → BadRequestError (400) naming the field', async () => {
    await assert.rejects(client.chat.completions.create({ model: 'demo', messages: [] }), (err) => {
      assert.ok(err instanceof OpenAI.BadRequestError, `BadRequestError, got ${err?.constructor?.name}: ${err?.message}`);
      assert.equal(err.status, 400);
      assert.equal(err.type, 'invalid_request_error');
      assert.equal(err.param, 'messages');
      return true;
    });
    await assert.rejects(client.chat.completions.create({ model: 'demo', messages: user('x'), temperature: 'hot' }), (err) => {
      assert.ok(err instanceof OpenAI.BadRequestError, `BadRequestError, got ${err?.constructor?.name}: ${err?.message}`);
      assert.equal(err.status, 400);
      assert.equal(err.param, 'temperature');
      return true;
    });
    await assert.rejects(client.embeddings.create({ model: 'demo', input: 'x' }), OpenAI.BadRequestError, 'a chat model cannot embed');
    // The server keeps serving.
    const ok = await client.chat.completions.create({ model: 'demo', messages: user('still there?'), max_tokens: 2 });
    assert.equal(ok.object, 'chat.completion');
  });
  it('responses.create (the Responses API), plain and streamed', async () => {
    const r = await client.responses.create({ model: 'demo', instructions: 'Be brief.', input: 'Hello', max_output_tokens: 6 });
    assert.equal(r.object, 'response');
    assert.equal(typeof r.output_text, 'string');
    assert.ok(r.output_text.length > 0);
    assert.equal(r.usage.output_tokens, 6);
    const stream = await client.responses.create({ model: 'demo', input: 'Hi', max_output_tokens: 4, stream: true });
    const types = [];
    let text = '';
    for await (const ev of stream) {
      types.push(ev.type);
      if (ev.type === 'response.output_text.delta') text += ev.delta;
    }
    assert.equal(types[0], 'response.created');
    assert.ok(['response.completed', 'response.incomplete'].includes(types.at(-1)), types.at(-1));
    assert.ok(text.length > 0);
  });
});
