// The console on a server started with --api-key: the pages load without a key and ask for one; a
// wrong key is refused and not stored; the right one is kept in the tab's sessionStorage, survives
// a reload, and every page then loads its data (and chats) without a console error; "Forget key"
// drops it.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { startServer } from '../clients/lib/server.mjs';
import { launchBrowser, openPage } from './lib/browser.mjs';
import { PAGES, assertNoConsoleErrors, consoleURL, screenshot, showPage } from './lib/console.mjs';

const KEY = 'console-test-key-1234';
const STORAGE = 'rustycage.apiKey';

// The 401s this test provokes on purpose: the pages' first data requests, and the wrong key.
const expected401 = (text) => /status of 401/.test(text);

describe('web console with --api-key', { timeout: 600_000 }, () => {
  let server;
  let browser;

  before(async () => {
    server = await startServer({ models: { demo: 'tiny-chat.gguf' }, args: ['--api-key', KEY] });
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.closeAll();
    await server?.stopChecked();
  });

  it('serves the pages without a key but not the data', async () => {
    const get = (p, key) => fetch(`${server.openaiURL}${p}`, { headers: key ? { authorization: `Bearer ${key}` } : {} });
    assert.equal((await get('/ui/')).status, 200);
    assert.equal((await get('/ui/js/app.js')).status, 200);
    for (const p of ['/v1/console/server', '/v1/console/fleet', '/api/ps', '/api/tags']) {
      assert.equal((await get(p)).status, 401, `${p} without a key`);
      assert.equal((await get(p, 'wrong')).status, 401, `${p} with a wrong key`);
      assert.equal((await get(p, KEY)).status, 200, `${p} with the key`);
    }
    const facts = await (await get('/v1/console/server', KEY)).json();
    assert.equal(facts.api_key_required, true);
  });

  it('asks for the key, refuses a wrong one, keeps the right one in sessionStorage', async () => {
    const page = await openPage(browser, consoleURL(server, 'overview'), { allowErrors: expected401 });
    await page.waitForFunction(() => document.getElementById('key-dialog').open, { timeout: 30_000 });
    assert.equal(await page.$eval('#banner', (el) => el.hidden), false, 'the page says it is locked');
    await screenshot(page, 'api-key-prompt');

    await page.type('#key-input', 'not-the-key');
    await page.click('#key-submit');
    await page.waitForFunction(() => !document.getElementById('key-error').hidden, { timeout: 30_000 });
    assert.match(await page.$eval('#key-error', (el) => el.textContent), /refused/);
    assert.equal(await page.evaluate((k) => sessionStorage.getItem(k), STORAGE), null, 'a refused key is not stored');
    assert.equal(await page.$eval('#key-dialog', (d) => d.open), true, 'the dialog stays open');

    await page.$eval('#key-input', (el) => (el.value = ''));
    await page.type('#key-input', KEY);
    await page.click('#key-submit');
    await page.waitForFunction(() => !document.getElementById('key-dialog').open, { timeout: 30_000 });
    assert.equal(await page.evaluate((k) => sessionStorage.getItem(k), STORAGE), KEY);
    await page.waitForFunction(() => document.querySelector('#settings')?.textContent.includes('required'), { timeout: 30_000 });
    assert.equal(await page.$eval('#banner', (el) => el.hidden), true, 'unlocked');

    // A reload keeps the key (same tab): no prompt, no 401, every page loads.
    page.consoleErrors.length = 0;
    page.allowErrors = () => false;
    await page.reload({ waitUntil: 'load' });
    await page.waitForFunction(() => document.querySelector('#settings')?.textContent.includes('required'), { timeout: 30_000 });
    for (const id of PAGES) await showPage(page, id);
    await page.waitForFunction(() => document.querySelector('#chat-model option'), { timeout: 30_000 });
    assert.equal(await page.$eval('#key-dialog', (d) => d.open), false, 'no prompt after a reload');

    // The chat sends the key too.
    await page.$eval('#chat-max-tokens', (el) => {
      el.value = '4';
      el.dispatchEvent(new Event('change', { bubbles: true }));
    });
    await page.type('#chat-input', 'Hi with a key');
    await page.click('#chat-send');
    await page.waitForFunction(() => document.querySelector('.msg-assistant')?.dataset.state === 'done', { timeout: 120_000 });
    assert.ok(Number(await page.$eval('.msg-assistant .msg-stats', (el) => el.dataset.completionTokens)) > 0);
    assertNoConsoleErrors(page, 'with the key');

    // "Forget key" drops it and locks the page again.
    assert.equal(await page.$eval('#key-button', (b) => b.textContent), 'Forget key');
    await page.click('#key-button');
    assert.equal(await page.evaluate((k) => sessionStorage.getItem(k), STORAGE), null, 'the key is forgotten');
    assert.equal(await page.$eval('#key-dialog', (d) => d.open), true, 'the dialog asks again');
    await page.close();
  });
});
