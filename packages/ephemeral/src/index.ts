export type { EphemeralStore, SetOptions } from './ephemeral-store.js';
export { EphemeralClosedError, EphemeralNotIntegerError } from './errors.js';
export {
  createMemoryEphemeralStore,
  type MemoryEphemeralStoreOptions,
} from './memory-ephemeral-store.js';
export {
  createRedisEphemeralStore,
  type RedisEphemeralStoreOptions,
} from './redis-ephemeral-store.js';
