import WebSocket from 'ws';

/**
 * A raw WebSocket client for tests: records every frame, lets a test wait for the next frame
 * that matches, and exposes how the server closed the connection.
 */
export interface TestSocket {
  readonly ws: WebSocket;
  readonly received: Array<Record<string, unknown>>;
  /** Resolves with the server's close code and reason. */
  readonly closed: Promise<{ code: number; reason: string }>;
  send(message: unknown): void;
  sendRaw(data: string | Buffer): void;
  /** The first received frame (past or future) matching `match` that no earlier call consumed. */
  next(
    match: (frame: Record<string, unknown>) => boolean,
    timeoutMs?: number,
  ): Promise<Record<string, unknown>>;
  close(): Promise<void>;
}

export function openSocket(url: string, headers: Record<string, string> = {}): Promise<TestSocket> {
  const ws = new WebSocket(url, { headers });
  const received: Array<Record<string, unknown>> = [];
  const consumed = new Set<Record<string, unknown>>();
  const waiters: Array<() => void> = [];
  ws.on('message', (data) => {
    received.push(JSON.parse(data.toString()) as Record<string, unknown>);
    for (const wake of waiters.splice(0)) wake();
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })),
  );
  ws.on('error', () => {});
  const socket: TestSocket = {
    ws,
    received,
    closed,
    send: (message) => ws.send(JSON.stringify(message)),
    sendRaw: (data) => ws.send(data),
    next(match, timeoutMs = 5_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () =>
            reject(
              new Error(
                `no matching frame within ${timeoutMs} ms; got ${JSON.stringify(received)}`,
              ),
            ),
          timeoutMs,
        );
        const check = () => {
          const frame = received.find((f) => !consumed.has(f) && match(f));
          if (frame) {
            consumed.add(frame);
            clearTimeout(timer);
            resolve(frame);
          } else {
            waiters.push(check);
          }
        };
        check();
      });
    },
    async close() {
      if (ws.readyState === WebSocket.CLOSED) return;
      ws.close();
      await closed;
    },
  };
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(socket));
    // A refused connection is accepted and then closed: resolve so the test can read the code.
    ws.once('unexpected-response', (_req, res) =>
      reject(new Error(`upgrade refused with HTTP ${res.statusCode}`)),
    );
    closed.then(
      () => resolve(socket),
      () => {},
    );
  });
}

export const ofType = (type: string) => (frame: Record<string, unknown>) => frame.type === type;

/** Polls `check` until it returns a truthy value (bounded), for state that converges. */
export async function eventually<T>(
  check: () => Promise<T | undefined | false>,
  timeoutMs = 10_000,
  stepMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, stepMs));
  }
}

/**
 * A desktop node `mac` on the gateway at `url` (a `/ws/desktop` URL with its query), registered
 * with one read tool, `read_clock`, and answering every `tools/call` with `09:30`.
 */
export async function connectClockDevice(url: string): Promise<TestSocket> {
  const device = await openSocket(url);
  device.ws.on('message', (data) => {
    const frame = JSON.parse(String(data)) as { id?: string; method?: string };
    if (frame.method !== 'tools/call') return;
    device.send({
      jsonrpc: '2.0',
      id: frame.id,
      result: { content: [{ type: 'text', text: '09:30' }], isError: false },
    });
  });
  device.send({
    type: 'register',
    node_id: 'mac',
    node_type: 'desktop',
    tools: [{ name: 'read_clock', description: 'Read the clock', writes: false }],
  });
  await device.next(ofType('registered'));
  return device;
}
