import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult, Prompt, Tool } from '@modelcontextprotocol/sdk/types.js';
import { McpConnectError } from './errors.js';
import type { FailureContext } from './classify-error.js';
import { mcpSdk } from './mcp-sdk.js';

/** Per-call limits; the connection has no deadline of its own after `connect`. */
export interface CallOptions {
  signal?: AbortSignal;
  /** Deadline for the whole call (every page of a listing). @default 60_000 */
  timeoutMs?: number;
}

/** Listings stop here: a server that pages forever, or offers absurdly many items, is broken or hostile. */
const MAX_PAGES = 1_000;
const MAX_ITEMS = 10_000;

/**
 * An initialised MCP session: the interface the validation endpoint uses now and the agent
 * runtime will use for MCP tools. Listings follow every page; a server that does not offer
 * tools or prompts yields an empty list, not an error. Failures are {@link McpConnectError}s.
 */
export class McpConnection {
  constructor(
    private readonly client: Client,
    /** Classifies failures of calls made on this connection. */
    private readonly classify: (error: unknown, ctx: Partial<FailureContext>) => McpConnectError,
    private readonly release: () => Promise<void>,
  ) {}

  /** Name and version the server reported in `initialize`. */
  get serverInfo(): { name: string; version: string } | undefined {
    return this.client.getServerVersion();
  }

  /** Every tool the server offers, all pages. */
  listTools(options?: CallOptions): Promise<Tool[]> {
    if (this.client.getServerCapabilities()?.tools === undefined) return Promise.resolve([]);
    return this.#paginate('tools', options, async (cursor, request) => {
      const page = await this.client.listTools(cursor ? { cursor } : undefined, request);
      return { items: page.tools, next: page.nextCursor };
    });
  }

  /** Every prompt the server offers, all pages; `[]` when it has no prompts capability. */
  listPrompts(options?: CallOptions): Promise<Prompt[]> {
    if (this.client.getServerCapabilities()?.prompts === undefined) return Promise.resolve([]);
    return this.#paginate('prompts', options, async (cursor, request) => {
      const page = await this.client.listPrompts(cursor ? { cursor } : undefined, request);
      return { items: page.prompts, next: page.nextCursor };
    });
  }

  /** Calls a tool; a tool-level failure is a result with `isError`, not an exception. */
  async callTool(
    name: string,
    args: Record<string, unknown> = {},
    options?: CallOptions,
  ): Promise<CallToolResult> {
    return this.#run(options, async (request) => {
      const result = await this.client.callTool({ name, arguments: args }, undefined, request);
      return result as CallToolResult;
    });
  }

  /** Ends the session: HTTP session terminated, stdio process tree ended, sockets closed. */
  close(): Promise<void> {
    return this.release();
  }

  async #paginate<T>(
    what: string,
    options: CallOptions | undefined,
    page: (
      cursor: string | undefined,
      request: { signal: AbortSignal; timeout: number },
    ) => Promise<{ items: T[]; next?: string | undefined }>,
  ): Promise<T[]> {
    return this.#run(options, async (request) => {
      const all: T[] = [];
      const seen = new Set<string>();
      let cursor: string | undefined;
      for (let n = 0; n < MAX_PAGES; n++) {
        let result: { items: T[]; next?: string | undefined };
        try {
          result = await page(cursor, request);
        } catch (error) {
          // Servers without the method (despite the capability) have nothing to list.
          const { ErrorCode, McpError } = mcpSdk();
          if (error instanceof McpError && error.code === ErrorCode.MethodNotFound) return all;
          throw error;
        }
        all.push(...result.items);
        if (all.length > MAX_ITEMS)
          throw new McpConnectError(
            'handshake',
            `The server offered more than ${MAX_ITEMS} ${what}.`,
          );
        if (!result.next) return all;
        if (seen.has(result.next))
          throw new McpConnectError('handshake', `The server repeated a ${what} page cursor.`);
        seen.add(result.next);
        cursor = result.next;
      }
      throw new McpConnectError(
        'handshake',
        `The server offered more than ${MAX_PAGES} pages of ${what}.`,
      );
    });
  }

  async #run<T>(
    options: CallOptions | undefined,
    work: (request: { signal: AbortSignal; timeout: number }) => Promise<T>,
  ): Promise<T> {
    const timeoutMs = options?.timeoutMs ?? 60_000;
    const deadline = AbortSignal.timeout(timeoutMs);
    const signal = options?.signal ? AbortSignal.any([options.signal, deadline]) : deadline;
    try {
      return await work({ signal, timeout: timeoutMs });
    } catch (error) {
      throw this.classify(error, {
        timeoutMs,
        deadlineExpired: deadline.aborted,
        callerAborted: options?.signal?.aborted ?? false,
      });
    }
  }
}
