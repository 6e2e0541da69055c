/**
 * The Lua scripts of the Redis presence adapter. Each runs atomically and reads the clock with
 * `TIME`, so every replica agrees on "now" (the Redis server's) and no check-then-act race exists.
 *
 * A node entry is one hash field `<nodeId>` of `presenceUser(userId)`, holding a JSON array
 * `[expiresAt, lastSeenAt, connectedAt, replicaId, {nodeType, data}]`. The numbers come first
 * so scripts read and rewrite them with string patterns; `cjson` only decodes (its encoder
 * would mangle empty objects and number precision), to read the replica id.
 * Replica liveness is the sorted set `presenceReplicas()`: member replicaId, score the expiry.
 *
 * The scripts of an entry come in two kinds ({@link entryScripts}), differing only in how they
 * learn which replicas are live:
 * - `key` (standalone, Sentinel, and the one-slot layout older versions left on a Cluster):
 *   KEYS[2] is the replicas' set, read with `ZSCORE`. The user's hash must share its slot.
 * - `args` (Cluster): the caller appends the live replicas it knows to ARGV: a mode (`ask` or
 *   `final`), a time `since` (server ms), then the replica ids. So a script names the user's
 *   hash alone, and each user can have a slot of their own. An entry of a replica missing from
 *   the list is hidden; in `ask` mode, when such an entry was written at or after `since` (its
 *   replica may have started after the caller read its list), the script changes nothing and
 *   returns {@link ASK_AGAIN}: the caller reads the live replicas again and reruns it `final`.
 */
import { defineScript, type RedisScript } from '@agent-backend/redis';

const CLOCK = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function ms(x) return string.format('%d', x) end
local function extend(key, ttl)
  if redis.call('PTTL', key) < ttl then redis.call('PEXPIRE', key, ttl) end
end
`;

const PRELUDE = `${CLOCK}local replicaLive = {}
local function visible(v)
  local expiresAt = tonumber(string.match(v, '^%[(%d+),'))
  if not expiresAt or expiresAt <= now then return nil end
  local ok, entry = pcall(cjson.decode, v)
  if not ok or type(entry[4]) ~= 'string' then return nil end
  local r = entry[4]
  if replicaLive[r] == nil then
    local score = redis.call('ZSCORE', KEYS[2], r)
    replicaLive[r] = score ~= false and score ~= nil and tonumber(score) > now
  end
  if replicaLive[r] then return entry end
  return nil
end
`;

/**
 * The prelude of an `args` script whose own arguments are `ARGV[1..fixed]`: the live replicas
 * follow them. `unknown` is set when an entry was hidden that a fresher list might show.
 */
const argsPrelude = (fixed: number) => `${CLOCK}local ask = ARGV[${fixed + 1}] == 'ask'
local since = tonumber(ARGV[${fixed + 2}])
local replicaLive = {}
for i = ${fixed + 3}, #ARGV do replicaLive[ARGV[i]] = true end
local unknown = false
local function visible(v)
  local expiresAt = tonumber(string.match(v, '^%[(%d+),'))
  if not expiresAt or expiresAt <= now then return nil end
  local ok, entry = pcall(cjson.decode, v)
  if not ok or type(entry[4]) ~= 'string' then return nil end
  if replicaLive[entry[4]] then return entry end
  local seen = tonumber(entry[2])
  if ask and seen and seen >= since then unknown = true end
  return nil
end
`;

/** What an `args` script returns in `ask` mode when its replica list may be too old. */
export const ASK_AGAIN = -2;

/** How a script learns the live replicas: KEYS[2], or the arguments after its own. */
export type Liveness = 'key' | 'args';

/**
 * KEYS: replicas. ARGV: replicaId, replicaTtlMs. Also drops dead replicas. Returns 1 when the
 * replica was live before this beat, 0 when it was not (its first beat, or its entry was lost).
 */
export const heartbeatScript = defineScript(`${PRELUDE}
local ttl = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local was = redis.call('ZSCORE', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[1], ms(now + ttl), ARGV[1])
extend(KEYS[1], ttl)
if was then return 1 end
return 0
`);

/** KEYS: replicas. Returns the live replica ids, dropping dead ones. */
export const liveReplicasScript = defineScript(`${PRELUDE}
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
return redis.call('ZRANGE', KEYS[1], 0, -1)
`);

/** KEYS: replicas. Returns the server time (ms) then the live replica ids, dropping dead ones. */
export const liveReplicasAtScript = defineScript(`${CLOCK}
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local ids = redis.call('ZRANGE', KEYS[1], 0, -1)
table.insert(ids, 1, ms(now))
return ids
`);

/**
 * The upgrade fallback's step before an upsert on a Cluster (see `redis-presence.ts`). KEYS: the
 * user's hash in the one-slot layout, replicas. ARGV: nodeId, the upserting connection's instance
 * id and sequence ('' for none). Returns the node's entry there when it is visible and holds a
 * later connection of that instance (the upsert must give way to it), else deletes the node's
 * entry there (the upsert replaces it) and returns nil.
 */
export const takeOverOneSlotScript = defineScript(`${PRELUDE}
local held = redis.call('HGET', KEYS[1], ARGV[1])
if not held then return false end
if ARGV[2] ~= '' then
  local entry = visible(held)
  local conn = entry and type(entry[5]) == 'table' and entry[5].conn
  if type(conn) == 'table' and conn[1] == ARGV[2] and tonumber(conn[2]) > tonumber(ARGV[3]) then
    return held
  end
