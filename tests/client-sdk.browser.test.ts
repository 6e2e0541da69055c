/**
 * The client SDK's browser module (`packages/client/dist`, loaded as-is: no bundler,
 * no Node.js import) in headless Chromium against the all-in-one: the same scenarios as in
 * Node.js (client-scenarios.mjs). The page and the module are served from the service's own
 * origin (intercepted by the browser), so the SDK calls the API same-origin as a web app would.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  REPO_ROOT,
  runEntry,
  startScriptedModel,
  startServiceProcess,
  startTcpProxy,
  textReply,
  toolCallsReply,
  type ScriptedModel,
  type ServiceProcess,
} from '@agent-backend/testing';
import { requireBuild, tempDir } from './helpers.js';

const MAIN = 'apps/all-in-one/dist/main.js';
const TOKEN_ISSUE = 'apps/all-in-one/dist/token-issue.js';
const CLIENT_DIST = 'packages/client/dist';
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

describe('client SDK in headless Chromium', () => {
  const env = {
    DATA_DIR: tempDir('client-sdk-browser'),
    LOG_LEVEL: 'info',
    MCP_ALLOW_PRIVATE_NETWORKS: 'true',
  };
  let service: ServiceProcess;
  let model: ScriptedModel;
  let browser: Browser;
  let page: Page;
  let pair: { accessToken: string; refreshToken: string };
  const llm = (modelName: string) => ({ baseUrl: model.baseUrl, apiKey: 'sk-browser', modelName });

  beforeAll(async () => {
    requireBuild(MAIN, TOKEN_ISSUE, `${CLIENT_DIST}/index.js`);
    if (!existsSync(CHROMIUM)) {
      throw new Error(`${CHROMIUM} is missing: install Debian's chromium (.ci/run does)`);
    }
    model = await startScriptedModel();
    service = await startServiceProcess({ entry: MAIN, env, timeoutMs: 200_000 });
    pair = JSON.parse((await runEntry(TOKEN_ISSUE, ['dana'], env)).stdout) as typeof pair;
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    page = await browser.newPage();
    // The SDK's files and the scenarios, served under the service's origin.
    await page.route(`${service.url}/__sdk__/**`, async (route) => {
      const name = new URL(route.request().url()).pathname.slice('/__sdk__/'.length);
      const file =
        name === 'scenarios.mjs'
          ? join(REPO_ROOT, 'tests/client-scenarios.mjs')
          : join(REPO_ROOT, CLIENT_DIST, name);
      if (!existsSync(file)) return route.fulfill({ status: 404 });
      await route.fulfill({
        status: 200,
        contentType: 'text/javascript',
        body: readFileSync(file),
      });
    });
    // The document itself comes from the service (its address space is loopback, as a page the
    // service serves would be): Chromium refuses WebSockets to loopback from a page it believes
    // public, which a page answered by the interception above would be.
    await page.goto(`${service.url}/playground/config.json`);
  }, 300_000);
  afterAll(async () => {
    await browser?.close();
    await service?.stop('SIGKILL');
    await model?.close();
  });

  /**
   * Runs one scenario of client-scenarios.mjs in the page. The page code is a string: a function
   * would be rewritten by the test runner's transform before it reaches the browser.
   */
  const inPage = (scenario: string, args: Record<string, unknown>) =>
    page.evaluate(
      `import('/__sdk__/scenarios.mjs').then((m) => m.${scenario}(${JSON.stringify({
        ...args,
        moduleUrl: '/__sdk__/index.js',
      })}))`,
    ) as Promise<Record<string, unknown> & { types: string[]; requests: unknown[] }>;

  it('loads in the browser with no Node.js import', async () => {
    const loaded = (await page.evaluate(
      `import('/__sdk__/index.js').then((sdk) => Object.keys(sdk))`,
    )) as string[];
    expect(loaded).toEqual(
      expect.arrayContaining([
        'AgentBackendClient',
        'ApiError',
        'BrowserWebClient',
        'parseSse',
        'refreshTokenAuth',
      ]),
    );
  });

  it('streams and resumes after the connection drops', async () => {
    model.script('browser-resume', [
      {
        kind: 'stream',
        pieces: [
          { text: 'one ' },
          { waitMs: 800 },
          { text: 'two ' },
          { text: 'three' },
          { finish: 'stop' },
        ],
      },
    ]);
    const result = await inPage('streamAndResume', {
      baseUrl: service.url,
      token: pair.accessToken,
      llm: llm('browser-resume'),
    });
    expect(result.text).toBe('one two three');
    expect(result.last).toMatchObject({ type: 'done', session_id: result.sessionId });
    expect(result.requests).toHaveLength(2);
    expect(result.requests[1]).toMatchObject({
      method: 'GET',
      lastEventId: `${String(result.runId)}:2`,
    });
  });

  it('decides a held tool call from the stream', async () => {
    model.script('browser-approve', [
      toolCallsReply([
        { name: 'write_todos', args: { todos: [{ content: 'Ship it', status: 'pending' }] } },
      ]),
      textReply('Planned.'),
    ]);
    const result = await inPage('approveFromStream', {
      baseUrl: service.url,
      token: pair.accessToken,
      llm: llm('browser-approve'),
    });
    expect(result.decision).toMatchObject({ decision: 'approve', status: 'accepted' });
    expect(result.types).toEqual(
      expect.arrayContaining(['approval_request', 'approval_result', 'todos', 'done']),
    );
  });

  it('refreshes a refused token through the callback, and from a refresh token', async () => {
    const result = await inPage('refreshOnUnauthorized', {
      baseUrl: service.url,
      freshToken: pair.accessToken,
      refreshToken: pair.refreshToken,
    });
    expect(result).toMatchObject({
      user: 'dana',
      calls: 1,
      total: 0,
      refreshedUser: 'dana',
      refused: { name: 'UnauthorizedError', status: 401, code: 'unauthorized' },
    });
  });

  it("keeps the page's gateway connection (/ws/web): refreshes a refused token, reconnects after a drop", async () => {
    const port = Number(new URL(service.url).port);
    const proxy = await startTcpProxy({ host: '127.0.0.1', port });
    try {
      const gatewayUrl = `http://127.0.0.1:${proxy.port}`;
      const first = (await inPage('webSocketConnect', {
        baseUrl: service.url,
        gatewayUrl,
        userId: 'dana',
        freshToken: pair.accessToken,
      })) as unknown as { calls: number; list: unknown; events: Array<Record<string, unknown>> };
      // The refused token's connection was closed with 4401; the fresh one got an answer.
      expect(first.calls).toBe(1);
      // (The gateway accepts the upgrade, then closes: the refusal comes after an `open`.)
      expect(first.events.filter((e) => e.type === 'close')).toEqual([
        { type: 'close', code: 4401, reconnecting: true },
      ]);
      expect(first.list).toEqual({
        type: 'workflows_list',
        success: false,
        error: 'Extension not connected',
      });
      const connections = proxy.accepted;

      proxy.setMode('drop'); // the network drops the open connection
      proxy.setMode('forward');
      const again = (await inPage('webSocketAgain', { since: first.events.length })) as unknown as {
        list: unknown;
        events: Array<Record<string, unknown>>;
      };
      expect(again.events[0]).toMatchObject({ type: 'close', code: 1006, reconnecting: true });
      expect(again.events).toContainEqual({ type: 'open' });
      expect(again.list).toMatchObject({ type: 'workflows_list', success: false });
      expect(proxy.accepted).toBeGreaterThan(connections);
    } finally {
      await proxy.close();
    }
  });
});
