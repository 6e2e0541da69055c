/**
 * Sandbox mode `cloud`: code execution through `POST /api/agent/invoke` in E2B sandboxes, the real
 * `e2b` SDK in the service talking to a fake of E2B's API and envd on loopback (wire level), on
 * two API replicas and a worker sharing Redis and PostgreSQL, with the scripted model.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startFakeE2B,
  startServiceProcess,
  textReply,
  toolCallsReply,
  type FakeE2B,
  type ServiceProcess,
} from '@agent-backend/testing';
import { invoke, startAgentCluster, type AgentCluster } from './agent-helpers.js';

describe('code execution in agent runs (cloud sandboxes on E2B)', () => {
  let fake: FakeE2B;
  let cluster: AgentCluster;
  let worker: ServiceProcess | undefined;
  let alice: string;

  beforeAll(async () => {
    fake = await startFakeE2B();
    cluster = await startAgentCluster({
      AGENT_LLM_MAX_RETRIES: '0',
      SANDBOX_CLOUD_PROVIDER: 'e2b',
      E2B_API_KEY: fake.apiKey,
      E2B_API_URL: fake.apiUrl,
      E2B_SANDBOX_URL: fake.sandboxUrl,
      E2B_TEMPLATE: 'code-interpreter-v1',
      SANDBOX_CREATE_LEASE_MS: '1000',
    });
    alice = await cluster.token('alice-cloud');
  }, 120_000);
  afterAll(async () => {
    await worker?.stop('SIGKILL');
    await cluster?.stop();
    await fake?.close();
  });

  const llm = (modelName: string) => ({
    baseUrl: cluster.model.baseUrl,
    apiKey: 'sk-cloud',
    modelName,
  });
  type ToolResult = { result: string; is_error?: boolean; images?: Array<{ data: string }> };
  const toolResults = (events: Array<{ data: { type: string } }>) =>
    events.filter((e) => e.data.type === 'tool_result').map((e) => e.data as unknown as ToolResult);
  const sessionSandboxes = (sessionId: string) =>
    [...fake.sandboxes.values()].filter((s) => s.metadata.sessionId === sessionId);

  it('runs python that prints and draws in the default (cloud) mode, with the PNG in tool_result', async () => {
    cluster.model.script('cloud-plot', [
      toolCallsReply([
        {
          name: 'execute_code',
          args: {
            language: 'python',
            code: [
              'import matplotlib.pyplot as plt',
              'plt.plot([1, 2, 3], [1, 4, 9])',
              'plt.show()',
              'print("squares drawn")',
            ].join('\n'),
          },
        },
        { name: 'write_file', args: { path: 'notes.txt', content: 'kept for later runs' } },
      ]),
      textReply('Plotted.'),
    ]);
    const run = await invoke(cluster.api[0]!.url, alice, {
      message: 'Plot the squares',
      llm_config: llm('cloud-plot'),
      session_id: 'cloud-session-1',
      // Unset: the default mode, cloud on a service with a cloud provider (the helper would
      // send none).
      sandbox_mode: undefined,
    });
    const events = await run.ended;
    expect(events.at(-1)!.data.type).toBe('done');
    const results = toolResults(events);
    const plot = results.find((r) => r.images?.length);
    const write = results.find((r) => r !== plot);
    expect(plot!.is_error).not.toBe(true);
    expect(plot!.result).toContain('squares drawn');
    expect(plot!.result).toContain('Exit code: 0');
    expect(plot!.images).toHaveLength(1);
    expect(Buffer.from(plot!.images![0]!.data, 'base64').subarray(1, 4).toString()).toBe('PNG');
    expect(write!.is_error).not.toBe(true);
    const system = String(cluster.model.requests('cloud-plot')[0]!.body.messages![0]!.content);
    expect(system).toContain('sandbox (cloud)');
    expect(system).toContain('/home/user');
    // One E2B sandbox, labelled for the reaper, from the configured template.
    expect(sessionSandboxes('cloud-session-1')).toEqual([
      expect.objectContaining({
        templateID: 'code-interpreter-v1',
        metadata: {
          userId: 'alice-cloud',
          sessionId: 'cloud-session-1',
          deployment: 'agent-backend',
        },
      }),
    ]);
  });

  it('reuses the session sandbox on the other replica, and finds sandbox_files in it', async () => {
    cluster.model.script('cloud-reuse', [
      toolCallsReply([{ name: 'run_command', args: { command: 'cat notes.txt' } }]),
      textReply('Read it.'),
    ]);
    const run = await invoke(cluster.api[1]!.url, alice, {
      message: 'What did the first run leave?',
      llm_config: llm('cloud-reuse'),
      sandbox_mode: 'cloud',
      session_id: 'cloud-session-1',
      sandbox_files: [
        { name: 'notes.txt', path: 'notes.txt', type: 'text/plain' },
        { name: 'gone.csv', path: 'data/gone.csv', type: 'text/csv' },
      ],
    });
    const events = await run.ended;
    expect(toolResults(events)[0]!.result).toContain('kept for later runs');
    expect(events.filter((e) => e.data.type === 'notice').map((e) => e.data)).toEqual([
      expect.objectContaining({
        code: 'sandbox_files_missing',
        message: expect.stringContaining('data/gone.csv'),
      }),
    ]);
    const notice = events.find((e) => e.data.type === 'notice')!.data as unknown as {
      message: string;
    };
    expect(notice.message).not.toContain('notes.txt');
    expect(sessionSandboxes('cloud-session-1')).toHaveLength(1);
    const rows = await cluster.sql<{ n: number }>(
      `SELECT count(*)::int AS n FROM session_sandboxes WHERE session_id = 'cloud-session-1'`,
    );
    expect(rows[0]!.n).toBe(1);
  });

  it('names every sandbox_file missing in a session that has no sandbox yet, and creates none for it', async () => {
    cluster.model.script('cloud-nofiles', [textReply('Nothing to read.')]);
    const run = await invoke(cluster.api[0]!.url, alice, {
      message: 'Use my file',
      llm_config: llm('cloud-nofiles'),
      sandbox_mode: 'cloud',
      session_id: 'cloud-session-empty',
      sandbox_files: [{ name: 'a.txt', path: 'a.txt', type: 'text/plain' }],
    });
    const events = await run.ended;
    expect(events.find((e) => e.data.type === 'notice')!.data).toMatchObject({
      code: 'sandbox_files_missing',
    });
    expect(sessionSandboxes('cloud-session-empty')).toEqual([]);
  });

  it('never lets another user reach a session’s sandbox: the same session id is their own session', async () => {
    const bob = await cluster.token('bob-cloud');
    cluster.model.script('cloud-bob', [
      toolCallsReply([{ name: 'run_command', args: { command: 'cat notes.txt' } }]),
      textReply('Tried.'),
    ]);
    const run = await invoke(cluster.api[0]!.url, bob, {
      message: 'Read the notes',
      llm_config: llm('cloud-bob'),
      sandbox_mode: 'cloud',
      session_id: 'cloud-session-1',
      sandbox_files: [{ name: 'notes.txt', path: 'notes.txt', type: 'text/plain' }],
    });
    const events = await run.ended;
    // Bob's session of that id has no sandbox yet, so alice's file is not there for him, and
    // his code runs in a sandbox of his own; alice's is left as it was.
    expect(events.find((e) => e.data.type === 'notice')!.data).toMatchObject({
      code: 'sandbox_files_missing',
      message: expect.stringContaining('notes.txt'),
    });
    expect(JSON.stringify(toolResults(events))).not.toContain('kept for later runs');
    expect(
      sessionSandboxes('cloud-session-1')
        .map((s) => s.metadata.userId)
        .sort(),
    ).toEqual(['alice-cloud', 'bob-cloud']);
  });

  it('reaps the sandbox of a replica killed with SIGKILL, and orphans of this deployment only', async () => {
    const doomed = await cluster.startReplica('api-doomed-cloud');
    cluster.model.script('cloud-doomed', [
      toolCallsReply([{ name: 'run_command', args: { command: 'echo hi' } }]),
      textReply('Done.'),
    ]);
    const run = await invoke(doomed.url, alice, {
      message: 'Say hi',
      llm_config: llm('cloud-doomed'),
      sandbox_mode: 'cloud',
      session_id: 'cloud-session-doomed',
    });
    await run.ended;
    const [created] = sessionSandboxes('cloud-session-doomed');
    expect(created?.state).toBe('running');
    await doomed.stop('SIGKILL');
    // Sandboxes no session records: one of this deployment (its replica died before recording
    // it), one of another deployment sharing the E2B account.
    const make = async (deployment: string) => {
      const response = await fetch(`${fake.apiUrl}/v2/sandboxes`, {
        method: 'POST',
        headers: { 'x-api-key': fake.apiKey, 'content-type': 'application/json' },
        body: JSON.stringify({
          templateID: 'code-interpreter-v1',
          metadata: { userId: 'alice-cloud', sessionId: 'lost', deployment },
        }),
      });
      return ((await response.json()) as { sandboxID: string }).sandboxID;
    };
    const orphan = await make('agent-backend');
    const foreign = await make('someone-else');

    worker = await startServiceProcess({
      entry: 'apps/worker/dist/main.js',
      env: {
        ...cluster.env,
        INSTANCE_ID: 'worker-cloud',
        SANDBOX_IDLE_TIMEOUT_MS: '1000',
        SANDBOX_MAX_IDLE_MS: '6000',
        SANDBOX_SWEEP_INTERVAL_MS: '1000',
      },
    });
    // The idle clock from now: a worker slower to start than SANDBOX_MAX_IDLE_MS (a loaded
    // machine) would otherwise destroy the sandbox at its first sweep, skipping the pause.
    await cluster.sql(
      `UPDATE session_sandboxes SET last_used_at = now() WHERE session_id = 'cloud-session-doomed'`,
    );
    await expect
      .poll(() => fake.sandboxes.get(created!.id)?.state, { timeout: 15_000, interval: 100 })
      .toBe('paused');
    await expect
      .poll(() => fake.sandboxes.has(created!.id), { timeout: 15_000, interval: 100 })
      .toBe(false);
    await expect.poll(() => fake.sandboxes.has(orphan), { timeout: 15_000 }).toBe(false);
    expect(fake.sandboxes.has(foreign)).toBe(true);
    const rows = await cluster.sql<{ n: number }>(
      `SELECT count(*)::int AS n FROM session_sandboxes WHERE session_id = 'cloud-session-doomed'`,
    );
    expect(rows[0]!.n).toBe(0);
  }, 120_000);

  it('reaps a sandbox E2B created for a replica killed before it learned the id (found by metadata)', async () => {
    expect(worker).toBeDefined(); // the previous test's worker, sweeping every second
    const doomed = await cluster.startReplica('api-doomed-create');
    cluster.model.script('cloud-orphan', [
      toolCallsReply([{ name: 'run_command', args: { command: 'echo never' } }]),
      textReply('Never.'),
    ]);
    // E2B makes the sandbox but its answer is held: the replica is killed while it waits.
    fake.holdCreates = true;
    const run = await invoke(doomed.url, alice, {
      message: 'Say hi',
      llm_config: llm('cloud-orphan'),
      sandbox_mode: 'cloud',
      session_id: 'cloud-session-orphan',
    });
    void run.ended.catch(() => undefined);
    await expect
      .poll(() => sessionSandboxes('cloud-session-orphan').length, { timeout: 30_000 })
      .toBe(1);
    const [orphan] = sessionSandboxes('cloud-session-orphan');
    await doomed.stop('SIGKILL');
    fake.holdCreates = false;
    fake.releaseCreates();
    // No session records it: only its metadata (this deployment) tells the reaper it is ours.
    const rows = await cluster.sql<{ n: number }>(
      `SELECT count(*)::int AS n FROM session_sandboxes WHERE session_id = 'cloud-session-orphan'`,
    );
    expect(rows[0]!.n).toBe(0);
    expect(orphan!.metadata).toMatchObject({ deployment: 'agent-backend' });
    await expect
      .poll(() => fake.sandboxes.has(orphan!.id), { timeout: 30_000, interval: 100 })
      .toBe(false);
    expect(
      fake.requests.some((r) => r.method === 'DELETE' && r.path === `/sandboxes/${orphan!.id}`),
    ).toBe(true);
  }, 120_000);
});
