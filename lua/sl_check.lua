-- SPDX-License-Identifier: Apache-2.0
-- One atomic decision over every limit of a request.
--
-- KEYS[i]   store key of limit i; every key of one call carries the same
--           cluster hash tag, so the whole call runs on one node.
-- ARGV[1]   a member unique to this request (its sliding-log entry)
-- ARGV[ARGV_HEAD+ARGV_PER(i-1)+1 ..]  algorithm ("l", "c", "g", "n" for in
--           flight: a log whose window is the lease, or "d" and the
--           request's value for distinct=, see sl_distinct), requests,
--           window in microseconds, burst (gcra), cost (units this request
--           consumes, 1 to requests, and to burst for gcra), block
--           (microseconds an identity stays refused once this limit
--           refuses it; 0 for none)
--
-- ARGV[ARGV_HEAD+ARGV_PER*n+1] "peek" (optional): read only. Nothing is written (no
--           admission, no block, no expired entry removed); the reply is
--           what the next request of each limit's cost would find: per
--           limit 1 if it has room, remaining and reset now (r0, rs0
--           below), then, after all limits, per limit the microseconds
--           until its running block ends (0: none). The status handler
--           shows and resets one client's budgets with it.
--
-- Returns a flat array of integers:
--   now seconds, now microseconds, 1 if admitted (0 if not),
--   then per limit: 1 if it had room, remaining, reset
-- "remaining" is what is left after this request when it was admitted and
-- what is left now when it was not; "reset" is the microseconds until more
-- quota is available (0 when the whole quota is). For a limit without room,
-- reset is the exact earliest time it would admit this request (its cost),
-- or the end of the limit's block when that is later.
--
-- Blocks: a limit with a block that refuses on its own writes KEY .. '.b'
-- (same hash tag, so the same node) holding the block's end; until then
-- the limit refuses without reading its own key. A refusal during a block
-- does not extend it: the end the headers announced stays true.
--
-- A request admitted under a reservation (count=) is given back by
-- lua/sl_give_back.lua, which undoes exactly what the write below did.
--
-- Time is the store's own (TIME), so httpd hosts with skewed clocks agree.
-- Nothing is consumed unless every limit has room.
--
-- Numbers are Lua 5.1 doubles. Times are microseconds since the epoch
-- (about 1.8e15, below 2^53, so whole microseconds are exact), and the
-- bounds below (those of sl_limit.c) keep every stored value exact.
-- src/sl_algo.c repeats this math for the shm store, operation for
-- operation; change both together.
--
-- A key holding something this script did not write (another type, or a
-- value out of shape) is read as empty and replaced on the next admission:
-- an error would put the identity in the fail mode for as long as the
-- foreign key lives, which may be forever.

-- Cost: Redis runs this body as a fresh function call per EVALSHA, so
-- every function, closure and table written here is allocated (and later
-- collected) on every decision, and every string-number conversion is a
-- strtod or sprintf in C. Those, not the arithmetic, were most of the
-- script's time next to its Redis calls. Hence: no closures, one loop that
-- reads and decides, one that writes, state kept in two preallocated
-- tables, and conversions only where a value must cross the string/number
-- line (tonumber(s) runs strtod twice, arithmetic on s once). A number
-- passed to redis.call is formatted with %.17g, as dear as a pattern
-- match, and more so for times: constant arguments are written as
-- strings, times with %d (the same digits, as every value passed is a
-- whole number below 2^53). The common call takes a fast path before the
-- loop; the general one keeps nothing for other limits when there are
-- none and skips the reads whose answer an earlier one gave.

-- Log entries a refusal's wait reads at most (src/sl_algo.h SL_LOG_WALK).
local MAX_WALK = 1024
local MIN_WINDOW = 1000
local MAX_WINDOW = 366 * 86400 * 1000000
-- The longest wait a concurrency limit announces (src/sl_limit.h
-- SL_LEASE_WAIT).
local LEASE_WAIT = 1000000
-- A log's TTL runs this many ms past its window: an allotment's entry
-- (lua/sl_allot.lua) is scored up to 1 s ahead and must outlive it.
local ALLOT_TTL = 1000

-- (lua/sl_prelude.lua comes first: the store's time, member, and the
-- log's insertion.)
local n = #KEYS
local peek = #ARGV == ARGV_HEAD + ARGV_PER * n + 1 and ARGV[#ARGV] == 'peek'
if n == 0 or #ARGV ~= ARGV_HEAD + ARGV_PER * n and not peek
    or #member == 0 then
    return redis.error_reply('ERR slidinglimit: bad arguments')
end
-- One limit and no peek: what a limit leaves for the others (held below)
-- and its remaining and reset had nothing been admitted are never read.
local solo = n == 1 and not peek

-- The common call, a counter or a log of cost 1 without a block alone in
-- its call (and a burst the requests' own string, as the module sends
-- it), decided here with what the general loop below does for it and
-- nothing else: at this rate of calls the loop's bookkeeping (the other
-- arguments' checks, the dispatch, the held state) costs as much as the
-- math. Anything else (bad arguments, a key of another type, a log with a
-- total, a refusal that must walk the log) goes the general way, which
-- names the error or replaces the key as before; the fast path has
-- written nothing by then but the trim the general way would make. The
-- math is the general branches', operation for operation: change both.
local alg1 = ARGV[ARGV_HEAD + 1]
if solo and (alg1 == 'c' or alg1 == 'l') and ARGV[ARGV_HEAD + 5] == '1'
    and ARGV[ARGV_HEAD + 6] == '0' then
    local s_limit, s_win = ARGV[ARGV_HEAD + 2], ARGV[ARGV_HEAD + 3]
    local limit = find(s_limit, '^%d+$') and s_limit + 0
    local win = find(s_win, '^%d+$') and s_win + 0
    local key = KEYS[1]
    local valid = ARGV[ARGV_HEAD + 4] == s_limit and limit and win and limit >= 1
        and limit <= MAX_REQUESTS and win >= MIN_WINDOW
        and win <= MAX_WINDOW
    local v = valid and alg1 == 'c' and redis.pcall('GET', key)
    -- v: false (a log, bad arguments or no key), a string or an error.
    if valid and alg1 == 'c' and type(v) ~= 'table' then
        local idx = floor(now / win)
        local cur, prev, head = 0, 0, false
        local stp, sc
        if v then
            stp, sc = match(v,
                '^([1-8]%d%d%d%d%d%d%d%d%d)(%d%d%d%d%d%d%d%d%d)$')
        end
        if stp then
            local tp = stp + 0
            local tag = floor(tp / 1000000000)
            if tag == idx % 8 + 1 then
                cur, prev, head = sc + 0, tp - tag * 1000000000, stp
            elseif tag == (idx - 1) % 8 + 1 then
                prev = sc + 0
            end
        end
        local start = idx * win
        local w = prev * (win - (now - start)) / win
        local ok = w + cur + 1 <= limit
        local c = ok and cur + 1 or cur
        local rr, rrs = floor(limit - (w + c)), 0
        if rr < 0 then
            rr = 0
        end
        if rr < limit then
            local x = ok and limit - rr - 1 or limit - 1
            if w + c <= x then
                rrs = 0
            elseif c <= x then
                rrs = ceil((start - now) + win - win * (x - c) / prev)
            else
                rrs = ceil((start - now) + 2 * win - win * x / c)
            end
        end
        if not ok then
            return { sec, usec, 0, 0, 0, rrs }
        end
        redis.call('SET', key, head and head .. format('%09d', c)
            or format('%d%09d%09d', idx % 8 + 1, prev, c), 'PX',
            ceil(((idx + 2) * win - now) / 1000) + 1)
        return { sec, usec, 1, 1, rr, rrs }
    elseif valid and alg1 == 'l' then
        -- The log without a total, nothing stored at or below 0: every
        -- member is one request of one unit, and the trim removes the
        -- oldest gone ranks of the first read.
        v = redis.pcall('ZRANGE', key, '0', '1', 'WITHSCORES')
        local first = v[2] and v[2] + 0
        local units, at = false, false
        if not v.err and not (first and first <= 0) then
            local gone = 0
            if first and not (first > now - win) then
                gone = redis.call('ZREMRANGEBYSCORE', key, '(0',
                    format('%d', now - win))
            end
            units = #v < 4 and #v / 2 - gone or redis.call('ZCARD', key)
            -- The wait of the oldest live unit (u = 0 in the walk).
            if units > 0 and units <= limit then
                at = gone < #v / 2 and v[2 * gone + 2] + 0
                    or redis.call('ZRANGE', key, '0', '0', 'WITHSCORES')[2] + 0
            end
        end
        if units == 0 or at then
            local rs = at and ceil(at + win - now) or win
            if units >= limit then
                return { sec, usec, 0, 0, 0, rs }
            end
            log_insert(key, 1)
            redis.call('PEXPIRE', key,
                format('%d', ceil(win / 1000) + 1 + ALLOT_TTL))
            return { sec, usec, 1, 1, limit - units - 1, rs }
        end
    end
end

-- distinct=SOURCE, algorithm 'd' followed by the request's value (the
-- hash of its source's value, 16 characters; 'd' alone: a peek's, no
-- value): at most limit distinct values per key in any window. A sorted
-- set of the values seen, each scored by the time it was last seen;
-- values at or before now - win are out of the window (a peek counts them
-- rather than removing them). A value in the window passes and is seen
-- again; a new one passes while fewer than limit are in the window; a
-- refused one is not recorded, so the set never holds more than limit
-- values (DISTINCT_MAX at most, src/sl_script_layout.h's
-- SL_CHECK_DISTINCT_MAX). Returns ok, r, rs, r0, rs0, foreign and the
-- write: { value } (the value '' writes nothing).
local function sl_distinct(key, dv, limit, win)
    local z = redis.pcall('ZRANGE', key, '0', '1', 'WITHSCORES')
    if z.err then
        return true, limit - 1, win, limit, 0, true, { dv }
    end
    local horizon = format('%d', now - win)
    local dead, n = 0, 0
    if z[2] and not (z[2] + 0 > now - win) then
        if peek then
            dead = redis.call('ZCOUNT', key, '-inf', horizon)
        else
            redis.call('ZREMRANGEBYSCORE', key, '-inf', horizon)
        end
    end
    if dead > 0 or #z == 4 then
        n = redis.call('ZCARD', key) - dead
    else
        n = #z / 2 - (z[2] and not (z[2] + 0 > now - win) and 1 or 0)
    end
    -- The oldest and the next live values, by rank.
    local o = dead == 0 and z[2] and z[2] + 0 > now - win and z
        or n > 0 and redis.call('ZRANGE', key, dead, dead + 1, 'WITHSCORES')
        or {}
    local r0 = limit - n
    local rs0 = n > 0 and ceil(o[2] + win - now) or 0
    if r0 < 0 then
        r0 = 0
    end
    local known = false
    if dv ~= '' and n > 0 then
        local sc = redis.call('ZSCORE', key, dv)
        known = sc and sc + 0 > now - win
    end
    if known then
        -- Seen again: the oldest, when it is this value, is now the next.
        local rs = rs0
        if o[1] == dv then
            rs = o[4] and ceil(o[4] + win - now) or win
        end
        return true, r0, rs, r0, rs0, false, { dv }
    end
    if n < limit then
        return true, limit - n - 1, n > 0 and rs0 or win, r0, rs0, false,
            { dv }
    end
    -- A new value fits once all but limit - 1 of the window's have left:
    -- the value at rank n - limit, oldest first, is the last to go.
    local e = redis.call('ZRANGE', key, dead + n - limit, dead + n - limit,
        'WITHSCORES')
    local rs = e[2] and ceil(e[2] + win - now) or win
    return false, 0, rs, 0, rs, false, false
end

-- The reply, sized for one limit (a constructor sizes the array part, so
-- the common call never regrows it).
local out = { sec, usec, 1, 0, 0, 0 }
-- Per limit i, at 9 * (i - 1) + 1 .. 9: remaining and reset should
-- another limit refuse (each limit computes both, as it cannot know), then
-- the deferred write: the key held foreign data, the value to SET (false
-- for the log), its TTL in milliseconds, the cost, and for the log the
-- units and requests in its window and the name of its total (false:
-- none). A solo call keeps them in the locals below, which also hold the
-- values of the limit being decided.
local held = not solo and { 0, 0, false, false, 0, 1, 0, 0, false }
local admitted = true
local ok, r, rs, r0, rs0, foreign, value, ttl, cost, units, nreq, tname
-- peek: per limit the time left in its block.
local blocked = peek and {}

for i = 1, n do
    local b = ARGV_HEAD + ARGV_PER * (i - 1) + 1
    local key, alg, s_limit, s_win, s_burst, s_cost, s_block = KEYS[i],
        ARGV[b], ARGV[b + 1], ARGV[b + 2], ARGV[b + 3], ARGV[b + 4], ARGV[b + 5]
    -- A whole number in range. Digits only: tonumber (and arithmetic)
    -- also accept "nan", "inf", "0x10" and "1e3". Equal strings are one
    -- object in Lua, so comparing one with a constant costs nothing: the
    -- usual burst (the requests' own string), cost and block skip the
    -- pattern.
    local limit = find(s_limit, '^%d+$') and s_limit + 0
    local win = find(s_win, '^%d+$') and s_win + 0
    local burst = s_burst == s_limit and limit
        or find(s_burst, '^%d+$') and s_burst + 0
    cost = s_cost == '1' and 1 or find(s_cost, '^%d+$') and s_cost + 0
    local block = s_block == '0' and 0 or find(s_block, '^%d+$') and s_block + 0
    if not limit or limit < 1 or limit > MAX_REQUESTS
        or not win or win < MIN_WINDOW or win > MAX_WINDOW
        or not burst or burst < 1 or burst > MAX_REQUESTS
        or not block or block > MAX_WINDOW then
        return redis.error_reply('ERR slidinglimit: bad limit ' .. i)
    end
    -- A cost no state can admit is the caller's to refuse (it knows why).
    if not cost or cost < 1 or cost > (alg == 'g' and burst or limit) then
        return redis.error_reply('ERR slidinglimit: bad cost ' .. i)
    end

    -- Every branch below sets ok; remaining and reset after this request
    -- (admitted) or now (refused), r and rs; r0, rs0 the same had nothing
    -- been admitted (unless solo and admitted); and an admission's value
    -- and TTL.
    -- A read errs only on a key of another type: read as empty.
    local v
    foreign = false
    -- The log's units and requests in the window, and its total's name.
    units, nreq, tname = 0, 0, false
    -- The end of this limit's block, if one is running. A value beyond
    -- what a refusal writes (the store's clock stepped back, or foreign
    -- data) ends one block from now, as the key's TTL does anyway.
    local bend = block > 0 and tonumber(redis.pcall('GET', key .. '.b'))
    if bend and not (bend > now) then
        bend = false
    elseif bend and not (bend <= now + block) then
        bend = now + block
    end

    if bend then
        ok, r, r0, rs, rs0 = false, 0, 0, bend - now, bend - now

    elseif alg == 'l' or alg == 'n' then
        -- 'n' (SlidingLimitConcurrent) is this log with the lease as its
        -- window: one entry per request in flight, removed at its end
        -- (lua/sl_give_back.lua) or expired one lease after its admission
        -- when its httpd died. Its reset is capped below.
        --
        -- Sliding log: a sorted set of the admitted requests, each one
        -- member scored by its admission time and named cost .. '*' ..
        -- member, whatever its cost: the work and the memory of a request
        -- do not grow with what it costs. Entries at or before now - win
        -- are out of the rolling window (now - win, now]; a peek counts
        -- them (dead) rather than removing them.
        --
        -- While the window holds a request of more than one unit, the
        -- member '#' .. T0 holds minus the window's units as its score,
        -- below every time (rank 0); T0 is the time it was made. Each
        -- request's weight leaves that total once, as the request leaves
        -- the window. Without a total every request is one unit, and so are
        -- the members scored before T0: they were written when each
        -- request in the window was one unit, or by the script before this
        -- one, which wrote one member per unit.
        --
        -- The two oldest members come first: the total, if any, and the
        -- oldest request, whose score tells whether anything expired at
        -- all; with one member or none they also give the count, and
        -- without a total, when at most one expired, the oldest live
        -- request's time, so those calls are skipped.
        local made, gone, base, first = false, 0, 0, false
        v = redis.pcall('ZRANGE', key, '0', '1', 'WITHSCORES')
        if v.err then
            foreign = true
        else
            first = v[2] and v[2] + 0
            if first and first < 0 and find(v[1], '^#%d+$') then
                tname, made, units = v[1], sub(v[1], 2) + 0, -first
            end
            -- The expired, oldest first: ranks 1 .. gone behind the total,
            -- which needs their weights; without one, the trim's count is
            -- all there is to know, and a log of requests of one unit runs
            -- the commands it always ran (ZRANGEBYSCORE is in no ACL the
            -- README gives). Nothing has expired when the oldest request
            -- (the lowest score but the total's) is in the window.
            local low = v[tname and 4 or 2]
            if not low or low + 0 > now - win then
                gone = 0
            elseif tname or peek then
                gone = redis.call('ZCOUNT', key, '(0', format('%d', now - win))
            else
                gone = redis.call('ZREMRANGEBYSCORE', key, '(0',
                    format('%d', now - win))
            end
            if tname and gone > 0 then
                local e = redis.call('ZRANGE', key, '1', gone, 'WITHSCORES')
                for j = 1, #e, 2 do
                    local x, w = e[j + 1] + 0, 1
                    if x >= made then
                        w = match(e[j], '^(%d+)%*')
                        w = w and w + 0 or 1
                    end
                    units = units - w
                end
            end
            if tname and gone > 0 and not peek then
                redis.call('ZREMRANGEBYSCORE', key, '(0',
                    format('%d', now - win))
            end
            -- What ZCARD would answer: the trim removed gone members.
            if #v < 4 then
                nreq = #v / 2 - (peek and 0 or gone)
            else
                nreq = redis.call('ZCARD', key)
            end
            nreq = nreq - (tname and 1 or 0)
            if peek then
                nreq = nreq - gone
            end
            -- Every request is at least one unit (a total out of shape).
            if not tname or units < nreq or nreq == 0 then
                units = nreq
            end
            -- The total follows what expired, even when this request is
            -- refused: those members are gone now.
            if tname and gone > 0 and not peek then
                if units > nreq then
                    redis.call('ZADD', key, -units, tname)
                else
                    redis.call('ZREM', key, tname)
                    tname, made = false, false
                end
            end
            -- The oldest live request's rank.
            base = (tname and 1 or 0) + (peek and gone or 0)
        end
        ok = units + cost <= limit
        if ok and units == 0 then
            -- More quota comes back when this request's own entry expires.
            r, r0, rs, rs0 = limit - cost, limit, win, 0
        else
            -- Admitted: more quota comes back when the oldest entry
            -- expires. Refused: this request fits when the unit at
            -- units + cost - limit - 1 has expired: walk from the oldest
            -- until the weights cover it (one member per request, never
            -- one per unit). Past MAX_WALK members the newest one's
            -- expiry answers (by then everything has expired: later than
            -- exact, never earlier), so a refusal's work stays bounded
            -- whatever the quota.
            local u = 0
            if ok then
                r0 = limit - units
                r = r0 - cost
            else
                r, r0, u = 0, 0, units + cost - limit - 1
            end
            local at, rank, step, acc = false, base, 1, 0
            -- Without a total each member is one unit, so the wait for
            -- u = 0 is the oldest live member's, rank gone of the first
            -- read: the trim removed the ranks before it (no score at or
            -- below 0 came first), or a peek removed nothing.
            if u == 0 and not tname and gone < #v / 2
                and (peek or first > 0) then
                at = v[2 * gone + 2] + 0
            end
            while not at and rank - base < MAX_WALK do
                local e = redis.call('ZRANGE', key, rank, rank + step - 1,
                    'WITHSCORES')
                if #e == 0 then
                    break
                end
                for j = 1, #e, 2 do
                    local x, w = e[j + 1] + 0, 1
                    if made and x >= made then
                        w = match(e[j], '^(%d+)%*')
                        w = w and w + 0 or 1
                    end
                    acc = acc + w
                    if acc > u then
                        at = x
                        break
                    end
                end
                rank = rank + step
                step = step * 2
                if rank + step - base > MAX_WALK then
                    step = MAX_WALK - (rank - base)
                end
            end
            if not at and rank - base >= MAX_WALK then
                at = redis.call('ZRANGE', key, '-1', '-1', 'WITHSCORES')[2] + 0
            end
            -- Without such a member (a total out of shape), a window.
            rs = at and ceil(at + win - now) or win
            rs0 = rs
        end
        value, ttl = false, ceil(win / 1000) + 1 + ALLOT_TTL

    elseif alg == 'c' then
        -- Approximated sliding window: current fixed window plus the
        -- previous one weighted by how much of it still overlaps the
        -- rolling window.
        --
        -- The value is one decimal integer "T PPPPPPPPP CCCCCCCCC": T = 1 +
        -- the window index mod 8, then the previous and the current count
        -- in nine digits each (at most 1e8 each). It is at most
        -- 8999999999999999999 < 2^63, so Redis keeps it as an integer
        -- object, with no string buffer: the smallest layout per identity
        -- (bench/memory.sh). It is built and read as text: as a Lua double
        -- it would lose digits; its first ten digits, T and P, are exact.
        -- Index mod 8 is enough because the TTL ends the key 1-2 ms after
        -- its window's successor ends: it is read only in its own window,
        -- the next, or a few ms later (at least a window of 1 ms each),
        -- never 8 windows later.
        local idx = floor(now / win)
        local cur, prev = 0, 0
        -- "T PPPPPPPPP" as stored, when this window's: the write keeps it.
        local head
        v = redis.pcall('GET', key)
        if type(v) == 'string' then
            local stp, sc = match(v, '^([1-8]%d%d%d%d%d%d%d%d%d)(%d%d%d%d%d%d%d%d%d)$')
            if stp then
                -- T and P as one number: one conversion, exact (< 2^53).
                local tp = stp + 0
                local tag = floor(tp / 1000000000)
                if tag == idx % 8 + 1 then
                    cur, prev = sc + 0, tp - tag * 1000000000
                    head = stp
                elseif tag == (idx - 1) % 8 + 1 then
                    prev = sc + 0
                end
            end
        elseif type(v) == 'table' and v.err then
            foreign = true
        end
        -- The previous window's weighted count.
        local start = idx * win
        local w = prev * (win - (now - start)) / win
        ok = w + cur + cost <= limit
        -- Remaining and reset for c requests counted in this window: reset
        -- is the earliest time (microseconds from now) at which the
        -- estimate is <= limit - r - 1 (one more unit), or, for a refused
        -- request, <= limit - cost (the request fits). The estimate only
        -- falls while nothing is admitted, so this is exact. The times are
        -- relative to now: absolute times near 1.8e15 us are only 0.25 us
        -- apart as doubles, which could round the answer a microsecond
        -- early.
        -- Admitted: k = 0 is now, k = 1 after this request. Refused: only
        -- k = 1, the request's own wait.
        for k = ok and not solo and 0 or 1, 1 do
            local c = ok and k == 1 and cur + cost or cur
            local rr, rrs = floor(limit - (w + c)), 0
            if rr < 0 then
                rr = 0
            end
            if rr < limit then
                local x = ok and limit - rr - 1 or limit - cost
                if w + c <= x then
                    rrs = 0
                elseif c <= x then
                    -- Within this window: prev * (1 - f) + c <= x.
                    rrs = ceil((start - now) + win - win * (x - c) / prev)
                else
                    -- In the next window this count becomes the weighted
                    -- one.
                    rrs = ceil((start - now) + 2 * win - win * x / c)
                end
            end
            if k == 0 then
                r0, rs0 = rr, rrs
            end
            r, rs = rr, rrs
        end
        if ok then
            if head then
                -- The usual case under load: only the count changes.
                value = head .. format('%09d', cur + cost)
            else
                value = format('%d%09d%09d', idx % 8 + 1, prev, cur + cost)
            end
            -- Kept until the window after the next one starts: by then
            -- neither count weighs anything.
            ttl = ceil(((idx + 2) * win - now) / 1000) + 1
        else
            r, r0 = 0, 0
        end

    elseif alg == 'g' then
        -- GCRA: the theoretical arrival time (TAT) of the next request.
        -- Emission interval win/limit, tolerance burst intervals. Half a
        -- microsecond of slack absorbs the rounding of fractional
        -- intervals without letting one more request through.
        local T = win / limit
        local tau = burst * T
        v = redis.pcall('GET', key)
        if type(v) == 'table' and v.err then
            foreign = true
        end
        local tat = tonumber(v)
        -- Only finite values count ("nan" or "inf" would refuse the key for
        -- ever). A TAT beyond what an admission can leave (the store's
        -- clock stepped back) counts as one request left: capping it at a
        -- full bucket (now + tau) without writing it would refuse the key
        -- until the clock caught up, since a refusal writes nothing.
        if not tat or tat ~= tat or tat == math.huge or tat < now then
            tat = now
        elseif tat > now + tau + 1 then
            tat = now + tau - T
        end
        local new_tat = tat + cost * T
        ok = new_tat - now <= tau + 0.5
        -- Remaining and reset for a TAT of tt: the stored one, then (if
        -- admitted) the new one. Counted by k, not stepped by T: near 1.8e15
        -- doubles are 0.25 apart, and a T below half that leaves tt + T == tt.
        for k = ok and solo and 1 or 0, ok and 1 or 0 do
            local tt = k == 0 and tat or new_tat
            local rr, rrs = floor((tau - (tt - now)) / T + 0.5 / T), 0
            if rr < 0 then
                rr = 0
            end
            if tt > now and rr < burst then
                rrs = ceil(tt - tau + (rr + 1) * T - now)
            end
            if k == 0 then
                r0, rs0 = rr, rrs
            end
            r, rs = rr, rrs
        end
        if ok then
            value = format('%.17g', new_tat)
            ttl = ceil((new_tat - now) / 1000) + 1
        else
            -- The request fits when the TAT is cost intervals inside the
            -- tolerance.
            r, r0, rs = 0, 0, ceil(tat - tau + cost * T - now)
        end

    elseif sub(alg, 1, 1) == 'd' and #alg <= 33 then
        if limit > DISTINCT_MAX or cost ~= 1 then
            return redis.error_reply('ERR slidinglimit: bad limit ' .. i)
        end
        ok, r, rs, r0, rs0, foreign, value = sl_distinct(key, sub(alg, 2),
            limit, win)
        ttl = ceil(win / 1000) + 1

    else
        return redis.error_reply('ERR slidinglimit: bad algorithm ' .. i)
    end

    -- A lease's expiry bounds a lost request only; one in flight may end
    -- any moment, and nothing tells when: a short, honest wait.
    if alg == 'n' then
        if rs > LEASE_WAIT then
            rs = LEASE_WAIT
        end
        if rs0 > LEASE_WAIT then
            rs0 = LEASE_WAIT
        end
    end
    if peek then
        blocked[i] = bend and ceil(bend - now) or 0
    end
    if not ok then
        admitted = false
        -- A refusal starts the limit's block (one that runs is not
        -- extended), written at once: a refusal writes nothing else.
        if block > 0 and not bend and not peek then
            redis.call('SET', key .. '.b', format('%.17g', now + block), 'PX',
                ceil(block / 1000) + 1)
            if rs < block then
                rs = block
            end
        end
        rs0 = rs
    end
    local o = 3 * i
    out[o + 1], out[o + 2], out[o + 3] = ok and 1 or 0, r, rs
    if held then
        local h = 9 * i - 9
        held[h + 1], held[h + 2], held[h + 3], held[h + 4], held[h + 5],
            held[h + 6], held[h + 7], held[h + 8], held[h + 9] = r0, rs0,
            foreign, value, ttl, cost, units, nreq, tname
    end
end

if not admitted or peek then
    out[3] = admitted and 1 or 0
    if not held then
        out[5], out[6] = r0, rs0
    else
        for i = 1, n do
            out[3 * i + 2], out[3 * i + 3] = held[9 * i - 8], held[9 * i - 7]
            if peek then
                out[3 + 3 * n + i] = blocked[i]
            end
        end
    end
    return out
end

for i = 1, n do
    local key = KEYS[i]
    -- Two limits on one key (one name= used twice in a section) are one
    -- budget: the request counts once, written by the last of them (as the
    -- shm store does, src/sl_shm.c).
    local last = true
    for j = i + 1, n do
        if KEYS[j] == key then
            last = false
        end
    end
    if last and held then
        local h = 9 * i - 9
        foreign, value, ttl, cost, units, nreq, tname = held[h + 3],
            held[h + 4], held[h + 5], held[h + 6], held[h + 7],
            held[h + 8], held[h + 9]
    end
    if last then
        -- A key holding something this script did not write is replaced
        -- (see the top); this is worth a line in the log.
        if foreign then
            redis.log(redis.LOG_WARNING,
                'slidinglimit: replacing ' .. key .. ', which held foreign data')
        end
        if type(value) == 'table' then
            -- distinct=: the value, seen now (sl_distinct above).
            if foreign then
                redis.call('DEL', key)
            end
            if value[1] ~= '' then
                redis.call('ZADD', key, format('%d', now), value[1])
                redis.call('PEXPIRE', key, format('%d', ttl))
            end
        elseif value then
            redis.call('SET', key, value, 'PX', ttl)
        else
            if foreign then
                redis.call('DEL', key)
                units, nreq, tname = 0, 0, false
            end
            log_insert(key, cost)
            units, nreq = units + cost, nreq + 1
            if units > nreq then
                redis.call('ZADD', key, -units,
                    tname or '#' .. sec .. format('%06d', usec))
            elseif tname then
                redis.call('ZREM', key, tname)
            end
            redis.call('PEXPIRE', key, format('%d', ttl))
        end
    end
end
return out
