import { Redis } from 'ioredis';
import { testRedisUrl } from '@agent-backend/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type Cluster } from './cluster.js';
import { json, post } from './helpers.js';
import { ofType, openSocket, type TestSocket } from './ws-client.js';

/**
 * A node's JSON-RPC response on its way back to the caller (API replica → Redis → gateway →
 * WebSocket → node → gateway → Redis → API replica): the gateway embeds the response frame's
 * text in its bus reply as the node sent it (not parsed into objects and serialised again), and
 * the API replica validates it.
 */
describe('a tool call response through the gateway', () => {
  let cluster: Cluster;
  let node: TestSocket;
  let spy: Redis;
  /** Every bus reply published to an API replica's inbox since the test began. */
  const replies: string[] = [];
  /** The frame text the node answers the next call with, given the call's id. */
  let answer: (id: string) => string | undefined = () => undefined;

  const callTool = async (toolName: string, timeoutMs = 10_000) =>
    json(
      await post(
        `${cluster.apis[0]!.url}/node/tools/call`,
        { node_type: 'desktop', node_id: 'pc', tool_name: toolName, timeout_ms: timeoutMs },
        { authorization: `Bearer ${await cluster.token('rita')}` },
      ),
    );

  beforeAll(async () => {
    cluster = await startCluster({ gateways: 1, apis: 1 });
    spy = new Redis(testRedisUrl());
    await spy.psubscribe(`${cluster.prefix}bus:inbox:*`);
    spy.on('pmessage', (_pattern, _channel, payload: string) => replies.push(payload));
    node = await openSocket(
      cluster.wsUrl(0, '/ws/desktop', {
        client_id: 'desktop_rita',
        node_id: 'pc',
        token: await cluster.token('rita'),
      }),
    );
    node.send({ type: 'register', node_id: 'pc', node_type: 'desktop', available_tools: ['t'] });
    await node.next(ofType('registered'));
    node.ws.on('message', (data) => {
      const frame = JSON.parse(data.toString()) as { method?: string; id?: string };
      if (frame.method !== 'tools/call') return;
      const text = answer(frame.id!);
      if (text !== undefined) node.sendRaw(text);
    });
  });
  afterAll(async () => {
    node?.ws.terminate();
    await spy?.quit();
    await cluster?.stop();
  });

  it('reaches the caller as the node wrote it: escapes, spacing, unicode and a large image', async () => {
    const image = Buffer.alloc(600_000, 7).toString('base64');
    // Spacing, key order and escapes JSON.stringify would not write, non-ASCII text, 800 kB.
    const frame = (id: string) =>
      `{ "id" : ${JSON.stringify(id)}, "result": { "isError": false, "content": [` +
      `{"type":"text","text":"caf\\u00e9 — 日本語 🌍 \\"q\\" \\\\ \\n end"},` +
      `{ "type": "image", "mimeType": "image/png", "data": "${image}" }] }, "jsonrpc": "2.0" }`;
    let sent = '';
    answer = (id) => (sent = frame(id));
    replies.length = 0;
    expect(await callTool('t')).toEqual({
      status: 200,
      body: {
        success: true,
        text: 'café — 日本語 🌍 "q" \\ \n end',
        images: [{ data: image, mimeType: 'image/png' }],
      },
    });
    // The gateway's bus reply holds the frame's text byte for byte.
    expect(replies.filter((reply) => reply.includes(`"body":{"response":${sent}}`))).toHaveLength(
      1,
    );
  });

  it('fails a malformed response at once with tool_failed, and passes a JSON-RPC error on', async () => {
    for (const result of [
      '{"content":"not a list"}',
      '{"content":[{"type":"video","url":"x"}]}',
      '{"content":[],"isError":"yes"}',
      'null',
    ]) {
      answer = (id) => `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${result}}`;
      const started = Date.now();
      expect(await callTool('t', 20_000)).toEqual({
        status: 200,
        body: {
          success: false,
          text: '',
          images: [],
          error: { code: -32603, message: 'the node sent an invalid response to "t"' },
        },
      });
      expect(Date.now() - started).toBeLessThan(10_000);
    }
    answer = (id) =>
      `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"error":{"code":-32000,"message":"disk full ✗"}}`;
    expect(await callTool('t')).toEqual({
      status: 200,
      body: {
        success: false,
        text: '',
        images: [],
        error: { code: -32000, message: 'disk full ✗' },
      },
    });
  });

  it('refuses a response that breaks the text rules or answers no call; the call waits for a good one', async () => {
    let callId = '';
    const result = (text: string) =>
      `{"jsonrpc":"2.0","id":${JSON.stringify(callId)},"result":{"content":[{"type":"text","text":"${text}"}]}}`;
    answer = (id) => {
      callId = id;
      return result('a\\u0000b');
    };
    const call = callTool('t');
    const refused = await node.next(ofType('error'), 10_000);
    expect(refused).toMatchObject({ code: 'invalid_message' });
    expect(String(refused.message)).toContain('NUL');
    node.sendRaw('{"jsonrpc":"2.0","id":"nobody-asked","result":{"content":[]}}');
    expect(await node.next(ofType('error'))).toMatchObject({
      code: 'invalid_message',
      message: 'no pending call with id "nobody-asked"',
    });
    node.sendRaw(result('ab'));
    expect(await call).toEqual({ status: 200, body: { success: true, text: 'ab', images: [] } });
  });
});
