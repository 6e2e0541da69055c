/**
 * Sandbox mode `local` on Docker: `execute_code` through `POST /api/agent/invoke` with
 * `SANDBOX_LOCAL_RUNTIME=docker`, the service talking to a fake Docker engine over its unix
 * socket (Engine API; no Docker engine on these machines), two API replicas sharing PostgreSQL
 * and Redis.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startFakeDocker,
  textReply,
  toolCallsReply,
  type FakeDocker,
} from '@agent-backend/testing';
import { invoke, startAgentCluster, type AgentCluster } from './agent-helpers.js';
import { sandboxFolders } from './sandbox-helpers.js';

describe('code execution in agent runs (local sandboxes on Docker)', () => {
  const { stateDir, usersRoot } = sandboxFolders('sbx-docker-e2e');
  let docker: FakeDocker;
  let cluster: AgentCluster;
  let alice: string;

  beforeAll(async () => {
    mkdirSync(join(usersRoot, 'alice-docker', 'project'), { recursive: true });
    writeFileSync(join(usersRoot, 'alice-docker', 'project', 'data.csv'), 'x,y\n1,1\n2,4\n');
    docker = await startFakeDocker();
    cluster = await startAgentCluster({
      AGENT_LLM_MAX_RETRIES: '0',
      SANDBOX_LOCAL_ROOT: usersRoot,
      SANDBOX_STATE_DIR: stateDir,
      SANDBOX_LOCAL_RUNTIME: 'docker',
      DOCKER_HOST: docker.host,
      SANDBOX_DOCKER_IMAGE: 'agent-backend-sandbox:test',
    });
    alice = await cluster.token('alice-docker');
  }, 120_000);
  afterAll(async () => {
    await cluster?.stop();
    await docker?.close();
  });

  const llm = (modelName: string) => ({
    baseUrl: cluster.model.baseUrl,
    apiKey: 'sk-docker',
    modelName,
  });
  type ToolResult = { result: string; is_error?: boolean; images?: Array<{ data: string }> };
  const results = (events: Array<{ data: { type: string } }>) =>
    events.filter((e) => e.data.type === 'tool_result').map((e) => e.data as unknown as ToolResult);

  it('runs python in the session container, and the other replica reuses it', async () => {
    cluster.model.script('docker-plot', [
      toolCallsReply([
        {
          name: 'execute_code',
          args: {
            language: 'python',
            code: [
              'import csv, matplotlib.pyplot as plt',
              'rows = list(csv.DictReader(open("data.csv")))',
              'print("rows:", len(rows))',
              'plt.plot([1, 2], [1, 4])',
              'plt.savefig("plot.png")',
            ].join('\n'),
          },
        },
      ]),
      textReply('Plotted.'),
    ]);
    const session = { sandbox_mode: 'local', working_directory: 'project', session_id: 'docker-1' };
    const first = await (
      await invoke(cluster.api[0]!.url, alice, {
        message: 'Plot data.csv',
        llm_config: llm('docker-plot'),
        ...session,
      })
    ).ended;
    const [plot] = results(first);
    expect(plot!.result).toContain('rows: 2');
    expect(plot!.result).toContain('Exit code: 0');
    expect(plot!.images).toHaveLength(1);
    expect(existsSync(join(usersRoot, 'alice-docker', 'project', 'plot.png'))).toBe(true);
    const containers = [...docker.containers.values()].filter(
      (c) => c.config.Labels?.['agent-backend.session'] === 'docker-1',
    );
    expect(containers).toHaveLength(1);
    expect(containers[0]!.config).toMatchObject({
      Image: 'agent-backend-sandbox:test',
      HostConfig: { NetworkMode: 'none', ReadonlyRootfs: true },
    });

    cluster.model.script('docker-again', [
      toolCallsReply([{ name: 'run_command', args: { command: 'ls plot.png' } }]),
      textReply('Listed.'),
    ]);
    const second = await (
      await invoke(cluster.api[1]!.url, alice, {
        message: 'Is the plot there?',
        llm_config: llm('docker-again'),
        ...session,
      })
    ).ended;
    expect(results(second)[0]!.result).toContain('plot.png');
    expect(
      [...docker.containers.values()].filter(
        (c) => c.config.Labels?.['agent-backend.session'] === 'docker-1',
      ),
    ).toHaveLength(1);
  });
});
