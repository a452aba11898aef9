# ruff: noqa: E501
"""WebShop prompts, copied word for word from the paper's Appendix A (the online-shopping benchmark (Yao et al., 2022); checked at ``click[Buy Now]``).

The texts keep the paper's own wording and typos. The one change: the paper's template field
``{num_task}`` is spelled ``{num_tasks}`` everywhere, so one field name serves every preset.
Fields are filled by :func:`inferact_langgraph.prompts.fill`, never by ``str.format``.

Example:
    >>> from inferact_langgraph.prompts import webshop
    >>> "{num_tasks}" in webshop.INFERENCE and "{action}" in webshop.VERIFICATION
    True
"""

# Appendix A.3.1, Task Inference Unit. Fields: {num_tasks}, {action}.
INFERENCE = """\
You have a powerful Theory-of-Mind capability. An agent is helping the user to shop online. I will give you the sequence of actions the agent takes and corresponding observations. You need to infer the user’s instruction based on the agent’s actions and observations. To help you understand the style of user’s instructions better, here are some examples:
1. I need a long lasting 6.76 fl oz bottle of léau díssey, and price lower than 100.00 dollars.
2. I need to buy a ready to hang art print that’s sixteen by twenty-four inches. look for one that has women and palm leaves on it, and price lower than 100.00 dollars.
3. i am looking for a pack of 5 dark blonde hair dye touch up spray, and price lower than 110.00 dollars.
Please follow the above style to infer the {num_tasks} most likely user’s instructions. Remember your inferred instructions should be as diverse as possible and semantically different from each other. Your response MUST use the following format: The {num_tasks} most likely user’s instructions are:
<A. instructions B. instruction2 C. instruction3 …>. The reason is: <the reason you think>.
The sequence of actions the agent takes is {action}."""

# Appendix A.3.1, Task Verification (Validation) Unit. Fields: {action}, {instructions}, {num}.
VERIFICATION = """\
You are a powerful judge of agent-based web shopping. An agent, Actor, is helping the user to shop online. I will give you the trajectory performed by Actor and a set of candidate user’s instructions. You need to select your top {num} guesses and carefully assign a probability (ranging from 0.0 to 1.0) to each, indicating the likelihood that the candidate instruction is fulfilled by the Actor’s trajectory. Your response MUST follow the format:
G1: <Only output the option label of the instruction that you think is correct. No other words or explanation> P1: <the probability of the instruction being correct>
…
G_i: <Only output the option label of the instruction that you think is correct. No other words or explanation> P_i: <the probability of the instruction being correct>
Justification: <A brief justification for your response>.
Remember, Only evaluate if criteria that are explicitly mentioned in the instruction are met or not. If some features of selected products are not specified in the instruction, you should not consider them in your judgement.

The trajectory performed by Actor is {action}. The candidate user’s instructions are {instructions}."""

# Appendix A.1, Standard Evaluation. Fields: {instruction}, {trajectory}.
STANDARD = """\
You will be given the reasoning trajectory you perfomed on a shopping website for a given user’s instruction. Your task is to evaluate the reasoning trajectory and determine how likely it fulfilled the user’s instruction. You need to assign a probability (ranging from 0.0 to 1.0) to your response, indicating the likelihood that the reasoning trajectory is correct. Your response MUST follow the format:
The answer is: <Correct/Incorrect>
Confidence: <A probability ranging from 0.0 to 1.0 of the task being correct>
Justification: <A brief justification for your response>
The instruction is: {instruction}
The reasoning trajectory is {trajectory}"""

# Appendix A.2, Multi-step Evaluation. Fields: {instruction}, {trajectory}.
MULTISTEP = """\
You will be given the reasoning trajectory you performed on a shopping website for a given user’s instruction. Your task is to evaluate the reasoning trajectory step by step and determine how likely each step is correct. Each step has three parts: Thought, Action, and Observation. You need to assign a probability (ranging from 0.0 to 1.0) to each step, indicating the likelihood that the step is correct.
Your response MUST follow the format:
Step 1: <A Probability ranging from 0.0 to 1.0 to indicate the likelihood that step 1 is correct>
Step 2:<A Probability ranging from 0.0 to 1.0 to indicate the likelihood that step 2 is correct>
…
Step i: <A Probability ranging from 0.0 to 1.0 to indicate the likelihood that the step i is correct>
Justification: <A brief justification for your response. No more than six sentences.>
The instruction is: {instruction}
The reasoning trajectory is {trajectory}"""
