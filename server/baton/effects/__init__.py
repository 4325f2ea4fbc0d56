"""Side effects with a write-ahead record: files set to their final state, accepted hunks
applied, writes repeated in a checkout, and an agent tool's own writes recorded. Each is
recorded before it happens and settled after, so a crash at any instant is recovered once."""
