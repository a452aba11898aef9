# ruff: noqa: E501
"""ALFWorld prompts, copied word for word from the paper's Appendix A (the household benchmark (Shridhar et al., 2021); checked at ``clean``, ``heat``, ``cool`` and completion).

The texts keep the paper's own wording and typos. The one change: the paper's template field
``{num_task}`` is spelled ``{num_tasks}`` everywhere, so one field name serves every preset.
Fields are filled by :func:`inferact_langgraph.prompts.fill`, never by ``str.format``.

Example:
    >>> from inferact_langgraph.prompts import alfworld
    >>> "{num_tasks}" in alfworld.INFERENCE and "{action}" in alfworld.VERIFICATION
    True
"""

# Appendix A.3.2, Task Inference Unit. Fields: {num_tasks}, {action}.
INFERENCE = """\
You have a powerful Theory-of-Mind capability. A reasoning agent is interacting with a household to solve a user’s task. I will give you the reasoning trajectory the agent takes. Your task is to infer the {num_tasks} most likely tasks that the reasoning trajectory solved. Remember your inferred tasks should be as diverse as possible and semantically different from each other. Besides, your inferred task should avoid using specific labels for items or locations (e.g., drawer 1 or cabinet 2). Instead, simply use general terms like ’drawer’ or ’cabinet’. Your response MUST use the following format:
The {num_tasks} most likely tasks are: <A. task1 B. task2 C. task3>
The reason is: <the reason you think>.
The reasoning trajectory the agent takes is {action}."""

# Appendix A.3.2, Task Verification (Validation) Unit. Fields: {action}, {instructions}.
VERIFICATION = """\
You are highly skilled at evaluating agent-based household tasks. An agent named Actor assists the user in completing these tasks. I will provide you with the reasoning trajectory performed by the agent and a set of candidate tasks. Please remember that the agent might be in the middle of a task or might have completed the task. You have two tasks:
1. Identify whether the trajectory has completed each task or not.
2. If it has completed the task, give a probability (ranging from 0.0 to 1.0) that indicates the task is **correctly completed**. If it has not completed the task, give a probability (ranging from 0.0 to 1.0) that indicates the trajectory is **correctly progressing towards the completion of the task**.
Your response MUST follow the format:
A: <Completed/Not Completed> P_A: <the probability of the task A being correct>
B: <Completed/Not Completed> P_B: <the probability of the task B being correct>
…
i: <Completed/Not Completed> P_i: <the probability of the task i being correct>
Justification:<A brief justification for your response>
The reasoning trajectory is {action}
The candidate tasks are as follows: {instructions}"""

# Appendix A.1, Standard Evaluation. Fields: {instruction}, {trajectory}.
STANDARD = """\
You will be given the task and the reasoning trajectory you performed to complete the task. Please remember that the agent might be in the middle of a task or might have completed the task.
You have two tasks:
1. Identify whether the trajectory has completed the task or not.
2. If it has completed the task, identify if it is **correctly completed**. If it has not completed the task, identify if the trajectory is **correctly progressing towards the completion of the task**.
Your response should follow the format:
Completion: <Completed/Not Completed>
Correctness: <Correct/Incorrect>
Confidence: <the probability (ranging from 0.0 to 1.0) of the task being correct>
Justification: <A brief justification for your response>
The reasoning trajectory is {trajectory}
The task is: {instruction}"""

# Appendix A.2, Multi-step Evaluation. Fields: {instruction}, {trajectory}.
MULTISTEP = """\
You will be given the reasoning trajectory you performed in a household task for a given task. Your task is to evaluate the reasoning trajectory step by step and determine how likely each step is correct. Each step starts with ">" and includes two parts: Action and Observation from the enviroment. You need to assign a probability (ranging from 0.0 to 1.0) to each step, indicating the likelihood that the step is correct.
Your response should follow the format:
Step 1: <A Probability ranging from 0.0 to 1.0 to indicate the likelihood that step 1 is correct>
Step 2:<A Probability ranging from 0.0 to 1.0 to indicate the likelihood that the step 2 is correct>
…
Step i: <A Probability ranging from 0.0 to 1.0 to indicate the likelihood that the step i is correct>
Justification: <A brief justification for your response. No more than six sentences.>
The task is: {instruction} The reasoning trajectory is {trajectory}"""
