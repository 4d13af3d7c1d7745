-- SPDX-License-Identifier: Apache-2.0
-- Charges what an admitted request of SlidingLimit ... cost=after: cost
-- once its response is known (bytes sent, a back end's header), past the
-- limit if need be: the admission (lua/sl_check.lua) found room and
-- reserved one unit, this adds the rest, so one response may overdraw its
-- budget and the requests after it are refused until the window frees it.
--
-- KEYS[i]   store key of limit i (only the limits to charge)
-- ARGV[1]   the request's member, as given to the check
-- ARGV[ARGV_HEAD+ARGV_PER(i-1)+1 ..]  algorithm ("l", "c" or "g"), requests, window
--           in microseconds, burst (gcra), units to charge (1 or more)
--
-- Returns per limit the units charged.
--
-- What each algorithm adds, at the store's now (the response's end, not
-- the admission: a download longer than the window is not free):
--   log      one entry of the units' weight, named as the check names an
--            admission's, and the window's total (see lua/sl_check.lua)
--            made or raised by them. Expired entries stay for the next
--            check to trim, which takes their weights from the total.
--   counter  the units into the current fixed window, as an admission of
--            that cost; the count stays within its nine digits.
--   gcra     the TAT moves on by the units' intervals, at most to an empty
--            bucket (now + tau): the check reads a TAT beyond that as a
--            clock that stepped back, so gcra has no debt beyond it.
-- src/sl_algo.c and src/sl_table_decide.c do the same for the shm store.

-- (lua/sl_prelude.lua comes first: the store's time, member, and the
-- log's insertion.)
local n = #KEYS
if n == 0 or #ARGV ~= ARGV_HEAD + ARGV_PER * n or #member == 0 then
    return redis.error_reply('ERR slidinglimit: bad arguments')
end
local MAX_COUNT = 999999999
local out = {}

for i = 1, n do
    local b = ARGV_HEAD + ARGV_PER * (i - 1) + 1
    local key, alg, s_limit, s_win, s_burst, s_units = KEYS[i], ARGV[b],
        ARGV[b + 1], ARGV[b + 2], ARGV[b + 3], ARGV[b + 4]
    local limit = find(s_limit, '^%d+$') and s_limit + 0
    local win = find(s_win, '^%d+$') and s_win + 0
    local burst = find(s_burst, '^%d+$') and s_burst + 0
    local units = find(s_units, '^%d+$') and s_units + 0
    if not limit or limit < 1 or limit > MAX_REQUESTS or not win
        or win < 1000 or not burst or burst < 1 or not units or units < 1
        or units > MAX_REQUESTS then
        return redis.error_reply('ERR slidinglimit: bad limit ' .. i)
    end
    local charged = 0

    if alg == 'l' then
        local v = redis.pcall('ZRANGE', key, '0', '0', 'WITHSCORES')
        if not v.err then
            local tname, total = false, 0
            local nreq = redis.call('ZCARD', key)
            if v[2] and v[2] + 0 < 0 and find(v[1], '^#%d+$') then
                tname, total, nreq = v[1], -v[2], nreq - 1
            else
                total = nreq
            end
            log_insert(key, units)
            total, nreq = total + units, nreq + 1
            if total > nreq then
                redis.call('ZADD', key, -total,
                    tname or '#' .. sec .. format('%06d', usec))
            end
            redis.call('PEXPIRE', key, format('%d', ceil(win / 1000) + 1))
            charged = units
        end

    elseif alg == 'c' then
        local v = redis.pcall('GET', key)
        if type(v) ~= 'table' then
            local idx = floor(now / win)
            local cur, prev = 0, 0
            local stp, sc
            if v then
                stp, sc = match(v,
                    '^([1-8]%d%d%d%d%d%d%d%d%d)(%d%d%d%d%d%d%d%d%d)$')
            end
            if stp then
                local tp = stp + 0
                local tag = floor(tp / 1000000000)
                if tag == idx % 8 + 1 then
                    cur, prev = sc + 0, tp - tag * 1000000000
                elseif tag == (idx - 1) % 8 + 1 then
                    prev = sc + 0
                end
            end
            charged = units
            if cur + charged > MAX_COUNT then
                charged = MAX_COUNT - cur
            end
            redis.call('SET', key,
                format('%d%09d%09d', idx % 8 + 1, prev, cur + charged), 'PX',
                ceil(((idx + 2) * win - now) / 1000) + 1)
        end

    elseif alg == 'g' then
        local v = redis.pcall('GET', key)
        if type(v) ~= 'table' then
            local T = win / limit
            local tau = burst * T
            local tat = tonumber(v)
            if not tat or tat ~= tat or tat == math.huge or tat < now then
                tat = now
            elseif tat > now + tau + 1 then
                tat = now + tau - T
            end
            local new_tat = tat + units * T
            if new_tat > now + tau then
                new_tat = now + tau
            end
            if new_tat > tat then
                charged = ceil((new_tat - tat) / T - 0.5 / T)
                redis.call('SET', key, format('%.17g', new_tat), 'PX',
                    ceil((new_tat - now) / 1000) + 1)
            end
        end

    else
        return redis.error_reply('ERR slidinglimit: bad algorithm ' .. i)
    end
    out[i] = charged
end
return out
