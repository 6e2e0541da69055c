import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect } from 'node:net';
import {
  createTestSchema,
  startScriptedModel,
  startServiceProcess,
  testDatabaseUrl,
  testRedisUrl,
  textReply,
  uniquePrefix,
  type ScriptedModel,
  type ServiceProcess,
  type TestSchema,
} from '@agent-backend/testing';
import { startPgCounter, type PgCounter } from '../bench/support/pg-counter.js';
import { accessToken, API_ENTRY, invoke } from './agent-helpers.js';
import { keyFiles } from './helpers.js';

/** The route cache's age bound (`routeMaxAgeMs`' default). */
const ROUTE_AGE_MS = 1_000;

/** The presence key of the user's nodes (a Cluster's key has its group in braces). */
const USER_NODES = /presence\}?:user:fc-ann$/;

/** A Redis command the service sent, as MONITOR shows it, with Redis's clock (ms). */
interface Sent {
  readonly at: number;
  readonly args: string[];
}

/**
 * What a text-only invoke waits for on the split deployment (an API process on PostgreSQL and
 * Redis): the Redis commands (MONITOR on the service's own connections) and PostgreSQL
 * statements (a counting proxy) sent before its model request reaches the model, and before its
 * first text chunk reaches the client. Counts, not times: the model holds its answer at each
 * point so nothing later is mixed in. The user's node tools are listed through the route cache
 * the tool calls use, so a run of a user whose routes are cached reads no presence.
 */
