/**
 * Slow consumers: an SSE client and a `/ws/web` client that stop reading (their sockets paused)
 * while the server has megabytes to send them. Each connection's unsent bytes stay bounded: the
 * gateway closes the WebSocket with 4008 past `GATEWAY_MAX_BUFFERED_BYTES`, the api ends an SSE
 * stream that took nothing for `AGENT_SSE_STALL_TIMEOUT_MS` (the client then resumes with
 * Last-Event-ID and loses nothing). Other clients meanwhile get their answers within their
 * deadlines: tool calls, SSE runs, and a second web client of the same user that reads.
 */
import { request } from 'node:http';
import type { Socket } from 'node:net';
import { readFileSync } from 'node:fs';
import WebSocket from 'ws';
import { afterAll, describe, expect, it } from 'vitest';
import { resume } from '../agent-helpers.js';
import { openSocket, type TestSocket } from '../ws-client.js';
import { useFaultCluster } from './fault-cluster.js';
import { faultProfile } from './profile.js';
import { expectNoHarm } from './scenario.js';
import { sleep, Tally, until } from './tally.js';
import { sseRun, toolCallTraffic } from './traffic.js';

const STALL_MS = 3_000;
const CHUNK = 'x'.repeat(32 * 1024);
const CHUNKS = 320; // 10 MiB of answer text: more than the loopback socket buffers hold

/** Resident memory of a process in KiB (Linux), for the figures. */
function rssKiB(pid: number | undefined): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
}

