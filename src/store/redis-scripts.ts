/**
 * The Lua scripts the Redis store runs, each atomic on the server (no lock of ours, no lost update
 * between replicas). Keys are built from a prefix (`compactor:` by default):
 *
 * - `<p>art:<scope>:<id>`: an artifact's JSON, with its TTL (the layout of earlier versions);
 * - `<p>lru`: a sorted set of `<scope>:<id>`, scored by when each was last used (ms);
 * - `<p>lru:bytes`: a hash of each member's content bytes; `<p>lru:total`: their sum;
 * - `<p>lru:evictions`: how many artifacts the cap evicted, by every replica.
 *
 * Keys are built inside the scripts, not declared: the store is for a single Redis (or a primary
 * with replicas), not a Redis Cluster.
 */

/**
 * Forgets a member: its size, its place in the LRU, its bytes from the total; returns the bytes.
 * Shared by both scripts (prepended to their text).
 */
const DROP = `
local function drop(p, member)
  local size = tonumber(redis.call('HGET', p .. 'lru:bytes', member) or '0')
  redis.call('HDEL', p .. 'lru:bytes', member)
  redis.call('ZREM', p .. 'lru', member)
  if size > 0 then redis.call('DECRBY', p .. 'lru:total', size) end
  return size
end
`;

/**
 * PUT. ARGV: prefix, now (ms), ttl (ms), cap (bytes, 0: none), the number of kept members and
 * those members (stored a moment ago, named again without their content: spared), the number of
 * marks and each mark's member and time (uses held in the client's memory: each member still
 * stored is marked used then, never earlier than it was), then per artifact member, JSON, content
 * bytes. Stores each artifact unless it exists (then its TTL is extended, never shortened), marks
 * each used now, forgets up to 16 least recently used members whose key has expired, then evicts
 * the least recently used until the total is under the cap, sparing this put's own and the kept,
 * and counts what it evicted in `<p>lru:evictions` (what a client compares before it vouches for
 * kept members). Returns { live artifacts evicted, total bytes after }.
 */
export const PUT_SCRIPT = `${DROP}
local p, now, ttl, cap = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local lru, sizes, totalKey = p .. 'lru', p .. 'lru:bytes', p .. 'lru:total'
local mine = {}
local at = 5
for i = at + 1, at + tonumber(ARGV[at]) do mine[ARGV[i]] = true end
at = at + tonumber(ARGV[at]) + 1
for i = at + 1, at + 2 * tonumber(ARGV[at]), 2 do
  if redis.call('EXISTS', p .. 'art:' .. ARGV[i]) == 1 then redis.call('ZADD', lru, 'GT', tonumber(ARGV[i + 1]), ARGV[i]) end
end
at = at + 2 * tonumber(ARGV[at]) + 1
for i = at, #ARGV, 3 do
  local member, value, bytes = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
  local key = p .. 'art:' .. member
  mine[member] = true
  if redis.call('SET', key, value, 'PX', ttl, 'NX') then
    local old = tonumber(redis.call('HGET', sizes, member) or '0')
    redis.call('HSET', sizes, member, bytes)
    redis.call('INCRBY', totalKey, bytes - old)
  else
    redis.call('PEXPIRE', key, ttl, 'GT')
    if redis.call('HSETNX', sizes, member, bytes) == 1 then redis.call('INCRBY', totalKey, bytes) end
  end
  redis.call('ZADD', lru, 'GT', now, member)
end
for _, member in ipairs(redis.call('ZRANGE', lru, 0, 15)) do
  if not mine[member] and redis.call('EXISTS', p .. 'art:' .. member) == 0 then drop(p, member) end
end
local total = tonumber(redis.call('GET', totalKey) or '0')
local evicted, offset = 0, 0
while cap > 0 and total > cap do
  local batch = redis.call('ZRANGE', lru, offset, offset + 63)
  if #batch == 0 then break end
  for _, member in ipairs(batch) do
    if mine[member] then
      offset = offset + 1
    else
      if redis.call('DEL', p .. 'art:' .. member) == 1 then evicted = evicted + 1 end
      total = total - drop(p, member)
      if total <= cap then break end
    end
  end
end
if evicted > 0 then redis.call('INCRBY', p .. 'lru:evictions', evicted) end
return { evicted, total }
`;

/**
 * GET as a use. ARGV: prefix, now (ms), ttl (ms), then the members. Each artifact found is marked
 * used now and its TTL extended to at least `ttl`. Returns, per member, its JSON (nil when absent)
 * and its TTL left in ms.
 */
export const USE_SCRIPT = `
local p, now, ttl = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local out = {}
for i = 4, #ARGV do
  local member = ARGV[i]
  local key = p .. 'art:' .. member
  local value = redis.call('GET', key)
  if value then
    redis.call('PEXPIRE', key, ttl, 'GT')
    redis.call('ZADD', p .. 'lru', 'GT', now, member)
    out[#out + 1] = value
    out[#out + 1] = redis.call('PTTL', key)
  else
    out[#out + 1] = false
    out[#out + 1] = -2
  end
end
return out
`;
