import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  JsonRpcResponse,
  NodeClientMessage,
  parseToolCallResult,
  type RegisterMessage,
  WebClientMessage,
  type NodeInfo,
  type NodeType,
} from '@agent-backend/protocol';
import { type WebSocket, WebSocketServer } from 'ws';
import type {
  GatewayHarness,
  HarnessToolCall,
  HarnessToolOutcome,
  HarnessTools,
} from '../client.contract.js';

/*
 * A test double of the service's gateway, for the client tests only while the real gateway is
 * being built: the spec 4.3 / 6.2 flow (paths, 4001, tokens with 4401 / 4403, 4009 for a
 * replaced node, register, heartbeat, ping, JSON-RPC tool calls, workflow relay) and nothing
 * else. Tokens are opaque random strings here; the real gateway verifies JWTs.
 */

interface NodeConn {
  readonly ws: WebSocket;
  readonly userId: string;
  readonly nodeId: string;
  readonly nodeType: NodeType;
  info?: RegisterMessage;
  tools?: HarnessTools['tools'];
  status: NodeInfo['status'];
  currentTasks: number;
}

export interface FakeGateway extends GatewayHarness {
  /** Every connection attempt that reached the server, by path. */
  readonly upgrades: string[];
  /** Sends a raw text frame to the node's socket. */
  sendRaw(userId: string, nodeId: string, text: string): void;
  /** Waits for the next frame the node sends that is not a heartbeat or ping. */
  nextFrame(userId: string, nodeId: string): Promise<unknown>;
  /** Closes every connection of the user with `code`. */
  closeUser(userId: string, code: number, reason?: string): void;
}

