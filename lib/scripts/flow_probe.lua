-- flow_probe: for repair() (docs/internals/flows.md): which of these children of a waiting parent
-- still exist, or have their notice waiting in this queue's outbox.
--! keys: data flowOutbox
--! argv: count seqs*count
-- Returns: per seq 1 it exists or its notice waits, 0 neither (its notice was lost).
local out = {}
for j = 1, tonumber(ARGV[1]) do
  local seq = ARGV[1 + j]
  out[j] = (data_has(seq) or rcall('HEXISTS', K_FLOW_OUTBOX, seq) == 1) and 1 or 0
end
return out
