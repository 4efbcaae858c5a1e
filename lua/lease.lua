#!lua
-- lease.lua: reserves up to `want` units of one key's window for one process, in one atomic call.
--
-- KEYS[1]  the key's sorted set (the same one sliding-log.lua decides on)
-- ARGV[1]  limit    positive integer: the most units admitted in any window
-- ARGV[2]  window   window length in milliseconds
-- ARGV[3]  want     the most units to reserve
-- ARGV[4]  min      the fewest units worth a lease (the cost of the call that asks): 1 <= min <= want
-- ARGV[5]  waitFor  on denial, report the wait until this many units fit: min <= waitFor <= limit
-- ARGV[6]  ttl      the lease's life in milliseconds: its units may be used until then
-- ARGV[7]  member   an id unique to this lease; unit i is stored as member..':'..i
-- ARGV[8]  deadline server time in microseconds after which nothing is reserved; 0 for none
--
-- Reply: { granted, remaining, retryAfterMs, resetMs, nowUs, scoreUs }
--   granted       units reserved: 0 (denied) or between min and want; -1 past the deadline
--   remaining     units left in the window after this call
--   retryAfterMs  0 when granted; else the exact wait, rounded up, until `waitFor` units fit
--   resetMs       time until the window holds no unit of this key (0 when empty)
--   nowUs         the server time of the decision, in microseconds
--   scoreUs       the score of every reserved unit: nowUs + ttl (0 when denied)
--
-- Why the invariant holds: each reserved unit is scored at the lease's expiry, not at the time it is
-- reserved. A unit used at any moment before expiry is therefore inside every window that contains
-- that moment, so the window's count always covers every admission; and units are only added when
-- the count, future-scored units included, leaves room for them. Unused units may be removed with
-- ZREM by their holder (they were never admissions). A denial records nothing.
-- A call whose deadline has passed when the script runs records nothing and replies granted = -1: its caller
-- has given up (a stalled or paused server runs the calls queued meanwhile, all of them late).
--
-- The `#!lua` line declares the script's flags (none): Redis 7 then refuses it while used memory is over
-- maxmemory, as it refuses any write, instead of letting its writes through.

if redis.replicate_commands then
  redis.replicate_commands()
end

local key = KEYS[1]
local limit = tonumber(ARGV[1])
local window_ms = tonumber(ARGV[2])
local want = tonumber(ARGV[3])
local min = tonumber(ARGV[4])
local wait_for = tonumber(ARGV[5])
local ttl_ms = tonumber(ARGV[6])
local member = ARGV[7]
local deadline = tonumber(ARGV[8])

local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
if deadline > 0 and now > deadline then
  return { -1, 0, 0, 0, now, 0 }
end
local window = window_ms * 1000

redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
local used = redis.call('ZCARD', key)
local available = limit - used

local function ms_until_gone(score)
  return math.ceil((tonumber(score) + window - now) / 1000)
end

if available >= min then
  local granted = math.min(want, available)
  local score = now + ttl_ms * 1000
  local args = {}
  for i = 1, granted do
    args[#args + 1] = score
    args[#args + 1] = member .. ':' .. i
    if #args >= 1000 or i == granted then
      redis.call('ZADD', key, unpack(args))
      args = {}
    end
  end
  local reset = ms_until_gone(redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2])
  redis.call('PEXPIRE', key, reset)
  return { granted, available - granted, 0, reset, now, score }
end

local needed = used + wait_for - limit
local blocking = redis.call('ZRANGE', key, needed - 1, needed - 1, 'WITHSCORES')[2]
local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2]
if available < 0 then
  available = 0
end
return { 0, available, ms_until_gone(blocking), ms_until_gone(newest), now, 0 }
