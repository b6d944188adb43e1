# mypy: ignore-errors
"""LangChain's classic structured-chat agent (`create_structured_chat_agent` +
`AgentExecutor`) with langchain-openai on Chat Completions: its user message is re-rendered
every step with the scratchpad growing in the middle, before a trailing reminder. Runs in
the corpus venv."""

import os

from langchain_classic.agents import AgentExecutor, create_structured_chat_agent
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.tools import Tool
from langchain_openai import ChatOpenAI

from benchmarks.framework_corpus.script import DESCRIPTIONS, SYSTEM, run_tool, task_prompt

# The prompt of LangChain's hub `hwchase17/structured-chat-agent`, with the system text first.
INSTRUCTIONS = (
    SYSTEM
    + """

Respond to the human as helpfully and accurately as possible. You have access to the following tools:

{tools}

Use a json blob to specify a tool by providing an action key (tool name) and an action_input key (tool input).

Valid "action" values: "Final Answer" or {tool_names}

Provide only ONE action per $JSON_BLOB, as shown:

```
{{
  "action": $TOOL_NAME,
  "action_input": $INPUT
}}
```

Follow this format:

Question: input question to answer
Thought: consider previous and subsequent steps
Action:
```
$JSON_BLOB
```
Observation: action result
... (repeat Thought/Action/Observation N times)
Thought: I know what to respond
Action:
```
{{
  "action": "Final Answer",
  "action_input": "Final response to human"
}}

Begin! Reminder to ALWAYS respond with a valid json blob of a single action. Use tools if necessary. Respond directly if appropriate. Format is Action:```$JSON_BLOB```then Observation"""  # noqa: E501
)
HUMAN = "{input}\n\n{agent_scratchpad}\n (reminder to respond in a JSON blob no matter what)"

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
prompt = ChatPromptTemplate.from_messages([("system", INSTRUCTIONS), ("human", HUMAN)])
agent = create_structured_chat_agent(model, tools, prompt)
executor = AgentExecutor(agent=agent, tools=tools, max_iterations=30)
print(executor.invoke({"input": task_prompt("structured")})["output"])
