#!lua
-- sliding-log.lua: every sliding-window-log operation, atomic, on one or more keys (one per policy).
--
-- KEYS[i]     window i's log (format below); the keys of one call share the tenant's hash tag
-- ARGV[1]     op        'c' consume: record `units` in every window, or in none if one lacks room
--                       'p' peek: decide for `units`, record nothing
--                       'l' lease: reserve between `min` and `units` units of KEYS[1] (see below)
--                       'r' release: remove `units` units recorded at ARGV[4] from KEYS[1]
-- ARGV[2]     units     the cost (c, p), the most units to reserve (l), the units to remove (r)
-- ARGV[3]     deadline  server time in µs after which nothing is recorded; 0 for none
-- ARGV[2+2i]  limit     of window i, a positive integer            (c, p, l)
-- ARGV[3+2i]  window    of window i, in ms, a positive integer     (c, p, l)
-- ARGV[6..8]  (l only)  min (the fewest units worth it), waitFor (on denial, the wait reported is until this
--                       many fit), ttl (ms: the lease's units may be used until now + ttl)
-- ARGV[4..5]  (r only)  the time the units were recorded at (server µs: a reply's recordedUs), and the window in ms
--
-- Reply: one binary string, big-endian: '>bdI4', then '>bI4I6I6d' per window (none for 'r', nor past the deadline)
--   status      1 admitted (granted, released) everywhere; 0 denied (nothing released); -1 past the deadline
--   nowUs       the server time of the decision, in µs (a double)
--   units       units recorded (c, l) or removed (r); 0 when none
--   then for each window i: allowed_i (it alone has room), remaining_i (units left after this call),
--   retryAfterMs_i (0 when it has room; else the exact wait, rounded up, until the cost fits: for a lease,
--   until `waitFor` fits), resetMs_i (until the window holds no unit of the key; 0 when empty), recordedUs_i
--   (the time this call's units were recorded at, in µs, which a release names; 0 when none were)
--
-- The log. A string: entries of 10 bytes ('>I6I4': time in µs since the log's base, and the running total of
-- units through this entry, modulo 2^32), oldest first, then a 77-byte header:
--   '>dI4I4I4I4I6I6B' base (server µs), n (entries), head (entries before it are out of every window), cum0
--   (running total before head), total (running total through the newest entry), newest (its time), expires
--   (when the key's TTL ends, as last set), kc (cached entries), then 4 cached entries: copies of head..head+kc-1.
-- One GETRANGE of the header answers a hot key's denial; an admission writes its entry and the header with one
-- SETRANGE. An entry's units are interchangeable, so calls in the same microsecond share one entry, and work per
-- call does not grow with its cost. The window's units are total - (running total before the first live entry);
-- the n-th oldest is found by the running totals (the cache, then a binary search), so a denial's wait is exact.
-- Units are recorded at max(now, newest): a lease's units are recorded at its expiry, in the future, and a call
-- made while such a lease is out is recorded at that time too, counting a little longer than it needs (never
-- shorter), so entries stay in time order and the window never holds more than the limit.
-- Entries out of the window are skipped by `head` and dropped by a rewrite once they outnumber the live ones.
-- The key's TTL is set one window beyond the newest entry's exit, so PEXPIRE runs once a window, not per call.
--
-- The server's clock decides (TIME): clock skew between application servers cannot widen a window.
-- A denial records nothing; a call past its deadline records nothing (its caller gave up).
-- The `#!lua` line declares the script's flags (none): Redis 7 then refuses it while used memory is over
-- maxmemory, as it refuses any write, instead of letting its writes through.

local E, H, K = 10, 77, 4
local HEADER = '>dI4I4I4I4I6I6B'
local HEADER_AND_CACHE = HEADER .. 'I6I4I6I4I6I4I6I4'
local ENTRY = '>I6I4'
local M32 = 4294967296
-- A log's times are µs since its base in 6 bytes; past this age, a rewrite moves the base.
local REBASE_AFTER = 2 ^ 46
-- A release rewrites the entries recorded after the one it changes: at most this many.
local MAX_RELEASE_TAIL = 2000

local op = ARGV[1]
local units = tonumber(ARGV[2])
local deadline = tonumber(ARGV[3])

local time = redis.call('TIME')
local now = time[1] * 1000000 + time[2]
if deadline > 0 and now > deadline then
  return struct.pack('>bdI4', -1, now, 0)
end

local function entries_at(log, from, count)
  local raw = redis.call('GETRANGE', log.key, tostring(from * E), tostring((from + count) * E - 1))
  local ts, cum, pos = {}, {}, 1
  for i = 1, count do
    ts[i], cum[i], pos = struct.unpack(ENTRY, raw, pos)
  end
  return ts, cum
end

-- The first entry in [lo, hi] for which `after(ts, cum)` holds (it holds for hi): a binary search by GETRANGE.
local function search(log, lo, hi, after)
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    local ts, cum = entries_at(log, mid, 1)
    if after(ts[1], cum[1]) then
      hi = mid
    else
      lo = mid + 1
    end
  end
  return lo
end

-- Reads a key's log and moves its head to the first entry inside the window (in memory: a write stores it).
local function open(key, window)
  local log = { key = key, window = window }
  local raw = redis.call('GETRANGE', key, '-77', '-1')
  if #raw ~= H then
    log.n = 0
    return log
  end
  local t1, c1, t2, c2, t3, c3, t4, c4
  log.base, log.n, log.head, log.cum0, log.total, log.newest, log.expires, log.kc, t1, c1, t2, c2, t3, c3, t4, c4 =
    struct.unpack(HEADER_AND_CACHE, raw)
  log.now = now - log.base
  local edge = log.now - window
  if log.newest <= edge then
    -- Every entry has left the window: the log is empty, and a write starts it anew.
    log.n = 0
    return log
  end
  local ts, cum = { t1, t2, t3, t4 }, { c1, c2, c3, c4 }
  local kc = log.kc
  local live = 1
  while live <= kc and ts[live] <= edge do
    live = live + 1
  end
  if live > kc then
    -- The cache holds no live entry: the first is further on, read in a chunk (or found by a binary search).
    local from = log.head + kc
    local before = kc > 0 and cum[kc] or log.cum0
    local count = math.min(2 * K, log.n - from)
    local cts, ccum = entries_at(log, from, count)
    local first = 1
    while cts[first] <= edge do
      before = ccum[first]
      first = first + 1
      if first > count then
        break
      end
    end
    if first > count then
      from = search(log, from + count, log.n - 1, function(t)
        return t > edge
      end)
      cts, ccum = entries_at(log, from - 1, math.min(K, log.n - from) + 1)
      before = table.remove(ccum, 1)
      table.remove(cts, 1)
      first = 1
    end
    log.head = from + first - 1
    log.cum0 = before
    ts, cum, kc = {}, {}, 0
    for i = first, math.min(#cts, first + K - 1) do
      kc = kc + 1
      ts[kc], cum[kc] = cts[i], ccum[i]
    end
  elseif live > 1 then
    log.head = log.head + live - 1
    log.cum0 = cum[live - 1]
    for i = live, kc do
      ts[i - live + 1], cum[i - live + 1] = ts[i], cum[i]
    end
    kc = kc - live + 1
  end
  log.kc, log.ts, log.cum = kc, ts, cum
  log.used = (log.total - log.cum0) % M32
  return log
end

local function ms_until_out(log, ts)
  return math.ceil((ts + log.window - log.now) / 1000)
end

-- The time of the entry that holds the `nth` oldest unit inside the window.
local function time_of_unit(log, nth)
  for i = 1, log.kc do
    if (log.cum[i] - log.cum0) % M32 >= nth then
      return log.ts[i]
    end
  end
  local at = search(log, log.head + log.kc, log.n - 1, function(_, cum)
    return (cum - log.cum0) % M32 >= nth
  end)
  local ts = entries_at(log, at, 1)
  return ts[1]
end

-- The answer for `cost` units in one window (before anything is recorded).
local function answer(log, limit, cost)
  if log.n == 0 then
    return { 1, limit, 0, 0 }
  end
  local used = log.used
  -- A release can leave the newest entry empty: it still bounds the reset, unless the window holds nothing.
  local reset = used > 0 and ms_until_out(log, log.newest) or 0
  if used + cost <= limit then
    return { 1, limit - used, 0, reset }
  end
  return { 0, math.max(0, limit - used), ms_until_out(log, time_of_unit(log, used + cost - limit)), reset }
end

local function expire(log, ms)
  redis.call('PEXPIRE', log.key, tostring(ms))
end

local function header(log)
  local ts, cum = log.ts, log.cum
  local cache = {}
  for i = 1, K do
    cache[i] = struct.pack(ENTRY, ts[i] or 0, cum[i] or 0)
  end
  return struct.pack(HEADER, log.base, log.n, log.head, log.cum0, log.total, log.newest, log.expires, log.kc)
    .. table.concat(cache)
end

-- Records `count` units at `at` (server µs, >= now); returns the time they were recorded at.
local function record(log, count, at)
  local window = log.window
  if log.n == 0 then
    log.base, log.now = now, 0
    local ts = at - now
    log.n, log.head, log.cum0, log.total, log.newest, log.kc = 1, 0, 0, count % M32, ts, 1
    log.ts, log.cum = { ts }, { log.total }
    local ttl = math.ceil((ts + 2 * window) / 1000)
    log.expires = ttl * 1000
    redis.call('SET', log.key, struct.pack(ENTRY, ts, log.total) .. header(log))
    expire(log, ttl)
    return at
  end
  local ts = math.max(at - log.base, log.newest)
  local n, head = log.n, log.head
  -- Out-of-window entries outnumber the live ones (or the base is old): rewrite the log without them.
  local compact = (head >= 64 and head * 2 > n) or log.now > REBASE_AFTER
  local merge = ts == log.newest
  log.total = (log.total + count) % M32
  log.newest = ts
  local kc = log.kc
  if merge then
    if head + kc == n then
      log.cum[kc] = log.total
    end
  else
    if head + kc == n and kc < K then
      kc = kc + 1
      log.ts[kc], log.cum[kc] = ts, log.total
      log.kc = kc
    end
    n = n + 1
  end
  local last = struct.pack(ENTRY, ts, log.total)
  if log.expires < ts + window then
    local ttl = math.ceil((ts + 2 * window - log.now) / 1000)
    log.expires = log.now + ttl * 1000
    expire(log, ttl)
  end
  if compact then
    local body = redis.call('GETRANGE', log.key, tostring(head * E), tostring((log.n - (merge and 1 or 0)) * E - 1))
    log.n, log.head = n - head, 0
    if log.now > REBASE_AFTER then
      -- Rare (a log written to for years): times move to a new base, the oldest live entry's, entry by entry.
      local shift, parts, pos = log.ts[1], {}, 1
      body = body .. last
      for i = 1, log.n do
        local t, c
        t, c, pos = struct.unpack(ENTRY, body, pos)
        parts[i] = struct.pack(ENTRY, math.max(0, t - shift), c)
      end
      body, last = table.concat(parts), ''
      for i = 1, log.kc do
        log.ts[i] = math.max(0, log.ts[i] - shift)
      end
      log.base, log.newest, log.now = log.base + shift, log.newest - shift, log.now - shift
      log.expires = math.max(0, log.expires - shift)
      ts = ts - shift
    end
    redis.call('SET', log.key, body .. last .. header(log), 'KEEPTTL')
  else
    log.n = n
    redis.call('SETRANGE', log.key, tostring((n - 1) * E), last .. header(log))
  end
  return log.base + ts
end

-- Removes up to `count` units recorded at `at` (server µs); returns how many it removed.
local function release(log, count, at)
  if log.n == 0 then
    return 0
  end
  local ts = at - log.base
  if ts <= log.now - log.window or ts > log.newest then
    return 0
  end
  local first = search(log, log.head, log.n - 1, function(t)
    return t >= ts
  end)
  if log.n - first > MAX_RELEASE_TAIL then
    return 0
  end
  local from = math.max(first - 1, 0)
  local tss, cums = entries_at(log, from, log.n - from)
  local i = first - from + 1
  if tss[i] ~= ts then
    return 0
  end
  local before = first > 0 and cums[1] or log.cum0
  local removed = math.min(count, (cums[i] - before) % M32)
  if removed == 0 then
    return 0
  end
  local parts = {}
  for j = i, #tss do
    parts[#parts + 1] = struct.pack(ENTRY, tss[j], (cums[j] - removed) % M32)
  end
  for j = 1, log.kc do
    if log.head + j - 1 >= first then
      log.cum[j] = (log.cum[j] - removed) % M32
    end
  end
  log.total = (log.total - removed) % M32
  redis.call('SETRANGE', log.key, tostring(first * E), table.concat(parts) .. header(log))
  return removed
end

local function window_reply(a, recorded)
  return struct.pack('>bI4I6I6d', a[1], a[2], a[3], a[4], recorded)
end

if op == 'r' then
  local log = open(KEYS[1], tonumber(ARGV[5]) * 1000)
  local removed = release(log, units, tonumber(ARGV[4]))
  return struct.pack('>bdI4', removed > 0 and 1 or 0, now, removed)
end

if op == 'l' then
  local limit, min, wait_for = tonumber(ARGV[4]), tonumber(ARGV[6]), tonumber(ARGV[7])
  local log = open(KEYS[1], tonumber(ARGV[5]) * 1000)
  local used = log.used or 0
  local available = limit - used
  if available >= min then
    local granted = math.min(units, available)
    local at = record(log, granted, now + tonumber(ARGV[8]) * 1000)
    return struct.pack('>bdI4', 1, now, granted)
      .. window_reply({ 1, available - granted, 0, ms_until_out(log, log.newest) }, at)
  end
  return struct.pack('>bdI4', 0, now, 0) .. window_reply(answer(log, limit, wait_for), 0)
end

local logs, answers, fits = {}, {}, true
for i, key in ipairs(KEYS) do
  local limit = tonumber(ARGV[2 + 2 * i])
  local log = open(key, tonumber(ARGV[3 + 2 * i]) * 1000)
  local a = answer(log, limit, units)
  logs[i], answers[i] = log, a
  if a[1] == 0 then
    fits = false
  end
end

local recorded = fits and op == 'c'
local reply = { struct.pack('>bdI4', fits and 1 or 0, now, recorded and units or 0) }
for i, log in ipairs(logs) do
  local a, at = answers[i], 0
  if recorded then
    at = record(log, units, now)
    a[2], a[4] = a[2] - units, ms_until_out(log, log.newest)
  end
  reply[i + 1] = window_reply(a, at)
end
return table.concat(reply)
