#!/usr/bin/env node
// Aggregates the raw results of bench/run.sh into results.json, results.md and PNG plots, and
// regenerates docs/BENCHMARKS.md. Node standard library only; plots need gnuplot (skipped without it).
//
//   node bench/report.mjs --raw RAW.jsonl --meta META.json --servers SERVERS.jsonl --out DIR [--docs FILE]
//   node bench/report.mjs --docs docs/BENCHMARKS.md      (only regenerate the page from existing results)
//
// Every metric of every scenario is rendered; a new scenario needs no change here unless it wants a
// prose heading (SCENARIOS) or a plot (PLOTS).
import { execFileSync, execSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');
const BASELINE = 'llama-server';
const SUBJECT = 'rustycage';

// ------------------------------------------------------------------ args
const args = {};
for (let i = 2; i < process.argv.length; i += 2) args[process.argv[i].replace(/^--/, '')] = process.argv[i + 1];

// ------------------------------------------------------------------ scenario descriptions
const SCENARIOS = {
  prefill: { title: 'Prefill throughput', group: 'core',
    text: 'One request with a prompt of N token ids and `max_tokens: 1`; prefill tokens/s = N / time to first token (client side, includes HTTP).' },
  decode: { title: 'Decode throughput and inter-token latency', group: 'core',
    text: 'K streams (32-token prompts) start together. Aggregate tokens/s and inter-token latency (ITL) are taken in the steady window in which every stream is decoding (after the last first token, before the first last token).' },
  mixed: { title: 'Mixed load: a long prompt arriving while others stream (fresh servers)', group: 'mixed',
    text: 'K background streams decode (`--parallel 4 --ctx-size 4096`, both servers with their default flags, each started fresh for every repetition and never warmed up: the chunking has to hold from the first long prompt a server sees); once all are streaming, the long prompt arrives. `long_ttft` is its time to first token; `bg_itl_*` are the background streams\' inter-token gaps from its arrival until it is served (`bg_itl_max`: the longest stall).' },
  rps: { title: 'HTTP overhead: 1-token completions', group: 'core / http',
    text: 'Non-streamed completions of 8-token unique prompts with `max_tokens: 1` through C client threads (closed loop). Variants `tiny,…` run on `bench-tiny` (bench-1b\'s tokenizer and template on a 2-layer, 256-wide body, 20 MB), where a request\'s model compute is about a millisecond, so the servers\' own costs (HTTP parsing, JSON, tokenization, scheduling) decide; the `decode` rows `tiny,streams=1` are the per-token streaming latency on that model.' },
  conversations: { title: 'Conversations: end-to-end throughput', group: 'core / tiering',
    text: 'N independent conversations (unique prompts: nothing to reuse) through C client threads. With `no-reuse` it measures what tiering costs when it cannot help: Rustycage with tiering on (idle conversations cached, host tier 2 GiB) and off.' },
  rss: { title: 'Server memory (RSS)', group: 'core / tiering',
    text: 'From /proc/PID/status after a warm-up request (`loaded`) and after every repetition of the conversations scenario. `rss_anon` excludes the memory-mapped weights (file pages, identical for both servers); `peak_rss` is VmHWM.' },
  resume: { title: 'KV: resume after eviction', group: 'kv / disk / pressure',
    text: 'One slot. Conversation A (a tokens), then B, then A again with a 64-token new turn: `resume_ttft` against A\'s `cold_ttft`. Rustycage runs with its default flags (a host tier of a quarter of RAM; an idle conversation leaves the context for it once another is admitted); llama-server `-np 1 --cache-ram 2048` (its prompt cache), and in quick and full modes `--cache-ram 0` (recompute). `pool=ample`: an 8k context; `pool=tight`: at most 1.5× the conversation, so A\'s KV has to leave the context for B. `restart`: the server is restarted between A and A again (page cache of the block files dropped): Rustycage\'s disk tier against llama-server, which has to recompute. `single slot,…,A again`: the KV-pressure issue\'s reproduction (`--parallel 1 --ctx-size 2560 --kv-host-budget 4GiB --kv-disk-dir`, A and B of 1825 tokens, A resent unchanged with `max_tokens: 1`) against llama-server `-c 2560 -np 1 --cache-ram 8192`.' },
  disk_read: { title: 'KV: disk-tier restore against a page-cache read', group: 'disk',
    text: 'After each restart resume, the time Rustycage spent bringing the blocks back (its restore histogram: reading and verifying the block files on the I/O pool while the blocks before are restored into the context), against reading the same files with `cat` in the same state of the page cache: `cold_restore_ms` / `cold_read_ms` from a dropped page cache (the resume whose TTFT the restart table shows), `restore_ms` / `page_cache_read_ms` after one more restart that finds the files in the page cache (a process restart; the target compares these two); `block_mib` is their size.' },
  shared: { title: 'KV: shared system prompt', group: 'kv',
    text: 'C conversations share an S-token prefix with U unique tokens each, started in turn (`shared_ttft`: all but the first), then each resumed in turn with a T-token new turn (`resume_ttft`). Same servers as resume-after-eviction, at an ample and a tight pool (at most 1.5× one conversation).' },
  burst: { title: 'KV pressure: long generations on a pool that holds two', group: 'pressure',
    text: 'Four completions at once, each a P-token prompt generating G tokens, on `--parallel 4` and a context that holds about two of them (the KV-pressure issue\'s reproduction). `failed_requests` counts errors (before the fix, Rustycage answered two of four with HTTP 400); `wall_s` is the time for all four.' },
};

const PLOTS = [
  { file: 'prefill.png', scenario: 'prefill', metric: 'prefill_tps', title: 'Prefill throughput (higher is better)', ylabel: 'tokens/s' },
  { file: 'decode.png', scenario: 'decode', metric: 'decode_tps', title: 'Aggregate decode throughput (higher is better)', ylabel: 'tokens/s' },
  { file: 'decode_itl_p99.png', scenario: 'decode', metric: 'itl_p99_ms', title: 'Decode inter-token latency p99 (lower is better)', ylabel: 'ms' },
  { file: 'mixed.png', scenario: 'mixed', metrics: ['bg_itl_p50_ms', 'bg_itl_max_ms', 'long_ttft_ms'], title: 'Mixed load (lower is better)', ylabel: 'ms', log: true },
  { file: 'rss.png', scenario: 'rss', metric: 'rss_anon_mib', title: 'Anonymous RSS (lower is better)', ylabel: 'MiB' },
  { file: 'resume.png', scenario: 'resume', metrics: ['cold_ttft_ms', 'resume_ttft_ms'], title: 'KV resume after eviction: TTFT (lower is better)', ylabel: 'ms', log: true },
  { file: 'shared.png', scenario: 'shared', metrics: ['first_ttft_ms', 'shared_ttft_ms', 'resume_ttft_ms'], title: 'KV shared system prompt: TTFT (lower is better)', ylabel: 'ms', log: true },
];

// Targets of the benchmark, KV-pressure and scheduling issues: ratio of Rustycage's median to
// llama-server's, same run. `everyRep`: the ratio must hold in every repetition (paired by repetition).
// `absolute`: Rustycage's own median against a number. `self`: one Rustycage metric over another.
const pool = (p) => (v) => v.includes(`pool=${p}`);
const TARGETS = [
  { name: 'decode ≥ 0.95×', scenario: 'decode', metric: 'decode_tps', op: '>=', threshold: 0.95, variantFilter: (v) => !v.startsWith('tiny') },
  { name: 'prefill ≥ 0.95×', scenario: 'prefill', metric: 'prefill_tps', op: '>=', threshold: 0.95 },
  { name: 'Mixed load: background max gap ≤ 0.34× llama-server\'s, every repetition', scenario: 'mixed', metric: 'bg_itl_max_ms', op: '<=', threshold: 0.34, everyRep: true },
  { name: 'Mixed load: long-prompt TTFT ≤ 1.2× llama-server\'s (median)', scenario: 'mixed', metric: 'long_ttft_ms', op: '<=', threshold: 1.2 },
  { name: 'HTTP: 1-token requests/s ≥ 1.0× (bench-tiny)', scenario: 'rps', metric: 'rps', op: '>=', threshold: 1.0, variantFilter: (v) => v.startsWith('tiny') },
  { name: 'HTTP: streamed inter-token latency p50 ≤ 1.0× (bench-tiny)', scenario: 'decode', metric: 'itl_p50_ms', op: '<=', threshold: 1.0, variantFilter: (v) => v.startsWith('tiny') },
  { name: 'KV resume after eviction, ample pool: TTFT ≤ 1.0× llama-server --cache-ram', scenario: 'resume', metric: 'resume_ttft_ms', op: '<=', threshold: 1.0, variantFilter: (v) => v.startsWith('A=') && pool('ample')(v) },
  { name: 'KV resume after eviction, tight pool: TTFT ≤ 1.0× llama-server --cache-ram', scenario: 'resume', metric: 'resume_ttft_ms', op: '<=', threshold: 1.0, variantFilter: (v) => v.startsWith('A=') && pool('tight')(v) },
  { name: 'KV single-slot reproduction: A again ≤ 1.0× llama-server --cache-ram', scenario: 'resume', metric: 'resume_ttft_ms', op: '<=', threshold: 1.0, variantFilter: (v) => v.startsWith('single slot') },
  { name: 'KV shared system prompt, ample pool: resume ≥ 10× faster (≤ 0.10×)', scenario: 'shared', metric: 'resume_ttft_ms', op: '<=', threshold: 0.1, variantFilter: pool('ample') },
  { name: 'KV shared system prompt, tight pool: resume ≥ 10× faster (≤ 0.10×)', scenario: 'shared', metric: 'resume_ttft_ms', op: '<=', threshold: 0.1, variantFilter: pool('tight') },
  { name: 'Disk tier after a restart, ample pool: resume ≥ 20× faster than recompute (≤ 0.05×)', scenario: 'resume', metric: 'resume_ttft_ms', op: '<=', threshold: 0.05, variantFilter: (v) => v.startsWith('restart') && pool('ample')(v) },
  { name: 'Disk tier after a restart, tight pool: resume ≥ 20× faster than recompute (≤ 0.05×)', scenario: 'resume', metric: 'resume_ttft_ms', op: '<=', threshold: 0.05, variantFilter: (v) => v.startsWith('restart') && pool('tight')(v) },
  { name: 'Disk restore within 2× of reading the same bytes from the page cache', scenario: 'disk_read', metric: 'restore_ms', self: 'page_cache_read_ms', op: '<=', threshold: 2.0 },
  { name: 'No reuse, ample pool: tiering on ≥ 0.97× tiering off (conversations/min)', scenario: 'conversations', metric: 'conv_per_min', op: '>=', threshold: 0.97, baseline: 'rustycage-tiering-off', variantFilter: (v) => v.startsWith('no-reuse') && pool('ample')(v) },
  { name: 'No reuse, tight pool: tiering on ≥ 0.97× tiering off (conversations/min)', scenario: 'conversations', metric: 'conv_per_min', op: '>=', threshold: 0.97, baseline: 'rustycage-tiering-off', variantFilter: (v) => v.startsWith('no-reuse') && pool('tight')(v) },
  { name: 'KV pressure: no request fails when four long generations share a pool that holds two', scenario: 'burst', metric: 'failed_requests', op: '<=', threshold: 0, absolute: true },
  { name: 'Fit: no conversation fails on a device that holds a fraction of them', scenario: 'rotation', metric: 'failed_requests', op: '<=', threshold: 0, absolute: true },
  { name: 'Fit: resume TTFT (mean) ≤ 1.0× llama-server with the whole context', scenario: 'rotation', metric: 'resume_ttft_mean_ms', op: '<=', threshold: 1.0 },
  { name: 'RSS ≤ 1.05× (tiering off)', scenario: 'rss', metric: 'rss_mib', op: '<=', threshold: 1.05, variantFilter: (v) => !v.startsWith('tiering') },
];

// ------------------------------------------------------------------ helpers
const median = (v) => { const s = [...v].sort((a, b) => a - b); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
function fmt(x) {
  if (x === undefined || x === null || Number.isNaN(x)) return '–';
  const a = Math.abs(x);
  if (a >= 1000) return x.toFixed(0);
  if (a >= 100) return x.toFixed(1);
  if (a >= 10) return x.toFixed(2);
  return x.toFixed(3);
}
const fmtRatio = (r) => (r === undefined || !Number.isFinite(r) ? '–' : `${r.toFixed(2)}×`);
function sh(cmd) { try { return execSync(cmd, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim(); } catch { return ''; } }

function machine() {
  const lscpu = sh('lscpu');
  const field = (k) => (lscpu.match(new RegExp(`^${k}:\\s*(.*)$`, 'm')) || [])[1] || '?';
  const mem = sh("awk '/^MemTotal:/ {printf \"%.1f GiB\", $2/1048576}' /proc/meminfo");
  const gpu = sh('nvidia-smi --query-gpu=name,memory.total --format=csv,noheader');
  return { cpu: field('Model name'), cpus: field('CPU\\(s\\)'), cores_per_socket: field('Core\\(s\\) per socket'),
    threads_per_core: field('Thread\\(s\\) per core'), hypervisor: field('Hypervisor vendor'), ram: mem,
    kernel: sh('uname -r'), os: sh('. /etc/os-release && echo "$PRETTY_NAME"'), gpu: gpu || null };
}

function gitInfo() {
  const commit = sh(`git -C ${root} rev-parse HEAD`);
  const dirty = sh(`git -C ${root} status --porcelain --untracked-files=no`) !== '';
  return { commit, dirty };
}

// ------------------------------------------------------------------ aggregate
function aggregate(rawLines) {
  const groups = new Map(); // key -> {scenario, variant, server, metric, unit, better, values}
  const errors = [];
  const order = []; // scenario/variant first-seen order
  for (const line of rawLines) {
    const sv = `${line.scenario}\u0000${line.variant}`;
    if (!order.includes(sv)) order.push(sv);
    if (!line.ok) { errors.push({ scenario: line.scenario, variant: line.variant, server: line.server, rep: line.rep, error: line.error }); continue; }
    for (const [metric, m] of Object.entries(line.metrics || {})) {
      const key = [line.scenario, line.variant, line.server, metric].join('\u0000');
      if (!groups.has(key)) groups.set(key, { scenario: line.scenario, variant: line.variant, server: line.server, metric, unit: m.unit, better: m.better, values: [], reps: [] });
      groups.get(key).values.push(m.value);
      groups.get(key).reps.push(line.rep);
    }
  }
  const results = [...groups.values()].map((g) => ({ ...g, n: g.values.length, median: median(g.values), min: Math.min(...g.values), max: Math.max(...g.values) }));
  const ratios = [];
  for (const r of results) {
    if (r.server === BASELINE) continue;
    const b = results.find((x) => x.scenario === r.scenario && x.variant === r.variant && x.metric === r.metric && x.server === BASELINE);
    if (b && b.median !== 0) ratios.push({ scenario: r.scenario, variant: r.variant, metric: r.metric, server: r.server, baseline: BASELINE, ratio: r.median / b.median });
  }
  const targets = TARGETS.map((t) => {
    const base = t.baseline || BASELINE;
    const rows = [];
    for (const r of results) {
      if (r.scenario !== t.scenario || r.metric !== t.metric || r.server !== SUBJECT || (t.variantFilter && !t.variantFilter(r.variant))) continue;
      if (t.absolute) { rows.push({ variant: r.variant, ratio: r.median, absolute: true }); continue; }
      const b = t.self ? results.find((x) => x.scenario === r.scenario && x.variant === r.variant && x.metric === t.self && x.server === SUBJECT)
        : results.find((x) => x.scenario === r.scenario && x.variant === r.variant && x.metric === r.metric && x.server === base);
      if (!b || b.median === 0) continue;
      if (t.everyRep) {
        // The worst repetition decides: ratios paired by repetition number.
        const per = r.reps.map((rep, i) => { const j = b.reps.indexOf(rep); return j < 0 || b.values[j] === 0 ? undefined : r.values[i] / b.values[j]; }).filter((x) => x !== undefined);
        if (per.length) rows.push({ variant: r.variant, ratio: t.op === '<=' ? Math.max(...per) : Math.min(...per), worst: true });
      } else {
        rows.push({ variant: r.variant, ratio: r.median / b.median });
      }
    }
    return { name: t.name, scenario: t.scenario, metric: t.metric, op: t.op, threshold: t.threshold,
      checks: rows.map((x) => ({ variant: x.variant, ratio: x.ratio, absolute: !!x.absolute, worst: !!x.worst, met: t.op === '>=' ? x.ratio >= t.threshold : x.ratio <= t.threshold })) };
  });
  for (const t of targets) t.met = t.checks.length > 0 && t.checks.every((c) => c.met);
  return { results, ratios, targets, errors, order };
}

// ------------------------------------------------------------------ markdown
function serversOf(results, scenario) {
  const names = [...new Set(results.filter((r) => r.scenario === scenario).map((r) => r.server))];
  return names.sort((a, b) => (a === SUBJECT ? -1 : b === SUBJECT ? 1 : a === BASELINE ? -1 : b === BASELINE ? 1 : a.localeCompare(b)));
}

function scenarioTable(agg, scenario) {
  const rs = agg.results.filter((r) => r.scenario === scenario);
  if (!rs.length) return '';
  const servers = serversOf(agg.results, scenario);
  const others = servers.filter((s) => s !== BASELINE);
  const hasBase = servers.includes(BASELINE);
  const head = ['variant', 'metric', ...servers.map((s) => `${s}<br>median (min–max)`), ...(hasBase ? others.map((s) => `${s} / ${BASELINE}`) : [])];
  const lines = [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`];
  const variants = agg.order.filter((k) => k.startsWith(scenario + '\u0000')).map((k) => k.split('\u0000')[1]);
  for (const v of variants) {
    const metrics = [...new Set(rs.filter((r) => r.variant === v).map((r) => r.metric))];
    for (const m of metrics) {
      const cell = (s) => { const r = rs.find((x) => x.variant === v && x.metric === m && x.server === s); return r ? `${fmt(r.median)} (${fmt(r.min)}–${fmt(r.max)})${r.n < 5 ? ` n=${r.n}` : ''}` : '–'; };
      const any = rs.find((x) => x.variant === v && x.metric === m);
      const arrow = any.better === 'higher' ? ' ↑' : any.better === 'lower' ? ' ↓' : '';
      const ratioCells = hasBase ? others.map((s) => fmtRatio((agg.ratios.find((x) => x.scenario === scenario && x.variant === v && x.metric === m && x.server === s) || {}).ratio)) : [];
      lines.push(`| ${v} | ${m} [${any.unit}]${arrow} | ${servers.map(cell).join(' | ')} | ${ratioCells.join(' | ')}${ratioCells.length ? ' |' : ''}`);
    }
  }
  return lines.join('\n').replace(/ \| \|$/gm, ' |');
}

function targetsTable(agg) {
  const lines = ['| target | measured (Rustycage / llama-server medians unless stated) | met |', '|---|---|---|'];
  for (const t of agg.targets) {
    const value = (c) => (c.absolute ? fmt(c.ratio) : `${fmtRatio(c.ratio)}${c.worst ? ' (worst repetition)' : ''}`);
    const detail = t.checks.length ? t.checks.map((c) => `${c.variant}: ${value(c)}${c.met ? '' : ' ✗'}`).join('; ') : 'not measured';
    lines.push(`| ${t.name} | ${detail} | ${t.checks.length ? (t.met ? 'yes' : '**no**') : '–'} |`);
  }
  return lines.join('\n');
}

function kvSourcesTable(kvSources) {
  if (!kvSources?.length) return '';
  const cols = ['computed', 'context', 'host', 'disk'];
  const lines = ['Prompt tokens of each Rustycage server by where their KV came from (`rustycage_kv_prompt_tokens_total` on `/metrics`, whole group including warm-up and priming requests), and the bytes its host tier held when it stopped (`rustycage_kv_tier_bytes{tier="host"}`):', '',
    `| group | server | ${cols.join(' | ')} | host tier MiB |`, `|---|---|${cols.map(() => '---:').join('|')}|---:|`];
  for (const k of kvSources) lines.push(`| ${k.group} | ${k.server} | ${cols.map((c) => (k.sources[c] ?? 0).toFixed(0)).join(' | ')} | ${k.sources.host_mib === undefined ? '–' : k.sources.host_mib.toFixed(1)} |`);
  return lines.join('\n');
}

function resultsMarkdown(agg, plots, relImg, kvSources) {
  const out = [];
  out.push('### Targets\n', targetsTable(agg), '');
  const seen = [...new Set(agg.order.map((k) => k.split('\u0000')[0]))].filter((s) => s !== 'warmup');
  const scenarios = [...Object.keys(SCENARIOS).filter((s) => seen.includes(s)), ...seen.filter((s) => !SCENARIOS[s])];
  for (const s of scenarios) {
    const d = SCENARIOS[s] || { title: s, text: '' };
    out.push(`### ${d.title}\n`);
    if (d.text) out.push(d.text + '\n');
    out.push(scenarioTable(agg, s), '');
    for (const p of plots.filter((x) => x.scenario === s)) out.push(`![${p.title}](${relImg}${p.file})`, '');
    if (s === 'shared' || (s === 'resume' && !seen.includes('shared'))) { const t = kvSourcesTable(kvSources); if (t) out.push(t, ''); }
  }
  if (agg.errors.length) {
    out.push('### Failed repetitions\n', '| scenario | variant | server | rep | error |', '|---|---|---|---|---|');
    for (const e of agg.errors) out.push(`| ${e.scenario} | ${e.variant} | ${e.server} | ${e.rep} | ${String(e.error).replace(/\|/g, '\\|').slice(0, 200)} |`);
    out.push('');
  }
  return out.join('\n');
}

// ------------------------------------------------------------------ plots
function havePlotter() { try { execFileSync('gnuplot', ['--version'], { stdio: 'ignore' }); return true; } catch { return false; } }

function plot(agg, spec, outDir) {
  const metrics = spec.metrics || [spec.metric];
  const rs = agg.results.filter((r) => r.scenario === spec.scenario && metrics.includes(r.metric));
  if (!rs.length) return null;
  const servers = serversOf(agg.results, spec.scenario).filter((s) => rs.some((r) => r.server === s));
  const variants = agg.order.filter((k) => k.startsWith(spec.scenario + '\u0000')).map((k) => k.split('\u0000')[1]);
  const cats = [];
  for (const v of variants) for (const m of metrics) if (rs.some((r) => r.variant === v && r.metric === m)) cats.push({ v, m, label: (variants.length > 1 ? v : '') + (metrics.length > 1 ? (variants.length > 1 ? ' ' : '') + m.replace(/_ms$|_mib$|_tps$/, '') : '') || v });
  const dat = path.join(outDir, spec.file.replace(/\.png$/, '.dat'));
  const rows = cats.map((c) => {
    const cells = servers.map((s) => { const r = rs.find((x) => x.variant === c.v && x.metric === c.m && x.server === s); return r ? `${r.median} ${r.min} ${r.max}` : '0 0 0'; });
    return `"${c.label.replace(/"/g, "'")}" ${cells.join(' ')}`;
  });
  fs.writeFileSync(dat, rows.join('\n') + '\n');
  const colors = ['#1b6ac9', '#d95f02', '#7570b3', '#66a61e', '#e7298a'];
  const plots = servers.map((s, i) => `'${dat}' using ${2 + 3 * i}:${3 + 3 * i}:${4 + 3 * i}${i === 0 ? ':xtic(1)' : ''} title '${s}' lc rgb '${colors[i % colors.length]}'`);
  const gp = [
    `set terminal png size 900,480 font ',10'`, `set output '${path.join(outDir, spec.file)}'`,
    `set title '${spec.title}'`, `set ylabel '${spec.ylabel}'`, `set style data histograms`,
    `set style histogram errorbars gap 2 lw 1`, `set style fill solid 0.8 border -1`, `set boxwidth 0.9`,
    `set grid ytics`, `set key top left`, `set xtics rotate by -20 noenhanced`, `set key noenhanced`,
    spec.log ? 'set logscale y' : 'set yrange [0:*]', `plot ${plots.join(', ')}`,
  ].join('\n');
  try { execFileSync('gnuplot', [], { input: gp, stdio: ['pipe', 'ignore', 'pipe'] }); } catch (e) { console.error(`[report] gnuplot failed for ${spec.file}: ${e.stderr || e}`); return null; }
  fs.unlinkSync(dat);
  return spec;
}

// ------------------------------------------------------------------ BENCHMARKS.md
function serverTable(servers) {
  if (!servers?.length) return '';
  const lines = ['| group | name | command |', '|---|---|---|'];
  for (const s of servers) lines.push(`| ${s.group} | ${s.server} | \`${s.command.replace(/\/\S*\/(bench-1b\.gguf|models|kvdisk-[a-z]+)\b/g, '…/$1')}\` |`);
  return lines.join('\n');
}

function runDescription(res) {
  const m = { command: "?", mode: "?", reps: "?", elapsed_s: "?", llama_commit: "?", threads: "?", model: "bench-1b", ...res.meta };
  const mc = res.machine;
  const load = m.load_before ? ` Load average (1/5/15 min) before: ${m.load_before}; after: ${m.load_after}.` : '';
  const under = res.under_load ? '\n\n> **Taken under load**: other builds and tests were running on this machine during the run (see the load average); absolute numbers are lower and noisier than on a quiet machine. Both servers ran interleaved (repetition 1 on each, then 2, …), so the ratios are less affected than the absolute values.' : '';
  return [
    `* Command: \`${m.command}\` (${m.mode} mode, ${m.reps} repetitions per measurement, ${m.elapsed_s} s)`,
    `* Date: ${res.date}; Rustycage commit \`${res.git.commit.slice(0, 12)}\`${res.git.dirty ? ' (with uncommitted changes)' : ''}; llama.cpp \`${m.llama_commit.slice(0, 12)}\` (llama-server built from the same pinned tree by \`scripts/llama.sh server\`)`,
    `* Machine: ${mc.cpu}, ${mc.cpus} CPUs (${mc.cores_per_socket} cores/socket, ${mc.threads_per_core} thread/core${mc.hypervisor !== '?' ? `, ${mc.hypervisor} VM` : ''}), ${mc.ram} RAM, ${mc.os}, Linux ${mc.kernel}${mc.gpu ? `, GPU: ${mc.gpu}` : ''}`,
    `* Model: ${m.model}: Llama-3.2-1B shape, Q8_0 weights, random values; servers use ${m.threads} threads, F16 KV cache, flash attention off, batch 2048 / ubatch 512 (both defaults).${load}${under}`,
  ].join('\n');
}

function benchmarksPage() {
  const cpuPath = path.join(root, 'docs/bench/results.json');
  const cpu = fs.existsSync(cpuPath) ? JSON.parse(fs.readFileSync(cpuPath, 'utf8')) : null;
  const gpuDirs = ['cuda', 'vulkan', 'metal'].filter((b) => fs.existsSync(path.join(root, `docs/bench/${b}/results.json`)));
  const inc = (f) => { const p = path.join(here, f); return fs.existsSync(p) ? fs.readFileSync(p, 'utf8').trim() : ''; };
  const out = [];
  out.push('# Benchmarks', '');
  out.push('<!-- Generated by bench/report.mjs from docs/bench/*/results.json and bench/*.md: edit those, not this file. -->', '');
  out.push('Rustycage against llama-server built from the same pinned llama.cpp commit: same model, threads, context size and parallelism, same requests (token-id prompts, `temperature: 0`, the end and byte tokens banned so every run generates `max_tokens`), repetitions interleaved between the servers. Ratios are Rustycage\'s median over llama-server\'s median from the same run.', '');
  out.push(inc('BENCHMARKS.intro.md'), '');
  if (cpu) {
    out.push('## Results (CPU)', '', runDescription(cpu), '', '### Servers', '', serverTable(cpu.servers), '');
    out.push(resultsMarkdown(cpu, cpu.plots || [], 'bench/', cpu.kv_sources), '');
  } else {
    out.push('## Results (CPU)', '', 'No results yet: run `make bench`.', '');
  }
  // The KV-tiering scenarios at the sizes of the KV issue (2k-token resumes, a 1.5k shared prefix).
  const kvPath = path.join(root, 'docs/bench/kv-issue/results.json');
  if (fs.existsSync(kvPath)) {
    const k = JSON.parse(fs.readFileSync(kvPath, 'utf8'));
    out.push('## KV tiering at full size (CPU)', '', inc('BENCHMARKS.kv.md'), '', runDescription(k), '', '### Servers', '', serverTable(k.servers), '');
    out.push(resultsMarkdown(k, k.plots || [], 'bench/kv-issue/', k.kv_sources).replace(/^### /gm, '#### '), '');
  }
  out.push(inc('BENCHMARKS.notes.md'), '');
  out.push(inc('BENCHMARKS.gateway.md'), '');
  out.push(inc('BENCHMARKS.issues.md'), '');
  out.push(inc('BENCHMARKS.gpu.md'), '');
  for (const b of gpuDirs) {
    const g = JSON.parse(fs.readFileSync(path.join(root, `docs/bench/${b}/results.json`), 'utf8'));
    out.push(`### Measured on ${b.toUpperCase()}`, '', runDescription(g), '', serverTable(g.servers), '', resultsMarkdown(g, g.plots || [], `bench/${b}/`, g.kv_sources).replace(/^### /gm, '#### '), '');
  }
  return out.filter((x, i, a) => !(x === '' && a[i - 1] === '')).join('\n').trim() + '\n';
}

// ------------------------------------------------------------------ main
if (args.raw) {
  const outDir = path.resolve(args.out || path.join(root, 'docs/bench'));
  fs.mkdirSync(outDir, { recursive: true });
  const raw = fs.readFileSync(args.raw, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)).filter((l) => l.scenario !== 'warmup');
  const meta = args.meta ? JSON.parse(fs.readFileSync(args.meta, 'utf8')) : {};
  const servers = args.servers && fs.existsSync(args.servers) ? fs.readFileSync(args.servers, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)) : [];
  const agg = aggregate(raw);
  const kvSources = [];
  if (args['kv-sources'] && fs.existsSync(args['kv-sources'])) {
    for (const l of fs.readFileSync(args['kv-sources'], 'utf8').split('\n').filter(Boolean).map((x) => JSON.parse(x))) {
      let k = kvSources.find((x) => x.group === l.group && x.server === l.server);
      if (!k) kvSources.push((k = { group: l.group, server: l.server, sources: {} }));
      // Token counts add up over a group's server runs; the host tier's size is a level: the largest.
      for (const [src, n] of Object.entries(l.sources)) k.sources[src] = src === 'host_mib' ? Math.max(k.sources[src] || 0, n) : (k.sources[src] || 0) + n;
    }
  }
  const plots = havePlotter() ? PLOTS.map((p) => plot(agg, p, outDir)).filter(Boolean) : [];
  if (!plots.length) console.error('[report] no plots (gnuplot missing or nothing to plot)');
  const load1 = parseFloat((meta.load_before || '0').split(' ')[0]);
  const res = {
    meta, machine: machine(), git: gitInfo(), date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    under_load: load1 > 0.7 || (meta.busy_processes_before || 0) > 0,
    servers, kv_sources: kvSources, targets: agg.targets, ratios: agg.ratios, results: agg.results, errors: agg.errors, order: agg.order,
    plots: plots.map((p) => ({ file: p.file, scenario: p.scenario, title: p.title })),
  };
  fs.writeFileSync(path.join(outDir, 'results.json'), JSON.stringify(res, null, 1) + '\n');
  const md = ['# Benchmark results', '', runDescription(res), '', '## Servers', '', serverTable(servers), '', resultsMarkdown(agg, res.plots, '', kvSources).replace(/^### /gm, '## '), ''].join('\n');
  fs.writeFileSync(path.join(outDir, 'results.md'), md);
  console.error(`[report] wrote ${path.join(outDir, 'results.json')}, results.md and ${plots.length} plots`);
}
if (args.docs) {
  fs.writeFileSync(path.resolve(args.docs), benchmarksPage());
  console.error(`[report] wrote ${args.docs}`);
}
