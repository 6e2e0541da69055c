import { release, type } from 'node:os';
import type {
  HeartbeatMessageInput,
  NodeStatus,
  NodeType,
  RegisteredMessage,
  RegisterMessageInput,
} from '@agent-backend/protocol';
import type { ConnectionEvents } from './connection-events.js';
import { ClientError } from './errors.js';
import { serverError, serverMessageOf } from './server-frame.js';
import {
  ReconnectingSocket,
  type ConnectionOptions,
  type DisconnectInfo,
} from './reconnecting-socket.js';
import { TaskSet } from './task-set.js';
import {
  ToolRunner,
  type ToolCallEvent,
  type ToolDefinition,
  type ToolResultEvent,
} from './tool-runner.js';
import { TypedEmitter } from './typed-emitter.js';
import { deferred, Waiters } from './waiters.js';
import {
  WorkflowRunner,
  type WorkflowDoneEvent,
  type WorkflowProvider,
  type WorkflowRunEvent,
} from './workflow-runner.js';
import { checkId, gatewayUrl } from './ws-url.js';

/** What the node tells the server about itself in `register` (spec 2.1, 6.2). */
export interface NodeDescription {
  /** @default 'Unknown Node' */
  name?: string;
  /** @default `os.type()` */
  os?: string;
  /** @default `os.release()` */
  osVersion?: string;
  appVersion?: string;
  /** @default [] */
  capabilities?: string[];
  /**
   * Tool calls plus workflow runs at once. At the limit the node reports `busy` (a heartbeat goes
   * out at once when a task start or end flips the status) and refuses further calls with -32000.
   * @default 3
   */
  maxConcurrentTasks?: number;
}

export interface NodeClientOptions extends ConnectionOptions {
  /** The gateway's base address, e.g. `ws://localhost:8000` (`http(s)` is mapped to `ws(s)`). */
  url: string;
  kind: NodeType;
  /** The user the node belongs to; must be the `sub` of the token. */
  userId: string;
  /** @default `ext_<userId>` for an extension, `desktop_<userId>` for a desktop (spec 4.3) */
  nodeId?: string;
  node?: NodeDescription;
  /** The tools the node runs, by name. @default {} */
  tools?: Readonly<Record<string, ToolDefinition>>;
  /** The workflows of a browser extension. */
  workflows?: WorkflowProvider;
  /** Interval of `heartbeat` messages. @default 20_000 */
  heartbeatMs?: number;
  /** Drop and reconnect when nothing arrived from the server for this long. @default 3 × heartbeatMs */
  idleTimeoutMs?: number;
  /** Deadline of a tool call, unless the tool sets its own (spec 8). @default 60_000 */
  toolTimeoutMs?: number;
  /** Deadline of a workflow run (spec 8). @default 300_000 */
  workflowTimeoutMs?: number;
  /** Deadline of `ping()`. @default 10_000 */
  requestTimeoutMs?: number;
}

/** Events of {@link NodeClient}. */
export interface NodeClientEvents extends ConnectionEvents {
  /** After `connected`, the gateway's answer to `register`. */
  registered: RegisteredMessage;
  heartbeat: { readonly status: NodeStatus; readonly currentTasks: number };
  heartbeatAck: Record<string, never>;
  toolCall: ToolCallEvent;
  toolResult: ToolResultEvent;
  workflowRun: WorkflowRunEvent;
  workflowDone: WorkflowDoneEvent;
}

/**
 * A node (browser extension or desktop app) connected to the gateway: it registers with its
 * tools, sends heartbeats, answers JSON-RPC tool calls and, for an extension, workflow requests,
 * and reconnects with backoff until it is closed or refused for good (see `close-codes.ts`).
 */
