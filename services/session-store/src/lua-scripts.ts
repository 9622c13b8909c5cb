import { createHash } from "node:crypto";
import type { RedisClient } from "./redis-client.js";

/** A Lua script run with EVALSHA, loaded with EVAL on NOSCRIPT (after a restart or FLUSHALL). */
export interface LuaScript {
  run(redis: RedisClient, keys: readonly string[], args: ReadonlyArray<string | number>): Promise<unknown>;
}

export function luaScript(source: string): LuaScript {
  const sha = createHash("sha1").update(source).digest("hex");
  return {
    async run(redis, keys, args) {
      try {
        return await redis.evalsha(sha, keys.length, ...keys, ...args);
      } catch (err) {
        if (!/NOSCRIPT/.test((err as Error).message)) throw err;
        return redis.eval(source, keys.length, ...keys, ...args);
      }
    },
  };
}

/**
 * Applies the write plans of several sessions of one shard, each atomically and guarded by its
 * session's `lastSeq`, together with the sessions' entries in the shard's indexes (PROTOCOL change
 * 44), so no crash can leave an index out of step with a session; and raises index entries of
 * sessions written before (a redelivery). One call per shard and batch chunk: the sessions' keys are
 * `ARGV[1] .. sid .. ':<field>'`, in the shard's hash slot like the declared index keys (keys.ts).
 * KEYS: sessions, idx:running, idx:approvals, idx:search, idx:agents (of one shard).
 * ARGV: sessionKeyBase (`<prefix>:<ns>:{s<k>}:s:`), nTouch, (updatedAt, sessionId)…, nWrites, then per
 *       write: blockLength (the ARGV entries after it in this write), sessionId, updatedAt,
 *       expectedLastSeq, firstIndex, nMeta, (field, value)…, nEntries, (id, json)…,
 *       nLabelSet, (target, label)…, nLabelDel, target…, nLeafEvents, id…,
 *       nApprovalSet, (toolCallId, json)…, nApprovalDel, toolCallId…, nTermAdd, member…,
 *       nTermDel, member…, running ("1" or "0"), oldest approval's requestedAt ("" = none),
 *       agent version before ("" = none), agent version after (`name@version`, "" = none).
 * Touches are `ZADD GT` on the sessions index. Returns one number per write, in order: -1 when
 * applied (its sessions index entry raised to updatedAt); otherwise the stored lastSeq (the plan was
 * computed from a stale state, or was applied already) and nothing of that session is written. A
 * plan whose firstIndex is not the stored entry count is refused the same way (-2), so the entries
 * list can never get a hole or a repeat.
 */
