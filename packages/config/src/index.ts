export { EnvSchema, Role, DEFAULT_PORT, type Env } from './schema.js';
export { loadConfig, loadConfigOrExit, ConfigError, type Config } from './load-config.js';
export { configWarnings } from './config-warnings.js';
export { ENV_MEANINGS, renderConfigurationDoc } from './reference.js';
export { PROVIDER_ALGORITHMS } from './jwt-algorithms.js';
