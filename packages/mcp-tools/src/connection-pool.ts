import { createHash } from 'node:crypto';
import type { McpConnection, McpServerConfig } from '@agent-backend/mcp';

export interface ConnectionPoolOptions {
  /** A connection unused for this long is closed. @default 60_000 */
  idleTtlMs?: number;
  /** Most pooled connections; the least recently used idle one is closed beyond it. @default 200 */
  maxConnections?: number;
}

/** Opens a new connection (the pool decides when). */
export type Connect = (config: McpServerConfig, signal: AbortSignal) => Promise<McpConnection>;

interface Entry {
  readonly key: string;
  readonly connection: Promise<McpConnection>;
  /** Calls and listings in progress; an entry is only closed for idleness when 0. */
  busy: number;
  lastUsed: number;
  timer?: NodeJS.Timeout;
}

/**
 * The key of a connection: the user and everything that decides what the server sees (transport,
 * URL or command, api key, headers). Hashed, so the map never holds a secret in the clear; the
 * server's display name is not part of it.
 */
export function poolKey(userId: string, config: McpServerConfig): string {
  const headers = Object.entries(config.headers ?? {})
    .map(([name, value]) => [name.toLowerCase(), value])
    .sort(([a], [b]) => (a! < b! ? -1 : a! > b! ? 1 : 0));
  return createHash('sha256')
    .update(
      JSON.stringify([
        userId,
        config.transport_type,
        config.base_url,
        config.api_key ?? null,
        headers,
      ]),
    )
    .digest('hex');
}

/**
 * Per-process MCP sessions reused across runs, so a conversation does not pay a handshake (or,
 * for stdio, a process start) per message. Keyed by {@link poolKey}: a connection is never
 * shared between users, nor between configurations that differ in credentials. An entry is
 * closed after `idleTtlMs` without use, when it fails (the next use reconnects), when the pool
 * is over `maxConnections` (least recently used idle entry first; busy ones are never cut off,
 * so the pool can briefly exceed the limit), and on `close` (shutdown).
 */
export class ConnectionPool {
  private readonly entries = new Map<string, Entry>();
  private readonly idleTtlMs: number;
  private readonly maxConnections: number;
  private closed = false;

  constructor(
    private readonly connect: Connect,
    options: ConnectionPoolOptions = {},
  ) {
    this.idleTtlMs = options.idleTtlMs ?? 60_000;
    this.maxConnections = options.maxConnections ?? 200;
  }

  /** Open connections (including ones still connecting). */
  get size(): number {
    return this.entries.size;
  }

  /**
   * Runs `work` on the user's connection to `config`, connecting first when there is none.
   * When `work` throws, the connection is dropped (closed once idle): a broken session must not
   * be handed to the next run. `signal` only bounds connecting, not the shared connection.
   */
  async use<T>(
    userId: string,
    config: McpServerConfig,
    signal: AbortSignal,
    work: (connection: McpConnection) => Promise<T>,
  ): Promise<T> {
    if (this.closed) throw new Error('the MCP connection pool is closed');
    const entry = this.acquire(poolKey(userId, config), config, signal);
    entry.busy++;
    try {
      return await work(await entry.connection);
    } catch (error) {
      this.drop(entry);
      throw error;
    } finally {
      entry.busy--;
      entry.lastUsed = Date.now();
      this.schedule(entry);
    }
  }

  /** Closes every connection; later `use` calls fail. */
  async close(): Promise<void> {
    this.closed = true;
    const entries = [...this.entries.values()];
    this.entries.clear();
    await Promise.all(entries.map((entry) => this.dispose(entry)));
  }

  private acquire(key: string, config: McpServerConfig, signal: AbortSignal): Entry {
    const existing = this.entries.get(key);
    if (existing) {
      clearTimeout(existing.timer);
      // Most recently used last, so eviction finds the oldest first.
      this.entries.delete(key);
      this.entries.set(key, existing);
      return existing;
    }
    const connection = this.connect(config, signal);
    const entry: Entry = { key, connection, busy: 0, lastUsed: Date.now() };
    // A failed connect is not pooled; its error reaches the caller through `work`.
    connection.catch(() => this.forget(entry));
    this.entries.set(key, entry);
    this.evict();
    return entry;
  }

  private evict(): void {
    for (const entry of this.entries.values()) {
      if (this.entries.size <= this.maxConnections) return;
      if (entry.busy === 0) this.drop(entry);
    }
  }

  private schedule(entry: Entry): void {
    clearTimeout(entry.timer);
    if (this.entries.get(entry.key) !== entry) {
      if (entry.busy === 0) void this.dispose(entry);
      return;
    }
    if (entry.busy > 0) return;
    entry.timer = setTimeout(() => this.drop(entry), this.idleTtlMs);
    entry.timer.unref();
  }

  /** Removes the entry; it is closed now if idle, else when its last user is done. */
  private drop(entry: Entry): void {
    this.forget(entry);
    if (entry.busy === 0) void this.dispose(entry);
  }

  private forget(entry: Entry): void {
    if (this.entries.get(entry.key) === entry) this.entries.delete(entry.key);
  }

  private async dispose(entry: Entry): Promise<void> {
    clearTimeout(entry.timer);
    const connection = await entry.connection.catch(() => undefined);
    await connection?.close();
  }
}
