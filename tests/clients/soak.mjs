// The soak (`make soak`, scripts/soak.sh): 64 concurrent clients mixing every kind of traffic
// against one real server for SOAK_SECONDS (default 600), with the official openai and ollama
// clients plus raw sockets for hang-ups. It passes when
//   * no request failed other than the deliberate ones (aborted streams, dropped connections),
//   * the server's RSS stayed flat: the median of the last quarter of the samples taken after the
//     warm-up is within SOAK_RSS_TOLERANCE (default 5 %) of the median of the first quarter,
//   * nothing leaked: once the clients stop, /metrics shows no running or queued sequence and
//     rustycage_kv_cells_used back at 0 for every model, and the server still answers.
// Not part of `make test` (its name does not end in .test.mjs). Prints one JSON line of figures.
import assert from 'node:assert/strict';
import net from 'node:net';
import fs from 'node:fs';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { Ollama } from 'ollama';

import { metricValue, scrapeMetrics, startServer, waitFor } from './lib/server.mjs';

const SECONDS = Number(process.env.SOAK_SECONDS ?? 600);
const CLIENTS = Number(process.env.SOAK_CLIENTS ?? 64);
const RSS_TOLERANCE = Number(process.env.SOAK_RSS_TOLERANCE ?? 0.05);
const WARMUP_SECONDS = Math.min(120, Math.max(20, SECONDS * 0.25));
const SAMPLE_MS = 2000;
const REQUEST_TIMEOUT_S = 120;

const chatMessages = (i) => [
  { role: 'system', content: 'You are a soak test. Answer briefly.' },
  { role: 'user', content: `Client ${i}: tell me about the number ${Math.floor(Math.random() * 1e6)}` },
];

function rssBytes(pid) {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : NaN;
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.floor(s.length / 2)] : NaN;
};

