"""The Python API of a worker, at the import path agents' own code uses:
`from baton.agent import Worker`. The API itself lives with the other operations (the
`api` folder); this face stays put whatever moves behind it."""

from baton.api.worker import (
    DEFAULT_TTL,
    Proposal,
    StaleRead,
    Task,
    Worker,
    default_worker_id,
    handoff,
)

__all__ = ["DEFAULT_TTL", "Proposal", "StaleRead", "Task", "Worker", "default_worker_id", "handoff"]
