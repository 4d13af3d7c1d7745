-- SPDX-License-Identifier: Apache-2.0
-- An allotment (SlidingLimitAllotment auto): k units of each limit of a
-- request granted to one server at once, which admits from them on its
-- own for at most D microseconds, measured on its own monotonic clock from
-- before this call (src/sl_allot.c). Optionally, first, the unused rest of
-- the server's previous allotment on the same key goes back.
--
-- KEYS[i]   store key of limit i (one hash tag per call, as the check's)
-- ARGV[1]   the grant's id: unique per call (the decision's member)
-- ARGV[2]   D, microseconds (1000 .. 1000000)
-- ARGV[2+10(i-1)+1 .. +10]  algorithm ("l", "g" or "c"), requests, window,
--           burst, cost (units the asking request takes), want (units
--           asked for, at least cost; 0 in every limit: a give-back
--           alone, of a grant its child no longer uses), then the
--           give-back: the previous
--           grant's id ("-": none), its units, its log score, and the
--           units of it never used
--
-- Returns: now seconds, now microseconds, 1 if granted (0: some limit
-- has no room for cost, nothing granted), then per limit: units granted,
-- the store's remaining after the grant, the grant's log score (0 for
-- gcra and the counter).
--
-- Why no rolling window ever holds more than the limit (log): the k units
-- are one entry scored g + D, g = now, counted (from the grant on) by
-- every decision in every window that contains a time up to g + D + the
-- window, the whole span in which the server may use them (it stops at
-- g + D by a clock that started before g). A refusal's reset reads that
-- score like any other. The log's TTL is set to cover g + D + window;
-- lua/sl_check.lua keeps its TTL at least D_MAX past a window, so a later
-- admission does not shorten it.
--
-- GCRA: the k units may be used at any time from g to g + D. They must
-- fit the tolerance as if all arrived at g, and every later decision must
-- see them as if they arrived at g + D: the TAT becomes max(TAT, g + D) +
-- k intervals, at most g + tolerance (the check reads a TAT further ahead
-- as a clock that stepped back). Charging them at g alone would let a
-- burst of the units used late meet a TAT already decayed by then (up to
-- D / T units over the burst). A limit whose tolerance is under D gets no
-- grant. A give-back moves the TAT back by the part of the unused units'
-- intervals still ahead of now, at most u intervals: what has decayed
-- since was free anyway, and later admissions stacked after the grant stay
-- charged.
--
-- Counter: the k units are added to the current fixed window's count C at
-- g, and only when g + D < (idx + 1) * win, idx = floor(g / win): every
-- admission made from them, at a time u in [g, g + D], falls inside the
-- window in which they are counted. Counting a unit at g rather than at
-- its use u changes no decision after u (the same window's C holds it
-- either way, and the next window's P), and decisions between g and u
-- see one unit more, not less. The grant needs the estimate at g plus k
-- within the limit, prev * (win - (g - start)) / win + C + k <= limit;
-- every later rise of C (an admission at the store, another grant) is
-- checked the same way, and the weighted P only falls within a window:
-- at every u, the estimate with every unit of the grant counted (used
-- yet or not) stays within the limit, so each admission from the grant
-- is one the counter would have made had it been decided at the store at
-- u. No server ever admits beyond what the counter admits with each unit
-- counted at its use; in particular no fixed window of store time holds
-- more than the limit. A grant whose D would cross the window's end is
-- not made (nothing granted: the caller decides at the store): units
-- used in the next window but counted in this one would weigh there as
-- P, a fraction, not as C. A window under COUNTER_SPANS D gets no grant:
-- its last D, more than half of it, would be decided at the store
-- anyway, and the unused rest of a grant goes back only within its own
-- window, so most of it would stay counted.
--
-- Ownership: a give-back names the grant. Log: the entry's exact name
-- (its units, id and score): ZREM answers 1 once, so a repeated or late
-- give-back (the entry expired, the key reset or reused) does nothing.
-- GCRA: KEY.a<id> holds the grant's TAT and epoch; KEY.a holds the key's
-- epoch, which an operator's reset deletes with the key: a record of
-- another epoch gives back nothing. Counter: KEY.a<id> holds the grant's
-- window index, its units and the epoch; units go back only while that
-- window is still the current one and the stored one (into C, never
-- below 0): in the next window they weigh as P, where taking them back
-- would count less than the window held when they were granted.
--
-- Only the commands of the check (the ACL of docs/REFERENCE.md).

-- (lua/sl_prelude.lua comes first: the store's time, the grant's id as
-- member.)
local id, s_d = member, ARGV[2]
local n = #KEYS
if n == 0 or #ARGV ~= ARGV_HEAD + ARGV_PER * n or #id == 0
    or not find(s_d, '^%d+$') then
    return redis.error_reply('ERR slidinglimit: bad arguments')
end
local D = s_d + 0
if D < 1000 or D > 1000000 then
    return redis.error_reply('ERR slidinglimit: bad deadline')
end
local MAX_WINDOW = 366 * 86400 * 1000000

local function num(s)
    return find(s, '^%d+$') and s + 0
end

-- The log's total (lua/sl_check.lua): name, time made, units; false when
-- none.
local function log_total(key)
    local v = redis.call('ZRANGE', key, '0', '0', 'WITHSCORES')
    if v[2] and v[2] + 0 < 0 and find(v[1], '^#%d+$') then
        return v[1], sub(v[1], 2) + 0, -(v[2] + 0)
    end
    return false, false, 0
end

-- The units in the log's window now, expired members removed and the
-- total kept as lua/sl_check.lua keeps it.
local function log_units(key, win)
    local tname, made, units = log_total(key)
    local horizon = format('%d', now - win)
    local gone = redis.call('ZCOUNT', key, '(0', horizon)
    if tname and gone > 0 then
        local e = redis.call('ZRANGE', key, '1', gone, 'WITHSCORES')
        for j = 1, #e, 2 do
            local w = 1
            if e[j + 1] + 0 >= made then
                w = match(e[j], '^(%d+)%*')
                w = w and w + 0 or 1
            end
            units = units - w
        end
    end
    if gone > 0 then
        redis.call('ZREMRANGEBYSCORE', key, '(0', horizon)
    end
    local nreq = redis.call('ZCARD', key) - (tname and 1 or 0)
    if not tname or units < nreq or nreq == 0 then
        units = nreq
    end
    if tname and gone > 0 then
        if units > nreq then
            redis.call('ZADD', key, format('%d', -units), tname)
        else
            redis.call('ZREM', key, tname)
            tname = false
        end
    end
    return units, nreq, tname
end

local function log_give_back(key, gid, gk, gscore, unused)
    local name = gk .. '*a' .. gid .. '@' .. gscore
    if unused < 1 or unused > gk or redis.pcall('ZREM', key, name) ~= 1 then
        return
    end
    if gk - unused > 0 then
        redis.call('ZADD', key, gscore, (gk - unused) .. '*r' .. gid .. '@'
            .. gscore)
    end
    local tname, made, units = log_total(key)
    if tname then
        redis.call('ZADD', key, format('%d', -(units - unused)), tname)
    end
end

-- The TAT as lua/sl_check.lua reads it (now when empty or out of shape).
local function gcra_tat(key, T, tau)
    local tat = tonumber(redis.pcall('GET', key))
    if not tat or tat ~= tat or tat == math.huge or tat < now then
        return now
    elseif tat > now + tau + 1 then
        return now + tau - T
    end
    return tat
end

local function gcra_give_back(key, gid, T, tau, unused)
    local rec = key .. '.a' .. gid
    local v = redis.pcall('GET', rec)
    if type(v) ~= 'string' or redis.call('DEL', rec) ~= 1 then
        return
    end
    local s_tat, epoch = match(v, '^([^:]+):(.*)$')
    local tat_g = tonumber(s_tat)
    if not epoch or not tat_g or epoch ~= redis.pcall('GET', key .. '.a') then
        return
    end
    local tat = tonumber(redis.pcall('GET', key))
    if not tat or tat ~= tat or tat < tat_g then
        return
    end
    local low = tat_g - unused * T
    local x = tat_g - (now > low and now or low)
    if x <= 0 then
        return
    end
    local new_tat = tat - x
    if new_tat <= now then
        redis.call('DEL', key)
    else
        redis.call('SET', key, format('%.17g', new_tat), 'PX',
            format('%d', ceil((new_tat - now) / 1000) + 1))
    end
end

-- The counter's key as lua/sl_check.lua reads it at now: the current
-- window's index, the previous window's count and the current one, and
-- the stored tag when it is the current window's (else false); false
-- alone when the key holds another type (the check replaces it).
local function counter_read(key, win)
    local idx = floor(now / win)
    local v = redis.pcall('GET', key)
    local prev, cur, tag = 0, 0, false
    if type(v) == 'table' then
        return false
    elseif type(v) == 'string' then
        local stp, sc = match(v,
            '^([1-8]%d%d%d%d%d%d%d%d%d)(%d%d%d%d%d%d%d%d%d)$')
        if stp then
            local tp = stp + 0
            local t = floor(tp / 1000000000)
            if t == idx % 8 + 1 then
                cur, prev, tag = sc + 0, tp - t * 1000000000, t
            elseif t == (idx - 1) % 8 + 1 then
                prev = sc + 0
            end
        end
    end
    return idx, prev, cur, tag
end

local function counter_give_back(key, gid, win, unused)
    local rec = key .. '.a' .. gid
    local v = redis.pcall('GET', rec)
    if type(v) ~= 'string' or redis.call('DEL', rec) ~= 1 then
        return
    end
    local s_idx, s_k, epoch = match(v, '^c(%d+):(%d+):(.*)$')
    if not epoch or epoch ~= redis.pcall('GET', key .. '.a') then
        return
    end
    local idx, prev, cur, tag = counter_read(key, win)
    if not idx or not tag or s_idx + 0 ~= idx then
        return
    end
    local back = unused
    if back > s_k + 0 then
        back = s_k + 0
    end
    if back > cur then
        back = cur
    end
    local pttl = back > 0 and redis.call('PTTL', key)
    if pttl and pttl > 0 then
        redis.call('SET', key, format('%d%09d%09d', tag, prev, cur - back),
            'PX', pttl)
    end
end

-- Read and check every limit; give back first.
local lim = {}
for i = 1, n do
    local b = ARGV_HEAD + ARGV_PER * (i - 1)
    local alg = ARGV[b + 1]
    local limit, win, burst = num(ARGV[b + 2]), num(ARGV[b + 3]),
        num(ARGV[b + 4])
    local cost, want = num(ARGV[b + 5]), num(ARGV[b + 6])
    local gid, gk, gscore, unused = ARGV[b + 7], num(ARGV[b + 8]),
        num(ARGV[b + 9]), num(ARGV[b + 10])
    if (alg ~= 'l' and alg ~= 'g' and alg ~= 'c') or not limit or limit < 1
        or limit > MAX_REQUESTS or not win or win < 1000 or win > MAX_WINDOW
        or not burst or burst < 1 or burst > MAX_REQUESTS or not cost
        or cost < 1 or not want or want < cost and want ~= 0
        or want > (alg == 'g' and burst or limit) or not gk or not gscore
        or not unused then
        return redis.error_reply('ERR slidinglimit: bad limit ' .. i)
    end
    local key = KEYS[i]
    local T = win / limit
    local tau = burst * T
    if gid ~= '-' and gk > 0 then
        if alg == 'l' then
            log_give_back(key, gid, gk, format('%d', gscore), unused)
        elseif alg == 'c' then
            counter_give_back(key, gid, win, unused)
        else
            gcra_give_back(key, gid, T, tau, unused)
        end
    end
    -- A give-back alone: nothing to read or grant.
    if want > 0 then
        local room
        local L = { key = key, alg = alg, limit = limit, win = win, T = T,
            tau = tau, cost = cost, want = want }
        if alg == 'l' then
            local ok, units, nreq, tname = pcall(log_units, key, win)
            if not ok then
                -- A key of another type: the check replaces it; no allotment.
                return { sec, usec, 0 }
            end
            L.units, L.nreq, L.tname = units, nreq, tname
            room = limit - units
        elseif alg == 'c' then
            local idx, prev, cur = counter_read(key, win)
            -- The window-end rule: every use of the units (up to now + D)
            -- inside the window that counts them. A key of another type:
            -- the check replaces it.
            if not idx or win < COUNTER_SPANS * D
                or now + D >= (idx + 1) * win then
                return { sec, usec, 0 }
            end
            L.idx, L.prev, L.cur = idx, prev, cur
            L.w = prev * (win - (now - idx * win)) / win
            room = floor(limit - (L.w + cur))
        else
            L.tat = gcra_tat(key, T, tau)
            -- The k units arrive at any time up to now + D: they are
            -- checked as arriving now (the tolerance) and charged as
            -- arriving at now + D (later requests wait for that).
            L.base = L.tat > now + D and L.tat or now + D
            room = floor((tau + 0.5 - (L.base - now)) / T)
        end
        if room < cost then
            return { sec, usec, 0 }
        end
        -- Half of what is left at most: the servers that ask next find room.
        local k = floor(room / 2)
        if k > want then
            k = want
        end
        if k < cost then
            k = cost
        end
        L.k = k
        lim[i] = L
    end
end

-- A give-back alone (or a limit that asked for nothing) grants nothing.
for i = 1, n do
    if not lim[i] then
        return { sec, usec, 0 }
    end
end
local out = { sec, usec, 1 }
for i = 1, n do
    local L = lim[i]
    local k, key = L.k, L.key
    local score = 0
    if L.alg == 'l' then
        score = now + D
        local s = format('%d', score)
        local name = k .. '*a' .. id .. '@' .. s
        if redis.call('ZADD', key, 'NX', s, name) == 1 then
            local units, nreq = L.units + k, L.nreq + 1
            if units > nreq then
                redis.call('ZADD', key, format('%d', -units),
                    L.tname or '#' .. sec .. format('%06d', usec))
            end
            L.units = units
        end
        redis.call('PEXPIRE', key, format('%d', ceil((L.win + D) / 1000) + 1))
        out[3 * i + 1], out[3 * i + 2], out[3 * i + 3] = k,
            L.limit - L.units, score
    elseif L.alg == 'c' then
        -- k <= room: the estimate plus k stays within the limit.
        local c = L.cur + k
        local ttl = ceil(((L.idx + 2) * L.win - now) / 1000) + 1
        redis.call('SET', key, format('%d%09d%09d', L.idx % 8 + 1, L.prev, c),
            'PX', format('%d', ttl))
        local ekey = key .. '.a'
        local epoch = redis.pcall('GET', ekey)
        if type(epoch) ~= 'string' then
            epoch = id
        end
        -- The epoch lives as long as the key, past every record naming
        -- it; a record, until its window ends (no give-back after that).
        redis.call('SET', ekey, epoch, 'PX', format('%d', ttl))
        redis.call('SET', key .. '.a' .. id,
            format('c%d:%d:', L.idx, k) .. epoch, 'PX',
            format('%d', ceil(((L.idx + 1) * L.win - now) / 1000) + 1))
        local rr = floor(L.limit - (L.w + c))
        out[3 * i + 1], out[3 * i + 2], out[3 * i + 3] = k,
            rr < 0 and 0 or rr, 0
    else
        -- Never past the tolerance (the check's own test).
        while k > L.cost and L.base + k * L.T - now > L.tau + 0.5 do
            k = k - 1
        end
        local new_tat = L.base + k * L.T
        local ttl = ceil((new_tat - now) / 1000) + 1
        redis.call('SET', key, format('%.17g', new_tat), 'PX',
            format('%d', ttl))
        local ekey = key .. '.a'
        local epoch = redis.pcall('GET', ekey)
        if type(epoch) ~= 'string' then
            epoch = id
        end
        -- The epoch outlives every record that names it.
        redis.call('SET', ekey, epoch, 'PX', format('%d', ttl + D / 1000 + 1))
        redis.call('SET', key .. '.a' .. id, format('%.17g', new_tat) .. ':'
            .. epoch, 'PX', format('%d', ttl + D / 1000 + 1))
        local rr = floor((L.tau - (new_tat - now)) / L.T + 0.5 / L.T)
        out[3 * i + 1], out[3 * i + 2], out[3 * i + 3] = k,
            rr < 0 and 0 or rr, 0
    end
end
return out