// One request that the client hangs up on after the response has begun: a raw socket, destroyed.
function dropConnection(port, body) {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1', () => {
      const json = JSON.stringify(body);
      sock.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(json)}\r\n\r\n${json}`);
    });
    sock.once('data', () => {
      sock.destroy();
      resolve();
    });
    sock.once('error', reject);
    sock.setTimeout(120_000, () => {
      sock.destroy();
      reject(new Error('no response before the hang-up'));
    });
  });
}

describe('soak', { timeout: (SECONDS + 600) * 1000 }, () => {
  let server;
  let openai;
  let ollama;

  before(async () => {
    // A small host KV tier fills during the warm-up, so RSS measures leaks rather than the cache
    // growing toward its default budget (a quarter of RAM).
    server = await startServer({ args: ['--max-queue', '1024', '--kv-host-budget', process.env.SOAK_KV_HOST_BUDGET ?? '8MiB'] });
    openai = new OpenAI({ baseURL: `${server.openaiURL}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 300_000 });
    ollama = new Ollama({ host: server.ollamaURL });
  });

  after(async () => {
    await server?.stopChecked();
  });

  it(`${CLIENTS} mixed clients for ${SECONDS}s: no errors, flat RSS, no leaked sequences`, async () => {
    const port = Number(new URL(server.openaiURL).port);
    const counts = {};
    const errors = [];
    const count = (kind) => (counts[kind] = (counts[kind] ?? 0) + 1);

    // Each action is one request; "deliberate" ones end early on purpose and must not count as errors.
    const actions = [
      ['chat_stream', async (i) => {
        const stream = await openai.chat.completions.create({ model: 'demo', messages: chatMessages(i), max_tokens: 24, stream: true, stream_options: { include_usage: true } });
        let finish = null;
        let usage = null;
        for await (const chunk of stream) {
          finish = chunk.choices[0]?.finish_reason ?? finish;
          usage = chunk.usage ?? usage;
        }
        assert.ok(finish, 'the stream ended with a finish_reason');
        assert.ok(usage?.completion_tokens > 0, 'the usage chunk came');
      }],
      ['chat', async (i) => {
        const r = await openai.chat.completions.create({ model: 'demo', messages: chatMessages(i), max_tokens: 16 });
        assert.equal(r.object, 'chat.completion');
      }],
      ['completion_stream', async (i) => {
        const stream = await openai.completions.create({ model: 'demo', prompt: `Soak ${i}:`, max_tokens: 16, stream: true });
        let n = 0;
        for await (const chunk of stream) n += chunk.choices.length;
        assert.ok(n > 0, 'completion chunks came');
      }],
      ['embedding', async (i) => {
        const r = await openai.embeddings.create({ model: 'embed', input: [`soak ${i}`, 'a second input'] });
        assert.equal(r.data.length, 2);
      }],
      ['ollama_chat_stream', async (i) => {
        let done = false;
        for await (const part of await ollama.chat({ model: 'demo', messages: chatMessages(i), stream: true, options: { num_predict: 16 } })) {
          done = done || part.done;
        }
        assert.ok(done, 'the last line has done: true');
      }],
      ['ollama_generate', async (i) => {
        const r = await ollama.generate({ model: 'demo', prompt: `Soak ${i}`, options: { num_predict: 12 } });
        assert.ok(r.done);
      }],
      ['cancel', async (i) => {  // deliberate: aborts its stream after two chunks
        const ac = new AbortController();
        const stream = await openai.chat.completions.create({ model: 'demo', messages: chatMessages(i), max_tokens: 400, stream: true }, { signal: ac.signal });
        let seen = 0;
        try {
          for await (const _ of stream) {
            if (++seen === 2) ac.abort();
          }
        } catch (err) {
          if (!(err instanceof OpenAI.APIUserAbortError || err?.name === 'AbortError')) throw err;
        }
      }],
      ['disconnect', async (i) => {  // deliberate: drops the connection once the answer starts
        await dropConnection(port, { model: 'demo', messages: chatMessages(i), max_tokens: 400, stream: true });
      }],
    ];

    const deadline = Date.now() + SECONDS * 1000;
    // A request that never ends is a failure to report, not a reason to hang the soak.
    const withDeadline = (promise, kind) => {
      let timer;
      const expired = new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${kind} took longer than ${REQUEST_TIMEOUT_S}s`)), REQUEST_TIMEOUT_S * 1000);
      });
      return Promise.race([promise, expired]).finally(() => clearTimeout(timer));
    };
    const worker = async (i) => {
      let n = 0;
      while (Date.now() < deadline) {
        const [kind, run] = actions[(i + n++) % actions.length];
        try {
          await withDeadline(run(i), kind);
          count(kind);
        } catch (err) {
          errors.push(`${kind} (client ${i}): ${err?.stack ?? err}`);
          count(`${kind}_failed`);
        }
      }
    };

    const pid = server.child.pid;
    const samples = [];  // [seconds since start, rss bytes]
    const started = Date.now();
    const sampler = setInterval(() => samples.push([(Date.now() - started) / 1000, rssBytes(pid)]), SAMPLE_MS);
    try {
      await Promise.all(Array.from({ length: CLIENTS }, (_, i) => worker(i)));
    } finally {
      clearInterval(sampler);
    }

    // Nothing left behind once the clients are gone.
    let last;
    const leftovers = () => {
      const out = {};
      for (const model of ['demo', 'embed']) {
        for (const name of ['rustycage_running_sequences', 'rustycage_queue_depth', 'rustycage_kv_cells_used']) {
          const v = metricValue(last.samples, name, { model });
          if (v !== undefined && v !== 0) out[`${name}{model="${model}"}`] = v;
        }
      }
      return out;
    };
    await waitFor(async () => {
      last = await scrapeMetrics(server.openaiURL);
      return Object.keys(leftovers()).length === 0;
    }, { timeoutMs: 60_000, describe: () => JSON.stringify(leftovers()) });
    const r = await openai.chat.completions.create({ model: 'demo', messages: [{ role: 'user', content: 'Still there?' }], max_tokens: 2 });
    assert.equal(r.object, 'chat.completion');

    const steady = samples.filter(([t]) => t >= WARMUP_SECONDS).map(([, rss]) => rss);
    const quarter = Math.max(1, Math.floor(steady.length / 4));
    const first = median(steady.slice(0, quarter));
    const lastQ = median(steady.slice(-quarter));
    const hostTier = metricValue(last.samples, 'rustycage_kv_tier_bytes', { model: 'demo', tier: 'host' });
    const figures = {
      seconds: SECONDS, clients: CLIENTS, requests: counts, errors: errors.length,
      rss_mib: { warmup_end: +(first / 2 ** 20).toFixed(1), end: +(lastQ / 2 ** 20).toFixed(1),
                 min: +(Math.min(...steady) / 2 ** 20).toFixed(1), max: +(Math.max(...steady) / 2 ** 20).toFixed(1),
                 growth_pct: +((lastQ / first - 1) * 100).toFixed(2), samples: steady.length },
      kv_host_tier_mib: hostTier === undefined ? null : +(hostTier / 2 ** 20).toFixed(1),
      rss_timeline_mib: samples.filter((_, k) => k % 5 === 0).map(([t, rss]) => [Math.round(t), +(rss / 2 ** 20).toFixed(1)]),
    };
    console.log(`SOAK ${JSON.stringify(figures)}`);

    assert.equal(errors.length, 0, `${errors.length} requests failed:\n${errors.slice(0, 20).join('\n')}`);
    assert.ok(steady.length >= 4, `enough RSS samples after the ${WARMUP_SECONDS}s warm-up (got ${steady.length})`);
    assert.ok(lastQ <= first * (1 + RSS_TOLERANCE),
              `RSS grew ${figures.rss_mib.growth_pct}% after warm-up (${figures.rss_mib.warmup_end} → ${figures.rss_mib.end} MiB), more than ${RSS_TOLERANCE * 100}%`);
    for (const [kind] of actions) assert.ok((counts[kind] ?? 0) > 0, `some ${kind} requests completed`);
  });
});
