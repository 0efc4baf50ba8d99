"""PromptBundle: from a dict, from a JSON file, validation with the path of the bad field, rendering."""

from __future__ import annotations

import copy
import json
import pickle
import subprocess
import sys

import pytest

from agcore_sync.llm.mock import MockProvider
from agcore_sync.loop.cycle import CycleConfig, LlmCycle
from agcore_sync.prompt import BUNDLE_SCHEMA, PromptBundle, PromptError, PromptTemplate

SUPPORT = {
    "name": "support",
    "version": 2,
    "description": "Prompts of the support bot.",
    "defaults": {"product": "Acme", "tone": "friendly", "max_words": 50},
    "templates": {
        "system": "You support {product} users. Be {tone}; use at most {max_words} words.",
        "greeting": {
            "text": "Hello {user}, welcome to {product}!",
            "description": "First message of a chat.",
            "variables": ["user"],
        },
        "escalate": {"text": "Escalate ticket {ticket:>06} about {{urgent}} {issue}."},
    },
}


@pytest.fixture
def bundle():
    return PromptBundle.from_dict(SUPPORT)


def test_from_dict_keeps_the_names_in_order_with_defaults_and_descriptions(bundle):
    assert bundle.name == "support" and bundle.version == 2 and bundle.description == "Prompts of the support bot."
    assert bundle.names == ("system", "greeting", "escalate")
    assert "greeting" in bundle and "farewell" not in bundle
    assert bundle.defaults == {"product": "Acme", "tone": "friendly", "max_words": 50}
    assert bundle.descriptions == {"greeting": "First message of a chat."}


def test_get_returns_the_template_with_the_defaults_it_uses_bound(bundle):
    greeting = bundle.get("greeting")
    assert isinstance(greeting, PromptTemplate)
    assert greeting.bound == {"product": "Acme"}
    assert greeting.unbound == ("user",)
    assert bundle.get("system").unbound == ()


def test_render_fills_in_defaults_and_values_override_them(bundle):
    assert bundle.render("greeting", user="Ada") == "Hello Ada, welcome to Acme!"
    assert bundle.render("greeting", {"user": "Ada"}, product="Globex") == "Hello Ada, welcome to Globex!"
    assert bundle.render("escalate", ticket=42, issue="login") == "Escalate ticket 000042 about {urgent} login."


def test_render_reports_the_template_with_every_missing_variable(bundle):
    with pytest.raises(PromptError) as info:
        bundle.render("escalate")
    assert info.value.template == "escalate"
    assert info.value.missing == ("ticket", "issue")
    assert "'escalate'" in str(info.value)


def test_render_refuses_unknown_values_unless_allow_extra(bundle):
    with pytest.raises(PromptError) as info:
        bundle.render("greeting", user="Ada", usr="typo")
    assert info.value.unknown == ("usr",)
    assert bundle.render("greeting", user="Ada", usr="typo", allow_extra=True) == "Hello Ada, welcome to Acme!"


def test_get_of_an_unknown_name_is_a_prompt_error_listing_the_names(bundle):
    with pytest.raises(PromptError) as info:
        bundle.get("farewell")
    assert info.value.template == "farewell"
    assert "system, greeting, escalate" in str(info.value)


def test_load_reads_a_json_file(tmp_path, bundle):
    path = tmp_path / "support.json"
    path.write_text(json.dumps(SUPPORT), encoding="utf-8")
    loaded = PromptBundle.load(path)
    assert loaded == bundle
    assert PromptBundle.load(str(path)).render("greeting", user="Zoë") == "Hello Zoë, welcome to Acme!"


def test_load_reports_a_bad_field_with_its_path_and_the_file(tmp_path):
    data = copy.deepcopy(SUPPORT)
    data["templates"]["greeting"]["text"] = 42
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(PromptError) as info:
        PromptBundle.load(path)
    assert info.value.path == "templates.greeting.text"
    assert info.value.source == str(path)
    assert info.value.template == "greeting"
    assert "templates.greeting.text" in str(info.value) and str(path) in str(info.value)


def test_load_of_a_missing_file_is_a_prompt_error_with_the_cause(tmp_path):
    path = tmp_path / "absent.json"
    with pytest.raises(PromptError) as info:
        PromptBundle.load(path)
    assert info.value.source == str(path) and info.value.path is None
    assert isinstance(info.value.__cause__, FileNotFoundError)


def test_load_of_a_file_that_is_not_json_says_where_it_broke(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"name": "x",\n  "templates": }', encoding="utf-8")
    with pytest.raises(PromptError, match="line 2 column") as info:
        PromptBundle.load(path)
    assert isinstance(info.value.__cause__, json.JSONDecodeError)


def _with(change):
    data = copy.deepcopy(SUPPORT)
    change(data)
    return data


