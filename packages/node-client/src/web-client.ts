import {
  ExecuteWorkflowMessage,
  fieldErrors,
  type WorkflowCompleteMessage,
  type WorkflowsListMessage,
  type WorkflowStartedMessage,
} from '@agent-backend/protocol';
import type { ConnectionEvents } from './connection-events.js';
import { ClientError } from './errors.js';
import { serverError, serverMessageOf } from './server-frame.js';
import { ReconnectingSocket, type ConnectionOptions } from './reconnecting-socket.js';
import { TypedEmitter } from './typed-emitter.js';
import { deferred, Waiters } from './waiters.js';
import { checkId, gatewayUrl } from './ws-url.js';

export interface WebClientOptions extends ConnectionOptions {
  /** The gateway's base address, e.g. `ws://localhost:8000` (`http(s)` is mapped to `ws(s)`). */
  url: string;
  /** The user whose web connection this is; must be the `sub` of the token. */
  userId: string;
  /** Interval of `ping` keepalives. @default 20_000 */
  pingIntervalMs?: number;
  /** Drop and reconnect when nothing arrived from the server for this long. @default 3 × pingIntervalMs */
  idleTimeoutMs?: number;
  /** Deadline of `getWorkflows`, `executeWorkflow` and `ping`. @default 30_000 */
  requestTimeoutMs?: number;
  /** Deadline of `runWorkflow` after the start (spec 8: runs time out at 300 s). @default 310_000 */
  workflowTimeoutMs?: number;
}

/** Events of {@link WebClient}. */
export interface WebClientEvents extends ConnectionEvents {
  /** Every `workflows_list`, also those another connection of the user asked for. */
  workflowsList: WorkflowsListMessage;
  workflowStarted: WorkflowStartedMessage;
  workflowComplete: WorkflowCompleteMessage;
}

/**
 * A web client's connection (`/ws/web`): lists and starts the workflows of the user's browser
 * extension and hears when they complete (spec 3.2). Answers are paired with requests by type
 * (`workflow_started` also by `workflow_id`), oldest request first, since the protocol carries no
 * request ids; `workflow_complete` goes to every web connection of the user.
 */
export class WebClient extends TypedEmitter<WebClientEvents> {
  readonly #options: WebClientOptions;
  readonly #socket: ReconnectingSocket;
  readonly #lists = new Waiters<WorkflowsListMessage>();
  readonly #started = new Waiters<WorkflowStartedMessage>();
  readonly #completions = new Waiters<WorkflowCompleteMessage>();
  readonly #pongs = new Waiters<true>();
  readonly #ready = deferred();

