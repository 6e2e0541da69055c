/**
 * The BullMQ dashboard at `/admin/queues` of an api replica (Redis, PostgreSQL),
 * behind `ADMIN_TOKEN`: refused without it (404 when unset, 401 without or with a wrong
 * credential, a user's access token included), and opened in headless Chromium with HTTP Basic
 * credentials, where the service's queues render from assets served by the replica itself.
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServiceProcess, type ServiceProcess } from '@agent-backend/testing';
import { startCluster, type Cluster } from './cluster.js';
import { requireBuild, tempDir } from './helpers.js';
import { callApi } from './knowledge-helpers.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ADMIN_TOKEN = 'admin-dashboard-token-for-tests';
const QUEUES = ['scheduled-tasks', 'chat-messages', 'kb-ingest'];
const basic = (user: string, password: string) =>
  `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

describe('queue dashboard on the BullMQ engine', () => {
  let cluster: Cluster;
  let browser: Browser;
  let alice: string;
  const api = () => cluster.apis[0]!.url;
  const dashboard = (headers: Record<string, string> = {}, path = '/admin/queues') =>
    fetch(`${api()}${path}`, { headers });

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) {
      throw new Error(`${CHROMIUM} is missing: install Debian's chromium (.ci/run does)`);
    }
    cluster = await startCluster({ gateways: 0, apis: 1, env: { ADMIN_TOKEN } });
    alice = await cluster.token('alice');
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await cluster?.stop();
  });

  it('is 404 on a replica without ADMIN_TOKEN', async () => {
    const without = await cluster.startReplica('api', 'api-no-admin', { ADMIN_TOKEN: '' });
    for (const path of ['/admin/queues', '/admin/queues/api/queues']) {
      const res = await fetch(`${without.url}${path}`, {
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      });
      expect(res.status).toBe(404);
      expect(await res.json()).toMatchObject({ error: { code: 'not_found' } });
    }
  });

  it('answers 401 with a Basic challenge without the token, with a wrong one or a user token', async () => {
    const refused: Array<Record<string, string>> = [
      {},
      { authorization: `Bearer ${alice}` },
      { authorization: basic('alice', alice) },
      { authorization: `Bearer ${ADMIN_TOKEN}-not` },
      { authorization: basic(ADMIN_TOKEN, 'wrong') },
      { authorization: `Token ${ADMIN_TOKEN}` },
    ];
    for (const path of ['/admin/queues', '/admin/queues/api/queues', '/admin/queues/static/x.js']) {
      for (const headers of refused) {
        const res = await dashboard(headers, path);
        expect(res.status).toBe(401);
        expect(res.headers.get('www-authenticate')).toBe('Basic realm="queues"');
        expect(await res.json()).toMatchObject({ error: { code: 'unauthorized' } });
      }
    }
    // A path that only starts like the dashboard's is the service's 404, not the dashboard.
    expect((await dashboard({}, '/admin/queuesX')).status).toBe(404);
  });

  it('lists the queues for a bearer token and for Basic with any user name', async () => {
    for (const authorization of [`Bearer ${ADMIN_TOKEN}`, basic('ops', ADMIN_TOKEN)]) {
      const res = await dashboard({ authorization }, '/admin/queues/api/queues');
      expect(res.status).toBe(200);
      const body = (await res.json()) as { queues: Array<{ name: string }> };
      expect(body.queues.map((q) => q.name).sort()).toEqual([...QUEUES].sort());
    }
  });

  it('renders the queues in Chromium from assets of the replica itself', async () => {
    // A waiting job, so the page has a count to show.
    const base = (await callApi(api(), alice, 'POST', '/api/knowledge-bases', { name: 'Q' }))
      .body as { id: string };
    const added = await callApi(api(), alice, 'POST', `/api/knowledge-bases/${base.id}/documents`, {
      name: 'a.md',
      type: 'markdown',
      content: '# A\n\nWaiting for a worker.',
    });
    expect(added.status).toBe(202);

    // Chromium answers the Basic challenge with what it holds: without credentials it gives up
    // (ERR_INVALID_AUTH_CREDENTIALS); with wrong ones the page is the 401.
    for (const credentials of [undefined, { username: 'ops', password: 'not-the-token-at-all' }]) {
      const refusedContext = await browser.newContext(
        credentials ? { httpCredentials: credentials } : {},
      );
      const outcome = await (await refusedContext.newPage()).goto(`${api()}/admin/queues`).then(
        (res) => String(res?.status()),
        (error: Error) => error.message,
      );
      expect(outcome).toMatch(/^401$|ERR_INVALID_AUTH_CREDENTIALS/);
      await refusedContext.close();
    }

    const context = await browser.newContext({
      httpCredentials: { username: 'ops', password: ADMIN_TOKEN },
    });
    const page = await context.newPage();
    const origins = new Set<string>();
    const failed: string[] = [];
    page.on('request', (request) => origins.add(new URL(request.url()).origin));
    page.on('response', (response) => {
      if (response.status() >= 400) failed.push(`${response.status()} ${response.url()}`);
    });
    // What the page's Content-Security-Policy refused, as Chromium reports it.
    const refused: string[] = [];
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) refused.push(message.text());
    });
    const response = await page.goto(`${api()}/admin/queues`);
    expect(response?.status()).toBe(200);
    // The service's page policy (inline styles are the one loosening: bull-board
    // renders <style> elements) and no framing, as the playground has.
    const headers = response!.headers();
    const policy = headers['content-security-policy'] ?? '';
    expect(policy).toContain("default-src 'self'");
    expect(policy).toMatch(/(^|; )script-src 'self'(;|$)/);
    expect(policy).toMatch(/(^|; )style-src 'self' 'unsafe-inline'(;|$)/);
    expect(policy).toContain("frame-ancestors 'none'");
    expect(headers['x-frame-options']).toBe('DENY');
    for (const queue of QUEUES) {
      await page.getByText(queue, { exact: true }).first().waitFor({ timeout: 20_000 });
    }
    expect(await page.title()).toBe('agent-backend queues');
    // A queue's page with its waiting job and the job's data (highlighted by a worker).
    await page.getByText('kb-ingest', { exact: true }).first().click();
    await page.getByText('Waiting', { exact: false }).first().click();
    await page.getByText('jobData').first().waitFor({ timeout: 20_000 });
    await page.getByText('"alice"').first().waitFor({ timeout: 20_000 });
    expect(refused).toEqual([]);
    expect(failed).toEqual([]);
    expect([...origins]).toEqual([new URL(api()).origin]);
    await context.close();
  });

  it('never writes the admin token to a log line', () => {
    const logs = cluster.apis.flatMap((p) => [...p.stdout, ...p.stderr]).join('\n');
    expect(logs).toContain('queue dashboard mounted');
    expect(logs).not.toContain(ADMIN_TOKEN);
    expect(logs).not.toContain(Buffer.from(`ops:${ADMIN_TOKEN}`).toString('base64'));
  });
});

describe('queue dashboard on the embedded engine', () => {
  let service: ServiceProcess;

  beforeAll(async () => {
    requireBuild('apps/all-in-one/dist/main.js');
    service = await startServiceProcess({
      entry: 'apps/all-in-one/dist/main.js',
      env: { DATA_DIR: tempDir('dashboard-embedded'), LOG_LEVEL: 'info', ADMIN_TOKEN },
    });
  }, 120_000);
  afterAll(async () => {
    await service?.stop('SIGKILL');
  });

  it('is 404 (no BullMQ queues to show), while the all-in-one serves /metrics', async () => {
    const res = await fetch(`${service.url}/admin/queues`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(res.status).toBe(404);
    const metrics = await fetch(`${service.url}/metrics`);
    expect(metrics.status).toBe(200);
    const text = await metrics.text();
    expect(text).toContain('# TYPE agent_backend_agent_runs_total counter');
    expect(text).toContain('# TYPE agent_backend_gateway_connections gauge');
  });
});
