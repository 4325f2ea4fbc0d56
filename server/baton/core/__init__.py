"""The pure core: operations and state, the fold, hunks, diffs, keys, path rules and the
brief. Functions of their inputs only: no file, database, clock or event loop, so every
face can trust them and a hook can import them cheaply."""
