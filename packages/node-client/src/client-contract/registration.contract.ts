import { describe, expect, it } from 'vitest';
import { nextEvent, record, waitFor } from '../testing/wait.js';
import { type ClientContract } from './context.contract.js';

/** Registration and heartbeats: descriptions, tool descriptors, the node listing. */
export function describeRegistration(t: ClientContract): void {
  const { node, call, user } = t;
  describe('registration and heartbeats', () => {
    it('registers with its description and rich tool descriptors', async () => {
      const userId = user();
      const client = await node(userId, {
        kind: 'extension',
        nodeId: 'laptop-1',
        node: {
          name: 'Test Laptop',
          os: 'TestOS',
          osVersion: '1.2',
          appVersion: '9.9.9',
          capabilities: ['tools'],
          maxConcurrentTasks: 2,
        },
      });
      const registered = nextEvent(client, 'registered');
      await client.start();
      expect((await registered).node_id).toBe('laptop-1');
      const [listed] = await waitFor(async () => {
        const nodes = await t.gateway.listNodes(userId);
        return nodes.length === 1 ? nodes : undefined;
      }, 'the node in the listing');
      expect(listed).toMatchObject({
        node_id: 'laptop-1',
        node_type: 'extension',
        node_name: 'Test Laptop',
        os: 'TestOS',
        os_version: '1.2',
        app_version: '9.9.9',
        capabilities: ['tools'],
        available_tools: ['echo', 'add', 'screenshot', 'fail', 'slow'],
        max_concurrent_tasks: 2,
        status: 'online',
      });
      const [tools] = await t.gateway.listTools(userId);
      expect(tools?.tools.find((t) => t.name === 'add')).toMatchObject({
        description: 'Adds two numbers.',
        inputSchema: { required: ['a', 'b'] },
      });
    });

    it('uses the spec default node id when none is given', async () => {
      const userId = user();
      const desktop = await node(userId);
      const extension = await node(userId, { kind: 'extension' });
      await Promise.all([desktop.start(), extension.start()]);
      const ids = (await t.gateway.listNodes(userId)).map((n) => n.node_id).sort();
      expect(ids).toEqual([`desktop_${userId}`, `ext_${userId}`]);
    });

    it('sends heartbeats that the server acknowledges', async () => {
      const client = await node(user(), { heartbeatMs: 50 });
      const acks = record(client, 'heartbeatAck');
      await client.start();
      await waitFor(() => acks.length >= 3, 'three heartbeat acks');
    });

    it('reports the status it is given and busy at max_concurrent_tasks', async () => {
      const userId = user();
      const client = await node(userId, { node: { maxConcurrentTasks: 1 } });
      await client.start();
      const statusOf = async () => (await t.gateway.listNodes(userId))[0];
      client.setStatus('busy');
      await waitFor(async () => (await statusOf())?.status === 'busy', 'status busy');
      client.setStatus('online');
      await waitFor(async () => (await statusOf())?.status === 'online', 'status online');

      const slow = call(userId, 'slow', { ms: 400 });
      await waitFor(async () => {
        const n = await statusOf();
        return n?.status === 'busy' && n.current_tasks === 1;
      }, 'busy with one task');
      expect(client.status).toBe('busy');
      const refused = await call(userId, 'echo', { text: 'hi' });
      expect(refused).toMatchObject({ ok: false, code: -32000 });
      expect(await slow).toMatchObject({ ok: true, result: { text: 'waited 400 ms' } });
      await waitFor(async () => {
        const n = await statusOf();
        return n?.status === 'online' && n.current_tasks === 0;
      }, 'online with no task');
    });
  });
}
