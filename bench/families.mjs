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
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir, loadavg } from 'node:os';
import { join } from 'node:path';
import net from 'node:net';

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
    if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1]]);
    return acc;
}, []));
const build = args.build ?? 'build';
const reps = Number(args.reps ?? 3);
const words = Number(args.words ?? 1000);  // ~1,100-1,200 tokens
const presets = (args.presets ?? 'bench-1b,bench-gemma3,bench-qwen3moe,bench-qwen35').split(',');
const out = args.out ?? 'docs/bench/families';
const ctx = Number(args.ctx ?? 2048);  // holds one conversation, not two

const cache = join(process.env.RUSTYCAGE_CACHE ?? join(homedir(), '.cache', 'rustycage'), 'models');
mkdirSync(cache, { recursive: true });
const work = mkdtempSync(join(tmpdir(), 'rc-families-'));
const log = (...m) => console.error('[families]', ...m);

function freePort() {
    return new Promise((resolve) => {
        const s = net.createServer();
        s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
    });
}

async function startServer(name, model, extra) {
    const port = await freePort();
    const dir = join(work, name);
    mkdirSync(dir, { recursive: true });
    symlinkSync(join(cache, `${model}.gguf`), join(dir, `${model}.gguf`));
    const argv = ['serve', '--models-dir', dir, '--openai-port', String(port), '--ollama-port', '-1', '--preload', model,
        '--ctx-size', String(ctx), '--parallel', '1', '--threads', '2', ...extra];
    const child = spawn(join(build, 'bin', 'rustycage'), argv, { stdio: ['ignore', 'ignore', 'ignore'] });
    const url = `http://127.0.0.1:${port}`;
    for (let i = 0; i < 1500; i++) {
        try { if ((await fetch(`${url}/v1/health/ready`)).status === 200) return { name, url, child, argv }; } catch { /* not up yet */ }
        await new Promise((r) => setTimeout(r, 200));
    }
    child.kill('SIGKILL');
    throw new Error(`${name} did not become ready`);
}

const stop = (s) => new Promise((resolve) => { s.child.once('exit', resolve); s.child.kill('SIGTERM'); });

// Deterministic text of n words for (seed): varied enough that no two conversations share a prefix.
const vocabulary = ('cluster rack cable switch node driver kernel memory cache batch token prompt model layer window ' +
    'expert router state snapshot tier disk host device queue stream request reply budget shard replica lease').split(' ');
function text(seed, n) {
    let x = seed * 2654435761 % 4294967296;
    const w = [];
    for (let i = 0; i < n; i++) { x = (x * 1664525 + 1013904223) % 4294967296; w.push(vocabulary[x % vocabulary.length] + (i % 17 === 16 ? '.' : '')); }
    return `Conversation ${seed}: ${w.join(' ')}`;
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

const median = (v) => { const s = [...v].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
const rows = [];
const raw = [];
const loadBefore = loadavg().map((l) => l.toFixed(2)).join(' ');
for (const preset of presets) {
    const file = join(cache, `${preset}.gguf`);
    if (!existsSync(file)) {
        log(`generating ${preset}`);
        const g = spawnSync(join(build, 'bin', 'rustycage-mkmodel'), ['--preset', preset, '--out', file], { stdio: 'inherit' });
        if (g.status !== 0) throw new Error(`rustycage-mkmodel --preset ${preset} failed`);
    }
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
