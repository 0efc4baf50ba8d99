"""The loops: the LLM call cycle, the tool loop and the streaming tool loop."""