export async function startFakeGateway(): Promise<FakeGateway> {
  const tokens = new Map<string, string>();
  const nodes = new Map<string, NodeConn>();
  const webs = new Set<{ ws: WebSocket; userId: string }>();
  const pending = new Map<
    string,
    { conn: NodeConn; settle(response: JsonRpcResponse | Error): void }
  >();
  const frameWaiters = new Map<string, ((frame: unknown) => void)[]>();
  const upgrades: string[] = [];
  const server = createServer();
  const wss = new WebSocketServer({ noServer: true });
  const key = (userId: string, nodeId: string) => `${userId}/${nodeId}`;
  const send = (ws: WebSocket, message: unknown) => ws.send(JSON.stringify(message));

  server.on('upgrade', (request: IncomingMessage, socket, head) => {
    const url = new URL(request.url ?? '/', 'http://fake');
    upgrades.push(url.pathname);
    if (!['/ws/extension', '/ws/desktop', '/ws/web'].includes(url.pathname)) {
      socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    wss.handleUpgrade(request, socket, head, (ws) => accept(ws, url, request));
  });

  function accept(ws: WebSocket, url: URL, request: IncomingMessage): void {
    const web = url.pathname === '/ws/web';
    const nodeType: NodeType = url.pathname === '/ws/extension' ? 'extension' : 'desktop';
    const prefix = nodeType === 'extension' ? 'user_' : 'desktop_';
    const clientId = url.searchParams.get('client_id');
    const userId = web
      ? url.searchParams.get('user_id')
      : clientId?.startsWith(prefix)
        ? clientId.slice(prefix.length)
        : null;
    if (!userId) return ws.close(4001, 'missing client_id');
    const header = request.headers.authorization;
    const token = header?.startsWith('Bearer ') ? header.slice(7) : url.searchParams.get('token');
    const tokenUser = token ? tokens.get(token) : undefined;
    if (!tokenUser) return ws.close(4401, 'invalid token');
    if (tokenUser !== userId) return ws.close(4403, 'token user mismatch');
    if (web) return acceptWeb(ws, userId);
    const nodeId =
      url.searchParams.get('node_id') ??
      (nodeType === 'extension' ? `ext_${userId}` : `desktop_${userId}`);
    nodes.get(key(userId, nodeId))?.ws.close(4009, 'replaced');
    const conn: NodeConn = { ws, userId, nodeId, nodeType, status: 'online', currentTasks: 0 };
    nodes.set(key(userId, nodeId), conn);
    ws.on('close', () => {
      if (nodes.get(key(userId, nodeId)) === conn) nodes.delete(key(userId, nodeId));
      for (const [id, call] of pending)
        if (call.conn === conn) {
          pending.delete(id);
          call.settle(new Error('node disconnected'));
        }
    });
    ws.on('message', (data) => onNodeFrame(conn, data.toString()));
  }

  function onNodeFrame(conn: NodeConn, text: string): void {
    let frame: unknown;
    try {
      frame = JSON.parse(text);
    } catch {
      return send(conn.ws, { type: 'error', code: 'invalid_json', message: 'frame is not JSON' });
    }
    if (typeof frame === 'object' && frame !== null && 'jsonrpc' in frame) {
      const response = JsonRpcResponse.safeParse(frame);
      if (!response.success)
        return send(conn.ws, { type: 'error', code: 'invalid_message', message: 'bad JSON-RPC' });
      const id = response.data.id;
      const call = id === null ? undefined : pending.get(id);
      if (id !== null) pending.delete(id);
      call?.settle(response.data);
      deliverFrame(conn, frame);
      return;
    }
    const parsed = NodeClientMessage.safeParse(frame);
    if (!parsed.success)
      return send(conn.ws, { type: 'error', code: 'invalid_message', message: 'bad frame' });
    const message = parsed.data;
    if (message.type === 'register') {
      conn.info = message;
      const raw = (frame as { tools?: unknown }).tools;
      if (Array.isArray(raw)) conn.tools = raw as HarnessTools['tools'];
      return send(conn.ws, { type: 'registered', node_id: conn.nodeId, success: true });
    }
    if (message.type === 'heartbeat') {
      conn.status = message.status;
      conn.currentTasks = message.current_tasks;
      return send(conn.ws, { type: 'heartbeat_ack' });
    }
    if (message.type === 'ping') return send(conn.ws, { type: 'pong' });
    if (message.type === 'workflows_list')
      for (const w of webs) if (w.userId === conn.userId) send(w.ws, message);
    if (message.type === 'task_complete')
      for (const w of webs)
        if (w.userId === conn.userId)
          send(w.ws, {
            type: 'workflow_complete',
            task_id: message.task_id,
            success: message.success ?? true,
            result: message.result,
            output: message.output,
            ...(message.error ? { error: message.error } : {}),
          });
    deliverFrame(conn, frame);
  }

  function deliverFrame(conn: NodeConn, frame: unknown): void {
    const waiters = frameWaiters.get(key(conn.userId, conn.nodeId));
    waiters?.shift()?.(frame);
  }

  function acceptWeb(ws: WebSocket, userId: string): void {
    const entry = { ws, userId };
    webs.add(entry);
    ws.on('close', () => webs.delete(entry));
    ws.on('message', (data) => {
      let frame: unknown;
      try {
        frame = JSON.parse(data.toString());
      } catch {
        return send(ws, { type: 'error', code: 'invalid_json', message: 'frame is not JSON' });
      }
      const parsed = WebClientMessage.safeParse(frame);
      if (!parsed.success)
        return send(ws, { type: 'error', code: 'invalid_message', message: 'bad frame' });
      const message = parsed.data;
      const extension = [...nodes.values()].find(
        (n) => n.userId === userId && n.nodeType === 'extension' && n.info,
      );
      if (message.type === 'ping') send(ws, { type: 'pong' });
      else if (message.type === 'get_workflows') {
        if (extension) send(extension.ws, { type: 'get_workflows' });
        else send(ws, { type: 'workflows_list', success: false, error: 'Extension not connected' });
      } else if (message.type === 'execute_workflow') {
        if (!extension)
          return send(ws, {
            type: 'workflow_complete',
            task_id: randomUUID(),
            success: false,
            result: {},
            output: '',
            error: 'Extension not connected',
          });
        const taskId = randomUUID();
        send(extension.ws, { ...message, task_id: taskId });
        send(ws, { type: 'workflow_started', workflow_id: message.workflow_id, task_id: taskId });
      }
    });
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const userConns = (userId: string) => [
    ...[...nodes.values()].filter((n) => n.userId === userId).map((n) => n.ws),
    ...[...webs].filter((w) => w.userId === userId).map((w) => w.ws),
  ];

  return {
    url: `ws://127.0.0.1:${port}`,
    upgrades,
    async token(userId) {
      const token = randomBytes(16).toString('hex');
      tokens.set(token, userId);
      return token;
    },
    invalidToken: () => 'not-a-valid-token',
    async listNodes(userId) {
      return [...nodes.values()]
        .filter((n) => n.userId === userId && n.info)
        .map((n) => ({
          node_id: n.nodeId,
          node_type: n.nodeType,
          node_name: n.info!.node_name,
          status: n.status,
          os: n.info!.os ?? '',
          os_version: n.info!.os_version ?? '',
          app_version: n.info!.app_version ?? '',
          capabilities: n.info!.capabilities,
          available_tools: n.info!.available_tools,
          current_tasks: n.currentTasks,
          max_concurrent_tasks: n.info!.max_concurrent_tasks,
          is_connected: true,
        }));
    },
    async listTools(userId) {
      return [...nodes.values()]
        .filter((n) => n.userId === userId && n.info)
        .map((n) => ({
          nodeId: n.nodeId,
          nodeType: n.nodeType,
          tools: n.tools ?? n.info!.available_tools.map((name) => ({ name })),
        }));
    },
    async callTool(call: HarnessToolCall): Promise<HarnessToolOutcome> {
      const conn = [...nodes.values()].find(
        (n) =>
          n.userId === call.userId &&
          n.nodeType === call.nodeType &&
          (call.nodeId === undefined || n.nodeId === call.nodeId),
      );
      if (!conn) throw new Error(`no ${call.nodeType} node of ${call.userId}`);
      const id = randomUUID();
      const response = new Promise<JsonRpcResponse>((resolve, reject) => {
        const timer = setTimeout(() => {
          pending.delete(id);
          reject(new Error(`tool call ${id} timed out`));
        }, 10_000);
        pending.set(id, {
          conn,
          settle: (r) => {
            clearTimeout(timer);
            if (r instanceof Error) reject(r);
            else resolve(r);
          },
        });
      });
      send(conn.ws, {
        jsonrpc: '2.0',
        id,
        method: 'tools/call',
        params: {
          name: call.name,
          arguments: call.arguments,
          ...(call.sessionId ? { session_id: call.sessionId } : {}),
        },
      });
      const r = await response;
      return 'result' in r
        ? { ok: true, result: parseToolCallResult(r.result) }
        : { ok: false, code: r.error.code, message: r.error.message };
    },
    async dropConnections(userId) {
      for (const ws of userConns(userId)) ws.terminate();
    },
    closeUser(userId, code, reason) {
      for (const ws of userConns(userId)) ws.close(code, reason);
    },
    sendRaw(userId, nodeId, text) {
      nodes.get(key(userId, nodeId))?.ws.send(text);
    },
    nextFrame(userId, nodeId) {
      return new Promise((resolve) => {
        const k = key(userId, nodeId);
        frameWaiters.set(k, [...(frameWaiters.get(k) ?? []), resolve]);
      });
    },
    async close() {
      for (const client of wss.clients) client.terminate();
      wss.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
