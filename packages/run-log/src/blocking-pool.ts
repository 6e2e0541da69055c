import { closeRedis, connectionNameOf, duplicateRedis, type Redis } from '@agent-backend/redis';

/**
 * Connections for blocking reads (`XREAD BLOCK`), duplicated from a shared connection and
 * reused: a following reader holds one for its whole read, and up to `maxIdle` are kept open
 * between reads so a resume does not pay a connection handshake.
 */
export class BlockingPool {
  private readonly idle: Redis[] = [];
  private readonly busy = new Set<Redis>();
  private closed = false;

  constructor(
    private readonly source: Redis,
    private readonly maxIdle: number,
  ) {}

  acquire(): Redis {
    const connection =
      this.idle.pop() ??
      duplicateRedis(this.source, {
        connectionName: `${connectionNameOf(this.source) ?? 'run-log'}:block`,
        // A blocked read must not be retried on another connection after a reconnect.
        maxRetriesPerRequest: 0,
        // Nor cut by the shared connection's command timeout: `XREAD BLOCK` waits on purpose.
        commandTimeout: undefined,
      });
    this.busy.add(connection);
    return connection;
  }

  /** Returns a connection; one that was disconnected or errored is closed instead. */
  release(connection: Redis, reusable: boolean): void {
    this.busy.delete(connection);
    if (
      reusable &&
      !this.closed &&
      this.idle.length < this.maxIdle &&
      connection.status === 'ready'
    ) {
      this.idle.push(connection);
    } else {
      void closeRedis(connection, 100);
    }
  }

  /** Ends every connection, which also ends every blocked read. */
  async close(): Promise<void> {
    this.closed = true;
    const all = [...this.idle.splice(0), ...this.busy];
    this.busy.clear();
    for (const connection of all) connection.disconnect();
    await Promise.all(all.map((connection) => closeRedis(connection, 100)));
  }
}
