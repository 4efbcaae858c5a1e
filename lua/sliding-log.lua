#!lua
-- sliding-log.lua: one atomic sliding-window-log decision for one key.
--
-- KEYS[1]  the key's sorted set: one member per admitted unit, scored by its
--          admission time in microseconds of the server's clock.
-- ARGV[1]  limit    positive integer: the most units admitted in any window
-- ARGV[2]  window   window length in milliseconds, a positive integer
-- ARGV[3]  cost     units asked for, 1 <= cost <= limit
-- ARGV[4]  member   an id unique to this call; unit i is stored as member..':'..i
-- ARGV[5]  mode     'consume' records an admission; 'peek' decides and records nothing
-- ARGV[6]  deadline server time in microseconds after which nothing is recorded; 0 for none
--
-- Units scored in the future (leases, see lease.lua) count from the moment they are added until
-- their score is one window old.
--
-- Reply: { allowed, remaining, retryAfterMs, resetMs, nowUs }
--   allowed       1 when the cost fits (and, in 'consume' mode, was recorded), else 0; -1 past the
--                 deadline (the other fields are then 0 but nowUs)
--   remaining     units left in the window after this call
--   retryAfterMs  0 when allowed; else the exact wait, rounded up, until enough of the
--                 oldest units leave the window for this cost to fit
--   resetMs       time until the window holds no unit of this key (0 when empty)
--   nowUs         the server time of the decision, in microseconds
--
-- The time comes from the server (TIME), never from a caller, so clock skew between
-- application servers cannot widen the window. A denial records nothing. The key expires when
-- its newest unit leaves the window: one window after the last admission.
-- A call whose deadline has passed when the script runs records nothing and replies allowed = -1: its caller
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
local cost = tonumber(ARGV[3])
local member = ARGV[4]
local mode = ARGV[5]
local deadline = tonumber(ARGV[6])

local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
if deadline > 0 and now > deadline then
  return { -1, 0, 0, 0, now }
end
local window = window_ms * 1000

redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
local used = redis.call('ZCARD', key)

local function ms_until_gone(score)
  return math.ceil((tonumber(score) + window - now) / 1000)
end

if used + cost <= limit then
  if mode == 'peek' then
    local reset = 0
    if used > 0 then
      reset = ms_until_gone(redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2])
    end
    return { 1, limit - used, 0, reset, now }
  end
  -- ZADD in chunks: unpack() of a very large table overflows Lua's C stack.
  local args = {}
  for i = 1, cost do
    args[#args + 1] = now
    args[#args + 1] = member .. ':' .. i
    if #args >= 1000 or i == cost then
      redis.call('ZADD', key, unpack(args))
      args = {}
    end
  end
  -- The key lives until its newest unit leaves the window; a leased unit (lease.lua) may be scored
  -- in the future, so this is not always one window from now, and never shortens a lease's cover.
  local reset = ms_until_gone(redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2])
  redis.call('PEXPIRE', key, reset)
  return { 1, limit - used - cost, 0, reset, now }
end

-- Denied: the (used + cost - limit)-th oldest unit must leave before this cost fits.
local needed = used + cost - limit
local blocking = redis.call('ZRANGE', key, needed - 1, needed - 1, 'WITHSCORES')[2]
local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2]
local remaining = limit - used
if remaining < 0 then
  remaining = 0
end
return { 0, remaining, ms_until_gone(blocking), ms_until_gone(newest), now }
