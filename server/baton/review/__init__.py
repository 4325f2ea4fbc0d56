"""The developer's decisions on hunks: one definition behind the editor, the terminal and
every other face."""
