"""The LLM layer."""
