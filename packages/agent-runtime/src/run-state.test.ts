import { describe, expect, it } from 'vitest';
import { createLogger } from '@agent-backend/logger';
import type { AgentEvent } from '@agent-backend/protocol';
import type { Database } from '@agent-backend/store';
import { textReply, toolCallsReply } from '@agent-backend/testing';
import { AgentRunner } from './agent-runner.js';
import { runRequest } from './run-request.js';
import { RunRepository } from './run-repository.js';
import { useRunnerFixture } from './testing/runner-fixture.js';

const fixture = useRunnerFixture('run_state');
/** Every statement the runner sends, in order (the real database answers them). */
const statements: string[] = [];

/** The real database, with each statement written down before it is sent. */
const recorded = (): Database => {
  const db = fixture.db;
  return {
    ...db,
    dialect: db.dialect,
    query: (sql: string, params?: unknown[]) => {
      statements.push(sql);
      return db.query(sql, params);
    },
    transaction: (fn) => db.transaction(fn),
    ping: () => db.ping(),
    close: () => db.close(),
  } as Database;
};

const isWrite = (sql: string) => /^\s*(INSERT|UPDATE|WITH|DELETE)/i.test(sql);

describe("a run's resumable state", () => {
  it('is stored with each step in one write: steps, events sent, tokens, settings', async () => {
    fixture.model.script('state-steps', [
      toolCallsReply([{ id: 'c1', name: 'write_todos', args: { todos: [{ content: 'one' }] } }]),
      toolCallsReply([{ id: 'c2', name: 'write_todos', args: { todos: [{ content: 'two' }] } }]),
      textReply('Done.'),
    ]);
    const runner = new AgentRunner({
      db: recorded(),
      ephemeral: fixture.ephemeral,
      logger: createLogger({ level: 'silent' }),
    });
    const prepared = await runner.prepare(
      runRequest({
        userId: 'state-user',
        message: 'plan it',
        model: fixture.modelSettings('state-steps', 'sk-state', 0),
      }),
    );
    const runs = new RunRepository(fixture.db);
    const stored = await runs.load(prepared.runId);
    expect(stored).toMatchObject({
      status: 'running',
      userId: 'state-user',
      state: { step: 0, lastSeq: 0 },
      request: { message: 'plan it', model: { name: 'state-steps' } },
    });
    statements.length = 0;
    const events: AgentEvent[] = [];
    const result = await prepared.execute((e) => events.push(e), new AbortController().signal);
    expect(result).toEqual({ status: 'done' });
    // One write for the user's message, one per model request, one for the end of the run.
    const writes = statements.filter(isWrite);
    expect(writes).toHaveLength(1 + 3 + 1);
    const after = await runs.load(prepared.runId);
    // The run ended: its settings (the model key) are gone, its place is kept.
    expect(after?.status).toBe('done');
    expect(after?.request).toBeNull();
    expect(after?.state).toMatchObject({ step: 3, lastSeq: events.length - 1 });
  });
});
