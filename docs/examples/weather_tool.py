"""The seed's WeatherTool, three ways: a BaseTool class, @tool, and the tool loop.

Runs offline: the model is a MockProvider that asks for the weather once.
"""

from agcore_sync import (
    BaseTool,
    CycleConfig,
    InvalidArgumentsError,
    LlmCycle,
    MockProvider,
    Permission,
    PermissionChecker,
    PermissionConfig,
    ToolRegistry,
    tool,
)


class WeatherTool(BaseTool):
    """Current weather of a city (a stand-in answer, as in the seed)."""

    name = "get_weather"
    description = "Get the current weather of a city."
    parameters = {
        "type": "object",
        "properties": {"city": {"type": "string", "description": "the city's name."}},
        "required": ["city"],
        "additionalProperties": False,
    }
    required_permissions = (Permission.NETWORK,)

    def execute(self, args):
        city = args.get("city")
        if not city:
            raise InvalidArgumentsError("get_weather needs a city", self.name)
        return {"city": city, "temperature": 22, "unit": "°C"}


@tool(permissions=[Permission.NETWORK])
def get_weather(city: str) -> dict:
    """Get the current weather of a city.

    Args:
        city: the city's name.
    """
    return {"city": city, "temperature": 22, "unit": "°C"}


assert get_weather.definition() == WeatherTool().definition()  # the same schema, written two ways

model = MockProvider([
    MockProvider.tool_calls(("get_weather", {"city": "Beijing"})),
    MockProvider.text("It is 22 °C in Beijing today."),
])
checker = PermissionChecker(PermissionConfig())  # the seed's defaults: READ and NETWORK allowed
with ToolRegistry(permission_checker=checker) as registry:
    registry.register(get_weather)
    cycle = LlmCycle(model, CycleConfig())
    answer = cycle.submit_with_tools("What's the weather in Beijing?", registry)

print(answer.message.text)
for message in cycle.messages():
    print(message.role.value, message.content)
