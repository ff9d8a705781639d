// Starts a real `latlab` on the embedded default (DATABASE_URL unset: it starts its own
// Postgres cluster in a fresh data dir) and Debian's chromium through playwright-core.
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import net from 'node:net';

const root = path.resolve(import.meta.dirname, '..');

async function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); });
    s.on('error', reject);
  });
}

/// As root, latlab runs engines as `nobody`. A checkout that user cannot reach (one under
/// /root, say) gets engines as root instead, as scripts/serve.sh does, so the browser tests
/// still drive the native engine; the worker tests check the `nobody` default itself.
function engineUserEnv() {
  if (process.getuid?.() !== 0 || process.env.LATLAB_ENGINE_USER) return {};
  const reach = (flag, p) => spawnSync('runuser', ['-u', 'nobody', '--', 'test', flag, p]).status === 0;
  const ok = reach('-x', path.join(root, 'target/debug/latlab-engine')) && reach('-r', path.join(root, 'assets/cache/qwen3/tokenizer.json'));
  return ok ? {} : { LATLAB_ENGINE_USER: 'root' };
}

export async function startLatlab(extraEnv = {}) {
  const port = await freePort();
  // /tmp, mode 755: the postgres user (the cluster's owner when tests run as root) must reach it.
  const dataDir = fs.mkdtempSync(path.join('/tmp', 'latlab-e2e-'));
  fs.chmodSync(dataDir, 0o755);
  const env = { ...process.env, LATLAB_ADDR: `127.0.0.1:${port}`, LATLAB_DATA_DIR: dataDir,
                LATLAB_SITE_ROOT: path.join(root, 'target/site'), RUST_LOG: 'warn',
                LATLAB_ASSETS_DIR: path.join(root, 'assets/cache'), LATLAB_HEARTBEAT_S: '0.3', LATLAB_LEASE_S: '5',
                ...engineUserEnv(), ...extraEnv };
  delete env.DATABASE_URL;
  const bin = process.env.LATLAB_BIN || path.join(root, 'target/debug/latlab');
  const proc = spawn(bin, [], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  proc.stdout.on('data', d => { log += d; });
  proc.stderr.on('data', d => { log += d; });
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`latlab exited with ${proc.exitCode}:\n${log}`);
    try { if ((await fetch(`${base}/healthz`)).ok) break; } catch { /* not up yet */ }
    if (Date.now() > deadline) throw new Error(`latlab did not answer /healthz in 90 s:\n${log}`);
    await new Promise(r => setTimeout(r, 250));
  }
  const stop = async () => {
    proc.kill('SIGTERM');
    await new Promise(r => (proc.exitCode !== null ? r() : proc.on('exit', r)));
    const stillUp = fs.existsSync(path.join(dataDir, 'postgres/postmaster.pid'));
    fs.rmSync(dataDir, { recursive: true, force: true });
    return { code: proc.exitCode, postgresLeftRunning: stillUp, log };
  };
  return { base, stop, log: () => log };
}

export async function launchBrowser() {
  // launch() gives every run a fresh, throw-away profile of its own.
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
           '--disable-component-update', '--disable-sync'],
  });
  return { browser, cleanup: async () => { await browser.close(); } };
}

/// Resolves once the wasm bundle has hydrated the new-run form: after hydration the
/// fields of the target not chosen are hidden (before it, all are shown for no-JS use).
export async function waitHydrated(page) {
  await page.waitForSelector('.run-form .group.hidden', { state: 'attached', timeout: 30_000 });
}

// GET (no body) or POST JSON to latlab's API; a non-2xx answer fails the test with its body.
export async function api(base, path, body) {
  const r = await fetch(`${base}${path}`, body ? { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) } : {});
  const text = await r.text();
  assert.ok(r.ok, `${path}: ${r.status} ${text}`);
  return JSON.parse(text);
}
