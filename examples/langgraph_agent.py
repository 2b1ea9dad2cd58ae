"""An agent that remembers what a user tells it from one conversation to the next, with
LangGraph's long-term memory store on mnem (one SQLite file, no server).

It runs without network: the chat model is a stand-in (``StandInChatModel``: two rules
instead of an LLM). Everything else is real — LangGraph's graph and its store interface,
mnem's store and recall. To use a real model, replace ``StandInChatModel.reply`` with a
call to it, passing the recalled memories in its prompt.

    pip install "mnem[langgraph]"
    python examples/langgraph_agent.py [agent.db]
"""

from __future__ import annotations

import sys
import uuid
from typing import List

from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.store.base import BaseStore

from mnem import Memory
from mnem.langgraph import MnemStore


class StandInChatModel:
    """Stands in for a chat model, which this example cannot reach: "Remember …" is
    acknowledged, anything else is answered with the best-matching memory."""

    def reply(self, text: str, memories: List[str]) -> str:
        if text.lower().startswith("remember"):
            return "Noted."
        return f"You told me: {memories[0]}" if memories else "I don't know that yet."


def build(store: BaseStore):
    """One node: store what the user asks to remember, recall what matches the turn."""
    model = StandInChatModel()

    def respond(state: MessagesState, config: RunnableConfig, *, store: BaseStore):
        namespace = ("users", config["configurable"]["user_id"], "memories")
        text = state["messages"][-1].content
        if text.lower().startswith("remember"):
            fact = text.split(" ", 1)[1].removeprefix("that ")
            store.put(namespace, str(uuid.uuid4()), {"memory": fact})
            memories: List[str] = []
        else:
            found = store.search(namespace, query=text, limit=3)
            memories = [item.value["memory"] for item in found]
        return {"messages": [AIMessage(model.reply(text, memories))]}

    builder = StateGraph(MessagesState)
    builder.add_node("respond", respond)
    builder.add_edge(START, "respond")
    builder.add_edge("respond", END)
    return builder.compile(store=store)


def main(path: str = "agent.db", embedder: str = "builtin") -> List[str]:
    graph = build(MnemStore(Memory(path, team="example", embedder=embedder)))
    config = {"configurable": {"user_id": "ann"}}
    replies = []
    # Each turn starts a new conversation: only the store carries anything over.
    for turn in [
        "Remember that I live in Lisbon",
        "Remember that I take my coffee black",
        "How do I take my coffee?",
    ]:
        answer = graph.invoke({"messages": [HumanMessage(turn)]}, config)
        replies.append(answer["messages"][-1].content)
        print(f"user:  {turn}\nagent: {replies[-1]}")
    return replies


if __name__ == "__main__":
    main(*sys.argv[1:2])
