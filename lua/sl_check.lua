-- One atomic decision over every limit of a request.
--
-- KEYS[i]   store key of limit i; every key of one call carries the same
--           cluster hash tag, so the whole call runs on one node.
-- ARGV[1]   a member unique to this request (sliding-log entries)
-- ARGV[1+4(i-1)+1 .. +4]  algorithm ("l", "c" or "g"), requests,
--           window in microseconds, burst (gcra)
--
-- Returns a flat array of integers:
--   now seconds, now microseconds, 1 if admitted (0 if not),
--   then per limit: 1 if it had room, remaining, reset
-- "remaining" is what is left after this request when it was admitted and
-- what is left now when it was not; "reset" is the microseconds until more
-- quota is available (0 when the whole quota is). For a limit without room,
-- reset is the exact earliest time it would admit one request.
--
-- Time is the store's own (TIME), so httpd hosts with skewed clocks agree.
-- Nothing is consumed unless every limit has room.
--
-- Numbers are Lua 5.1 doubles. Times are microseconds since the epoch
-- (about 1.8e15, below 2^53, so whole microseconds are exact), and the
-- bounds below (those of sl_core.c) keep every stored value exact.
-- src/sl_algo.c repeats this math for the shm store, operation for
-- operation; change both together.
--
-- A key holding something this script did not write (another type, or a
-- value out of shape) is read as empty and replaced on the next admission:
-- an error would put the identity in the fail mode for as long as the
-- foreign key lives, which may be forever.

local MAX_REQUESTS = 100000000
local MIN_WINDOW = 1000
local MAX_WINDOW = 366 * 86400 * 1000000

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local member = ARGV[1]
local n = #KEYS
if n == 0 or #ARGV ~= 1 + 4 * n or #member == 0 then
    return redis.error_reply('ERR slidinglimit: bad arguments')
end

local floor, ceil = math.floor, math.ceil
local out = { tonumber(t[1]), tonumber(t[2]), 1 }
-- Each limit returns (ok, r, r0, rs, rs0, write): its write runs only once
-- every limit has room.
local writes = {}

-- A whole number in [min, max], or nil (tonumber also accepts "nan",
-- "inf", "0x10" and "1e3").
local function whole(s, min, max)
    if type(s) ~= 'string' or not string.match(s, '^%d+$') then
        return nil
    end
    local v = tonumber(s)
    if v < min or v > max then
        return nil
    end
    return v
end

-- A read that tolerates a key of another type.
local function read(...)
    local v = redis.pcall(...)
    if type(v) == 'table' and v.err then
        return nil, true
    end
    return v, false
end

local function replaced(key)
    redis.log(redis.LOG_WARNING,
        'slidinglimit: replacing ' .. key .. ', which held foreign data')
end

-- Sliding log: a sorted set of admission times. Entries at or before
-- now - win are out of the rolling window (now - win, now].
local function log_limit(key, limit, win)
    local count, foreign = read('ZREMRANGEBYSCORE', key, '-inf', now - win)
    if foreign then
        count = 0
    else
        count = redis.call('ZCARD', key)
    end
    -- The time until the entry at 0-based index i expires.
    local function expiry(i)
        local e = redis.call('ZRANGE', key, i, i, 'WITHSCORES')
        return tonumber(e[2]) + win - now
    end
    if count < limit then
        local write = function()
            if foreign then
                replaced(key)
                redis.call('DEL', key)
            end
            -- The member is unique per request; should a reused one still
            -- be in the log (a per-child counter that wrapped), a suffix
            -- keeps the entry from replacing the older one.
            local m, i = member, 0
            while redis.call('ZADD', key, 'NX', now, m) == 0 do
                i = i + 1
                m = member .. ':' .. i
            end
            redis.call('PEXPIRE', key, ceil(win / 1000) + 1)
        end
        -- More quota comes back when the oldest entry expires: this
        -- request's own when the log was empty.
        local r = limit - count - 1
        if count == 0 then
            return true, r, r + 1, win, 0, write
        end
        local rs = expiry(0)
        return true, r, r + 1, rs, rs, write
    end
    -- Refused: one more fits when the entry at count - limit expires.
    local rs = expiry(count - limit)
    return false, 0, 0, rs, rs
end

-- Approximated sliding window: current fixed window plus the previous one
-- weighted by how much of it still overlaps the rolling window.
--
-- The value is one decimal integer "T PPPPPPPPP CCCCCCCCC": T = 1 + the
-- window index mod 8, then the previous and the current count in nine
-- digits each (at most 1e8 each). It is at most 8999999999999999999 <
-- 2^63, so Redis keeps it as an integer object, with no string buffer:
-- the smallest layout per identity (bench/memory.sh). It is built and read
-- as text: as a Lua double it would lose digits. Index mod 8 is enough
-- because the TTL ends the key 1-2 ms after its window's successor ends:
-- it is read only in its own window, the next, or a few ms later (at least
-- a window of 1 ms each), never 8 windows later.
local function counter_tag(idx)
    return idx % 8 + 1
end

local function counter_state(key, win)
    local idx = floor(now / win)
    local cur, prev = 0, 0
    local v, foreign = read('GET', key)
    if type(v) == 'string' then
        local st, sp, sc = string.match(v, '^([1-8])(%d%d%d%d%d%d%d%d%d)(%d%d%d%d%d%d%d%d%d)$')
        st = tonumber(st)
        if st == counter_tag(idx) then
            cur, prev = tonumber(sc), tonumber(sp)
        elseif st == counter_tag(idx - 1) then
            prev = tonumber(sc)
        end
    end
    return idx, cur, prev, foreign
