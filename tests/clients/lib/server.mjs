// Starts a real `rustycage serve` on free ports for one test file and stops it afterwards.
//
//   import { startServer } from '../lib/server.mjs';
//   const server = await startServer();          // in before()
//   server.openaiURL, server.ollamaURL           // http://127.0.0.1:PORT
//   await server.stopChecked();                  // in after(): always runs, also on failures; throws
//                                                // when the server crashed or did not exit cleanly
//
// Where things are comes from the environment (scripts/test-clients.sh sets it):
//   RUSTYCAGE_BIN          the rustycage binary           (default: BUILD_DIR/bin/rustycage)
//   RUSTYCAGE_TEST_MODELS  dir with tiny-chat.gguf, tiny-embed.gguf (default: BUILD_DIR/test-models)
//   RUSTYCAGE_BUILD_DIR    the build dir                  (default: <repo>/build)
//   RUSTYCAGE_CLIENTS_PIDS a dir: each server writes a file named by its pid there (holding the pid
//                          and its temp dir) so the shell script can kill servers, and remove temp
//                          dirs, left behind by a test process that died without cleaning up
//   RUSTYCAGE_TEST_LOG=1   echo the server's stdout/stderr to stderr as it runs
//   RUSTYCAGE_TEST_THREADS the server's --threads (default 1: much faster on a busy 2-core box,
//                          where ggml's spinning worker threads stall when descheduled)
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
export const buildDir = path.resolve(repoRoot, process.env.RUSTYCAGE_BUILD_DIR ?? 'build');
export const binary = process.env.RUSTYCAGE_BIN ?? path.join(buildDir, 'bin', 'rustycage');
export const modelsDir = process.env.RUSTYCAGE_TEST_MODELS ?? path.join(buildDir, 'test-models');

// Served name → generated test model file.
export const DEFAULT_MODELS = { demo: 'tiny-chat.gguf', embed: 'tiny-embed.gguf' };

const LISTENING = /rustycage listening openai=(http:\/\/\S+)(?: ollama=(http:\/\/\S+))?/;
const LOG_TAIL_BYTES = 64 * 1024;

const running = new Set();
// Last resort when a test process exits without its after() hooks (uncaught error, process.exit):
// 'exit' handlers may only do synchronous work, and kill() is synchronous.
process.on('exit', () => {
  for (const s of running) s.killNow();
});
for (const [sig, num] of [['SIGINT', 2], ['SIGTERM', 15]]) {
  process.once(sig, () => process.exit(128 + num)); // runs the 'exit' handler above
}

class Server {
  constructor(child, dir) {
    this.child = child;
    this.dir = dir;
    this.log = '';
    this.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => resolve({ code, signal }));
      // A process that could not be spawned never exits.
      child.once('error', () => child.pid === undefined && resolve({ code: null, signal: null }));
    });
    this.exitStatus = null;
    this.exited.then((st) => {
      this.exitStatus = st;
      running.delete(this);
    });
    this.pidFile = null;
  }

  append(chunk) {
    this.log += chunk;
    if (this.log.length > 2 * LOG_TAIL_BYTES) this.log = this.log.slice(-LOG_TAIL_BYTES);
    if (process.env.RUSTYCAGE_TEST_LOG === '1') process.stderr.write(chunk);
  }

  // The last part of what the server printed, for failure messages.
  logTail(bytes = 8192) {
    return this.log.slice(-bytes);
  }

  killNow() {
    if (this.exitStatus === null) {
      try {
        this.child.kill('SIGKILL');
      } catch {}
    }
    this.cleanupFiles();
  }

  cleanupFiles() {
    if (this.pidFile) fs.rmSync(this.pidFile, { force: true });
    fs.rmSync(this.dir, { recursive: true, force: true });
  }

  // SIGTERM, then SIGKILL if it has not exited within `graceMs`. Resolves with the exit status.
  async stop(graceMs = 10_000) {
    if (this.exitStatus === null) {
      this.child.kill('SIGTERM');
      let timer;
      const killed = new Promise((resolve) => {
        timer = setTimeout(() => {
          this.child.kill('SIGKILL');
          resolve();
        }, graceMs);
      });
      await Promise.race([this.exited, killed]);
      clearTimeout(timer);
    }
    const st = await this.exited;
    this.cleanupFiles();
    return st;
  }

  // stop(), and throw (with the server's last output) unless it exited 0 on its own after SIGTERM:
  // a crash or a hang at shutdown, e.g. with streams just ended, is a server bug worth a failure.
  async stopChecked() {
    const crashedBefore = this.exitStatus;
    const st = await this.stop();
    if (crashedBefore) {
      throw new Error(`rustycage serve exited during the tests (code ${st.code}, signal ${st.signal})\n--- server output ---\n${this.logTail()}`);
    }
    if (st.code !== 0) {
      throw new Error(`rustycage serve did not stop cleanly on SIGTERM (code ${st.code}, signal ${st.signal})\n--- server output ---\n${this.logTail()}`);
    }
  }
}

/**
 * Starts `rustycage serve` on free ports with the given models (served name → file in modelsDir,
 * symlinked into a fresh models dir). Rejects with the server's output when it does not come up.
 */
