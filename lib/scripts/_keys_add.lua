-- The KEYS layout of add.lua (an add touches few keys; each key passed costs every call).
--
-- KEYS: 1 job id counter   2 data hash   3 meta hash   4 caller-id index   5 delayed zset
--   6 wake list   7 parked workers zset   8 lease token counter   9 leased zset
--   10 lease hash   11 the producer's idempotency hash (add call seq -> what it did)
--   12.. the pending lists of the priorities named in ARGV[1], in that order
--   (ARGV[1] = '5' for one default-priority job, '0123456789' when a batch needs them all).
local rcall = redis.call
local K_ID, K_DATA, K_META, K_IDS, K_DELAYED = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local K_WAKE, K_PARKED, K_TOK, K_LEASED, K_TOKENS = KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10]
local K_ADDS = KEYS[11]
-- Not passed to add (the shared functions that use them are never called from add.lua).
local K_DEAD, K_WORKERS, K_RES, K_REXP, K_PROG, K_WSEQ, K_EV, K_WLEASES, K_HB, K_TAKEN, K_HANDS

local PENDING_SLOT = {}
for i = 1, #ARGV[1] do
  PENDING_SLOT[tonumber(string.sub(ARGV[1], i, i))] = 11 + i
end

local function pending_key(p)
  return KEYS[PENDING_SLOT[p]]
end
