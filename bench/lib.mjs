// Helpers shared by the node benches (families.mjs, checkpoints.mjs): free ports, servers started
// and stopped, deterministic texts, generated models, medians.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import net from 'node:net';

export const modelCache = join(process.env.RUSTYCAGE_CACHE ?? join(homedir(), '.cache', 'rustycage'), 'models');

export function parseArgs(argv) {
    return Object.fromEntries(argv.reduce((acc, a, i, all) => {
        if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1]]);
        return acc;
    }, []));
}

export function freePort() {
    return new Promise((resolve) => {
        const s = net.createServer();
        s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
    });
}

// Starts `bin argv` and polls `url + ready` until it answers 200 (up to 5 minutes).
export async function startProcess(name, bin, argv, port, ready, stdio = ['ignore', 'ignore', 'ignore']) {
    const child = spawn(bin, argv, { stdio });
    const url = `http://127.0.0.1:${port}`;
    for (let i = 0; i < 1500; i++) {
        try { if ((await fetch(`${url}${ready}`)).status === 200) return { name, url, child, argv }; } catch { /* not up yet */ }
        if (child.exitCode !== null) break;
        await new Promise((r) => setTimeout(r, 200));
    }
    child.kill('SIGKILL');
    throw new Error(`${name} did not become ready`);
}

export const stopProcess = (s) => new Promise((resolve) => {
    if (s.child.exitCode !== null) return resolve();
    s.child.once('exit', resolve);
    s.child.kill('SIGTERM');
});

// The generated model file of `preset`, written by rustycage-mkmodel on first use.
export function presetModel(build, preset) {
    mkdirSync(modelCache, { recursive: true });
    const file = join(modelCache, `${preset}.gguf`);
    if (!existsSync(file)) {
        const g = spawnSync(join(build, 'bin', 'rustycage-mkmodel'), ['--preset', preset, '--out', file], { stdio: 'inherit' });
        if (g.status !== 0) throw new Error(`rustycage-mkmodel --preset ${preset} failed`);
    }
    return file;
}

// Deterministic text of n words for (seed): varied enough that no two seeds share a prefix.
const vocabulary = ('cluster rack cable switch node driver kernel memory cache batch token prompt model layer window ' +
    'expert router state snapshot tier disk host device queue stream request reply budget shard replica lease').split(' ');
export function text(seed, n, label = 'Conversation') {
    let x = seed * 2654435761 % 4294967296;
    const w = [];
    for (let i = 0; i < n; i++) { x = (x * 1664525 + 1013904223) % 4294967296; w.push(vocabulary[x % vocabulary.length] + (i % 17 === 16 ? '.' : '')); }
    return `${label} ${seed}: ${w.join(' ')}`;
}

export const median = (v) => { const s = [...v].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
