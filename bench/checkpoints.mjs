#!/usr/bin/env node
// Issue 53: models kept as whole states (sliding-window, hybrid) resumed from checkpoints, against
// llama-server from the same pinned llama.cpp with its best flags for them (--cache-ram 8192,
// --ctx-checkpoints 32, and --swa-full on a sliding-window model), on the bench sizes.
//
//   node bench/checkpoints.mjs [--build build] [--reps 3] [--presets bench-gemma3,bench-qwen35] [--out docs/bench/checkpoints]
//
// One slot and a 2,048-cell context (one conversation fits, two do not), 2 threads, Rustycage with
// default flags. Per repetition, fresh texts, the servers in alternating order:
//  * share:  6 conversations, each a ~1,000-token system prompt they all share and their own question
//            (8 tokens generated): the 2nd..6th find the system prompt computed;
//  * resume: each conversation's second turn, 1 token generated (its time is the time to first
//            token): each was pushed out of the context by the others;
//  * regenerate: the last resume sent again;
//  * edit:   a 4-turn conversation, then its second question edited: what is recomputed besides the
//            tokens after the edit (counted with llama-server's template and tokenizer).
// Chat with thinking off (chat_template_kwargs), so the history re-renders what the model produced.
// Writes results.md and raw.jsonl.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir, loadavg } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { freePort, median, parseArgs, presetModel, startProcess, stopProcess, text } from './lib.mjs';

const args = parseArgs(process.argv.slice(2));
const build = args.build ?? 'build';
const reps = Number(args.reps ?? 3);
const presets = (args.presets ?? 'bench-gemma3,bench-qwen35').split(',');
const out = args.out ?? 'docs/bench/checkpoints';
const ctx = 2048, conversations = 6, systemWords = 800, questionWords = 40;
const work = mkdtempSync(join(tmpdir(), 'rc-checkpoints-'));
const log = (...m) => console.error('[checkpoints]', ...m);
const llamaBuild = execFileSync('scripts/llama.sh', ['server', 'cpu'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();

async function rustycage(preset, file) {
    const port = await freePort();
    const dir = join(work, `${preset}-rc`);
    mkdirSync(dir, { recursive: true });
    symlinkSync(file, join(dir, `${preset}.gguf`));
    const argv = ['serve', '--models-dir', dir, '--openai-port', String(port), '--ollama-port', '-1', '--preload', preset,
        '--ctx-size', String(ctx), '--parallel', '1', '--threads', '2'];
    return { ...(await startProcess('rustycage', join(build, 'bin', 'rustycage'), argv, port, '/v1/health/ready')), model: preset };
}

async function llamaServer(preset, file, swa) {
    const port = await freePort();
    const argv = ['-m', file, '--host', '127.0.0.1', '--port', String(port), '-c', String(ctx), '-np', '1', '-t', '2',
        '--cache-ram', '8192', '--ctx-checkpoints', '32', ...(swa ? ['--swa-full'] : [])];
    return { ...(await startProcess('llama-server', join(llamaBuild, 'bin', 'llama-server'), argv, port, '/health')), model: preset };
}

async function post(server, path, body) {
    const r = await fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const json = await r.json();
    if (r.status !== 200) throw new Error(`${server.name} ${path}: ${r.status} ${JSON.stringify(json).slice(0, 300)}`);
    return json;
}

// One chat request: its time, reply, prompt tokens and the tokens the server computed for it.
// llama-server answers 500 when a random-weight model's text does not parse as its template's format
// (even content-only), so it gets the same prompt rendered by its own template (/apply-template, the
// render its chat endpoint does) through /completion (one slot and prompt cache either way), held to
// plain words by a grammar (which costs it a little sampling time on the generated tokens only).
async function chat(server, messages, maxTokens) {
    const kwargs = { enable_thinking: false };
    if (server.name === 'llama-server') {
        const { prompt } = await post(server, '/apply-template', { messages, chat_template_kwargs: kwargs });
        const t0 = performance.now();
        const body = await post(server, '/completion', { prompt, n_predict: maxTokens, temperature: 0, cache_prompt: true,
            grammar: 'root ::= [a-z]+ (" " [a-z]+)*' });
        return { ms: performance.now() - t0, reply: body.content, prompt: body.tokens_evaluated, computed: body.timings.prompt_n };
    }
    const t0 = performance.now();
    const body = await post(server, '/v1/chat/completions', { model: server.model, messages, max_tokens: maxTokens, temperature: 0,
        chat_template_kwargs: kwargs });
    const prompt = body.usage.prompt_tokens;
    return { ms: performance.now() - t0, reply: body.choices[0].message.content ?? '', prompt,
        computed: prompt - (body.usage.prompt_tokens_details?.cached_tokens ?? 0) };
}

// Tokens of `messages`' prompt (llama-server's template and tokenizer: the same model file).
async function promptTokens(llama, messages) {
    const { prompt } = await post(llama, '/apply-template', { messages, chat_template_kwargs: { enable_thinking: false } });
    return (await post(llama, '/tokenize', { content: prompt, add_special: true, parse_special: true })).tokens;
}

async function hostBytes(server) {
    if (server.name !== 'rustycage') return null;
    const m = (await (await fetch(`${server.url}/metrics`)).text()).match(/rustycage_kv_tier_bytes\{[^}]*tier="host"[^}]*\} (\S+)/);
    return m ? Number(m[1]) : null;
}

