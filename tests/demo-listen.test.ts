/**
 * `pnpm demo` mints tokens for anyone who reaches it (DEV_TOKENS), so it listens on
 * loopback unless HOST is set, and says so; docs/protocol.md's curl example of an invoke runs
 * against it as written.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { exited, REPO_ROOT } from '@agent-backend/testing';
import { codeBlocks, runShellBlocks } from './doc-blocks.js';
import { requireBuild, tempDir } from './helpers.js';

const DEMO = 'apps/all-in-one/dist/demo.js';

describe('pnpm demo', () => {
  let demo: ChildProcess | undefined;
  let origin: string | undefined;
  afterAll(async () => {
    if (demo && demo.exitCode === null) {
      demo.kill('SIGTERM');
      await exited(demo);
    }
  });

  it('listens on 127.0.0.1 when HOST is not set, and says so', async () => {
    requireBuild(DEMO);
    // No HOST in the environment, as for a person who types `npm run demo`.
    demo = spawn(process.execPath, [DEMO], {
      cwd: REPO_ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        PORT: '0',
        DATA_DIR: tempDir('demo-listen'),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    demo.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    demo.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    await expect.poll(() => stderr, { timeout: 120_000, interval: 200 }).toContain('Demo ready');

    const listening = stdout
      .split('\n')
      .filter((line) => line.includes('"msg":"listening"'))
      .map((line) => JSON.parse(line) as { host: string; port: number });
    expect(listening).toEqual([expect.objectContaining({ host: '127.0.0.1' })]);
    const port = listening[0]!.port;
    expect(stderr).toContain(`Demo ready: open http://127.0.0.1:${port}/`);
    expect(stderr).toContain(
      'Listening on 127.0.0.1 only: other machines cannot reach it (HOST=0.0.0.0 opens it to them, and lets them mint tokens).',
    );
    expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);
    origin = `http://127.0.0.1:${port}`;
  }, 180_000);

  it("docs/protocol.md's curl invoke runs against it: the demo model calls the node's echo", async () => {
    expect(origin).toBeDefined();
    const blocks = codeBlocks('docs/protocol.md').filter((b) => b.lang === 'sh');
    expect(blocks).toHaveLength(1);
    const run = await runShellBlocks(blocks, {
      origin: origin!,
      scratch: tempDir('demo-curl'),
      env: {},
    });
    expect(run.code, `${run.script}\n${run.stderr}`).toBe(0);
    const events = run.stdout
      .split('\n')
      .filter((line) => line.startsWith('data: '))
      .map((line) => JSON.parse(line.slice('data: '.length)) as { type: string; result?: unknown });
    expect(events[0]).toMatchObject({ type: 'session' });
    expect(events).toContainEqual(expect.objectContaining({ type: 'tool_call' }));
    expect(events).toContainEqual(
      expect.objectContaining({ type: 'tool_result', result: 'hello' }),
    );
    expect(events.at(-1)).toMatchObject({ type: 'done' });
  }, 120_000);
});
