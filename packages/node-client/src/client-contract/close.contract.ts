import { describe, expect, it } from 'vitest';
import { expectHandlesBackTo, settledHandles, waitFor } from '../testing/wait.js';
import { type ClientContract } from './context.contract.js';

/** close(): every handle the clients opened is released. */
export function describeClose(t: ClientContract): void {
  const { node, web, user } = t;
  describe('close()', () => {
    it('aborts running tasks, rejects pending requests and leaves no timer or socket', async () => {
      const before = await settledHandles();
      const userId = user();
      let aborted: unknown;
      const client = await node(userId, {
        kind: 'extension',
        heartbeatMs: 30,
        workflows: { list: () => new Promise(() => {}), execute: () => ({}) },
        tools: {
          wait: {
            handler: (_a, { signal }) =>
              new Promise((_, reject) =>
                signal.addEventListener('abort', () => reject((aborted = signal.reason))),
              ),
          },
        },
      });
      const webClient = await web(userId, { pingIntervalMs: 30 });
      await Promise.all([client.start(), webClient.start()]);
      void t.gateway
        .callTool({ userId, nodeType: 'extension', name: 'wait', arguments: {} })
        .catch(() => {});
      await waitFor(() => client.currentTasks === 1, 'the call to start');
      const listFails = expect(webClient.getWorkflows()).rejects.toMatchObject({
        code: 'closed',
      });
      await Promise.all([client.close(), webClient.close()]);
      expect(aborted).toMatchObject({ code: 'closed' });
      await listFails;
      await client.close();
      await expectHandlesBackTo(before);
    });
  });
}
