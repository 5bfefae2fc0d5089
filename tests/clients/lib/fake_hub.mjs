// Starts the fake Hugging Face Hub (tests/fixtures/fake_hub/server.mjs) over a directory of repos.
//
//   const hub = await startFakeHub({ 'owner/repo': { 'file.gguf': '/path/to/source' } });
//   hub.url                          // http://127.0.0.1:PORT, for HF_ENDPOINT
//   await hub.control({...}); await hub.stats(); hub.stop();
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const script = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../fixtures/fake_hub/server.mjs');

export async function startFakeHub(repos) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'rc-fake-hub-'));
  for (const [repo, files] of Object.entries(repos)) {
    fs.mkdirSync(path.join(root, repo), { recursive: true });
    for (const [name, source] of Object.entries(files)) fs.symlinkSync(source, path.join(root, repo, name));
  }
  const child = spawn(process.execPath, [script, '--root', root, '--port', '0', '--exit-on-stdin-close'], { stdio: ['pipe', 'pipe', 'inherit'] });
  const port = await new Promise((resolve, reject) => {
    let buf = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (d) => {
      buf += d;
      const m = buf.match(/listening (\d+)/);
      if (m) resolve(Number(m[1]));
    });
    child.once('exit', (code) => reject(new Error(`fake hub exited early (${code})`)));
  });
  const url = `http://127.0.0.1:${port}`;
  const call = async (method, p, body) => {
    const r = await fetch(url + p, { method, body: body && JSON.stringify(body), headers: { 'content-type': 'application/json' } });
    return r.json();
  };
  return {
    url,
    control: (settings) => call('POST', '/__control', settings),
    stats: () => call('GET', '/__stats'),
    resetStats: () => call('POST', '/__stats/reset'),
    stop() {
      child.stdin.end();
      child.kill();
      fs.rmSync(root, { recursive: true, force: true });
    },
  };
}
