import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { WebSocket, WebSocketServer } from 'ws';

/*
 * The two ends of the tool-call benchmark (bench/node-client-roundtrip.ts) that need `ws`, kept
 * here because `ws` resolves from this package, not from the repository root.
 */

/** The server end: answers `register`, sends `tools/call` requests and pairs answers by id. */
export interface BenchServer {
  readonly url: string;
  /** Resolves when a node has registered; the next calls go to it. */
  nextNode(): Promise<void>;
  call(text: string): Promise<unknown>;
  close(): Promise<void>;
}

export async function startBenchServer(): Promise<BenchServer> {
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  await new Promise((resolve) => wss.once('listening', resolve));
  const pending = new Map<string, (response: unknown) => void>();
  let node: WebSocket | undefined;
  let onNode: (() => void) | undefined;
  wss.on('connection', (ws) => {
    ws.on('message', (data) => {
      const frame = JSON.parse(data.toString()) as { type?: string; id?: string };
      if (frame.type === 'register') {
        node = ws;
        ws.send(JSON.stringify({ type: 'registered', node_id: 'bench', success: true }));
        onNode?.();
      } else if (frame.type === 'heartbeat') ws.send('{"type":"heartbeat_ack"}');
      else if (frame.id !== undefined) {
        pending.get(frame.id)?.(frame);
        pending.delete(frame.id);
      }
    });
  });
  const { port } = wss.address() as AddressInfo;
  return {
    url: `ws://127.0.0.1:${port}`,
    nextNode: () => new Promise<void>((resolve) => (onNode = resolve)),
    call(text) {
      const id = randomUUID();
      return new Promise((resolve) => {
        pending.set(id, resolve);
        node!.send(
          JSON.stringify({
            jsonrpc: '2.0',
            id,
            method: 'tools/call',
            params: { name: 'echo', arguments: { text } },
          }),
        );
      });
    },
    async close() {
      for (const ws of wss.clients) ws.terminate();
      await new Promise((resolve) => wss.close(resolve));
    },
  };
}

/**
 * The baseline node: a bare `ws` client that registers and answers `echo` with no validation,
 * no task tracking and no events — the least a node can do.
 */
export async function startRawNode(url: string): Promise<{ close(): void }> {
  const ws = new WebSocket(`${url}/ws/desktop?client_id=desktop_bench&node_id=raw`);
  ws.on('open', () =>
    ws.send(JSON.stringify({ type: 'register', node_id: 'raw', node_type: 'desktop' })),
  );
  ws.on('message', (data) => {
    const frame = JSON.parse(data.toString()) as {
      id?: string;
      params?: { arguments?: { text?: string } };
    };
    if (frame.id === undefined) return;
    const text = frame.params?.arguments?.text ?? '';
    ws.send(
      JSON.stringify({
        jsonrpc: '2.0',
        id: frame.id,
        result: { content: [{ type: 'text', text }], isError: false },
      }),
    );
  });
  return { close: () => ws.terminate() };
}