describe('slow consumers', () => {
  const profile = faultProfile();
  const sockets: TestSocket[] = [];

  const faults = useFaultCluster('slow-consumers', () =>
    Promise.resolve({
      env: {
        AGENT_SSE_STALL_TIMEOUT_MS: String(STALL_MS),
        // The production ping interval: a paused client answers no ping, and the suite's 2 s
        // would end it as silent (1006) before its buffer limit is what closes it.
        GATEWAY_PING_INTERVAL_MS: '30000',
      },
    }),
  );
  // Registered after the cluster's hooks, so it runs before the cluster stops.
  afterAll(() => {
    for (const s of sockets) s.ws.terminate();
  });

  it('an SSE client and a /ws/web client that stop reading', async () => {
    const tally = new Tally(
      'slow-consumers',
      'an SSE client and a /ws/web client stop reading while 10 MiB are sent to each',
    );
    const { cluster, model } = faults.fc;
    const api = cluster.apis[0]!;
    const stop = new AbortController();
    const traffic = toolCallTraffic(
      tally,
      cluster,
      faults.fc.fleet,
      profile.toolCallsPerSecond,
      stop.signal,
    );
    const rssBefore = rssKiB(api.child.pid);

    // --- SSE: a run streaming 10 MiB to a client that reads its first event, then nothing.
    model.script('slow-sse', [
      {
        kind: 'stream',
        pieces: [...Array.from({ length: CHUNKS }, () => ({ text: CHUNK })), { finish: 'stop' }],
      },
    ]);
    const token = await cluster.token('slow-reader');
    let received = '';
    let paused: { resume(): void } | undefined;
    const slowEnded = new Promise<void>((resolve, reject) => {
      const req = request(
        `${api.url}/api/agent/invoke`,
        {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        },
        (res) => {
          res.setEncoding('utf8');
          res.on('data', (text: string) => {
            received += text;
            if (!paused && received.includes('"type":"session"')) {
              res.pause();
              paused = res;
            }
          });
          res.on('end', resolve);
          res.on('error', () => resolve());
          res.on('close', resolve);
        },
      );
      req.on('error', reject);
      req.end(
        JSON.stringify({
          message: 'stream a lot',
          sandbox_mode: 'none',
          mode: 'ask',
          llm_config: { baseUrl: model.baseUrl, apiKey: 'sk-slow', modelName: 'slow-sse' },
        }),
      );
    });
    // Other clients' runs while the slow one is stuck.
    const others = Array.from({ length: profile.sseRuns }, (_, i) =>
      sseRun(tally, cluster, model, i, { durationMs: 2_000, deadlineMs: 60_000 }),
    );
    const slowSse = tally.counts('slow SSE client');
    slowSse.made++;
    const cut = await until(
      () => api.stdout.some((l) => l.includes('closing slow SSE consumer')),
      STALL_MS + 30_000,
      'the api ends the stuck stream',
    ).then(
      () => true,
      () => false,
    );
    const rssStuck = rssKiB(api.child.pid);
    paused?.resume();
    await Promise.race([slowEnded, sleep(10_000)]);
    // What the client got (whole events only: the cut may split one), then the rest by resuming
    // from its last event id.
    const blocks = received.split('\n\n').slice(0, -1);
    const whole = blocks.flatMap((block) => {
      const id = /^id: (\S+)$/m.exec(block)?.[1];
      const data = /^data: (.*)$/m.exec(block)?.[1];
      return id && data ? [{ id, data: JSON.parse(data) as Record<string, unknown> }] : [];
    });
    const ids = whole.map((e) => e.id);
    const lastId = ids.at(-1);
    const sessionId = /"session_id":"([^"]+)"/.exec(received)?.[1];
    let complete = false;
    if (cut && lastId && sessionId) {
      const rest = await resume(api.url, token, sessionId, lastId);
      const events = await rest.ended;
      const seqs = [...ids, ...events.map((e) => e.id!)].map((id) => Number(id.split(':')[1]));
      const text = [...whole, ...events]
        .filter((e) => e.data.type === 'message_chunk')
        .map((e) => String(e.data.content))
        .join('');
      complete =
        events.at(-1)?.data.type === 'done' &&
        seqs.every((seq, i) => seq === i + 1) &&
        text.length === CHUNK.length * CHUNKS;
      tally.note(
        `slow SSE client: ${ids.length} events before the cut, ${events.length} after resuming; api RSS ${Math.round(rssBefore / 1024)} MiB before, ${Math.round(rssStuck / 1024)} MiB while stuck`,
      );
      const line = api.stdout.find((l) => l.includes('closing slow SSE consumer'));
      if (line) tally.note(`api log: ${line.slice(0, 300)}`);
    }
    if (cut && complete) tally.add('slow SSE client', { kind: 'succeeded' });
    else if (!cut) slowSse.hung++;
    else slowSse.lost++;

    // --- WebSocket: two web clients of one user, one stops reading; its extension sends 10 MiB.
    const user = 'slow-web';
    const userToken = await cluster.token(user);
    const reader = await openSocket(
      cluster.wsUrl(1, '/ws/web', { user_id: user, token: userToken }),
    );
    const stuck = await openSocket(
      cluster.wsUrl(1, '/ws/web', { user_id: user, token: userToken }),
    );
    const extension = await openSocket(
      cluster.wsUrl(0, '/ws/extension', { client_id: `user_${user}`, token: userToken }),
    );
    sockets.push(reader, stuck, extension);
    (stuck.ws as unknown as { _socket: Socket })._socket.pause();
    const frames = 40;
    const blob = 'w'.repeat(256 * 1024);
    for (let i = 0; i < frames; i++) {
      extension.send({
        type: 'workflows_list',
        success: true,
        workflows: [{ id: `wf-${i}`, blob }],
      });
      await sleep(20);
    }
    const readerFrames = tally.counts('reading web client frames');
    readerFrames.made += frames;
    await until(
      () => reader.received.filter((f) => f.type === 'workflows_list').length >= frames,
      30_000,
      'the reading web client gets every frame',
    ).catch(() => undefined);
    const got = reader.received.filter((f) => f.type === 'workflows_list').length;
    for (let i = 0; i < got; i++) tally.add('reading web client frames', { kind: 'succeeded' });
    readerFrames.lost += Math.max(0, frames - got);
    readerFrames.doubled += Math.max(0, got - frames);
    (stuck.ws as unknown as { _socket: Socket })._socket.resume();
    const slowWs = tally.counts('slow web client');
    slowWs.made++;
    const closed = await Promise.race([stuck.closed, sleep(15_000).then(() => undefined)]);
    // The gateway sends the 4008 close frame behind the unsent bytes and cuts the connection a
    // second later if the client still does not read: then the client sees 1006 (no close
    // frame). Either way the gateway closed it as a slow consumer, which its log names.
    const gatewayLine = cluster.gateways[1]!.stdout.find((l) =>
      l.includes('closing slow consumer'),
    );
    if (closed?.code === 4008 || (closed?.code === 1006 && gatewayLine))
      tally.add('slow web client', { kind: 'failed', code: 'closed as a slow consumer (4008)' });
    else if (closed)
      tally.add('slow web client', { kind: 'unclear', detail: `closed ${closed.code}` });
    else slowWs.hung++;
    tally.note(
      `slow web client: ${stuck.received.length} frames received, then closed with ${closed?.code}; gateway log: ${gatewayLine?.slice(0, 300)}`,
    );
    expect(stuck.ws.readyState).toBe(WebSocket.CLOSED);

    stop.abort();
    await traffic;
    await Promise.all(others);
    expectNoHarm(tally);
    expect(tally.counts('slow SSE client').succeeded).toBe(1);
  });
});
