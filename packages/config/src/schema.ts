import { z } from 'zod';
import { agentEnv } from './env-agent.js';
import { authEnv } from './env-auth.js';
import { chatEnv } from './env-chat.js';
import { lifecycleEnv } from './env-lifecycle.js';
import { limitsEnv } from './env-limits.js';
import { operationsEnv } from './env-operations.js';
import { serviceEnv } from './env-service.js';
import { toolsEnv } from './env-tools.js';

export { DEFAULT_PORT } from './env-service.js';

/** The processes this service can run as. `all-in-one` runs the other three in one process. */
export const Role = z.enum(['all-in-one', 'api', 'gateway', 'worker']);
export type Role = z.infer<typeof Role>;

/**
 * Every environment variable the service reads (DESIGN.md, "Environment"), with its default and,
 * in `.describe()`, its meaning for people: docs/configuration.md is generated from this, in
 * this order. Each domain's fields live in its own `env-*.ts` module; a new variable goes in the
 * module of its domain. Empty strings count as unset, so `FOO=` in a compose file does not
 * become a value.
 */
export const EnvSchema = z.object({
  ...serviceEnv,
  ...authEnv,
  ...chatEnv,
  ...lifecycleEnv,
  ...agentEnv,
  ...toolsEnv,
  ...limitsEnv,
  ...operationsEnv,
});

export type Env = z.output<typeof EnvSchema>;
