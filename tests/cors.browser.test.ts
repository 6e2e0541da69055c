/**
 * CORS_ALLOWED_ORIGINS on the all-in-one: a page served from another loopback port (another
 * origin) calls the API from headless Chromium: a streamed invoke (SSE over `fetch`) and its
 * resume with `Last-Event-ID`, both of which need a preflight; a page of an origin not listed is
 * refused by the browser. `/ws/web` upgrades are checked against the same list.
 */
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import {
  runEntry,
  startScriptedModel,
  startServiceProcess,
  textReply,
  type ScriptedModel,
  type ServiceProcess,
} from '@agent-backend/testing';
import { requireBuild, tempDir } from './helpers.js';

const MAIN = 'apps/all-in-one/dist/main.js';
const TOKEN_ISSUE = 'apps/all-in-one/dist/token-issue.js';
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** A web app's own server: one empty page, on its own loopback port (its own origin). */
async function startPageServer(): Promise<{ server: Server; origin: string }> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('<!doctype html><title>web app</title>');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

/**
 * In the page: a streamed invoke with `fetch` (Authorization and a JSON body: a preflight), the
 * events read from the body, then the same run's events again from the resume route with
 * `Last-Event-ID` (another preflight). Returns what a web app could read, or the error's name
 * when the browser refused the answer. A string: a function would be rewritten by the test
 * runner's transform before it reaches the browser.
 */
const SCENARIO = `async ({ api, token, llm }) => {
  const events = (text) => text.split('\\n\\n').filter((block) => block.includes('data: ')).map((block) => ({
    id: /^id: (.*)$/m.exec(block)?.[1],
    event: JSON.parse(/^data: (.*)$/m.exec(block)[1]),
  }));
  try {
    const invoked = await fetch(api + '/api/agent/invoke', {
      method: 'POST',
      headers: { authorization: 'Bearer ' + token, 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'Hello', llm_config: llm, sandbox_mode: 'none' }),
    });
    const live = events(await invoked.text());
    const done = live.at(-1).event;
    const resumed = await fetch(api + '/api/agent/sessions/' + done.session_id + '/stream', {
      headers: { authorization: 'Bearer ' + token, 'last-event-id': live[0].id },
    });
    return {
      status: invoked.status,
      contentType: invoked.headers.get('content-type'),
      requestId: invoked.headers.get('x-request-id'),
      live,
      resumedStatus: resumed.status,
      resumed: events(await resumed.text()),
    };
  } catch (error) {
    return { error: error.name };
  }
}`;

describe('CORS from a page of another origin', () => {
  const env = {
    DATA_DIR: tempDir('cors-browser'),
    LOG_LEVEL: 'info',
    MCP_ALLOW_PRIVATE_NETWORKS: 'true',
  };
  let service: ServiceProcess;
  let model: ScriptedModel;
  let browser: Browser;
  let allowedPage: { server: Server; origin: string };
  let otherPage: { server: Server; origin: string };
  let token: string;
  const llm = (modelName: string) => ({ baseUrl: model.baseUrl, apiKey: 'sk-cors', modelName });

  beforeAll(async () => {
    requireBuild(MAIN, TOKEN_ISSUE);
    if (!existsSync(CHROMIUM)) {
      throw new Error(`${CHROMIUM} is missing: install Debian's chromium (.ci/run does)`);
    }
    allowedPage = await startPageServer();
    otherPage = await startPageServer();
    model = await startScriptedModel();
    service = await startServiceProcess({
      entry: MAIN,
      env: { ...env, CORS_ALLOWED_ORIGINS: allowedPage.origin },
      timeoutMs: 200_000,
    });
    token = (
      JSON.parse((await runEntry(TOKEN_ISSUE, ['erin'], env)).stdout) as { accessToken: string }
    ).accessToken;
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  }, 300_000);
  afterAll(async () => {
    await browser?.close();
    await service?.stop('SIGKILL');
    await model?.close();
    allowedPage?.server.close();
    otherPage?.server.close();
  });

  const runInPage = async (origin: string, modelName: string) => {
    const page = await browser.newPage();
    try {
      await page.goto(`${origin}/`);
      return (await page.evaluate(
        `(${SCENARIO})(${JSON.stringify({ api: service.url, token, llm: llm(modelName) })})`,
      )) as Record<string, unknown> & {
        live: Array<{ id: string; event: { type: string } }>;
        resumed: Array<{ id: string; event: { type: string } }>;
      };
    } finally {
      await page.close();
    }
  };

  it('streams an invoke and resumes it with Last-Event-ID from an allowed origin', async () => {
    model.script('cors-allowed', [textReply('Hello from afar')]);
    const result = await runInPage(allowedPage.origin, 'cors-allowed');
    expect(result.error).toBeUndefined();
    expect(result.status).toBe(200);
    expect(result.contentType).toMatch(/^text\/event-stream/);
    // An exposed header: the page can report which request failed.
    expect(result.requestId).toMatch(/\S/);
    const types = result.live.map((e) => e.event.type);
    expect(types.at(-1)).toBe('done');
    expect(types).toContain('message_chunk');
    expect(result.resumedStatus).toBe(200);
    // Everything after the first event, as the live stream had it.
    expect(result.resumed).toEqual(result.live.slice(1));
  });

  it('is refused by the browser for an origin not listed', async () => {
    model.script('cors-other', [textReply('unseen')]);
    const result = await runInPage(otherPage.origin, 'cors-other');
    expect(result).toEqual({ error: 'TypeError' });
  });

  it('answers the preflight of an allowed origin only', async () => {
    const preflight = (origin: string) =>
      fetch(`${service.url}/api/agent/invoke`, {
        method: 'OPTIONS',
        headers: {
          origin,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'authorization, content-type, last-event-id',
        },
      });
    const allowed = await preflight(allowedPage.origin);
    expect(allowed.status).toBe(204);
    expect(allowed.headers.get('access-control-allow-origin')).toBe(allowedPage.origin);
    expect(allowed.headers.get('access-control-allow-credentials')).toBeNull();
    expect(allowed.headers.get('access-control-allow-headers')).toMatch(/last-event-id/i);
    const other = await preflight(otherPage.origin);
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
  });

  describe('/ws/web', () => {
    /** The upgrade's outcome: `open`, or the HTTP status it was refused with. */
    const upgrade = (origin: string | undefined) =>
      new Promise<number | 'open'>((resolve, reject) => {
        const url = new URL('/ws/web', service.url.replace(/^http/, 'ws'));
        url.searchParams.set('user_id', 'erin');
        url.searchParams.set('token', token);
        const ws = new WebSocket(url, { headers: origin ? { origin } : {} });
        ws.on('open', () => {
          ws.close();
          resolve('open');
        });
        ws.on('unexpected-response', (_req, res) => {
          resolve(res.statusCode ?? 0);
          res.resume();
        });
        ws.on('error', reject);
      });

    it('refuses a page of an origin not listed with 403', async () => {
      expect(await upgrade(otherPage.origin)).toBe(403);
    });

    it("opens for a listed origin, the service's own pages and programs without Origin", async () => {
      expect(await upgrade(allowedPage.origin)).toBe('open');
      expect(await upgrade(service.url)).toBe('open');
      expect(await upgrade(undefined)).toBe('open');
    });
  });
});
