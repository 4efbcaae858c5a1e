#!lua
-- sliding-log-multi.lua: one atomic decision over several sliding-window logs (one per policy),
-- all or nothing: the cost is recorded in every window only if every window has room.
--
-- KEYS[i]  window i's sorted set; all keys must hash to one Redis Cluster slot (they share
--          the tenant's hash tag)
-- ARGV[1]  cost     units asked for, 1 <= cost <= every limit
-- ARGV[2]  member   an id unique to this call; unit j is stored as member..':'..j
-- ARGV[3]  mode     'consume' records an admission; 'peek' decides and records nothing
-- ARGV[4]  deadline server time in microseconds after which nothing is recorded; 0 for none
-- ARGV[3 + 2i]      limit of window i, a positive integer
-- ARGV[4 + 2i]      length of window i in milliseconds, a positive integer
--
-- Reply: { allowed, nowUs, then for each window i: allowed_i, remaining_i, retryAfterMs_i, resetMs_i }
--   allowed         1 when every window has room (and, in 'consume' mode, the cost was recorded in all);
--                   -1 past the deadline, and then nothing follows nowUs
--   allowed_i       1 when window i alone has room
--   remaining_i     units left in window i after this call
--   retryAfterMs_i  0 when window i has room; else the exact wait, rounded up, until it has
--   resetMs_i       time until window i holds no unit of its key (0 when empty)
--
-- The same rules as sliding-log.lua: the server's clock, unique members, PEXPIRE until the
-- newest unit leaves the window, and a denial records nothing.
-- A call whose deadline has passed when the script runs records nothing and replies { -1, nowUs }: its caller
-- has given up (a stalled or paused server runs the calls queued meanwhile, all of them late).
--
-- The `#!lua` line declares the script's flags (none): Redis 7 then refuses it while used memory is over
-- maxmemory, as it refuses any write, instead of letting its writes through.

if redis.replicate_commands then
  redis.replicate_commands()
end

local cost = tonumber(ARGV[1])
local member = ARGV[2]
local mode = ARGV[3]
local deadline = tonumber(ARGV[4])

local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
if deadline > 0 and now > deadline then
  return { -1, now }
end

local limits, windows, used = {}, {}, {}
local fits = true
for i, key in ipairs(KEYS) do
  limits[i] = tonumber(ARGV[3 + 2 * i])
  windows[i] = tonumber(ARGV[4 + 2 * i])
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now - windows[i] * 1000)
  used[i] = redis.call('ZCARD', key)
  if used[i] + cost > limits[i] then
    fits = false
  end
end

local function ms_until_gone(key, index, window)
  local score = redis.call('ZRANGE', key, index, index, 'WITHSCORES')[2]
  if not score then
    return 0
  end
  return math.ceil((tonumber(score) + window * 1000 - now) / 1000)
end

local recorded = fits and mode == 'consume'
if recorded then
  for i, key in ipairs(KEYS) do
    -- ZADD in chunks: unpack() of a very large table overflows Lua's C stack.
    local args = {}
    for j = 1, cost do
      args[#args + 1] = now
      args[#args + 1] = member .. ':' .. j
      if #args >= 1000 or j == cost then
        redis.call('ZADD', key, unpack(args))
        args = {}
      end
    end
    redis.call('PEXPIRE', key, ms_until_gone(key, -1, windows[i]))
  end
end

local reply = { fits and 1 or 0, now }
for i, key in ipairs(KEYS) do
  local reset = ms_until_gone(key, -1, windows[i])
  if used[i] + cost <= limits[i] then
    local remaining = limits[i] - used[i]
    if recorded then
      remaining = remaining - cost
    end
    reply[#reply + 1] = 1
    reply[#reply + 1] = remaining
    reply[#reply + 1] = 0
    reply[#reply + 1] = reset
  else
    local remaining = limits[i] - used[i]
    if remaining < 0 then
      remaining = 0
    end
    reply[#reply + 1] = 0
    reply[#reply + 1] = remaining
    reply[#reply + 1] = ms_until_gone(key, used[i] + cost - limits[i] - 1, windows[i])
    reply[#reply + 1] = reset
  end
end
return reply
