#!lua
-- sliding-log.lua: every sliding-window-log operation, atomic, on one or more keys (one per policy); one call or
-- several, each decided as if made alone, all at the same server time (a store sends the calls its process makes
-- at once in one script run: one round trip, one TIME).
--
-- KEYS        every call's keys, call after call: a call's keys are its windows' logs (format below) and share
--             its tenant's hash tag; the keys of one run share one slot
-- ARGV        the calls, in order: each ARGV one call or several concatenated (a store sends a run's calls as one
--             argument: a client encodes each argument it sends). A call is binary, big-endian (numbers as doubles,
--             so that none is parsed from text); it names one key per window (c, p, C, P, z), per entry released
--             or settled (r, s), per slot (f, e), and one for a lease (l):
--   '>Hc1dd'    size, op, units, deadline:
--     size      the call's length in bytes, these two included
--     op        'c' consume: record `units` in every enforced window, or in none if one lacks room
--               'p' peek: decide for `units`, record nothing
--               'C', 'P' consume, peek with a cost per window, and in-flight windows (slots: see below)
--               'l' lease: reserve between `min` and `units` units of its one key (see below)
--               'r' release: remove units recorded at a given time from each key (a refund, under its marker)
--               's' settle: add each key's delta to its units recorded at a given time (or remove -delta)
--               'f' free: free slots, then PUBLISH their keys on the channel named by the call's last bytes
--               'e' extend: keep slots held until `units` ms from now at least
--               'z' hold: deny every call on each key for `units` ms (a pause), fleet-wide; a share window's
--               key (flags 8) is capped to its limit instead (see Shares)
--     units     the cost (c, p; C, P: the largest window's), the most units to reserve (l), the slots (f), the ms
--               (e, z); 0 (r, s)
--     deadline  server time in µs after which nothing is recorded; 0 for none
--   then per key (c, p, l, z) '>dddB': limit (a positive integer), window (ms, a positive integer), block (ms:
--               once denied, the key is held that long; 0 for none), shadow (1 for a shadow window, several
--               windows only: see below)
--   or per key (C, P) '>ddddB': limit, window, block, units (this window's cost), flags (1 shadow, 2 slots,
--               4 a calendar period: four period starts follow, '>dddd' ms by the caller's clock: the previous
--               period's, the current one's, the next one's and the one after; see Periods below; 8 a share
--               window: see Shares below)
--   or per key (f, e) '>dd': a slot's id, 0
--   or per key (s) '>ddd': the time its units were recorded at, its window (ms), delta; its last key is its
--               marker with 0, 0, 0 (see the markers below)
--   then (l only) '>ddd': min (the fewest units worth it), waitFor (on denial, the wait reported is until this
--               many fit), ttl (ms: the lease's units may be used until now + ttl; at most 2^39 µs, or 2^47 µs
--               with 10-byte entries: a longer lease fails, as an error about its key would)
--   or per key (r) '>ddd': the time its units were recorded at (server µs: a reply's recordedUs), its window
--               (ms), the units to remove; a refund's last key is its marker, with 0, 0, 0 (see the markers below)
--   (r, s, z) a window of -1 ms names a calendar period's count
--
-- Reply: one binary string, big-endian: each call's reply, call after call: '>bdI4', then '>bI4I6I6d' per window
-- ('>I4' for 's': the units each window holds after it; none for 'r', 'f', 'e' and 'z', nor past the deadline,
-- nor after an error)
--   status      1 admitted (granted, released, held) everywhere it is enforced; 0 denied (nothing released);
--               -1 past the deadline; -2 an error about one of its keys (WRONGTYPE, say), which failed that call
--               alone: its message follows, `units` bytes long; for 'r' only: 2 its marker says refunded already
--               (nothing released), 3 an entry has more than MAX_RELEASE_TAIL entries after it (nothing released);
--               for 's' as for 'r' (0: no key holds the entry, nothing changed; 2: settled already), and 4 its
--               marker says refunded (nothing changed)
--   nowUs       the server time of the decision, in µs (a double)
--   units       units recorded (c, C, l), removed (r: the most removed from one key) or moved (s: the most, either
--               way), slots freed (f) or still held (e); 0 when none
--   then for each window i: allowed_i (it alone has room), remaining_i (units left after this call; for a
--   consume or a lease, 0 while the key is held: every call is denied; a peek reports the window's room),
--   retryAfterMs_i (0 when it has room; else the exact wait, rounded up, until the cost fits and the key is not
--   held: for a lease, until `waitFor` fits), resetMs_i (until the window holds no unit of the key; 0 when
--   empty), recordedUs_i (the time this call's units were recorded at, in µs, which a release names; 0 when
--   none were)
--
-- The log. A string: entries of 9 bytes ('>I5I4': time in µs since the log's base, and the running total of
-- units through this entry, modulo 2^32), oldest first, then an 85-byte header. A window longer than 2^37 µs
-- (about 38 hours) keeps times in 6 bytes: its entries are 10 bytes ('>I6I4'). A key's window is in its name, so
-- a key keeps one entry size all its life.
--   '>dI4I4I4I4I6I6dB' base (server µs), n (entries), head (entries before it are out of every window), cum0
--   (running total before head), total (running total through the newest entry), newest (its time), expires
--   (when the key's TTL ends, as last set), hold (server µs until which every call is denied: a block or a
--   pause; 0 for none), kc (cached entries), then 4 cached entries: copies of head..head+kc-1.
-- One GETRANGE of the header answers a hot key's denial; an admission writes its entry and the header with one
-- SETRANGE. An entry's units are interchangeable, so calls in the same microsecond share one entry, and work per
-- call does not grow with its cost. The window's units are total - (running total before the first live entry);
-- the n-th oldest is found by the running totals (the cache, then a binary search), so a denial's wait is exact.
-- Units are recorded at max(now, newest): a lease's units are recorded at its expiry, in the future, and a call
-- made while such a lease is out is recorded at that time too, counting a little longer than it needs (never
-- shorter), so entries stay in time order and the window never holds more than the limit.
-- Entries out of the window are skipped by `head` and dropped by a rewrite once they outnumber the live ones, or
-- once the base is older than 2^38 µs (2^46 µs with 6-byte times), when the rewrite also moves the base to the
-- oldest live entry: a time then stays under 2^38 µs + the longest lease (2^39 µs), inside 5 bytes.
-- The key's TTL is set one window beyond the newest entry's exit (and past its hold), so PEXPIRE runs once a
-- window, not per call. A held key with no entry is a header alone (n = 0).
--
-- Markers: one key per admission settled or refunded (of the first key's hash tag), the last key of its settle and
-- of its refund, set in the run that applies either, for as long as its units could count: 's' and the units the
-- settle moved in each window ('>d' each), or 'r' once refunded. A settle or refund sent again (a retry after a
-- timeout) then changes nothing; a refund also removes what the settle moved, whether or not its caller heard the
-- settle's answer; a settle after the refund changes nothing.
--
-- Holds: a window with a block is held for that long when it denies a consume for lack of room (a denial
-- because of a hold does not extend it); 'z' holds keys for a pause, extending a shorter hold, never shortening
-- one. A held key denies consumes, peeks and leases, with the wait until the hold ends (or until the cost fits,
-- if later); a held share window is enforced with its limit instead (see Shares).
-- Shadow windows (a call of several): their decision is made and reported, but the call's admission depends on
-- the enforced windows only; a shadow window records the call's units when the call is admitted and it has room
-- itself, as it would if it were enforced.
-- In-flight windows (slots, C and P only): a ZSET, each member a slot's id ('%d' of the server µs it was taken at,
-- the next integer up if taken already), its score the slot's end (server µs; live while ahead of now). A call
-- takes one slot whatever its cost: room is a live count under the limit, the wait until enough slots end for one
-- more, the reset until the last ends; recordedUs_i is the slot's id. The key's TTL is its latest end. A consume,
-- free or extend removes the ended slots of the keys it touches. 'f' and 'e' count a slot held only while live.
--
-- Shares (a priority class's share of a limit, flags 8, a sliding log): a share window records the call's units
-- whenever the call is admitted, room or not, and denies nothing while its key is not held. While it is held (a
-- 'z' hold: a higher class waits), it admits only a call whose units fit in its limit (the class's own use); a
-- denial's wait is the earlier of the hold's end and when the cost fits (the hold's end for a cost over the limit).
-- Its hold caps the class to its share: it never denies every call, as a pause does. Twin: memory/decisions.ts.
-- Periods (a calendar quota, flags 4): the key is '>dddd': its period's start and end (server µs), the units admitted
-- in it, a hold (server µs; 0 for none). The caller's four starts bound three periods; the one that holds the
-- server's now is decided in (a caller whose clock is off by less than a period still counts on the server's), and a
-- count of any other period is 0: a new period starts over. Room is count + cost <= limit; a denial waits, and the
-- reset counts, until the period's end. The key expires at its period's end (or its hold's, if later). A release or
-- settle moves the count if the units' recorded time is in its period, still current. Twin: store/period-count.ts.
-- The server's clock decides (TIME): clock skew between application servers cannot widen a window.
-- A denial records nothing; a call past its deadline records nothing (its caller gave up).
-- The `#!lua` line declares the script's flags (none): Redis 7 then refuses it while used memory is over
-- maxmemory, as it refuses any write, instead of letting its writes through. scripts/gen-lua.mjs also makes a twin
-- flagged no-writes, which a read-only replica runs, for peeks ('p' and 'P'): a peek must never write.

-- The layout constants (H, K, the entry sizes, NARROW, COMPACT_AT, MAX_RELEASE_TAIL) are written here alone:
-- scripts/gen-lua.mjs checks them against the formats they size and gives them to TypeScript code (the memory
-- store's log follows the same compaction and release rules) in store/sliding-log-layout.generated.ts.
local H, K = 85, 4
-- GETRANGE's start of the header: the last H bytes.
local HEADER_AT = '-85'
local HEADER = '>dI4I4I4I4I6I6dBI6I4I6I4I6I4I6I4'
-- The header to its first cached entry, then the other three: a hot key's denial needs only the first part.
local HEADER_FIRST, HEADER_REST = '>dI4I4I4I4I6I6dBI6I4', '>I6I4I6I4I6I4'
-- A call (see ARGV above).
local CALL, WINDOW, LEASE = '>Hc1dd', '>dddB', '>dddBddd'
-- A window of a call with a cost per window (C, P), and a period window's starts after it (flags 4).
local MIXED_WINDOW, STARTS = '>ddddB', '>dddd'
-- A period's count.
local PERIOD = '>dddd'
-- A call and its first window (one unpack: most calls have one).
local CALL_WINDOW, CALL_WINDOW_SIZE = '>Hc1ddddd', 43
-- Entries: 9 bytes, or 10 for a window over NARROW µs, and an entry with the header after it (what an admission
-- writes); past REBASE µs, a rewrite moves the base.
local NARROW, NARROW_E, NARROW_ENTRY, NARROW_ENTRY_HEADER, NARROW_REBASE =
  2 ^ 37, 9, '>I5I4', '>I5I4dI4I4I4I4I6I6dBI6I4I6I4I6I4I6I4', 2 ^ 38
local WIDE_E, WIDE_ENTRY, WIDE_ENTRY_HEADER, WIDE_REBASE = 10, '>I6I4', '>I6I4dI4I4I4I4I6I6dBI6I4I6I4I6I4I6I4', 2 ^ 46
-- The longest lease (µs) whose expiry an entry holds, past a base up to REBASE old (a limiter's is at most its window).
local NARROW_LEASE, WIDE_LEASE = 2 ^ 39, 2 ^ 47
local REPLY = '>bdI4bI4I6I6d'
local M32 = 4294967296
-- A release rewrites the entries recorded after the one it changes: at most this many (more: it releases nothing,
-- and says so), so that its work stays bounded.
local MAX_RELEASE_TAIL = 2000
-- A log is rewritten without its out-of-window entries once at least this many have left and they outnumber the
-- live ones.
local COMPACT_AT = 64
-- The entries a hot key's call reads when its window slid past more than the next few (a burst leaving it).
local LONG_READ = 128
local pack, unpack, ceil = struct.pack, struct.unpack, math.ceil
-- Offsets go to Redis as strings (a number would be formatted with %.17g); '%d' formats faster than tostring.
local format = string.format

local args = #ARGV
local time = redis.call('TIME')
local now = time[1] * 1000000 + time[2]

-- The fast path's view of one key (seen_key): its header, decoded (`exists` false for no key), as the fast path last
-- read it, moved its head or wrote it. Within a run it stays there for the next call on that key, and the fast path
-- holds back its last write to the key (due: the newest entry and the header, of due_header's format, at due_at)
-- until a call needs another key, the general code runs or the run ends: the calls of a run on one hot key then
-- read it once, decode it once and write it once (they all record at the same time, so each admission after the
-- first changes the same entry and the header). `single`: the run is one call.
local seen_key, due_header, due_at, due, write_due, single
local exists, base, n, head, cum0, total, newest, expires, hold, kc, t1, c1, t2, c2, t3, c3, t4, c4

-- Each call in turn, at the same server time: a call's keys follow the previous call's. An error about a key ends
-- its call before it writes anything (the general code reads every key before it writes one; the fast path fails on
-- its first read), so the other calls are decided as if it had been made alone. The fast path is written inline, in
-- the loop: a hot denial does too little work to pay for a function call.
local general, replies
local k = 1
for a = 1, args do
  local A = ARGV[a]
  local pos = 1
  while pos <= #A do
    local size, op, units, deadline, cursor, limit, window, block
    if #A - pos >= CALL_WINDOW_SIZE - 1 then
      -- Room for a call of one window: read with it (what follows may be another call's, used only for one window).
      size, op, units, deadline, limit, window, block = unpack(CALL_WINDOW, A, pos)
      cursor = pos + 19
    else
      size, op, units, deadline, cursor = unpack(CALL, A, pos)
    end
    if size < 19 then
      -- Not a call this script's callers encode: stop, rather than read the same bytes forever.
      return redis.error_reply('ERR sliding-log.lua: a call of ' .. size .. ' bytes is shorter than its header')
    end
    if single == nil then
      single = args == 1 and size == #A
    end
    -- Its keys: one per window of 25 bytes (c, p, z) or 33 (C, P), per entry of 16 bytes (e) or 24 (r, s); a lease's
    -- one; a free's `units` (its channel follows).
    local nk = (size - 19) / 25
    if op == 'C' or op == 'P' then
      -- 33 bytes per window, 65 for a period's (its flags, the window's last byte, say which).
      nk = 0
      local at = pos + 19
      while at < pos + size do
        nk = nk + 1
        at = at + (string.byte(A, at + 32) % 8 >= 4 and 65 or 33)
      end
    elseif op ~= 'c' and op ~= 'p' then
      nk = op == 'l' and 1
        or op == 'f' and units
        or (size - 19) / ((op == 's' or op == 'r') and 24 or op == 'z' and 25 or 16)
    end
    -- `at`: a denial by the fast path, whose reply follows the loop below (the time of the entry that must leave the
    -- window first, `used` the units in the window).
    local reply, at, used, rel
    -- One window, consume or peek, on a key not held: the common call, answered in straight-line code from the
    -- header (and, when the cached entries have all left the window, one read of the next few, or of the next
    -- LONG_READ if those have left too). Anything rarer (a hold, a block due, a rewrite due, a wait beyond the cached
    -- entries, no live entry in those reads) falls through to the general code below, which reads the header again
    -- and handles every case; nothing is written before.
    -- Each rule the fast path applies is also the general code's, and each such piece names its twin ("Twin:"). A
    -- test-only copy of the script with the gate below always true (test/support/general-path-script.ts) runs every
    -- model schedule and batch fuzz case beside this one, comparing replies and stored bytes.
    repeat
      if deadline > 0 and now > deadline then
        reply = pack('>bdI4', -1, now, 0)
        break
      end
      -- The fast path's gate.
      if nk ~= 1 or (op ~= 'c' and op ~= 'p') then
        break
      end
      local key = KEYS[k]
      window = window * 1000
      local raw, rest, edge
      if key ~= seen_key then
        if due then
          write_due()
        end
        raw = redis.pcall('GETRANGE', key, HEADER_AT, '-1')
        if type(raw) ~= 'string' then
          -- An error about this key (WRONGTYPE, say): it fails this call alone, its message after the status.
          local message = tostring(raw.err)
          reply = pack('>bdI4', -2, now, #message) .. message
          break
        end
        exists = #raw == H
        if single then
          -- A lone call reads the cached entries after the first only if it is not a hot key's denial.
          if exists then
            base, n, head, cum0, total, newest, expires, hold, kc, t1, c1, rest = unpack(HEADER_FIRST, raw)
          end
        else
          if exists then
            base, n, head, cum0, total, newest, expires, hold, kc, t1, c1, t2, c2, t3, c3, t4, c4 = unpack(HEADER, raw)
          end
          seen_key = key
        end
      end
      if exists then
        rel = now - base
        edge = rel - window
        if hold <= now and kc > 0 and t1 > edge and n > 0 and newest > edge and (op == 'p' or block == 0) then
          -- The hot key's denial: the first cached entry is live, and it alone makes room for the cost (the denial from
          -- the cached entries below, before reading the rest of them).
          used = (total - cum0) % M32
          if used + units > limit and (c1 - cum0) % M32 >= used + units - limit then
            at = t1
            break
          end
        end
        if rest then
          t2, c2, t3, c3, t4, c4 = unpack(HEADER_REST, raw, rest)
        end
      end
      -- The key's entries: their size and format, and the age of the base past which a rewrite moves it.
      local e, entry, entry_header, rebase = WIDE_E, WIDE_ENTRY, WIDE_ENTRY_HEADER, WIDE_REBASE
      if window <= NARROW then
        e, entry, entry_header, rebase = NARROW_E, NARROW_ENTRY, NARROW_ENTRY_HEADER, NARROW_REBASE
      end
      if not exists or (hold <= now and (n == 0 or newest <= edge)) then
        -- A new key, or one with no hold whose entries have all left the window: it starts anew.
        -- Twin: record() of an empty log.
        if op == 'p' then
          reply = pack(REPLY, 1, now, 0, 1, limit, 0, 0, 0)
          break
        end
        local total1 = units % M32
        local ttl = ceil(2 * window / 1000)
        local log =
          pack(entry_header, 0, total1, now, 1, 0, 0, total1, 0, ttl * 1000, 0, 1, 0, total1, 0, 0, 0, 0, 0, 0)
        if due then
          write_due()
        end
        redis.call('SET', key, log, 'PX', format('%d', ttl))
        if not single then
          exists, base, n, head, cum0, total, newest, expires, hold, kc = true, now, 1, 0, 0, total1, 0, ttl * 1000, 0, 1
          t1, c1, t2, c2, t3, c3, t4, c4 = 0, total1, 0, 0, 0, 0, 0, 0
        end
        reply = pack(REPLY, 1, now, units, 1, limit - units, 0, ceil(window / 1000), now)
        break
      end
      if hold <= now then
        -- The head moves past cached entries that have left the window; with none left, the next few are read (and,
        -- when all of those have left too, a longer run of them). Twin: open().
        while kc > 0 and t1 <= edge do
          head, cum0, kc = head + 1, c1, kc - 1
          t1, c1, t2, c2, t3, c3, t4, c4 = t2, c2, t3, c3, t4, c4, 0, 0
        end
        local fast = true
        if kc == 0 then
          if due then
            write_due()
          end
          local count = math.min(2 * K, n - head)
          local chunk = redis.call('GETRANGE', key, format('%d', head * e), format('%d', (head + count) * e - 1))
          local skip = 0
          if count < n - head and unpack(entry, chunk, (count - 1) * e + 1) <= edge then
            -- Even the last entry read has left the window (it slid past a burst): the first live one is found by a
            -- binary search in a longer read, rather than by the general code's search of the whole log.
            count = math.min(LONG_READ, n - head)
            chunk = redis.call('GETRANGE', key, format('%d', head * e), format('%d', (head + count) * e - 1))
            local hi = count - 1
            while skip < hi do
              local mid = math.floor((skip + hi) / 2)
              if unpack(entry, chunk, mid * e + 1) > edge then
                hi = mid
              else
                skip = mid + 1
              end
            end
            if skip > 0 then
              local _, before = unpack(entry, chunk, (skip - 1) * e + 1)
              head, cum0 = head + skip, before
            end
          end
          local pos, t, c = skip * e + 1, nil, nil
          for _ = skip + 1, count do
            t, c, pos = unpack(entry, chunk, pos)
            if kc == 0 and t <= edge then
              head, cum0 = head + 1, c
            elseif kc == 0 then
              t1, c1, kc = t, c, 1
            elseif kc == 1 then
              t2, c2, kc = t, c, 2
            elseif kc == 2 then
              t3, c3, kc = t, c, 3
            else
              t4, c4, kc = t, c, 4
              break
            end
          end
          fast = kc > 0
        end
        used = (total - cum0) % M32
        if fast and used + units <= limit then
          if op == 'p' then
            local reset = used > 0 and ceil((newest + window - rel) / 1000) or 0
            reply = pack(REPLY, 1, now, 0, 1, limit - used, 0, reset, 0)
            break
          end
          -- Twin: record() (the entry merged into the newest or added after it, the TTL once a window).
          if not ((head >= COMPACT_AT and head * 2 > n) or rel > rebase) then
            local ts = math.max(rel, newest)
            if due and ts ~= newest then
              -- The write held back is of an older entry, which this one does not cover.
              write_due()
            end
            total = (total + units) % M32
            if ts == newest then
              if head + kc == n then
                if kc == 1 then
                  c1 = total
                elseif kc == 2 then
                  c2 = total
                elseif kc == 3 then
                  c3 = total
                else
                  c4 = total
                end
              end
            else
              if head + kc == n and kc < K then
                kc = kc + 1
                if kc == 1 then
                  t1, c1 = ts, total
                elseif kc == 2 then
                  t2, c2 = ts, total
                elseif kc == 3 then
                  t3, c3 = ts, total
                else
                  t4, c4 = ts, total
                end
              end
              n = n + 1
            end
            if expires < ts + window then
              local ttl = ceil((ts + 2 * window - rel) / 1000)
              expires = rel + ttl * 1000
              redis.call('PEXPIRE', key, format('%d', ttl))
            end
            if single then
              redis.call('SETRANGE', key, format('%d', (n - 1) * e), pack(entry_header, ts, total, base, n, head, cum0,
                total, ts, expires, hold, kc, t1, c1, t2, c2, t3, c3, t4, c4))
            else
              if not write_due then
                -- Made once, at a run's first held-back write: a closure made on every call would slow each lone call.
                -- Twin of the lone call's write just above.
                write_due = function()
                  redis.call('SETRANGE', seen_key, format('%d', due_at), pack(due_header, newest, total, base, n, head,
                    cum0, total, newest, expires, hold, kc, t1, c1, t2, c2, t3, c3, t4, c4))
                  due = nil
                end
              end
              newest, due_at, due, due_header = ts, (n - 1) * e, true, entry_header
            end
            reply = pack(REPLY, 1, now, units, 1, limit - used - units, 0, ceil((ts + window - rel) / 1000), base + ts)
            break
          end
        elseif fast and (op == 'p' or block == 0) then
          -- Denied (and no block due): the entry that holds the (used + units - limit)-th oldest unit must leave first.
          -- Twin: answer().
          local nth = used + units - limit
          if kc >= 1 and (c1 - cum0) % M32 >= nth then
            at = t1
          elseif kc >= 2 and (c2 - cum0) % M32 >= nth then
            at = t2
          elseif kc >= 3 and (c3 - cum0) % M32 >= nth then
            at = t3
          elseif kc >= 4 and (c4 - cum0) % M32 >= nth then
            at = t4
          end
        end
      end
    until true
    if at then
      -- The fast path's denials, from the entry that must leave the window first. Twin: answer().
      local reset = used > 0 and ceil((newest + window - rel) / 1000) or 0
      reply = pack(REPLY, 0, now, 0, 0, math.max(0, limit - used), ceil((at + window - rel) / 1000), reset, 0)
    end
    if not reply then
      if due then
        write_due()
      end
      seen_key = nil
      if not general then
        -- The general code, made here on the first call that needs it: a run whose calls all take the fast path never
        -- makes its closures (their upvalues cost a hot denial more than the rest of its work). It returns call A's
        -- reply; its keys are KEYS[k] to KEYS[k + nk - 1].
        general = (function()
          -- A log's entry size and format, and the age of its base past which a rewrite moves it.
          local NARROW_FORM = { e = NARROW_E, entry = NARROW_ENTRY, rebase = NARROW_REBASE }
          local WIDE_FORM = { e = WIDE_E, entry = WIDE_ENTRY, rebase = WIDE_REBASE }

          -- Entries from..from+count-1 of a log's body: their times and running totals.
          local function entries_at(log, from, count)
            local e = log.form.e
            local raw = redis.call('GETRANGE', log.key, format('%d', from * e), format('%d', (from + count) * e - 1))
            local ts, cum, pos, entry = {}, {}, 1, log.form.entry
            for i = 1, count do
              ts[i], cum[i], pos = unpack(entry, raw, pos)
            end
            return ts, cum
          end

          -- The first entry in [lo, hi] for which `after(ts, cum)` holds (it holds for hi): a binary search, by
          -- GETRANGE.
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
          -- Times in the log (and `now` here) are µs since its base; `hold` is server µs. `exists`: the key holds a
          -- log. Twin: the fast path's head move.
          local function open(key, window)
            local form = window <= NARROW and NARROW_FORM or WIDE_FORM
            local raw = redis.call('GETRANGE', key, HEADER_AT, '-1')
            if #raw ~= H then
              return { key = key, window = window, form = form, n = 0, used = 0, hold = 0, exists = false }
            end
            local base, n, head, cum0, total, newest, expires, hold, kc, t1, c1, t2, c2, t3, c3, t4, c4 =
              unpack(HEADER, raw)
            local log = {
              key = key,
              window = window,
              form = form,
              exists = true,
              base = base,
              n = n,
              head = head,
              cum0 = cum0,
              total = total,
              newest = newest,
              expires = expires,
              hold = hold,
              kc = kc,
              now = now - base,
              used = 0,
              ts = { t1, t2, t3, t4 },
              cum = { c1, c2, c3, c4 },
            }
            local edge = log.now - window
            if n == 0 or newest <= edge then
              -- Every entry has left the window (or the key is a hold alone): the log is empty, a write starts it anew.
              log.n = 0
              return log
            end
            if kc == 0 or t1 <= edge then
              local ts, cum = log.ts, log.cum
              local live = 2
              while live <= kc and ts[live] <= edge do
                live = live + 1
              end
              if live > kc then
                -- The cache holds no live entry: the first is further on, read in a chunk (or found by a binary
                -- search).
                local from = head + kc
                local before = kc > 0 and cum[kc] or cum0
                local count = math.min(2 * K, n - from)
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
                  from = search(log, from + count, n - 1, function(t)
                    return t > edge
                  end)
                  cts, ccum = entries_at(log, from - 1, math.min(K, n - from) + 1)
                  before = table.remove(ccum, 1)
                  table.remove(cts, 1)
                  first = 1
                end
                log.head, log.cum0 = from + first - 1, before
                kc = 0
                for i = first, math.min(#cts, first + K - 1) do
                  kc = kc + 1
                  ts[kc], cum[kc] = cts[i], ccum[i]
                end
              else
                log.head, log.cum0 = head + live - 1, cum[live - 1]
                for i = live, kc do
                  ts[i - live + 1], cum[i - live + 1] = ts[i], cum[i]
                end
                kc = kc - live + 1
              end
              for i = kc + 1, K do
                ts[i], cum[i] = 0, 0
              end
              log.kc = kc
            end
            log.used = (total - log.cum0) % M32
            return log
          end

          -- The answer for `cost` units in one window, before anything is recorded: allowed, remaining, retryAfterMs,
          -- resetMs, whether the window itself has room (a held key has room, yet is denied), and the wait until the
          -- cost fits, whatever the hold.
          -- Twin: the fast path's denial (its reply follows the fast path's loop) and its peek.
          local function answer(log, limit, cost)
            local allowed, remaining, retry, reset = 1, limit, 0, 0
            if log.n > 0 then
              local used, window, rel = log.used, log.window, log.now
              -- A release can leave the newest entry empty: it still bounds the reset, unless the window holds nothing.
              reset = used > 0 and ceil((log.newest + window - rel) / 1000) or 0
              remaining = math.max(0, limit - used)
              if used + cost > limit then
                -- The entry that holds the (used + cost - limit)-th oldest unit must leave first.
                local nth, cum0, at = used + cost - limit, log.cum0, nil
                for i = 1, log.kc do
                  if (log.cum[i] - cum0) % M32 >= nth then
                    at = log.ts[i]
                    break
                  end
                end
                if at == nil then
                  local found = search(log, log.head + log.kc, log.n - 1, function(_, cum)
                    return (cum - cum0) % M32 >= nth
                  end)
                  at = entries_at(log, found, 1)[1]
                end
                allowed, retry = 0, ceil((at + window - rel) / 1000)
              end
            end
            local room, fit = allowed == 1, retry
            if log.exists and log.hold > now then
              allowed, retry = 0, math.max(retry, ceil((log.hold - now) / 1000))
            end
            return allowed, remaining, retry, reset, room, fit
          end

          local function header(log)
            local ts, cum = log.ts, log.cum
            return pack(HEADER, log.base, log.n, log.head, log.cum0, log.total, log.newest, log.expires, log.hold,
              log.kc, ts[1], cum[1], ts[2], cum[2], ts[3], cum[3], ts[4], cum[4])
          end

          -- The hold to keep in a log written anew: a hold still running, or none.
          local function live_hold(log)
            return (log.exists and log.hold > now) and log.hold or 0
          end

          -- A share window's answer (see Shares), as answer() gives a log's: room is the class's own use and cost
          -- within the limit; only a held key denies. Twin: memory/decisions.ts's shareResult.
          local function share_answer(log, limit, cost)
            local over = cost > limit
            local _, remaining, _, reset, room, fit = answer(log, limit, over and 0 or cost)
            room = room and not over
            if live_hold(log) == 0 or room then
              return 1, remaining, 0, reset, room
            end
            local wait = ceil((log.hold - now) / 1000)
            if not over then
              wait = math.min(wait, fit)
            end
            return 0, remaining, wait, reset, room
          end

          -- Records `count` units at `at` (server µs, >= now) or at the newest entry's time if later; returns that
          -- time. Twin: the fast path's admission, and its new key for an empty log.
          local function record(log, count, at)
            local window = log.window
            if log.n == 0 then
              local ts = at - now
              local total = count % M32
              local hold = live_hold(log)
              log.base, log.now, log.n, log.head, log.cum0, log.total, log.newest = now, 0, 1, 0, 0, total, ts
              log.kc, log.hold, log.ts, log.cum = 1, hold, { ts, 0, 0, 0 }, { total, 0, 0, 0 }
              local ttl = ceil(math.max(ts + 2 * window, hold - now) / 1000)
              log.expires = ttl * 1000
              redis.call('SET', log.key, pack(log.form.entry, ts, total) .. header(log), 'PX', format('%d', ttl))
              return at
            end
            local ts = math.max(at - log.base, log.newest)
            local n, head, kc = log.n, log.head, log.kc
            local e, entry, rebase = log.form.e, log.form.entry, log.now > log.form.rebase
            -- Out-of-window entries outnumber the live ones (or the base is old): rewrite the log without them.
            local compact = (head >= COMPACT_AT and head * 2 > n) or rebase
            local merge = ts == log.newest
            log.total = (log.total + count) % M32
            log.newest = ts
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
            local last = pack(entry, ts, log.total)
            if log.expires < ts + window then
              local ttl = ceil((math.max(ts + 2 * window, live_hold(log) - log.base) - log.now) / 1000)
              log.expires = log.now + ttl * 1000
              redis.call('PEXPIRE', log.key, format('%d', ttl))
            end
            if not compact then
              log.n = n
              redis.call('SETRANGE', log.key, format('%d', (n - 1) * e), last .. header(log))
              return log.base + ts
            end
            local last_at = (log.n - (merge and 1 or 0)) * e - 1
            local body = redis.call('GETRANGE', log.key, format('%d', head * e), format('%d', last_at))
            log.n, log.head = n - head, 0
            if rebase then
              -- Rare (a log written to for years): times move to a new base, the oldest live entry's, entry by entry.
              local shift, parts, pos = log.ts[1], {}, 1
              body = body .. last
              for i = 1, log.n do
                local t, c
                t, c, pos = unpack(entry, body, pos)
                parts[i] = pack(entry, math.max(0, t - shift), c)
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
            return log.base + ts
          end

          -- A period's count (see Periods), read as a log is, with `period` set: for a decision (`starts` given) in
          -- the period that holds now (`from`, `to`), counting its units only; else in the period it holds, while
          -- current. Twin: PeriodCount.used.
          local function period_open(key, starts)
            local log = { key = key, period = true, exists = false, start = 0, stop = 0, count = 0, hold = 0, used = 0 }
            local raw = redis.call('GET', key)
            if raw then
              log.exists = true
              log.start, log.stop, log.count, log.hold = unpack(PERIOD, raw)
            end
            if not starts then
              if log.stop > now then
                log.used = log.count
              end
              return log
            end
            for i = 1, 3 do
              if now >= starts[i] * 1000 and now < starts[i + 1] * 1000 then
                log.from, log.to = starts[i] * 1000, starts[i + 1] * 1000
              end
            end
            if not log.from then
              error("the server's clock is more than a period away from the calling process's", 0)
            end
            if log.start == log.from and log.stop == log.to then
              log.used = log.count
            end
            return log
          end

          -- Writes a period's count back; it lives until its period ends, or its hold if later.
          local function period_write(log)
            redis.call('SET', log.key, pack(PERIOD, log.start, log.stop, log.count, log.hold), 'PXAT',
              format('%d', ceil(math.max(log.stop, log.hold) / 1000)))
          end

          -- A period's answer for `cost` units, as answer() gives a log's. Twin: PeriodCount.result.
          local function period_answer(log, limit, cost)
            local used, left = log.used, ceil((log.to - now) / 1000)
            local allowed, retry = 1, 0
            if used + cost > limit then
              allowed, retry = 0, left
            end
            local room = allowed == 1
            if log.hold > now then
              allowed, retry = 0, math.max(retry, ceil((log.hold - now) / 1000))
            end
            return allowed, math.max(0, limit - used), retry, used > 0 and left or 0, room
          end

          -- Records `count` units in the period that holds now, starting it over if the key counts another; returns
          -- the units' stamp (now). Twin: PeriodCount.add.
          local function period_add(log, count)
            if log.start ~= log.from or log.stop ~= log.to then
              log.start, log.stop, log.count = log.from, log.to, 0
            end
            log.count = log.count + count
            period_write(log)
            return now
          end

          -- Holds a key until `untl` (server µs) unless it is held longer, and keeps the key that long.
          local function hold_until(log, untl)
            if log.exists and log.hold >= untl then
              return
            end
            if log.period then
              log.hold = untl
              period_write(log)
              return
            end
            if log.n == 0 then
              -- No live entry: the key becomes a header alone, which lives as long as the hold.
              local ttl = ceil((untl - now) / 1000)
              log.base, log.head, log.cum0, log.total, log.newest, log.kc = now, 0, 0, 0, 0, 0
              log.expires, log.hold, log.ts, log.cum = ttl * 1000, untl, { 0, 0, 0, 0 }, { 0, 0, 0, 0 }
              redis.call('SET', log.key, header(log), 'PX', format('%d', ttl))
              return
            end
            log.hold = untl
            if log.expires < untl - log.base then
              local ttl = ceil((untl - now) / 1000)
              log.expires = log.now + ttl * 1000
              redis.call('PEXPIRE', log.key, format('%d', ttl))
            end
            redis.call('SETRANGE', log.key, format('%d', log.n * log.form.e), header(log))
          end

          -- A slot's id or end as Redis takes it (a number would be formatted with %.17g).
          local function int(x)
            return format('%d', x)
          end

          -- An in-flight window's answer for one more slot, read alike by a consume and a peek: allowed, remaining,
          -- retryAfterMs, resetMs, then the slots held and the latest end (server µs; 0 when none is held). Twin: the
          -- memory store's slot windows.
          local function slots_answer(key, limit)
            local after = format('(%d', now)
            local held = redis.call('ZCOUNT', key, after, '+inf')
            if held == 0 then
              return 1, limit, 0, 0, 0, 0
            end
            local latest = tonumber(redis.call('ZREVRANGEBYSCORE', key, '+inf', after, 'WITHSCORES', 'LIMIT', 0, 1)[2])
            local allowed, retry = 1, 0
            if held >= limit then
              -- One more fits once held - limit + 1 slots have ended: at the (held - limit + 1)-th soonest end.
              local nth = redis.call('ZRANGEBYSCORE', key, after, '+inf', 'WITHSCORES', 'LIMIT', held - limit, 1)
              allowed, retry = 0, ceil((tonumber(nth[2]) - now) / 1000)
            end
            return allowed, math.max(0, limit - held), retry, ceil((latest - now) / 1000), held, latest
          end

          -- Takes a slot for `window` µs (its ended ones removed first); its id: now, or the next integer up that no
          -- slot has. The key lives until its latest end.
          local function take_slot(key, window, latest)
            local id = now
            while redis.call('ZSCORE', key, int(id)) do
              id = id + 1
            end
            local ends = now + window
            redis.call('ZADD', key, int(ends), int(id))
            if ends > latest then
              redis.call('PEXPIREAT', key, int(ceil(ends / 1000)))
            end
            return id
          end

          return function(A, k, nk, op, units, cursor, last)
            if op == 'r' or op == 's' then
              -- Moves the units of each key's entry recorded at a given time, if still in the window: a release takes
              -- up to its units from each, a settle adds its delta (or takes up to -delta). A refund is a release under
              -- a marker (see Markers). Every key is read before any is written: a call that finds its marker says it
              -- is done, or an entry with more than MAX_RELEASE_TAIL entries after it, changes nothing. Twin: the
              -- memory store's refund and settle.
              local settle = op == 's'
              local records, windows, marker, marked = {}, nk, nil, nil
              for j = 1, nk do
                local recorded, window, delta
                recorded, window, delta, cursor = unpack('>ddd', A, cursor)
                records[j] = { recorded = recorded, window = window, delta = settle and delta or -delta }
              end
              if records[nk].window == 0 then
                marker, windows = KEYS[k + nk - 1], nk - 1
                marked = redis.call('GET', marker)
                if marked == 'r' and not settle then
                  return pack('>bdI4', 2, now, 0)
                end
                if marked and not settle then
                  -- Settled before: the refund also takes back what the settle moved (never adds units).
                  for j = 1, windows do
                    local moved = unpack('>d', marked, 2 + 8 * (j - 1))
                    records[j].delta = math.min(0, records[j].delta - moved)
                  end
                  marked = nil
                end
              end
              local logs, moves = {}, {}
              for j = 1, windows do
                local key, window = KEYS[k + j - 1], records[j].window
                logs[j] = window < 0 and period_open(key) or open(key, window * 1000)
                moves[j] = { by = 0 }
              end
              -- The reply; a settle's says how many units each window holds after it.
              local function reply(status, most)
                local parts = { pack('>bdI4', status, now, most) }
                if settle then
                  for j, log in ipairs(logs) do
                    parts[j + 1] = pack('>I4', log.used + moves[j].by)
                  end
                end
                return table.concat(parts)
              end
              if marked then
                return reply(marked == 'r' and 4 or 2, 0)
              end
              local most, held, until_us = 0, false, 0
              for j, log in ipairs(logs) do
                local recorded, delta, move = records[j].recorded, records[j].delta, moves[j]
                local ts = not log.period and log.n > 0 and recorded - log.base
                if log.period then
                  -- Units of the period the count holds, still current. Twin: PeriodCount.adjust.
                  if recorded >= log.start and recorded < log.stop and now < log.stop then
                    held = true
                    move.by = delta < 0 and -math.min(-delta, log.count) or delta
                  end
                elseif ts and ts > log.now - log.window and ts <= log.newest then
                  local first = search(log, log.head, log.n - 1, function(t)
                    return t >= ts
                  end)
                  if log.n - 1 - first > MAX_RELEASE_TAIL then
                    for _, each in ipairs(moves) do
                      each.by = 0
                    end
                    return reply(3, 0)
                  end
                  local from = math.max(first - 1, 0)
                  local tss, cums = entries_at(log, from, log.n - from)
                  local i = first - from + 1
                  if tss[i] == ts then
                    local before = first > 0 and cums[1] or log.cum0
                    held = true
                    move.by = delta < 0 and -math.min(-delta, (cums[i] - before) % M32) or delta
                    move.first, move.i, move.tss, move.cums = first, i, tss, cums
                  end
                end
                -- The units count until then at the latest (server µs): a marker need not outlive them.
                until_us = math.max(until_us, log.period and log.stop or recorded + log.window)
                most = math.max(most, math.abs(move.by))
              end
              -- A release that removes nothing changes nothing; a settle changes nothing when no window holds the entry.
              local done = held and (settle or most > 0)
              if not done then
                for _, move in ipairs(moves) do
                  move.by = 0
                end
                return reply(0, 0)
              end
              if marker then
                local state = 'r'
                if settle then
                  local parts = { 's' }
                  for j = 1, windows do
                    parts[j + 1] = pack('>d', moves[j].by)
                  end
                  state = table.concat(parts)
                end
                redis.call('SET', marker, state, 'PX', format('%d', ceil((until_us - now) / 1000)))
              end
              for j, log in ipairs(logs) do
                local move = moves[j]
                local by, first, tss, cums = move.by, move.first, move.tss, move.cums
                if by ~= 0 and log.period then
                  log.count = log.count + by
                  period_write(log)
                elseif by ~= 0 then
                  -- Every running total from that entry on moves by the units moved, in the body and in the cache.
                  local parts = {}
                  for e = move.i, #tss do
                    parts[#parts + 1] = pack(log.form.entry, tss[e], (cums[e] + by) % M32)
                  end
                  for e = 1, log.kc do
                    if log.head + e - 1 >= first then
                      log.cum[e] = (log.cum[e] + by) % M32
                    end
                  end
                  log.total = (log.total + by) % M32
                  local offset = format('%d', first * log.form.e)
                  redis.call('SETRANGE', log.key, offset, table.concat(parts) .. header(log))
                end
              end
              return reply(1, most)
            end

            if op == 'f' or op == 'e' then
              -- Frees slots, or keeps them held until now + `units` ms at least: only slots still held. Every slot's
              -- end is read before any is written, so that an error about a key changes nothing. A free publishes the
              -- keys it freed a slot of, so that every process's waiters on them ask again.
              local ids, ends, latest = {}, {}, {}
              for j = 1, nk do
                local key, id, _ = KEYS[k + j - 1], nil, nil
                id, _, cursor = unpack('>dd', A, cursor)
                ids[j] = int(id)
                local score = redis.call('ZSCORE', key, ids[j])
                ends[j] = score and tonumber(score) or 0
                if op == 'e' and not latest[key] then
                  latest[key] = tonumber(redis.call('ZREVRANGE', key, 0, 0, 'WITHSCORES')[2] or 0)
                end
              end
              local count, swept, freed, published, extended = 0, {}, {}, {}, {}
              for j = 1, nk do
                local key = KEYS[k + j - 1]
                if not swept[key] then
                  swept[key] = true
                  redis.call('ZREMRANGEBYSCORE', key, '-inf', int(now))
                end
                if ends[j] > now then
                  if op == 'f' then
                    if redis.call('ZREM', key, ids[j]) == 1 then
                      count = count + 1
                      if not freed[key] then
                        freed[key] = true
                        published[#published + 1] = key
                      end
                    end
                  else
                    count = count + 1
                    local ending = math.max(ends[j], now + units * 1000)
                    redis.call('ZADD', key, int(ending), ids[j])
                    extended[key] = math.max(extended[key] or 0, ending)
                  end
                end
              end
              for key, ending in pairs(extended) do
                if ending > latest[key] then
                  redis.call('PEXPIREAT', key, int(ceil(ending / 1000)))
                end
              end
              if #published > 0 then
                redis.call('PUBLISH', string.sub(A, cursor, last), table.concat(published, ' '))
              end
              return pack('>bdI4', 1, now, count)
            end
            if op == 'z' then
              local logs = {}
              for j = 1, nk do
                local _, window
                _, window, _, _, cursor = unpack(WINDOW, A, cursor)
                logs[j] = window < 0 and period_open(KEYS[k + j - 1]) or open(KEYS[k + j - 1], window * 1000)
              end
              for _, log in ipairs(logs) do
                hold_until(log, now + units * 1000)
              end
              return pack('>bdI4', 1, now, 0)
            end

            if op == 'l' then
              -- Reserves between `min` and `units` units, recorded at the lease's expiry.
              local limit, window, _, _, min, wait_for, ttl = unpack(LEASE, A, cursor)
              if ttl * 1000 > (window * 1000 <= NARROW and NARROW_LEASE or WIDE_LEASE) then
                error(format('a lease of %d ms is longer than this log can record (see lua/sliding-log.lua)', ttl), 0)
              end
              local log = open(KEYS[k], window * 1000)
              local available = limit - log.used
              if available >= min and live_hold(log) == 0 then
                local granted = math.min(units, available)
                local at = record(log, granted, now + ttl * 1000)
                local reset = ceil((log.newest + log.window - log.now) / 1000)
                return pack(REPLY, 1, now, granted, 1, available - granted, 0, reset, at)
              end
              local allowed, remaining, retry, reset = answer(log, limit, wait_for)
              if live_hold(log) > 0 then
                remaining = 0
              end
              return pack(REPLY, 0, now, 0, allowed, remaining, retry, reset, 0)
            end

            -- Every window of the call: decided, then recorded only if each enforced one admits (a window its own cost,
            -- for C and P; an in-flight window one slot); a window that lacked room for a consume is held for its block.
            local mixed, consume = op == 'C' or op == 'P', op == 'c' or op == 'C'
            local logs, answers, fits = {}, {}, true
            for i = 1, nk do
              local limit, window, block, cost, flags, starts
              if mixed then
                limit, window, block, cost, flags, cursor = unpack(MIXED_WINDOW, A, cursor)
                if flags % 8 >= 4 then
                  starts = { unpack(STARTS, A, cursor) }
                  cursor = table.remove(starts)
                end
              else
                limit, window, block, flags, cursor = unpack(WINDOW, A, cursor)
                cost = units
              end
              local key, log, a = KEYS[k + i - 1], nil, nil
              if starts then
                log = period_open(key, starts)
                a = { period_answer(log, limit, cost) }
                a[7] = block * 1000
              elseif flags % 4 >= 2 then
                a = { slots_answer(key, limit) }
                log = { key = key, window = window * 1000, slots = true, latest = a[6] }
                a[5], a[7] = a[1] == 1, 0
              elseif flags >= 8 then
                log = open(key, window * 1000)
                log.share = true
                a = { share_answer(log, limit, cost) }
                a[7] = 0
              else
                log = open(key, window * 1000)
                a = { answer(log, limit, cost) }
                a[7] = block * 1000
              end
              local shadow = flags % 2 == 1
              a[6], a[8] = shadow, cost
              logs[i], answers[i] = log, a
              if a[1] == 0 and not (shadow and nk > 1) then
                fits = false
              end
            end
            local recorded = fits and consume
            local reply = { pack('>bdI4', fits and 1 or 0, now, recorded and units or 0) }
            for i, log in ipairs(logs) do
              local a, at = answers[i], 0
              if log.slots then
                if consume then
                  redis.call('ZREMRANGEBYSCORE', log.key, '-inf', int(now))
                end
                if recorded and a[1] == 1 then
                  at = take_slot(log.key, log.window, log.latest)
                  a[2], a[4] = a[2] - 1, ceil((math.max(log.latest, now + log.window) - now) / 1000)
                end
              elseif recorded and a[1] == 1 and log.period then
                at = period_add(log, a[8])
                a[2], a[4] = a[2] - a[8], ceil((log.to - now) / 1000)
              elseif recorded and a[1] == 1 then
                at = record(log, a[8], now)
                -- A share window records without room too: nothing is left then.
                a[2], a[4] = math.max(0, a[2] - a[8]), ceil((log.newest + log.window - log.now) / 1000)
              elseif consume and not a[5] and a[7] > 0 then
                hold_until(log, now + a[7])
                a[2], a[3] = 0, math.max(a[3], ceil(a[7] / 1000))
              elseif consume and not log.slots and not log.share and live_hold(log) > 0 then
                -- A held key denies every call: nothing is left until the hold ends.
                a[2] = 0
              end
              reply[i + 1] = pack('>bI4I6I6d', a[1], a[2], a[3], a[4], at)
            end
            return table.concat(reply)
          end
        end)()
      end
      local ok, result = pcall(general, A, k, nk, op, units, cursor, pos + size - 1)
      reply = result
      if not ok then
        local message = type(result) == 'table' and tostring(result.err) or tostring(result)
        reply = pack('>bdI4', -2, now, #message) .. message
      end
    end
    if single then
      return reply
    end
    replies = replies or {}
    replies[#replies + 1] = reply
    k = k + nk
    pos = pos + size
  end
end
if due then
  write_due()
end
return table.concat(replies)
