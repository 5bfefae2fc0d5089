// A small real fleet for one test file: one etcd member, N `rustycage agent`s (each supervising a
// `rustycage serve` on the test models) and a `rustycage gateway` in front, all on free ports.
//
//   const fleet = await startFleet({ hosts: 2 });   // in before()
//   fleet.openaiURL, fleet.ollamaURL                 // the gateway's two ports
//   await fleet.stop();                              // in after(): gateway, agents (drain), etcd
//
// Needs the etcd binary (scripts/setup.sh installs etcd-server); `etcdBinary()` is null without it.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

import { DEFAULT_MODELS, binary, modelsDir, waitFor } from './server.mjs';

export function etcdBinary() {
  for (const p of ['/usr/bin/etcd', '/usr/local/bin/etcd']) if (fs.existsSync(p)) return p;
  return null;
}

async function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

class Proc {
  constructor(name, argv, logFile) {
    this.name = name;
    this.log = '';
    this.child = spawn(argv[0], argv.slice(1), {
      env: Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('RUSTYCAGE_'))),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const out = fs.createWriteStream(logFile);
    for (const s of [this.child.stdout, this.child.stderr]) {
      s.setEncoding('utf8');
      s.on('data', (d) => {
        this.log = (this.log + d).slice(-65536);
        out.write(d);
        if (process.env.RUSTYCAGE_TEST_LOG === '1') process.stderr.write(`[${name}] ${d}`);
      });
    }
    this.exited = new Promise((resolve) => this.child.once('exit', (code, signal) => resolve({ code, signal })));
    this.done = false;
    this.exited.then(() => (this.done = true));
    if (process.env.RUSTYCAGE_CLIENTS_PIDS && this.child.pid)
      try {
        fs.writeFileSync(path.join(process.env.RUSTYCAGE_CLIENTS_PIDS, String(this.child.pid)), `${this.child.pid}\n\n`);
      } catch {}
  }
  async stop(graceMs = 15_000) {
    if (this.done) return this.exited;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    const st = await this.exited;
    clearTimeout(timer);
    if (process.env.RUSTYCAGE_CLIENTS_PIDS) fs.rmSync(path.join(process.env.RUSTYCAGE_CLIENTS_PIDS, String(this.child.pid)), { force: true });
    return st;
  }
}

const running = new Set();
process.on('exit', () => {
  for (const p of running) if (!p.done) p.child.kill('SIGKILL');
});

// `apiKey`: a key the gateway requires (given in gatewayArgs), sent on this module's own requests.
export async function startFleet({ hosts = 2, models = DEFAULT_MODELS, gatewayArgs = [], apiKey } = {}) {
  const etcd = etcdBinary();
  if (!etcd) throw new Error('no etcd binary (scripts/setup.sh installs etcd-server)');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rc-clients-fleet-'));
  const procs = [];
  const start = (name, argv) => {
    const p = new Proc(name, argv, path.join(dir, `${name}.log`));
    procs.push(p);
    running.add(p);
    return p;
  };
  const fleet = {
    dir,
    procs,
    async stop() {
      // The gateway first, then the agents (each drains its server), then etcd.
      for (const p of [...procs].reverse()) await p.stop();
      for (const p of procs) running.delete(p);
      fs.rmSync(dir, { recursive: true, force: true });
    },
    logs: () => procs.map((p) => `---- ${p.name} ----\n${p.log.slice(-4000)}`).join('\n'),
  };
  try {
    const [client, peer] = [await freePort(), await freePort()];
    const etcdURL = `http://127.0.0.1:${client}`;
    start('etcd', [etcd, '--name', 'm0', '--data-dir', path.join(dir, 'etcd'), '--listen-client-urls', etcdURL, '--advertise-client-urls', etcdURL,
      '--listen-peer-urls', `http://127.0.0.1:${peer}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${peer}`,
      '--initial-cluster', `m0=http://127.0.0.1:${peer}`]);
    await waitFor(async () => (await fetch(`${etcdURL}/health`)).ok, { timeoutMs: 60_000, describe: fleet.logs });
    for (let i = 1; i <= hosts; ++i) {
      const home = path.join(dir, `h${i}`);
      fs.mkdirSync(path.join(home, 'models'), { recursive: true });
      for (const [name, file] of Object.entries(models)) fs.symlinkSync(path.resolve(modelsDir, file), path.join(home, 'models', `${name}.gguf`));
      start(`h${i}`, [binary, 'agent', '--etcd', etcdURL, '--host-id', `h${i}`, '--data-dir', path.join(home, 'data'), '--heartbeat-ttl', '2s',
        '--probe-interval', '300ms', '--publish-interval', '1s', '--models-dir', path.join(home, 'models'), '--host', '127.0.0.1',
        '--openai-port', '0', '--ollama-port', '0', '--threads', process.env.RUSTYCAGE_TEST_THREADS ?? '1', '--ctx-size', '4096', '--parallel', '4']);
    }
    const gateway = start('gateway', [binary, 'gateway', '--etcd', etcdURL, '--host', '127.0.0.1', '--openai-port', '0', '--ollama-port', '0', ...gatewayArgs]);
    const m = await waitFor(() => /rustycage gateway listening openai=(http:\/\/\S+) ollama=(http:\/\/\S+)/.exec(gateway.log), { timeoutMs: 60_000, describe: fleet.logs });
    fleet.openaiURL = m[1];
    fleet.ollamaURL = m[2];
    fleet.gatewayPid = gateway.child.pid;
    await waitFor(async () => {
      const headers = apiKey ? { authorization: `Bearer ${apiKey}` } : {};
      const r = await (await fetch(`${fleet.openaiURL}/v1/gateway/hosts`, { headers })).json();
      return r.hosts.filter((h) => h.routable).length === hosts;
    }, { timeoutMs: 120_000, describe: fleet.logs });
  } catch (err) {
    err.message += `\n${fleet.logs()}`;
    await fleet.stop();
    throw err;
  }
  return fleet;
}
