#!/usr/bin/env node
// Per architecture family (issue 52): a conversation resumed after it was evicted from the context
// to the host tier, against the same resume on a server that recomputes (no tiers), on the bench
// sizes. One slot and a pool that holds one conversation: B's arrival pushes A out of the context.
//
//   node bench/families.mjs [--build build] [--reps 3] [--words 1000] [--ctx 2048] [--presets bench-1b,bench-gemma3,...]
//                           [--out docs/bench/families]
//
// Per preset and repetition (fresh texts every repetition, both servers alike, order alternating):
// A (a long user turn, 8 tokens generated), B (another), then A again with its reply and a new
// question, 1 token generated: its time is the resume's time to first token. Chat with thinking off,
// so the history re-renders exactly what the model produced. Writes results.md and raw.jsonl.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir, loadavg } from 'node:os';
import { join } from 'node:path';
import { freePort, median, modelCache as cache, parseArgs, presetModel, startProcess, stopProcess as stop, text } from './lib.mjs';

const args = parseArgs(process.argv.slice(2));
const build = args.build ?? 'build';
const reps = Number(args.reps ?? 3);
const words = Number(args.words ?? 1000);  // ~1,100-1,200 tokens
const presets = (args.presets ?? 'bench-1b,bench-gemma3,bench-qwen3moe,bench-qwen35').split(',');
const out = args.out ?? 'docs/bench/families';
const ctx = Number(args.ctx ?? 2048);  // holds one conversation, not two

const work = mkdtempSync(join(tmpdir(), 'rc-families-'));
const log = (...m) => console.error('[families]', ...m);

async function startServer(name, model, extra) {
    const port = await freePort();
    const dir = join(work, name);
    mkdirSync(dir, { recursive: true });
    symlinkSync(join(cache, `${model}.gguf`), join(dir, `${model}.gguf`));
    const argv = ['serve', '--models-dir', dir, '--openai-port', String(port), '--ollama-port', '-1', '--preload', model,
        '--ctx-size', String(ctx), '--parallel', '1', '--threads', '2', ...extra];
    return startProcess(name, join(build, 'bin', 'rustycage'), argv, port, '/v1/health/ready');
}

async function chat(server, model, messages, maxTokens) {
    const t0 = performance.now();
    const r = await fetch(`${server.url}/v1/chat/completions`, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model, messages, max_tokens: maxTokens, temperature: 0, reasoning_effort: 'none' }),
    });
    const body = await r.json();
    const ms = performance.now() - t0;
    if (r.status !== 200) throw new Error(`${server.name}: ${r.status} ${JSON.stringify(body).slice(0, 300)}`);
    return { ms, reply: body.choices[0].message.content ?? '', prompt: body.usage.prompt_tokens,
        cached: body.usage.prompt_tokens_details?.cached_tokens ?? 0 };
}

async function conversation(server, model, seed) {
    const a = [{ role: 'user', content: text(seed, words) }];
    const first = await chat(server, model, a, 8);
    await chat(server, model, [{ role: 'user', content: text(seed + 500, words) }], 8);
    const again = [...a, { role: 'assistant', content: first.reply }, { role: 'user', content: 'And what follows from that?' }];
    const resumed = await chat(server, model, again, 1);
    return { cold_ms: first.ms, resume_ms: resumed.ms, prompt: resumed.prompt, cached: resumed.cached };
}

const rows = [];
const raw = [];
const loadBefore = loadavg().map((l) => l.toFixed(2)).join(' ');
for (const preset of presets) {
    presetModel(build, preset);
    const tiers = await startServer(`${preset}-tiers`, preset, []);
    const recompute = await startServer(`${preset}-recompute`, preset, ['--kv-host-budget', '0', '--kv-cached-sequences', '0']);
    const got = { tiers: [], recompute: [] };
    for (let rep = 0; rep < reps; rep++) {
        const order = rep % 2 ? [recompute, tiers] : [tiers, recompute];
        for (const s of order) {
            const r = await conversation(s, preset, 1000 * (rep + 1));
            const which = s === tiers ? 'tiers' : 'recompute';
            got[which].push(r);
            raw.push({ preset, server: which, rep, ...r });
            log(preset, which, `rep ${rep}:`, JSON.stringify(r));
        }
    }
    await stop(tiers);
    await stop(recompute);
    const t = got.tiers.map((r) => r.resume_ms), c = got.recompute.map((r) => r.resume_ms);
    rows.push({ preset, prompt: median(got.tiers.map((r) => r.prompt)), cached: median(got.tiers.map((r) => r.cached)),
        tiers: median(t), tiersRange: [Math.min(...t), Math.max(...t)], recompute: median(c), recomputeRange: [Math.min(...c), Math.max(...c)] });
}
rmSync(work, { recursive: true, force: true });

const fmt = (v) => v.toFixed(0);
let md = `# Resume after eviction to the host tier, per family (bench/families.mjs)\n\n` +
    `${reps} repetitions, medians (min–max); one slot, --ctx-size ${ctx} (holds one conversation), 2 threads; ` +
    `load average before: ${loadBefore}, after: ${loadavg().map((l) => l.toFixed(2)).join(' ')}.\n\n` +
    `| preset | resumed prompt (tokens) | reused from the host tier | resume TTFT, tiers [ms] | resume TTFT, recompute [ms] | ratio |\n|---|---|---|---|---|---|\n`;
for (const r of rows) {
    md += `| ${r.preset} | ${r.prompt} | ${r.cached} | ${fmt(r.tiers)} (${fmt(r.tiersRange[0])}–${fmt(r.tiersRange[1])}) | ` +
        `${fmt(r.recompute)} (${fmt(r.recomputeRange[0])}–${fmt(r.recomputeRange[1])}) | ${(r.tiers / r.recompute).toFixed(2)}× |\n`;
}
mkdirSync(out, { recursive: true });
writeFileSync(join(out, 'results.md'), md);
writeFileSync(join(out, 'raw.jsonl'), raw.map((r) => JSON.stringify(r)).join('\n') + '\n');
console.log(md);
