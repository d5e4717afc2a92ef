-- cancel: the job stops existing, wherever it is; a holder is told on the event channel.
-- KEYS: the common layout.
-- ARGV: public id.
-- Returns: 1 cancelled, 0 no such job.
local n = resolve(ARGV[1])
if not n then
  return 0
end
local leased = rcall('HEXISTS', K_TOKENS, n) == 1
if leased then
  drop_hand(n)
end
destroy(n, decode_meta(rcall('HGET', K_META, n)))
if leased then
  rcall('PUBLISH', K_EV, 'c:' .. n)
end
return 1