BAD_BUNDLES = [
    ("not an object", [SUPPORT], ""),
    ("no name", _with(lambda d: d.pop("name")), "name"),
    ("empty name", _with(lambda d: d.update(name="")), "name"),
    ("no templates", _with(lambda d: d.pop("templates")), "templates"),
    ("zero templates", _with(lambda d: d.update(templates={})), "templates"),
    ("unexpected top-level field", _with(lambda d: d.update(temlates={})), "temlates"),
    ("version not an integer", _with(lambda d: d.update(version="2")), "version"),
    ("version a boolean", _with(lambda d: d.update(version=True)), "version"),
    ("negative version", _with(lambda d: d.update(version=-1)), "version"),
    ("default of a list", _with(lambda d: d["defaults"].update(tone=["a"])), "defaults.tone"),
    ("default used by no template", _with(lambda d: d["defaults"].update(colour="red")), "defaults.colour"),
    ("template text not a string", _with(lambda d: d["templates"]["greeting"].update(text=42)),
     "templates.greeting.text"),
    ("template without text", _with(lambda d: d["templates"]["escalate"].pop("text")), "templates.escalate.text"),
    ("template with an unknown field", _with(lambda d: d["templates"]["escalate"].update(txt="x")),
     "templates.escalate.txt"),
    ("template of a number", _with(lambda d: d["templates"].update(system=3)), "templates.system"),
    ("string template that does not parse", _with(lambda d: d["templates"].update(system="Hi {")),
     "templates.system"),
    ("object template with a positional field",
     _with(lambda d: d["templates"]["escalate"].update(text="Ticket {0}")), "templates.escalate.text"),
    ("variable neither defaulted nor listed",
     _with(lambda d: d["templates"]["greeting"].update(text="Hello {user} from {city}")), "templates.greeting.text"),
    ("listed variable the text does not use",
     _with(lambda d: d["templates"]["greeting"].update(variables=["user", "city"])), "templates.greeting.variables[1]"),
    ("variables listed twice", _with(lambda d: d["templates"]["greeting"].update(variables=["user", "user"])),
     "templates.greeting.variables"),
    ("odd template name", _with(lambda d: d["templates"].update({"a.b": 7})), 'templates["a.b"]'),
]


@pytest.mark.parametrize("data, path", [case[1:] for case in BAD_BUNDLES], ids=[case[0] for case in BAD_BUNDLES])
def test_a_bad_bundle_fails_with_the_json_path_of_the_bad_field(data, path):
    with pytest.raises(PromptError) as info:
        PromptBundle.from_dict(data)
    assert info.value.path == path
    assert (f"at {path}:" if path else "(the document)") in str(info.value)


def test_an_error_message_never_quotes_a_whole_template_text():
    data = _with(lambda d: d["templates"].update(system=["A long secret prompt text"]))
    with pytest.raises(PromptError) as info:
        PromptBundle.from_dict(data)
    assert "secret" not in str(info.value)


def test_a_variable_left_to_render_time_needs_no_listing_when_the_template_lists_none():
    bundle = PromptBundle.from_dict({"name": "n", "templates": {"t": {"text": "{a} {b}"}}})
    assert bundle.get("t").unbound == ("a", "b")


def test_a_listed_variable_may_also_have_a_default():
    data = {"name": "n", "defaults": {"a": 1}, "templates": {"t": {"text": "{a} {b}", "variables": ["a", "b"]}}}
    assert PromptBundle.from_dict(data).render("t", b=2) == "1 2"


def test_to_dict_round_trips_through_json(bundle):
    data = json.loads(json.dumps(bundle.to_dict()))
    assert data["templates"]["greeting"] == {"text": "Hello {user}, welcome to {product}!",
                                             "description": "First message of a chat."}
    assert PromptBundle.from_dict(data) == bundle


def test_a_bundle_is_a_value_that_pickles(bundle):
    assert pickle.loads(pickle.dumps(bundle)) == bundle
    assert bundle != PromptBundle.from_dict(_with(lambda d: d.update(version=3)))


def test_the_constructor_takes_python_values_and_runs_the_same_checks():
    bundle = PromptBundle("py", {"a": "Hi {name}", "b": PromptTemplate("Bye {name}")}, {"name": "Ada"},
                          descriptions={"b": "Farewell."})
    assert bundle.render("a") == "Hi Ada" and bundle.render("b") == "Bye Ada"
    with pytest.raises(PromptError) as info:
        PromptBundle("py", {"a": "Hi {name}"}, {"nmae": "Ada"})
    assert info.value.path == "defaults.nmae"
    with pytest.raises(PromptError) as info:
        PromptBundle("py", {"a": PromptTemplate("Hi {name}", name="Ada")})
    assert info.value.path == "templates.a"
    with pytest.raises(PromptError) as info:
        PromptBundle("py", {"a": "x"}, descriptions={"z": "no such template"})
    assert info.value.path == "templates.z"
    with pytest.raises(TypeError):
        PromptBundle("py", {"a": 1})


def test_a_bundle_template_with_all_defaults_is_a_system_prompt(bundle):
    provider = MockProvider([MockProvider.text("ok")])
    LlmCycle(provider, CycleConfig(), system_prompt=bundle.get("system")).submit("hi")
    assert provider.requests[0].system == "You support Acme users. Be friendly; use at most 50 words."


def test_bundle_schema_is_a_valid_json_schema_that_accepts_the_example():
    from jsonschema import Draft202012Validator

    Draft202012Validator.check_schema(BUNDLE_SCHEMA)
    Draft202012Validator(BUNDLE_SCHEMA).validate(SUPPORT)
    json.dumps(BUNDLE_SCHEMA)


def test_importing_the_prompt_package_does_not_import_jsonschema():
    code = "import sys, agcore_sync.prompt; print('jsonschema' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60).stdout
    assert out.strip() == "False"