end

-- Earliest time (microseconds from now) at which the estimate is <= x.
-- The estimate only falls while nothing is admitted, so this is exact.
local function counter_until(x, idx, cur, prev, win)
    local start = idx * win
    if prev * (win - (now - start)) / win + cur <= x then
        return 0
    end
    -- Relative to now: absolute times near 1.8e15 us are only 0.25 us
    -- apart as doubles, which could round the answer a microsecond early.
    if cur <= x then
        -- Within this window: prev * (1 - f) + cur <= x.
        return ceil((start - now) + win - win * (x - cur) / prev)
    end
    -- In the next window the current count becomes the weighted one.
    return ceil((start - now) + 2 * win - win * x / cur)
end

local function counter_limit(key, limit, win)
    local idx, cur, prev, foreign = counter_state(key, win)
    local est = prev * (win - (now - idx * win)) / win + cur
    local function rem_reset(c)
        local e = prev * (win - (now - idx * win)) / win + c
        local r = floor(limit - e)
        if r < 0 then
            r = 0
        end
        if r >= limit then
            return r, 0
        end
        return r, counter_until(limit - r - 1, idx, c, prev, win)
    end
    local r0, rs0 = rem_reset(cur)
    if est + 1 <= limit then
        local write = function()
            -- Kept until the window after the next one starts: by then
            -- neither count weighs anything.
            local ttl = (idx + 2) * win - now
            if foreign then
                replaced(key)
            end
            redis.call('SET', key,
                string.format('%d%09d%09d', counter_tag(idx), prev, cur + 1),
                'PX', ceil(ttl / 1000) + 1)
        end
        local r, rs = rem_reset(cur + 1)
        return true, r, r0, rs, rs0, write
    end
    return false, 0, 0, rs0, rs0
end

-- GCRA: the theoretical arrival time (TAT) of the next request. Emission
-- interval win/limit, tolerance burst intervals. Half a microsecond of slack
-- absorbs the rounding of fractional intervals without letting one more
-- request through.
local function gcra_limit(key, limit, win, burst)
    local T = win / limit
    local tau = burst * T
    local v, foreign = read('GET', key)
    local tat = tonumber(v)
    -- Only finite values count ("nan" or "inf" would refuse the key for
    -- ever). A TAT beyond what an admission can leave (the store's clock
    -- stepped back) counts as one request left: capping it at a full
    -- bucket (now + tau) without writing it would refuse the key until the
    -- clock caught up, since a refusal writes nothing.
    if not tat or tat ~= tat or tat == math.huge or tat < now then
        tat = now
    elseif tat > now + tau + 1 then
        tat = now + tau - T
    end
    local function rem_reset(tt)
        local r = floor((tau - (tt - now)) / T + 0.5 / T)
        if r < 0 then
            r = 0
        end
        if tt <= now or r >= burst then
            return r, 0
        end
        return r, ceil(tt - tau + (r + 1) * T - now)
    end
    local r0, rs0 = rem_reset(tat)
    local new_tat = tat + T
    if new_tat - now <= tau + 0.5 then
        local write = function()
            if foreign then
                replaced(key)
            end
            redis.call('SET', key, string.format('%.17g', new_tat),
                'PX', ceil((new_tat - now) / 1000) + 1)
        end
        local r, rs = rem_reset(new_tat)
        return true, r, r0, rs, rs0, write
    end
    return false, 0, 0, rs0, rs0
end

local results = {}
local admitted = true
for i = 1, n do
    local b = 2 + 4 * (i - 1)
    local alg = ARGV[b]
    local limit = whole(ARGV[b + 1], 1, MAX_REQUESTS)
    local win = whole(ARGV[b + 2], MIN_WINDOW, MAX_WINDOW)
    local burst = whole(ARGV[b + 3], 1, MAX_REQUESTS)
    if not limit or not win or not burst then
        return redis.error_reply('ERR slidinglimit: bad limit ' .. i)
    end
    local ok, r, r0, rs, rs0
    if alg == 'l' then
        ok, r, r0, rs, rs0, writes[i] = log_limit(KEYS[i], limit, win)
    elseif alg == 'c' then
        ok, r, r0, rs, rs0, writes[i] = counter_limit(KEYS[i], limit, win)
    elseif alg == 'g' then
        ok, r, r0, rs, rs0, writes[i] = gcra_limit(KEYS[i], limit, win, burst)
    else
        return redis.error_reply('ERR slidinglimit: bad algorithm ' .. i)
    end
    admitted = admitted and ok
    results[i] = { ok, r, r0, rs, rs0 }
end

if admitted then
    -- Two limits on one key (one name= used twice in a section) are one
    -- budget: the request counts once, written by the last of them (as
    -- the shm store does, src/sl_shm.c).
    local last = {}
    for i = 1, n do
        last[KEYS[i]] = i
    end
    for i = 1, n do
        if last[KEYS[i]] == i then
            writes[i]()
        end
    end
else
    out[3] = 0
end
for i = 1, n do
    local x = results[i]
    out[#out + 1] = x[1] and 1 or 0
    if admitted then
        out[#out + 1] = x[2]
        out[#out + 1] = ceil(x[4])
    else
        out[#out + 1] = x[3]
        out[#out + 1] = ceil(x[5])
    end
end
return out
