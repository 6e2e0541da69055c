/**
 * The playground over plain HTTP: its files and headers, `GET /` and `/playground`
 * redirects, `/playground/config.json`, and `POST /api/dev/tokens` (absent unless DEV_TOKENS).
 * The browser side is tests/playground.browser.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServiceProcess, type ServiceProcess } from '@agent-backend/testing';
import { requireBuild, tempDir } from './helpers.js';

const MAIN = 'apps/all-in-one/dist/main.js';

describe('playground routes', () => {
  let plain: ServiceProcess;
  let dev: ServiceProcess;

  beforeAll(async () => {
    requireBuild(MAIN, 'packages/playground/dist/app.js');
    [plain, dev] = await Promise.all([
      startServiceProcess({ entry: MAIN, env: { DATA_DIR: tempDir('pg-plain') } }),
      startServiceProcess({
        entry: MAIN,
        env: {
          DATA_DIR: tempDir('pg-dev'),
          DEV_TOKENS: 'true',
          PLAYGROUND_DEMO_MODEL_URL: 'http://127.0.0.1:9/v1',
        },
      }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([plain?.stop('SIGKILL'), dev?.stop('SIGKILL')]);
  });

  it('redirects / and /playground to /playground/, which serves the page with a strict CSP', async () => {
    const root = await fetch(`${plain.url}/`, { redirect: 'manual' });
    expect(root.status).toBe(302);
    expect(root.headers.get('location')).toBe('/playground/');
    const bare = await fetch(`${plain.url}/playground`, { redirect: 'manual' });
    expect(bare.status).toBe(301);
    expect(bare.headers.get('location')).toBe('/playground/');

    const page = await fetch(`${plain.url}/playground/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(page.headers.get('x-content-type-options')).toBe('nosniff');
    const html = await page.text();
    // Everything the page loads is the service's own: no CDN.
    expect(html).not.toMatch(/(src|href)="https?:/);
    for (const path of ['js/app.js', 'style.css', 'sdk/index.js', 'sdk/client.js']) {
      const file = await fetch(`${plain.url}/playground/${path}`);
      expect(file.status, path).toBe(200);
    }
    expect((await fetch(`${plain.url}/playground/js/app.js`)).headers.get('content-type')).toMatch(
      /javascript/,
    );
    // A tab icon of its own, served beside the page.
    const icon = /<link rel="icon" href="([^"]+)"/.exec(html)?.[1];
    expect(icon).toBeDefined();
    const served = await fetch(new URL(icon!, `${plain.url}/playground/`));
    expect(served.status).toBe(200);
    expect(served.headers.get('content-type')).toMatch(/^image\/svg\+xml/);
  });

  it('says how often the nodes panel is read again: every 30 s, as it does', async () => {
    const html = await (await fetch(`${plain.url}/playground/`)).text();
    const hint = /<section id="panel-nodes"[\s\S]*?<p class="hint">([\s\S]*?)<\/p>/.exec(html)?.[1];
    expect(hint?.replace(/\s+/g, ' ')).toContain('every 30 s');
    expect(html).not.toContain('every few seconds');
  });

  it('answers a missing file with the JSON 404 and serves nothing outside its folders', async () => {
    for (const path of [
      '/playground/nope.js',
      '/playground/sdk/../../package.json',
      '/playground/%2e%2e/package.json',
    ]) {
      const response = await fetch(`${plain.url}${path}`);
      expect(response.status, path).toBe(404);
      expect(await response.json()).toMatchObject({ error: { code: 'not_found' } });
    }
  });

  it('tells the page what this service offers', async () => {
    expect(await (await fetch(`${plain.url}/playground/config.json`)).json()).toEqual({
      dev_tokens: false,
      demo_model: null,
    });
    expect(await (await fetch(`${dev.url}/playground/config.json`)).json()).toEqual({
      dev_tokens: true,
      demo_model: { base_url: 'http://127.0.0.1:9/v1', model_name: 'demo-scripted' },
    });
  });

  it('has no dev token endpoint unless DEV_TOKENS=true', async () => {
    const response = await fetch(`${plain.url}/api/dev/tokens`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ user_id: 'mallory' }),
    });
    expect(response.status).toBe(404);
  });

  it('issues a working token pair with DEV_TOKENS=true, and validates the user id', async () => {
    const mint = (body: unknown) =>
      fetch(`${dev.url}/api/dev/tokens`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const bad = await mint({ user_id: 'has space' });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ error: { code: 'invalid_request' } });
    expect((await mint({})).status).toBe(400);

    const ok = await mint({ user_id: 'dana' });
    expect(ok.status).toBe(200);
    const pair = (await ok.json()) as { accessToken: string; refreshToken: string };
    const whoami = await fetch(`${dev.url}/api/auth/whoami`, {
      headers: { authorization: `Bearer ${pair.accessToken}` },
    });
    expect(await whoami.json()).toEqual({ user_id: 'dana' });
    const refreshed = await fetch(`${dev.url}/api/auth/refresh`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ refreshToken: pair.refreshToken }),
    });
    expect(refreshed.status).toBe(200);
    // The warning is in the log, once, at start.
    expect(dev.stdout.filter((line) => line.includes('DEV_TOKENS is on'))).toHaveLength(1);
  });
});