async function scenario(server, llama, seed) {
    const system = { role: 'system', content: text(seed, systemWords, 'System') };
    const question = (i, n = questionWords) => ({ role: 'user', content: text(seed * 100 + i, n, 'Question') });
    const r = { share: [], resume: [] };
    const first = [];
    const bytesBefore = await hostBytes(server);
    for (let i = 0; i < conversations; i++) {
        const messages = [system, question(i)];
        const c = await chat(server, messages, 8);
        first.push([...messages, { role: 'assistant', content: c.reply }]);
        r.share.push(c);
    }
    const resumes = first.map((m, i) => [...m, question(50 + i, 8)]);
    for (const m of resumes) r.resume.push(await chat(server, m, 1));
    r.regenerate = await chat(server, resumes.at(-1), 1);
    const bytesAfter = await hostBytes(server);
    r.host_bytes = bytesAfter === null ? null : (bytesAfter - bytesBefore) / conversations;  // what the 6 added, each
    // A 4-turn conversation, then its second question edited.
    let history = [system, question(90, 60)];
    for (let turn = 0; turn < 4; turn++) {
        const c = await chat(server, history, 8);
        history = [...history, { role: 'assistant', content: c.reply }, question(91 + turn, 60)];
    }
    const edited = history.map((m, i) => (i === 3 ? question(99, 60) : m));
    r.edit = await chat(server, edited, 1);
    const [a, b] = [await promptTokens(llama, history), await promptTokens(llama, edited)];
    let same = 0;
    while (same < a.length && same < b.length && a[same] === b[same]) same++;
    r.edit.after_edit = b.length - same;
    return r;
}

