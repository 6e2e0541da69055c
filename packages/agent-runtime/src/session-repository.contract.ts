import { afterAll, describe, expect, it } from 'vitest';
import { migrate, MIGRATIONS, type Database } from '@agent-backend/store';
import { SessionRepository } from './session-repository.js';

/** The migration that keys sessions by owner and id. */
const SCOPED = '0011_sessions_by_user';

/**
 * Session ids are per user, on PGlite and PostgreSQL alike: the same id is a
 * different session for each user, and sessions stored before the upgrade keep working.
 * `open` gives an empty database each call.
 */
export function describeSessionStoreContract(name: string, open: () => Promise<Database>): void {
  describe(`session store: ${name}`, () => {
    const opened: Database[] = [];
    const fresh = async () => {
      const db = await open();
      opened.push(db);
      return db;
    };
    afterAll(async () => {
      await Promise.all(opened.map((db) => db.close()));
    });

    it('keeps sessions stored before the upgrade working, and frees a chat id a user had taken', async () => {
      const db = await fresh();
      const before = MIGRATIONS.findIndex((m) => m.id === SCOPED);
      expect(before).toBeGreaterThan(0);
      await migrate(db, MIGRATIONS.slice(0, before));
      // Rows as the service wrote them before: alice's conversation, and a user who took the
      // id of a chat's session (the chat's runs were refused from then on).
      await db.query(
        `INSERT INTO agent_sessions (session_id, user_id, last_run_id, state)
         VALUES ('legacy-1', 'alice', 'run_old', '{"todos":[{"content":"Step","status":"pending"}]}'),
                ('chat:feishu:oc_taken', 'mallory', NULL, '{}')`,
      );
      await db.query(
        `INSERT INTO agent_messages (session_id, seq, run_id, message) VALUES
           ('legacy-1', 1, 'run_old', '{"role":"user","content":"old question"}'),
           ('legacy-1', 2, 'run_old', '{"role":"assistant","content":"old answer"}'),
           ('chat:feishu:oc_taken', 1, 'run_m', '{"role":"user","content":"mine now"}')`,
      );
      await db.query(
        `INSERT INTO agent_runs (run_id, session_id, user_id, mode, status)
         VALUES ('run_old', 'legacy-1', 'alice', 'agent', 'done')`,
      );
      await db.query(
        `INSERT INTO session_sandboxes (session_id, user_id, provider, sandbox_id, state)
         VALUES ('legacy-1', 'alice', 'bwrap', 'sbx_old', 'paused')`,
      );

      expect(await migrate(db)).toEqual(MIGRATIONS.slice(before).map((m) => m.id));

      const sessions = new SessionRepository(db);
      expect(await sessions.find('legacy-1', 'alice')).toEqual({
        sessionId: 'legacy-1',
        userId: 'alice',
        state: { todos: [{ content: 'Step', status: 'pending' }] },
        lastRunId: 'run_old',
      });
      const alice = { userId: 'alice', sessionId: 'legacy-1' };
      await sessions.append(alice, 'run_new', [{ role: 'user', content: 'new question' }]);
      expect(await sessions.messages(alice)).toEqual([
        { role: 'user', content: 'old question' },
        { role: 'assistant', content: 'old answer' },
        { role: 'user', content: 'new question' },
      ]);
      expect(await sessions.findRun('run_old')).toEqual({
        sessionId: 'legacy-1',
        userId: 'alice',
        status: 'done',
      });
      const { rows: sandboxes } = await db.query<{ sandbox_id: string }>(
        `SELECT sandbox_id FROM session_sandboxes WHERE user_id = 'alice' AND session_id = 'legacy-1'`,
      );
      expect(sandboxes).toEqual([{ sandbox_id: 'sbx_old' }]);

      // The chat (its own owner) gets its session back, empty; mallory keeps only hers.
      const chat = { userId: 'chat:feishu:oc_taken', sessionId: 'chat:feishu:oc_taken' };
      expect(await sessions.claim(chat.sessionId, chat.userId)).toMatchObject({ lastRunId: null });
      await sessions.startRun({ runId: 'run_chat', ...chat, mode: 'ask' });
      await sessions.append(chat, 'run_chat', [{ role: 'user', content: 'hello bot' }]);
      expect(await sessions.messages(chat)).toEqual([{ role: 'user', content: 'hello bot' }]);
      expect(
        await sessions.messages({ userId: 'mallory', sessionId: 'chat:feishu:oc_taken' }),
      ).toEqual([{ role: 'user', content: 'mine now' }]);
    });

    it("keeps each user's session of one id apart in every operation", async () => {
      const db = await fresh();
      await migrate(db);
      const sessions = new SessionRepository(db);
      const alice = { userId: 'alice', sessionId: 'shared' };
      const bob = { userId: 'bob', sessionId: 'shared' };
      // Concurrent first claims of one id by two users: two sessions, neither refused.
      const [a, b] = await Promise.all([
        sessions.claim('shared', 'alice'),
        sessions.claim('shared', 'bob'),
      ]);
      expect([a.userId, b.userId]).toEqual(['alice', 'bob']);
      await sessions.startRun({ runId: 'run_a', ...alice, mode: 'agent' });
      await sessions.append(alice, 'run_a', [{ role: 'user', content: 'alice' }]);
      await sessions.saveState(alice, { todos: [{ content: 'hers', status: 'pending' }] });
      // Bob's run starts while alice's is still running: hers is not taken for a dead one.
      await sessions.startRun({ runId: 'run_b', ...bob, mode: 'ask' });
      await sessions.append(bob, 'run_b', [{ role: 'user', content: 'bob' }]);

      expect(await sessions.messages(alice)).toEqual([{ role: 'user', content: 'alice' }]);
      expect(await sessions.messages(bob)).toEqual([{ role: 'user', content: 'bob' }]);
      expect(await sessions.find('shared', 'alice')).toMatchObject({
        lastRunId: 'run_a',
        state: { todos: [{ content: 'hers', status: 'pending' }] },
      });
      expect(await sessions.find('shared', 'bob')).toMatchObject({
        lastRunId: 'run_b',
        state: { todos: [] },
      });
      expect(await sessions.findRun('run_a')).toMatchObject({ userId: 'alice', status: 'running' });
      expect(await sessions.find('shared', 'carol')).toBeNull();
    });

    it('starts a run of a session not claimed yet, creating the session in the same statement', async () => {
      const db = await fresh();
      await migrate(db);
      const sessions = new SessionRepository(db);
      const dora = { userId: 'dora', sessionId: 'new-one' };
      await sessions.startRun({ runId: 'run_new', ...dora, mode: 'agent' });
      expect(await sessions.find('new-one', 'dora')).toMatchObject({
        lastRunId: 'run_new',
        state: { todos: [] },
      });
      expect(await sessions.findRun('run_new')).toMatchObject({
        userId: 'dora',
        status: 'running',
      });
      // The next run of the session: the first is marked lost, the session points at the new one.
      await sessions.saveState(dora, { todos: [{ content: 'kept', status: 'pending' }] });
      await sessions.startRun({ runId: 'run_next', ...dora, mode: 'agent' });
      expect(await sessions.findRun('run_new')).toMatchObject({ status: 'aborted' });
      expect(await sessions.find('new-one', 'dora')).toMatchObject({
        lastRunId: 'run_next',
        state: { todos: [{ content: 'kept', status: 'pending' }] },
      });
    });

    it("stores a new session's opening messages with its first run, in the same statement", async () => {
      const db = await fresh();
      await migrate(db);
      const sessions = new SessionRepository(db);
      const erin = { userId: 'erin', sessionId: 'sess_opened' };
      await sessions.startRun({
        runId: 'run_open',
        ...erin,
        mode: 'agent',
        opening: [
          { role: 'assistant', content: 'Earlier, elsewhere.' },
          { role: 'user', content: 'What is stored first?' },
        ],
      });
      expect(await sessions.messages(erin)).toEqual([
        { role: 'assistant', content: 'Earlier, elsewhere.' },
        { role: 'user', content: 'What is stored first?' },
      ]);
      expect(await sessions.hasRunMessages('run_open')).toBe(true);
      const { rows } = await db.query<{ title: string | null }>(
        'SELECT title FROM agent_sessions WHERE user_id = $1 AND session_id = $2',
        ['erin', 'sess_opened'],
      );
      expect(rows[0]?.title).toBe('What is stored first?');
      // The next messages follow them.
      await sessions.append(erin, 'run_open', [{ role: 'assistant', content: 'These.' }]);
      expect((await sessions.messages(erin)).at(-1)).toEqual({
        role: 'assistant',
        content: 'These.',
      });
      expect(await sessions.messages(erin)).toHaveLength(3);
    });
  });
}
