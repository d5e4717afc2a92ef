-- The KEYS layout of every script but add.lua (which has its own, _keys_add.lua), inlined
-- before _common.lua by lib/scripts.ts.
--
-- KEYS (the same layout for every script, all sharing the queue's hash tag):
--   1..10 pending lists p0..p9 (ids, FIFO, front = next)   11 job id counter
--   12 lease token counter   13 data hash (id -> payload)   14 meta hash (id -> JSON)
--   15 caller-id index (caller id -> id)   16 delayed zset (id -> due ms)
--   17 leased zset (id -> deadline ms)   18 lease hash (id -> "token:workerId")
--   19 dead zset (id -> died ms)   20 workers zset (workerId -> last heartbeat ms)
--   21 wake list   22 results hash (public id -> result)   23 result expiry zset
--   24 progress hash (id -> value)   25 worker id counter   26 event channel
--   27 parked workers zset (workerId -> parked until ms: idle, blocked on the wake list)
--   28 heartbeat hash (b: last beat of any worker, s: since when beats are judged, see beat)
--   29 caller ids taken after completion (zset caller id -> until ms; see dedupeWindowMs)
--   30 lease set of the calling worker (unused when the caller is no worker)
--   31 hand-off list of the calling worker (what its idle wait moved out of the wake list)
local rcall = redis.call
local K_ID, K_TOK, K_DATA, K_META, K_IDS = KEYS[11], KEYS[12], KEYS[13], KEYS[14], KEYS[15]
local K_DELAYED, K_LEASED, K_TOKENS, K_DEAD, K_WORKERS = KEYS[16], KEYS[17], KEYS[18], KEYS[19], KEYS[20]
local K_WAKE, K_RES, K_REXP, K_PROG, K_WSEQ, K_EV, K_PARKED =
  KEYS[21], KEYS[22], KEYS[23], KEYS[24], KEYS[25], KEYS[26], KEYS[27]
local K_HB, K_TAKEN, K_WLEASES, K_HANDS = KEYS[28], KEYS[29], KEYS[30], KEYS[31]

local function pending_key(p)
  return KEYS[p + 1]
end
