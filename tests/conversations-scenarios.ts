/**
 * The conversations API (docs/protocol.md), as a client sees it: the same scenarios on
 * two API replicas over PostgreSQL and on the all-in-one (PGlite). Requests alternate between
 * the replicas, so every answer comes from the shared store, not from one process's memory.
 */
import { randomUUID } from 'node:crypto';
import { expect, it } from 'vitest';
import type {
  ApprovalRequestEvent,
  MessageList,
  SessionDetail,
  SessionList,
  SessionSummary,
} from '@agent-backend/protocol';
import { textReply, toolCallsReply, type ScriptedModel } from '@agent-backend/testing';
import { invoke, type SseClient, type SseEvent } from './agent-helpers.js';

/** A running service, seen through two of its base URLs (the same one on the all-in-one). */
export interface Target {
  readonly urls: readonly [string, string];
  readonly model: ScriptedModel;
  /** The `llm_config` of a request naming `modelName` (none: the service's default model). */
  llm(modelName: string): Record<string, unknown> | undefined;
  token(userId: string): Promise<string>;
  /** SQL on the service's database, where the test can reach it (not the all-in-one's PGlite). */
  sql?: <R extends Record<string, unknown>>(text: string, params?: unknown[]) => Promise<R[]>;
  /** Every Redis key of the service (under its prefix), where it has Redis. */
  redisKeys?: () => Promise<string[]>;
}

export async function call<T>(
  url: string,
  token: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: T }> {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: (text ? JSON.parse(text) : undefined) as T };
}

export const isType = (type: string) => (e: SseEvent) => e.data.type === type;
export const path = (sessionId: string, rest = '') =>
  `/api/agent/sessions/${encodeURIComponent(sessionId)}${rest}`;

/** One finished run on `sessionId`: the model answers `answer`. */
export async function turn(
  target: Target,
  url: string,
  token: string,
  sessionId: string,
  message: string,
  answer: string,
): Promise<SseEvent[]> {
  const modelName = `m-${randomUUID()}`;
  target.model.script(modelName, [textReply(answer, 2)]);
  const llm = target.llm(modelName);
  const stream = await invoke(url, token, {
    session_id: sessionId,
    message,
    ...(llm ? { llm_config: llm } : {}),
  });
  const events = await stream.ended;
  expect(events.at(-1)!.data.type).toBe('done');
  return events;
}

/** A run that stays in its model request until `release` is called. */
export async function heldRun(
  target: Target,
  url: string,
  token: string,
  sessionId: string,
): Promise<{ stream: SseClient; runId: string; release: () => void; modelName: string }> {
  const modelName = `m-held-${randomUUID()}`;
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  target.model.script(modelName, [
    { kind: 'stream', pieces: [{ text: 'Thinking' }, { waitFor: held }, { finish: 'stop' }] },
  ]);
  const llm = target.llm(modelName);
  const stream = await invoke(url, token, {
    session_id: sessionId,
    message: 'Take your time',
    ...(llm ? { llm_config: llm } : {}),
  });
  const session = await stream.waitFor(isType('session'));
  await stream.waitFor(isType('message_chunk'));
  return { stream, runId: session.data.run_id as string, release, modelName };
}