export const APPLY_SHARD_SCRIPT = luaScript(`
local CHUNK = 500
local base = ARGV[1]
local i = 2
local function pairs_to(cmd, key, n)
  local done = 0
  while done < n do
    local m = math.min(CHUNK, n - done)
    local args = {}
    for j = 1, 2 * m do args[j] = ARGV[i + j - 1] end
    redis.call(cmd, key, unpack(args))
    i = i + 2 * m
    done = done + m
  end
end
local function singles_to(cmd, key, n)
  local done = 0
  while done < n do
    local m = math.min(CHUNK, n - done)
    local args = {}
    for j = 1, m do args[j] = ARGV[i + j - 1] end
    redis.call(cmd, key, unpack(args))
    i = i + m
    done = done + m
  end
end
local n = tonumber(ARGV[i]); i = i + 1
local done = 0
while done < n do
  local m = math.min(CHUNK, n - done)
  local args = {}
  for j = 1, 2 * m do args[j] = ARGV[i + j - 1] end
  redis.call('ZADD', KEYS[1], 'GT', unpack(args))
  i = i + 2 * m
  done = done + m
end
local function apply(sid, first)
  local k = base .. sid
  local meta, entries, pos, labels = k .. ':meta', k .. ':entries', k .. ':pos', k .. ':labels'
  local leafev, approvals, terms = k .. ':leafev', k .. ':approvals', k .. ':terms'
  local n = tonumber(ARGV[i]); i = i + 1
  pairs_to('HSET', meta, n)
  n = tonumber(ARGV[i]); i = i + 1
  local done = 0
  while done < n do
    local m = math.min(CHUNK, n - done)
    local values = {}
    local positions = {}
    for j = 1, m do
      values[j] = ARGV[i + 2 * (j - 1) + 1]
      positions[2 * j - 1] = ARGV[i + 2 * (j - 1)]
      positions[2 * j] = first + done + j - 1
    end
    redis.call('RPUSH', entries, unpack(values))
    redis.call('HSET', pos, unpack(positions))
    i = i + 2 * m
    done = done + m
  end
  n = tonumber(ARGV[i]); i = i + 1
  pairs_to('HSET', labels, n)
  n = tonumber(ARGV[i]); i = i + 1
  singles_to('HDEL', labels, n)
  n = tonumber(ARGV[i]); i = i + 1
  singles_to('RPUSH', leafev, n)
  n = tonumber(ARGV[i]); i = i + 1
  pairs_to('HSET', approvals, n)
  n = tonumber(ARGV[i]); i = i + 1
  singles_to('HDEL', approvals, n)
  n = tonumber(ARGV[i]); i = i + 1
  for j = 0, n - 1 do redis.call('ZADD', KEYS[4], 0, ARGV[i + j]) end
  singles_to('SADD', terms, n)
  n = tonumber(ARGV[i]); i = i + 1
  for j = 0, n - 1 do redis.call('ZREM', KEYS[4], ARGV[i + j]) end
  singles_to('SREM', terms, n)
  if ARGV[i] == '1' then redis.call('ZADD', KEYS[2], 0, sid) else redis.call('ZREM', KEYS[2], sid) end
  if ARGV[i + 1] ~= '' then redis.call('ZADD', KEYS[3], tonumber(ARGV[i + 1]), sid) else redis.call('ZREM', KEYS[3], sid) end
  local before, after = ARGV[i + 2], ARGV[i + 3]
  if before ~= after then
    if before ~= '' and redis.call('HINCRBY', KEYS[5], before, -1) <= 0 then redis.call('HDEL', KEYS[5], before) end
    if after ~= '' then redis.call('HINCRBY', KEYS[5], after, 1) end
  end
end
local writes = tonumber(ARGV[i]); i = i + 1
local results = {}
for w = 1, writes do
  local nexti = i + 1 + tonumber(ARGV[i])
  local sid, updatedAt = ARGV[i + 1], ARGV[i + 2]
  local meta = base .. sid .. ':meta'
  local cur = tonumber(redis.call('HGET', meta, 'lastSeq') or '0')
  local first = tonumber(ARGV[i + 4])
  if cur ~= tonumber(ARGV[i + 3]) then
    results[w] = cur
  elseif redis.call('LLEN', base .. sid .. ':entries') ~= first then
    results[w] = -2
  else
    i = i + 5
    apply(sid, first)
    redis.call('ZADD', KEYS[1], 'GT', updatedAt, sid)
    results[w] = -1
  end
  i = nexti
end
return results
`);

/**
 * Removes a session: its keys, its entry in its shard's sessions index and in every index of change
 * 44, at once. KEYS: meta, entries, pos, labels, leafev, approvals, terms, sessions, idx:running,
 * idx:approvals, idx:search, idx:agents. ARGV: sessionId.
 */
export const REMOVE_SCRIPT = luaScript(`
local agent = redis.call('HGET', KEYS[1], 'agent')
if agent and agent ~= '' and redis.call('HINCRBY', KEYS[12], agent, -1) <= 0 then redis.call('HDEL', KEYS[12], agent) end
local terms = redis.call('SMEMBERS', KEYS[7])
for j = 1, #terms do redis.call('ZREM', KEYS[11], terms[j]) end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7])
redis.call('ZREM', KEYS[8], ARGV[1])
redis.call('ZREM', KEYS[9], ARGV[1])
redis.call('ZREM', KEYS[10], ARGV[1])
return 0
`);

/**
 * Reads one session consistently (one script = one snapshot).
 * KEYS: meta, entries, labels, leafev, approvals. ARGV: fromIndex, fromLeafEvent, knownLastSeq.
 * Returns nil when the session does not exist, 1 when its lastSeq equals knownLastSeq, else
 * {metaPairs, entries[fromIndex..], labelPairs, leafEvents[fromLeafEvent..], entryCount, leafEventCount,
 * approvalPairs}.
 */
export const READ_SCRIPT = luaScript(`
local cur = redis.call('HGET', KEYS[1], 'lastSeq')
if not cur then return false end
if cur == ARGV[3] then return 1 end
return {
  redis.call('HGETALL', KEYS[1]),
  redis.call('LRANGE', KEYS[2], tonumber(ARGV[1]), -1),
  redis.call('HGETALL', KEYS[3]),
  redis.call('LRANGE', KEYS[4], tonumber(ARGV[2]), -1),
  redis.call('LLEN', KEYS[2]),
  redis.call('LLEN', KEYS[4]),
  redis.call('HGETALL', KEYS[5])
}
`);

/** Raises a hash field to ARGV[2] if it is lower (or absent). KEYS: hash. ARGV: field, value. */
export const RAISE_SCRIPT = luaScript(`
local cur = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
if tonumber(ARGV[2]) > cur then redis.call('HSET', KEYS[1], ARGV[1], ARGV[2]) end
return 0
`);

/** Deletes a lock (KEYS[1]) only while it holds this holder's token (ARGV[1]). */
export const RELEASE_LOCK = luaScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`);
