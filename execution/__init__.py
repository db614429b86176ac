"""The execution layer: independent tasks on a local process, a local Dask cluster or a remote one.

Generic (it knows nothing of the model): a job is a list of :class:`~attnphase.execution.tasks.Task`
(a module-level function, its argument, a key hashing what the result depends on);
:func:`~attnphase.execution.executor.run_tasks` computes the ones the
:class:`~attnphase.execution.store.ResultStore` does not hold yet, on the executor an
:class:`~attnphase.execution.executor.ExecutorSpec` names, and returns one
:class:`~attnphase.execution.store.Outcome` per task, in order.  ``numerics`` and ``validation``
build their jobs on it; it imports neither (docs/distributed.md).
"""

from attnphase.execution.executor import ExecutorSpec, TaskFailed, map_tasks, run_tasks
from attnphase.execution.store import Outcome, ResultStore
from attnphase.execution.tasks import Task, code_version, task_key

__all__ = ["ExecutorSpec", "Outcome", "ResultStore", "Task", "TaskFailed", "code_version", "map_tasks",
           "run_tasks", "task_key"]
