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

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local member = ARGV[1]
local n = #KEYS
if n == 0 or #ARGV ~= 1 + 4 * n or not member or #member == 0 then
    return redis.error_reply('ERR slidinglimit: bad arguments')
end

local floor, ceil = math.floor, math.ceil
local out = { tonumber(t[1]), tonumber(t[2]), 1 }
local writes = {}

-- Sliding log: a sorted set of admission times.
local function log_limit(key, limit, win)
    redis.call('ZREMRANGEBYSCORE', key, '-inf', now - win)
    local count = redis.call('ZCARD', key)
    local ok = count < limit
    local function reset(c)
        if c == 0 then
            return 0
        end
        -- The entry whose expiry lets one more request in.
        local idx = c - limit
        if idx < 0 then
            idx = 0
        end
        local e = redis.call('ZRANGE', key, idx, idx, 'WITHSCORES')
        return tonumber(e[2]) + win - now
    end
    if ok then
        writes[#writes + 1] = function()
            redis.call('ZADD', key, now, member)
            redis.call('PEXPIRE', key, ceil(win / 1000) + 1)
        end
        -- After admission the oldest entry is the first to expire, or this
        -- request's own when the log was empty.
        local r = limit - count - 1
        local rs
        if count == 0 then
            rs = win
        else
            rs = reset(count + 1)
        end
        return ok, r, r + 1, rs, reset(count)
    end
    local rs = reset(count)
    return ok, 0, 0, rs, rs
end

-- Approximated sliding window: current fixed window plus the previous one
-- weighted by how much of it still overlaps the rolling window. The value is
-- "index:current:previous" in one string, the smallest layout per identity.
local function counter_state(key, win)
    local idx = floor(now / win)
    local cur, prev = 0, 0
    local v = redis.call('GET', key)
    if v then
        local si, sc, sp = string.match(v, '^(%d+):(%d+):(%d+)$')
        si = tonumber(si)
        if si == idx then
            cur, prev = tonumber(sc), tonumber(sp)
        elseif si == idx - 1 then
            prev = tonumber(sc)
        end
    end
    return idx, cur, prev
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
    local idx, cur, prev = counter_state(key, win)
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
        writes[#writes + 1] = function()
            local ttl = (idx + 2) * win - now
            redis.call('SET', key,
                string.format('%.0f:%d:%d', idx, cur + 1, prev),
                'PX', ceil(ttl / 1000) + 1)
        end
        local r, rs = rem_reset(cur + 1)
        return true, r, r0, rs, rs0
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
    local tat = tonumber(redis.call('GET', key) or '0') or 0
    if tat < now then
        tat = now
    end
    local function rem_reset(tt)
        local r = floor((tau - (tt - now)) / T + 0.5 / T)
        if r < 0 then
            r = 0
        end
        if tt <= now then
            return r, 0
        end
        return r, ceil(tt - tau + (r + 1) * T - now)
    end
    local r0, rs0 = rem_reset(tat)
    local new_tat = tat + T
    if new_tat - now <= tau + 0.5 then
        writes[#writes + 1] = function()
            redis.call('SET', key, string.format('%.17g', new_tat),
                'PX', ceil((new_tat - now) / 1000) + 1)
        end
        local r, rs = rem_reset(new_tat)
        return true, r, r0, rs, rs0
    end
    return false, 0, 0, rs0, rs0
end

local results = {}
local admitted = true
for i = 1, n do
    local b = 2 + 4 * (i - 1)
    local alg = ARGV[b]
    local limit = tonumber(ARGV[b + 1])
    local win = tonumber(ARGV[b + 2])
    local burst = tonumber(ARGV[b + 3])
    if not limit or not win or not burst or limit < 1 or win < 1 or burst < 1 then
        return redis.error_reply('ERR slidinglimit: bad limit ' .. i)
    end
    local ok, r, r0, rs, rs0
    if alg == 'l' then
        ok, r, r0, rs, rs0 = log_limit(KEYS[i], limit, win)
    elseif alg == 'c' then
        ok, r, r0, rs, rs0 = counter_limit(KEYS[i], limit, win)
    elseif alg == 'g' then
        ok, r, r0, rs, rs0 = gcra_limit(KEYS[i], limit, win, burst)
    else
        return redis.error_reply('ERR slidinglimit: bad algorithm ' .. i)
    end
    admitted = admitted and ok
    results[i] = { ok, r, r0, rs, rs0 }
end

if admitted then
    for i = 1, #writes do
        writes[i]()
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
