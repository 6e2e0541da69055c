/**
 * An API replica SIGKILLed in the middle of a run: mid model stream (the scripted model holds
 * its answer open) and mid node tool call (the device holds its answer), on two API replicas, a
 * gateway and a worker over PostgreSQL and Redis. The run is taken over by the worker from its
 * last stored step (its lease expired), and the client's stream, resumed on the other replica
 * with Last-Event-ID, goes on with the new holder's events.
 *
 * Shown: the run completes; each tool runs once or is reported interrupted (the device counts
 * its calls: a node tool is not safe to repeat); no event id repeats or is skipped on the
 * resumed stream. Figure: **recovered in**, the time from the SIGKILL to the first event of the
 * new holder on the client's resumed stream (lease expiry and the takeover check included).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startScriptedModel,
  textReply,
  toolCallsReply,
  type ScriptedModel,
} from '@agent-backend/testing';
import { invoke, resume, type SseEvent } from '../agent-helpers.js';
import { startCluster, type Cluster } from '../cluster.js';
import { seqs } from '../durable-helpers.js';
import { ofType, openSocket, type TestSocket } from '../ws-client.js';

const LEASE_MS = 1_500;

describe('API replica SIGKILLed mid-run: takeover', () => {
  let cluster: Cluster;
  let model: ScriptedModel;
  let device: TestSocket;
  const deviceCalls: string[] = [];
  const figures: string[] = [];

  beforeAll(async () => {
    model = await startScriptedModel();
    cluster = await startCluster({
      gateways: 1,
      apis: 2,
      workers: 1,
      env: {
        MCP_ALLOW_PRIVATE_NETWORKS: 'true',
        AGENT_LLM_MAX_RETRIES: '0',
        AGENT_SESSION_LEASE_MS: String(LEASE_MS),
        AGENT_TAKEOVER_CHECK_MS: '250',
        AGENT_DISCONNECT_GRACE_MS: '10000',
      },
    });
    const token = await cluster.token('kim');
    device = await openSocket(
      cluster.wsUrl(0, '/ws/desktop', { client_id: 'desktop_kim', node_id: 'pc', token }),
    );
    device.ws.on('message', (data) => {
      const frame = JSON.parse(data.toString()) as { method?: string; params?: { name: string } };
      // Counts every call and never answers: the replica asking dies meanwhile.
      if (frame.method === 'tools/call') deviceCalls.push(frame.params!.name);
    });
    device.send({
      type: 'register',
      node_id: 'pc',
      node_type: 'desktop',
      tools: [{ name: 'send_report', description: 'Send the report', writes: true }],
    });
    await device.next(ofType('registered'));
  });
  afterAll(async () => {
    console.log(`api-kill figures:\n${figures.join('\n')}`);
    device?.ws.terminate();
    await cluster?.stop();
    await model?.close();
  });

  /** Kills the replica holding the stream, resumes on the other, returns every event and the recovery. */
  async function killAndResume(seen: SseEvent[], sessionId: string, token: string) {
    await cluster.apis[0]!.stop('SIGKILL');
    const killedAt = Date.now();
    const resumed = await resume(cluster.apis[1]!.url, token, sessionId, seen.at(-1)!.id);
    await resumed.waitFor(() => true, 30_000);
    const recovered = Date.now() - killedAt;
    const rest = await resumed.ended;
    // The killed replica comes back for the next case.
    cluster.apis.shift();
    await cluster.startReplica('api', `api-restarted-${Date.now()}`);
    cluster.apis.reverse();
    return { all: [...seen, ...rest], rest, recovered };
  }

  it('mid model stream: the answer starts again on the worker, announced, not doubled in history', async () => {
    const token = await cluster.token('kim');
    model.script('kill-stream', [
      { kind: 'stream', pieces: [{ text: 'Half an answer' }, { waitFor: new Promise(() => {}) }] },
      textReply('The whole answer.'),
    ]);
    const stream = await invoke(cluster.apis[0]!.url, token, {
      message: 'answer me',
      llm_config: { baseUrl: model.baseUrl, apiKey: 'sk-kill', modelName: 'kill-stream' },
    });
    await stream.waitFor((e) => e.data.type === 'message_chunk');
    const sessionId = String(stream.events[0]!.data.session_id);
    const { all, rest, recovered } = await killAndResume([...stream.events], sessionId, token);
    figures.push(`- mid model stream: recovered in ${recovered} ms (lease ${LEASE_MS} ms)`);
    expect(all.map((e) => e.data.type)).toEqual([
      'session',
      'message_chunk',
      'notice',
      'message_chunk',
      'message_chunk',
      'message_chunk',
      'done',
    ]);
    // The client is told that the chunks before the notice are replaced by those after it.
    expect(all[2]!.data).toMatchObject({ type: 'notice', code: 'answer_restarted' });
    expect(rest.at(-1)!.data.type).toBe('done');
    expect(seqs(all)).toEqual(all.map((_, i) => i + 1));
    // The model answers again from the stored conversation: the cut text is not in it.
    const second = model.requests('kill-stream')[1]!;
    expect(second.body.messages!.at(-1)).toMatchObject({ role: 'user', content: 'answer me' });
    const history = await fetch(
      `${cluster.apis[0]!.url}/api/agent/sessions/${sessionId}/messages`,
      {
        headers: { authorization: `Bearer ${token}` },
      },
    );
    const stored = JSON.stringify(await history.json());
    expect(stored).toContain('The whole answer.');
    expect(stored).not.toContain('Half an answer');
  });

  it('mid node tool call: the call is reported interrupted, never run twice', async () => {
    const token = await cluster.token('kim');
    model.script('kill-tool', [
      toolCallsReply([{ id: 'call_send', name: 'send_report', args: {} }]),
      textReply('The report may not have gone out.'),
    ]);
    const stream = await invoke(cluster.apis[0]!.url, token, {
      message: 'send the report',
      llm_config: { baseUrl: model.baseUrl, apiKey: 'sk-kill', modelName: 'kill-tool' },
    });
    await stream.waitFor((e) => e.data.type === 'tool_call');
    await new Promise<void>((resolve) => {
      const check = () => (deviceCalls.length > 0 ? resolve() : setTimeout(check, 20));
      check();
    });
    const sessionId = String(stream.events[0]!.data.session_id);
    const { all, recovered } = await killAndResume([...stream.events], sessionId, token);
    figures.push(`- mid node tool call: recovered in ${recovered} ms (lease ${LEASE_MS} ms)`);
    expect(all.map((e) => e.data.type)).toEqual([
      'session',
      'tool_call',
      'tool_result',
      'message_chunk',
      'message_chunk',
      'message_chunk',
      'done',
    ]);
    expect(all.find((e) => e.data.type === 'tool_result')!.data).toMatchObject({
      tool_call_id: 'call_send',
      is_error: true,
      result: expect.stringContaining('Interrupted'),
    });
    expect(seqs(all)).toEqual(all.map((_, i) => i + 1));
    expect(deviceCalls).toEqual(['send_report']);
    const second = model.requests('kill-tool')[1]!;
    expect(second.body.messages!.at(-1)).toMatchObject({ role: 'tool', tool_call_id: 'call_send' });
  });
});
