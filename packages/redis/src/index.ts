export {
  createRedis,
  closeRedis,
  connectionNameOf,
  duplicateRedis,
  type CreateRedisOptions,
  type Redis,
} from './connection.js';
export { DEFAULT_REDIS_PREFIX, redisKeys, type RedisKeys, type RedisKeysOptions } from './keys.js';
export { scanKeys, unlinkKeys } from './multi-key.js';
export { ReplylessPublisher, type ReplylessPublisherOptions } from './replyless-publisher.js';
export { defineScript, type RedisScript, type ScriptCallOptions } from './script.js';
export { sendNow } from './send-now.js';
export { parseRedisUrl, type RedisTarget } from './target.js';
