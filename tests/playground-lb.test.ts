/**
 * The playground in split mode behind the compose load balancer. infra/nginx.conf as
 * shipped, with only what Docker provides swapped for loopback (the upstream addresses, the
 * resolver, the listen port, the pid and temp paths), in front of 2 api, 2 gateway and 1 worker
 * replicas on Redis and PostgreSQL. Chromium mints a token, chats with the demo model through a
 * held node call decided on whichever api replica nginx picks, sees the simulated node (connected
 * through nginx to either gateway) and calls its tool by hand.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDemoModel, type DemoModel } from '@agent-backend/all-in-one';
import { demoTools, NodeClient } from '@agent-backend/node-client';
import { REPO_ROOT } from '@agent-backend/testing';
import { startCluster, type Cluster } from './cluster.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const NGINX = ['/usr/sbin/nginx', '/usr/bin/nginx'].find((path) => existsSync(path));
const USER = 'lb-demo';

describe('playground in split mode behind infra/nginx.conf', () => {
  let model: DemoModel;
  let cluster: Cluster;
  let nginx: ChildProcess;
  let lb: string;
  let node: NodeClient;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    if (!NGINX) throw new Error('nginx is missing: install Debian nginx-light (.ci/run does)');
    model = await startDemoModel();
    cluster = await startCluster({
      gateways: 2,
      apis: 2,
      workers: 1,
      env: {
        DEV_TOKENS: 'true',
        LLM_ALLOWED_ORIGINS: new URL(model.baseUrl).origin,
        PLAYGROUND_DEMO_MODEL_URL: model.baseUrl,
      },
    });
    const port = await freePort();
    nginx = startNginx(port, {
      api: cluster.apis.map((api) => api.port),
      gateway: cluster.gateways.map((gateway) => gateway.port),
    });
    lb = `http://127.0.0.1:${port}`;
    await untilReachable(`${lb}/healthz`);

    const minted = (await (
      await fetch(`${lb}/api/dev/tokens`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ user_id: USER }),
      })
    ).json()) as { accessToken: string };
    node = new NodeClient({
      url: lb,
      kind: 'desktop',
      userId: USER,
      token: minted.accessToken,
      node: { name: 'Desktop behind nginx' },
      tools: demoTools(),
    });
    await node.start();

    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    page = await browser.newPage();
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await node?.close();
    nginx?.kill('SIGTERM');
    await cluster?.stop();
    await model?.close();
  });

  it('mints, chats through an approval, lists the node and calls its tool', async () => {
    // The api role itself redirects the bare path, as the all-in-one does.
    const bare = await fetch(`${cluster.apis[0]!.url}/playground`, {
      redirect: 'manual',
    });
    expect([bare.status, bare.headers.get('location')]).toEqual([301, '/playground/']);
    await page.goto(`${lb}/`);
    expect(new URL(page.url()).pathname).toBe('/playground/');
    await page.waitForSelector('body[data-ready="true"]');
    await page.getByLabel('User id').fill(USER);
    await page.getByRole('button', { name: 'Mint a token' }).click();
    await expect.poll(() => page.locator('#identity').textContent()).toBe(`Signed in as ${USER}`);

    await page.getByLabel('Message').fill('Through the load balancer?');
    await page.getByRole('button', { name: 'Send' }).click();
    const approval = page.locator('[data-event="approval_request"]');
    await approval.getByRole('button', { name: 'Approve', exact: true }).click();
    await page.locator('[data-event="done"]').waitFor({ timeout: 30_000 });
    expect(await approval.getAttribute('data-outcome')).toBe('approved');
    expect(await page.locator('.bubble.assistant').last().textContent()).toContain(
      'screenshot taken (64x40, generated)',
    );

    await page.getByRole('button', { name: 'Nodes', exact: true }).click();
    const card = page.locator('[data-node-id="desktop_lb-demo"]');
    await card.waitFor();
    expect(await card.locator('.online').textContent()).toBe('online');
    await page.getByLabel('Tool', { exact: true }).selectOption('add');
    await page.getByLabel('Arguments (JSON)').fill('{"a": 40, "b": 2}');
    await page.getByRole('button', { name: 'Call' }).click();
    await page.locator('[data-event="node_result"]').waitFor();
    expect(await page.locator('[data-event="node_result"] pre').textContent()).toBe('42');
  });
});

/** infra/nginx.conf with Docker's names and paths replaced by loopback ones. */
function startNginx(port: number, upstreams: { api: number[]; gateway: number[] }): ChildProcess {
  const dir = mkdtempSync(join(tmpdir(), 'nginx-lb-'));
  chmodSync(dir, 0o755);
  let conf = readFileSync(join(REPO_ROOT, 'infra/nginx.conf'), 'utf8');
  const servers = (ports: number[]) =>
    ports.map((p) => `        server 127.0.0.1:${p};`).join('\n');
  conf = conf
    .replace(/^\s*resolver(_timeout)? .*;$/gm, '')
    .replace(/(\s*server api-\d+:8000 resolve;)+/, `\n${servers(upstreams.api)}`)
    .replace(/(\s*server gateway-\d+:8000 resolve;)+/, `\n${servers(upstreams.gateway)}`)
    .replace('listen 8000;', `listen 127.0.0.1:${port};`)
    .replace('pid /tmp/nginx.pid;', `pid ${dir}/nginx.pid;`)
    .replace('worker_processes auto;', 'worker_processes 1;')
    .replace(
      'http {',
      `http {\n    client_body_temp_path ${dir}/body;\n    proxy_temp_path ${dir}/proxy;\n` +
        `    fastcgi_temp_path ${dir}/fastcgi;\n    uwsgi_temp_path ${dir}/uwsgi;\n    scgi_temp_path ${dir}/scgi;`,
    );
  // Every Docker name and the resolver are gone (comments may still name them).
  expect(conf.replace(/#.*$/gm, '')).not.toMatch(/api-1|gateway-1|resolve;|127\.0\.0\.11/);
  // As root, nginx's workers would run as nobody; keep them the test's user.
  if (process.getuid?.() === 0) conf = `user root;\n${conf}`;
  writeFileSync(join(dir, 'nginx.conf'), conf);
  return spawn(NGINX!, ['-p', dir, '-c', join(dir, 'nginx.conf'), '-g', 'daemon off;'], {
    stdio: 'ignore',
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

async function untilReachable(url: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // nginx is starting.
    }
    if (Date.now() > deadline) throw new Error(`${url} did not answer through nginx`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
