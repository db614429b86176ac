"""The execution layer: independent tasks on a local process, a local Dask cluster or a remote one.

Generic (it knows nothing of the model): :func:`~attnphase.execution.executor.run_tasks` computes the tasks
(:class:`~attnphase.execution.tasks.Task`) a :class:`~attnphase.execution.store.ResultStore` does not hold yet
(docs/distributed.md). ``numerics`` and ``validation`` build their jobs on it; it imports neither.
"""

from attnphase.execution.executor import ExecutorSpec, TaskFailed, map_tasks, run_tasks
from attnphase.execution.store import Outcome, ResultStore
from attnphase.execution.tasks import Task, code_version, task_key

__all__ = ["ExecutorSpec", "Outcome", "ResultStore", "Task", "TaskFailed", "code_version", "map_tasks",
           "run_tasks", "task_key"]
