// Shape checks shared by the test files. The test models have random weights, so their text is
// gibberish: the tests assert structure (framing, types, counts), which the server guarantees.
import assert from 'node:assert/strict';

export function assertUnitNorm(vec, dims, what = 'embedding') {
  assert.ok(Array.isArray(vec), `${what} is an array, got ${typeof vec}`);
  assert.equal(vec.length, dims, `${what} has ${dims} dimensions`);
  let sq = 0;
  for (const x of vec) {
    assert.equal(typeof x, 'number', `${what} holds numbers`);
    assert.ok(Number.isFinite(x), `${what} holds finite numbers, got ${x}`);
    sq += x * x;
  }
  const norm = Math.sqrt(sq);
  assert.ok(Math.abs(norm - 1) < 1e-3, `${what} has unit L2 norm, got ${norm}`);
}

export function assertNonNegativeInt(v, what) {
  assert.ok(Number.isInteger(v) && v >= 0, `${what} is a non-negative integer, got ${JSON.stringify(v)}`);
}

export function assertPositiveInt(v, what) {
  assert.ok(Number.isInteger(v) && v > 0, `${what} is a positive integer, got ${JSON.stringify(v)}`);
}

export function assertTimestamp(v, what) {
  assert.equal(typeof v, 'string', `${what} is a string`);
  assert.ok(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}/.test(v) && !Number.isNaN(Date.parse(v)), `${what} is RFC 3339, got ${v}`);
}

/**
 * Checks one chat.completion.chunk stream (already collected) the way the official clients and
 * their users rely on it. Returns {text, finish, usage, toolCalls}.
 */
export function checkChatStream(chunks, { expectUsage = false, maxTokens } = {}) {
  assert.ok(chunks.length >= 2, `a stream has several chunks, got ${chunks.length}`);
  const id = chunks[0].id;
  assert.ok(typeof id === 'string' && id.length > 0, 'chunks carry an id');
  let text = '';
  let finishes = 0;
  let finish = null;
  let sawRole = false;
  let usageChunk = null;
  const toolCalls = [];
  chunks.forEach((c, i) => {
    assert.equal(c.object, 'chat.completion.chunk', `chunk ${i} object`);
    assert.equal(c.id, id, `chunk ${i} has the stream's id`);
    if (c.choices.length === 0) {
      assert.equal(usageChunk, null, 'at most one chunk without choices');
      usageChunk = c;
      return;
    }
    assert.equal(usageChunk, null, 'the usage chunk is the last one');
    assert.equal(finish, null, `no choice chunk after the finish_reason (chunk ${i})`);
    assert.equal(c.choices.length, 1, 'one choice per chunk');
    const ch = c.choices[0];
    assert.equal(ch.index, 0);
    if (i === 0) assert.equal(ch.delta.role, 'assistant', 'the first delta carries role: assistant');
    if (ch.delta.role !== undefined && ch.delta.role !== null) sawRole = true;
    if (typeof ch.delta.content === 'string') text += ch.delta.content;
    for (const tc of ch.delta.tool_calls ?? []) {
      assert.ok(Number.isInteger(tc.index), `every tool-call delta has an integer index: ${JSON.stringify(tc)}`);
      let call = toolCalls[tc.index];
      if (!call) {
        assert.ok(typeof tc.id === 'string' && tc.id.length > 0, `the first fragment of a tool call has its id: ${JSON.stringify(tc)}`);
        assert.equal(tc.type, 'function', 'the first fragment of a tool call has type: function');
        assert.ok(typeof tc.function?.name === 'string' && tc.function.name.length > 0, 'the first fragment has function.name');
        call = toolCalls[tc.index] = { id: tc.id, name: tc.function.name, arguments: '' };
      }
      if (typeof tc.function?.arguments === 'string') call.arguments += tc.function.arguments;
    }
    if (ch.finish_reason !== null && ch.finish_reason !== undefined) {
      finishes += 1;
      finish = ch.finish_reason;
    }
  });
  assert.ok(sawRole, 'some delta carries the role');
  assert.equal(finishes, 1, 'exactly one chunk has a finish_reason');
  assert.ok(['stop', 'length', 'tool_calls'].includes(finish), `finish_reason is a known value, got ${finish}`);
  if (expectUsage) {
    assert.ok(usageChunk, 'with include_usage the stream ends with a chunk with choices: [] and usage');
    const u = usageChunk.usage;
    assertPositiveInt(u.prompt_tokens, 'usage.prompt_tokens');
    assertPositiveInt(u.completion_tokens, 'usage.completion_tokens');
    assert.equal(u.total_tokens, u.prompt_tokens + u.completion_tokens, 'usage.total_tokens');
    if (maxTokens !== undefined) {
      assert.ok(u.completion_tokens <= maxTokens, `at most max_tokens generated, got ${u.completion_tokens}`);
      if (finish === 'length') assert.equal(u.completion_tokens, maxTokens, 'finish_reason length means max_tokens were generated');
    }
  } else {
    assert.equal(usageChunk, null, 'no usage chunk unless stream_options.include_usage');
  }
  for (const c of chunks.slice(0, usageChunk ? -1 : undefined)) {
    assert.ok(c.usage === undefined || c.usage === null, 'only the usage chunk carries usage');
  }
  return { text, finish, usage: usageChunk?.usage, toolCalls };
}
