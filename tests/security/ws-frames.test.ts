/**
 * For WebSocket frames: the HTTP text rules (no NUL, no unpaired surrogates,
 * at most 64 levels of nesting) apply to every parsed frame of the gateway, over a real
 * WebSocket. A frame breaking them gets the documented `{ type: 'error', code:
 * 'invalid_message' }` naming the field, reaches no handler (the node is not registered) and
 * leaves the connection open.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type Cluster } from '../cluster.js';
import { ofType, openSocket, type TestSocket } from '../ws-client.js';

describe('WebSocket frames with hostile text', () => {
  let cluster: Cluster;
  const open: TestSocket[] = [];

  beforeAll(async () => {
    cluster = await startCluster({ gateways: 1, apis: 1 });
  });
  afterAll(async () => {
    for (const socket of open) socket.ws.terminate();
    await cluster?.stop();
  });

  const devices = async (userId: string) => {
    const res = await fetch(`${cluster.apis[0]!.url}/node/devices?user_id=${userId}`, {
      headers: { authorization: `Bearer ${await cluster.token(userId)}` },
    });
    return (await res.json()) as { nodes: Array<Record<string, unknown>>; total: number };
  };

  it('answers NUL, unpaired surrogates and deep nesting with invalid_message and keeps the socket', async () => {
    const token = await cluster.token('wsfuzz');
    const node = await openSocket(
      cluster.wsUrl(0, '/ws/desktop', { client_id: 'desktop_wsfuzz', token }),
    );
    open.push(node);
    const register = { type: 'register', node_id: 'n1', node_type: 'desktop' };
    // Escapes in the JSON text: the frame itself is valid UTF-8, its parsed strings are not text.
    const deep = `${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}`;
    for (const [frame, message] of [
      [
        JSON.stringify({ ...register, node_name: 'bad\u0000name' }),
        'node_name: must not contain NUL characters',
      ],
      [
        `{"type":"register","node_id":"n1","node_type":"desktop","os":"\\ud800x"}`,
        'os: must be valid Unicode text (an unpaired surrogate was found)',
      ],
      [
        `{"type":"register","node_id":"n1","node_type":"desktop","ca\\u0000ps":[]}`,
        '(key): must not contain NUL characters',
      ],
      [`{"type":"workflows_list","success":true,"x":${deep}}`, 'nests deeper than 64 levels'],
    ] as const) {
      node.sendRaw(frame);
      const error = await node.next(ofType('error'));
      expect(error).toEqual({
        type: 'error',
        code: 'invalid_message',
        message: expect.any(String),
      });
      expect(error.message).toContain(message);
    }
    // None of them reached the registry (a desktop is listed from its connection, as it was);
    // the connection is open and a clean register works.
    expect((await devices('wsfuzz')).nodes).toEqual([
      expect.objectContaining({ node_id: 'desktop_wsfuzz', node_name: 'Unknown Node', os: '' }),
    ]);
    node.send({ ...register, node_name: 'Clean' });
    expect(await node.next(ofType('registered'))).toEqual({
      type: 'registered',
      node_id: 'n1',
      success: true,
    });
    expect((await devices('wsfuzz')).nodes.map((n) => n.node_name)).toContain('Clean');
  });
});
