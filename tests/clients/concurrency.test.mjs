// Many official-client streams at once, and a client that hangs up mid-stream: its sequence must be
// freed (checked through /metrics, polled with a deadline).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';

import { checkChatStream } from './lib/assertions.mjs';
import { metricValue, scrapeMetrics, startServer, waitFor } from './lib/server.mjs';

const CLIENTS = 32;
const MAX_TOKENS = 24;
const demo = { model: 'demo' };

describe('concurrency', { timeout: 1_800_000 }, () => {
  let server;
  let client;

  before(async () => {
    server = await startServer();
    client = new OpenAI({ baseURL: `${server.openaiURL}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 300_000 });
  });

  after(async () => {
    await server?.stopChecked();
  });

  it(`${CLIENTS} simultaneous streaming chats are all framed correctly`, async () => {
    const one = async (i) => {
      const stream = await client.chat.completions.create({
        model: 'demo',
        messages: [{ role: 'user', content: `Client ${i} says hello` }],
        max_tokens: MAX_TOKENS,
        stream: true,
        stream_options: { include_usage: true },
      });
      const chunks = [];
      for await (const chunk of stream) chunks.push(chunk); // completes only when the stream ended
      try {
        const { text } = checkChatStream(chunks, { expectUsage: true, maxTokens: MAX_TOKENS });
        assert.ok(text.length > 0, 'the stream carries content');
      } catch (err) {
        err.message = `client ${i}: ${err.message}`;
        throw err;
      }
      return chunks[0].id;
    };
    const results = await Promise.allSettled(Array.from({ length: CLIENTS }, (_, i) => one(i)));
    const failed = results.filter((r) => r.status === 'rejected');
    assert.equal(failed.length, 0, `${failed.length}/${CLIENTS} clients failed:\n${failed.map((f) => f.reason?.stack ?? f.reason).join('\n')}`);
    const ids = results.map((r) => r.value);
    assert.equal(new Set(ids).size, CLIENTS, 'every stream has its own id');
  });

  it('a client that aborts mid-stream frees its sequence', async () => {
    const scrape = () => scrapeMetrics(server.openaiURL);
    const initial = await scrape();
    const cancelledBefore = metricValue(initial.samples, 'rustycage_requests_finished_total', { ...demo, reason: 'cancelled' }) ?? 0;

    // Long enough that it is still generating when the client hangs up.
    const ac = new AbortController();
    const stream = await client.chat.completions.create(
      { model: 'demo', messages: [{ role: 'user', content: 'Tell me a very long story' }], max_tokens: 3000, stream: true },
      { signal: ac.signal },
    );
    let seen = 0;
    let finished = false;
    let runningDuring;
    // openai-node's Stream ends quietly when its request is aborted; older versions threw.
    try {
      for await (const chunk of stream) {
        if (chunk.choices[0]?.finish_reason) finished = true;
        seen += 1;
        if (seen === 2) runningDuring = metricValue((await scrape()).samples, 'rustycage_running_sequences', demo);
        if (seen === 3) ac.abort();
      }
    } catch (err) {
      if (!(err instanceof OpenAI.APIUserAbortError || err?.name === 'AbortError')) throw err;
    }
    assert.ok(ac.signal.aborted && seen >= 3, `the client aborted after 3 chunks (saw ${seen})`);
    assert.ok(!finished, 'the generation was still running when the client aborted');
    assert.ok(runningDuring >= 1, `rustycage_running_sequences{model="demo"} counts the live stream, got ${runningDuring}`);

    // While it runs the sequence is counted; after the hang-up it must go back to 0.
    let last;
    await waitFor(
      async () => {
        last = await scrape();
        const running = metricValue(last.samples, 'rustycage_running_sequences', demo);
        const cancelled = metricValue(last.samples, 'rustycage_requests_finished_total', { ...demo, reason: 'cancelled' });
        const cells = metricValue(last.samples, 'rustycage_kv_cells_used', demo);
        return running === 0 && cancelled > cancelledBefore && cells === 0;
      },
      {
        timeoutMs: 30_000,
        describe: () => {
          const s = last?.samples ?? [];
          const show = (name, labels) => `${name}${JSON.stringify(labels)}=${metricValue(s, name, labels)}`;
          return [
            show('rustycage_running_sequences', demo),
            `${show('rustycage_requests_finished_total', { ...demo, reason: 'cancelled' })} (before: ${cancelledBefore})`,
            show('rustycage_kv_cells_used', demo),
            `\n--- /metrics (rustycage_* lines) ---\n${(last?.text ?? '').split('\n').filter((l) => l.startsWith('rustycage_')).join('\n')}`,
          ].join(', ');
        },
      },
    );

    // And the server goes on serving.
    const r = await client.chat.completions.create({ model: 'demo', messages: [{ role: 'user', content: 'Still there?' }], max_tokens: 2 });
    assert.equal(r.object, 'chat.completion');
  });
});