  constructor(options: WebClientOptions) {
    super();
    checkId('userId', options.userId);
    this.#options = options;
    const url = gatewayUrl(options.url, 'web', { user_id: options.userId });
    const pingIntervalMs = options.pingIntervalMs ?? 20_000;
    this.#socket = new ReconnectingSocket(
      {
        url,
        keepaliveMs: pingIntervalMs,
        idleTimeoutMs: options.idleTimeoutMs ?? 3 * pingIntervalMs,
        options,
      },
      {
        onConnecting: (attempt, at) => this.emit('connecting', { attempt, url: at }),
        onOpen: (at) => this.#onOpen(at),
        onFrame: (frame) => this.#onFrame(frame),
        onTick: () => this.#socket.send({ type: 'ping' }),
        onDown: (info) => {
          this.#rejectAll(new ClientError('disconnected', 'the connection dropped'));
          this.emit('disconnected', info);
        },
        onError: (error) => this.emit('error', error),
        onStop: (error) => {
          this.#rejectAll(error);
          this.#ready.reject(error);
          this.emit('stopped', { error });
        },
      },
    );
  }

  get isConnected(): boolean {
    return this.#socket.isOpen;
  }

  /**
   * Connects; resolves once the server answered a first `ping` (it accepted the token), rejects
   * if the client stops before that. Reconnection continues in the background afterwards.
   */
  start(): Promise<void> {
    this.#socket.start();
    return this.#ready.promise;
  }

  /** Lists the extension's workflows; `success: false` (not a rejection) when none is connected. */
  getWorkflows(): Promise<WorkflowsListMessage> {
    return this.#request({ type: 'get_workflows' }, this.#lists, 'workflows_list');
  }

  /** Starts a workflow on the extension; resolves at `workflow_started` (with the run's `task_id`). */
  executeWorkflow(
    workflowId: string,
    variables: Record<string, unknown> = {},
  ): Promise<WorkflowStartedMessage> {
    const parsed = ExecuteWorkflowMessage.safeParse({
      type: 'execute_workflow',
      workflow_id: workflowId,
      variables,
    });
    if (!parsed.success) {
      const problems = fieldErrors(parsed.error).map((e) => `${e.path} ${e.message}`);
      return Promise.reject(
        new ClientError('invalid_argument', `invalid workflow request: ${problems.join('; ')}`),
      );
    }
    return this.#request(
      parsed.data,
      this.#started,
      'workflow_started',
      (m) => m.workflow_id === workflowId,
    );
  }

  /**
   * Starts a workflow and resolves with its `workflow_complete`. Rejects with `disconnected`
   * when the socket drops meanwhile: the completion would be sent to no one.
   */
  async runWorkflow(
    workflowId: string,
    variables: Record<string, unknown> = {},
  ): Promise<WorkflowCompleteMessage> {
    const early = new Map<string, WorkflowCompleteMessage>();
    const off = this.on('workflowComplete', (m) => early.set(m.task_id, m));
    try {
      const started = await this.executeWorkflow(workflowId, variables);
      const taskId = started.task_id;
      if (taskId === undefined)
        throw new ClientError(
          'protocol_error',
          'workflow_started carried no task_id to pair the completion with',
        );
      const seen = early.get(taskId);
      if (seen) return seen;
      off();
      return await this.#completions.wait(
        this.#options.workflowTimeoutMs ?? 310_000,
        `workflow_complete of ${taskId}`,
        (m) => m.task_id === taskId,
      );
    } finally {
      off();
    }
  }

  /** Sends `ping` and resolves at the `pong`. */
  ping(): Promise<true> {
    return this.#request({ type: 'ping' }, this.#pongs, 'pong');
  }

  /** Closes the socket and stops reconnecting; pending requests reject with `closed`. */
  close(): Promise<void> {
    return this.#socket.close();
  }

  /**
   * The server may accept the upgrade and then close with 4401 / 4403, so an open socket proves
   * nothing: the first `pong` does, and only then does `start()` resolve.
   */
  #onOpen(url: string): void {
    this.emit('connected', { url });
    this.#request({ type: 'ping' }, this.#pongs, 'pong').then(
      () => this.#ready.resolve(),
      () => {},
    );
  }

  #request<T>(
    message: unknown,
    waiters: Waiters<T>,
    what: string,
    match?: (value: T) => boolean,
  ): Promise<T> {
    if (!this.#socket.send(message))
      return Promise.reject(new ClientError('not_connected', 'the socket is not open'));
    return waiters.wait(this.#options.requestTimeoutMs ?? 30_000, what, match);
  }

  #onFrame(frame: unknown): void {
    const message = serverMessageOf(frame);
    if (message instanceof ClientError) {
      this.emit('error', message);
      return;
    }
    this.emit('message', message);
    switch (message.type) {
      case 'workflows_list':
        this.#lists.deliver(message);
        this.emit('workflowsList', message);
        break;
      case 'workflow_started':
        this.#started.deliver(message);
        this.emit('workflowStarted', message);
        break;
      case 'workflow_complete':
        this.#completions.deliver(message);
        this.emit('workflowComplete', message);
        break;
      case 'pong':
        this.#pongs.deliver(true);
        break;
      case 'error':
        this.emit('error', serverError(message));
        break;
      default:
        break;
    }
  }

  #rejectAll(error: ClientError): void {
    for (const waiters of [this.#lists, this.#started, this.#completions, this.#pongs])
      waiters.rejectAll(error);
  }
}
