export {
  PRESENCE_DEFAULTS,
  type Presence,
  type PresenceEntry,
  type PresenceOptions,
  type PresenceUpsert,
} from './presence.js';
export { PresenceClosedError } from './errors.js';
export { createMemoryPresence, type MemoryPresenceOptions } from './memory-presence.js';
export { createRedisPresence, type RedisPresenceOptions } from './redis-presence.js';