export function conversationScenarios(target: () => Target): void {
  it('lists the caller’s sessions by latest activity, titled from their first message, and pages them without repeats or gaps while another client writes', async () => {
    const t = target();
    const [a, b] = t.urls;
    const user = `lister-${randomUUID()}`;
    const token = await t.token(user);
    const ids = [1, 2, 3, 4, 5].map((i) => `topic-${i}`);
    for (const [i, id] of ids.entries()) {
      await turn(
        t,
        i % 2 ? a : b,
        token,
        id,
        `Topic ${i + 1}: tell me about it`,
        `Answer ${i + 1}`,
      );
    }
    const first = await call<SessionList>(b, token, 'GET', '/api/agent/sessions');
    expect(first.status).toBe(200);
    expect(first.body.next_cursor).toBeNull();
    expect(first.body.sessions.map((s) => s.session_id)).toEqual([...ids].reverse());
    expect(first.body.sessions[0]).toEqual({
      session_id: 'topic-5',
      title: 'Topic 5: tell me about it',
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/),
      updated_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/),
      message_count: 2,
      last_message_preview: 'Answer 5',
      active_run_id: null,
    } satisfies SessionSummary);

    // Page by two while another client starts a session and continues one already listed.
    const seen: string[] = [];
    let page = await call<SessionList>(a, token, 'GET', '/api/agent/sessions?limit=2');
    seen.push(...page.body.sessions.map((s) => s.session_id));
    await turn(t, b, token, 'topic-new', 'A new topic', 'New answer');
    await turn(t, a, token, 'topic-5', 'More on topic 5', 'More');
    while (page.body.next_cursor) {
      const cursor = encodeURIComponent(page.body.next_cursor);
      page = await call<SessionList>(
        b,
        token,
        'GET',
        `/api/agent/sessions?limit=2&cursor=${cursor}`,
      );
      expect(page.status).toBe(200);
      seen.push(...page.body.sessions.map((s) => s.session_id));
      if (seen.length === 4) await turn(t, a, token, 'topic-newer', 'Another one', 'Yes');
    }
    expect(seen).toEqual(['topic-5', 'topic-4', 'topic-3', 'topic-2', 'topic-1']);
    // Activity moves a session to the top.
    const now = await call<SessionList>(a, token, 'GET', '/api/agent/sessions?limit=3');
    expect(now.body.sessions.map((s) => s.session_id)).toEqual([
      'topic-newer',
      'topic-5',
      'topic-new',
    ]);
    expect(now.body.sessions[1]).toMatchObject({ message_count: 4, last_message_preview: 'More' });

    const found = await call<SessionList>(b, token, 'GET', '/api/agent/sessions?q=topic%203');
    expect(found.body.sessions.map((s) => s.session_id)).toEqual(['topic-3']);
    const bad = await call<{ error: { code: string; details: unknown } }>(
      a,
      token,
      'GET',
      '/api/agent/sessions?cursor=bm90LWEtY3Vyc29y',
    );
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({
      code: 'invalid_request',
      details: [{ path: 'cursor', message: 'is not a cursor this endpoint returned' }],
    });
  });

  it('reads a conversation with its tool calls, results and approval outcomes, oldest first, in the SSE events’ field names', async () => {
    const t = target();
    const [a, b] = t.urls;
    const token = await t.token(`reader-${randomUUID()}`);
    const modelName = `m-${randomUUID()}`;
    const args = { todos: [{ content: 'Book the flight' }] };
    t.model.script(modelName, [
      toolCallsReply([{ id: 'call_t', name: 'write_todos', args }], { text: 'Let me plan.' }),
      textReply('Planned it.', 2),
    ]);
    const llm = t.llm(modelName);
    const stream = await invoke(a, token, {
      session_id: 'trip',
      message: 'Plan my trip',
      hitl_config: {},
      ...(llm ? { llm_config: llm } : {}),
    });
    const request = (await stream.waitFor(isType('approval_request')))
      .data as unknown as ApprovalRequestEvent;
    const decided = await call(
      b,
      token,
      'POST',
      `/api/agent/approvals/${request.request_id}/decision`,
      {
        decision: 'approve',
      },
    );
    expect(decided.status).toBe(200);
    const events = await stream.ended;
    const runId = events[0]!.data.run_id as string;
    const result = events.find(isType('tool_result'))!.data;
    // The approval as the stream told it, without the fields the tool message has already.
    const {
      type: _type,
      tool_call_id: _id,
      tool_name: _name,
      ...approval
    } = events.find(isType('approval_result'))!.data;
    expect(approval).toMatchObject({ outcome: 'approved', tool_args: args });

    const read = await call<MessageList>(b, token, 'GET', path('trip', '/messages'));
    expect(read.status).toBe(200);
    const at = expect.stringMatching(/Z$/);
    expect(read.body).toEqual({
      messages: [
        { seq: 1, run_id: runId, created_at: at, role: 'user', content: 'Plan my trip' },
        {
          seq: 2,
          run_id: runId,
          created_at: at,
          role: 'assistant',
          content: 'Let me plan.',
          tool_calls: [{ tool_call_id: 'call_t', tool_name: 'write_todos', tool_args: args }],
        },
        {
          seq: 3,
          run_id: runId,
          created_at: at,
          role: 'tool',
          tool_call_id: 'call_t',
          tool_name: 'write_todos',
          result: result.result,
          approval,
        },
        {
          seq: 4,
          run_id: runId,
          created_at: at,
          role: 'assistant',
          content: 'Planned it.',
          tool_calls: [],
        },
      ],
      next_cursor: null,
    });

    // The same conversation two at a time.
    const pages: number[][] = [];
    let cursor: string | null | undefined;
    do {
      const query = `?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const page = await call<MessageList>(a, token, 'GET', path('trip', `/messages${query}`));
      pages.push(page.body.messages.map((m) => m.seq));
      cursor = page.body.next_cursor;
    } while (cursor);
    expect(pages).toEqual([
      [1, 2],
      [3, 4],
    ]);

    const detail = await call<SessionDetail>(a, token, 'GET', path('trip'));
    expect(detail.body).toMatchObject({
      session_id: 'trip',
      title: 'Plan my trip',
      message_count: 4,
      last_message_preview: 'Planned it.',
      todos: [{ content: 'Book the flight', status: 'pending' }],
      pending_plan: null,
      settings: { mode: 'agent' },
    });
  });

  it('renames a session; the new title is listed and searched', async () => {
    const t = target();
    const [a, b] = t.urls;
    const token = await t.token(`renamer-${randomUUID()}`);
    await turn(t, a, token, 'to-rename', 'First question', 'First answer');
    const renamed = await call<SessionSummary>(b, token, 'PATCH', path('to-rename'), {
      title: '  Holiday plans  ',
    });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({ session_id: 'to-rename', title: 'Holiday plans' });
    const listed = await call<SessionList>(a, token, 'GET', '/api/agent/sessions?q=holiday');
    expect(listed.body.sessions.map((s) => [s.session_id, s.title])).toEqual([
      ['to-rename', 'Holiday plans'],
    ]);
    // A later message does not replace a title that is set.
    await turn(t, b, token, 'to-rename', 'Second question', 'Second answer');
    expect((await call<SessionDetail>(a, token, 'GET', path('to-rename'))).body.title).toBe(
      'Holiday plans',
    );
    const empty = await call<{ error: { code: string } }>(a, token, 'PATCH', path('to-rename'), {
      title: ' ',
    });
    expect(empty.status).toBe(400);
    expect(empty.body.error.code).toBe('invalid_request');
  });

  it('refuses another user’s session with 404 on every route, and keeps same-named sessions apart', async () => {
    const t = target();
    const [a, b] = t.urls;
    const alice = await t.token(`alice-${randomUUID()}`);
    const bob = await t.token(`bob-${randomUUID()}`);
    const events = await turn(t, a, alice, 'shared-name', 'Alice secret plan', 'Noted');
    const runId = events[0]!.data.run_id as string;
    for (const [method, route, body] of [
      ['GET', path('shared-name')],
      ['GET', path('shared-name', '/messages')],
      ['PATCH', path('shared-name'), { title: 'Mine now' }],
      ['DELETE', path('shared-name')],
      ['GET', `/api/agent/runs/${runId}`],
      ['POST', `/api/agent/runs/${runId}/cancel`],
    ] as const) {
      const answer = await call<{ error: { code: string } }>(b, bob, method, route, body);
      expect({ method, route, status: answer.status, code: answer.body.error.code }).toEqual({
        method,
        route,
        status: 404,
        code: 'not_found',
      });
    }
    expect((await call<SessionList>(b, bob, 'GET', '/api/agent/sessions')).body.sessions).toEqual(
      [],
    );
    await turn(t, b, bob, 'shared-name', 'Bob own plan', 'Fine');
    const bobs = await call<MessageList>(a, bob, 'GET', path('shared-name', '/messages'));
    expect(bobs.body.messages.map((m) => (m.role === 'user' ? m.content : m.role))).toEqual([
      'Bob own plan',
      'assistant',
    ]);
    const alices = await call<SessionDetail>(b, alice, 'GET', path('shared-name'));
    expect(alices.body).toMatchObject({ title: 'Alice secret plan', message_count: 2 });
    const reserved = await call<{ error: { code: string } }>(a, alice, 'GET', path('task:1'));
    expect(reserved.status).toBe(400);
    expect(reserved.body.error.code).toBe('session_id_reserved');
  });
}