export class NodeClient extends TypedEmitter<NodeClientEvents> {
  readonly nodeId: string;
  readonly #options: NodeClientOptions;
  readonly #socket: ReconnectingSocket;
  readonly #tasks: TaskSet;
  readonly #tools: ToolRunner;
  readonly #workflows: WorkflowRunner;
  readonly #pongs = new Waiters<true>();
  #status: NodeStatus = 'online';
  #registered = false;
  /** The status of the last heartbeat sent; a task change that flips it is reported at once. */
  #reportedStatus: NodeStatus | undefined;
  readonly #ready = deferred();

  constructor(options: NodeClientOptions) {
    super();
    checkId('userId', options.userId);
    if (options.nodeId !== undefined) checkId('nodeId', options.nodeId);
    const capacity = options.node?.maxConcurrentTasks ?? 3;
    if (!Number.isInteger(capacity) || capacity < 1)
      throw new RangeError('node.maxConcurrentTasks must be a positive integer');
    if (options.heartbeatMs !== undefined && !(options.heartbeatMs > 0))
      throw new RangeError('heartbeatMs must be positive');
    this.#options = options;
    this.nodeId =
      options.nodeId ?? `${options.kind === 'extension' ? 'ext' : 'desktop'}_${options.userId}`;
    const prefix = options.kind === 'extension' ? 'user' : 'desktop';
    const url = gatewayUrl(options.url, options.kind, {
      client_id: `${prefix}_${options.userId}`,
      node_id: this.nodeId,
    });
    const heartbeatMs = options.heartbeatMs ?? 20_000;
    this.#socket = new ReconnectingSocket(
      {
        url,
        keepaliveMs: heartbeatMs,
        idleTimeoutMs: options.idleTimeoutMs ?? 3 * heartbeatMs,
        options,
        ordered: true,
      },
      {
        onConnecting: (attempt, at) => this.emit('connecting', { attempt, url: at }),
        onOpen: (at) => this.#onOpen(at),
        onFrame: (frame) => this.#onFrame(frame),
        onTick: () => this.#heartbeat(),
        onDown: (info) => this.#onDown(info),
        onError: (error) => this.emit('error', error),
        onStop: (error) => this.#onStop(error),
      },
    );
    this.#tasks = new TaskSet(capacity, () => {
      if (this.status !== this.#reportedStatus) this.#heartbeat();
    });
    const send = (message: unknown) => this.#socket.send(message);
    this.#tools = new ToolRunner({
      tools: options.tools ?? {},
      tasks: this.#tasks,
      defaultTimeoutMs: options.toolTimeoutMs ?? 60_000,
      send,
      onCall: (event) => this.emit('toolCall', event),
      onResult: (event) => this.emit('toolResult', event),
    });
    this.#workflows = new WorkflowRunner({
      provider: options.workflows,
      tasks: this.#tasks,
      timeoutMs: options.workflowTimeoutMs ?? 300_000,
      send,
      onRun: (event) => this.emit('workflowRun', event),
      onDone: (event) => this.emit('workflowDone', event),
      onError: (error) => this.emit('error', error),
    });
  }

  /** Tool calls and workflow runs in progress (`current_tasks`). */
  get currentTasks(): number {
    return this.#tasks.size;
  }

  /** `busy` while at `max_concurrent_tasks`, else the status last set (`online` at first). */
  get status(): NodeStatus {
    return this.#status === 'online' && this.#tasks.full ? 'busy' : this.#status;
  }

  get isRegistered(): boolean {
    return this.#registered;
  }

  /**
   * Connects; resolves at the first `registered`, rejects if the client stops before that
   * (a final close code, or `close()`). Reconnection continues in the background afterwards.
   */
  start(): Promise<void> {
    this.#socket.start();
    return this.#ready.promise;
  }

  /** Sets the reported status and sends a heartbeat at once. */
  setStatus(status: NodeStatus): void {
    this.#status = status;
    this.#heartbeat();
  }

  /** Sends `ping` and resolves at the `pong`. */
  async ping(): Promise<void> {
    if (!this.#socket.send({ type: 'ping' }))
      throw new ClientError('not_connected', 'the socket is not open');
    await this.#pongs.wait(this.#options.requestTimeoutMs ?? 10_000, 'pong');
  }

  /** Aborts running tasks, closes the socket and stops reconnecting; no timer is left. */
  async close(): Promise<void> {
    this.#tasks.abortAll(new ClientError('closed', 'the client was closed'));
    await this.#socket.close();
  }

  #onOpen(url: string): void {
    this.emit('connected', { url });
    const node = this.#options.node ?? {};
    const tools = this.#options.tools ?? {};
    const register: RegisterMessageInput & { tools?: unknown[] } = {
      type: 'register',
      node_id: this.nodeId,
      node_name: node.name ?? 'Unknown Node',
      node_type: this.#options.kind,
      os: node.os ?? type(),
      os_version: node.osVersion ?? release(),
      capabilities: node.capabilities ?? [],
      available_tools: Object.keys(tools),
      max_concurrent_tasks: this.#tasks.capacity,
    };
    if (node.appVersion !== undefined) register.app_version = node.appVersion;
    const described = Object.values(tools).some(
      (t) => t.description !== undefined || t.inputSchema !== undefined,
    );
    if (described)
      register.tools = Object.entries(tools).map(([name, t]) => ({
        name,
        ...(t.description === undefined ? {} : { description: t.description }),
        ...(t.inputSchema === undefined ? {} : { inputSchema: t.inputSchema }),
        ...(t.writes === undefined ? {} : { writes: t.writes }),
      }));
    this.#socket.send(register);
  }

  #onFrame(frame: unknown): void {
    if (isRecord(frame) && 'jsonrpc' in frame) {
      if ('method' in frame) this.#tools.handle(frame);
      else
        this.emit(
          'error',
          new ClientError('protocol_error', 'dropped a JSON-RPC frame that is not a request'),
        );
      return;
    }
    const message = serverMessageOf(frame);
    if (message instanceof ClientError) {
      this.emit('error', message);
      return;
    }
    this.emit('message', message);
    switch (message.type) {
      case 'registered':
        if (message.success) {
          this.#registered = true;
          this.#socket.markReady();
          this.emit('registered', message);
          this.#heartbeat();
          this.#ready.resolve();
        } else {
          this.emit(
            'error',
            new ClientError(
              'registration_failed',
              `the server refused to register node ${this.nodeId}`,
            ),
          );
          this.#socket.drop('registration refused');
        }
        break;
      case 'heartbeat_ack':
        this.emit('heartbeatAck', {});
        break;
      case 'pong':
        this.#pongs.deliver(true);
        break;
      case 'get_workflows':
        if (this.#options.kind === 'extension') void this.#workflows.list();
        break;
      case 'execute_workflow':
        if (this.#options.kind === 'extension') void this.#workflows.execute(message);
        break;
      case 'error':
        this.emit('error', serverError(message));
        break;
      default:
        break;
    }
  }

  #heartbeat(): void {
    if (!this.#registered) return;
    const heartbeat: HeartbeatMessageInput = {
      type: 'heartbeat',
      status: this.status,
      current_tasks: this.#tasks.size,
    };
    if (!this.#socket.send(heartbeat)) return;
    this.#reportedStatus = this.status;
    this.emit('heartbeat', { status: this.status, currentTasks: this.#tasks.size });
  }

  #onDown(info: DisconnectInfo): void {
    this.#registered = false;
    this.#tasks.abortAll(new ClientError('disconnected', 'the connection dropped'));
    this.#pongs.rejectAll(new ClientError('disconnected', 'the connection dropped'));
    this.emit('disconnected', info);
  }

  #onStop(error: ClientError): void {
    this.#registered = false;
    this.#tasks.abortAll(error);
    this.#pongs.rejectAll(error);
    this.#ready.reject(error);
    this.emit('stopped', { error });
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
