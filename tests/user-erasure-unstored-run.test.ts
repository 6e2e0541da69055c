/**
 * Erasing a user while one of their runs streams before its rows are stored (an invoked run's
 * rows are written while its events already go out, docs/agent.md): the erasure finds the run
 * by its session lease, stops it, waits for its rows and removes them with the rest, so nothing
 * of the user is written after the erasure answered. A trigger on the test's own user makes the
 * run row's insert take 4 s (longer than the 2.5 s an erasure waits after refusing the user's tokens).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { invoke, startAgentCluster, type AgentCluster } from './agent-helpers.js';
import { slowInserts } from './durable-helpers.js';
import { eraseMe } from './user-data-scenario.js';

describe('erasing a user whose run has no rows yet', () => {
  let cluster: AgentCluster;

  beforeAll(async () => {
    cluster = await startAgentCluster({ AGENT_LLM_MAX_RETRIES: '0', AGENT_TAKEOVER: 'false' });
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it('stops the run on the other replica and leaves no row of it', async () => {
    const userId = `erase-unstored-${randomUUID()}`;
    const token = await cluster.token(userId);
    const removeSlow = await slowInserts(cluster, { userId, seconds: 4 });
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    cluster.model.script('erase-unstored', [
      {
        kind: 'stream',
        pieces: [{ text: 'Never ' }, { waitFor: held }, { text: 'finished.' }, { finish: 'stop' }],
      },
    ]);
    const stream = await invoke(cluster.api[0]!.url, token, {
      message: 'remember this',
      llm_config: {
        baseUrl: cluster.model.baseUrl,
        apiKey: 'sk-erase',
        modelName: 'erase-unstored',
      },
    });
    try {
      await stream.waitFor((e) => e.data.type === 'message_chunk');
      const runId = String(stream.events[0]!.data.run_id);
      expect(await cluster.sql('SELECT 1 FROM agent_runs WHERE run_id = $1', [runId])).toHaveLength(
        0,
      );
      const erased = await eraseMe(cluster.api[1]!.url, token, userId);
      expect(erased.status).toBe(200);
      const events = await stream.ended;
      expect(events.at(-1)!.data).toMatchObject({ type: 'error', code: 'run_aborted' });
      // Past the insert's 4 s and the run's own end: nothing of the user was written after.
      await new Promise((resolve) => setTimeout(resolve, 500));
      for (const table of ['agent_runs', 'agent_sessions', 'agent_messages']) {
        expect(
          await cluster.sql(`SELECT 1 FROM ${table} WHERE user_id = $1`, [userId]),
          table,
        ).toHaveLength(0);
      }
    } finally {
      release();
      await removeSlow();
    }
  });
});
