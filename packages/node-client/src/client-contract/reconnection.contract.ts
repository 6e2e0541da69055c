import { describe, expect, it } from 'vitest';
import { ClientError } from '../errors.js';
import { NodeClient } from '../node-client.js';
import { nextEvent, record, waitFor } from '../testing/wait.js';
import { type ClientContract } from './context.contract.js';

/** Reconnection after dropped connections, refused tokens and restarts. */
export function describeReconnection(t: ClientContract): void {
  const { node, call, user } = t;
  describe('reconnection', () => {
    it('reconnects with growing backoff after the server drops the socket', async () => {
      const userId = user();
      const client = await node(userId, { reconnect: { ...t.fast, stableAfterMs: 60_000 } });
      const downs = record(client, 'disconnected');
      await client.start();
      // The first delay after each drop: 50, then larger, as the connection never became
      // stable. (A harness that restarts the gateway adds refused attempts in between.)
      const firstDelays: Array<number | undefined> = [];
      for (let i = 0; i < 2; i++) {
        const seen = downs.length;
        const again = nextEvent(client, 'registered', 30_000);
        await t.gateway.dropConnections(userId);
        await again;
        expect(downs[seen]).toMatchObject({ willReconnect: true });
        firstDelays.push(downs[seen]?.delayMs);
      }
      expect(firstDelays[0]).toBe(50);
      expect(firstDelays[1]).toBeGreaterThanOrEqual(100);
      const backResult = await call(userId, 'echo', { text: 'back' });
      const listed = backResult.ok ? '' : JSON.stringify(await t.gateway.listNodes(userId));
      expect(backResult, `nodes listed: ${listed}`).toMatchObject({
        ok: true,
        result: { text: 'back' },
      });
    });

    it('resets the backoff after a stable connection', async () => {
      const userId = user();
      const client = await node(userId, { reconnect: { ...t.fast, stableAfterMs: 100 } });
      const downs = record(client, 'disconnected');
      await client.start();
      const firstDelays: Array<number | undefined> = [];
      for (let i = 0; i < 2; i++) {
        await new Promise((resolve) => setTimeout(resolve, 250));
        const seen = downs.length;
        const again = nextEvent(client, 'registered', 30_000);
        await t.gateway.dropConnections(userId);
        await again;
        firstDelays.push(downs[seen]?.delayMs);
      }
      expect(firstDelays).toEqual([50, 50]);
    });

    it('aborts running tool calls when the connection drops', async () => {
      const userId = user();
      let aborted: unknown;
      const client = await node(userId, {
        tools: {
          wait: {
            handler: (_a, { signal }) =>
              new Promise((_, reject) =>
                signal.addEventListener('abort', () => reject((aborted = signal.reason))),
              ),
          },
        },
      });
      await client.start();
      void call(userId, 'wait', {}).catch(() => {});
      await waitFor(() => client.currentTasks === 1, 'the call to start');
      await t.gateway.dropConnections(userId);
      await waitFor(() => aborted, 'the abort');
      expect(aborted).toMatchObject({ code: 'disconnected' });
      expect(client.currentTasks).toBe(0);
    });

    it('does not reconnect after 4403 (token of another user)', async () => {
      const client = new NodeClient({
        url: t.gateway.url,
        kind: 'desktop',
        userId: user(),
        token: await t.gateway.token(user()),
        reconnect: t.fast,
      });
      t.clients.push(client);
      const attempts = record(client, 'connecting');
      const stopped = nextEvent(client, 'stopped');
      await expect(client.start()).rejects.toMatchObject({ code: 'forbidden' });
      expect((await stopped).error).toBeInstanceOf(ClientError);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(attempts).toHaveLength(1);
    });

    it('asks getToken for a fresh token after 4401 and reconnects', async () => {
      const userId = user();
      const reasons: string[] = [];
      const client = await node(userId, {
        token: undefined,
        getToken: async ({ reason }) => {
          reasons.push(reason);
          return reasons.length === 1 ? t.gateway.invalidToken() : t.gateway.token(userId);
        },
      });
      const downs = record(client, 'disconnected');
      await client.start();
      expect(reasons).toEqual(['connect', 'unauthorized']);
      expect(downs).toHaveLength(1);
      expect(downs[0]).toMatchObject({ willReconnect: true, delayMs: 0 });
    });

    it('stops with unauthorized when there is no fresh token', async () => {
      const fixed = await node(user(), { token: t.gateway.invalidToken() });
      await expect(fixed.start()).rejects.toMatchObject({ code: 'unauthorized' });
      let calls = 0;
      const refreshing = await node(user(), {
        token: undefined,
        getToken: () => {
          calls++;
          return t.gateway.invalidToken();
        },
      });
      await expect(refreshing.start()).rejects.toMatchObject({ code: 'unauthorized' });
      expect(calls).toBe(2);
    });

    it('stops the older connection of a node with replaced (4009)', async () => {
      const userId = user();
      const first = await node(userId, { nodeId: 'same' });
      await first.start();
      const stopped = nextEvent(first, 'stopped');
      const second = await node(userId, {
        nodeId: 'same',
        tools: { who: { handler: () => 'second' } },
      });
      await second.start();
      expect((await stopped).error.code).toBe('replaced');
      expect(await call(userId, 'who', {})).toMatchObject({
        ok: true,
        result: { text: 'second' },
      });
    });
  });
}
