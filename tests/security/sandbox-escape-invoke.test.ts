/**
 * Output symlinks, through the service: a user's code (`execute_code` called by a scripted
 * model, as a user-controlled model would) links its figures to the service's private signing key
 * and to the API process's own environment. No event of the run carries either, and the key file
 * is where it was.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { textReply, toolCallsReply } from '@agent-backend/testing';
import { invoke, startAgentCluster, type AgentCluster } from '../agent-helpers.js';
import { sandboxFolders, withoutBwrap } from '../sandbox-helpers.js';

const skip = withoutBwrap('sandbox escape suite (invoke)');
const { stateDir, usersRoot } = sandboxFolders('sbx-escape-e2e');
const CANARY = `canary-${process.pid}-${Date.now()}`;

describe.skipIf(skip)('hostile code through invoke', () => {
  let cluster: AgentCluster;
  let token: string;

  beforeAll(async () => {
    mkdirSync(join(usersRoot, 'mallory', 'project'), { recursive: true });
    cluster = await startAgentCluster({
      AGENT_LLM_MAX_RETRIES: '0',
      SANDBOX_LOCAL_ROOT: usersRoot,
      SANDBOX_STATE_DIR: stateDir,
      // In the API process's environment: what /proc/self/environ on the host would show.
      SANDBOX_ESCAPE_CANARY: CANARY,
    });
    token = await cluster.token('mallory');
  }, 120_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  it("returns no image of the service's key or environment, and no event carries them", async () => {
    const key = readFileSync(cluster.keys.privateKeyFile, 'utf8');
    const keyBody = key.split('\n')[1]!;
    const plant = [
      'import os',
      'os.makedirs("/tmp/outputs", exist_ok=True)',
      `os.symlink(${JSON.stringify(cluster.keys.privateKeyFile)}, "/tmp/outputs/key.png")`,
      'os.symlink("/proc/self/environ", "/tmp/outputs/env.png")',
      'print("planted")',
    ].join('\n');
    cluster.model.script('escape-outputs', [
      toolCallsReply([{ name: 'execute_code', args: { language: 'python', code: plant } }]),
      toolCallsReply([
        { name: 'execute_code', args: { language: 'python', code: 'print("second")' } },
      ]),
      textReply('Done.'),
    ]);
    const run = await invoke(cluster.api[0]!.url, token, {
      message: 'Make a plot',
      llm_config: { baseUrl: cluster.model.baseUrl, apiKey: 'sk-x', modelName: 'escape-outputs' },
      sandbox_mode: 'local',
      working_directory: 'project',
      session_id: 'escape-outputs',
    });
    const events = await run.ended;
    expect(events.at(-1)!.data.type).toBe('done');
    const results = events.filter((e) => e.data.type === 'tool_result');
    expect(results).toHaveLength(2);
    expect(String(results[0]!.data.result)).toContain('planted');
    expect(String(results[1]!.data.result)).toContain('second');
    for (const result of results) expect(result.data.images ?? []).toEqual([]);
    // Nothing of the key or the environment in any event, images decoded.
    const everything = events
      .map((e) =>
        [
          JSON.stringify(e.data),
          ...((e.data.images as Array<{ data: string }> | undefined) ?? []).map((i) =>
            Buffer.from(i.data, 'base64').toString('latin1'),
          ),
        ].join('\n'),
      )
      .join('\n');
    expect(everything).not.toContain(keyBody);
    expect(everything).not.toContain(CANARY);
    expect(everything).not.toContain('PRIVATE KEY');
    // Nor in what the model was sent.
    expect(JSON.stringify(cluster.model.requests('escape-outputs'))).not.toContain(keyBody);
    expect(readFileSync(cluster.keys.privateKeyFile, 'utf8')).toBe(key);
  });
});
