import { z } from 'zod';
import { optionalString, booleanStringDefaultTrue, hostPortList, url } from './env-fields.js';

/** Default listen port; the compose file and the Dockerfiles rely on it. */
export const DEFAULT_PORT = 8000;

/** Where the service listens and keeps its state: port, Redis, PostgreSQL, data directory. */
export const serviceEnv = {
  PORT: z.coerce
    .number()
    .int()
    .min(0)
    .max(65535)
    .default(DEFAULT_PORT)
    .describe('listen port (0: any free port; the log line `listening` names it)'),
  HOST: z.string().min(1).default('0.0.0.0').describe('listen address'),
  REDIS_URL: url(['redis:', 'rediss:']).describe(
    '`redis://` or `rediss://`. Unset: in-process bus, presence and ephemeral keys',
  ),
  REDIS_MODE: z
    .enum(['standalone', 'cluster', 'sentinel'])
    .default('standalone')
    .describe(
      '`standalone`: the server of `REDIS_URL`. `cluster`: a Redis Cluster reached through `REDIS_CLUSTER_NODES` (keys of presence, a slot per user, and of the job queues get hash tags; the bus uses sharded pub/sub). `sentinel`: the master that `REDIS_SENTINELS` name `REDIS_SENTINEL_NAME`, followed through failovers. In the last two `REDIS_URL` only carries credentials and TLS (`rediss:`); unset, it is `redis://` + the first node or sentinel',
    ),
  REDIS_CLUSTER_NODES: hostPortList.describe(
    'comma-separated `host:port` of some Redis Cluster nodes (the client discovers the rest); required with `REDIS_MODE=cluster`',
  ),
  REDIS_SENTINELS: hostPortList.describe(
    'comma-separated `host:port` of the sentinels; required with `REDIS_MODE=sentinel`',
  ),
  REDIS_SENTINEL_NAME: optionalString.describe(
    'the master name the sentinels monitor (`sentinel monitor <name> ...`); required with `REDIS_MODE=sentinel`',
  ),
  REDIS_SENTINEL_USERNAME: optionalString.describe(
    "the user the sentinels require (an ACL user in sentinel.conf), with `REDIS_SENTINEL_PASSWORD`; only with `REDIS_MODE=sentinel`. The master's own credentials go in `REDIS_URL`",
  ),
  REDIS_SENTINEL_PASSWORD: optionalString.describe(
    "the password the sentinels require (`requirepass` in sentinel.conf); only with `REDIS_MODE=sentinel`. The master's own password goes in `REDIS_URL`",
  ),
  REDIS_COMMAND_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(100)
    .default(5_000)
    .describe(
      'a Redis command of a request (including adding a job or a schedule) without a reply after this long fails (the request gets 503 `unavailable`); blocking reads and BullMQ workers are not affected',
    ),
  REDIS_KEY_PREFIX: z
    .string()
    .min(1)
    .default('ab:')
    .describe(
      'prefix of every Redis key and channel, so deployments (and tests) can share a Redis',
    ),
  DATABASE_URL: url(['postgres:', 'postgresql:']).describe(
    '`postgres://`. Unset: PGlite under `DATA_DIR/pglite`',
  ),
  DATABASE_QUERY_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(0)
    .default(5_000)
    .describe(
      'a PostgreSQL statement running longer is cancelled by the server; one whose reply does not come within 1 s more (a stalled network or server) is given up and its connection closed; waiting this long for a connection fails too. The request gets 503 `unavailable`. `0`: no limit. Migrations and the vector-search preparation at start are not limited. Raise it if single statements rightly take longer (deleting a knowledge base of millions of chunks)',
    ),
  DATABASE_PREPARED_STATEMENTS: booleanStringDefaultTrue.describe(
    'statements with parameters run as prepared statements, parsed and planned once per connection (`SELECT *` and `RETURNING *` ones excepted). `false` behind a pooler in transaction mode that does not support them (PgBouncer before 1.21, or without `max_prepared_statements`); a statement the server refuses to run prepared runs unnamed from then on either way',
  ),
  DATABASE_SCHEMA: optionalString
    .refine((v) => v === undefined || /^[a-z_][a-z0-9_]{0,62}$/.test(v), {
      message: 'must be a lower-case SQL identifier',
    })
    .describe(
      "PostgreSQL schema for every table (created if missing); unset: the connection's default",
    ),
  MIGRATE_ON_START: booleanStringDefaultTrue.describe(
    "the api, worker and all-in-one apply pending database migrations before they listen (one at a time, under a lock). `false`: they do not, and refuse to start on a PostgreSQL schema with a pending migration; migrations are then the `migrate` command's job (`node apps/all-in-one/dist/migrate.js`, the Helm chart's pre-upgrade Job; [deployment.md](deployment.md)). The embedded PGlite database is always migrated",
  ),
  DATA_DIR: z
    .string()
    .min(1)
    .default('./.data')
    .describe("PGlite files, generated development keys, the all-in-one's control socket"),
  PGLITE_SHARED_BUFFERS_MB: z.coerce
    .number()
    .int()
    .min(1)
    .max(4096)
    .optional()
    .describe(
      "the embedded database's page cache (PostgreSQL `shared_buffers`), in MB; PGlite holds all of it resident from the start. Unset: sized when the database opens, as large as the service's database rounded up to 8 MB, from 16 MB (a new database) to 128 MB; as the database grows, every minute the cache is sized again, and PGlite is reopened with it (new statements wait, well under a second) once it is 16 MB or more above the open one. A page read past it comes from the OS page cache through the file system: at 10,000 memories per user, searches took 1.2-1.3x as long at 16 MB ([BENCHMARKS.md](BENCHMARKS.md)). Set it to fix the size, e.g. lower on a machine short of memory. Only without `DATABASE_URL`",
    ),
  INSTANCE_ID: optionalString.describe("this replica's id on the bus and in presence"),
};
