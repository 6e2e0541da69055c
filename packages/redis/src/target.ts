import type { RedisOptions } from 'ioredis';

/**
 * Where the service's Redis is, by mode (`REDIS_MODE`). In every mode `url` carries the
 * credentials, the TLS choice (`rediss:`) and, off Cluster, the database number; in the
 * Sentinel and Cluster modes its host and port are not used.
 */
export type RedisTarget =
  | { readonly mode: 'standalone'; readonly url: string }
  | {
      readonly mode: 'sentinel';
      readonly url: string;
      /** `host:port` of each sentinel. */
      readonly sentinels: readonly string[];
      /** The master's name the sentinels monitor. */
      readonly name: string;
      /**
       * What the sentinels themselves require (`requirepass`, ACL users in sentinel.conf);
       * the master's and replicas' credentials stay in `url`.
       */
      readonly sentinelUsername?: string;
      readonly sentinelPassword?: string;
    }
  | {
      readonly mode: 'cluster';
      readonly url: string;
      /** `host:port` of some cluster nodes; the client discovers the rest. */
      readonly nodes: readonly string[];
    };

/** The settings a `redis://` / `rediss://` URL carries apart from its host and port. */
export function parseRedisUrl(url: string): RedisOptions {
  const parsed = new URL(url);
  const options: RedisOptions = {};
  if (parsed.username) options.username = decodeURIComponent(parsed.username);
  if (parsed.password) options.password = decodeURIComponent(parsed.password);
  const db = Number(parsed.pathname.slice(1));
  if (parsed.pathname.length > 1 && Number.isInteger(db)) options.db = db;
  if (parsed.protocol === 'rediss:') options.tls = {};
  return options;
}
