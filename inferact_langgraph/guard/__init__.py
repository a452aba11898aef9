"""The guard: InferAct in front of the critical tools of a LangGraph or LangChain agent.

One module per concept; the public names are re-exported by :mod:`inferact_langgraph`.

* :mod:`.state`: the state keys the guard adds, declared once, and the view of a state
  that one step reads;
* :mod:`.marks`: ``@critical`` and :class:`~.marks.CriticalSpec`;
* :mod:`.options`: :class:`~.options.GuardOptions`, the policy;
* :mod:`.arguments`: the keywords both entry points take, and the critic they build;
* :mod:`.requests`: which messages are the user's requests (the task of a check);
* :mod:`.provenance`: the mark on the human messages a tool writes;
* :mod:`.binding`: a verdict or decision bound to one exact call, signed;
* :mod:`.authorization`: the lock: a critical tool runs once per authorization for its
  exact call;
* :mod:`.records`: the check record, the audit and feedback entries;
* :mod:`.check`: critical calls -> critic -> records;
* :mod:`.payloads`: the review's interrupt payload and resume decisions;
* :mod:`.review`: the review round;
* :mod:`.memory`: feedback, where it is kept, per owner, and how it reaches the actor;
* :mod:`.core`: :class:`~.core.InferActGuard`, the jobs put together for both entry points;
* :mod:`.graph`: ``with_inferact`` (graph surgery);
* :mod:`.middleware`: ``InferActMiddleware``;
* :mod:`.resume`: answering a review at most once (locks);
* :mod:`._compat`: every private LangGraph name the guard relies on.

The guard imports nothing from the research harness, the example environments, the apps or
the test doubles.
"""
