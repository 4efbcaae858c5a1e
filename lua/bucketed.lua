#!lua
-- bucketed.lua: one atomic decision on a window kept as sub-window counters, for limits too large
-- for a sliding-window log: memory is bounded by the bucket count, whatever the limit.
--
-- KEYS[1]  a hash: field = bucket index (server time in microseconds / bucket width), value = units; field 'h'
--          the hold: server time in microseconds until which every call is denied (a block or a pause)
-- ARGV[1]  limit    positive integer: the most units admitted in any window
-- ARGV[2]  window   window length in milliseconds
-- ARGV[3]  buckets  how many buckets one window spans (each one window / buckets wide)
-- ARGV[4]  cost     units asked for, 1 <= cost <= limit; for 'hold', the ms to hold the key
-- ARGV[5]  mode     'consume' records an admission; 'peek' decides and records nothing; 'hold' holds the key
--                   for `cost` ms (a longer hold stays); 'refund' removes `cost` units of an admission
-- ARGV[6]  deadline server time in microseconds after which nothing is recorded; 0 for none
-- ARGV[7]  block    ms: a consume denied for lack of room holds the key that long; 0 for none
-- ARGV[8]  recorded ('refund' only) the server µs of the admission whose `cost` units are removed from its bucket
-- KEYS[2]  ('refund' only, optional) the refund's marker, of KEYS[1]'s hash tag: set for as long as the bucket
--          counts, in the same run that removes the units; a refund that finds it set removes nothing and replies
--          { 0, 2, 0, 0, nowUs }
--
-- Reply: a table { allowed, remaining, retryAfterMs, resetMs, nowUs } (allowed -1 past the deadline). A held
-- key denies every call, with the wait until the hold ends (or until the cost fits, if later), and 0 remaining for
-- a consume (a peek reports the window's room, which tools read).
--
-- Text arguments and a table reply, unlike sliding-log.lua's binary ones: this script decides one window per run,
-- never a batch of calls, so its few arguments are not where its time goes; a refund is a mode here, where
-- sliding-log.lua has a release op.
--
-- Every bucket that overlaps the window (now - window, now] counts in full, the oldest one included,
-- so no window of time ever holds more than the limit; the price is some under-admission at bucket
-- edges. The wait on denial is exact for this model: the time until enough of the oldest buckets stop
-- overlapping the window. The server's clock decides; a denial records nothing.
-- A call whose deadline has passed when the script runs records nothing and replies allowed = -1: its caller
-- has given up (a stalled or paused server runs the calls queued meanwhile, all of them late).
--
-- The `#!lua` line declares the script's flags (none): Redis 7 then refuses it while used memory is over
-- maxmemory, as it refuses any write, instead of letting its writes through. scripts/gen-lua.mjs also makes a twin
-- flagged no-writes, which a read-only replica runs, for peeks ('peek'): a peek must never write.

if redis.replicate_commands then
  redis.replicate_commands()
end

local key = KEYS[1]
local limit = tonumber(ARGV[1])
local window_ms = tonumber(ARGV[2])
local buckets = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])
local mode = ARGV[5]
local deadline = tonumber(ARGV[6])
local block = tonumber(ARGV[7]) * 1000

local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
if deadline > 0 and now > deadline then
  return { -1, 0, 0, 0, now }
end
local window = window_ms * 1000
local width = math.max(1, math.floor(window / buckets))
local current = math.floor(now / width)
local oldest = math.floor((now - window) / width)

-- Live buckets, oldest first; drop the ones that no longer overlap the window (not on a peek: it writes nothing).
local live, stale, used, hold = {}, {}, 0, 0
local flat = redis.call('HGETALL', key)
for i = 1, #flat, 2 do
  local index = tonumber(flat[i])
  if index == nil then
    -- The hold field: dropped once it has ended.
    hold = tonumber(flat[i + 1])
    if hold <= now then
      stale[#stale + 1] = flat[i]
      hold = 0
    end
  elseif index < oldest then
    stale[#stale + 1] = flat[i]
  else
    live[#live + 1] = { index, tonumber(flat[i + 1]) }
    used = used + tonumber(flat[i + 1])
  end
end
if #stale > 0 and mode ~= 'peek' then
  redis.call('HDEL', key, unpack(stale))
end
table.sort(live, function(a, b)
  return a[1] < b[1]
end)

-- Bucket `index` stops overlapping the window one window after its end.
local function ms_until_out(index)
  return math.ceil(((index + 1) * width + window - now) / 1000)
end

-- Holds the key until `untl` unless it is held longer, and keeps the key that long.
local function hold_until(untl)
  if hold >= untl then
    return
  end
  hold = untl
  redis.call('HSET', key, 'h', string.format('%d', untl))
  local ttl = math.ceil((untl - now) / 1000)
  if #live > 0 then
    ttl = math.max(ttl, ms_until_out(live[#live][1]))
  end
  redis.call('PEXPIRE', key, ttl)
end

if mode == 'refund' then
  -- Removes up to `cost` units from the bucket of ARGV[8] (server µs), if it still overlaps the window.
  local marker = KEYS[2]
  if marker and redis.call('EXISTS', marker) == 1 then
    return { 0, 2, 0, 0, now }
  end
  local index = math.floor(tonumber(ARGV[8]) / width)
  local removed = 0
  for _, bucket in ipairs(live) do
    if bucket[1] == index then
      removed = math.min(cost, bucket[2])
    end
  end
  if removed > 0 then
    redis.call('HINCRBY', key, index, -removed)
    if marker then
      redis.call('SET', marker, '1', 'PX', ms_until_out(index))
    end
  end
  return { removed, 0, 0, 0, now }
end

if mode == 'hold' then
  hold_until(now + cost * 1000)
  return { 1, 0, 0, 0, now }
end

local reset_now = 0
if #live > 0 then
  reset_now = ms_until_out(live[#live][1])
end
local remaining = math.max(0, limit - used)
if hold > now then
  -- Held: denied until the hold ends, or until the cost fits if later; nothing is left meanwhile for a consume.
  local retry, freed = math.ceil((hold - now) / 1000), 0
  if used + cost > limit then
    for _, bucket in ipairs(live) do
      freed = freed + bucket[2]
      if used - freed + cost <= limit then
        retry = math.max(retry, ms_until_out(bucket[1]))
        break
      end
    end
  end
  return { 0, mode == 'peek' and remaining or 0, retry, reset_now, now }
end

if used + cost <= limit then
  if mode == 'peek' then
    local reset = 0
    if #live > 0 then
      reset = ms_until_out(live[#live][1])
    end
    return { 1, limit - used, 0, reset, now }
  end
  redis.call('HINCRBY', key, current, cost)
  local reset = ms_until_out(current)
  redis.call('PEXPIRE', key, reset)
  return { 1, limit - used - cost, 0, reset, now }
end

local freed, retry = 0, 0
for _, bucket in ipairs(live) do
  freed = freed + bucket[2]
  if used - freed + cost <= limit then
    retry = ms_until_out(bucket[1])
    break
  end
end
if mode == 'consume' and block > 0 then
  hold_until(now + block)
  remaining, retry = 0, math.max(retry, math.ceil(block / 1000))
end
return { 0, remaining, retry, reset_now, now }
