/**
 * Durable runs on the all-in-one (PGlite, in-process jobs: the embedded default): a background
 * run, an approval decided after its client left (the run suspended and resumed in the same
 * process), and an approval's timeout firing from its delayed job while nothing holds the run.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApprovalRequestEvent } from '@agent-backend/protocol';
import {
  startScriptedModel,
  startServiceProcess,
  textReply,
  toolCallsReply,
  type ScriptedModel,
  type ServiceProcess,
} from '@agent-backend/testing';
import { accessToken, invoke, type SseEvent } from './agent-helpers.js';
import { eventually, invokeBackground, joinRun, seqs } from './durable-helpers.js';
import { keyFiles, requireBuild, tempDir } from './helpers.js';

const MAIN = 'apps/all-in-one/dist/main.js';
const isType = (type: string) => (e: SseEvent) => e.data.type === type;
const todos = (content: string) => ({ todos: [{ content }] });

describe('all-in-one: durable runs on the embedded engines', () => {
  const keys = keyFiles();
  let model: ScriptedModel;
  let service: ServiceProcess;
  let token: string;
  const llm = (modelName: string) => ({ baseUrl: model.baseUrl, apiKey: 'sk-one', modelName });
  const status = async (runId: string) => {
    const response = await fetch(`${service.url}/api/agent/runs/${runId}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    return ((await response.json()) as { status: string }).status;
  };

  beforeAll(async () => {
    requireBuild(MAIN);
    model = await startScriptedModel();
    service = await startServiceProcess({
      entry: MAIN,
      env: {
        DATA_DIR: tempDir('one-durable'),
        JWT_PUBLIC_KEY_FILE: keys.publicKeyFile,
        JWT_PRIVATE_KEY_FILE: keys.privateKeyFile,
        MCP_ALLOW_PRIVATE_NETWORKS: 'true',
        AGENT_DISCONNECT_GRACE_MS: '200',
      },
      // PGlite's first start on a loaded machine.
      timeoutMs: 180_000,
    });
    token = await accessToken(keys.privateKey, 'una');
  }, 240_000);
  afterAll(async () => {
    await service?.stop('SIGKILL');
    await model?.close();
  });

  it('runs a background run in process; its stream is joined and rejoined', async () => {
    model.script('one-bg', [textReply('In the background.')]);
    const accepted = await invokeBackground(service.url, token, {
      message: 'go',
      llm_config: llm('one-bg'),
    });
    expect(accepted.status).toBe(202);
    const events = await (await joinRun(service.url, token, accepted.body.run_id)).ended;
    expect(events.map((e) => e.data.type)).toEqual([
      'session',
      'message_chunk',
      'message_chunk',
      'message_chunk',
      'done',
    ]);
    const again = await (
      await joinRun(service.url, token, accepted.body.run_id, events[1]!.id)
    ).ended;
    expect(seqs(again)).toEqual([3, 4, 5]);
  });

  it('suspends a run whose client left while it waits, and resumes it on the decision', async () => {
    model.script('one-left', [
      toolCallsReply([{ id: 'call_1', name: 'write_todos', args: todos('Decided later') }]),
      textReply('Decided.'),
    ]);
    const stream = await invoke(service.url, token, {
      message: 'go',
      llm_config: llm('one-left'),
      hitl_config: { default_timeout: 3600 },
    });
    const runId = String((await stream.waitFor(isType('session'))).data.run_id);
    const request = (await stream.waitFor(isType('approval_request')))
      .data as unknown as ApprovalRequestEvent;
    const seen = [...stream.events];
    stream.close();
    await eventually(async () => (await status(runId)) === 'suspended');
    const decided = await fetch(
      `${service.url}/api/agent/approvals/${request.request_id}/decision`,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify({ decision: 'approve' }),
      },
    );
    expect(decided.status).toBe(200);
    await eventually(async () => (await status(runId)) === 'done');
    const rest = await (await joinRun(service.url, token, runId, seen.at(-1)!.id)).ended;
    expect(rest.map((e) => e.data.type)).toEqual([
      'suspended',
      'approval_result',
      'todos',
      'tool_result',
      'message_chunk',
      'message_chunk',
      'message_chunk',
      'done',
    ]);
    expect(seqs([...seen, ...rest])).toEqual([...seen, ...rest].map((_, i) => i + 1));
  });

  it('times an approval out from its delayed job while nothing holds the run', async () => {
    model.script('one-timeout', [
      toolCallsReply([{ id: 'call_2', name: 'write_todos', args: todos('Never') }]),
      textReply('Timed out.'),
    ]);
    const stream = await invoke(service.url, token, {
      message: 'go',
      llm_config: llm('one-timeout'),
      hitl_config: { default_timeout: 1.5 },
    });
    const runId = String((await stream.waitFor(isType('session'))).data.run_id);
    await stream.waitFor(isType('approval_request'));
    stream.close();
    await eventually(async () => (await status(runId)) === 'suspended');
    await eventually(async () => (await status(runId)) === 'done');
    const all = await (await joinRun(service.url, token, runId)).ended;
    expect(all.find(isType('approval_result'))!.data).toMatchObject({ outcome: 'timed_out' });
    expect(all.some(isType('todos'))).toBe(false);
  });
});
