import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { textReply } from '@agent-backend/testing';
import {
  invoke,
  resume,
  startAgentCluster,
  type AgentCluster,
  type SseEvent,
} from './agent-helpers.js';

const chunks = (events: SseEvent[]) =>
  events.filter((e) => e.data.type === 'message_chunk').map((e) => e.data.content as string);

/**
 * Streams that behave: keepalives, abort on disconnect after a grace period, resume from
 * `Last-Event-ID` on another replica, and shutdown. Short timings keep the test quick.
 */
describe('agent streams across replicas', () => {
  let cluster: AgentCluster;
  let alice: string;
  let bob: string;
  const llm = (modelName: string) => ({
    baseUrl: cluster.model.baseUrl,
    apiKey: 'sk-stream-key-1',
    modelName,
  });
  const url = (i: 0 | 1) => cluster.api[i]!.url;

  beforeAll(async () => {
    cluster = await startAgentCluster({
      AGENT_KEEPALIVE_MS: '250',
      AGENT_DISCONNECT_GRACE_MS: '1500',
      AGENT_SESSION_LEASE_MS: '1500',
      AGENT_LLM_IDLE_TIMEOUT_MS: '30000',
      // Takeovers off: a run whose replica dies is lost (run_lost), as without a worker to take
      // it over. With takeovers: tests/agent-durable.test.ts, tests/faults/api-kill.test.ts.
      AGENT_TAKEOVER: 'false',
    });
    alice = await cluster.token('alice');
    bob = await cluster.token('bob');
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it('sends keepalive comments while the model (or a tool) takes its time', async () => {
    cluster.model.script('s-slow', [
      { kind: 'stream', pieces: [{ waitMs: 1_200 }, { text: 'Finally.' }, { finish: 'stop' }] },
    ]);
    const stream = await invoke(url(0), alice, { message: 'slow', llm_config: llm('s-slow') });
    const events = await stream.ended;
    expect(events.map((e) => e.data.type)).toEqual(['session', 'message_chunk', 'done']);
    expect(stream.comments.filter((c) => c === 'keepalive').length).toBeGreaterThanOrEqual(2);
  });

  it('aborts the model request once the client is gone for the grace period', async () => {
    cluster.model.script('s-abandon', [
      {
        kind: 'stream',
        pieces: [{ text: 'Hel' }, { waitMs: 60_000 }, { text: 'lo' }, { finish: 'stop' }],
      },
      textReply('Back again.'),
    ]);
    const stream = await invoke(url(0), alice, { message: 'go', llm_config: llm('s-abandon') });
    await stream.waitFor((e) => e.data.type === 'message_chunk');
    const sessionId = stream.events[0]!.data.session_id as string;
    const [request] = cluster.model.requests('s-abandon');
    stream.close();
    await cluster.model.waitForAbort(request!, 10_000);
    expect(request!.completed).toBe(false);

    // The run ended with run_aborted, which a late resume (on the other replica) can still read.
    const late = await resume(url(1), alice, sessionId);
    expect(late.response.status).toBe(200);
    const replay = await late.ended;
    expect(replay.map((e) => e.data.type)).toEqual(['session', 'message_chunk', 'error']);
    expect(replay.at(-1)!.data).toMatchObject({ type: 'error', code: 'run_aborted' });

    // The session is free again and kept what the user saw.
    const next = await (
      await invoke(url(1), alice, {
        message: 'again',
        session_id: sessionId,
        llm_config: llm('s-abandon'),
      })
    ).ended;
    expect(next.at(-1)!.data.type).toBe('done');
    expect(cluster.model.requests('s-abandon')[1]!.body.messages!.slice(1)).toEqual([
      { role: 'user', content: 'go' },
      { role: 'assistant', content: 'Hel' },
      { role: 'user', content: 'again' },
    ]);
  });

  it('resumes a dropped stream on the other replica from Last-Event-ID, and the run goes on', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    cluster.model.script('s-resume', [
      {
        kind: 'stream',
        pieces: [
          { text: 'one ' },
          { text: 'two ' },
          { waitMs: 300 },
          { text: 'three ' },
          { waitFor: held },
          { text: 'four' },
          { finish: 'stop' },
        ],
      },
    ]);
    const first = await invoke(url(0), alice, { message: 'count', llm_config: llm('s-resume') });
    await first.waitFor((e) => e.data.content === 'two ');
    const seen = [...first.events];
    first.close();
    const sessionId = seen[0]!.data.session_id as string;
    const lastId = seen.at(-1)!.id!;

    const resumed = await resume(url(1), alice, sessionId, lastId);
    expect(resumed.response.status).toBe(200);
    expect(resumed.response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    await resumed.waitFor((e) => e.data.content === 'three ');
    release();
    const rest = await resumed.ended;
    const runId = seen[0]!.data.run_id as string;
    const all = [...seen, ...rest];
    expect(all.map((e) => e.id)).toEqual(all.map((_, i) => `${runId}:${i + 1}`));
    expect(chunks(all).join('')).toBe('one two three four');
    expect(rest.at(-1)!.data).toMatchObject({ type: 'done', session_id: sessionId });
    const [request] = cluster.model.requests('s-resume');
    expect(request!.aborted).toBe(false);
    expect(request!.completed).toBe(true);

    // After the run ended its stream can still be replayed, from any point, on either replica.
    const fromStart = await (await resume(url(0), alice, sessionId)).ended;
    expect(fromStart.map((e) => e.id)).toEqual(all.map((e) => e.id));
    const tail = await (await resume(url(1), alice, sessionId, `${runId}:${all.length - 1}`)).ended;
    expect(tail.map((e) => e.data.type)).toEqual(['done']);
  });

  it('refuses resumes that name a foreign or malformed position', async () => {
    cluster.model.script('s-check', [textReply('checked'), textReply('other')]);
    const mine = await (
      await invoke(url(0), alice, { message: 'x', llm_config: llm('s-check') })
    ).ended;
    const theirs = await (
      await invoke(url(0), bob, { message: 'y', llm_config: llm('s-check') })
    ).ended;
    const sessionId = mine[0]!.data.session_id as string;
    const foreignRun = `${theirs[0]!.data.run_id as string}:1`;
    const wrongRun = await resume(url(1), alice, sessionId, foreignRun);
    expect(wrongRun.response.status).toBe(404);
    const malformed = await resume(url(1), alice, sessionId, 'not-an-event-id');
    expect(malformed.response.status).toBe(400);
    expect(await malformed.response.json()).toMatchObject({
      error: { code: 'invalid_request', details: [{ path: 'Last-Event-ID' }] },
    });
    const unknown = await resume(url(1), alice, 'sess_nobody');
    expect(unknown.response.status).toBe(404);
  });

  it('ends a resumed stream with run_lost when the replica running it dies', async () => {
    const doomed = await cluster.startReplica('api-doomed');
    cluster.model.script('s-lost', [
      { kind: 'stream', pieces: [{ text: 'start' }, { waitMs: 60_000 }, { finish: 'stop' }] },
      textReply('fresh start'),
    ]);
    const stream = await invoke(doomed.url, alice, { message: 'x', llm_config: llm('s-lost') });
    await stream.waitFor((e) => e.data.type === 'message_chunk');
    const sessionId = stream.events[0]!.data.session_id as string;
    const lastId = stream.events.at(-1)!.id!;
    await doomed.stop('SIGKILL');
    const resumed = await resume(url(0), alice, sessionId, lastId);
    const events = await resumed.ended;
    expect(events.map((e) => e.data)).toEqual([
      { type: 'error', code: 'run_lost', message: 'the run stopped unexpectedly' },
    ]);
    // The dead replica's lease expired, so the session is usable again.
    const next = await (
      await invoke(url(1), alice, {
        message: 'retry',
        session_id: sessionId,
        llm_config: llm('s-lost'),
      })
    ).ended;
    expect(next.at(-1)!.data.type).toBe('done');
  });

  it('drains on SIGTERM: a run that finishes in time completes, the rest end with server_shutdown', async () => {
    cluster.model.script('s-shutdown', [
      { kind: 'stream', pieces: [{ text: 'working' }, { waitMs: 60_000 }, { finish: 'stop' }] },
    ]);
    cluster.model.script('s-drained', [
      {
        kind: 'stream',
        pieces: [{ text: 'almost' }, { waitMs: 1_500 }, { text: ' done' }, { finish: 'stop' }],
      },
    ]);
    const stream = await invoke(url(0), alice, { message: 'x', llm_config: llm('s-shutdown') });
    const short = await invoke(url(0), bob, { message: 'y', llm_config: llm('s-drained') });
    await stream.waitFor((e) => e.data.type === 'message_chunk');
    await short.waitFor((e) => e.data.type === 'message_chunk');
    const sessionId = stream.events[0]!.data.session_id as string;
    const [request] = cluster.model.requests('s-shutdown');
    const stoppedAt = Date.now();
    const exit = cluster.api[0]!.stop('SIGTERM');
    // While draining, the replica takes no new connection.
    await new Promise((resolve) => setTimeout(resolve, 300));
    await expect(fetch(`${url(0)}/healthz`)).rejects.toThrow();
    const finished = await short.ended;
    expect(finished.at(-1)!.data.type).toBe('done');
    expect(
      finished
        .filter((e) => e.data.type === 'message_chunk')
        .map((e) => e.data.content)
        .join(''),
    ).toBe('almost done');
    const events = await stream.ended;
    expect(events.at(-1)!.data).toMatchObject({ type: 'error', code: 'server_shutdown' });
    // Ended after the drain (3/4 of SHUTDOWN_TIMEOUT_MS, 10 s by default), not at once.
    expect(Date.now() - stoppedAt).toBeGreaterThan(5_000);
    expect(await exit).toBe(0);
    await cluster.model.waitForAbort(request!);
    const replay = await (await resume(url(1), alice, sessionId)).ended;
    expect(replay.at(-1)!.data).toMatchObject({ type: 'error', code: 'server_shutdown' });
  });
});
