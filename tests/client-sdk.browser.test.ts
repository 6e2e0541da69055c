/**
 * Issue 22.3: the client SDK's browser module (`packages/client/dist`, loaded as-is: no bundler,
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
    service = await startServiceProcess({ entry: MAIN, env });
    pair = JSON.parse((await runEntry(TOKEN_ISSUE, ['dana'], env)).stdout) as typeof pair;
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    page = await browser.newPage();
    // The SDK's files and the scenarios, served under the service's origin.
    await page.route(`${service.url}/__sdk__/**`, async (route) => {
      const name = new URL(route.request().url()).pathname.slice('/__sdk__/'.length);
      const file =
        name === 'scenarios.mjs'
          ? join(REPO_ROOT, 'tests/client-scenarios.mjs')
          : name === 'index.html'
            ? undefined
            : join(REPO_ROOT, CLIENT_DIST, name);
      if (file && !existsSync(file)) return route.fulfill({ status: 404 });
      await route.fulfill({
        status: 200,
        contentType: file ? 'text/javascript' : 'text/html',
        body: file ? readFileSync(file) : '<!doctype html><title>sdk</title>',
      });
    });
    await page.goto(`${service.url}/__sdk__/index.html`);
  }, 120_000);
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
      expect.arrayContaining(['AgentBackendClient', 'ApiError', 'parseSse', 'refreshTokenAuth']),
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
    expect(result.last).toEqual({ type: 'done', session_id: result.sessionId });
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
      refused: { name: 'ApiError', status: 401, code: 'unauthorized' },
    });
  });
});
