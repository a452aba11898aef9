# ruff: noqa: E501
"""HotPotQA prompts, copied word for word from the paper's Appendix A (multi-hop question answering with Search/Lookup/Finish (Yang et al., 2018); checked at ``Finish[answer]``).

The texts keep the paper's own wording and typos. The one change: the paper's template field
``{num_task}`` is spelled ``{num_tasks}`` everywhere, so one field name serves every preset.
Fields are filled by :func:`inferact_langgraph.prompts.fill`, never by ``str.format``.

Example:
    >>> from inferact_langgraph.prompts import hotpotqa
    >>> "{num_tasks}" in hotpotqa.INFERENCE and "{action}" in hotpotqa.VERIFICATION
    True
"""

# Appendix A.3.3, Task Inference Unit. Fields: {num_tasks}, {action}.
INFERENCE = """\
You have a powerful Theory-of-Mind capability. A reasoning agent is answering the user’s question using the following tools:
(1) Search[entity], which searches the exact entity on Wikipedia and returns the first paragraph if it exists. If not, it will return some similar entities to search.
(2) Lookup[keyword], which returns the next sentence containing keyword in the last passage successfully found by Search.
(3) Finish[answer], which returns the answer to the question and finishes the task.
I will give you the reasoning trajectory the agent takes. Your task is to infer the {num_tasks} most likely questions that the reasoning trajectory solved. Remember your inferred questions should be as diverse as possible and semantically different from each other.
Your response MUST use the following format: The {num_tasks} most likely questions are:
<A. question1 B. question2 C. question3>
The reason is: <the reason you think>."""

# The paper's HotPotQA inference prompt (A.3.3) ends without a trajectory field. This line is ours,
# worded like the ALFWorld one, so that the trajectory reaches the model.
INFERENCE_TRAJECTORY = "The reasoning trajectory the agent takes is {action}."

# Appendix A.3.3, Task Verification (Validation) Unit. Fields: {action}, {instructions}, {num}.
VERIFICATION = """\
You are a powerful judge of agent-based question answering. An agent, Actor, is helping the user to answer questions using following tools:
(1) Search[entity], which searches the exact entity on Wikipedia and returns the first paragraph if it exists. If not, it will return some similar entities to search.
(2) Lookup[keyword], which returns the next sentence containing keyword in the last passage successfully found by Search.
(3) Finish[answer], which returns the answer to the question and finishes the task.
I will give you the reasoning trajectory performed by the agent and a set of questions, your task is to select your top {num} guesses and assign a probability (ranging from 0.0 to 1.0) to each, indicating the likelihood that the question is solved by the reasoning trajectory. Your response MUST follow the format:
G1: <Only output the option label of the question that you think is correct. No other words or explanation.> P1: <the probability of the question being correct>
…
Gi: <Only output the option label of the question that you think is correct. No other words or explanation>
Pi: <the probability of the question i being correct>
Justification: <A brief justification for your response>
The reasoning trajectory is {action}
The candidate questions are as follows: {instructions}"""

# Appendix A.1, Standard Evaluation. Fields: {instruction}, {trajectory}.
STANDARD = """\
You will be given the question and the reasoning trajectory you performed to find the answer to the question. Your task is to evaluate the reasoning trajectory and determine how likely it is to be correct. You need to assign a probability (ranging from 0.0 to 1.0) to your response, indicating the likelihood that the reasoning trajectory is correct.
Your response MUST follow the format:
The answer is: <Correct/Incorrect>
Confidence: <A probability ranging from 0.0 to 1.0>
Justification: <A brief justification for your response>
The question is: {instruction}
The reasoning trajectory is {trajectory}"""

# Appendix A.2, Multi-step Evaluation. Fields: {instruction}, {trajectory}.
MULTISTEP = """\
You will be given the reasoning trajectory you performed in a question answering task for a given question. Your task is to evaluate the reasoning trajectory step by step and determine how likely each step is correct. Each step has three parts: Thought, Action, and Observation. You need to assign a probability (ranging from 0.0 to 1.0) to each step, indicating the likelihood that the step is correct. Your response should follow the format:
Step 1: <A Probability ranging from 0.0 to 1.0 to indicate the likelihood that the step 1 is correct>
Step 2:<A Probability ranging from 0.0 to 1.0 to indicate the likelihood that the step 2 is correct>
…
Step i: <A Probability ranging from 0.0 to 1.0 to indicate the likelihood that the step i is correct>
Justification: <A brief justification for your response. No more than six sentences.>
The instruction is: {instruction}
The reasoning trajectory is {trajectory}"""
