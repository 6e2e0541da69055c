/**
 * Code execution through `POST /api/agent/invoke` on two API replicas and a worker
 * sharing Redis and PostgreSQL, local sandboxes in bubblewrap, with the scripted model.
 */
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startServiceProcess,
  textReply,
  toolCallsReply,
  type ServiceProcess,
} from '@agent-backend/testing';
import { invoke, startAgentCluster, type AgentCluster } from './agent-helpers.js';
import { sandboxFolders } from './sandbox-helpers.js';

const { usersRoot, stateDir } = sandboxFolders('sbx-e2e');

describe('code execution in agent runs (local sandboxes)', () => {
  let cluster: AgentCluster;
  let worker: ServiceProcess | undefined;
  let alice: string;

  beforeAll(async () => {
    mkdirSync(join(usersRoot, 'alice-sbx', 'project'), { recursive: true });
    mkdirSync(join(usersRoot, 'bob-sbx'), { recursive: true });
    writeFileSync(join(usersRoot, 'alice-sbx', 'project', 'data.csv'), 'x,y\n1,1\n2,4\n3,9\n');
    // A link sandboxed code could have left there, to a host file: not a file of the folder.
    symlinkSync('/etc/hostname', join(usersRoot, 'alice-sbx', 'project', 'host.txt'));
    // A link inside alice's directory to bob's: the path looks like hers, it resolves to his.
    symlinkSync(join(usersRoot, 'bob-sbx'), join(usersRoot, 'alice-sbx', 'to-bob'));
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
        { name: 'host.txt', path: 'host.txt', type: 'text/plain' },
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
    // The link is not followed to tell whether its target exists.
    expect(system).toContain('not in the working directory: gone.txt, host.txt');
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
    for (const workingDirectory of [
      '../bob-sbx',
      join(usersRoot, 'bob-sbx'),
      '/etc',
      'to-bob',
      join(usersRoot, 'alice-sbx', 'to-bob'),
      'project/../to-bob',
    ]) {
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
    // Refused before any model call or sandbox.
    expect(cluster.model.requests('sbx-refused')).toHaveLength(0);
    expect(readdirSync(join(usersRoot, 'bob-sbx'))).toEqual([]);
    const missing = await fetch(`${cluster.api[0]!.url}/api/agent/invoke`, {
      method: 'POST',
      headers: { authorization: `Bearer ${alice}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'x', llm_config: llm('x'), sandbox_mode: 'local' }),
    });
    expect(missing.status).toBe(400);
  });

  it('offers no code tools for none, ask, no sandbox_mode, or cloud without a provider (with a notice)', async () => {
    for (const [name, extra] of [
      ['sbx-none', { sandbox_mode: 'none' }],
      // Omitted on a service without a cloud provider: the default is none, and no notice on
      // every run; asking for cloud still says why there are no code tools.
      ['sbx-default', { sandbox_mode: undefined }],
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

  it('contains a fork bomb and a 10 GB write; the service answers and the session’s next run works', async () => {
    cluster.model.script('sbx-escapes', [
      toolCallsReply([
        {
          name: 'run_command',
          args: { command: 'bomb() { bomb | bomb & }; bomb; sleep 2; echo survived' },
        },
      ]),
      toolCallsReply([
        {
          name: 'run_command',
          args: {
            command:
              'head -c 10G /dev/zero > /tmp/big.bin; echo "exit $?"; stat -c %s /tmp/big.bin; rm -f /tmp/big.bin',
          },
        },
      ]),
      textReply('Contained.'),
    ]);
    const run = await invoke(cluster.api[0]!.url, alice, {
      message: 'Try to break out',
      llm_config: llm('sbx-escapes'),
      ...local('sbx-session-escapes'),
    });
    const events = await run.ended;
    expect(events.at(-1)!.data.type).toBe('done');
    const [bomb, write] = events
      .filter((e) => e.data.type === 'tool_result')
      .map((e) => (e.data as unknown as { result: string }).result);
    // The bomb hit the process limit (fork fails) and the call still ended.
    expect(bomb).toMatch(/fork|Resource temporarily unavailable|retry/i);
    // The write stopped at the file-size limit (1 GiB), far short of 10 GB.
    expect(write).not.toContain('exit 0');
    const size = Number(/^(\d+)$/m.exec(write!)![1]);
    expect(size).toBeLessThanOrEqual(1024 ** 3);

    for (const api of cluster.api) {
      expect((await fetch(`${api.url}/healthz`)).status).toBe(200);
    }
    cluster.model.script('sbx-after', [
      toolCallsReply([
        { name: 'execute_code', args: { language: 'python', code: 'print(6 * 7)' } },
      ]),
      textReply('Still here.'),
    ]);
    const next = await invoke(cluster.api[1]!.url, alice, {
      message: 'Still working?',
      llm_config: llm('sbx-after'),
      ...local('sbx-session-escapes'),
    });
    const after = await next.ended;
    expect(after.at(-1)!.data.type).toBe('done');
    const result = after.find((e) => e.data.type === 'tool_result')!.data as unknown as {
      result: string;
      is_error?: boolean;
    };
    expect(result.is_error).not.toBe(true);
    expect(result.result).toContain('Exit code: 0');
    expect(result.result).toContain('42');
  }, 120_000);

  it('holds execute_code for approval under hitl_config, and runs it only once approved', async () => {
    const marker = join(usersRoot, 'alice-sbx', 'project', 'approved.txt');
    cluster.model.script('sbx-hitl', [
      toolCallsReply([
        {
          id: 'call_code',
          name: 'execute_code',
          args: { language: 'bash', code: 'echo approved > approved.txt; echo wrote' },
        },
      ]),
      textReply('Done.'),
    ]);
    const stream = await invoke(cluster.api[0]!.url, alice, {
      message: 'Write the marker',
      llm_config: llm('sbx-hitl'),
      ...local('sbx-session-hitl'),
      hitl_config: {},
    });
    await stream.waitFor(() => stream.events.some((e) => e.data.type === 'approval_request'));
    const request = stream.events.find((e) => e.data.type === 'approval_request')!
      .data as unknown as {
      request_id: string;
      tool_name: string;
      tool_args: unknown;
    };
    expect(request).toMatchObject({
      tool_name: 'execute_code',
      tool_args: { language: 'bash', code: 'echo approved > approved.txt; echo wrote' },
    });
    // Nothing ran while it waits.
    expect(existsSync(marker)).toBe(false);
    expect(stream.events.some((e) => e.data.type === 'tool_result')).toBe(false);
    const decision = await fetch(
      `${cluster.api[1]!.url}/api/agent/approvals/${encodeURIComponent(request.request_id)}/decision`,
      {
        method: 'POST',
        headers: { authorization: `Bearer ${alice}`, 'content-type': 'application/json' },
        body: JSON.stringify({ decision: 'approve' }),
      },
    );
    expect(decision.status).toBe(200);
    const events = await stream.ended;
    const result = events.find((e) => e.data.type === 'tool_result')!.data as unknown as {
      result: string;
    };
    expect(result.result).toContain('wrote');
    expect(readFileSync(marker, 'utf8')).toBe('approved\n');
  });

  it('offers no code-running tool in plan mode, only the reading ones', async () => {
    cluster.model.script('sbx-plan', [textReply('Here is my plan.')]);
    const run = await invoke(cluster.api[0]!.url, alice, {
      message: 'Plan how to plot data.csv',
      llm_config: llm('sbx-plan'),
      ...local('sbx-session-plan'),
      mode: 'plan',
    });
    const events = await run.ended;
    expect(events.at(-1)!.data.type).toBe('done');
    const offered = tools('sbx-plan');
    expect(offered).toEqual(expect.arrayContaining(['read_file', 'list_files']));
    for (const write of ['execute_code', 'run_command', 'write_file']) {
      expect(offered).not.toContain(write);
    }
    const system = String(cluster.model.requests('sbx-plan')[0]!.body.messages![0]!.content);
    expect(system).toMatch(/once the plan is accepted[\s\S]*- execute_code:/);
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
        SANDBOX_MAX_IDLE_MS: '6000',
        SANDBOX_SWEEP_INTERVAL_MS: '1000',
      },
    });
    // The idle clock from now: a worker that took longer to start than SANDBOX_MAX_IDLE_MS (a
    // loaded machine) would otherwise destroy the sandbox at its first sweep, skipping the pause.
    await cluster.sql(
      `UPDATE session_sandboxes SET last_used_at = now() WHERE session_id = 'sbx-session-doomed'`,
    );
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
  }, 120_000);
});
