import { afterAll, beforeAll } from 'vitest';
import { createMemoryEphemeralStore, type EphemeralStore } from '@agent-backend/ephemeral';
import { createPostgresDatabase, migrate, type Database } from '@agent-backend/store';
import {
  createTestSchema,
  startScriptedModel,
  testDatabaseUrl,
  type ScriptedModel,
  type TestSchema,
} from '@agent-backend/testing';
import type { RunRequest } from '../run-request.js';

/** What the runner's tests run against; read its fields inside tests (they are set in `beforeAll`). */
export interface RunnerFixture {
  /** The real PostgreSQL database, in a migrated schema of the test file's own. */
  readonly db: Database;
  /** The in-process lease and run-log store. */
  readonly ephemeral: EphemeralStore;
  /** A scripted OpenAI-compatible model server. */
  readonly model: ScriptedModel;
  /** A run's model settings: scripted model `name`, chosen by the request. */
  modelSettings(name: string, apiKey: string, temperature: number): RunRequest['model'];
}

/**
 * Opens a {@link RunnerFixture} before the file's tests and closes it after them; call it at the
 * top level of a test file. `schemaName` names the test schema (dropped at the end).
 */
export function useRunnerFixture(schemaName: string): RunnerFixture {
  let schema: TestSchema | undefined;
  let db: Database | undefined;
  let ephemeral: EphemeralStore | undefined;
  let model: ScriptedModel | undefined;
  const opened = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('runner fixture: used outside a test');
    return value;
  };

  beforeAll(async () => {
    schema = await createTestSchema(schemaName);
    db = await createPostgresDatabase({ url: testDatabaseUrl(), schema: schema.schema, max: 4 });
    await migrate(db);
    ephemeral = createMemoryEphemeralStore();
    model = await startScriptedModel();
  });
  afterAll(async () => {
    await model?.close();
    await ephemeral?.close();
    await db?.close();
    await schema?.drop();
  });

  return {
    get db() {
      return opened(db);
    },
    get ephemeral() {
      return opened(ephemeral);
    },
    get model() {
      return opened(model);
    },
    modelSettings: (name, apiKey, temperature) => ({
      baseUrl: opened(model).baseUrl,
      apiKey,
      name,
      temperature,
      chosenBy: 'request',
    }),
  };
}
