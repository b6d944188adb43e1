# mypy: ignore-errors
"""LangChain's classic text ReAct agent (`create_react_agent` + `AgentExecutor`) with
langchain-openai on Chat Completions: its prompt is one user message re-rendered every step
(the scratchpad grows inside it, before the trailing `Thought:`). Runs in the corpus venv."""

import os

from langchain_classic.agents import AgentExecutor, create_react_agent
from langchain_core.prompts import PromptTemplate
from langchain_core.tools import Tool
from langchain_openai import ChatOpenAI

from benchmarks.framework_corpus.script import DESCRIPTIONS, SYSTEM, run_tool, task_prompt

# The prompt of LangChain's hub `hwchase17/react`, with the system text in front.
TEMPLATE = (
    SYSTEM
    + """

Answer the following questions as best you can. You have access to the following tools:

{tools}

Use the following format:

Question: the input question you must answer
Thought: you should always think about what to do
Action: the action to take, should be one of [{tool_names}]
Action Input: the input to the action
Observation: the result of the action
... (this Thought/Action/Action Input/Observation can repeat N times)
Thought: I now know the final answer
Final Answer: the final answer to the original input question

Begin!

Question: {input}
Thought:{agent_scratchpad}"""
)

tools = [
    Tool(name=name, func=lambda argument, name=name: run_tool(name, argument), description=text)
    for name, text in DESCRIPTIONS.items()
]
model = ChatOpenAI(
    model="gpt-5",
    base_url=os.environ["BASE_URL"] + "/v1",
    api_key="sk-loopback",
    disable_streaming=True,  # the loopback API answers whole replies only
)
agent = create_react_agent(model, tools, PromptTemplate.from_template(TEMPLATE))
executor = AgentExecutor(agent=agent, tools=tools, max_iterations=30)
print(executor.invoke({"input": task_prompt("react")})["output"])
