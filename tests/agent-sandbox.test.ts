/**
 * Issue 14: code execution through `POST /api/agent/invoke` on two API replicas and a worker
 * sharing Redis and PostgreSQL, local sandboxes in bubblewrap, with the scripted model.
 */
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startServiceProcess,
  textReply,
  toolCallsReply,
  type ServiceProcess,
} from '@agent-backend/testing';
import { invoke, startAgentCluster, type AgentCluster } from './agent-helpers.js';

const root = mkdtempSync(join(tmpdir(), 'sbx-e2e-'));
const usersRoot = join(root, 'users');
const stateDir = join(root, 'state');

describe('code execution in agent runs (local sandboxes)', () => {
  let cluster: AgentCluster;
  let worker: ServiceProcess | undefined;
  let alice: string;

  beforeAll(async () => {
    mkdirSync(join(usersRoot, 'alice-sbx', 'project'), { recursive: true });
    mkdirSync(join(usersRoot, 'bob-sbx'), { recursive: true });
    writeFileSync(join(usersRoot, 'alice-sbx', 'project', 'data.csv'), 'x,y\n1,1\n2,4\n3,9\n');
    cluster = await startAgentCluster({
      AGENT_LLM_MAX_RETRIES: '0',
      SANDBOX_LOCAL_ROOT: usersRoot,
      SANDBOX_STATE_DIR: stateDir,
      SANDBOX_CREATE_LEASE_MS: '1000',
    });
    alice = await cluster.token('alice-sbx');
  }, 120_000);
  afterAll(async () => {
    await worker?.stop('SIGKILL');
    await cluster?.stop();
  });

  const llm = (modelName: string) => ({
    baseUrl: cluster.model.baseUrl,
    apiKey: 'sk-sandbox',
    modelName,
  });
  const tools = (modelName: string, index = 0) =>
    (cluster.model.requests(modelName)[index]!.body.tools ?? []).map((t) => t.function.name);
  const local = (sessionId: string) => ({
    sandbox_mode: 'local',
    working_directory: 'project',
    session_id: sessionId,
  });

  it('runs python that prints and draws, and shows the PNG in tool_result', async () => {
    cluster.model.script('sbx-plot', [
      toolCallsReply([
        {
          name: 'execute_code',
          args: {
            language: 'python',
            code: [
              'import csv, matplotlib.pyplot as plt',
              'rows = list(csv.DictReader(open("data.csv")))',
              'print("rows:", len(rows))',
              'plt.plot([int(r["x"]) for r in rows], [int(r["y"]) for r in rows])',
              'plt.savefig("plot.png")',
              'open("/tmp/state.txt", "w").write("from the first run")',
            ].join('\n'),
          },
        },
      ]),
      textReply('Plotted.'),
    ]);
    const run = await invoke(cluster.api[0]!.url, alice, {
      message: 'Plot data.csv',
      llm_config: llm('sbx-plot'),
      ...local('sbx-session-1'),
      sandbox_files: [
        { name: 'data.csv', path: 'data.csv', type: 'text/csv' },
        { name: 'gone.txt', path: 'gone.txt', type: 'text/plain' },
      ],
    });
    const events = await run.ended;
    expect(events.at(-1)!.data.type).toBe('done');
    expect(tools('sbx-plot')).toEqual(
      expect.arrayContaining([
        'execute_code',
        'run_command',
        'write_file',
        'read_file',
        'list_files',
      ]),
    );
    const system = String(cluster.model.requests('sbx-plot')[0]!.body.messages![0]!.content);
    expect(system).toContain('data.csv');
    expect(system).toContain('not in the working directory: gone.txt');
    expect(events.filter((e) => e.data.type === 'notice').map((e) => e.data)).toEqual([
      expect.objectContaining({
        code: 'sandbox_files_missing',
        message: expect.stringContaining('gone.txt'),
      }),
    ]);
    const result = events.find((e) => e.data.type === 'tool_result')!.data as unknown as {
      result: string;
      is_error?: boolean;
      images?: Array<{ data: string; mimeType: string }>;
    };
    expect(result.is_error).not.toBe(true);
    expect(result.result).toContain('rows: 3');
    expect(result.result).toContain('Exit code: 0');
    // The figure still open at exit comes back as an image; savefig also wrote the file.
    expect(result.images).toHaveLength(1);
    expect(Buffer.from(result.images![0]!.data, 'base64').subarray(1, 4).toString()).toBe('PNG');
    expect(existsSync(join(usersRoot, 'alice-sbx', 'project', 'plot.png'))).toBe(true);
  });

  it('reuses the session sandbox on the other replica', async () => {
    cluster.model.script('sbx-reuse', [
      toolCallsReply([{ name: 'run_command', args: { command: 'cat /tmp/state.txt' } }]),
      textReply('Read it.'),
    ]);
    const run = await invoke(cluster.api[1]!.url, alice, {
      message: 'What did the first run leave?',
      llm_config: llm('sbx-reuse'),
      ...local('sbx-session-1'),
    });
    const events = await run.ended;
    const result = events.find((e) => e.data.type === 'tool_result')!.data as unknown as {
      result: string;
    };
    expect(result.result).toContain('from the first run');
    const rows = await cluster.sql<{ n: number }>(
      `SELECT count(*)::int AS n FROM session_sandboxes WHERE session_id = 'sbx-session-1'`,
    );
    expect(rows[0]!.n).toBe(1);
    expect(readdirSync(stateDir).filter((d) => d.startsWith('sbx_'))).toHaveLength(1);
  });

  it("copies an active skill's resource files into the sandbox, at the path the prompt names", async () => {
    cluster.model.script('sbx-skill', [
      toolCallsReply([
        {
          name: 'run_command',
          args: { command: 'cat /tmp/skills/drafting-emails/references/tone-guide.md' },
        },
      ]),
      textReply('Read the guide.'),
    ]);
    const run = await invoke(cluster.api[0]!.url, alice, {
      message: 'Draft a polite email declining the meeting',
      llm_config: llm('sbx-skill'),
      ...local('sbx-session-skill'),
      skills: { skill_names: ['drafting-emails'] },
    });
    const events = await run.ended;
    const system = String(cluster.model.requests('sbx-skill')[0]!.body.messages![0]!.content);
    expect(system).toContain('/tmp/skills/<skill name>/');
    const result = events.find((e) => e.data.type === 'tool_result')!.data as unknown as {
      result: string;
    };
    const guide = readFileSync('skills/drafting-emails/references/tone-guide.md', 'utf8');
    expect(result.result).toContain(guide.split('\n')[0]!);
    expect(result.result).toContain('Exit code: 0');
  });

  it('refuses a working directory outside the user’s own, with an error event', async () => {
    for (const workingDirectory of ['../bob-sbx', join(usersRoot, 'bob-sbx'), '/etc']) {
      cluster.model.script('sbx-refused', [textReply('never')]);
      const run = await invoke(cluster.api[0]!.url, alice, {
        message: 'Look around',
        llm_config: llm('sbx-refused'),
        sandbox_mode: 'local',
        working_directory: workingDirectory,
      });
      const last = (await run.ended).at(-1)!.data as { type: string; code?: string };
      expect(last).toMatchObject({ type: 'error', code: 'working_directory_refused' });
    }
    const missing = await fetch(`${cluster.api[0]!.url}/api/agent/invoke`, {
      method: 'POST',
      headers: { authorization: `Bearer ${alice}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'x', llm_config: llm('x'), sandbox_mode: 'local' }),
    });
    expect(missing.status).toBe(400);
  });

  it('offers no code tools for none, ask, or cloud without a provider (with a notice)', async () => {
    for (const [name, extra] of [
      ['sbx-none', { sandbox_mode: 'none' }],
      ['sbx-ask', { ...local('sbx-ask'), mode: 'ask' }],
      ['sbx-cloud', { sandbox_mode: 'cloud' }],
    ] as const) {
      cluster.model.script(name, [textReply('ok')]);
      const run = await invoke(cluster.api[0]!.url, alice, {
        message: 'Run something',
        llm_config: llm(name),
        ...extra,
      });
      const events = await run.ended;
      expect(tools(name).filter((t) => ['execute_code', 'run_command'].includes(t))).toEqual([]);
      const notices = events.filter((e) => e.data.type === 'notice').map((e) => e.data);
      expect(notices).toEqual(
        name === 'sbx-cloud' ? [expect.objectContaining({ code: 'sandbox_unavailable' })] : [],
      );
    }
  });

  it('reaps the sandbox of a replica killed with SIGKILL: paused when idle, then destroyed', async () => {
    const doomed = await cluster.startReplica('api-doomed');
    cluster.model.script('sbx-doomed', [
      toolCallsReply([{ name: 'run_command', args: { command: 'echo hi' } }]),
      textReply('Done.'),
    ]);
    const run = await invoke(doomed.url, alice, {
      message: 'Say hi',
      llm_config: llm('sbx-doomed'),
      ...local('sbx-session-doomed'),
    });
    await run.ended;
    const [row] = await cluster.sql<{ sandbox_id: string }>(
      `SELECT sandbox_id FROM session_sandboxes WHERE session_id = 'sbx-session-doomed'`,
    );
    expect(existsSync(join(stateDir, row!.sandbox_id))).toBe(true);
    await doomed.stop('SIGKILL');
    // And one no session records (its replica died before recording it).
    const orphan = `sbx_${'0'.repeat(8)}-0000-4000-8000-${'0'.repeat(12)}`;
    mkdirSync(join(stateDir, orphan, 'tmp'), { recursive: true });
    writeFileSync(
      join(stateDir, orphan, 'meta.json'),
      JSON.stringify({
        id: orphan,
        metadata: { userId: 'alice-sbx', sessionId: 'lost', deployment: 'agent-backend' },
        hostWorkingDirectory: join(usersRoot, 'alice-sbx'),
        createdAt: new Date(Date.now() - 60_000).toISOString(),
        state: 'running',
      }),
    );

    worker = await startServiceProcess({
      entry: 'apps/worker/dist/main.js',
      env: {
        ...cluster.env,
        INSTANCE_ID: 'worker-sbx',
        SANDBOX_IDLE_TIMEOUT_MS: '1000',
        SANDBOX_MAX_IDLE_MS: '4000',
        SANDBOX_SWEEP_INTERVAL_MS: '1000',
      },
    });
    const until = async (check: () => Promise<boolean>) => {
      for (let i = 0; i < 150 && !(await check()); i++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      return check();
    };
    const state = async () =>
      (
        await cluster.sql<{ state: string }>(
          `SELECT state FROM session_sandboxes WHERE session_id = 'sbx-session-doomed'`,
        )
      )[0]?.state;
    expect(await until(async () => (await state()) === 'paused')).toBe(true);
    expect(await until(async () => (await state()) === undefined)).toBe(true);
    expect(existsSync(join(stateDir, row!.sandbox_id))).toBe(false);
    expect(existsSync(join(stateDir, orphan))).toBe(false);
    // The user's files stay: only the sandbox's own state goes.
    expect(existsSync(join(usersRoot, 'alice-sbx', 'project', 'data.csv'))).toBe(true);
  }, 60_000);
});