describe('what a text-only invoke sends before its first chunk', () => {
  const keys = keyFiles();
  let model: ScriptedModel;
  let service: ServiceProcess;
  let schema: TestSchema;
  let pg: PgCounter;
  let stopMonitor: (() => void) | undefined;
  let prefix: string;
  const sent: Sent[] = [];

  beforeAll(async () => {
    model = await startScriptedModel();
    schema = await createTestSchema('first_chunk_rt');
    pg = await startPgCounter(new URL(testDatabaseUrl()));
    prefix = uniquePrefix('first-chunk-rt');
    // The service's connections: those that name its prefix (MULTI, EXEC, PING name none).
    const ours = new Set<string>();
    stopMonitor = await monitorRedis(new URL(testRedisUrl()), (at, args, source) => {
      if (source === 'lua') return;
      if (args.some((arg) => arg.includes(prefix))) ours.add(source);
      if (ours.has(source)) sent.push({ at, args });
    });
    service = await startServiceProcess({
      entry: API_ENTRY,
      env: {
        REDIS_URL: testRedisUrl(),
        DATABASE_URL: pg.url,
        DATABASE_SCHEMA: schema.schema,
        REDIS_KEY_PREFIX: prefix,
        JWT_PUBLIC_KEY_FILE: keys.publicKeyFile,
        JWT_PRIVATE_KEY_FILE: keys.privateKeyFile,
        MCP_ALLOW_PRIVATE_NETWORKS: 'true',
        // As the peer benchmark (bench/peers/agent-stream.ts): one user makes every request.
        RATE_LIMIT_INVOKE_PER_MINUTE: '0',
        MAX_CONCURRENT_RUNS_PER_USER: '0',
        MAX_OPEN_STREAMS_PER_USER: '0',
        INSTANCE_ID: 'first-chunk-rt',
      },
    });
  });
  afterAll(async () => {
    await service?.stop('SIGTERM');
    stopMonitor?.();
    await pg?.close();
    await schema?.drop();
    await model?.close();
  });

  /**
   * One text-only run; what the service sent before its model request reached the model and
   * before its first chunk reached the client (Redis commands by Redis's clock, statements by
   * the proxy's: one machine, one clock). `warm`: right after a run of the same user, whose read
   * of the user's nodes is then cached.
   */
  const probe = async (token: string, name: string, warm: boolean, sessionId?: string) => {
    if (warm) {
      model.script(`${name}-warm`, [textReply('Warm.', 1)]);
      await (
        await invoke(service.url, token, { message: 'Hi', llm_config: llm(`${name}-warm`) })
      ).ended;
    }
    let release!: () => void;
    const afterChunk = new Promise<void>((resolve) => (release = resolve));
    model.script(name, [
      {
        kind: 'stream',
        pieces: [
          { text: 'First' },
          { waitFor: afterChunk },
          { text: ' and the rest.' },
          { finish: 'stop' },
        ],
      },
    ]);
    const start = Date.now();
    const [redisFrom, pgFrom] = [sent.length, pg.statements().length];
    const client = await invoke(service.url, token, {
      message: 'Hi',
      llm_config: llm(name),
      ...(sessionId ? { session_id: sessionId } : {}),
    });
    expect(client.response.status).toBe(200);
    const [request] = await model.waitForRequests(name, 1);
    const modelAt = request!.receivedAt;
    await client.waitFor((event) => event.data.type === 'message_chunk');
    const chunkAt = Date.now();
    release();
    const events = await client.ended;
    expect(events.at(-1)!.data.type).toBe('done');
    // What was sent is in MONITOR's feed (and the proxy's log) by now.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const redis = sent.slice(redisFrom).filter(({ at }) => at >= start - 2);
    const sql = pg.statements().slice(pgFrom);
    // To the millisecond: `Date.now()` drops the fraction Redis's clock gives.
    const before = (at: number, mark: number) => at < mark + 1;
    return {
      sessionId: events[0]!.data.session_id as string,
      /** Whether the probed run's listing came within the route age of the user's last read. */
      withinAge: modelAt - lastRead(start) < ROUTE_AGE_MS - 100,
      beforeModel: {
        redis: redis.filter(({ at }) => before(at, modelAt)).map(({ args }) => args),
        pg: sql.filter(({ at }) => before(at, modelAt)).map(({ sql }) => sql),
      },
      beforeChunk: {
        redis: redis
          .filter(({ at }) => !before(at, modelAt) && before(at, chunkAt))
          .map(({ args }) => args),
        pg: sql
          .filter(({ at }) => !before(at, modelAt) && before(at, chunkAt))
          .map(({ sql }) => sql),
      },
    };
  };
  /** When the service last read the user's nodes from presence before `until` (0: never). */
  const lastRead = (until: number) =>
    sent.findLast(({ at, args }) => at < until && args.some((arg) => USER_NODES.test(arg)))?.at ??
    0;
  const llm = (modelName: string) => ({
    baseUrl: model.baseUrl,
    apiKey: 'sk-test',
    modelName,
  });
  const show = (name: string, probed: Awaited<ReturnType<typeof probe>>) => {
    const sqlOf = (sql: string) => sql.replace(/\s+/g, ' ').slice(0, 60);
    // For the report: what each step sent (the lead compares builds with it).
    console.log(
      JSON.stringify(
        {
          run: name,
          beforeModel: {
            redis: probed.beforeModel.redis.map(brief),
            pg: probed.beforeModel.pg.map(sqlOf),
          },
          beforeChunk: {
            redis: probed.beforeChunk.redis.map(brief),
            pg: probed.beforeChunk.pg.map(sqlOf),
          },
        },
        null,
        1,
      ),
    );
  };
  const brief = (args: string[]) =>
    args
      .slice(0, 4)
      .map((arg) => arg.replace(prefix, '').slice(0, 60))
      .join(' ');

  it('reads no presence for the node tools of a user whose nodes were read within the route age', async () => {
    const token = await accessToken(keys.privateKey, 'fc-ann');
    // The process's first run subscribes to presence changes (once).
    show('cold', await probe(token, 'fc-cold', false));
    let sessionId: string | undefined;
    // A new session each (as the peer benchmark), then a run that continues the last one.
    for (const [name, continued] of [
      ['fc-1', false],
      ['fc-2', false],
      ['fc-continued', true],
    ] as const) {
      const given = continued ? sessionId : undefined;
      let probed = await probe(token, name, true, given);
      // A machine slow enough to take the route age between the two runs: once more.
      for (let retry = 1; !probed.withinAge && retry <= 3; retry++)
        probed = await probe(token, `${name}-${retry}`, true, given);
      expect(probed.withinAge).toBe(true);
      show(name, probed);
      sessionId = probed.sessionId;
      const presenceOfUser = probed.beforeModel.redis.filter((args) =>
        args.some((arg) => USER_NODES.test(arg)),
      );
      expect(presenceOfUser).toEqual([]);
    }
  });
});

/**
 * Every command Redis runs, as MONITOR reports it (`at`: Redis's clock, ms since the epoch;
 * `source`: the client's address, or `lua` inside a script). A raw connection: a client
 * library's monitor mode can mistake a reply for a command on a busy shared Redis.
 */
async function monitorRedis(
  url: URL,
  onCommand: (at: number, args: string[], source: string) => void,
): Promise<() => void> {
  const socket = connect(Number(url.port || 6379), url.hostname);
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve).once('error', reject);
  });
  socket.on('error', () => undefined);
  let buffered = '';
  const monitored = new Promise<void>((resolve) => {
    socket.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('latin1');
      let end: number;
      while ((end = buffered.indexOf('\r\n')) >= 0) {
        const line = buffered.slice(0, end);
        buffered = buffered.slice(end + 2);
        if (line === '+OK') resolve();
        const match = /^\+(\d+\.\d+) \[\d+ ([^\]]+)\] (.*)$/.exec(line);
        if (!match) continue;
        const args = [...match[3]!.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((arg) =>
          arg[1]!.replace(/\\(.)/g, '$1'),
        );
        onCommand(Number(match[1]) * 1_000, args, match[2]!);
      }
    });
  });
  socket.write('MONITOR\r\n');
  await monitored;
  return () => socket.destroy();
}
