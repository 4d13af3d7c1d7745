-- SPDX-License-Identifier: Apache-2.0
-- What every script starts with (tools/embed-lua.sh puts it before each
-- one, after the script's ARGV_HEAD and ARGV_PER): the store's time, the
-- library functions as locals, and the log's insertion. Each script stays
-- one text, run atomically and named by its own SHA-1.
--
-- Writes after TIME: Redis replicates such a script by its effects (the
-- commands it ran) only. 7.0 always does; 5.0 and 6.x unless
-- lua-replicate-commands is no; 3.2 and 4.x when asked first, here. Older
-- Redis has no such call and refuses the first write, which the module
-- names in the error log (src/sl_prereq.c). From 7.0 on (which has
-- REDIS_VERSION_NUM) the call does nothing.
if redis.replicate_commands and not redis.REDIS_VERSION_NUM then
    redis.replicate_commands()
end
local t = redis.call('TIME')
local sec, usec = t[1] + 0, t[2] + 0
local now = sec * 1000000 + usec
-- A member unique to the request, every script's ARGV[1].
local member = ARGV[1]
local floor, ceil, find, match, format, sub = math.floor, math.ceil,
    string.find, string.match, string.format, string.sub
-- The largest quota (src/sl_limit.c's SL_MAX_REQUESTS).
local MAX_REQUESTS = 100000000

-- A sliding log's entry for one request of weight cost, scored with the
-- store's now and named with its weight (the name lua/sl_give_back.lua
-- removes). The member is unique per request; should a reused one still
-- be in the log (a per-child counter that wrapped), a suffix keeps the
-- entry from replacing the older one. The one function a script defines:
-- a closure is made on every call.
local function log_insert(key, cost)
    local base = cost == 1 and '1*' .. member or cost .. '*' .. member
    local m, k = base, 0
    -- now as %.17g writes it, at a quarter of the cost: TIME's own digits
    -- when they need no padding.
    local score = #t[2] == 6 and t[1] .. t[2] or format('%d', now)
    while redis.call('ZADD', key, 'NX', score, m) == 0 do
        k = k + 1
        m = base .. ':' .. k
    end
end

