-- SPDX-License-Identifier: Apache-2.0
-- Gives back what lua/sl_check.lua consumed for one admitted request whose
-- final status does not count (SlidingLimit ... count=): the reservation
-- taken at the decision is undone after the response, so concurrent
-- requests never see room that a counted one already holds.
--
-- KEYS[i]   store key of limit i (only the limits to give back)
-- ARGV[1]   the request's member, as given to the check
-- ARGV[2]   the admission's store time in microseconds (the check's reply)
-- ARGV[ARGV_HEAD+ARGV_PER(i-1)+1 ..]  algorithm ("l", "c", "g" or "n"), requests, window
--           in microseconds, cost
--
-- Returns per limit the units given back (0 when the reservation no longer
-- weighs anything or is gone).
--
-- What each algorithm undoes:
--   log      removes the request's own entry (cost .. '*' .. member) and
--            takes its weight from the window's total; an entry that
--            needed a collision suffix stays, and so does one written
--            before an upgrade (one member per unit), which counts too
--            much, never too little.
--   counter  takes cost from the window the reservation went into: the
--            current count if that window is still the stored current one,
--            the previous count if the window has moved on by one, nothing
--            if it weighs nothing any more.
--   gcra     moves the TAT back by what is still charged of the request:
--            at most at + cost * T - now (T the emission interval), cost
--            intervals at most, never below now (an empty bucket). The
--            request's charge came after the TAT it found, which was at
--            least at, so at least that much of it is still ahead of now:
--            a long request never gives back what decayed while it ran,
--            which would come out of later requests' charges.
-- Every write keeps the key's TTL, which the admission set long enough.
-- Cheap like the check: no closures, no tables but the reply, constant
-- arguments to Redis as strings (it formats numbers with %.17g).

-- (lua/sl_prelude.lua comes first: the store's time, member, and the
-- log's insertion.)
local s_at = ARGV[2]
local n = #KEYS
if n == 0 or #ARGV ~= ARGV_HEAD + ARGV_PER * n or #member == 0 or not s_at
    or not string.find(s_at, '^%d+$') then
    return redis.error_reply('ERR slidinglimit: bad arguments')
end
local at = s_at + 0
local out = {}

for i = 1, n do
    local b = ARGV_HEAD + ARGV_PER * (i - 1) + 1
    local key, alg, s_limit, s_win, s_cost = KEYS[i], ARGV[b], ARGV[b + 1],
        ARGV[b + 2], ARGV[b + 3]
    local limit = find(s_limit, '^%d+$') and s_limit + 0
    local win = find(s_win, '^%d+$') and s_win + 0
    local cost = find(s_cost, '^%d+$') and s_cost + 0
    if not limit or limit < 1 or not win or win < 1000 or not cost
        or cost < 1 or cost > limit and alg ~= 'g' then
        return redis.error_reply('ERR slidinglimit: bad limit ' .. i)
    end
    local back = 0

    if alg == 'l' or alg == 'n' then
        -- 'n': a request's lease (SlidingLimitConcurrent), released at its
        -- end.
        -- ZREM on a key of another type errs: nothing to give back there.
        local name = cost == 1 and '1*' .. member or cost .. '*' .. member
        if redis.pcall('ZREM', key, name) == 1 then
            back = cost
            -- The window's total, if the log holds one (lua/sl_check.lua):
            -- dropped once every request left is one unit.
            local v = redis.call('ZRANGE', key, '0', '0', 'WITHSCORES')
            if v[2] and find(v[1], '^#%d+$') and v[2] + 0 < 0 then
                local units, nreq = -v[2] - cost, redis.call('ZCARD', key) - 1
                if units > nreq then
                    redis.call('ZADD', key, -units, v[1])
                else
                    redis.call('ZREM', key, v[1])
                end
            end
        end

    elseif alg == 'c' then
        local idx, ridx = floor(now / win), floor(at / win)
        local v = idx - ridx <= 1 and ridx <= idx and redis.pcall('GET', key)
        local stp, sc
        if type(v) == 'string' then
            stp, sc = match(v, '^([1-8]%d%d%d%d%d%d%d%d%d)(%d%d%d%d%d%d%d%d%d)$')
        end
        if stp then
            local tp = stp + 0
            local tag = floor(tp / 1000000000)
            local prev, cur = tp - tag * 1000000000, sc + 0
            -- The stored current window, read as the check reads it.
            local sidx = tag == idx % 8 + 1 and idx
                or tag == (idx - 1) % 8 + 1 and idx - 1
            if sidx == ridx then
                back = cur < cost and cur or cost
                cur = cur - back
            elseif sidx == ridx + 1 then
                back = prev < cost and prev or cost
                prev = prev - back
            end
            local pttl = back > 0 and redis.call('PTTL', key)
            if pttl and pttl > 0 then
                redis.call('SET', key, format('%d%09d%09d', tag, prev, cur),
                    'PX', pttl)
            end
        end

    elseif alg == 'g' then
        local tat = tonumber(redis.pcall('GET', key))
        local T = win / limit
        local given = cost * T
        local left = at + given - now
        if tat and tat > now and tat < math.huge and left > 0 then
            if left < given then
                given = left
            end
            if tat - given < now then
                given = tat - now
            end
            local pttl = redis.call('PTTL', key)
            if pttl > 0 then
                redis.call('SET', key, format('%.17g', tat - given), 'PX', pttl)
                back = ceil(given / T)
            end
        end

    else
        return redis.error_reply('ERR slidinglimit: bad algorithm ' .. i)
    end
    out[i] = back
end
return out
