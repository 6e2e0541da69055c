/**
 * An API replica SIGKILLed mid node tool call while the turn's calls run one after the other
 * (`AGENT_MAX_PARALLEL_TOOLS=1`): the turn's second call had not started (its `tool_call` was
 * never sent), so the run log alone does not name it. The worker that takes the run over must
 * still know every call of the turn: the call in flight is reported interrupted (a node tool is
 * not safe to repeat), the call that never started runs now, and the model's next request
 * carries a result for each.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startScriptedModel,
  textReply,
  toolCallsReply,
  type ScriptedModel,
} from '@agent-backend/testing';
import { invoke, resume } from '../agent-helpers.js';
import { startCluster, type Cluster } from '../cluster.js';
import { eventually, seqs } from '../durable-helpers.js';
import { ofType, openSocket, type TestSocket } from '../ws-client.js';

describe('API replica SIGKILLed mid tool call of a serial turn: takeover', () => {
  let cluster: Cluster;
  let model: ScriptedModel;
  let device: TestSocket;
  const deviceCalls: string[] = [];

  beforeAll(async () => {
    model = await startScriptedModel();
    cluster = await startCluster({
      gateways: 1,
      apis: 2,
      workers: 1,
      env: {
        MCP_ALLOW_PRIVATE_NETWORKS: 'true',
        AGENT_LLM_MAX_RETRIES: '0',
        AGENT_MAX_PARALLEL_TOOLS: '1',
        AGENT_SESSION_LEASE_MS: '1500',
        AGENT_TAKEOVER_CHECK_MS: '250',
        AGENT_DISCONNECT_GRACE_MS: '10000',
      },
    });
    const token = await cluster.token('lea');
    device = await openSocket(
      cluster.wsUrl(0, '/ws/desktop', { client_id: 'desktop_lea', node_id: 'pc', token }),
    );
    device.ws.on('message', (data) => {
      const frame = JSON.parse(data.toString()) as {
        id?: string;
        method?: string;
        params?: { name: string };
      };
      if (frame.method !== 'tools/call') return;
      deviceCalls.push(frame.params!.name);
      // `send_report` never answers (its replica dies meanwhile); `archive_report` does.
      if (frame.params!.name === 'archive_report') {
        device.send({
          jsonrpc: '2.0',
          id: frame.id,
          result: { content: [{ type: 'text', text: 'archived' }], isError: false },
        });
      }
    });
    device.send({
      type: 'register',
      node_id: 'pc',
      node_type: 'desktop',
      tools: [
        { name: 'send_report', description: 'Send the report', writes: true },
        { name: 'archive_report', description: 'Archive the report', writes: true },
      ],
    });
    await device.next(ofType('registered'));
  });
  afterAll(async () => {
    device?.ws.terminate();
    await cluster?.stop();
    await model?.close();
  });

  it('runs the call that never started and reports the one in flight interrupted', async () => {
    const token = await cluster.token('lea');
    model.script('kill-serial', [
      toolCallsReply([
        { id: 'call_send', name: 'send_report', args: {} },
        { id: 'call_archive', name: 'archive_report', args: {} },
      ]),
      textReply('Archived; the report may not have gone out.'),
    ]);
    const stream = await invoke(cluster.apis[0]!.url, token, {
      message: 'send the report, then archive it',
      llm_config: { baseUrl: model.baseUrl, apiKey: 'sk-serial', modelName: 'kill-serial' },
    });
    await stream.waitFor((e) => e.data.type === 'tool_call');
    await eventually(async () => deviceCalls.length > 0);
    const sessionId = String(stream.events[0]!.data.session_id);
    const seen = [...stream.events];
    await cluster.apis[0]!.stop('SIGKILL');
    const rest = await (
      await resume(cluster.apis[1]!.url, token, sessionId, seen.at(-1)!.id)
    ).ended;
    const all = [...seen, ...rest];
    expect(all.map((e) => e.data.type)).toEqual([
      'session',
      'tool_call',
      'tool_result',
      'tool_call',
      'tool_result',
      'message_chunk',
      'message_chunk',
      'message_chunk',
      'done',
    ]);
    expect(all.filter((e) => e.data.type === 'tool_result').map((e) => e.data)).toMatchObject([
      { tool_call_id: 'call_send', is_error: true, result: expect.stringContaining('Interrupted') },
      { tool_call_id: 'call_archive', result: 'archived' },
    ]);
    expect(seqs(all)).toEqual(all.map((_, i) => i + 1));
    // Each tool ran once: the one in flight was not repeated, the other was not lost.
    expect(deviceCalls).toEqual(['send_report', 'archive_report']);
    const second = model.requests('kill-serial')[1]!;
    const messages = second.body.messages!;
    expect(messages.at(-3)).toMatchObject({
      role: 'assistant',
      tool_calls: [{ id: 'call_send' }, { id: 'call_archive' }],
    });
    expect(messages.slice(-2)).toMatchObject([
      { role: 'tool', tool_call_id: 'call_send' },
      { role: 'tool', tool_call_id: 'call_archive', content: 'archived' },
    ]);
  });
});
