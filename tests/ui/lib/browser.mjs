// Headless Chromium (Debian's /usr/bin/chromium) through puppeteer-core, set up for a machine with
// no network: no sandbox (root in CI), no GPU, no background fetches (component updates, sync,
// QUIC probes), a fresh empty profile per launch (removed on close).
//
//   const browser = await launchBrowser();
//   const page = await openPage(browser, url, { width: 1280, height: 900 });
//   page.consoleErrors      // console errors, page errors, failed requests seen so far
//   page.foreignRequests    // requests to any origin but the server's (must stay empty)
//   page.abortedRequests    // requests the page aborted (the chat's Stop)
//   await browser.closeAll();
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import puppeteer from 'puppeteer-core';

export const chromiumPath = process.env.RUSTYCAGE_CHROMIUM ?? '/usr/bin/chromium';

export async function launchBrowser() {
  if (!fs.existsSync(chromiumPath)) throw new Error(`${chromiumPath} not found: scripts/setup.sh installs Debian's chromium (or set RUSTYCAGE_CHROMIUM)`);
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'rc-ui-chromium-'));
  const browser = await puppeteer.launch({
    executablePath: chromiumPath,
    headless: true,
    userDataDir: profile,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-dev-shm-usage',
      '--disable-extensions',
      '--mute-audio',
    ],
    protocolTimeout: 120_000,
  });
  browser.closeAll = async () => {
    try {
      await browser.close();
    } finally {
      fs.rmSync(profile, { recursive: true, force: true });
    }
  };
  return browser;
}

/**
 * A new tab at `url` with its console watched. `allowErrors(text)` may excuse expected errors (the
 * 401 of a refused key); page.allowErrors can be changed later. `answer(request)` may return (or
 * resolve to) a response ({status, contentType, body}) to serve instead of the server's. Resolves once the
 * page's load event fired.
 */
export async function openPage(browser, url, { width = 1280, height = 900, allowErrors = () => false, answer = null } = {}) {
  const page = await browser.newPage();
  await page.setViewport({ width, height });
  if (answer) {
    await page.setRequestInterception(true);
    page.on('request', async (req) => {
      const response = await answer(req);
      if (response) req.respond(response);
      else req.continue();
    });
  }
  const origin = new URL(url).origin;
  page.consoleErrors = [];
  page.allowErrors = allowErrors;
  page.foreignRequests = [];
  page.abortedRequests = [];
  page.on('console', (msg) => {
    if (msg.type() === 'error' && !page.allowErrors(msg.text())) page.consoleErrors.push(`console: ${msg.text()} (${msg.location()?.url ?? ''})`);
  });
  page.on('pageerror', (err) => page.consoleErrors.push(`page error: ${err.stack ?? err.message}`));
  page.on('request', (req) => {
    const u = req.url();
    if (!u.startsWith(origin) && !u.startsWith('data:') && !u.startsWith('blob:')) page.foreignRequests.push(u);
  });
  page.on('requestfailed', (req) => {
    const why = req.failure()?.errorText ?? '';
    // An aborted fetch (the chat's Stop) is not a failure.
    if (why === 'net::ERR_ABORTED') page.abortedRequests.push(req.url());
    else page.consoleErrors.push(`request failed: ${req.url()} ${why}`);
  });
  await page.goto(url, { waitUntil: 'load' });
  return page;
}
