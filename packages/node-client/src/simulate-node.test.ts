import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { exited, REPO_ROOT } from '@agent-backend/testing';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startFakeGateway, type FakeGateway } from './testing/fake-gateway.js';
import { waitFor } from './testing/wait.js';
import { WebClient } from './web-client.js';

// The simulator as a person runs it: a real process, from its TypeScript source through tsx
// (the package is not part of the root build yet), against the gateway test double.

const ENTRY = join(REPO_ROOT, 'packages/node-client/src/simulate-node.ts');

interface Simulator {
  child: ChildProcess;
  lines: string[];
}

describe('simulate-node', () => {
  let gateway: FakeGateway;
  const running: Simulator[] = [];

  function simulate(args: string[], env: Record<string, string> = {}): Simulator {
    const child = spawn(process.execPath, ['--import', 'tsx', ENTRY, ...args], {
      cwd: REPO_ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const lines: string[] = [];
    let partial = '';
    child.stderr!.on('data', (chunk: Buffer) => {
      const parts = (partial + chunk.toString('utf8')).split('\n');
      partial = parts.pop() ?? '';
      lines.push(...parts);
    });
    const sim = { child, lines };
    running.push(sim);
    return sim;
  }

  const line = (sim: Simulator, event: string) =>
    waitFor(() => sim.lines.find((l) => l.split(' ')[1] === event), `a ${event} line`, 15_000);

  beforeAll(async () => {
    gateway = await startFakeGateway();
  });
  afterEach(() => {
    for (const { child } of running.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
  });
  afterAll(async () => {
    await gateway.close();
  });

  it('runs a desktop node whose demo tools answer, and exits 0 on SIGTERM', async () => {
    const token = await gateway.token('alice');
    const sim = simulate([
      '--kind',
      'desktop',
      '--url',
      gateway.url,
      '--user',
      'alice',
      '--token',
      token,
    ]);
    expect(await line(sim, 'registered')).toContain('node_id=desktop_alice');

    const call = (name: string, args: Record<string, unknown>) =>
      gateway.callTool({ userId: 'alice', nodeType: 'desktop', name, arguments: args });
    expect(await call('echo', { text: 'hi' })).toMatchObject({ ok: true, result: { text: 'hi' } });
    expect(await call('add', { a: 1, b: 2 })).toMatchObject({ ok: true, result: { text: '3' } });
    const shot = await call('screenshot', {});
    expect(shot).toMatchObject({ ok: true, result: { images: [{ mimeType: 'image/png' }] } });
    expect(await call('fail', {})).toMatchObject({
      ok: false,
      code: -32603,
      message: 'demo failure',
    });
    expect(await call('slow', { ms: 10 })).toMatchObject({
      ok: true,
      result: { text: 'waited 10 ms' },
    });
    expect((await gateway.listNodes('alice'))[0]).toMatchObject({
      node_name: 'Simulated desktop',
      available_tools: ['echo', 'add', 'screenshot', 'fail', 'slow'],
    });
    await line(sim, 'tool_result');
    expect(sim.lines.join('\n')).not.toContain(token);

    sim.child.kill('SIGTERM');
    expect(await exited(sim.child)).toBe(0);
    expect(sim.lines.some((l) => l.includes(' closed'))).toBe(true);
  });

  it('runs an extension whose demo workflows a web client can run', async () => {
    const sim = simulate(
      [
        '--kind',
        'extension',
        '--url',
        gateway.url,
        '--user',
        'bob',
        '--node-id',
        'ext-1',
        '--name',
        'My Browser',
      ],
      {
        SIMULATE_NODE_TOKEN: await gateway.token('bob'),
      },
    );
    await line(sim, 'registered');
    const web = new WebClient({
      url: gateway.url,
      userId: 'bob',
      token: await gateway.token('bob'),
    });
    try {
      await web.start();
      const list = await web.getWorkflows();
      expect(list.workflows?.map((w) => w.id)).toEqual(['wf_summarize_page', 'wf_fill_form']);
      const done = await web.runWorkflow('wf_summarize_page', { url: 'https://example.org' });
      expect(done).toMatchObject({
        success: true,
        output: expect.stringContaining('https://example.org'),
      });
      await line(sim, 'workflow_done');
    } finally {
      await web.close();
    }
    sim.child.kill('SIGINT');
    expect(await exited(sim.child)).toBe(0);
  });

  it('exits 1 by itself when the server refuses the node for good', async () => {
    const sim = simulate([
      '--kind',
      'desktop',
      '--url',
      gateway.url,
      '--user',
      'carol',
      '--token',
      await gateway.token('mallory'),
    ]);
    expect(await exited(sim.child)).toBe(1);
    expect(sim.lines.some((l) => l.includes('stopped code=forbidden'))).toBe(true);
  });

  it('stops with the URL it tried and a hint at --api-url when token refresh answers 404', async () => {
    // Something at the api URL that is not the api role (a gateway-only port, a static site).
    const elsewhere = createServer((_req, res) => res.writeHead(404).end('not found'));
    await new Promise<void>((resolve) => elsewhere.listen(0, '127.0.0.1', resolve));
    const origin = `http://127.0.0.1:${(elsewhere.address() as AddressInfo).port}`;
    try {
      const sim = simulate(
        ['--kind', 'desktop', '--url', gateway.url, '--user', 'dora', '--api-url', origin],
        { SIMULATE_NODE_REFRESH_TOKEN: 'rt_whatever' },
      );
      expect(await exited(sim.child)).toBe(1);
      const said = sim.lines.join('\n');
      expect(said).toContain(`POST ${origin}/api/auth/refresh answered 404`);
      expect(said).toContain('--api-url');
      expect(sim.lines.filter((l) => l.includes(' refresh_not_found '))).toHaveLength(1);
    } finally {
      await new Promise((resolve) => elsewhere.close(resolve));
    }
  });

  it('exits 2 with the usage on bad arguments', async () => {
    const sim = simulate(['--kind', 'phone', '--user', 'x', '--token', 't']);
    expect(await exited(sim.child)).toBe(2);
    expect(sim.lines.join('\n')).toContain('--kind must be desktop or extension');
  });
});
