import { describe, expect, it } from 'vitest';
import { nextEvent, record, waitFor } from '../testing/wait.js';
import { demoWorkflows } from '../demo-tools.js';
import { DROP_RECOVERY_MS, type ClientContract } from './context.contract.js';

/** The web client: events, workflows, reconnection. */
export function describeWebClient(t: ClientContract): void {
  const { node, web, user } = t;
  describe('web client', () => {
    it('reports when no extension is connected', async () => {
      const client = await web(user());
      await client.start();
      expect(await client.getWorkflows()).toMatchObject({
        success: false,
        error: 'Extension not connected',
      });
    });

    it('lists and runs the extension workflows', async () => {
      const userId = user();
      const extension = await node(userId, { kind: 'extension', workflows: demoWorkflows() });
      const runs = record(extension, 'workflowRun');
      await extension.start();
      const client = await web(userId);
      await client.start();

      const list = await client.getWorkflows();
      expect(list.success).toBe(true);
      expect(list.workflows?.map((w) => w.id)).toEqual(['wf_summarize_page', 'wf_fill_form']);

      const completions = record(client, 'workflowComplete');
      const started = await client.executeWorkflow('wf_summarize_page', {
        url: 'https://example.com',
        delay_ms: 50,
      });
      expect(started).toMatchObject({
        workflow_id: 'wf_summarize_page',
        task_id: expect.any(String),
      });
      await waitFor(
        () => completions.find((c) => c.task_id === started.task_id),
        'workflow_complete',
      );
      expect(completions[0]).toMatchObject({
        success: true,
        output: 'Summary of https://example.com: a demo page with 42 words.',
        result: { words: 42 },
      });
      expect(runs[0]).toMatchObject({
        workflowId: 'wf_summarize_page',
        variables: { url: 'https://example.com' },
      });

      expect(
        await client.runWorkflow('wf_fill_form', { fields: { a: 1, b: 2 }, delay_ms: 0 }),
      ).toMatchObject({ success: true, result: { filled: ['a', 'b'] } });
      expect(await client.runWorkflow('wf_fill_form', { fail: true })).toMatchObject({
        success: false,
        error: 'demo failure requested',
      });
    });

    it('answers ping with pong and reconnects after a drop', async () => {
      const userId = user();
      const client = await web(userId);
      await client.start();
      await expect(client.ping()).resolves.toBe(true);
      const again = nextEvent(client, 'connected', DROP_RECOVERY_MS);
      await t.gateway.dropConnections(userId);
      await again;
      await expect(client.ping()).resolves.toBe(true);
    });

    it('stops after 4403 and rejects requests when not connected', async () => {
      const client = await web(user(), { token: await t.gateway.token(user()) });
      await expect(client.start()).rejects.toMatchObject({ code: 'forbidden' });
      await expect(client.getWorkflows()).rejects.toMatchObject({ code: 'not_connected' });
      await expect(client.executeWorkflow('')).rejects.toMatchObject({
        code: 'invalid_argument',
      });
    });
  });
}