export async function startServer({ models = DEFAULT_MODELS, args = [], env: extraEnv = {}, startTimeoutMs = 60_000 } = {}) {
  if (!fs.existsSync(binary)) throw new Error(`rustycage binary not found: ${binary} (set RUSTYCAGE_BIN)`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rc-clients-'));
  const modelDir = path.join(dir, 'models');
  fs.mkdirSync(modelDir);
  for (const [name, file] of Object.entries(models)) {
    const target = path.resolve(modelsDir, file);
    if (!fs.existsSync(target)) throw new Error(`test model not found: ${target} (set RUSTYCAGE_TEST_MODELS)`);
    fs.symlinkSync(target, path.join(modelDir, `${name}.gguf`));
  }
  const argv = [
    'serve',
    '--host', '127.0.0.1',
    '--openai-port', '0',
    '--ollama-port', '0',
    '--models-dir', modelDir,
    '--threads', process.env.RUSTYCAGE_TEST_THREADS ?? '1',
    '--ctx-size', '4096',
    '--parallel', '4',
    ...args,
  ];
  // A clean environment for the server: no RUSTYCAGE_* settings leak in from the caller's shell
  // (e.g. RUSTYCAGE_API_KEYS would turn on auth).
  const env = { ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('RUSTYCAGE_'))), ...extraEnv };
  const child = spawn(binary, argv, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const server = new Server(child, dir);
  running.add(server);
  if (process.env.RUSTYCAGE_CLIENTS_PIDS && child.pid) {
    server.pidFile = path.join(process.env.RUSTYCAGE_CLIENTS_PIDS, String(child.pid));
    try {
      fs.writeFileSync(server.pidFile, `${child.pid}\n${dir}\n`); // pid, then the temp dir to remove
    } catch {
      server.pidFile = null;
    }
  }
  child.stdout.setEncoding('utf8');
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (d) => server.append(d));

  let lineBuf = '';
  const ready = new Promise((resolve, reject) => {
    child.once('error', reject);
    child.stdout.on('data', (d) => {
      server.append(d);
      if (server.openaiURL) return;
      lineBuf += d;
      const m = LISTENING.exec(lineBuf);
      if (m && lineBuf.slice(m.index).includes('\n')) resolve(m);
    });
    server.exited.then(({ code, signal }) =>
      reject(new Error(`rustycage serve exited before listening (code ${code}, signal ${signal})`)),
    );
  });
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`rustycage serve did not print its listening line within ${startTimeoutMs} ms`)), startTimeoutMs);
  });
  try {
    const m = await Promise.race([ready, timeout]);
    server.openaiURL = m[1];
    server.ollamaURL = m[2];
    if (!server.ollamaURL) throw new Error(`no ollama= address in: ${m[0]}`);
  } catch (err) {
    await server.stop(2_000);
    err.message += `\n--- server output ---\n${server.logTail()}`;
    throw err;
  } finally {
    clearTimeout(timer);
  }
  // Preloads load after the ports open; the server says ready once they are in.
  if (args.includes('--preload')) {
    await waitFor(async () => (await fetch(`${server.openaiURL}/v1/health/ready`)).status === 200, {
      timeoutMs: startTimeoutMs,
      describe: () => server.logTail(),
    });
  }
  return server;
}

// ---- small helpers shared by the test files ----------------------------------------------------

/** Polls `fn` until it returns a truthy value or `timeoutMs` passes; then throws with `describe()`. */
export async function waitFor(fn, { timeoutMs = 30_000, intervalMs = 50, describe = () => '' } = {}) {
  const deadline = Date.now() + timeoutMs;
  let lastErr;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      lastErr = err;
    }
    if (Date.now() >= deadline) {
      const why = await describe();
      throw new Error(`condition not met within ${timeoutMs} ms${why ? `: ${why}` : ''}${lastErr ? ` (last error: ${lastErr.message})` : ''}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/**
 * Prometheus text exposition → [{name, labels, value}]. Enough for our own /metrics: no escaping
 * beyond \" \\ \n in label values, optional timestamps ignored.
 */
export function parsePrometheus(text) {
  const out = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels = {};
    if (m[2]) {
      for (const l of m[2].matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"/g)) {
        labels[l[1]] = l[2].replace(/\\(.)/g, (_, c) => (c === 'n' ? '\n' : c));
      }
    }
    out.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return out;
}

/**
 * The sum of the samples named `name` whose labels include all of `labels` (so extra labels such
 * as `api` do not matter), or undefined when there is no such sample.
 */
export function metricValue(samples, name, labels = {}) {
  let sum;
  for (const s of samples) {
    if (s.name !== name) continue;
    if (!Object.entries(labels).every(([k, v]) => s.labels[k] === v)) continue;
    sum = (sum ?? 0) + s.value;
  }
  return sum;
}

/** GET /metrics → parsed samples (and the raw text, for messages). */
export async function scrapeMetrics(baseURL) {
  const res = await fetch(`${baseURL}/metrics`);
  const text = await res.text();
  if (res.status !== 200) throw new Error(`GET /metrics answered ${res.status}: ${text.slice(0, 200)}`);
  return { text, samples: parsePrometheus(text) };
}
