import { afterAll, beforeAll } from 'vitest';
import { AgentRunner, runRequest, type PreparedRun } from '@agent-backend/agent-runtime';
import { loadConfig } from '@agent-backend/config';
import { createEngines, type Engines } from '@agent-backend/engines';
import { createLogger, type Logger } from '@agent-backend/logger';
import { createTestSchema, testDatabaseUrl, type TestSchema } from '@agent-backend/testing';

/** What the package's store tests run against; read its fields inside tests (set in `beforeAll`). */
export interface EnginesFixture {
  /**
   * The engines of an all-in-one on an external database: PostgreSQL (migrated, in a schema of
   * the test file's own), the in-process bus, ephemeral store and run log (no REDIS_URL).
   */
  readonly engines: Engines;
  /** A runner on those engines. */
  readonly runner: AgentRunner;
  /** A silent logger. */
  readonly logger: Logger;
  /**
   * A background run as the API leaves it for a worker: stored `running`, its session lease
   * handed over. Its model is never asked.
   */
  handedOverRun(userId: string, sessionId?: string): Promise<PreparedRun>;
}

/**
 * Opens an {@link EnginesFixture} before the file's tests and closes it after them; call it at
 * the top of a `describe`, before hooks that use it. `schemaName` names the test schema (dropped
 * at the end).
 */
export function useEnginesFixture(schemaName: string): EnginesFixture {
  const logger = createLogger({ level: 'silent' });
  let schema: TestSchema | undefined;
  let engines: Engines | undefined;
  let runner: AgentRunner | undefined;
  const opened = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('engines fixture: used outside a test');
    return value;
  };

  beforeAll(async () => {
    schema = await createTestSchema(schemaName);
    const config = loadConfig('all-in-one', {
      DATABASE_URL: testDatabaseUrl(),
      DATABASE_SCHEMA: schema.schema,
    });
    engines = await createEngines(config, logger, { migrate: true });
    runner = new AgentRunner({ db: engines.db, ephemeral: engines.ephemeral, logger });
  });
  afterAll(async () => {
    await engines?.close();
    await schema?.drop();
  });

  return {
    get engines() {
      return opened(engines);
    },
    get runner() {
      return opened(runner);
    },
    logger,
    async handedOverRun(userId, sessionId) {
      const prepared = await opened(runner).prepare(
        runRequest({
          userId,
          ...(sessionId === undefined ? {} : { sessionId }),
          message: 'hello',
          model: {
            baseUrl: 'http://127.0.0.1:9/v1',
            apiKey: 'sk-unused',
            name: 'm',
            temperature: 0,
            chosenBy: 'operator',
          },
        }),
        { background: true },
      );
      await prepared.handOver();
      return prepared;
    },
  };
}
