export { createRedis, closeRedis, type CreateRedisOptions, type Redis } from './connection.js';
export { DEFAULT_REDIS_PREFIX, redisKeys, type RedisKeys } from './keys.js';
export { defineScript, type RedisScript } from './script.js';