end
redis.call('HDEL', KEYS[1], ARGV[1])
return false
`);

/** The scripts of a user's entries, for one kind of {@link Liveness}. */
export interface EntryScripts {
  readonly upsert: RedisScript;
  readonly touch: RedisScript;
  readonly read: RedisScript;
  readonly remove: RedisScript;
}

/**
 * Builds the entry scripts of one {@link Liveness}. In `args` scripts every place that decides
 * on an entry's visibility first returns {@link ASK_AGAIN} when its replica may be unknown, so
 * nothing is written or deleted on the strength of a stale list.
 */
export function entryScripts(liveness: Liveness): EntryScripts {
  const prelude = (fixed: number) => (liveness === 'key' ? PRELUDE : argsPrelude(fixed));
  const guard = liveness === 'key' ? '' : `if unknown then return ${ASK_AGAIN} end\n`;
  return {
    /**
     * KEYS: user hash (and replicas, `key` liveness). ARGV: nodeId, nodeTtlMs, connectedAt ('' for
     * now), the JSON tail `"<replicaId>",{...}]`, and the connection's instance id and sequence
     * ('' for none). Returns the stored value: the visible entry unchanged when it holds a later
     * connection of the same instance (its body's `conn`, `[instance, seq]`), else the new one.
     */
    upsert: defineScript(`${prelude(6)}
if ARGV[5] ~= '' then
  local held = redis.call('HGET', KEYS[1], ARGV[1])
  local entry = held and visible(held)
${guard}  local conn = entry and type(entry[5]) == 'table' and entry[5].conn
  if type(conn) == 'table' and conn[1] == ARGV[5] and tonumber(conn[2]) > tonumber(ARGV[6]) then
    return held
  end
end
local ttl = tonumber(ARGV[2])
local connectedAt = ARGV[3] ~= '' and ARGV[3] or ms(now)
local v = '[' .. ms(now + ttl) .. ',' .. ms(now) .. ',' .. connectedAt .. ',' .. ARGV[4]
redis.call('HSET', KEYS[1], ARGV[1], v)
extend(KEYS[1], ttl)
return v
`),

    /**
     * KEYS: user hash (and replicas, `key` liveness). ARGV: nodeId, nodeTtlMs, expected value (''
     * for any), new tail `connectedAt,"<replicaId>",{...}]` ('' to keep), and the toucher's
     * connection instance id and sequence ('' for none). Returns the new value, 0 when the entry is gone or invisible (and
     * deletes it) or holds a later connection of the toucher's instance (kept as it is), -1 when it
     * changed since the caller read `expected`.
     */
    touch: defineScript(`${prelude(6)}
local v = redis.call('HGET', KEYS[1], ARGV[1])
if not v then return 0 end
if ARGV[3] ~= '' and v ~= ARGV[3] then return -1 end
local entry = visible(v)
${guard}if not entry then
  redis.call('HDEL', KEYS[1], ARGV[1])
  return 0
end
if ARGV[5] ~= '' then
  local conn = type(entry[5]) == 'table' and entry[5].conn
  if type(conn) == 'table' and conn[1] == ARGV[5] and tonumber(conn[2]) > tonumber(ARGV[6]) then
    return 0
  end
end
local ttl = tonumber(ARGV[2])
local tail = ARGV[4] ~= '' and ARGV[4] or string.match(v, '^%[%d+,%d+,(.*)$')
local nv = '[' .. ms(now + ttl) .. ',' .. ms(now) .. ',' .. tail
redis.call('HSET', KEYS[1], ARGV[1], nv)
extend(KEYS[1], ttl)
return nv
`),

    /**
     * KEYS: user hash (and replicas, `key` liveness). ARGV: nodeId ('' for all). Returns [field,
     * value, ...] of the visible entries and deletes the expired ones. Entries of a replica that missed its heartbeat
     * are hidden but kept until their own TTL: a replica stalled past its deadline (a long GC, a
     * loaded machine) comes back with its nodes instead of losing them to a reader.
     */
    read: defineScript(`${prelude(1)}
local fields
if ARGV[1] ~= '' then
  local v = redis.call('HGET', KEYS[1], ARGV[1])
  fields = v and { ARGV[1], v } or {}
else
  fields = redis.call('HGETALL', KEYS[1])
end
local out = {}
for i = 1, #fields, 2 do
  if visible(fields[i + 1]) then
    table.insert(out, fields[i])
    table.insert(out, fields[i + 1])
  else
    local expiresAt = tonumber(string.match(fields[i + 1], '^%[(%d+),'))
    if not expiresAt or expiresAt <= now then redis.call('HDEL', KEYS[1], fields[i]) end
  end
end
${guard}return out
`),

    /**
     * KEYS: user hash (and replicas, `key` liveness). ARGV: nodeId, owner replicaId ('' for any).
     * Returns 1 when a visible entry was removed, 0 otherwise; an invisible entry is deleted
     * whoever owned it.
     */
    remove: defineScript(`${prelude(2)}
local v = redis.call('HGET', KEYS[1], ARGV[1])
if not v then return 0 end
local entry = visible(v)
${guard}if entry and ARGV[2] ~= '' and entry[4] ~= ARGV[2] then return 0 end
redis.call('HDEL', KEYS[1], ARGV[1])
if entry then return 1 end
return 0
`),
  };
}