const rows = [];
const raw = [];
const loadBefore = loadavg().map((l) => l.toFixed(2)).join(' ');
for (const preset of presets) {
    const file = presetModel(build, preset);
    const servers = [await rustycage(preset, file), await llamaServer(preset, file, preset.includes('gemma'))];
    const llama = servers[1];
    const got = { rustycage: [], 'llama-server': [] };
    for (let rep = 0; rep < reps; rep++) {
        for (const s of rep % 2 ? [...servers].reverse() : servers) {
            const r = await scenario(s, llama, 1000 * (rep + 1) + (s === llama ? 7 : 0));
            got[s.name].push(r);
            raw.push({ preset, server: s.name, rep, ...r });
            log(preset, s.name, `rep ${rep}:`, 'share', r.share.map((c) => `${c.ms.toFixed(0)}ms/${c.computed}`).join(' '),
                '| resume', r.resume.map((c) => `${c.ms.toFixed(0)}ms/${c.computed}`).join(' '),
                '| regenerate', r.regenerate.computed, '| edit', r.edit.computed, 'after edit', r.edit.after_edit);
        }
    }
    for (const s of servers) await stopProcess(s);
    const sum = (list) => list.reduce((x, c) => x + c.ms, 0);
    const summary = (name) => {
        const g = got[name];
        return {
            share_ms: median(g.map((r) => sum(r.share.slice(1)))),
            share_computed: median(g.map((r) => median(r.share.slice(1).map((c) => c.computed)))),
            first_ms: median(g.map((r) => r.share[0].ms)),
            resume_ms: median(g.map((r) => sum(r.resume))),
            resume_ttft: median(g.map((r) => median(r.resume.map((c) => c.ms)))),
            resume_computed: median(g.map((r) => median(r.resume.map((c) => c.computed)))),
            resume_prompt: median(g.map((r) => median(r.resume.map((c) => c.prompt)))),
            regenerate_computed: median(g.map((r) => r.regenerate.computed)),
            regenerate_ms: median(g.map((r) => r.regenerate.ms)),
            edit_computed: median(g.map((r) => r.edit.computed)),
            edit_after: median(g.map((r) => r.edit.after_edit)),
            edit_ms: median(g.map((r) => r.edit.ms)),
            host_bytes: median(g.map((r) => r.host_bytes ?? 0)),
        };
    };
    rows.push({ preset, rc: summary('rustycage'), ls: summary('llama-server') });
}
rmSync(work, { recursive: true, force: true });

const ms = (v) => `${v.toFixed(0)} ms`;
const ratio = (a, b) => `**${(a / b).toFixed(2)}×**`;
let md = `# Checkpoints for models kept whole, against llama-server (bench/checkpoints.mjs)\n\n` +
    `${reps} repetitions, medians; one slot, 2,048 cells, 2 threads; Rustycage with default flags, llama-server with ` +
    `\`--cache-ram 8192 --ctx-checkpoints 32\` (+ \`--swa-full\` on bench-gemma3); load average before: ${loadBefore}, ` +
    `after: ${loadavg().map((l) => l.toFixed(2)).join(' ')}.\n\n` +
    `| preset | measure | Rustycage | llama-server | ratio |\n|---|---|---|---|---|\n`;
for (const { preset, rc, ls } of rows) {
    md += `| ${preset} | first conversation (system prompt computed) | ${ms(rc.first_ms)} | ${ms(ls.first_ms)} | ${ratio(rc.first_ms, ls.first_ms)} |\n`;
    md += `| | 5 more sharing the system prompt, total | ${ms(rc.share_ms)} (${rc.share_computed} tokens computed each) | ` +
        `${ms(ls.share_ms)} (${ls.share_computed}) | ${ratio(rc.share_ms, ls.share_ms)} |\n`;
    md += `| | 6 resumes after eviction, total | ${ms(rc.resume_ms)} (${rc.resume_computed} of ${rc.resume_prompt} computed each) | ` +
        `${ms(ls.resume_ms)} (${ls.resume_computed} of ${ls.resume_prompt}) | ${ratio(rc.resume_ms, ls.resume_ms)} |\n`;
    md += `| | resume TTFT, median | ${ms(rc.resume_ttft)} | ${ms(ls.resume_ttft)} | ${ratio(rc.resume_ttft, ls.resume_ttft)} |\n`;
    md += `| | regenerate: tokens computed | ${rc.regenerate_computed} (${ms(rc.regenerate_ms)}) | ${ls.regenerate_computed} (${ms(ls.regenerate_ms)}) | |\n`;
    md += `| | edit of question 2 of 5: tokens computed (after the edit: ${rc.edit_after}) | ${rc.edit_computed} (${ms(rc.edit_ms)}) | ` +
        `${ls.edit_computed} (${ms(ls.edit_ms)}) | |\n`;
    md += `| | host tier added per conversation (2 turns, the shared states included) | ${(rc.host_bytes / 1048576).toFixed(1)} MiB | not reported | |\n`;
}
mkdirSync(out, { recursive: true });
writeFileSync(join(out, 'results.md'), md);
writeFileSync(join(out, 'raw.jsonl'), raw.map((r) => JSON.stringify(r)).join('\n') + '\n');
console.log(md);
