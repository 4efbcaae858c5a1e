#!lua
-- note.lua: a note, a short string kept beside a window key (what a fleet learned of an upstream's quota), read
-- or replaced atomically, with the server's time, so that every process reads one value and a change made from
-- a stale read is refused.
--
-- KEYS[1]  the note: a string with a TTL
-- ARGV[1]  op       'r' reads; 'w' writes ARGV[3] for ARGV[4] ms if the note holds what ARGV[2] expects
-- ARGV[2]  expected ('w') '*' for any value, '' for no note, else the exact value the note must hold
-- ARGV[3]  value    ('w') the new value; '' removes the note
-- ARGV[4]  ttl      ('w') ms the new value lives, at least 1
--
-- Reply: a table { written (1 or 0), the note's value now (false for none), server time in ms }.

local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local current = redis.call('GET', KEYS[1])
if ARGV[1] ~= 'w' then
  return { 0, current, now }
end
local expected = ARGV[2]
local matches = expected == '*' or (expected == '' and not current) or current == expected
if not matches then
  return { 0, current, now }
end
if ARGV[3] == '' then
  redis.call('DEL', KEYS[1])
  return { 1, false, now }
end
redis.call('SET', KEYS[1], ARGV[3], 'PX', ARGV[4])
return { 1, ARGV[3], now }
